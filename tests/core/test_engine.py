"""The engine on its own: compat shim, conditions, forward chaining, determinism, layers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.engine.conditions import evaluate, flatten
from kb.engine.conditions import test as apply_op
from kb.engine.diagnosis import Reasoner
from kb.facts import Facts
from kb.engine.knowledge import Condition

ROOT = Path(__file__).resolve().parents[2]
DATALOADER = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15, 22, 11]},
              "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}


def test_experta_imports_on_this_python() -> None:
    # frozendict 1.2 (pinned by experta 1.9.4) reads collections.Mapping, gone since 3.10
    code = "import kb.engine.compat as c; import experta; print(experta.KnowledgeEngine.__name__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "KnowledgeEngine"


def test_bare_experta_import_fails_without_the_shim() -> None:
    # proves the shim is what makes it work (if experta is ever fixed upstream, drop the shim)
    out = subprocess.run([sys.executable, "-c", "import experta"], capture_output=True, text=True)
    if out.returncode == 0:
        pytest.skip("this experta/frozendict no longer needs the shim")
    assert "Mapping" in out.stderr


def test_flatten_summaries() -> None:
    flat = flatten({"gpu": {"utilization_samples": [10, 20, 30, float("nan")]}, "x": None})
    assert flat["gpu.utilization_samples.mean"] == 20
    assert flat["gpu.utilization_samples.max"] == 30
    assert flat["gpu.utilization_samples.count"] == 4
    assert flat["gpu.utilization_samples.nonfinite"] == 1
    assert flat["gpu.utilization_samples.growth"] == 20
    assert "x" not in flat


@pytest.mark.parametrize("op,actual,expected,result", [
    ("<", 5, 10, True), ("<", 10, 10, False), ("<=", 10, 10, True), (">", True, 0, False),
    ("==", "idle", "idle", True), ("!=", "a", "b", True), ("in", "IB", ["IB", "Socket"], True),
    ("contains", ["NET/Socket", "P2P"], "socket", True), ("contains", "abc", "z", False),
    (">", "text", 1, False),
])
def test_operators(op: str, actual: object, expected: object, result: bool) -> None:
    assert apply_op(op, actual, expected) is result


def test_three_valued(kn) -> None:
    c = Condition(fact="gpu.utilization_samples.mean", op="<", value="$gpu_util.low")
    assert evaluate(c, {}, kn) is None
    assert evaluate(c, {"gpu.utilization_samples.mean": 50}, kn) is True
    assert evaluate(c, {"gpu.utilization_samples.mean": 50}, kn, {"gpu_util.low": 40}) is False
    assert evaluate(Condition(fact="a", op="missing"), {}, kn) is True


def test_forward_chaining_follows_the_graph(kn) -> None:
    d = Reasoner(kn).diagnose(Facts.model_validate(DATALOADER))
    assert d.derived["reached.gpu_util.cpu_bound_node"] is True
    assert d.derived["reached.gpu_util.io"] is True
    top = d.confirmed[0]
    assert top.cause_id == "gpu_util.dataloader_bound"
    # the chain is the steps that fired, root to cause: as deep as the graph
    assert top.path[0] == "gpu_util.start" and top.path[-1] == "gpu_util.dataloader_bound"
    assert top.rules[-1] == "gpu_util.io->gpu_util.dataloader_bound"
    assert [r.split("->")[0] for r in top.rules] == top.path[:-1]
    assert all(r in d.fired for r in top.rules)


def test_override_changes_the_outcome(kn) -> None:
    facts = {"symptom": "gpu_util",
             "gpu": {"utilization_samples": [45, 50, 48], "kernel_busy_fraction": 0.3}}
    base = kb.diagnose(facts)
    assert base.findings[0].cause_id == "gpu_util.launch_bound"
    moved = kb.diagnose(facts, overrides={"gpu_util.idle": 60})
    assert "gpu_util.launch_bound" not in [f.cause_id for f in moved.findings]


def test_unknown_override_is_an_input_error() -> None:
    with pytest.raises(kb.InputError, match="unknown threshold"):
        kb.diagnose(DATALOADER, overrides={"gpu_util.lowww": 3})


def test_same_json_twice_and_roundtrip() -> None:
    a = kb.diagnose(DATALOADER).model_dump_json()
    b = kb.diagnose(DATALOADER).model_dump_json()
    assert a == b
    assert kb.Report.model_validate_json(a).model_dump_json() == a


def test_engine_imports_nothing_of_kb_typer_litellm() -> None:
    # importing the engine loads the (lazy) kb package itself and nothing else of kb
    code = ("import sys, kb.engine.diagnosis, kb.engine.graph, kb.engine.knowledge, kb.engine.rules; "
            "bad=[m for m in sys.modules if m.split('.')[0] in ('kb','typer','litellm','rich') "
            "and m != 'kb' and not m.startswith('kb.engine')]; print(bad); assert not bad")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_import_kb_and_diagnose_never_import_litellm() -> None:
    code = ("import sys, kb; kb.diagnose(" + repr(DATALOADER) + "); "
            "assert 'litellm' not in sys.modules, 'litellm imported'")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


_samples = st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=12)


@settings(max_examples=40, deadline=None)
@given(gpu=_samples, disk=_samples, symptom=st.sampled_from([None, "gpu_util", "oom", "nccl"]),
       wait=st.none() | st.floats(min_value=0, max_value=1))
def test_any_valid_facts_run_and_are_deterministic(gpu, disk, symptom, wait) -> None:
    facts = {"symptom": symptom, "gpu": {"utilization_samples": gpu},
             "disk": {"util_percent_samples": disk}, "dataloader": {"data_wait_fraction": wait}}
    r1 = kb.diagnose(facts)
    assert len(r1.conclusion) == 3
    # dict order of the input must not matter
    r2 = kb.diagnose(dict(reversed(list(facts.items()))))
    assert r1.model_dump_json() == r2.model_dump_json()
    assert json.loads(r1.model_dump_json())["schema_version"] == 1
    for f in r1.findings:
        assert f.references and f.fixes and f.verify
        assert all(math.isfinite(f.confidence) for f in r1.findings)


def test_fact_to_fact_condition_through_the_rules(kn) -> None:
    # num_running pinned at --max-num-seqs: a join of two facts inside experta
    base = {"inference": {"num_waiting": 40, "kv_cache_usage": 0.5, "max_num_seqs": 512}}
    pinned = kb.diagnose({"inference": {**base["inference"], "num_running": 512}})
    assert "inference.max_num_seqs_limit" in [f.cause_id for f in pinned.findings]
    free = kb.diagnose({"inference": {**base["inference"], "num_running": 100}})
    assert "inference.max_num_seqs_limit" not in [f.cause_id for f in free.findings]


def test_fact_to_fact_scale_and_unknown(kn) -> None:
    c = Condition(fact="a", op="<", value="@b", scale=0.5)
    assert evaluate(c, {"a": 40, "b": 100}, kn) is True
    assert evaluate(c, {"a": 60, "b": 100}, kn) is False
    assert evaluate(c, {"a": 60}, kn) is None
    # a multiple of zero is no reference: "100x its first value" of a first value 0 is unknown
    grew = Condition(fact="a", op=">=", value="@b", scale=100)
    assert evaluate(grew, {"a": 0.0, "b": 0.0}, kn) is None
    assert evaluate(grew, {"a": 5.0, "b": 0.04}, kn) is True
    with pytest.raises(ValueError):
        Condition(fact="a", op="<", value=3, scale=0.5)


def test_a_zero_first_grad_norm_opens_no_numerics_branch(kn) -> None:
    # fairseq's progress line after a step whose batches all ran out of memory: gnorm=0.000 is
    # both the first and the largest grad norm, and "grew 100x" must not read from it
    facts = {"numerics": {"grad_norm": [0.0]}, "oom": {"occurred": True}}
    r = kb.diagnose(facts)
    assert "numerics" not in r.branches
    assert r.branches[:1] == ["oom"]
