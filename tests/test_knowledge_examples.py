"""Table-driven over the knowledge: every cause's own examples, and one facts file per cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kb
from kb.engine.knowledge import load

ROOT = Path(__file__).resolve().parent.parent
KN = load(ROOT / "graphs", use_cache=False)
CASES_FIRE = [(cid, i) for cid, c in KN.causes.items() for i in range(len(c.examples.fire))]
CASES_NOFIRE = [(cid, i) for cid, c in KN.causes.items() for i in range(len(c.examples.no_fire))]


@pytest.mark.parametrize("cause_id,i", CASES_FIRE, ids=[f"{c}-{i}" for c, i in CASES_FIRE])
def test_fire_example_confirms_cause(cause_id: str, i: int) -> None:
    facts = KN.causes[cause_id].examples.fire[i]
    report = kb.diagnose(facts, knowledge=KN)
    assert cause_id in [f.cause_id for f in report.findings], report.status


@pytest.mark.parametrize("cause_id,i", CASES_NOFIRE, ids=[f"{c}-{i}" for c, i in CASES_NOFIRE])
def test_no_fire_example_does_not_confirm(cause_id: str, i: int) -> None:
    facts = KN.causes[cause_id].examples.no_fire[i]
    report = kb.diagnose(facts, knowledge=KN)
    assert cause_id not in [f.cause_id for f in report.findings]


@pytest.mark.parametrize("cause_id", sorted(KN.causes))
def test_example_file_ranks_cause_first(cause_id: str) -> None:
    path = ROOT / "examples" / "facts" / f"{cause_id}.json"
    assert path.is_file(), f"missing example facts file {path}"
    report = kb.diagnose(json.loads(path.read_text()), knowledge=KN)
    assert report.findings, f"{cause_id}: status {report.status}"
    assert report.findings[0].cause_id == cause_id, [f.cause_id for f in report.findings]
    branch = KN.causes[cause_id].branch
    assert {f.branch for f in report.findings} == {branch}
