"""The user's words answer the decision graph's questions (`said` in the branch files): they
rank the causes below that answer, never confirm one, and stay inside the branches the text or
the artifacts name."""

from __future__ import annotations

import pytest

import kb
from kb.engine.errors import KnowledgeError
from kb.engine.knowledge import load
from kb.loaded import load_knowledge
from kb.symptom_text import answers_said

KN = load_knowledge()
SAID = [(b.id, w) for b in KN.branches.values() for w in b.said]


def _below(rep: kb.Report, key: str) -> set[str]:
    """The hypotheses the answer ``key`` said in the words lifts."""
    return {h.cause_id for h in rep.hypotheses if key in (h.said or [])}


def test_every_branch_has_answers_its_users_give() -> None:
    assert {b for b, _ in SAID} == set(KN.branches)


@pytest.mark.parametrize("branch,said", SAID, ids=[f"{w.node}={w.answer}" for _, w in SAID])
def test_each_answer_is_heard_ranks_and_never_confirms(branch: str, said) -> None:
    key = f"{said.node}={said.answer}"
    word = (said.words.en or said.words.zh)[0]
    # an answer whose question presumes a kind of job is heard with that job named
    job = (said.only_with.en or said.only_with.zh or [""])[0]
    assert key in answers_said(f"the job: {word} {job}", KN)
    base = kb.diagnose({"symptom": branch})
    told = kb.diagnose({"symptom": branch, "said": [key]})
    assert told.findings == [] and base.findings == []  # words alone confirm nothing
    below = _below(told, key)
    assert below, f"no hypothesis lies below {key}"
    # the causes below the answer come before the others
    order = [h.cause_id for h in told.hypotheses]
    assert set(order[:len(below)]) == below, (key, order[:len(below) + 2])


def test_a_timeout_at_a_rank_0_evaluation_points_at_the_desync() -> None:
    rep = kb.diagnose(symptom="NCCL collective timed out at the end of the epoch, while only "
                              "rank 0 runs the evaluation")
    assert rep.findings == []
    assert rep.hypotheses[0].cause_id == "nccl.rank_desync_timeout"


def test_a_slow_run_points_away_from_the_timeout_causes() -> None:
    rep = kb.diagnose(symptom="multi-node NCCL training is slow: low bandwidth between nodes")
    top3 = [h.cause_id for h in rep.hypotheses[:3]]
    assert "nccl.rank_desync_timeout" not in top3


def test_cause_words_of_a_branch_the_text_does_not_name_do_not_lead() -> None:
    # ".item()" names compile.host_sync, but the text is about slow training
    rep = kb.diagnose(symptom="training is very slow: the .item() calls copy the loss to the "
                              "CPU every iteration")
    assert rep.hypotheses[0].branch == "gpu_util"
    assert rep.hypotheses[0].cause_id == "gpu_util.host_sync_in_loop"


def test_an_unknown_answer_is_refused_by_validation(edited_graphs) -> None:
    root = edited_graphs("branches/nccl.yaml", "answer: timeout\n    words:",
                         "answer: no_such_answer\n    words:")
    kn = load(root, use_cache=False)
    from kb.engine.graph import validate

    problems = validate(kn)
    assert any("no step answers 'no_such_answer' at 'nccl.hang'" in p for p in problems), problems


def test_a_context_on_an_unknown_fact_is_refused_by_validation(edited_graphs) -> None:
    root = edited_graphs("branches/inference.yaml", "{fact: inference.engine, op: exists}",
                         "{fact: inference.no_such_fact, op: exists}")
    kn = load(root, use_cache=False)
    from kb.engine.graph import validate

    assert any("unknown fact path 'inference.no_such_fact'" in p for p in validate(kn))


@pytest.mark.parametrize(("text", "first"), [
    # JAX keys its compile cache on static arguments by hash and equality, JAX's own docs say
    # (jax.jit, static_argnums): an argument "set as static" that is a new object each call
    ("my jitted function is recompiled at every call whenever an argument set as static is not "
     "identical to the previous one", "compile.recompile_other_guard"),
    ("torch.compile recompiles after warmup: a dispatch key mismatch from inference mode",
     "compile.recompile_other_guard"),
    # near-miss: a shape that changes is the dynamic-shapes sibling
    ("my jitted function recompiles at every call because the batch size changes",
     "compile.dynamic_shapes"),
])
def test_what_a_recompile_is_keyed_on_ranks_its_guard(text: str, first: str) -> None:
    rep = kb.diagnose(symptom=text)
    assert rep.findings == []
    assert rep.hypotheses[0].cause_id == first


@pytest.mark.parametrize("text", [
    "`init_process_group` hanging on HPC multi-node system w GPU",
    "jax.distributed.initialize() hangs and eventually times out on 4 VMs",
    "two-node torchrun job: NCCL hangs during initialization",
    "8机训练时无法启动，初始化一直卡住",
])
def test_a_hang_while_the_job_starts_points_at_the_connection(text: str) -> None:
    # NCCL's networking troubleshooting: interfaces that cannot reach the other nodes make NCCL
    # "fail during the init functions or even hang"; no collective of the job has run, so no
    # rank can be out of step in one
    said = answers_said(text, KN)
    assert "nccl.hang=at_init" in said and "nccl.hang=hung" not in said
    rep = kb.diagnose(symptom=text)
    assert rep.findings == []
    top2 = [h.cause_id for h in rep.hypotheses[:2]]
    assert set(top2) <= {"nccl.connect_refused", "nccl.socket_ifname_wrong"}, top2


@pytest.mark.parametrize(("text", "diverges"), [
    # the loss climbing and staying up answers "does it blow up?" as the divergence it is
    ("I have not changed the code, but my losses become bigger and bigger", True),
    ("the images look good for 5000 iterations, but then the loss rapidly increases", True),
    ("I can train for about 1 epoch before losses start significantly increasing", True),
    # near-misses: a loss that falls, a performance loss
    ("the loss decreases steadily and then turns NaN at epoch 12", False),
    ("The performance loss seems to increase with smaller batch sizes", False),
])
def test_a_climbing_loss_answers_that_it_diverges(text: str, diverges: bool) -> None:
    assert ("numerics.grad=exploding" in answers_said(text, KN)) is diverges


@pytest.mark.parametrize("text", [
    "multi-node training hangs at step 5000 in an all_reduce",
    "after initialization it trains fine but hangs at epoch 3",
    "the model init is slow, then it hangs at the allreduce",
    "the two-node job hangs after a few epochs",
    "NCCL training gets stuck at step 3000 every time",
    "it randomly hangs during training on 16 GPUs",
    "8卡训练跑了一段时间后卡住",
])
def test_a_hang_later_in_the_run_is_no_start_up_hang(text: str) -> None:
    said = answers_said(text, KN)
    assert "nccl.hang=at_init" not in said and "nccl.hang=hung" in said


@pytest.mark.parametrize(("text", "first"), [
    # several GPUs no faster than one in training: single-process DataParallel, the known culprit
    # (PyTorch's docs: "DataParallel is usually slower than DistributedDataParallel even on a single
    # machine")
    ("training is slower when using multi-gpus (8 gpus) than single gpu", "gpu_util.dataparallel_single_process"),
    ("用了两张1080ti训练，比单卡快了不到20%", "gpu_util.dataparallel_single_process"),
])
def test_several_gpus_no_faster_than_one_in_training_points_at_dataparallel(text: str, first: str) -> None:
    rep = kb.diagnose(symptom=text)
    assert rep.findings == [] and rep.hypotheses[0].cause_id == first


def test_a_split_server_no_faster_than_one_gpu_stays_with_serving() -> None:
    # near-miss: the same complaint about a server splitting a small model names serving causes
    rep = kb.diagnose(symptom="vLLM serving with tensor parallel 2 is slower than a single gpu for my 7B model")
    assert rep.hypotheses[0].branch == "inference"
    assert "gpu_util.dataparallel_single_process" not in [h.cause_id for h in rep.hypotheses]


@pytest.mark.parametrize(("text", "random"), [
    # the SOP's T9: an OOM at a different step in every run is first an input longer than the
    # rest (shuffled data moves it), then fragmentation
    ("CUDA out of memory at random steps, never at the same step", True),
    ("训练中随机 step 显存溢出", True),
    # near-misses: the same step every run, and a random crop in the data pipeline
    ("CUDA out of memory at step 1200 in every run", False),
    ("with RandomResizedCrop the training runs out of memory at step 3", False),
])
def test_an_oom_at_random_steps_answers_the_repeat_question(text: str, random: bool) -> None:
    assert ("oom.repeat=different" in answers_said(text, KN)) is random
    if random:
        top2 = {h.cause_id for h in kb.diagnose(symptom=text).hypotheses[:2]}
        assert "oom.long_input_at_step" in top2, top2


@pytest.mark.parametrize(("text", "evaluation"), [
    # "where did it fail?" asks which phase of a training run ran out of memory
    ("CUDA out of memory during evaluation after the first training epoch", True),
    ("the fine-tuning job OOMs in the validation loop", True),
    ("训练时验证阶段显存溢出", True),
    # near-misses: a job that only evaluates or predicts has no other phase to fail in; its
    # evaluation is not the answer (the model or the input may simply be too large)
    ("running lm-eval on mmlu gives CUDA out of memory during evaluation", False),
    ("OOM when I run prediction on a 2300-residue protein", False),
    ("用模型预测时显存溢出", False),
])
def test_evaluation_answers_where_only_in_a_training_run(text: str, evaluation: bool) -> None:
    assert ("oom.where=eval" in answers_said(text, KN)) is evaluation


def test_an_answer_presuming_a_job_is_heard_only_with_it(edited_graphs) -> None:
    """``only_with``: the answer holds only where the text also names one of its words."""
    root = edited_graphs("branches/oom.yaml", "    words: {en: [backward, loss.backward,",
                         "    only_with: {en: [qqjob], zh: []}\n    words: {en: [backward, loss.backward,")
    kn = load(root, use_cache=False)
    assert "oom.where=backward" in answers_said("out of memory in loss.backward", KN)
    assert "oom.where=backward" not in answers_said("out of memory in loss.backward", kn)
    assert "oom.where=backward" in answers_said("out of memory in loss.backward of the qqjob", kn)


@pytest.mark.parametrize(("text", "disk"), [
    # "iostat: is the data disk busy?" is answered by words of the disk
    ("training is slow, the images are read from an NFS share", True),
    ("GPU util is low and the dataset sits on an HDD", True),
    # near-misses: the pipeline named, not its disk (its time may be the workers' decoding)
    ("GPU utilization is low, data loading seems to be the bottleneck", False),
    ("数据加载很慢，GPU 利用率低", False),
])
def test_only_the_disk_answers_the_disk_question(text: str, disk: bool) -> None:
    assert ("gpu_util.io=busy" in answers_said(text, KN)) is disk


@pytest.mark.parametrize("text", [
    "my two-node DDP job just hangs, both GPUs at 0%",
    "torchrun on 2 machines is stuck, nothing is printed",
    "多机训练一直卡住",
])
def test_a_hang_said_with_no_moment_may_be_the_start_too(text: str) -> None:
    # ranks that never reach each other hang as surely as ranks out of step: a hang with no
    # moment said answers both, and the connection causes rank beside the stacks' ones
    said = answers_said(text, KN)
    assert {"nccl.hang=at_init", "nccl.hang=hung"} <= set(said)
    rep = kb.diagnose(symptom=text)
    assert rep.findings == []
    below = _below(rep, "nccl.hang=at_init")
    assert below == {"nccl.connect_refused", "nccl.socket_ifname_wrong"}


@pytest.mark.parametrize(("text", "at_init"), [
    # the at-init answer's own test (distributed.connect_failed), said in words
    ("NCCL WARN Connect to 10.0.0.2<43215> failed : Connection refused, then the job times out", True),
    ("the workers on node 2 failed to connect to the master and the watchdog fires", True),
    ("rank 3 could not connect to the rendezvous at 10.1.1.1:29500, then a timeout", True),
    ("多机训练超时，日志里报连接被拒绝", True),
    # near-misses: a collective that times out, a refusal of no connection
    ("the allreduce times out after 30 minutes at step 12000", False),
    ("the watchdog fires at step 500; the job was refused by the scheduler once", False),
])
def test_a_connection_said_to_fail_is_the_start(text: str, at_init: bool) -> None:
    assert ("nccl.hang=at_init" in answers_said(text, KN)) is at_init
    if at_init:
        # the wrong interface ranks beside the closed port: both fail the connection
        rep = kb.diagnose(symptom=text)
        below = _below(rep, "nccl.hang=at_init")
        assert below == {"nccl.connect_refused", "nccl.socket_ifname_wrong"}
        assert rep.findings == []


def test_an_oom_at_start_up_speaks_for_whoever_holds_the_card() -> None:
    # right after start-up PyTorch holding little of a full card points at another process,
    # the other ranks on GPU 0, or (loading first) the host's memory: the SOP's check tells
    # them from a model too large
    rep = kb.diagnose(symptom="CUDA out of memory when loading the model")
    below = _below(rep, "oom.where=start")
    assert {"oom.startup_too_large", "oom.other_process_on_gpu", "oom.ranks_share_gpu0",
            "oom.host_ram_oom"} <= below
    assert rep.findings == []
    # an OOM said to come in the loop does not
    rep = kb.diagnose(symptom="CUDA out of memory after a few epochs")
    assert not any("oom.where=start" in (h.said or []) for h in rep.hypotheses)


@pytest.mark.parametrize(("text", "key", "said"), [
    # memory said to grow answers the growth question, not where an OOM struck
    ("GPU memory keeps increasing every iteration until CUDA out of memory", "oom.growth=grows", True),
    ("GPU memory keeps increasing every iteration until CUDA out of memory", "oom.where=loop", False),
    ("there is a memory leak in my training loop, then OOM", "oom.where=loop", False),
    ("CUDA out of memory after a few epochs of training", "oom.where=loop", True),
    # the bandwidth said to be low, not the tool or its metric named
    ("multi-node NCCL all_reduce_perf gives busbw 180 GB/s", "nccl.bandwidth=low", False),
    ("nccl-tests shows low bandwidth between the two nodes", "nccl.bandwidth=low", True),
    # fp32 beside a reduced precision is the comparison, alone it is the run's dtype
    ("loss becomes NaN with fp16 mixed precision, fine in fp32", "numerics.precision=full", False),
    ("loss becomes NaN although I train in fp32", "numerics.precision=full", True),
    # "warmup" names the schedule, not when the spike came
    ("loss spikes to NaN; we use a linear warmup of 2000 steps", "numerics.spike=early", False),
    ("the loss spikes at the beginning of training", "numerics.spike=early", True),
    # slower than expected says nothing of a busy GPU
    ("training is slower than expected, GPU utilization low", "gpu_util.busy=slow", False),
    ("GPU at 100% utilization but slow", "gpu_util.busy=slow", True),
])
def test_only_words_that_answer_a_question_answer_it(text: str, key: str, said: bool) -> None:
    assert (key in answers_said(text, KN)) is said


def test_a_slow_collective_asks_for_the_transport_first() -> None:
    # "it runs but slowly" leads to the transport question (IB or sockets, GPUDirect, P2P)
    # as well as to the collectives' trace: the transport causes rank among its answers,
    # and the words alone confirm none of them
    rep = kb.diagnose(symptom="two-node NCCL training runs 8x slower than on one node")
    below = _below(rep, "nccl.hang=no_timeout")
    assert {"nccl.ib_fallback_tcp", "nccl.ethernet_sockets_expected", "nccl.gdr_disabled",
            "nccl.cross_node_bandwidth"} <= below
    assert "nccl.rank_desync_timeout" not in below
    assert rep.findings == []
    assert kb.diagnose({"symptom": "nccl"}).findings == []
