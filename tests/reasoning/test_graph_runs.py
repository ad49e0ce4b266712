"""What is drawn is what runs: the exported graph, the experta rules and the evaluator agree.

* every confirmed cause's path is a path of ``kb export json`` whose step edges are exactly
  the rules that fired for it; every hypothesis' path is a path of the export too;
* the experta forward chaining and the three-valued evaluator reach the same nodes, on every
  example and on random facts over all branches (the differential test of issue 12);
* adding a cause is one YAML file with its examples.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kb
from kb.engine import knowledge as knowledge_mod
from kb.engine.conditions import flatten
from kb.engine.diagnosis import Reasoner
from kb.engine.evaluate import HOLDS, evaluate_graph
from kb.engine.rete import Runner
from kb.engine.rules import GraphRunner
from kb.facts import Facts
from kb.engine.graph import validate
from kb.engine.knowledge import iter_conditions
from kb.engine.steps import build_steps
from kb.exports import graph_json

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reasoner(kn) -> Reasoner:
    return Reasoner(kn)


@pytest.fixture(scope="module")
def exported(kn) -> nx.MultiDiGraph:
    # through JSON text, as a user of `kb export json` reads it
    return graph_json.to_graph(json.loads(graph_json.export(kn)))


def _examples(kn) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for cid, c in kn.causes.items():
        out += [(cid, "fire", ex) for ex in c.examples.fire]
        out += [(cid, "no_fire", ex) for ex in c.examples.no_fire]
    return out


def _assert_path_in_export(g: nx.MultiDiGraph, path: list[str], rules: list[str] | None) -> None:
    assert len(path) >= 2, path
    for i, (u, v) in enumerate(zip(path, path[1:])):
        data = g.get_edge_data(u, v) or {}
        steps = {k for k, d in data.items() if d.get("type") == "step"}
        assert steps, f"{u} -> {v} is not a step of the exported graph"
        if rules is not None:
            assert rules[i] in steps, f"rule {rules[i]} is not the exported step {u} -> {v}"


def test_every_example_path_is_a_path_of_the_export(kn, reasoner, exported) -> None:
    checked = 0
    for cid, _kind, ex in _examples(kn):
        d = reasoner.diagnose(Facts.model_validate(ex))
        for r in d.results:
            if r.state == "confirmed":
                assert r.path[-1] == r.cause_id and r.path[0] == kn.branches[r.branch].root
                _assert_path_in_export(exported, r.path, r.rules)
                assert len(r.rules) == len(r.path) - 1
                assert set(r.rules) <= set(d.fired)
                checked += 1
            elif r.state == "hypothesis":
                _assert_path_in_export(exported, r.path, None)
            else:
                assert r.path == []
    assert checked >= len(kn.causes)


def test_confirming_conditions_are_the_drawn_path(kn, reasoner) -> None:
    """0 causes whose drawn path differs from what confirms them: the evidence of a finding
    is exactly the conditions of the steps on its path."""
    steps = {s.id: s for s in build_steps(kn)}
    for cid, c in kn.causes.items():
        for ex in c.examples.fire:
            d = reasoner.diagnose(Facts.model_validate(ex))
            r = next(x for x in d.results if x.cause_id == cid)
            assert r.state == "confirmed", (cid, ex)
            drawn = [cond for rid in r.rules for cond in iter_conditions(list(steps[rid].clauses))]
            shown = [cr.condition for cr in r.conditions]
            assert all(cond in drawn for cond in shown), cid
            assert all(cr.holds is True for cr in r.conditions
                       if cr.condition in drawn and not _in_any(steps, r.rules, cr.condition)), cid


def _in_any(steps, rules, cond) -> bool:
    from kb.engine.knowledge import AnyOf

    return any(isinstance(cl, AnyOf) and cond in cl.any for rid in rules
               for cl in steps[rid].clauses)


def _reached_by_evaluator(kn, flat: dict[str, Any], roots: set[str]) -> set[str]:
    state = evaluate_graph(kn, flat, roots)
    return {n for n, v in state.node.items() if v == HOLDS}


def _differential(kn, experta: Runner, graph: GraphRunner, flat: dict[str, Any]) -> None:
    """experta's forward chaining and the graph walk fire the same rules, reach the same
    nodes, and the evaluator's holding nodes are exactly those."""
    a, b = experta.run(flat), graph.run(flat)
    assert set(a.reached) == set(b.reached)
    assert set(a.fired) == set(b.fired)
    roots = {kn.branches[x].root for x in kn.branches if kn.branches[x].root in a.reached}
    assert set(a.reached) == _reached_by_evaluator(kn, flat, roots)


def _same_diagnosis(one: Reasoner, other: Reasoner, facts: Any) -> None:
    d1, d2 = one.diagnose(facts), other.diagnose(facts)
    assert [(r.cause_id, r.state, r.path) for r in d1.results] == \
        [(r.cause_id, r.state, r.path) for r in d2.results]
    assert d1.status == d2.status and d1.branches == d2.branches


def test_experta_and_evaluator_agree_on_every_example(kn, reasoner) -> None:
    experta, graph = Runner(kn), GraphRunner(kn)
    slow = Reasoner(kn, engine="experta")
    for _cid, _kind, ex in _examples(kn):
        flat = flatten(Facts.model_validate(ex).model_dump(mode="python"))
        flat.pop("schema_version", None)
        _differential(kn, experta, graph, flat)
        _same_diagnosis(reasoner, slow, Facts.model_validate(ex))


def _value_strategy(kn) -> dict[str, Any]:
    """For every fact a condition tests: values around its thresholds, or absent."""
    values: dict[str, list[Any]] = {}
    for s in build_steps(kn):
        for c in iter_conditions(list(s.clauses)):
            vals = values.setdefault(c.fact, [])
            v = c.value
            if isinstance(v, str) and v.startswith("$"):
                t = kn.thresholds[v[1:]].value
                vals += [t * 0.5, t, t * 1.5 + 1]
            elif isinstance(v, list):
                vals += list(v)
            elif isinstance(v, (bool, int, float, str)) and not str(v).startswith("@"):
                vals.append(v)
    for b in kn.branches.values():
        for c in b.entry:
            if isinstance(c.value, str) and c.value.startswith("$"):
                t = kn.thresholds[c.value[1:]].value
                values.setdefault(c.fact, []).extend([t * 0.5, t * 1.5 + 1])
    # a fact tested only for presence gets a plain value
    return {f: sorted(set(map(repr, v))) or ["1"] for f, v in values.items()}


_KN = kb.load_knowledge()
_REASONER = Reasoner(_KN, engine="graph")
_SLOW = Reasoner(_KN, engine="experta")
_EXPERTA, _GRAPH = Runner(_KN), GraphRunner(_KN)
_CHOICES = _value_strategy(_KN)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_experta_and_evaluator_agree_on_random_facts(data) -> None:
    import ast

    kn, reasoner, choices = _KN, _REASONER, _CHOICES
    flat: dict[str, Any] = {}
    for fact in data.draw(st.lists(st.sampled_from(sorted(choices)), max_size=12, unique=True)):
        flat[fact] = ast.literal_eval(data.draw(st.sampled_from(choices[fact])))
    symptom = data.draw(st.sampled_from([None, *kn.branches]))
    if symptom:
        flat["symptom"] = symptom
    _differential(kn, _EXPERTA, _GRAPH, flat)
    run = _EXPERTA.run(flat)
    roots = {b.root for b in kn.branches.values() if b.root in run.reached}
    _same_diagnosis(reasoner, _SLOW, dict(flat))
    d = reasoner.diagnose(flat)
    # and a branch the diagnosis opened with no entry holding (the kind of job the facts state)
    roots |= {kn.branches[b].root for b in d.branches}
    state = evaluate_graph(kn, flat, roots)
    for r in d.results:
        expected = {HOLDS: "confirmed", 1: "hypothesis", 0: "ruled_out"}[state.value(r.cause_id)]
        assert r.state == expected, r.cause_id


def test_report_json_carries_paths_of_the_export(exported) -> None:
    rep = kb.diagnose({"symptom": "oom", "oom": {"occurred": True, "phase": "eval",
                                                  "in_no_grad": False}})
    doc = json.loads(rep.model_dump_json())
    assert doc["findings"][0]["cause_id"] == "oom.eval_no_grad"
    assert doc["findings"][0]["path"] == ["oom.start", "oom.read_message", "oom.where",
                                          "oom.grad_mode", "oom.eval_no_grad"]
    for h in doc["hypotheses"]:
        _assert_path_in_export(exported, h["path"], None)


NEW_CAUSE = """\
id: oom.cpu_offload_pinned
branch: oom
title: {en: "Test cause", zh: "测试原因"}
symptom: {en: "a test symptom", zh: "测试症状"}
why: {en: "Because the test says so.", zh: "因为测试如此。"}
severity: investigate
seed: beyond-seed
under:
  - {node: oom.grad_mode, answer: no_grad}
conditions:
  - {fact: training.optimizer_offload, op: "==", value: true}
fixes:
  - text: {en: "Do the thing.", zh: "做这件事。"}
    command: "python train.py --no-offload"
    refs: [pytorch-cuda-memory-usage]
verify:
  - text: {en: "It works.", zh: "可以了。"}
    command: "python train.py"
    expect: {fact: oom.occurred, op: "==", value: false}
references: [pytorch-cuda-memory-usage]
examples:
  fire:
    - {symptom: oom, oom: {occurred: true, phase: eval, in_no_grad: true}, training: {optimizer_offload: true}}
  no_fire:
    - {symptom: oom, oom: {occurred: true, phase: eval, in_no_grad: true}, training: {optimizer_offload: false}}
"""


def test_a_new_cause_is_one_file(tmp_path, monkeypatch) -> None:
    root = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", root)
    (root / "oom" / "cpu_offload_pinned.yaml").write_text(NEW_CAUSE, encoding="utf-8")
    monkeypatch.setenv("KB_NO_CACHE", "1")
    kn2 = knowledge_mod.load(root, use_cache=False)
    assert validate(kn2) == []
    r = Reasoner(kn2)
    c = kn2.causes["oom.cpu_offload_pinned"]
    fired = r.diagnose(Facts.model_validate(c.examples.fire[0]))
    hit = next(x for x in fired.results if x.cause_id == c.id)
    assert hit.state == "confirmed"
    assert hit.path[-2:] == ["oom.grad_mode", "oom.cpu_offload_pinned"]
    quiet = r.diagnose(Facts.model_validate(c.examples.no_fire[0]))
    assert next(x for x in quiet.results if x.cause_id == c.id).state == "ruled_out"
    # and the CLI validates the copy as a user would
    out = subprocess.run([sys.executable, "-m", "kb.cli.app", "validate", "--knowledge", str(root)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_open_if_false_group_leaves_the_step_open() -> None:
    # a group marked open_if_false that fails is unknown (neither holds nor fails); unmarked,
    # the same facts fail it
    from kb.engine.conditions import evaluate_clause
    from kb.engine.knowledge import AnyOf, Condition

    kn = kb.load_knowledge()
    conds = [Condition(fact="oom.tried_to_allocate_mib", op="<=", value="@oom.reserved_unallocated_mib"),
             Condition(fact="oom.tried_to_allocate_mib", op="missing")]
    facts = {"oom.tried_to_allocate_mib": 4280, "oom.reserved_unallocated_mib": 3246}
    assert evaluate_clause(AnyOf(any=conds), facts, kn) is False
    assert evaluate_clause(AnyOf(any=conds, open_if_false=True), facts, kn) is None
    facts["oom.reserved_unallocated_mib"] = 5000
    assert evaluate_clause(AnyOf(any=conds, open_if_false=True), facts, kn) is True
    # in the knowledge: the reserved-but-unallocated answer stays open when the request is
    # larger than the cached memory, so the cause is a hypothesis, not confirmed or ruled out
    rep = kb.diagnose({"symptom": "oom", "oom": {
        "occurred": True, "tried_to_allocate_mib": 4280, "total_capacity_mib": 11182, "free_mib": 2499,
        "allocated_mib": 4792, "reserved_mib": 8038, "reserved_unallocated_mib": 3246,
        "reserved_unallocated_fraction": 0.29}})
    assert "oom.allocator_reserved_unallocated" in [h.cause_id for h in rep.hypotheses]
    assert not rep.findings


def test_a_required_sign_whose_absence_says_nothing_is_an_any_of_one() -> None:
    # fp16 overflow needs the seed's late first NaN to be confirmed, but a NaN at step 60 (or
    # at once, a model whose activations exceed fp16's range) does not rule it out
    from pydantic import ValidationError

    from kb.engine.knowledge import AnyOf, Condition

    one = [Condition(fact="numerics.first_nonfinite_step", op=">=", value=100)]
    with pytest.raises(ValidationError, match="any' of one condition"):
        AnyOf(any=one)
    AnyOf(any=one, open_if_false=True)
    nan = float("nan")
    early = kb.diagnose({"symptom": "numerics", "numerics": {
        "dtype": "fp16", "loss": [2.31, 2.05, 1.87, nan], "first_nonfinite_step": 60, "nan_source": "loss"}})
    assert "numerics.fp16_overflow" in [h.cause_id for h in early.hypotheses]
    assert "numerics.fp16_overflow" not in [f.cause_id for f in early.findings]
    late = kb.diagnose({"symptom": "numerics", "numerics": {
        "dtype": "fp16", "loss": [2.31, 2.05, 1.87, nan], "first_nonfinite_step": 340, "nan_source": "loss"}})
    assert "numerics.fp16_overflow" in [f.cause_id for f in late.findings]
