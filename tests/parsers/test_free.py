"""``free`` (procps-ng): the share of host RAM still available, from real pastes and both layouts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers import detect_format, free
from tests.parsers._fixtures import FIXTURES


@pytest.mark.parametrize(("name", "fraction"), [
    ("free_h_1ti.txt", 0.9434),    # 966Gi available of 1.0Ti: units read from the suffixes
    ("free_m_epoch0.txt", 0.5411),  # 16314 of 30150 MiB
])
def test_real_pastes(name: str, fraction: float) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert detect_format(text) == "free"
    assert free.parse(text.splitlines(), name).facts == {"oom": {"host_memory_available_fraction": fraction}}


def test_the_layout_before_procps_3_3_10() -> None:
    # no "available" column: free + buffers + cached is what a process can still get
    text = ("             total       used       free     shared    buffers     cached\n"
            "Mem:         64390      63834        555          0        123       1234\n"
            "-/+ buffers/cache:      62477       1912\n"
            "Swap:            0          0          0\n")
    assert detect_format(text) == "free"
    assert free.parse(text.splitlines(), "t").facts["oom"]["host_memory_available_fraction"] == round(1912 / 64390, 4)


def test_several_snapshots_keep_the_lowest_share() -> None:
    head = "              total        used        free      shared  buff/cache   available\n"
    text = (head + "Mem:          30150         391       29290           9         469       29516\n"
            + head + "Mem:          30150       28564         446          25        1140        1514\n")
    assert free.parse(text.splitlines(), "t").facts["oom"]["host_memory_available_fraction"] == round(1514 / 30150, 4)


def test_a_table_in_a_paste_is_read_and_little_ram_left_supports_a_host_oom() -> None:
    text = ("the dataloader workers died after the second epoch\n"
            "$ free -m\n"
            "              total        used        free      shared  buff/cache   available\n"
            "Mem:          30150       28564         446          25        1140        1514\n"
            "Swap:             0           0           0\n"
            "DataLoader worker (pid 4121) is killed by signal: Killed.\n")
    rep = kb.diagnose(inputs=[text])
    host = next(h for h in rep.findings if h.cause_id == "oom.host_ram_oom")
    assert any(e.fact == "oom.host_memory_available_fraction" and e.value == round(1514 / 30150, 4) and e.holds
               for e in host.evidence)
    assert "$ free -m" not in rep.symptom if rep.symptom else True


@pytest.mark.parametrize("text", [
    # near-misses: a header alone, a Mem row with too few fields, another tool's table
    "              total        used        free      shared  buff/cache   available\n",
    "Mem: 30150 391\n",
    "Filesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        50G   20G   30G  40% /\n",
])
def test_not_free(text: str) -> None:
    assert detect_format(text) != "free"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**9), min_size=6, max_size=6),
       st.sampled_from(["", "Ki", "Mi", "Gi"]))
def test_any_table_gives_a_share_between_zero_and_one_or_nothing(nums: list[int], unit: str) -> None:
    text = ("              total        used        free      shared  buff/cache   available\n"
            "Mem:   " + "  ".join(f"{n}{unit}" for n in nums) + "\n")
    facts = free.parse(text.splitlines(), "t").facts
    frac = facts.get("oom", {}).get("host_memory_available_fraction")
    assert frac is None if nums[0] == 0 else 0.0 <= frac <= 1.0


def test_a_roomy_snapshot_says_nothing_against_a_host_oom() -> None:
    # `free` shows the host before the job filled it: a moment, not the one of the kill
    killed = "the job was killed while loading the 70B checkpoint on 8 GPUs\n/bin/bash: line 3: 4711 Killed python train.py\n"
    roomy = (FIXTURES / "free_h_1ti.txt").read_text(encoding="utf-8")

    def host(rep: kb.Report) -> float:
        return next(h.evidence for h in rep.hypotheses if h.cause_id == "oom.host_ram_oom")

    assert host(kb.diagnose(inputs=[killed, roomy])) == host(kb.diagnose(inputs=[killed]))
