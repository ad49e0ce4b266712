"""Every memory_stats sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('memstats_inline.txt', 'memory_stats', {'oom': {'reserved_mib': 48.0, 'occurred': True}}),
    ('memstats_ordereddict.txt', 'memory_stats', {}),
    ('memsummary_bytes.txt', 'memory_stats', {'oom': {'allocated_mib': 0.000977, 'reserved_mib': 2.0, 'reserved_unallocated_mib': 1.999023}}),
    ('memsummary_kib.txt', 'memory_stats', {'oom': {'allocated_mib': 1.0}}),
    ('memsummary_mb_oom.txt', 'memory_stats', {'oom': {'allocated_mib': 1062.0, 'reserved_mib': 12420.0, 'reserved_unallocated_mib': 11358.0, 'occurred': True}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts
