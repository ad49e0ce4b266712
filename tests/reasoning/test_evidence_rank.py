"""Hypotheses ranked by evidence, not by a fixed order; chains across branches in causal order."""

from __future__ import annotations

import pytest

import kb
from kb.engine import knowledge as knowledge_mod
from kb.engine.diagnosis import Reasoner
from kb.factpath import set_fact

BARE_OOM = {"symptom": "oom", "oom": {"occurred": True}}


def _hyp_order(facts: dict) -> list[str]:
    return [h.cause_id for h in kb.diagnose(facts).hypotheses]


def test_order_follows_a_matched_signature() -> None:
    base = _hyp_order(BARE_OOM)
    assert len(base) >= 3
    for cid in base[1:3]:
        moved = _hyp_order({**BARE_OOM, "signatures": [cid]})
        assert moved[0] == cid, (cid, moved[:3])


def test_a_signature_alone_never_confirms() -> None:
    for cid in _hyp_order(BARE_OOM)[:3]:
        rep = kb.diagnose({**BARE_OOM, "signatures": [cid]})
        assert cid not in [f.cause_id for f in rep.findings]


def test_order_follows_evidence_on_the_path() -> None:
    # a reading that holds on one cause's path lifts it above the others
    eval_oom = _hyp_order({"symptom": "oom", "oom": {"occurred": True, "phase": "eval"}})
    assert eval_oom[0] == "oom.eval_no_grad"
    assert "oom.fragmentation" not in eval_oom[:1]


def test_one_observed_fact_counts_once() -> None:
    # fp16_overflow tests where the NaN came from three ways (known, one of two lists); the one
    # observation "it came from the loss" is one item of evidence, no more than a sibling that
    # tests it once gets
    rep = kb.diagnose({"symptom": "numerics", "numerics": {"nan_source": "loss"}})
    hyp = {h.cause_id: h for h in rep.hypotheses}
    fp16 = hyp["numerics.fp16_overflow"]
    assert sum(1 for e in fp16.holding if e.fact == "numerics.nan_source") >= 2
    assert fp16.evidence <= 1.0
    assert max(h.evidence for h in rep.hypotheses) <= 1.0


def test_a_nan_seen_is_one_observation_no_sibling_leads_on() -> None:
    # a NaN loss and nothing else (a detector's log: no dtype, no grad norm): "a NaN was seen"
    # in the loss, in the count, at a step, from the loss is one observation, and it weighs
    # what its most widely shared form does: no sibling leads the learning rate on it; an fp16
    # overflow leads on a test of its own (the NaN came after 100 healthy steps)
    rep = kb.diagnose({"symptom": "numerics",
                       "numerics": {"loss": [1.62, 1.57, 1.62, float("nan")], "first_nonfinite_step": 750,
                                    "nonfinite_count": 1, "nan_source": "loss"}})
    hyp = {h.cause_id: h.evidence for h in rep.hypotheses}
    generic = {hyp[c] for c in ("numerics.zero_token_loss", "numerics.bf16_precision",
                                "numerics.fp8_scaling", "numerics.nonfinite_input", "numerics.log_sqrt_at_zero")}
    assert len(generic) == 1 and hyp["numerics.lr_too_high"] >= generic.pop()
    assert rep.hypotheses[0].cause_id == "numerics.fp16_overflow"


def test_a_telling_test_of_the_same_fact_still_counts() -> None:
    # near-miss: the first NaN traced to the attention softmax is its own evidence, beside the
    # generic "a NaN was seen" of the same fact
    rep = kb.diagnose({"symptom": "numerics",
                       "numerics": {"loss": [2.1, 2.0, 1.9, float("nan")], "nan_source": "attention",
                                    "anomaly_op": "SoftmaxBackward0", "first_nonfinite_step": 412}})
    first, second = rep.hypotheses[:2]
    assert first.cause_id == "numerics.attention_softmax" and first.evidence > second.evidence


def test_users_words_name_a_cause() -> None:
    # oom.fragmentation's own words (its cause file) rank it first; they never confirm it
    rep = kb.diagnose({**BARE_OOM, "symptom_text": "显存碎片太多，OOM 了"})
    assert rep.hypotheses[0].cause_id == "oom.fragmentation"
    assert not rep.findings


@pytest.fixture()
def chained(edited_graphs):
    root = edited_graphs("oom/eval_no_grad.yaml", "\nseverity:",
                         "\nleads_to: [\"branch:nccl\"]\nseverity:")
    return knowledge_mod.load(root, use_cache=False)


def test_chain_names_the_first_cause_first(chained) -> None:
    # one rank ran out of memory in evaluation; the others then time out in a collective
    facts = {"oom": {"occurred": True, "phase": "eval", "in_no_grad": False},
             "distributed": {"watchdog_timeout": True, "timeout_op": "ALLREDUCE",
                             "outlier_ranks": [3], "world_size": 8}}
    d = Reasoner(chained).diagnose(kb.facts.facts_model(chained).model_validate(facts))
    confirmed = [r.cause_id for r in d.confirmed]
    assert "oom.eval_no_grad" in confirmed and any(c.startswith("nccl.") for c in confirmed)
    assert confirmed[0] == "oom.eval_no_grad"
    first = d.confirmed[0]
    assert all(c.startswith("nccl.") for c in first.leads_to) and first.leads_to


def test_an_applied_fix_is_not_proposed_again() -> None:
    base = {"symptom": "inference", "inference": {"preemptions": 37, "kv_cache_usage": 0.99,
                                                   "num_waiting": 11, "num_running": 58}}
    low = kb.diagnose({**base, "inference": {**base["inference"], "gpu_memory_utilization": 0.8}})
    high = kb.diagnose({**base, "inference": {**base["inference"], "gpu_memory_utilization": 0.95}})

    def commands(rep) -> list[str]:
        f = next(x for x in rep.findings if x.cause_id == "inference.kv_cache_preemption")
        return [x.command for x in f.fixes]

    assert any("--gpu-memory-utilization 0.92" in c for c in commands(low))
    assert not any("--gpu-memory-utilization" in c for c in commands(high))
    assert commands(high)  # the other fixes stay


def test_oom_on_one_rank_then_timeout_on_the_others() -> None:
    """The bundled knowledge: an OOM in evaluation on rank 3, the other ranks time out in an
    all_reduce. Both are named, the OOM first, and it says what it set off."""
    rep = kb.diagnose({
        "oom": {"occurred": True, "phase": "eval", "in_no_grad": False},
        "distributed": {"watchdog_timeout": True, "timeout_op": "ALLREDUCE", "world_size": 8,
                        "outlier_ranks": [3], "rank_states": [{"rank": 3}]}})
    ids = [f.cause_id for f in rep.findings]
    assert ids[0] == "oom.eval_no_grad" and "nccl.rank_desync_timeout" in ids
    assert rep.findings[0].leads_to == ["nccl.rank_desync_timeout"]
    assert rep.branches[0] == "oom"


def test_a_branch_named_by_a_setting_alone_comes_after_the_symptoms_branch() -> None:
    # five words name the hang; "bf16" (a setting) names numerics and gives its causes a
    # holding dtype fact: still the collective's causes come first
    text = "NCCL allgather deadlock: all ranks hang in the collective; the tensor is a bf16 array"
    rep = kb.diagnose({"symptom_text": text})
    assert rep.branches[0] == "nccl"
    order = [h.branch for h in rep.hypotheses]
    # "bf16" is a weak word of numerics: beside a named hang it does not open numerics at all
    # (and where a holding fact opens it, its causes still come after the collective's)
    assert order[0] == "nccl"
    assert "numerics" not in order or order.index("numerics") > max(
        i for i, b in enumerate(order) if b == "nccl")
    # near-miss: where bf16 sits beside the symptom's own words, numerics leads
    rep = kb.diagnose({"symptom_text": "loss goes nan with bf16 on 8 gpus with ddp"})
    assert rep.hypotheses[0].branch == "numerics"


def test_a_setting_lets_a_cause_apply_but_does_not_rank_it() -> None:
    # an Ampere GPU is what TF32 needs, not a sign that TF32 is off: with nothing else known the
    # common causes still come first, and TF32's only support is no evidence
    kn = kb.load_knowledge()
    assert "gpu.compute_capability" in kn.fact_schema.settings()
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"compute_capability": 8.6}})
    hyps = {h.cause_id: h for h in rep.hypotheses}
    assert hyps["gpu_util.tf32_disabled"].evidence == 0
    assert rep.hypotheses[0].cause_id != "gpu_util.tf32_disabled"
    # near-miss: the setting still rules a cause out (a V100 has no TF32)
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"compute_capability": 7.0},
                       "numerics": {"dtype": "fp32"}, "training": {"float32_matmul_precision": "highest"}})
    assert "gpu_util.tf32_disabled" in [r.cause_id for r in rep.ruled_out]


def test_the_default_engine_named_is_no_evidence_for_its_knobs() -> None:
    # vLLM is the engine the knob causes assume when none is named: naming it lets them apply, it
    # does not tell one of them from a cause of any engine (a quantized kernel, a warm-up)
    hyps = {h.cause_id: h for h in kb.diagnose(
        {"symptom": "inference", "inference": {"engine": "vllm"}}).hypotheses}
    for cid in ("inference.batching", "inference.cuda_graphs_disabled",
                "inference.max_num_seqs_limit", "inference.prefix_caching_disabled"):
        assert hyps[cid].evidence == 0, cid
    # near-miss: an engine with causes of its own still puts them ahead of the generic ones
    rep = kb.diagnose({"symptom": "inference", "inference": {"engine": "sglang"}})
    assert rep.hypotheses[0].cause_id.startswith("inference.sglang_")
    assert rep.hypotheses[0].evidence > 0
    # a cause of any engine is not held against another engine (tensor parallel over PCIe on
    # LMDeploy is the same all-reduce per layer)
    hyps = {h.cause_id: h for h in kb.diagnose(
        {"symptom": "inference", "inference": {"engine": "lmdeploy"}}).hypotheses}
    assert hyps["inference.tp_over_pcie"].evidence == 0


def test_a_branch_a_measured_fact_enters_leads_a_branch_only_words_name() -> None:
    import kb

    # TensorRT-LLM's check() message for a failed device allocation: an OOM measured in the
    # artifact, beside words that name only the serving engine
    log = ("[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): "
           "out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:89)\n")
    rep = kb.diagnose(inputs=[log], symptom="tensorrt-llm v0.7.1 with the triton backend, mistral-7b")
    assert rep.branches[0] == "oom" and rep.hypotheses[0].branch == "oom"
    # near-miss: the same words without the message stay about serving
    rep = kb.diagnose(symptom="tensorrt-llm v0.7.1 with the triton backend, mistral-7b")
    assert rep.branches[0] == "inference"


@pytest.mark.parametrize(("lr", "first"), [
    # the loss blew up while the learning rate was still warming up: the peak is too high
    ([0.000598, 0.000599, 0.000600], "numerics.lr_too_high"),
    # near-misses: a flat or decaying schedule says nothing either way (no evidence against a
    # rate too high, and the late NaN still points at fp16 first)
    ([0.0006, 0.0006, 0.0006], "numerics.fp16_overflow"),
    ([0.0007, 0.0006, 0.0005], "numerics.fp16_overflow"),
])
def test_a_blow_up_on_the_warm_up_ramp_points_at_the_learning_rate(lr: list[float], first: str) -> None:
    nan = float("nan")
    rep = kb.diagnose({"symptom": "numerics",
                       "numerics": {"loss": [8.31, 9.07, nan, nan], "first_nonfinite_step": 750,
                                    "learning_rate": lr}})
    assert rep.hypotheses[0].cause_id == first
    assert not rep.findings
    lr_too_high = next(h for h in rep.hypotheses if h.cause_id == "numerics.lr_too_high")
    assert lr_too_high.evidence >= 0.25  # never counted against


def _risk_supports() -> list[tuple[str, str, str, object]]:
    kn = kb.load_knowledge()
    return [(cid, s.fact, s.op, s.value) for cid, c in sorted(kn.causes.items())
            for s in c.supporting if getattr(s, "risk", False)]


def _failing(op: str, value: object) -> object:
    """A value the test ``op value`` does not hold for."""
    if isinstance(value, bool):
        return not value
    if op == "contains":
        return "NVIDIA RTX A6000"
    if op == "==":
        return "fp32" if value != "fp32" else "fp16"
    assert op in (">=", ">") and isinstance(value, (int, float)), (op, value)
    return value - 1 if op == ">=" else value


def test_the_knowledge_marks_some_supports_as_risks() -> None:
    assert len(_risk_supports()) >= 5


@pytest.mark.parametrize("cid,fact,op,value", _risk_supports())
def test_a_risk_that_does_not_hold_says_nothing_against(cid: str, fact: str, op: str, value: object) -> None:
    # a circumstance that makes the cause likelier (a GeForce card for broken P2P, fp16 for a
    # log at zero) is no evidence against it where it does not hold: P2P breaks behind ACS on
    # any card, log(0) is -inf in every dtype
    kn = kb.load_knowledge()
    branch = kn.causes[cid].branch

    def evidence(extra: dict) -> float:
        facts: dict = {"symptom": branch}
        for path, v in extra.items():
            set_fact(facts, path, v)
        rep = kb.diagnose(facts)
        return next(h.evidence for h in rep.hypotheses if h.cause_id == cid)

    assert evidence({fact: _failing(op, value)}) == evidence({})


def test_a_p2p_hang_on_a_data_centre_card_keeps_its_support() -> None:
    # an IOMMU deadlock on two RTX A6000s (not GeForce) ranks the broken P2P as a hang on any
    # card does, and a GeForce card lifts it
    def evidence(gpu: dict) -> float:
        rep = kb.diagnose({"symptom": "nccl", "distributed": {"hung": True}, **gpu})
        return next(h.evidence for h in rep.hypotheses if h.cause_id == "nccl.pcie_p2p_broken")

    none = evidence({})
    assert evidence({"gpu": {"name": "NVIDIA RTX A6000"}}) == none
    assert evidence({"gpu": {"name": "NVIDIA GeForce RTX 4090"}}) > none


def test_a_looser_threshold_on_the_same_reading_is_no_evidence_of_its_own() -> None:
    # one nvidia-smi table of idle cards: "utilisation below 90 %" (a stall's support) and
    # "below 40 %" (the loader's, no GPU in use) read the same low utilisation; the looser
    # test must not lead on it
    from pathlib import Path

    smi = (Path(__file__).parents[1] / "fixtures" / "formats" / "smi_table_r418.txt").read_text()
    hyp = {h.cause_id: h.evidence for h in kb.diagnose(inputs=[smi]).hypotheses}
    assert hyp["gpu_util.periodic_stalls"] <= hyp["gpu_util.no_gpu_in_use"]
    assert hyp["gpu_util.periodic_stalls"] <= hyp["gpu_util.dataloader_workers"]


@pytest.mark.parametrize("text", [
    "our TensorRT-LLM server on tritonserver with tensorrtllm_backend gives low throughput",
    "vLLM runs out of memory when I start the server",
])
def test_an_engine_named_in_words_names_its_branch_not_a_cause(text: str) -> None:
    # the engine is the job's setup (inference.engine), which the engine's own causes test as
    # a condition; its name in the words is no evidence for one of them over the others
    from kb.symptom_text import name_causes

    kn = kb.load_knowledge()
    assert not {c for c, words in name_causes(text, kn).items()
                if any(w.lower() in ("vllm", "tensorrt-llm", "trtllm", "tritonserver",
                                     "tensorrtllm_backend") for w in words)}
    rep = kb.diagnose(symptom=text)
    assert rep.findings == []
    assert rep.hypotheses[0].branch in ("inference", "oom")
