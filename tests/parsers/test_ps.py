"""Every ps sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('ps_aux_grep_python.txt', 'ps', {'cpu': {'process_cpu_percent': [0.3, 91.7], 'python_processes': 4}}),
    ('ps_aux_late_header.txt', 'ps', {'cpu': {'python_processes': 0}}),
    ('ps_auxww.txt', 'ps', {'cpu': {'python_processes': 0}}),
    ('ps_eo_comm.txt', 'ps', {'cpu': {'python_processes': 0}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts
