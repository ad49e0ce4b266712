"""Finite results that differ from a reference (the CPU, NumPy, float64, an older GPU): the user's
words name it (numerics.reference_mismatch), and on TF32-capable hardware the reduced-precision
matmul cause (numerics.reduced_matmul_precision) leads until the comparison with TF32 off settles
it. The phrasings are those of real reports (pytorch/pytorch#61890, jax-ml/jax#9973 and #22154,
microsoft/onnxruntime#15218), written here in our own words."""

from __future__ import annotations

import pytest

import kb
from kb.symptom_text import extract

CAUSE = "numerics.reduced_matmul_precision"


@pytest.mark.parametrize(("text", "mismatch"), [
    ("The matrix multiplication can't get correct results on the 3090, the identity should leave it unchanged",
     True),
    ("The results on the CPU and the 1080 Ti agree, whereas those from the RTX 3090 are totally different", True),
    ("jnp.einsum gives different results between CPU and GPU", True),
    ("Significant output mismatch between the A6000 and the older T4", True),
    ("TPU 上的矩阵乘结果不一致，CPU 上是对的", True),
    # near-misses: non-finite numbers are the overflow's way through the graph; speed and loss
    # differences are other questions
    ("the model gives wrong results: every output is NaN after the first step", False),
    ("the results are totally different in speed: the 3090 is twice as slow", False),
    ("the loss is a bit higher than in the paper", False),
])
def test_a_result_said_to_differ_from_a_reference(text: str, mismatch: bool) -> None:
    facts = extract(text, branch="numerics")
    assert facts.get("numerics", {}).get("reference_mismatch", False) is mismatch


def test_the_words_rank_reduced_precision_first_on_an_ampere_card() -> None:
    rep = kb.diagnose(symptom="torch.bmm on my RTX 3090 can't get correct results: the GPU result differs "
                              "from the CPU result in the third digit")
    assert rep.branches[0] == "numerics" and rep.status == "hypotheses"
    assert rep.hypotheses[0].cause_id == CAUSE
    # the check that settles it is the comparison with TF32 off
    assert any("NVIDIA_TF32_OVERRIDE=0" in c.command for c in rep.next_checks)


def test_the_comparison_with_tf32_off_confirms_it_and_an_older_gpu_rules_it_out() -> None:
    base = {"symptom": "numerics", "numerics": {"dtype": "fp32", "reference_mismatch": True}}
    rep = kb.diagnose({**base, "gpu": {"compute_capability": 8.6},
                       "numerics": {**base["numerics"], "mismatch_gone_at_full_precision": True}})
    assert [f.cause_id for f in rep.findings] == [CAUSE]
    # near-miss: the difference stays with TF32 off: not this cause
    rep = kb.diagnose({**base, "gpu": {"compute_capability": 8.6},
                       "numerics": {**base["numerics"], "mismatch_gone_at_full_precision": False}})
    assert CAUSE in {r.cause_id for r in rep.ruled_out}
    # near-miss: a Turing card (7.5) computes fp32 in fp32 whatever the setting
    rep = kb.diagnose({**base, "gpu": {"compute_capability": 7.5}})
    assert CAUSE in {r.cause_id for r in rep.ruled_out}
    # near-miss: a NaN in the same run is the overflow's question, not rounding
    rep = kb.diagnose({"symptom": "numerics", "gpu": {"compute_capability": 8.6},
                       "numerics": {"dtype": "fp32", "reference_mismatch": True, "nonfinite_count": 4,
                                    "mismatch_gone_at_full_precision": True}})
    assert CAUSE not in {f.cause_id for f in rep.findings}


GTX16 = "numerics.fp16_gtx16_nan"


def test_fp16_nan_on_a_gtx_16_card_leads_and_the_small_conv_test_settles_it() -> None:
    # the words of a real report (ultralytics/yolov5#7908), our own phrasing: NaN in fp16 on a
    # GTX 1660 Ti only
    rep = kb.diagnose(symptom="box and obj losses are nan and there are no detections; this only happens "
                              "on my GTX 1660 Ti, on the CPU everything works fine")
    assert rep.branches[0] == "numerics" and rep.hypotheses[0].cause_id == GTX16
    assert any("fp16 conv NaN" in c.command for c in rep.next_checks)
    # near-miss: the card named beside an OOM names no precision problem
    rep = kb.diagnose(symptom="CUDA out of memory when loading the model on my GTX 1660 Ti")
    assert rep.branches[0] == "oom" and GTX16 not in [h.cause_id for h in rep.hypotheses]
    # the small fp16 convolution returning NaN confirms it
    facts = {"symptom": "numerics", "numerics": {"dtype": "fp16", "nonfinite_count": 5, "first_nonfinite_step": 0,
                                                 "nan_source": "loss"},
             "gpu": {"name": "NVIDIA GeForce GTX 1660 Ti", "fp16_conv_nan": True}}
    assert GTX16 in [f.cause_id for f in kb.diagnose(facts).findings]
    # near-miss: the same NaN after 600 healthy steps is the values' range, not the card
    late = {**facts, "numerics": {**facts["numerics"], "first_nonfinite_step": 600}}
    assert GTX16 in {r.cause_id for r in kb.diagnose(late).ruled_out}
    # near-miss: an RTX 2080 Ti (same compute capability) never takes this cause
    other = {**facts, "gpu": {"name": "NVIDIA GeForce RTX 2080 Ti", "fp16_conv_nan": False}}
    assert GTX16 in {r.cause_id for r in kb.diagnose(other).ruled_out}


@pytest.mark.parametrize("text, name", [
    # several cards compared (ultralytics/yolov5#7908's shape, our words): the one it happens on
    ("the losses are nan; this only happens on GTX1660ti devices, on a Tesla K80 or an RTX 2070 "
     "everything works fine", "GTX1660ti"),
    ("loss is nan on the A100 node but fine on my 3090: it occurs only with the A100", "A100"),
    # near-misses: cards listed with no word of which one fails name none
    ("I have a 3090 and a 4090 and the loss is nan", None),
    ("can it only be trained on a Titan RTX? I have an RTX 2080 Ti", None),
])
def test_of_several_cards_the_one_it_only_happens_on_is_the_jobs(text: str, name: str | None) -> None:
    from kb.symptom_text import extract

    assert extract(text).get("gpu", {}).get("name") == name


def test_a_card_the_table_knows_outside_the_gtx_16_family_rules_its_fault_out() -> None:
    # fp16 NaN named beside an RTX 3060 (same symptom, another family): not the GTX 16 fault
    rep = kb.diagnose(symptom="loss is nan from the first step with fp16 on my RTX 3060")
    assert GTX16 in {r.cause_id for r in rep.ruled_out}
    # near-miss: with a GTX 1660 Ti named it stays open (a hypothesis the small test settles)
    rep = kb.diagnose(symptom="loss is nan from the first step with fp16 on my GTX 1660 Ti")
    assert GTX16 in {h.cause_id for h in rep.hypotheses}
    # and with no card named nothing is known either way: it stays open too
    rep = kb.diagnose(symptom="loss is nan from the first step with fp16")
    assert GTX16 in {h.cause_id for h in rep.hypotheses}
