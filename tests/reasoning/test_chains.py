"""Chains: from a bare symptom, following the report's first next check, reach every cause.

For each cause, its first ``fire`` example is the scripted truth. Starting from
``{"symptom": branch}``, each round takes the first next check not yet run and adds the facts
of the truth that the check produces (its ``produces`` paths, prefix-matched). The cause must
be confirmed within (the fewest checks that give the facts its path tests) + 2 rounds.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import kb
from kb.engine.knowledge import load
from kb.explain import reasoning_path
from tests.conftest import ROOT

KN = load(ROOT / "graphs", use_cache=False)
CAUSES = sorted(KN.causes)
_META = ("symptom", "symptom_text", "schema_version")


def objective(path: str) -> bool:
    """An objective the user states up front (a TTFT, TPOT or requests/s target): no command
    collects it, so a session starts with it as it starts with the symptom."""
    return path.rsplit(".", 1)[-1].endswith(("_target", "_target_ms"))


def leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Fact paths of a nested facts document; dict-valued facts (count maps, env) and lists
    are leaves at their key path's children / own path."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(leaves(v, path + "."))
        else:
            out[path] = v
    return out


def covered(path: str, produces: list[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in produces)


def put(facts: dict[str, Any], path: str, value: Any) -> None:
    *groups, key = path.split(".")
    node = facts
    for g in groups:
        node = node.setdefault(g, {})
    node[key] = copy.deepcopy(value)


def strip(truth: dict[str, Any], paths: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p, v in leaves(truth).items():
        if p not in paths:
            put(out, p, v)
    return out


ALL_PRODUCES = [p for c in KN.checks.values() for p in c.produces]


def uncoverable(cid: str) -> list[str]:
    """Facts of the example no check produces, when the cause needs them to fire."""
    truth = KN.causes[cid].examples.fire[0]
    missing = {p for p in leaves(truth) if p.split(".")[0] not in _META
               and not objective(p) and not covered(p, ALL_PRODUCES)}
    if not missing:
        return []
    rep = kb.diagnose(strip(truth, missing), knowledge=KN)
    if cid in [f.cause_id for f in rep.findings]:
        return []  # the cause fires without them
    return sorted(missing)


def needed_checks(cid: str) -> list[str]:
    """The fewest checks (greedy set cover) whose outputs give the facts the cause's
    confirming path tests: the steps that fired for it on its full example."""
    from kb.engine.knowledge import iter_conditions
    from kb.engine.steps import build_steps

    truth = KN.causes[cid].examples.fire[0]
    rep = kb.diagnose(truth, knowledge=KN)
    finding = next(f for f in rep.findings if f.cause_id == cid)
    steps = {s.id: s for s in build_steps(KN)}
    have = leaves({k: v for k, v in truth.items() if k not in _META})
    facts = {c.fact for rid in finding.rules for c in iter_conditions(list(steps[rid].clauses))}
    todo = {p for p in have if any(p == f or f.startswith(p + ".") for f in facts)}
    chosen: list[str] = []
    while todo:
        best = max(sorted(KN.checks), key=lambda k: sum(covered(p, KN.checks[k].produces)
                                                        for p in todo))
        got = {p for p in todo if covered(p, KN.checks[best].produces)}
        if not got:
            break
        chosen.append(best)
        todo -= got
    return chosen


def budget_for(cid: str) -> int:
    """The checks its path needs, plus the SOP's first health check and one more."""
    return len(needed_checks(cid)) + 2


def run_chain(cid: str, budget: int | None = None) -> tuple[bool, list[str], int]:
    cause = KN.causes[cid]
    truth = leaves({k: v for k, v in cause.examples.fire[0].items() if k not in _META})
    budget = budget_for(cid) if budget is None else budget
    facts: dict[str, Any] = {"symptom": cause.branch}
    for path, value in truth.items():
        if objective(path):
            put(facts, path, value)
    ran: list[str] = []
    for _ in range(budget):
        rep = kb.diagnose(facts, knowledge=KN)
        if cid in [f.cause_id for f in rep.findings]:
            return True, ran, budget
        todo = [c for c in rep.next_checks if c.id not in ran]
        if not todo:
            break
        chk = todo[0]
        ran.append(chk.id)
        facts.setdefault("tools", {})[chk.id] = {"status": "ok"}  # as `kb collect` records it
        for path, value in truth.items():
            if covered(path, chk.produces):
                put(facts, path, value)
    rep = kb.diagnose(facts, knowledge=KN)
    return cid in [f.cause_id for f in rep.findings], ran, budget


@pytest.mark.parametrize("cause_id", CAUSES)
def test_chain_reaches_cause(cause_id: str) -> None:
    """Following the report's next checks always ends at the cause. How many rounds it takes
    against the budget is measured, not asserted: `python benchmarks/bench_chains.py` prints
    it for every cause (the README keeps the figures)."""
    gone = uncoverable(cause_id)
    # every fact a cause needs must come from some check, or no session can reach it
    assert not gone, f"{cause_id}: no check produces {', '.join(gone)}"
    ok, ran, _budget = run_chain(cause_id, budget=len(KN.checks) + 1)
    assert ok, f"{cause_id} never confirmed by following the next checks; ran {ran}"


def test_gpu_util_chain_order() -> None:
    """The documented walk: the GPU snapshot first (is it idle?), then the questions under
    "idle": how long the loop waits for data, where the CPU time goes, the data disk."""
    ok, ran, _ = run_chain("gpu_util.dataloader_bound", budget=8)
    assert ok
    assert ran[0] == "nvidia_smi_query" and ran[-1] == "iostat"
    assert "dataloader_timing" in ran
