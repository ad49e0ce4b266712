"""When no fact, no signature and no word of the user's puts a branch in play, the artifacts'
own free text names it (a weak reason: hypotheses only), bounded in size; and with no evidence
at all, the hypotheses come in the order of how common each cause is."""

from __future__ import annotations

import kb
from kb.inputs import PROSE_TOTAL, load_inputs
from kb.api import Blob
from kb.loaded import load_knowledge

KN = load_knowledge()

#: a log with no message any signature knows and no measurement: only its words say "numerics"
DIVERGED = ("2024-01-01 12:00:01 epoch 3 done\n"
            "2024-01-01 12:00:02 the loss diverged again and exploded\n")


def test_artifact_text_names_the_branch() -> None:
    rep = kb.diagnose(inputs=[DIVERGED])
    assert rep.branches == ["numerics"]
    assert rep.status == "hypotheses"
    assert not rep.findings
    assert all(r.startswith("artifact_text:") for r in rep.branch_reasons["numerics"])


def test_user_words_come_before_the_artifacts_text() -> None:
    rep = kb.diagnose(inputs=[DIVERGED], symptom="CUDA out of memory at the first step")
    assert rep.branches[0] == "oom"
    assert "numerics" not in rep.branches


def test_text_without_branch_words_stays_inconclusive() -> None:
    # (a line "saving to /tmp/x" is no longer neutral: past incidents of ranks left waiting
    # while rank 0 saves a checkpoint read like it, and open their branch as hypotheses)
    rep = kb.diagnose(inputs=["2024-01-01 12:00:01 epoch 3 done\nwrote /tmp/x\n"])
    assert rep.status == "inconclusive"
    assert rep.branches == []


def test_a_measured_healthy_job_stays_healthy() -> None:
    # measurements that put no branch in play say "healthy"; the log's words do not override
    healthy = kb.diagnose({"gpu": {"utilization_samples": [97, 96, 98, 97]}})
    assert healthy.status == "healthy"
    rep = kb.diagnose({"gpu": {"utilization_samples": [97, 96, 98, 97]}}, inputs=[DIVERGED])
    assert rep.status == "healthy"


def test_a_setting_alone_is_no_measurement_of_health() -> None:
    # --max-model-len enters the oom branch only against the KV cache's size: alone it decides
    # nothing, so the job is not "healthy" on it, and the text may still name a branch
    assert kb.diagnose({"inference": {"max_model_len": 350000}}).status == "inconclusive"
    rep = kb.diagnose({"inference": {"max_model_len": 350000},
                      "oom": {"kv_cache_capacity_tokens": 400000}})
    assert rep.status == "healthy"
    rep = kb.diagnose({"inference": {"max_model_len": 350000}}, inputs=[DIVERGED])
    assert rep.branches == ["numerics"]


def test_prose_is_bounded_over_many_inputs() -> None:
    big = ("the loss diverged " * 4000 + "\n") * 12  # ~860 KB of text per input
    bundle = load_inputs([Blob(f"log{i}.txt", big.encode()) for i in range(4)])
    assert sum(map(len, bundle.prose)) <= PROSE_TOTAL


def test_with_no_evidence_the_likelier_causes_come_first() -> None:
    # the prior: how often each cause was behind its branch's real incidents, plus its
    # prevalence as a few incidents of belief; below the first, each place goes to the cause
    # whose prior, less the share of it accepted together with those above, is the largest
    prior = KN.prior()
    overlap = KN.overlap()
    for b in KN.branches:
        rep = kb.diagnose({"symptom": b})
        tied = [h.cause_id for h in rep.hypotheses if h.evidence == rep.hypotheses[0].evidence]
        assert prior[tied[0]] == max(v for c, v in prior.items() if KN.causes[c].branch == b), b
        for k in range(1, len(tied)):
            def added(c: str) -> float:
                return prior[c] * max(1 - sum(overlap.get((c, a), 0.0) for a in tied[:k]), 0.1)
            assert all(added(tied[k]) >= added(c) - 1e-12 for c in tied[k + 1:]), (b, k)


def test_a_template_question_answered_no_names_nothing() -> None:
    # the Transformers issue template: "Using distributed or parallel set-up in script?: No"
    env = ("- `transformers` version: 3.1.0\n- PyTorch version (GPU?): 1.5.1\n"
           "- Using GPU in script?: Yes\n- Using distributed or parallel set-up in script?: No\n")
    rep = kb.diagnose(inputs=[env])
    assert "nccl" not in rep.branches


def test_a_template_questions_words_are_the_templates() -> None:
    # unanswered ("<fill in>") or answered, the question's words are not the reporter's
    env = ("- Using GPU in script?: <fill in>\n"
           "- Using distributed or parallel set-up in script?: <fill in>\n")
    assert "nccl" not in kb.diagnose(inputs=[env]).branches
    # the answer still counts
    rep = kb.diagnose(inputs=["- What went wrong?: the loss diverged and exploded at epoch 3\n"])
    assert rep.branches == ["numerics"]


def test_commands_and_settings_name_no_branch() -> None:
    # a launch command's words set the job up ("torchrun", "distributed"): they are facts for
    # their reader, not words about what went wrong
    cmd = ("torchrun --nproc_per_node 8 --nnodes 1 run_clm.py --ddp_backend nccl \\\n"
           "    --distributed_strategy ddp --fp16\n"
           "export NCCL_P2P_LEVEL=NVL\n")
    rep = kb.diagnose(inputs=[cmd])
    assert "nccl" not in rep.branches
    # the same words in a sentence do
    rep = kb.diagnose(inputs=["the distributed all_reduce hangs in nccl after the first step\n"])
    assert "nccl" in rep.branches


def test_a_tracebacks_code_names_nothing() -> None:
    # a frame's source line is code ("eval_dataloader"), not what went wrong
    tb = ("Traceback (most recent call last):\n"
          '  File "trainer.py", line 1157, in evaluate\n'
          "    output = self.prediction_loop(eval_dataloader, description=\"Evaluation\")\n"
          '  File "trainer.py", line 1244, in prediction_loop\n'
          "    preds = logits if preds is None else torch.cat((preds, logits), dim=0)\n")
    rep = kb.diagnose(inputs=[tb])
    assert "gpu_util" not in rep.branches


def test_equal_evidence_goes_to_the_branch_named_most() -> None:
    # no fact: the hypotheses of both branches hold no evidence; the branch the words name
    # most leads (not the order of the branch files or of the ids)
    a = kb.diagnose(symptom="the loss is nan, then the loss explodes and diverged; gpu utilization low")
    b = kb.diagnose(symptom="gpu utilization low, training is slow, the gpu is idle; the loss is nan")
    assert a.branches[0] == "numerics" and a.hypotheses[0].cause_id.startswith("numerics.")
    assert b.branches[0] == "gpu_util" and b.hypotheses[0].cause_id.startswith("gpu_util.")


def test_the_report_says_why_the_branch_opened() -> None:
    rep = kb.diagnose(inputs=[DIVERGED])
    assert any(w.startswith("artifact text: numerics <- 'diverge") for w in rep.warnings)


def test_the_text_is_read_only_when_nothing_else_names_a_branch() -> None:
    # reading a text's words costs time: the fallback is called only when it is needed
    from kb.api import reasoner

    def never() -> dict[str, list[str]]:
        raise AssertionError("read although a fact put a branch in play")

    r = reasoner(KN)
    d = r.diagnose({"oom.occurred": True}, fallback_branches=never)
    assert "oom" in d.branches
    called: list[bool] = []

    def names_numerics() -> dict[str, list[str]]:
        called.append(True)
        return {"numerics": ["artifact_text:diverge"]}

    d = r.diagnose({"symptom_text": "it broke"}, fallback_branches=names_numerics)
    assert called and d.branches == ["numerics"]


def test_an_environment_list_names_no_branch() -> None:
    # issue-template environment fields (their versions are the setup, not the symptom): alone
    # they must not read like "versions differ across ranks"
    for env in ("Operating System: Ubuntu 18.04\nPython: 3.7.5\n"
                "Pytorch version: torch==1.4.0, torchvision==0.5.0\n",
                "- OS: Ubuntu\n- PyTorch version:'0.4.0a0+33bb849'\n- Python version: 3.5\n"
                "- CUDA/cuDNN version: 8.0/7.0\n- GPU models and configuration: 2x 1080 Ti\n"):
        rep = kb.diagnose(inputs=[env])
        assert rep.status == "inconclusive" and rep.branches == [], env
    # near-miss: a sentence about versions that is the reporter's own still counts as text
    from kb.readers.incident import prose

    said = "the NCCL version differs between the two nodes and the job hangs"
    assert prose([said, "Python: 3.10"]) == said


def test_a_collect_env_report_has_no_prose() -> None:
    # `python -m torch.utils.collect_env` as printed (tests/incidents: its header, "Is ...:"
    # fields, cuDNN library paths, lscpu's aligned fields, the pip list): all setup, no symptom
    from pathlib import Path

    from kb.readers.incident import prose

    report = (Path(__file__).parent.parent / "incidents" / "numerics" / "t5-large-fp16-nan-translation"
              / "collect_env.txt").read_text(encoding="utf-8").splitlines()
    assert prose(report).split() == ["True"]  # "- Using GPU in script?: True": the answer alone
    lines = ["Collecting environment information...", "Is debug build: False",
             "CUDA_MODULE_LOADING set to: LAZY", "/usr/lib/x86_64-linux-gnu/libcudnn_adv_infer.so.8.9.7",
             "Architecture:                       x86_64", "[pip3] numpy==1.26.4", "[conda] torch 2.1.2 pypi_0 pypi"]
    assert prose(lines).strip() == ""
    # near-misses: the reporter's own lines beside it still count
    said = "Is this a bug: the loss goes nan after the upgrade"
    assert prose(["Is debug build: False", said]).strip().endswith("the loss goes nan after the upgrade")


def test_the_cuda_toolkits_banner_has_no_prose() -> None:
    # `nvcc --version` as NVIDIA's CUDA installation guide shows it, and the same version quoted as
    # a field by OpenMMLab's collect_env: the toolkit's version, no compilation that is slow
    from kb.readers.incident import prose

    banner = ["nvcc: NVIDIA (R) Cuda compiler driver", "Copyright (c) 2005-2022 NVIDIA Corporation",
              "Built on Wed_Sep_21_10:33:58_PDT_2022", "Cuda compilation tools, release 11.8, V11.8.89",
              "Build cuda_11.8.r11.8/compiler.31833905_0",
              " 'NVCC': 'Cuda compilation tools, release 11.7, V11.7.99',"]
    assert "compil" not in prose(banner).lower()
    assert "compile" not in kb.diagnose(inputs=["\n".join(banner) + "\n"]).branches
    # near-miss: the reporter's own words about a compilation still count
    said = "the CUDA compilation of the extension takes 40 minutes"
    assert prose([*banner, said]).strip().endswith(said)


def test_the_kind_of_job_opens_its_branch_when_nothing_else_does() -> None:
    # a serving engine's launch command alone: a serving job, its settings the evidence
    launch = "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --enforce-eager --max-num-seqs 8\n"
    rep = kb.diagnose(inputs=[launch])
    assert rep.branches == ["inference"]
    assert rep.status == "hypotheses" and not rep.findings
    assert rep.branch_reasons["inference"] == ["context:inference.engine"]
    assert any(w.startswith("setup: inference <- inference.engine") for w in rep.warnings)
    assert {"inference.max_num_seqs_limit", "inference.cuda_graphs_disabled"} <= {
        h.cause_id for h in rep.hypotheses[:3]}
    # near-misses: words or messages name a branch (they decide), a measurement says healthy
    rep = kb.diagnose(inputs=[launch], symptom="CUDA out of memory when the server starts")
    assert rep.branches[0] == "oom"
    rep = kb.diagnose({"gpu": {"utilization_samples": [97, 96, 98, 97]}}, inputs=[launch])
    assert rep.status == "healthy"


def test_a_cards_memory_size_names_no_oom() -> None:
    # kohya_ss's environment report: the card's size is the setup, not a memory problem (nor is
    # the "Version: 3.10.10" field a word about versions)
    env = ("Python Information: Version: 3.10.10, Implementation: CPython\n"
           "GPU Information: Name: NVIDIA GeForce RTX 3080, VRAM: 10240 MiB\n")
    assert "oom" not in kb.diagnose(inputs=[env]).branches
    # near-miss: the same card said to run out of its memory
    rep = kb.diagnose(inputs=[env + "VRAM ran out of memory at step 12\n"])
    assert rep.branches == ["oom"]


def test_a_version_field_is_the_setup() -> None:
    from kb.readers.incident import _ENV_FIELD

    assert _ENV_FIELD.match("Python Information: Version: 3.10.10, Implementation: CPython")
    # near-miss: a message about versions is not a field of the report
    assert not _ENV_FIELD.match("RuntimeError: NCCL version mismatch between ranks 0 and 3")
