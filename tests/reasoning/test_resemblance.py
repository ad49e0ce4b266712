"""Ties of evidence broken by how much the words read like a cause's own description."""

from __future__ import annotations

import pytest

import kb
from kb.engine.diagnosis import MIN_RESEMBLANCE
from kb.engine.resemblance import Resemblance, tokens
from kb.loaded import load_knowledge


@pytest.fixture(scope="module")
def like():
    kn = load_knowledge()
    return kn, Resemblance(kn)


def test_tokens() -> None:
    assert tokens("The scheduler changes the learning rate") == ["scheduler", "chang", "learn", "rate"]
    assert tokens("cache_size_limit hit") == ["cache", "size", "limit", "hit"]
    assert tokens("显存碎片") == ["显存", "存碎", "碎片"]
    assert tokens("a an the of") == []


def test_each_cause_reads_most_like_its_own_description(like) -> None:
    # table-driven over the knowledge: a cause's own title and symptom resemble it more than
    # any sibling's (descriptions that tell causes apart), in both languages
    kn, r = like
    for c in kn.causes.values():
        siblings = [x.id for x in kn.causes.values() if x.branch == c.branch]
        for lang in ("en", "zh"):
            s = r.scores(f"{c.title.get(lang)} {c.symptom.get(lang)}", siblings)
            assert max(s, key=s.get) == c.id, (c.id, lang)


def test_words_the_knowledge_lacks_score_nothing(like) -> None:
    kn, r = like
    assert r.scores("zzzq blorf", list(kn.causes)) == {}


def test_a_tie_of_evidence_goes_to_the_cause_the_words_describe() -> None:
    text = ("torch.compile keeps recompiling my optimizer step: the scheduler changes the "
            "learning rate float every step")
    hyps = kb.diagnose({"symptom_text": text}).hypotheses
    top = hyps[0]
    assert top.cause_id == "compile.recompile_other_guard"
    tied = [h for h in hyps if h.evidence == top.evidence]
    assert len(tied) > 1 and top.resemblance > max(h.resemblance for h in tied[1:])


def test_vague_words_leave_the_prior_order() -> None:
    # near-miss: words every cause shares a little of score below the noise floor
    hyps = kb.diagnose({"symptom_text": "my job has a problem, please help"}).hypotheses
    assert all(h.resemblance == 0.0 for h in hyps)
    r = kb.diagnose({"symptom_text": "training is very slow"}).hypotheses
    assert all(h.resemblance == 0.0 or h.resemblance >= MIN_RESEMBLANCE for h in r)


@pytest.mark.parametrize("text,branches", [
    ("torch.compile makes training slow", ["compile"]),
    ("allreduce is slow across two nodes", ["nccl"]),
    ("the optimizer step is terribly slow", ["gpu_util"]),
    ("vllm generation is slow", ["inference"]),
])
def test_slowness_names_the_training_loop_only_when_nothing_else_is_named(
        text: str, branches: list[str]) -> None:
    from kb.symptom_text import classify

    assert list(classify(text, load_knowledge())) == branches


def test_words_naming_no_branch_open_the_branch_of_the_cause_they_describe() -> None:
    text = ("after the update the server stopped reusing the cache and computes the shared "
            "system prompt again on each completion request")
    rep = kb.diagnose({"symptom_text": text})
    assert rep.status == "hypotheses" and not rep.findings
    assert rep.branches[0] == "inference"
    assert any(w.startswith("text: inference <- reads like") for w in rep.warnings)
    assert "inference.prefix_caching_disabled" in [h.cause_id for h in rep.hypotheses][:3]


def test_vague_words_open_no_branch() -> None:
    # near-miss: nothing reads clearly like any cause
    rep = kb.diagnose({"symptom_text": "it does not work, any idea?"})
    assert rep.status == "inconclusive" and not rep.branches


def test_the_cached_descriptions_are_the_knowledges_own() -> None:
    import json

    from kb.engine.resemblance import describe_causes

    kn = load_knowledge()
    assert kn.descriptions is not None
    cached = json.loads(kn.descriptions)
    assert cached == json.loads(describe_causes(kn))
    assert set(cached["vectors"]) == {"en", "zh"}
    assert all(set(v) == set(kn.causes) for v in cached["vectors"].values())


def test_words_added_in_one_language_leave_the_other_languages_likeness() -> None:
    # each language is its own description: Chinese words added to a cause do not thin out
    # how much an English text reads like it (they once pushed one below MIN_RESEMBLANCE)
    from kb.engine.resemblance import describe_causes

    kn = load_knowledge()
    cid = "oom.ranks_share_gpu0"
    text = "every process allocates memory on the first gpu, cuda:0, and it runs out of memory"
    before = Resemblance(kn).scores(text, [cid])[cid]
    cause = kn.causes[cid]
    words = cause.words.model_copy(update={"zh": [*cause.words.zh, "第一张显卡", "其他显卡", "其余显卡"]})
    changed = kn.model_copy(update={"causes": {**kn.causes, cid: cause.model_copy(update={"words": words})}})
    changed = changed.model_copy(update={"descriptions": describe_causes(changed)})
    assert before >= MIN_RESEMBLANCE
    assert Resemblance(changed).scores(text, [cid])[cid] == before
    # near-miss: the same words added in English do change it
    words = cause.words.model_copy(update={"en": [*cause.words.en, "first card", "other cards"]})
    changed = kn.model_copy(update={"causes": {**kn.causes, cid: cause.model_copy(update={"words": words})}})
    changed = changed.model_copy(update={"descriptions": describe_causes(changed)})
    assert Resemblance(changed).scores(text, [cid])[cid] != before


def test_a_branch_opens_on_its_causes_together_not_one_chance_match() -> None:
    # one cause a little ahead alone (two rare words shared by chance) loses to a branch whose
    # several causes all read like the text; a branch whose best is below the floor never opens
    from kb.api import reasoner

    kn = load_knowledge()
    r = reasoner(kn)
    like = {"inference.sglang_cuda_graph_off": 0.14, "numerics.grad_scaler_skipping": 0.11,
            "numerics.grad_accum_scaling": 0.07, "numerics.lr_too_high": 0.065}
    assert r._likest(like) == "numerics.grad_scaler_skipping"
    # alone, the single match still opens its branch
    assert r._likest({"inference.sglang_cuda_graph_off": 0.14}) == "inference.sglang_cuda_graph_off"
    # many weak ones below the floor: nothing
    assert r._likest({"numerics.lr_too_high": 0.07, "numerics.grad_accum_scaling": 0.07,
                      "numerics.zero_token_loss": 0.07}) is None


def test_a_table_of_training_losses_reads_like_numerics() -> None:
    # a pasted results table (batch sizes, accumulation, losses) from a gradient-accumulation
    # report (hiyouga/LLaMA-Factory): it shares "bs" and "step" with a serving cause's flags,
    # but the numerics causes together read more like it
    text = ("| GPU | per device bs | gradient acc | Initial loss | 100-step loss |\n"
            "| 4 | 16 | 2 | 6.4 | 1.8 |\n| 4 | 1 | 32 | 138 | 33.13 |\n")
    rep = kb.diagnose(inputs=[text])
    assert rep.branches[:1] == ["numerics"]
