"""Every iostat sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('iostat_comma_basic.txt', 'iostat', {'cpu': {'cores': 24}}),
    ('iostat_cpu_only.txt', 'iostat', {'cpu': {'iowait_percent_samples': [0.08], 'cores': 12}}),
    ('iostat_read_group.txt', 'iostat', {'disk': {'util_percent_samples': [4.0], 'read_mb_s_samples': [2.71], 'await_ms_samples': [0.42], 'device': 'nvme0n1'}}),
    ('iostat_sysstat11_6_x.txt', 'iostat', {'cpu': {'iowait_percent_samples': [2.51]}, 'disk': {'util_percent_samples': [6.8], 'read_mb_s_samples': [0.027344], 'await_ms_samples': [2.86], 'device': 'nvme0n1'}}),
    ('iostat_sysstat11_xmdz.txt', 'iostat', {'disk': {'util_percent_samples': [99.6], 'read_mb_s_samples': [0.0], 'await_ms_samples': [0.0], 'device': 'xvdf'}}),
    ('iostat_sysstat12_3_tail.txt', 'iostat', {'cpu': {'iowait_percent_samples': [15.72]}}),
    ('iostat_sysstat12_5_prefixed.txt', 'iostat', {'disk': {'util_percent_samples': [0.1], 'read_mb_s_samples': [0.0], 'await_ms_samples': [0.0], 'device': 'sdd'}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts
