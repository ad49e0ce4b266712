"""kb.warmup: how much slower the first of a short timing's calls was than the rest."""

from __future__ import annotations

from typing import Any

import pytest

import kb
from kb.warmup import MAX_CALLS, complete


@pytest.mark.parametrize(("probe", "ratio"), [
    ({"training": {"step_time_ms": [6100, 52, 49, 51, 50]}}, 120.79),
    ({"training": {"step_time_ms": [100, 50, 50]}}, 2.0),
    # near-misses: too few calls to have a first and a rest, a long log (its first step is no
    # timing the user made), a ratio already stated, later calls of zero time
    ({"training": {"step_time_ms": [6100, 52]}}, None),
    ({"training": {"step_time_ms": [9000] + [300] * MAX_CALLS}}, None),
    ({"training": {"step_time_ms": [6100, 52, 49]}, "compile": {"first_call_ratio": 3.0}}, 3.0),
    ({"training": {"step_time_ms": [6100, 0, 0, 0]}}, None),
])
def test_first_call_ratio(probe: dict[str, Any], ratio: float | None) -> None:
    stated = "first_call_ratio" in probe.get("compile", {})
    notes = complete(probe)
    assert probe.get("compile", {}).get("first_call_ratio") == ratio
    assert bool(notes) == (ratio is not None and not stated)


def test_a_timed_first_call_confirms_the_warm_up_through_diagnose() -> None:
    rep = kb.diagnose({"symptom": "compile", "training": {"step_time_ms": [48200, 41.5, 40.9, 41.2]}})
    assert [f.cause_id for f in rep.findings][:1] == ["compile.warmup_in_timing"]
    assert any("compile.first_call_ratio" in w for w in rep.warnings)
    # the same steps with the first one ordinary: nothing to confirm
    rep = kb.diagnose({"symptom": "compile", "training": {"step_time_ms": [45, 41.5, 40.9, 41.2]}})
    assert "compile.warmup_in_timing" not in [f.cause_id for f in rep.findings]
