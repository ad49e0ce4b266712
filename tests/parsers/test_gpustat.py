"""gpustat's output: the lines its own test suite expects it to print, and a real paste."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers import detect_format, gpustat
from tests.parsers._fixtures import FIXTURES


@pytest.mark.parametrize("name", ["gpustat_default.txt", "gpustat_full_process.txt"])
def test_gpustat_test_suite_outputs(name: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert detect_format(text) == "gpustat"
    gpu = gpustat.parse(text.splitlines(), name).facts["gpu"]
    # GPU 2's utilisation is "??" (NVML could not read it): no sample, no zero
    assert gpu["utilization_samples"] == [76.0, 0.0]
    assert gpu["memory_used_mib"] == [8000.0, 9000.0, 0.0]
    assert gpu["memory_total_mib"] == 12287.0
    assert gpu["count"] == 3
    assert "name" not in gpu  # three products named: none is "the" GPU


def test_older_releases_and_a_header() -> None:
    # gpustat before 1.0 wrote the temperature as 50'C; its first line is host, time, driver
    text = ("myhost  Wed Jan  1 12:00:00 2020  440.33.01\n"
            "[0] Quadro RTX 8000  | 50'C,   0 % | 44481 / 48571 MB | alice(44478M)\n")
    assert detect_format(text) == "gpustat"
    gpu = gpustat.parse(text.splitlines(), "gpustat.txt").facts["gpu"]
    assert gpu == {"utilization_samples": [0.0], "memory_used_mib": [44481.0], "memory_total_mib": 48571.0,
                   "count": 1, "name": "Quadro RTX 8000"}


@pytest.mark.parametrize("text", [
    # one gpustat-like line inside a log is the incident reader's (it finds the region)
    "step 1 loss 2.5\nstep 2 loss 2.4\nstep 3 loss 2.3\n[0] Quadro RTX 8000 | 50'C, 0 % | 1 / 2 MB\nstep 4 loss 2.2\n",
    # an nvidia-smi table row is not gpustat's
    "| 0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |\n",
    "[0] rank 0 started | loss 2.5 | 12 MB\n",
])
def test_not_gpustat(text: str) -> None:
    assert detect_format(text) != "gpustat"


def test_idle_cards_put_the_training_loop_in_play() -> None:
    text = (FIXTURES / "gpustat_default.txt").read_text(encoding="utf-8")
    rep = kb.diagnose(inputs=[text.replace(" 76 %", "  3 %")])
    assert rep.branches == ["gpu_util"]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_error(text: str) -> None:
    gpustat.sniff(text)
    res = gpustat.parse(text.splitlines(), "x")
    for v in res.facts.get("gpu", {}).get("utilization_samples", []):
        assert 0 <= v <= 100
