"""Every nvidia_smi sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('smi_csv_a100_mig.csv', 'nvidia_smi', {'gpu': {'name': 'NVIDIA A100-SXM4-80GB', 'driver_version': '535.161.08', 'count': 1}}),
    ('smi_csv_p100_nounits.csv', 'nvidia_smi', {'gpu': {'name': 'Tesla P100-PCIE-16GB', 'utilization_samples': [0.0], 'memory_utilization_samples': [0.0], 'memory_used_mib': [0.0], 'count': 1}}),
    ('smi_csv_windows_units.csv', 'nvidia_smi', {'gpu': {'name': 'NVIDIA GeForce RTX 2080 SUPER', 'driver_version': '471.11', 'utilization_samples': [2.0], 'memory_utilization_samples': [10.0], 'memory_used_mib': [876.0], 'memory_total_mib': 8192.0, 'count': 1}}),
    ('smi_table_hang.txt', 'nvidia_smi', {'gpu': {'name': 'NVIDIA H100 80GB HBM3', 'memory_used_mib': [75370.0, 75368.0, 75368.0], 'memory_total_mib': 81559.0, 'utilization_samples': [100.0, 0.0, 0.0], 'count': 3}}),
    ('smi_table_r418.txt', 'nvidia_smi', {'gpu': {'driver_version': '418.87.01', 'cuda_version': '10.1', 'name': 'GeForce RTX 208...', 'memory_used_mib': [6762.0, 11.0, 6076.0, 11.0, 11.0, 11.0, 8852.0, 8852.0], 'memory_total_mib': 10989.0, 'utilization_samples': [0.0, 0.0, 39.0, 0.0, 0.0, 0.0, 0.0, 0.0], 'count': 8}}),
    ('smi_table_r550.txt', 'nvidia_smi', {'gpu': {'driver_version': '550.127.05', 'cuda_version': '12.4', 'name': 'NVIDIA A40', 'memory_used_mib': [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 'memory_total_mib': 46068.0, 'utilization_samples': [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 'count': 10}}),
    ('smi_table_r580.txt', 'nvidia_smi', {'gpu': {'driver_version': '580.126.09', 'cuda_version': '13.0', 'name': 'NVIDIA A100-SXM4-40GB', 'memory_used_mib': [598.0, 602.0], 'memory_total_mib': 40960.0, 'utilization_samples': [11.0, 7.0], 'count': 2}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


def test_headerless_default_query_several_gpus_and_na() -> None:
    from kb.parsers import detect_format, nvidia_smi

    text = (
        "0, NVIDIA H100 80GB HBM3, 97, 41, 75370, 81559, 550.54.15\n"
        "1, NVIDIA H100 80GB HBM3, [N/A], [N/A], 75368, 81559, 550.54.15\n"
    )
    assert detect_format(text) == "nvidia_smi"
    res = nvidia_smi.parse(text.splitlines(True), "smi")
    assert res.facts == {"gpu": {
        "name": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15", "utilization_samples": [97.0],
        "memory_utilization_samples": [41.0], "memory_used_mib": [75370.0, 75368.0], "memory_total_mib": 81559.0,
        "count": 2,
    }}


def test_forced_format_with_other_columns_is_noted_not_raised() -> None:
    bundle = load("smi_csv_h100_noheader.csv", "nvidia_smi")
    assert bundle.facts == {}
    assert any("skipped" in n for n in bundle.notes)


# nvidia-smi on Windows (driver 566.26, as quoted in a public README): the first row of a GPU
# names its driver model (WDDM) where Linux shows persistence mode
WINDOWS_TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 566.26                 Driver Version: 566.26         CUDA Version: 12.7     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4060 ...  WDDM  |   00000000:01:00.0  On |                  N/A |
| N/A   48C    P4             57W /   60W |    4421MiB /   8188MiB |     90%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""


def test_a_windows_table_says_windows() -> None:
    from kb.parsers.nvidia_smi import parse

    facts = parse(iter(WINDOWS_TABLE.splitlines()), "smi.txt").facts
    assert facts["software"] == {"windows": True}
    assert facts["gpu"]["memory_used_mib"] == [4421.0] and facts["gpu"]["utilization_samples"] == [90.0]
    # near-miss: a Linux table's persistence mode says nothing of the OS
    linux = WINDOWS_TABLE.replace("WDDM  |", "  On  |")
    assert "software" not in parse(iter(linux.splitlines()), "smi.txt").facts
