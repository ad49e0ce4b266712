"""Each kind of tool output, pasted between log lines, is found as a region and read by that
tool's own parser: the facts equal those of the tool output read alone. Samples are the real
outputs kept in tests/fixtures/formats (sources in its SOURCES.md)."""

from __future__ import annotations

import io

import pytest

from kb.inputs import load_inputs
from kb.readers import incident
from kb.readers.regions import find_regions
from tests.parsers._fixtures import FIXTURES

BEFORE = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nRuntimeError: boom\n\n"
AFTER = "\n$ echo done\ndone\n"

CASES = [
    ("smi_table_r550.txt", "nvidia_smi"),
    ("smi_table_r418.txt", "nvidia_smi"),
    ("smi_csv_p100_nounits.csv", "nvidia_smi"),
    ("iostat_sysstat11_6_x.txt", "iostat"),
    ("iostat_cpu_only.txt", "iostat"),
    ("pyspy_ddp_init.txt", "py_spy"),
    ("pyspy_old.txt", "py_spy"),
    ("metrics_v1.prom", "vllm_metrics"),
    ("metrics_sglang.prom", "vllm_metrics"),
    ("bench_vllm_2025.txt", "vllm_bench"),
    ("bench_sglang.txt", "vllm_bench"),
    ("dmon_s_u.txt", "nvidia_smi_dmon"),
    ("ps_auxww.txt", "ps"),
    ("memsummary_mb_oom.txt", "memory_stats"),
    ("gpustat_full_process.txt", "gpustat"),
    ("gpustat_default.txt", "gpustat"),
    ("topo_a40_nics.txt", "nvidia_smi_topo"),
    ("topo_pcie_4gpu.txt", "nvidia_smi_topo"),
]


def _alone(name: str) -> dict:
    return load_inputs([str(FIXTURES / name)]).facts


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_region_found_and_read_by_its_parser(name: str, fmt: str) -> None:
    body = (FIXTURES / name).read_text(encoding="utf-8")
    text = BEFORE + body.rstrip("\n") + "\n" + AFTER
    lines = io.StringIO(text).readlines()
    regions = find_regions(lines)
    assert [r.fmt for r in regions] == [fmt], regions
    got = incident.parse(lines, "paste").facts
    alone = _alone(name)
    for group, values in alone.items():
        if group in ("distributed",):  # rank states are re-analysed by the loader
            continue
        for key, value in values.items():
            assert got[group][key] == value, f"{group}.{key}"


def test_two_regions_and_log_in_one_paste() -> None:
    smi = (FIXTURES / "smi_table_r550.txt").read_text()
    bench = (FIXTURES / "bench_vllm_2025.txt").read_text()
    oom = (FIXTURES / "oom_2_1_capacty.log").read_text()
    res = incident.parse(io.StringIO(oom + "\n" + smi + "\n" + bench), "paste")
    assert res.facts["gpu"]["name"] == "NVIDIA A40"
    assert res.facts["inference"]["ttft_ms_p99"] == 953.35
    assert res.facts["oom"]["occurred"] is True
    assert "oom.allocator_reserved_unallocated" in res.facts["signatures"]
    assert res.notes[0].startswith("paste: read as a pasted incident: nvidia_smi")


def test_nccl_info_lines_go_to_the_log_reader() -> None:
    # NCCL_DEBUG=INFO channel lines (NVIDIA/nccl src/transport.cc "Channel %02d : %d[%d] -> ...
    # via %s"): read by the training-log scanner's NCCL handler, not duplicated here
    text = (FIXTURES / "nccl_debug_channels_gdr.log").read_text()
    facts = incident.parse(io.StringIO("some words first\n" + text), "paste").facts
    assert facts["distributed"]["transports"] == ["IB"]
    assert facts["distributed"]["gdr_enabled"] is True  # the GDRDMA signature's `sets`
    assert "nccl.gdr_disabled" in facts["signatures"]
