"""Past incidents (``graphs/precedents.yaml``): written from the corpora by
``scripts/count_observed.py``, validated on load, searched by a text's words
(``engine/precedents.py``), and what they may and may not do to a diagnosis: weigh tied
hypotheses, open a branch nothing else places, be shown to compare with; never confirm."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kb
from kb.engine.knowledge import load
from kb.engine.precedents import NEAREST, Precedents, index_precedents

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ("https://example.org/1", "oom", ["oom.eval_no_grad"], "validation loop memory grows each batch"),
    ("https://example.org/2", "oom", ["oom.eval_no_grad"], "memory grows during validation batch"),
    ("https://example.org/3", "oom", ["oom.fragmentation"], "reserved memory large allocation fails"),
    ("https://example.org/4", "numerics", [], "loss nan after warmup steps"),
    ("https://example.org/5", "numerics", ["numerics.lr_too_high"], "loss nan after warmup"),
]


@pytest.fixture(scope="module")
def cases() -> Precedents:
    return Precedents(index_precedents(CASES))


def test_the_nearest_case_shares_the_rarer_words(cases: Precedents) -> None:
    near = cases.nearest("memory grows in my validation loop")
    assert [n.source for n in near[:2]] == ["https://example.org/1", "https://example.org/2"]
    assert near[0].similarity > near[-1].similarity
    assert near[0].causes == ("oom.eval_no_grad",) and near[0].branch == "oom"


def test_a_case_left_out_is_never_returned(cases: Precedents) -> None:
    near = cases.nearest("memory grows in my validation loop", without={"https://example.org/1"})
    assert "https://example.org/1" not in [n.source for n in near]
    assert near[0].source == "https://example.org/2"


def test_known_keeps_only_cases_with_an_accepted_cause(cases: Precedents) -> None:
    # the outside case (no accepted cause) tells the branch, never a cause
    assert "https://example.org/4" in [n.source for n in cases.nearest("loss nan after warmup")]
    known = cases.nearest("loss nan after warmup", known=True)
    assert [n.source for n in known] == ["https://example.org/5"]


def test_the_cause_whose_cases_hold_the_words_reads_best(cases: Precedents) -> None:
    # "memory" and "grows" are words of both eval cases and only one of the fragmentation
    # case's: the cases of oom.eval_no_grad account for them better
    got = cases.readings("memory grows", ["oom.eval_no_grad", "oom.fragmentation", "numerics.lr_too_high"])
    assert got["oom.eval_no_grad"] == 0.0
    assert got["numerics.lr_too_high"] < got["oom.fragmentation"] < 0.0
    # no word of the cases, or no text: nothing to tell them apart
    assert set(cases.readings("kernel launch overhead", ["oom.eval_no_grad", "oom.fragmentation"]).values()) == {0.0}
    assert cases.readings("", ["oom.eval_no_grad"]) == {"oom.eval_no_grad": 0.0}


def test_a_longer_text_reads_by_the_square_root_of_its_words(cases: Precedents) -> None:
    # a report that says the same thing twice is not twice the evidence: its words are not
    # independent draws, and a summed log-likelihood would let length alone decide
    causes = ["oom.eval_no_grad", "oom.fragmentation", "numerics.lr_too_high"]
    once = cases.readings("memory grows", causes)
    twice = cases.readings("memory grows. memory grows", causes)
    for c in ("oom.fragmentation", "numerics.lr_too_high"):
        assert once[c] < 0.0
        assert twice[c] == pytest.approx(once[c] * math.sqrt(2), rel=1e-3)
    assert twice["oom.eval_no_grad"] == 0.0


def test_a_case_left_out_takes_its_words_with_it(cases: Precedents) -> None:
    # both eval cases left out: their cause reads like one with no case at all, no better than
    # the fragmentation case on the words that case holds
    causes = ["oom.eval_no_grad", "oom.fragmentation"]
    kept = cases.readings("memory grows", causes)
    gone = cases.readings("memory grows", causes,
                          without={"https://example.org/1", "https://example.org/2"})
    assert kept["oom.eval_no_grad"] == 0.0 and gone["oom.eval_no_grad"] < 0.0
    assert gone["oom.fragmentation"] == 0.0


def test_words_no_case_shares_find_nothing(cases: Precedents) -> None:
    assert cases.nearest("kernel launch overhead") == []
    # a word only one case holds tells nothing about any other: it has no weight
    assert cases.nearest("large") == []


def test_votes_sum_the_cosines_over_k(cases: Precedents) -> None:
    near = cases.nearest("memory grows in my validation loop")
    votes = Precedents.votes(near)
    expect = sum(n.similarity for n in near if "oom.eval_no_grad" in n.causes) / NEAREST
    assert votes["oom.eval_no_grad"] == pytest.approx(expect, abs=1e-4)
    assert Precedents.branch_votes(near)["oom"] == pytest.approx(
        sum(n.similarity for n in near if n.branch == "oom") / NEAREST, abs=1e-4)


def test_the_file_is_that_of_the_corpora(kn) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "count_observed.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    data = yaml.safe_load((ROOT / "graphs" / "precedents.yaml").read_text(encoding="utf-8"))
    assert len(data["cases"]) == len(Precedents(kn.precedents)) > 1000


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("  - gpu_util.", "  - gpu_util.no_such_cause\n  - gpu_util.", "unknown cause 'gpu_util.no_such_cause'"),
    ("  branch: oom", "  branch: disk", "unknown branch 'disk'"),
    ("- source: https://", "- source: javascript:alert(1)//", "source"),
    ("cases:\n", "cases:\n- {source: 'https://discuss.pytorch.org/t/how-improve-the-speed-of-training"
     "-after-using-transforms-resize/95994', branch: oom, accepted: [], words: again}\n",
     "duplicate source"),
])
def test_bad_cases_name_the_file(edited_problems, old: str, new: str, problem: str) -> None:
    text = edited_problems("precedents.yaml", old, new)
    assert "precedents.yaml" in text and problem in text, text


def _one_case(root: Path, words: str, branch: str, causes: list[str], n: int = 3) -> Path:
    cases = [{"source": f"https://example.org/{i}", "branch": branch, "accepted": causes,
              "words": words} for i in range(n)]
    cases.append({"source": "https://example.org/other", "branch": "oom",
                  "accepted": ["oom.fragmentation"], "words": "something else entirely"})
    (root / "precedents.yaml").write_text(yaml.safe_dump({"source": "test", "cases": cases}),
                                          encoding="utf-8")
    return root


def test_past_cases_weigh_tied_hypotheses_and_never_confirm(edited_graphs) -> None:
    # three past cases in a made-up dialect ("the blorp went sideways") had the eval cause;
    # the same words put it first among OOM hypotheses, and only as a hypothesis
    root = _one_case(edited_graphs("observed.yaml", "accepted:", "accepted:"),
                     "blorp sideways quuxing", "oom", ["oom.eval_no_grad"])
    kn = load(root, use_cache=False)
    rep = kb.diagnose(symptom="CUDA out of memory, the blorp went sideways while quuxing",
                      knowledge=kn)
    assert rep.status == "hypotheses" and not rep.findings
    assert rep.hypotheses[0].cause_id == "oom.eval_no_grad"
    assert rep.hypotheses[0].precedent > 0
    assert [p.source for p in rep.past_incidents] == [f"https://example.org/{i}" for i in range(3)]
    # without them, the same words rank by the prior alone
    base = kb.diagnose(symptom="CUDA out of memory, the blorp went sideways while quuxing")
    assert base.hypotheses[0].cause_id != "oom.eval_no_grad"
    left_out = kb.diagnose(symptom="CUDA out of memory, the blorp went sideways while quuxing",
                           knowledge=kn, without_precedents=[f"https://example.org/{i}"
                                                             for i in range(3)])
    assert left_out.hypotheses[0].cause_id != "oom.eval_no_grad"
    assert all(h.precedent == 0 for h in left_out.hypotheses)
    assert left_out.past_incidents == []


def test_past_cases_open_a_branch_nothing_else_places(edited_graphs) -> None:
    root = _one_case(edited_graphs("observed.yaml", "accepted:", "accepted:"),
                     "blorp sideways quuxing", "numerics", ["numerics.lr_too_high"])
    kn = load(root, use_cache=False)
    rep = kb.diagnose(symptom="the blorp went sideways while quuxing", knowledge=kn)
    assert rep.branches == ["numerics"] and rep.status == "hypotheses"
    assert all(r.startswith("precedents:") for r in rep.branch_reasons["numerics"])
    assert any("past incidents" in w for w in rep.warnings), rep.warnings
    # a lone past case is not a majority of nothing: it still needs others like it
    assert kb.diagnose(symptom="the blorp went sideways while quuxing").branches == []


def test_the_cli_leaves_a_past_incident_out(edited_graphs) -> None:
    words = "validation loop CUDA out of memory, memory keeps growing every eval batch"
    run = subprocess.run([sys.executable, "-m", "kb", "diagnose", "--symptom", words,
                          "--format", "json"], capture_output=True, text=True, timeout=120)
    shown = [p["source"] for p in json.loads(run.stdout)["past_incidents"]]
    assert run.returncode == 0 and shown, run.stderr
    again = subprocess.run([sys.executable, "-m", "kb", "diagnose", "--symptom", words,
                            "--without-precedent", shown[0], "--format", "json"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert shown[0] not in [p["source"] for p in json.loads(again.stdout)["past_incidents"]]


# (no branch's words: "rather than my GPU" would name the branch itself)
COMFY = ("My ComfyUI seems to be using the CPU and not my GPU. I have CUDA Version 12.4 installed "
         "(verified by nvidia-smi in power shell).")


def test_a_description_opens_its_branch_only_beside_a_past_case_of_it(edited_graphs) -> None:
    # the words read like the description of a job left on the CPU (CPU rather than GPU, CUDA,
    # nvidia-smi); with no past incident of its branch among the nearest, that likeness opens
    # nothing
    root = _one_case(edited_graphs("observed.yaml", "accepted:", "accepted:"),
                     "comfyui uses the cpu rather than the gpu", "inference",
                     ["inference.layers_on_cpu"], n=1)
    kn = load(root, use_cache=False)
    rep = kb.diagnose(symptom=COMFY, knowledge=kn)
    assert "gpu_util" not in rep.branches
    assert not any(r.startswith("resembles:") for why in rep.branch_reasons.values() for r in why)
    # near-miss: one past case of that branch among the nearest (none of them a majority) lets
    # the description open it
    cases = [("nccl", "nccl.version_mismatch", "CUDA Version installed, nvidia-smi on the GPU"),
             ("numerics", "numerics.lr_too_high", "loss is nan with a CUDA error"),
             ("oom", "oom.fragmentation", "out of memory in nvidia-smi"),
             ("gpu_util", "gpu_util.cpu_bound", "dataloader slow, the GPU idle")]
    (root / "precedents.yaml").write_text(yaml.safe_dump({"source": "test", "cases": [
        {"source": f"https://example.org/{b}", "branch": b, "accepted": [c], "words": w}
        for b, c, w in cases]}), encoding="utf-8")
    kn = load(root, use_cache=False)
    assert kb.diagnose(symptom=COMFY, knowledge=kn).branch_reasons == {
        "gpu_util": ["resembles:gpu_util.no_gpu_in_use"]}
