"""Every nvidia_smi_dmon sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('dmon_520.txt', 'nvidia_smi_dmon', {'gpu': {'utilization_samples': [3.0, 3.0, 3.0, 3.0, 3.0, 3.0], 'memory_utilization_samples': [6.0, 6.0, 6.0, 6.0, 6.0, 6.0], 'memory_used_mib': [418.0, 418.0, 418.0, 418.0, 418.0, 418.0], 'count': 1}}),
    ('dmon_525.txt', 'nvidia_smi_dmon', {'gpu': {'utilization_samples': [1.0, 1.0, 1.0, 1.0, 1.0], 'memory_utilization_samples': [3.0, 3.0, 3.0, 3.0, 3.0], 'memory_used_mib': [387.0, 387.0, 387.0, 387.0, 387.0], 'count': 1}}),
    ('dmon_530.txt', 'nvidia_smi_dmon', {'gpu': {'utilization_samples': [4.0, 4.0, 4.0, 4.0, 4.0], 'memory_utilization_samples': [13.0, 13.0, 13.0, 13.0, 14.0], 'memory_used_mib': [874.0, 874.0, 874.0, 874.0, 874.0], 'count': 1}}),
    ('dmon_s_u.txt', 'nvidia_smi_dmon', {'gpu': {'utilization_samples': [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 'memory_utilization_samples': [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 'count': 1}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts
