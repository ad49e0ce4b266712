"""The problem in the user's words: branches, and facts stated in passing (issue 5.3)."""

from __future__ import annotations

import pytest

import kb
from kb.symptom_text import _norm_text, apply_text, classify, extract, mentions, merge_under, name_causes

from kb.loaded import load_knowledge

KN_ = load_knowledge()
NAN_EN = "loss goes NaN after ~300 steps in fp16"
OOM_ZH = "训练到某个 step 突然 OOM"


def _need(kn, branch: str) -> None:
    if branch not in kn.branches:
        pytest.skip(f"{branch} knowledge not written yet")


def test_nan_sentence_mentions() -> None:
    m = mentions(NAN_EN)
    assert m.steps == [300] and m.dtypes == ["fp16"]
    assert "~300 steps" in m.words and "fp16" in m.words


def test_nan_sentence_facts_given_the_branch() -> None:
    assert extract(NAN_EN, branch="numerics") == {
        "numerics": {"dtype": "fp16", "first_nonfinite_step": 300}}
    assert extract("OOM at step 1200", branch="oom") == {"oom": {"at_step": 1200}}
    assert extract(NAN_EN, branch="gpu_util") == {"numerics": {"dtype": "fp16"}}


def test_nan_sentence_classified(kn) -> None:
    _need(kn, "numerics")
    assert next(iter(classify(NAN_EN, kn))) == "numerics"
    assert extract(NAN_EN, kn) == {"numerics": {"dtype": "fp16", "first_nonfinite_step": 300}}


def test_oom_sentence(kn) -> None:
    assert mentions(OOM_ZH).steps == []  # "某个 step": no number
    assert extract(OOM_ZH, branch="oom") == {}
    _need(kn, "oom")
    assert next(iter(classify(OOM_ZH, kn))) == "oom"


@pytest.mark.parametrize("text,steps", [
    ("step 1200", [1200]), ("at step=1,200", [1200]), ("after 5k iterations", [5000]),
    ("第 300 步", [300]), ("第300个step", [300]), ("300 步后 loss 爆了", [300]),
    ("global_step: 42", [42]), ("step time 300 ms", []), ("每步 200 ms", []), ("8 GPUs", []),
    # a warmup's length is no step the run reached trouble at
    ("我先运行了1600步的warmup step", []), ("with 500 warmup steps", []), ("warmup_steps=2000", []),
    ("预热 500 步", []), ("after 500 warm-up steps the loss is NaN at step 1800", [1800]),
])
def test_step_numbers(text: str, steps: list[int]) -> None:
    assert mentions(text).steps == steps


@pytest.mark.parametrize("text,phase", [
    # said to come after the run got going: the loop
    ("consistent out of memory issue after several hundred (or thousand) iteration", "loop"),
    ("CUDA OOM during training, after some steps", "loop"),
    ("it runs out of memory after a few epochs", "loop"),
    ("OOM in the middle of training", "loop"),
    ("训着训着会突然OOM", "loop"),
    ("跑了一段时间后显存不够了", "loop"),
    # near misses: a step number says more (oom.at_step); validation after each epoch, a batch
    # size increased, an OOM at once say nothing of the phase; memory that climbs every step is
    # the leak's own symptom (oom.growth), not a place in the run
    ("GPU memory keeps increasing until CUDA out of memory", None),
    ("OOM after 300 steps", None),
    ("the validate() function, which happens after each epoch, runs out of memory", None),
    ("when I increase the batch size to 64 it OOMs", None),
    ("CUDA out of memory right at the first batch", None),
])
def test_oom_later_in_the_run(text: str, phase: str | None) -> None:
    assert extract(text, branch="oom").get("oom", {}).get("phase") == phase


def test_a_nan_later_in_the_run_is_no_oom_phase() -> None:
    # the same words about a NaN set no OOM fact
    assert "oom" not in extract("the loss becomes NaN after a few epochs", branch="numerics")


def test_later_in_the_run_but_in_validation_keeps_the_evaluation_cause(kn) -> None:
    # later in time but in the evaluation (oom.where=eval, said): the loop is not read, so the
    # evaluation's own cause stays open and leads
    rep = kb.diagnose(symptom="after a few epochs it runs out of memory during validation")
    assert rep.hypotheses[0].cause_id == "oom.eval_no_grad"
    # without validation named the loop is read, and it rules the evaluation's cause out
    rep = kb.diagnose(symptom="after a few epochs it runs out of memory")
    assert "oom.eval_no_grad" in {r.cause_id for r in rep.ruled_out}


def test_an_oom_said_to_come_later_ranks_start_up_causes_below(kn) -> None:
    # the same OOM with and without "after several hundred iterations": the causes of an OOM
    # at start-up (model too large, another process, ranks on GPU 0) fall below those of a run
    # that got going
    early = [h.cause_id for h in kb.diagnose(symptom="CUDA out of memory").hypotheses]
    later = [h.cause_id for h in kb.diagnose(
        symptom="CUDA out of memory after several hundred iterations").hypotheses]
    startup = {"oom.startup_too_large", "oom.other_process_on_gpu", "oom.ranks_share_gpu0"}
    assert startup & set(early[:3])
    assert not startup & set(later[:3])
    assert "oom.long_input_at_step" in later[:3]


@pytest.mark.parametrize("text,resume", [
    # an OOM said to come as the run resumes from a checkpoint (transformers#24064's shape,
    # our words): what the resume check establishes
    ("When loading from checkpoint, I run into CUDA OOM loading optimizer states", True),
    ("CUDA out of memory on resume, with the same params that trained fine", True),
    ("OOM after resuming training from a checkpoint", True),
    ("断点续训的时候显存不够了", True),
    # the resume flag passed, or an attempt to resume
    ("when I want to train the model with `--resume_ckpt`, it shows CUDA out of memory", True),
    ("I encounter an OOM error when attempting to resume training ControlNet from a checkpoint",
     True),
    ("I tried to resume training with the gpt-2 command. So it causes CUDA out of memory", True),
    # near-misses: a resume only planned, a flag named with no moment it failed at
    ("CUDA out of memory after 3 epochs; I want to resume later", None),
    ("CUDA out of memory. My script has a --resume option", None),
    # near-misses: a checkpoint saved, a model loaded, "restart" of a machine say nothing of it
    ("CUDA out of memory when saving a checkpoint", None),
    ("CUDA out of memory when loading the model", None),
    ("after restarting the machine it still runs out of memory", None),
    ("after restarting the job from scratch it runs out of memory at the first step", None),
])
def test_an_oom_on_resume_is_read(text: str, resume: bool | None) -> None:
    assert extract(text, branch="oom").get("oom", {}).get("on_resume") is resume
    # read for an OOM only: a NaN on resume is another question (numerics.resume_state_mismatch)
    assert "on_resume" not in extract(text, branch="numerics").get("oom", {})


def test_an_oom_on_resume_leads_with_the_checkpoints_copy(kn) -> None:
    # a configuration too large would not have fitted from scratch: it is ruled out, and the
    # checkpoint's copy on the GPU leads
    rep = kb.diagnose(symptom="CUDA out of memory when loading from checkpoint; from scratch it trains fine")
    assert rep.hypotheses[0].cause_id == "oom.resume_state_on_gpu"
    assert "oom.startup_too_large" in {r.cause_id for r in rep.ruled_out}
    # near-miss: an OOM loading the model is still a start-up question
    rep = kb.diagnose(symptom="CUDA out of memory when loading the model")
    assert "oom.startup_too_large" not in {r.cause_id for r in rep.ruled_out}


@pytest.mark.parametrize("text,dtype", [
    ("bf16 training", "bf16"), ("torch.bfloat16", "bf16"), ("用半精度训练", "fp16"),
    ("FP8 e4m3", "fp8"), ("fp32 baseline", "fp32"), ("fp16 vs bf16", None), ("fp160", None),
    # an FP8 checkpoint's name says how its weights are stored, not the dtype the job computes in
    ("GLM-4-32B-0414-FP8 output is nan", None), ("Llama-3.1-8B-Instruct-FP8-Dynamic in fp16", "fp16"),
    # near-misses: FP8 said as the job's own dtype, flags and settings included
    ("training with FP8 on H100", "fp8"), ("--kv-cache-dtype fp8", "fp8"), ("--quantization=fp8", "fp8"),
])
def test_dtypes(text: str, dtype: str | None) -> None:
    got = extract(text).get("numerics", {}).get("dtype")
    assert got == dtype


@pytest.mark.parametrize("text,engine", [
    ("vLLM TTFT is slow", "vllm"), ("SGLang server", "sglang"), ("TensorRT-LLM engine", "tensorrt-llm"),
    ("trt-llm build", "tensorrt-llm"), ("vllm vs sglang", None),
    # an engine named as the yardstick is not the job's ("vs vLLM", "slower than vLLM", "比 vllm")
    ("our server collapses at high concurrency vs vLLM", None),
    ("SGLang decodes 2x slower than vLLM", "sglang"), ("lmdeploy 比 vllm 慢很多", "lmdeploy"),
    ("compared to TGI, the vllm server is slow", "vllm"),
    # the local runners, as people name them
    ("ollama answers one request at a time", "ollama"), ("llama-server reprocesses the prompt", "llama.cpp"),
    ("llama.cpp with -ngl 99", "llama.cpp"), ("ollama or vllm for two users?", None),
    # near-miss: the model family is no runner
    ("llama 3 8b on one 4090 is slow", None),
    # an engine's own flags name it: SGLang's server args, vLLM's engine args
    ("with --mem-fraction-static 0.8 the server still OOMs", "sglang"),
    ("raising cuda-graph-max-bs to 160 made decode fast again", "sglang"),
    ("set gpu_memory_utilization=0.95 and max_num_seqs=256", "vllm"),
    # near-misses: the setting said in plain words names no engine; both engines' flags, none
    ("gpu memory utilization stays at 90 %", None),
    ("--max-num-seqs in one server, --max-running-requests in the other", None),
])
def test_engines(text: str, engine: str | None) -> None:
    assert extract(text).get("inference", {}).get("engine") == engine


def test_training_frameworks_are_recognised_but_not_facts() -> None:
    m = mentions("DeepSpeed ZeRO-3 with Megatron")
    assert m.frameworks == ["deepspeed", "megatron"]
    assert extract("DeepSpeed ZeRO-3 with Megatron") == {}


def test_merge_under_explicit_wins() -> None:
    merged, warnings = merge_under({"numerics": {"dtype": "bf16"}},
                                   {"numerics": {"dtype": "fp16", "first_nonfinite_step": 300}})
    assert merged == {"numerics": {"dtype": "bf16", "first_nonfinite_step": 300}}
    assert len(warnings) == 1 and "numerics.dtype" in warnings[0] and "bf16" in warnings[0]


def test_diagnose_uses_text_facts_under_explicit(kn) -> None:
    rep = kb.diagnose({"symptom_text": "vLLM TTFT is slow"}, knowledge=kn)
    assert any(w.startswith("symptom text:") and "'vllm'" in w.lower() for w in rep.warnings)
    rep = kb.diagnose({"symptom_text": "vLLM TTFT is slow", "inference": {"engine": "sglang"}},
                      knowledge=kn)
    assert any("inference.engine" in w and "sglang" in w for w in rep.warnings)


def test_apply_text_keeps_explicit_facts(kn) -> None:
    f = kb.Facts.model_validate({"symptom": "numerics", "symptom_text": NAN_EN,
                                 "numerics": {"dtype": "bf16"}})
    out, _branches, warnings = apply_text(f, kn)
    assert out.numerics.dtype == "bf16"
    assert out.numerics.first_nonfinite_step == 300
    assert any("using the facts" in w for w in warnings)


def test_classify_still_works_for_api(kn) -> None:
    hits = classify("GPU utilization is low, dataloader slow", kn)
    assert next(iter(hits)) == "gpu_util"
    assert all(isinstance(w, str) for ws in hits.values() for w in ws)


def test_commands_and_settings_in_the_words_are_read() -> None:
    from kb.symptom_text import extract

    got = extract("I serve it with vllm serve my-model --enforce-eager --tensor-parallel-size 2 "
                  "\nexport NCCL_P2P_DISABLE=1 did not help either")
    assert got["inference"]["enforce_eager"] is True
    assert got["inference"]["tensor_parallel_size"] == 2
    assert got["distributed"]["p2p_disabled"] is True
    assert "env" not in got  # the setting's meaning is kept, not the raw variable
    assert extract("the server is slow since Monday") == {}


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_PIECES = list("abcdefghijklmnopqrstuvwxyz0123456789 -_=.:/,\n'\"") + [
    "nan", " rtx 4090", " --tensor-parallel-size ", "vllm serve m ", "export NCCL_", "显存", "卡住",
    " step ", "fp16", "num_workers=", "PYTORCH_CUDA_ALLOC_CONF=", " 2x ", "tesla t4"]
_WORDY = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), _WORDY))
def test_any_words_give_valid_facts_or_nothing(text: str) -> None:
    # whatever the user types, the words give facts the schema accepts (never an exception)
    from kb.facts import Facts
    from kb.loaded import load_knowledge
    from kb.symptom_text import apply_text

    facts, branches, notes = apply_text(Facts(symptom_text=text or " "), load_knowledge())
    assert isinstance(branches, dict) and isinstance(notes, list)
    assert facts.symptom_text == (text or " ")


def test_a_longer_word_of_another_branch_wins_at_the_same_place() -> None:
    from kb.loaded import load_knowledge
    from kb.symptom_text import name_causes

    kn = load_knowledge()
    text = "with accumulate_grad_batches=4 the logged loss is 4x smaller"
    named = name_causes(text, kn)
    assert "numerics.grad_accum_scaling" in named
    # "accumulate" sits inside "accumulate_grad_batches": it names no OOM cause here
    assert "oom.tensors_not_released" not in named
    # on its own it still does
    assert "oom.tensors_not_released" in name_causes("losses accumulate until OOM", kn)


def test_three_letter_words_take_a_plural() -> None:
    from kb.loaded import load_knowledge
    from kb.symptom_text import classify

    kn = load_knowledge()
    assert "numerics" in classify("scaled_dot_product_attention returns NaNs", kn)
    assert "numerics" not in classify("the nanny script", kn)


@pytest.mark.parametrize("text,branch,named", [
    # NCCL's result names (src/nccl.h.in: ncclSystemError, ncclInternalError) as users paste them
    ("ncclSystemError: System call (socket, malloc, munmap, etc) failed", "nccl", True),
    ("RuntimeError: ncclInternalError: Internal check failed.", "nccl", True),
    # the whole name still matches as the knowledge writes it
    ("40 ms in cudaStreamSynchronize every step", "gpu_util", True),
    # a CamelCase class name is read word by word too (torchao's config class names its dtype)
    ("training with Float8DynamicActivationFloat8WeightConfig(granularity=PerRow())", "fp8", True),
    ("training with Float8Config", "fp8", True),
    # near-miss: a class name with no fp8 in it
    ("training with Float16Config", "fp8", False),
    # near-misses: no lower-case prefix joined to a capitalised word
    ("vLLM prints NaN", "nccl", False),
    ("the ncclsystem is fine", "nccl", False),
])
def test_joined_api_names_are_read_apart(text: str, branch: str, named: bool) -> None:
    from kb.loaded import load_knowledge

    kn = load_knowledge()
    hits = classify(text, kn)
    if branch == "gpu_util":
        from kb.symptom_text import name_causes

        assert ("gpu_util.host_sync_in_loop" in name_causes(text, kn)) is named
        return
    if branch == "fp8":
        from kb.symptom_text import name_causes

        assert ("numerics.fp8_scaling" in name_causes(text, kn)) is named
        return
    assert (branch in hits) is named


@pytest.mark.parametrize("text,branch", [
    ("ollama answers the chats one by one", "inference"),
    ("llama.cpp server reprocesses the whole prompt", "inference"),
    ("the average decoding speed decreases as clients grow", "inference"),
    ("GPU utility is only around 30% during sampling", "gpu_util"),
    ("the optimizer step is terribly slow", "gpu_util"),
    ("the epoch is taking too long", "gpu_util"),
    ("num_workers=0 slowed down the training by a factor of 8", "gpu_util"),
    ("使用 dpo.sh 训练时 loss异常，会不会无穷大", "numerics"),
    ("the loss goes to zero after the first epoch", "numerics"),
    ("the utilization rate of the GPU is surprisingly low", "gpu_util"),
    ("训练时 gpu 占用率经常会降为 0", "gpu_util"),
    ("GTX 2080 上 GPU load 最高 31%", "gpu_util"),
    ("GPU内存用了4G但是使用率却是0，难怪训练这么慢", "gpu_util"),
    ("with speed perturbation it takes 30 days; why does it take so long?", "gpu_util"),
    ("the video job was killed after 30 steps on an A100 80GB", "oom"),
    # the card's memory said to overflow with words between is an OOM, its size the setup's
    ("换成5万条数据之后，现在32g显存直接溢出了", "oom"),
    ("fp16 训练时 loss 溢出", "numerics"),
    # a job that freezes with nothing else named: a hang
    ("Jupyter terminal freezes, and connection to AWS node closes", "nccl"),
    ("it freezes every num_workers iterations", "gpu_util"),
    # slowness in everyday Chinese, and the training said to be slowed down with a possessive
    ("我在训练过程中，发现迭代的速度比较慢，大约30多秒迭代一步", "gpu_util"),
    ("logging every step is severely slowing down my overall training", "gpu_util"),
    # an epoch's duration said is a complaint about speed
    ("I get around 16 hours for one epoch on COCO", "gpu_util"),
    ("running resnet50 on an image set is taking 4 hours an epoch", "gpu_util"),
    ("each epoch takes ~1h on 4x4090", "gpu_util"),
    # a black picture or video out of a generator, in Chinese as in English
    ("修改精度为 fp16 推理，生成视频黑屏", "numerics"),
    ("SDXL 用 fp16 推理出图全是黑图", "numerics"),
])
def test_everyday_words_name_their_branch(text: str, branch: str) -> None:
    from kb.loaded import load_knowledge

    assert next(iter(classify(text, load_knowledge()))) == branch


@pytest.mark.parametrize(("text", "branches"), [
    # a setting's word (ddp, rank, bf16) beside a symptom's names only the symptom's branch
    ("CUDA out of memory on rank 0 of my DDP job", ["oom"]),
    ("the bf16 model gives garbage output after fine-tuning", ["numerics"]),
    ("vllm serving of a bf16 model is slow", ["inference"]),
    ("CUDA OOM: 7 extra processes on gpu0 in my distributed job", ["oom"]),
    # alone, the setting's word still names its branch
    ("my ddp training on 8 gpus across ranks", ["nccl"]),
    ("fp16 mixed precision question", ["numerics"]),
    # near-miss: a symptom word of the same branch keeps it named beside others
    ("ddp job hangs in allreduce after the OOM on rank 3", ["nccl", "oom"]),
    # weak symptom words: a low frame rate, poor multi-GPU scaling
    ("on my laptop the fps is only 2 fps", ["gpu_util"]),
    ("the 4xA100 run takes 24 hours, which doesn't really scale with the 8-GPU report", ["nccl"]),
    ("the fps drops to 2 and then CUDA out of memory", ["oom"]),
    # the card's memory said as a size (显存, "VRAM") beside a low utilisation: the setup
    ("batch size改为32了，显存从3～4G到了8～9G，GPU利用率基本上都是小于10%", ["gpu_util"]),
    # alone it is still the memory question; said to be exceeded it is an OOM beside anything
    ("显存从3～4G到了8～9G，正常吗", ["oom"]),
    ("部署qwen2VL-7b-awq模型，使用VLLM镜像，总是会报超过显存的问题", ["oom", "inference"]),
    ("训练速度很慢，而且显存不够", ["oom", "gpu_util"]),
])
def test_setting_words_name_a_branch_only_when_nothing_else_does(
        kn, text: str, branches: list[str]) -> None:
    assert sorted(classify(text, kn)) == sorted(branches)


@pytest.mark.parametrize(("text", "said"), [
    # the settings compared that work are not the problem
    ("When BF16 and FP32, everything is OK, but it occurs NaN when FP16.",
     ["numerics.precision=fp16"]),
    ("bf16 works fine but fp16 gives NaN", ["numerics.precision=fp16"]),
    # near-miss: nothing said to work
    ("with bf16 and fp16 the loss gives NaN", ["numerics.precision=bf16", "numerics.precision=fp16"]),
])
def test_settings_said_to_work_answer_nothing(kn, text: str, said: list[str]) -> None:
    from kb.symptom_text import answers_said

    assert sorted(k for k in answers_said(text, kn) if k.startswith("numerics.precision")) == said


@pytest.mark.parametrize(("text", "branches"), [
    # a word said not to be the problem names nothing
    ("Everything works well and GPU memory looks normal, but GPU util is always 0", ["gpu_util"]),
    ("no OOM but the loss goes nan", ["numerics"]),
    ("训练没有 OOM，但是 loss 变 nan", ["numerics"]),
    ("显存正常，但是 gpu 利用率很低", ["gpu_util"]),
    # a card's memory said to be full while the job runs: frameworks reserve it up front
    ("the GPU memory is almost full but the GPU utilization stays around 10%", ["gpu_util"]),
    ("Memory-Usage is full but Volatile GPU-Util shows 0%", ["gpu_util"]),
    ("GPU显存一直占满，但利用率时常降为0", ["gpu_util"]),
    # near-misses: a full card named beside its failure, and nvidia-smi's "Volatile" header
    # no word of evaluation
    ("GPU memory is full and then CUDA out of memory", ["oom"]),
    ("the Volatile GPU-Util is 2% or 1% while the GPU memory is used", ["gpu_util", "oom"]),
    # near-misses: "not enough memory" is the problem; a later plain mention still counts
    ("not enough memory, CUDA out of memory", ["oom"]),
    ("no OOM at first, then CUDA out of memory at step 300", ["oom"]),
    # near-miss: epochs counted, not timed, name no slowness
    ("trained for 3 epochs, then the loss goes nan", ["numerics"]),
])
def test_negated_words_name_nothing(kn, text: str, branches: list[str]) -> None:
    assert sorted(classify(text, kn)) == branches


@pytest.mark.parametrize(("text", "heard"), [
    # a remedy tried that did not help says the thing changed is not the cause
    ("loss goes nan after 200 steps; lowering the lr to 1e-5 didn't help", False),
    ("训练不到一个epoch loss变为nan，减小学习率也不行", False),
    ("even with a lower lr the loss goes nan", False),
    # near-misses: the learning rate named as the suspect, and a sentence that ends before
    # the remedy that failed
    ("the lr is too high and the loss goes to nan", True),
    ("loss goes nan with lr 1e-3. I tried fp32, it did not help", True),
])
def test_a_remedy_that_did_not_help_answers_nothing(kn, text: str, heard: bool) -> None:
    from kb.symptom_text import answers_said

    assert ("numerics.grad=exploding" in answers_said(text, kn)) is heard


@pytest.mark.parametrize(("text", "branch", "cause"), [
    # a remedy tried and failed names the problem it was tried for, though not its cause
    ("我修改了max_split_size_mb也不行，加了--batch-size参数也不行，报同样错",
     "oom", "oom.allocator_reserved_unallocated"),
    ("setting max_split_size_mb to 128 did not help", "oom", "oom.allocator_reserved_unallocated"),
    # near-misses: a word said not to be the problem names no branch
    ("the GPU memory looks normal, it just stops", None, None),
    ("there is no OOM, it just stops", None, None),
])
def test_a_failed_remedy_still_names_its_branch(kn, text: str, branch: str | None,
                                                cause: str | None) -> None:
    from kb.facts import Facts

    facts, branches, _ = apply_text(Facts(symptom_text=text), kn)
    assert next(iter(branches), None) == branch
    # the remedy is no evidence of its own cause
    assert cause not in (facts.mentions or [])


@pytest.mark.parametrize(("text", "branches"), [
    # a stated period reads as the vocabulary's "every n steps" (periodic stalls)
    ("I found that there is waiting time every 1000 steps during training", ["gpu_util"]),
    # the reporter stuck, not the job
    ("I got stuck for a while because I kept getting cuda OOM errors", ["oom"]),
    ("did anyone got stuck in the issue that data loading for ImageNet is slow", ["gpu_util"]),
    # near-misses: the job stuck is a hang
    ("training is stuck at step 1000 on all ranks", ["nccl"]),
])
def test_periods_and_people_stuck(kn, text: str, branches: list[str]) -> None:
    rep = kb.diagnose({"symptom_text": text}, knowledge=kn)
    assert rep.branches[:1] == branches
    if "every 1000 steps" in text:
        assert rep.hypotheses[0].cause_id == "gpu_util.periodic_stalls"


@pytest.mark.parametrize(("text", "branches"), [
    # JAX / TensorFlow tracing compilers: their retraces and traced-value errors are this branch
    ("my function runs slowly because filter_jit keeps missing the cache", ["compile"]),
    ("using `jit` decorators in JAX runs slowly", ["compile"]),
    ("the tf.function is retraced every time the batch size changes", ["compile"]),
    ("it throws an error when jit-compiled", ["compile"]),
    # PyTorch/XLA compiles each step's lazy graph: a slow torch_xla loop is this branch
    ("training EfficientNet with PyTorch XLA takes extremely slow", ["compile"]),
    ("my model runs so slow with torch_xla", ["compile"]),
    # near-miss: a C++ source location in a log line names nothing (TensorFlow prints this
    # one-time warning from tensorflow/compiler/jit/ in every log)
    ("W tensorflow/compiler/jit/mark_for_compilation_pass.cc:1412] (One-time warning): Not using "
     "XLA:CPU for cluster. NCCL hangs", ["nccl"]),
])
def test_tracing_compilers_and_source_locations(kn, text: str, branches: list[str]) -> None:
    assert sorted(classify(text, kn)) == branches


def test_a_python_traceback_path_still_counts() -> None:
    from kb.symptom_text import _norm_text

    low = _norm_text('File "/usr/lib/python3/site-packages/torch/_dynamo/eval_frame.py", line 3')
    assert "dynamo" in low
    assert "jit" not in _norm_text("E0101 xla/service/gpu/jit/foo.cc:12] boom")


@pytest.mark.parametrize(("text", "cause"), [
    ("the loss is nan during SFT, pretraining was fine", "numerics.zero_token_loss"),
    ("Losses synchronization is only made when printed and the loop time halves", "gpu_util.host_sync_in_loop"),
    ("the JIT-compiled function is recompiled whenever a static argument is a new list", "compile.recompile_other_guard"),
])
def test_everyday_words_rank_their_cause_first(kn, text: str, cause: str) -> None:
    rep = kb.diagnose({"symptom_text": text}, knowledge=kn)
    assert rep.hypotheses[0].cause_id == cause
    assert not rep.findings  # words rank; they never confirm


def test_generic_slowness_beside_a_serving_launch_is_about_serving(kn) -> None:
    # the branch's `context`: a serving engine's launch command places "very slow" in inference
    cmd = "python -m sglang.launch_server --model-path Qwen/Qwen3-4B --disable-cuda-graph-padding\n"
    rep = kb.diagnose({"symptom_text": "it got very slow"}, inputs=[cmd], knowledge=kn)
    assert rep.branches[:1] == ["inference"]
    assert any("read as inference" in w for w in rep.warnings)
    # near-misses: without the launch command, or with a word that names a branch itself
    assert kb.diagnose({"symptom_text": "it is very slow"}, knowledge=kn).branches[:1] == ["gpu_util"]
    rep = kb.diagnose({"symptom_text": "very slow, then CUDA out of memory"}, inputs=[cmd], knowledge=kn)
    assert rep.branches[:1] == ["oom"]


@pytest.mark.parametrize(("text", "first"), [
    # memory said to be gone as the framework starts: its up-front pool, as much as a model too
    # large (the pool sits under "right at start" too)
    ("When I import jax, GPU memory immediately fills up: 60GB is already taken up on a H100 "
     "before anything runs", "oom.framework_preallocation"),
    ("vllm takes up the GPU memory as soon as it starts loading, much more than the model's "
     "weights", "oom.framework_preallocation"),
    # near-misses: a model too large to load, or an OOM at the first step, with no pool named
    ("CUDA out of memory when loading the model: a 70B model in fp16 on one 24GB card",
     "oom.startup_too_large"),
    ("CUDA out of memory at the first step of training", "oom.startup_too_large"),
])
def test_memory_gone_at_start_names_a_pool_when_a_framework_reserves_one(
        kn, text: str, first: str) -> None:
    rep = kb.diagnose({"symptom_text": text}, knowledge=kn)
    assert rep.hypotheses[0].cause_id == first
    assert not rep.findings


@pytest.mark.parametrize(("text", "typo"), [
    # "out of memory" typed in a hurry reads as written right
    ("CUDA outof Memory after 3 epochs", True),
    ("The first epoch is ok, but the test phase will out o memory", True),
    ("sliding window inference runns ot of memory if the roi is small", True),
    # near-misses: "a lot of memory", "out of my memory budget", "not of memory"
    ("training takes a lot of memory on one card", False),
    ("I ran out of my memory budget", False),
    ("the problem is not of memory but of speed", False),
])
def test_a_mistyped_out_of_memory_is_still_one(kn, text: str, typo: bool) -> None:
    from kb.symptom_text import _norm_text

    assert ("out of memory" in _norm_text(text).lower()) is typo
    if typo:
        assert "oom" in classify(text, kn)


def test_memory_on_gpu0_is_an_oom_question(kn) -> None:
    rep = kb.diagnose({"symptom_text": "The processes on GPUs 1, 2 and 3 are each taking up memory on GPU0"},
                      knowledge=kn)
    assert rep.branches[:1] == ["oom"]
    assert rep.hypotheses[0].cause_id == "oom.ranks_share_gpu0"


@pytest.mark.parametrize("text", [
    "启动qwen-1.5-7b-chat默认就把显存给吃满了，我还要部署其他模型服务，怎么设置？",
    "after starting vllm serve the GPU memory is almost full, how do I leave room for a second model",
    "I load the model with JAX and it consumes around 18GB of GPU memory, which seems quite high. How can I reduce it?",
])
def test_a_card_said_full_while_it_runs_reads_as_a_pool(kn, text: str) -> None:
    # a card full while the job runs is what a pool taken up front looks like: the pool leads
    # the memory causes left tied
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert rep.hypotheses[0].cause_id == "oom.framework_preallocation"


@pytest.mark.parametrize(("text", "full"), [
    ("the GPU memory is almost full", True),
    ("显存一直占满", True),
    ("GPU memory usage is only 30%", None),
    # the card's memory said to be high while it runs, no failure named: a pool holds it so
    ("However, the GPU memory usage is very high (  > 84GB )", True),
    ("it consumes around 18GB of GPU memory, which seems quite high", True),
    ("nvidia-smi shows that it uses about 20GB of memory storage, which seems high to me", True),
    # near-misses: the host's memory, a rank's share, a file's size, the card's utilisation
    ("it uses 30GB of RAM memory, which seems high", None),
    ("memory usage is very high", None),
    ("the CUDA memory consumption in rank:0 is very large", None),
    ("the checkpoint takes 20GB, which seems high", None),
    ("GPU utilization is very high", None),
])
def test_a_card_said_full_is_a_fact_of_its_own(text: str, full: bool | None) -> None:
    assert extract(text).get("oom", {}).get("card_said_full") is full


def test_a_full_card_is_no_pool_when_the_pool_is_turned_off(kn) -> None:
    # near-miss: the same words, with the framework told not to preallocate, rule the pool out
    rep = kb.diagnose(inputs=["export XLA_PYTHON_CLIENT_PREALLOCATE=false\npython train.py\n"],
                      symptom="the GPU memory is almost full and then CUDA out of memory", knowledge=kn)
    assert "oom.framework_preallocation" not in [h.cause_id for h in rep.hypotheses]
    assert "oom.framework_preallocation" in [r.cause_id for r in rep.ruled_out]


@pytest.mark.parametrize(("text", "kept", "dropped"), [
    ("loss goes nan; lowering the learning rate to 1e-5 didn't help, fp32 neither", "loss goes nan", "learning rate"),
    ("在训练不到一个epoch时候loss变为nan，减小学习率也不行", "loss变为nan", "学习率"),
    ("Even with a lower learning rate the loss goes NaN.", "the loss goes NaN", "learning rate"),
])
def test_a_failed_remedy_is_left_out_of_the_likeness_reading(text: str, kept: str, dropped: str) -> None:
    from kb.symptom_text import without_failed_remedies

    out = without_failed_remedies(text)
    assert kept in out and dropped not in out
    # near-miss: the learning rate named as the suspect stays
    assert without_failed_remedies("the learning rate is too high") == "the learning rate is too high"


@pytest.mark.parametrize(("text", "tried"), [
    ("loss became nan; lowering the learning rate did not help", {"numerics.lr_too_high"}),
    # max_split_size_mb is the remedy PyTorch's OOM message offers when reserved memory is much
    # larger than allocated ("If reserved memory is >> allocated memory try setting
    # max_split_size_mb"): the cause that names it as its own word
    ("CUDA OOM; setting max_split_size_mb did not help", {"oom.allocator_reserved_unallocated"}),
    ("改了 max_split_size_mb 也不行", {"oom.allocator_reserved_unallocated"}),
    # near-misses: a remedy that worked, and no remedy at all
    ("lowering the learning rate fixed it", set()),
    ("loss becomes nan after 200 steps", set()),
])
def test_a_failed_remedy_names_the_cause_it_was_tried_for(kn, text: str, tried: set[str]) -> None:
    from kb.symptom_text import remedies_tried

    assert remedies_tried(text, kn) == tried


def test_a_learning_rate_said_not_to_help_does_not_lead() -> None:
    import kb

    rep = kb.diagnose(symptom="loss became nan within the first epoch; lowering the learning rate did not help")
    assert rep.findings == [] and rep.hypotheses[0].cause_id != "numerics.lr_too_high"
    rep = kb.diagnose(symptom="loss became nan within the first epoch; the learning rate is too high")
    assert rep.hypotheses[0].cause_id == "numerics.lr_too_high"


@pytest.mark.parametrize(("text", "failed"), [
    # a remedy tried and the error still there: what it names is not the problem
    # (a training run: "where did it fail" asks which of its phases did)
    ("I ran out of GPU memory in training. I have also tried to decrease batchsize_eval but still "
     "get this error", True),
    ("out of memory at the first step; I tried lowering the batch size to no avail", True),
    ("CUDA OOM on my 8GB card; tried to set a smaller batch size but seem result in vain", True),
    # near-miss: the same setting changed, nothing said of its failing
    ("I ran out of GPU memory in training. I have also decreased batchsize_eval", False),
])
def test_a_remedy_that_still_fails_is_no_evidence(kn, text: str, failed: bool) -> None:
    from kb.symptom_text import without_failed_remedies

    assert ("batch" not in without_failed_remedies(text)) is failed
    if "batchsize_eval" in text:
        rep = kb.diagnose(symptom=text, knowledge=kn)
        assert (rep.hypotheses[0].cause_id != "oom.eval_no_grad") is failed


@pytest.mark.parametrize(("text", "cause"), [
    # a cause's own words name its branch when no branch word does
    ("CPU utilization reaches 100% but the GPU stays low", "gpu_util.cpu_bound"),
    ("the launcher exits with return code=-7 on 2 A10s", "nccl.shm_too_small"),
])
def test_a_causes_words_name_its_branch_and_lead(text: str, cause: str) -> None:
    import kb

    rep = kb.diagnose(symptom=text)
    assert rep.findings == [] and rep.hypotheses[0].cause_id == cause


@pytest.mark.parametrize(("text", "branch", "cause"), [
    # a small share of the GPU in use, said in a sentence
    ("training for 5 days utilises only 5% of NVIDIA 3090 GPU", "gpu_util", None),
    ("it uses just 20 % of the GPUs", "gpu_util", None),
    # in Chinese (PaddleDetection: at batch 32 the GPU reaches 30 % at most)
    ("改为batch size改为32了，GPU偶尔最高能到30%，基本上都是小于10%", "gpu_util", None),
    ("it's not using any of the gpus available", "gpu_util", None),
    # the GPU slower than the CPU: kernels too small to pay for their launch
    ("with CUDA 10 it is a lot slower on GPU than on CPU", "gpu_util", "gpu_util.launch_bound"),
    ("训练时 gpu 比cpu还慢", "gpu_util", "gpu_util.launch_bound"),
    # a follow-up turn that takes as long as the first prompt: the cached prefix is not reused
    ("the short follow-up prompt takes as long as processing the first prompt on llama-server",
     "inference", "inference.prefix_caching_disabled"),
    # a model deployed for answering
    ("when I deploy the 4B model on one 4090 the infer speed is so slow", "inference", None),
    ("我部署了模型，速度很慢", "inference", None),
    # near-miss: a job deployed on Kubernetes that crashes in its collective is no serving problem
    ("Deploy nccl_allreduce_job.yaml unmodified on an 8-GPU node; the job fails (segfault)", "nccl", None),
    # generation speed as seconds per token, or tokens per second in Chinese
    ("my token generation is at around 0.7s/token, which feels extremely slow", "inference", None),
    ("运行速度特别慢，平均只有1.3 token/秒", "inference", None),
    # several nodes slower than one: a comparison of setups is the symptom, not the setup
    ("two nodes train 8 times slower than on a single node with 8 GPUs", "nccl", None),
    # memory that overflows is the card's memory running out (显存溢出), not a number's range
    ("memory overflow on an A800 GPU with 80GB during the backpropagation step", "oom", None),
    ("Error about running out of CUDA's memory always occurs with resnet", "oom", None),
    ("Using enable_vae_tiling causes an overflow of memory; without it everything is normal", "oom",
     None),
    # near-miss: a value's overflow in fp16
    ("the fp16 activations overflow and the loss turns nan", "numerics", None),
    # training that never settles (不收敛), in English
    ("the 3d model does not converge, the dice stays at 0 after 10 epochs", "numerics", None),
    # near-miss: a loss that converges, slowly, is a speed question
    ("the loss converges but every epoch is very slow", "gpu_util", None),
    # the loss climbing instead of falling
    ("after 5000 iterations the loss rapidly increases and the output is only noise",
     "numerics", None),
    # the GPU's memory that keeps growing, not given back: tensors kept alive across steps
    ("跑下面这段代码时，显存不断增加，感觉没有释放", "oom", "oom.tensors_not_released"),
    ("显存越来越大，最后 OOM", "oom", "oom.tensors_not_released"),
    # host RAM that keeps growing: the RAM stick, not the GPU's memory
    ("随着训练内存占用越来越大，是我64G内存条不够用嘛", "oom", "oom.host_ram_oom"),
    ("as training went on System Memory Utilization skyrocketed until ray reported out of memory",
     "oom", "oom.host_ram_oom"),
    # a focus adverb inside the phrase ("runs only on CPU" reads "runs on cpu")
    ("inference with onnxruntime: the model runs only on CPU", "inference", "inference.layers_on_cpu"),
    ("the inference runs entirely on the CPU", "inference", "inference.layers_on_cpu"),
    # model FLOPs per GPU as Megatron prints them: the training is slow, whatever model it trains
    ("Training Mixtral 8x7B on 16 x H100 only achieves 130 TFLOPS", "gpu_util", None),
    # a model's layers left on the CPU: the local runners' offload (llama.cpp's
    # "offloaded N/M layers to GPU"), whatever the slowness word says
    ("it only offloads 12/61 layers to GPU although the card has room, so it is much slower",
     "inference", "inference.layers_on_cpu"),
    ("most of the layers on the CPU, the rest on the GPU; very slow answers", "inference",
     "inference.layers_on_cpu"),
    # near-miss: DeepSpeed's optimizer offload in training stays a training question
    ("training with deepspeed optimizer offloading to CPU is slower", "gpu_util", None),
    # several cards compared with one in Chinese, words between
    ("14b模型多卡推理速度比单卡推理速度慢了好几倍", "inference", "inference.split_small_model"),
    # 静态图 (a static graph, Paddle's to_static / MindSpore's GRAPH_MODE) is a compiled graph
    ("转成静态图以后快了很多，动态图为什么这么慢", "compile", None),
    # host RAM used up, in words (Google Colab's crash notice), beside a "freeze"
    ("saving the merged model freezes, then: Your session crashed after using all available RAM.",
     "oom", "oom.host_ram_oom"),
    ("the notebook ran out of RAM while loading the checkpoint", "oom", None),
    ("the session crashed: RAM is full while merging the weights", "oom", "oom.host_ram_oom"),
    # which memory ran out, said: the host's (the OOM killer, "CPU memory", "no cuda memory")
    # ranks host RAM above the card's causes that other words also fit
    ("loading the checkpoint on 6 GPUs causes my 256GB CPU memory OOM", "oom", "oom.host_ram_oom"),
    ("the measurement pass ultimately bombs with Killed, although the model loads and runs", "oom",
     "oom.host_ram_oom"),
    ("during evaluation the memory (no cuda memory) keeps increasing and the program is killed",
     "oom", "oom.host_ram_oom"),
    # near-miss: the card's memory growing
    ("the CUDA memory keeps increasing every step until OOM", "oom", "oom.tensors_not_released"),
    # a process that dies without a word: the kernel's OOM killer sends SIGKILL, which prints
    # nothing in the process itself
    ("single_cls training dies quietly during the first epoch", "oom", "oom.host_ram_oom"),
    # Triton Inference Server, as people call it
    ("the yolov5 model is very slow in Triton server even with multiple instances", "inference",
     None),
    # near-miss: OpenAI Triton, the kernel language, is no server
    ("my custom triton kernel is very slow", "gpu_util", None),
    # a serving engine named beside the memory it takes, and no word of speed: memory is the
    # problem (vLLM reserves gpu_memory_utilization of the card at start)
    ("with vllm on a single T4 the memory cost exceeded 11GB, the HF model takes 1GB", "oom", None),
    ("vllm 部署后显存占用太高", "oom", None),
    # near-misses: the same engine said to be slow, or layers kept off the card to fit memory
    ("vllm memory usage is fine but the throughput is low", "inference", None),
    ("I offloaded only one layer to the GPU to avoid out of memory with llama.cpp; eval time is "
     "500 ms per token", "inference", None),
    # host RAM blown while loading, said in Chinese with the English verb
    ("模型加载的时候直接爆内存了，子进程都被kill了", "oom", "oom.host_ram_oom"),
    # batches capped by total duration, clips never cut: one batch far longer than the rest
    ("with max-duration = 50 the OOM occurs after some batches of training", "oom",
     "oom.long_input_at_step"),
    ("训练gpt时中途爆显存，音频未切分，最长38s", "oom", "oom.long_input_at_step"),
    # near-miss: the same setting named where the job is slow, not out of memory
    ("with max-duration = 50 the training is slow and GPU utilization is low", "gpu_util", None),
    # how long the job has run, stated: a duration found too long
    ("the training went on for 12 hours but the epochs are still at 125", "gpu_util", None),
    # near-miss: epochs are no duration
    ("I trained for 100 epochs and then the loss became NaN", "numerics", None),
    # a latency measured and found high, of no named job
    ("the average latency time is 199.85ms, while the official code gets 18ms", "inference", None),
    # near-miss: a collective's latency names the collective
    ("the all_reduce latency across nodes is 4ms for 228 bytes", "nccl", None),
    # GPU memory held by a model server, in a non-native plural
    ("with my torchserve handler, 4 images occupy around 14G memories of GPU and it is never "
     "released", "oom", None),
    # the card's memory kept after the work is done
    ("after a song is separated with CUDA, the memory was not released", "oom", None),
    # a process that closes by itself while loading: the OOM killer's SIGKILL prints nothing
    ("comfyui automatically shutdown when load diffusion model", "oom", "oom.host_ram_oom"),
    # the cards' communication failing, in plain words
    ("4090 x 4, using one GPU works ... GPUs communication err", "nccl", None),
    # near-miss: the same words said to be fine
    ("GPU communication is fine, but the loss becomes NaN after 100 steps", "numerics", None),
    # the data read over a network mount (Colab's Google Drive, a bucket)
    ("on colab the dataset on google drive makes each epoch take 4 hours, GPU utilization is low",
     "gpu_util", "gpu_util.network_storage_bound"),
    # near-miss: the same slowness with the data on a local disk
    ("each epoch takes 4 hours reading from the local hdd, GPU utilization is low", "gpu_util",
     "gpu_util.dataloader_bound"),
    # 内存 is the host's RAM (显存 the card's): its overflow is host RAM's
    ("eval时内存溢出，执行已被中止", "oom", "oom.host_ram_oom"),
    ("4 GPUs in one process: only one GPU is busy at a time while training", "gpu_util",
     "gpu_util.dataparallel_single_process"),
    # one process holding the model across the cards runs them one after another
    ("请问为何无法多卡并行训练？四张卡同一时间只有一张卡有利用率", "gpu_util",
     "gpu_util.dataparallel_single_process"),
    # a trained model put to work (speech to text, images from a prompt) and found slow: the
    # serving side's branch, whatever its utilisation words
    ("transcribing a 27 minute audio with whisper takes 62 minutes and the GPU is mostly idle",
     "inference", None),
    ("generating images in ComfyUI is extremely slow, GPU utilization is 5%", "inference", None),
    # the model's training told as its past: where the model came from, not the slow job
    ("I trained a detector on my data, and now it predicts really slowly on the GPU", "inference", None),
    ("after the training process finished, predicting 100 rows with the trained model is very slow",
     "inference", None),
    ("用训练好的模型预测一张图片要 10 秒，太慢了", "inference", None),
    # the resume is what runs out of memory: the checkpoint's copy on the GPU
    ("I can train from scratch, but I am unable to resume from the last checkpoint: CUDA out of memory",
     "oom", "oom.resume_state_on_gpu"),
    ("单卡断点续训显存不足，从头训练没问题", "oom", "oom.resume_state_on_gpu"),
    # near-misses: a resume whose loss jumps is the optimizer or scheduler state left behind,
    # and several ranks that all load onto GPU 0 on resume
    ("after resuming from the checkpoint the loss jumps back up", "numerics",
     "numerics.resume_state_mismatch"),
    ("on 4 GPUs, resuming puts all ranks' checkpoints on cuda:0 and GPU 0 runs out of memory", "oom",
     "oom.ranks_share_gpu0"),
    # the runtimes that only run a trained model
    ("the first session.run call is much slower than the next ones", "inference", None),
    ("with onnxruntime the model is slower than in pytorch", "inference", None),
    # a tokenizer is as much a generation's as a training's
    ("model.generate with tokenizer.eos_token_id takes 3 minutes per answer", "inference", None),
    # near-misses: the training itself is what is slow, or still running
    ("the model trains slowly and predicts the validation set slowly too, loss.backward takes 2s",
     "gpu_util", None),
    ("训练时预测验证集很慢，训练速度也慢", "gpu_util", None),
    # near-misses: the same model being trained, and JAX tracing a slow loop
    ("training whisper is slow and the GPU utilization is low", "gpu_util", None),
    ("the inference with JAX is very slow and the GPU util is 0% most of the time", "compile", None),
    # near-miss: the machine's RAM as setup
    ("on a machine with 64GB RAM the training loop is slow", "gpu_util", None),
    # torch.compile named beside slowness or low utilisation: the compile comes first
    ("with compile=True generation is super slow and GPU utilization stays near zero", "compile", None),
    ("after torch.compile the training is slower and GPU utilization is low", "compile", None),
    # near-miss: the data loader named as what starves the GPU
    ("torch.compile works, but the dataloader leaves GPU utilization low", "gpu_util", None),
    # the framework never reaching the GPU, said by the user
    ("training is very slow and torch.cuda.is_available() returns False", "gpu_util",
     "gpu_util.no_gpu_in_use"),
    ("训练特别慢，检查了一下 cuda 不可用，一直在用cpu训练", "gpu_util", "gpu_util.no_gpu_in_use"),
    # near-miss: a local runner's layers on the CPU is the serving side's cause
    ("ollama is very slow, it runs on the CPU instead of the GPU", "inference", "inference.layers_on_cpu"),
    # a framework's pool, said by the user
    ("JAX takes 90% of the GPU memory as soon as it starts, and then cuDNN fails to initialize", "oom",
     "oom.framework_preallocation"),
    ("vllm 启动以后显存居高不下，一直占着 90%", "oom", "oom.framework_preallocation"),
    ("TensorFlow grabs as much memory as it can on the GPU, so a second process on the card fails to start",
     "oom", "oom.framework_preallocation"),
    # the card's memory spilling into shared system memory on Windows, said by the user
    ("ComfyUI generation gets extremely slow once VRAM is full, it uses shared GPU memory", "inference",
     "inference.vram_sysmem_fallback"),
    ("LoRA training on my 3060 slowed to 30 s/it and task manager shows shared gpu memory in use", "gpu_util",
     "gpu_util.vram_sysmem_fallback"),
    ("训练很慢，看了一下显存满了，用到了共享显存", "gpu_util", "gpu_util.vram_sysmem_fallback"),
    # near-miss: the container's /dev/shm is another shared memory
    ("training is slow and the DataLoader workers die, shared memory is too small in docker", "gpu_util",
     "gpu_util.dev_shm_too_small"),
    # the fallback named as a noun
    ("training is very slow, the log says fallback to cpu although I asked for cuda", "gpu_util",
     "gpu_util.no_gpu_in_use"),
    # the GPU said not to be found, in the singular too (nougat's "WARNING:root:No GPU found")
    ("converting a PDF prints WARNING:root:No GPU found, but my machine has a modern nvidia GPU",
     "gpu_util", "gpu_util.no_gpu_in_use"),
    # the GPU said not to be recognized by the program (as "detect" and "see" above)
    ("I installed it on two workstations and in both cases it does not recognize the GPUs", "gpu_util",
     "gpu_util.no_gpu_in_use"),
])
def test_more_everyday_phrasings(kn, text: str, branch: str, cause: str | None) -> None:
    from kb.symptom_text import name_causes

    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert rep.branches[:1] == [branch]
    if cause:
        assert cause in name_causes(text, kn)
        assert rep.hypotheses[0].cause_id == cause


@pytest.mark.parametrize(("text", "branch"), [
    # GradScaler's scale by its own name; its error is a failure, not a run time ("RuntimeError"
    # is no "runtime", the words of a speed question)
    ("RuntimeError: grad_scale is too small, exiting: 2.3e-10", "numerics"),
    # the memory a job takes, said as a size
    ("finetuning occupies 44 gb of memory although the table says less than 24 gb", "oom"),
    # near-misses: the same size said beside the speed of a served model (a rate glued to its
    # number is a rate)
    ("inference on one instance uses about 8GB of GPU memory and only reaches 2 FPS", "inference"),
    ("the lmdeploy server only gets 1500token/second while it occupies 50GB", "inference"),
    # an allocation refused, in Chinese
    ("合并LoRA权重时提示的内存需要只是几百MB，就无法分配", "oom"),
    # the words of a GPU share belong to it: "偶尔" (now and then) there says how often the GPU
    # reaches 30 %, not an OOM at random steps
    ("显存从3～4G到了8～9G，GPU偶尔最高能到30%，基本上都是小于10%", "gpu_util"),
    # generated images that come out black: NaN pixels (diffusion in fp16), whatever the noun
    ("getting black results for the validation images of the SDXL adapter script", "numerics"),
    ("the sample images during training are black samples only", "numerics"),
    # the card's memory in other English words ("display memory": machine translation's 显存)
    ("Display memory burst when vae is decoded, 4050, 6g", "oom"),
    ("the video memory is not enough for this checkpoint", "oom"),
    # a serving engine that fills the card, asked how to leave room: its memory pool
    ("启动qwen-1.5-7b-chat默认就把显存给吃满了，我还要部署其他模型服务，怎么设置？", "oom"),
    ("after deploying with vllm the GPU memory is almost full, how do I leave room for a second model", "oom"),
    # near-misses: the full card beside the server's speed is the server's question
    ("部署qwen后显存吃满了，推理速度很慢", "inference"),
    ("vllm serving: the GPU memory is almost full and the throughput is only 20 tokens/s", "inference"),
    # "slower" in Chinese names slowness as "slower" does
    ("换了新的显卡以后反而更慢了", "gpu_util"),
])
def test_words_alone_name_the_branch(kn, text: str, branch: str) -> None:
    # the words' own reading (no past incident's likeness): what the vocabulary names
    _, branches, _ = apply_text(kb.Facts(symptom_text=text), kn)
    assert list(branches)[:1] == [branch]


@pytest.mark.parametrize("text", [
    # the GPU's memory (显存), not the host's (内存)
    "训练 13B 模型，显存占用特别高",
    "显存占用越来越大",
    "32g显存直接溢出了",
])
def test_gpu_memory_words_do_not_lead_with_host_ram(kn, text: str) -> None:
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert rep.branches[:1] == ["oom"] and rep.hypotheses[0].cause_id != "oom.host_ram_oom"


@pytest.mark.parametrize("text", [
    # near-misses: the CPU's share, a share of something else, a GPU only named
    "the loader uses only 5% of the CPU",
    "it utilizes only a few layers of the network",
    "the GPU is faster than the CPU",
    # a single node stated as the setup names no network
    "training on a single node with 8 GPUs is very slow",
])
def test_phrasings_that_name_no_gpu_share(kn, text: str) -> None:
    from kb.symptom_text import name_causes

    assert "gpu_util" not in classify(text, kn) or "single node" in text
    assert "gpu_util.launch_bound" not in name_causes(text, kn)
    assert "nccl" not in classify(text, kn)


@pytest.mark.parametrize(("text", "named"), [
    # every core of the host counted out: thread pools that take the whole host
    ("the CPU usage goes from 30% to around 95% on all 36 available cores", True),
    ("GPU training is slow and all 64 CPU threads sit at 100%", True),
    ("All 48 cores are at 100% while the GPU idles", True),
    # near-misses: the host's cores counted, not all of them busy
    ("my machine has 36 cores and training is slow", False),
    ("only 2 of my 8 cores are used while training", False),
])
def test_all_n_cores_reads_as_all_cores(kn, text: str, named: bool) -> None:
    from kb.symptom_text import name_causes

    assert ("gpu_util.cpu_threads_oversubscribed" in name_causes(text, kn)) is named


@pytest.mark.parametrize(("text", "numerics"), [
    ("I can train for about 1 epoch on this data before losses start significantly increasing.", True),
    ("the loss then slowly goes up until it is noise", True),
    ("tran/loss is really high: 23 at the first step", True),
    ("massive loss values immediately", True),
    # near-misses: a loss that does not climb, the loss of something else
    ("the loss does not increase any more after epoch 3", False),
    ("the loss of throughput increases with the batch size", False),
    ("The performance loss seems to increase with smaller batch sizes", False),
    ("loss decreased and accuracy increased", False),
    # a loss that does not fall, or falls to 0, is training gone wrong too (不收敛); GradScaler's
    # scale by its own name
    ("with opt_level O1 the train loss doesn't decrease", True),
    ("基于预训练模型训练了130k步，loss曲线没怎么下降", True),
    ("the gradscale keeps getting zero and the loss keeps unchanged in each iteration", True),
    ("after the upgrade fine-tuning makes the model dumb with a loss of 0", True),
    # near-miss: a loss that falls, in a slow run
    ("the loss decreases fine but every step takes 3 seconds", False),
])
def test_the_loss_going_wrong_names_numerics(kn, text: str, numerics: bool) -> None:
    assert ("numerics" in classify(text, kn)) is numerics


def test_a_sized_oom_message_in_the_words_states_its_sizes(kn) -> None:
    # PyTorch 1.x wording (c10/cuda/CUDACachingAllocator.cpp), pasted as the user's words
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 146.00 MiB (GPU 0; 8.00 GiB total "
            "capacity; 7.21 GiB already allocated; 0 bytes free; 7.32 GiB reserved in total by "
            "PyTorch)")
    facts = extract(text, kn)
    assert facts["oom"]["tried_to_allocate_mib"] == 146.0
    assert facts["oom"]["total_capacity_mib"] == 8192.0
    assert facts["oom"]["reserved_unallocated_mib"] == pytest.approx(112.64, abs=0.01)
    rep = kb.diagnose(symptom=text, knowledge=kn)
    # 0.11 GiB reserved but unallocated is no fragmentation of note: not the first reading
    assert rep.hypotheses[0].cause_id != "oom.allocator_reserved_unallocated"
    # near-miss: the message without its sizes states none
    assert "tried_to_allocate_mib" not in extract("CUDA out of memory again at 146 MiB", kn).get(
        "oom", {})


@pytest.mark.parametrize(("text", "occurred", "tried"), [
    # TensorFlow's op_kernel.cc wording, quoted in the words: the shape is the request
    ('it returned "ResourceExhaustedError (see above for traceback): OOM when allocating tensor '
     'with shape[64,372,32,32] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by '
     'allocator GPU_0_bfc"', True, 93.0),
    # the CUDA runtime's and cuBLAS's own words
    ("RuntimeError: CUDA error: out of memory", True, None),
    ("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)", True, None),
    # PaddlePaddle's allocator (six decimals, 1024-based units)
    ("Out of memory error on GPU 0. Cannot allocate 1.531250GB memory on GPU 0, available memory "
     "is only 416.625000MB.", True, 1568.0),
    # near-misses: the same trouble in a person's prose, or a message said not to come
    ("I get CUDA out of memory when training", None, None),
    ("no CUDA error: out of memory since the driver update, but it is slow", None, None),
])
def test_a_device_oom_message_in_the_words_is_an_oom(kn, text: str, occurred: bool | None,
                                                     tried: float | None) -> None:
    oom = extract(text, kn).get("oom", {})
    assert oom.get("occurred") is occurred
    assert oom.get("tried_to_allocate_mib") == tried


def test_a_quoted_device_oom_message_speaks_against_the_hosts_memory(kn) -> None:
    # the CUDA runtime's own "out of memory" is the card's memory; the same trouble in prose
    # ("runs out of memory") may be the host's
    def host(text: str) -> float:
        rep = kb.diagnose(symptom=text, knowledge=kn)
        return next(h.evidence for h in rep.hypotheses if h.cause_id == "oom.host_ram_oom")

    prose = host("my training runs out of memory")
    for message in ("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)",
                    "ResourceExhaustedError: OOM when allocating tensor with shape[64,372,32,32] "
                    "and type float"):
        assert host(f"my training runs out of memory: {message}") < prose, message


@pytest.mark.parametrize(("text", "nccl"), [
    # one GPU on one node: no collective to hang in
    ("I trained with 1 GPU (V100) and the code sometimes just hangs at a single step", False),
    ("单卡训练，跑到一半就卡住了", False),
    # near-misses: more GPUs, or one GPU on each of several nodes
    ("it works with 1 GPU but hangs with 2 GPUs", True),
    ("with 1 GPU on each of 4 nodes the job hangs at the first step", True),
])
def test_a_hang_on_one_gpu_names_no_collective(kn, text: str, nccl: bool) -> None:
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert ("nccl" in rep.branches) is nccl


def test_a_falling_loss_names_no_numerics_problem(kn) -> None:
    # near-miss of "the loss increases": the loss going down is training as it should
    assert "numerics" not in classify("the loss decreases and the accuracy increases", kn)
    assert "numerics" in classify("after 5k steps the loss suddenly increases", kn)


@pytest.mark.parametrize("text,first", [
    # aiohttp's TCPConnector and httpx's client both default to a pool of 100 connections: a
    # concurrency that stops at exactly 100 is the client's
    ("How do I increase the maximum number of concurrent reqs, which now seems to default to 100 "
     "on my vLLM server", "inference.client_concurrency_cap"),
    ("vLLM serving: TTFT degrades when concurrency > 100", "inference.client_concurrency_cap"),
])
def test_a_concurrency_stopping_at_100_is_the_clients_pool(text: str, first: str) -> None:
    rep = kb.diagnose(symptom=text)
    assert rep.findings == []
    assert rep.hypotheses[0].cause_id == first


@pytest.mark.parametrize("text", [
    "I send 100 concurrent requests to vLLM and the latency is high",
    "vLLM serves a max of 100 requests per second",
    "vLLM benchmark over 100 prompts is slow",
])
def test_a_hundred_that_is_no_ceiling_names_no_client_cap(text: str) -> None:
    from kb.symptom_text import name_causes

    assert "inference.client_concurrency_cap" not in name_causes(text, KN_)


@pytest.mark.parametrize("text,branch", [
    ("I only get one token/second whereas I get 30 tokens/second with PyTorch", "inference"),
    # how much memory the job takes, asked about without a failure: the memory branch
    ("Does FusedAdam consume twice the memory? Can AdamW reduce the memory usage?", "oom"),
    # near-miss: a weak memory word beside a slow-training complaint leaves the branch alone
    ("training is very slow and the GPU utilization is low; memory usage is high", "gpu_util"),
    # the memory a job holds, said as used or occupied, with nothing else named
    ("Upon importing the module, the GPU has 18Gb of memory used by the program.", "oom"),
    ("after loading the model the occupied memory on each card is 30 GB, is that normal?", "oom"),
    # near-miss: the same beside a slow step
    ("the step is slow and GPU utilization is 20 %, the memory used is only 10 GB", "gpu_util"),
    # a card said to be big enough is no out-of-memory word; t/s is llama.cpp users' rate
    ("use the first GPU only if it alone has enough VRAM to fit the model: 81 t/s vs 31 t/s", "inference"),
    ("not enough VRAM to load the model", "oom"),
    ("my losses become bigger and bigger when I train mask_rcnn", "numerics"),
    # Chinese with words between: host RAM (内存) filling up, the card's memory (显存) overflowing
    # later in the sentence, the loss falling to zero
    ("如果原始图片很大，16G内存很快就占满了，难道是内存释放存在问题？", "oom"),
    ("训练开始的时候，显存应该是有空余的，但是不到1个epoch溢出中断训练两次", "oom"),
    ("loss先在2左右上下波动，然后突然变成0，后面一直保持为0", "numerics"),
    ("微调时 loss 始终为 0，精度选的是 fp32", "numerics"),
    # the same in English, with words between, and as a trainer logs it
    ("get this warning and when training loss some step is 0, how to fix it", "numerics"),
    ("after a few hundred steps I get 0.0 loss on every batch", "numerics"),
    ("{'loss': 0.0, 'learning_rate': 3.96e-05, 'epoch': 0.13}", "numerics"),
    # the zero said as a word (huggingface/smol-course#61: nothing else in it names a branch,
    # and "second step" alone is only an optimizer-state word within an OOM)
    ("starting from the second step loss value is zero", "numerics"),
    # the card's memory said full, with nothing else said, is a question about memory (its
    # size is the setup's); near-misses: beside low utilisation it names no branch of its own,
    # and an overflow of the loss is numerics
    ("为什么跑这个 1.3B 的模型，24G显存都占满了", "oom"),
    ("显存占满了，重启以后显存又占满了", "oom"),
    ("why is my GPU memory almost full when the model is only 2 GB?", "oom"),
    ("gpu的内存已经用满了，但gpu利用率和占比很低", "gpu_util"),
    ("显存够用，但是loss溢出了", "numerics"),
    # the GPU's share in use said low in Chinese ("GPU占用很低"), a duration found too much,
    # memory running out said in other tenses
    ("Face Enhancer 1分多的语音要用十几分钟，GPU占用很低", "gpu_util"),
    ("it took too much time to finish one epoch", "gpu_util"),
    ("the GPU keeps running out of memory at step 300", "oom"),
    ("my memory runs out after two epochs", "oom"),
    # near-misses: the card's memory (显存) said little used is no share of the GPU's time
    ("显存占用很低，但是训练中途还是爆显存", "oom"),
    # several GPUs given, one used
    ("I changed the number of GPU in my slurm job to 4, however, it only uses one GPU", "gpu_util"),
])
def test_rates_and_memory_questions_name_their_branch(text: str, branch: str) -> None:
    assert next(iter(classify(text, KN_))) == branch


@pytest.mark.parametrize("text", [
    # a loss that is small, or a zero that belongs to another number, is no loss at zero
    "{'loss': 0.0123, 'learning_rate': 0.0, 'epoch': 0.13}",
    "the loss is 0.5 after epoch 0",
    "aux_loss=0 and the run is slow",
    "loss 2, lr: 0",
    "the loss is zero-shot transfer's",
    "the loss is not zero but it never goes down",
])
def test_a_loss_not_at_zero_reads_no_loss_at_zero(text: str) -> None:
    assert "loss becomes zero" not in _norm_text(text)


@pytest.mark.parametrize("text", [
    # the card's memory, the host's CPU, a share that is high
    "GPU显存只用了30%", "CPU只有10%", "GPU最高能到95%",
])
def test_other_shares_read_no_low_gpu_share(text: str) -> None:
    assert "low utilization" not in _norm_text(text)


@pytest.mark.parametrize(("text", "multi"), [
    ("双卡训练比单卡还要慢", True),
    ("4卡比单卡慢", True),
    ("多GPU推理比单GPU推理慢", True),
    # near-misses: several cards faster, one card slower, a comparison split by a clause
    ("多卡比单卡快很多", False),
    ("单卡比多卡慢", False),
    ("多卡训练正常，比单卡快，但是推理慢", False),
])
def test_several_cards_slower_than_one_in_chinese(text: str, multi: bool) -> None:
    from kb.symptom_text import _norm_text

    assert ("多卡更慢" in _norm_text(text)) is multi


@pytest.mark.parametrize(("text", "first"), [
    # a hang while compiling, with no collective named: compilation holds the job
    ("on every start it hangs for several minutes; the process is at 100% CPU and torch "
     "seems to be compiling something", "compile"),
    ("with torch_xla on 8 GPUs the first epoch starts, then it hangs indefinitely", "compile"),
    # near-misses: a collective, ranks or a timeout named beside the compile
    ("with torch.compile the job hangs in all_reduce on rank 3", "nccl"),
    ("after compiling, the ranks hang until the watchdog timeout", "nccl"),
])
def test_a_hang_while_compiling_is_the_compile(kn, text: str, first: str) -> None:
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert rep.branches[:1] == [first]


@pytest.mark.parametrize(("text", "low"), [
    # the GPU as the subject of a small share in use
    ("the GPU (RTX 2080) is only being used approx 30% whilst one CPU core is maxed out", True),
    ("my GPU is only used at 20% during training", True),
    ("GPU only runs at 15%", True),
    # a utilization said to be low, or a small share before the word, no resource named
    ("I use a single H100, but the utilization is lower than expected", True),
    ("the utilisation stays very low", True),
    ("When running fold code on a K40 card, I'm seeing a 10% utilization in nvidia-smi", True),
    ("0% GPU utilization most of the time", True),
    # near-misses: a high share, a percentage that is no share of the GPU in use
    ("the GPU is used at 95%", False),
    ("the GPU is only 2 years old and 50% faster", False),
    # another resource's utilization, or a high one
    ("CPU utilization is low while the job runs", False),
    ("memory utilization was low", False),
    ("the KV cache utilization is low", False),
    ("NVLink utilization is low during all-reduce", False),
    ("30% utilization of the CPU", False),
    ("I see 95% utilization", False),
])
def test_the_gpu_said_to_be_little_used(kn, text: str, low: bool) -> None:
    from kb.symptom_text import _norm_text

    assert ("low utilization" in _norm_text(text)) is low
    if low:
        assert next(iter(classify(text, kn))) == "gpu_util"


@pytest.mark.parametrize(("text", "oom"), [
    # one GPU fine, several failing: the comparison alone names no branch (memory on GPU 0, a
    # collective or a DDP check may be what several GPUs add)
    ("when using 4 GPUs for training: RuntimeError: Model replicas must have an equal number of "
     "parameters. (1 gpu is OK)", False),
    # near-miss: the same comparison beside an OOM ranks GPU 0's extra ranks
    ("works fine with a single GPU, but with 4 GPUs it runs out of memory", True),
])
def test_one_gpu_working_alone_names_no_branch(kn, text: str, oom: bool) -> None:
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert ("oom" in rep.branches) is oom
    if oom:
        assert rep.hypotheses[0].cause_id == "oom.ranks_share_gpu0"


@pytest.mark.parametrize(("text", "reads"), [
    ("the model runs only on CPU", "runs on cpu"),
    ("it is just in fp16 that the loss goes nan", "is in fp16"),
    # near-misses: the adverb before no phrase of place or manner, and no adverb at all
    ("it runs only 2 steps per second", None),
    ("only on CPU", None),
])
def test_a_focus_adverb_inside_a_phrase_is_read_without_it(text: str, reads: str | None) -> None:
    from kb.symptom_text import _norm_text

    low = _norm_text(text)
    if reads:
        assert reads in low.split(" \n ", 1)[1]
    else:
        assert " \n " not in low


@pytest.mark.parametrize(("text", "host_ram"), [
    # a GPU's RAM is its memory, not the host's
    ("how much GPU RAM is needed? It looks like I ran out of memory on a 48gb L40", False),
    ("the model is larger than a single GPU's ram", False),
    # near-miss: the host's RAM, named as such
    ("the process was killed when the RAM filled up while loading the checkpoint", True),
])
def test_a_gpus_ram_is_no_host_ram(kn, text: str, host_ram: bool) -> None:
    from kb.symptom_text import name_causes

    assert ("oom.host_ram_oom" in name_causes(text, kn)) is host_ram


@pytest.mark.parametrize(("text", "branch"), [
    # a frame rate glued to its number: a training loop's, or a demo's (a model put to work)
    ("Is the expectation that the training runs at around 4.3fps at 1280x720?", "gpu_util"),
    ("Is the expectation that the demo runs at around 4.3fps at 1280x720?", "inference"),
    ("the server generates at 3tok/s only", "inference"),
    ("I run the benchmark on a800, but only get 1500token/second output", "inference"),
    # a speed-up from the GPU found small: a speed complaint in its weakest words
    ("With a 40x128x128 image, I'm seeing a ~1.5x speed-up from using the GPU", "gpu_util"),
    # a setting said to make training much faster, the CPU said to do the work
    ("turning cudnn.deterministic to False makes the training way more faster", "gpu_util"),
    ("when I run the training script, only cpu is used", "gpu_util"),
    # how long one generation takes is serving's time
    ("model: CogVideoX-5b-I2V ... Generation time: 20 minute", "inference"),
    # performance said to drop, in English and Chinese: the loop's speed, weakest words
    ("after upgrading the driver we see a severe performance drop in every epoch", "gpu_util"),
    ("升级之后训练性能下降比较严重", "gpu_util"),
])
def test_a_rate_written_against_its_number_is_read(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "branch"), [
    # OpenNMT-py's step line: a training run's own tokens per second
    ("[2018-08-03 18:07:31,781 INFO] Step 50/55000; acc:   1.33; ppl: 24568.27; xent: 10.11; "
     "lr: 1.00000; 23006/21669 tok/s;     18 sec\nmulti-GPU training", "gpu_util"),
    ("the 8 GPU training only reaches 12000 tokens/s", "gpu_util"),
    # near-misses: the same rate of a server, or of generation during training
    ("vLLM serves 23006 tok/s after training finished", "inference"),
    ("GRPO training: the rollout generation runs at 300 tokens/s", "inference"),
    ("the model only reaches 12000 tokens/s", "inference"),
])
def test_a_training_runs_throughput_stays_with_training(kn, text: str, branch: str) -> None:
    from kb.symptom_text import text_branches

    assert _first_branch(kn, text) == branch
    # an artifact's own text is read with the same yields as the user's words
    assert next(iter(text_branches(text, kn))) == branch


def test_a_progress_bars_rate_in_a_log_names_no_branch(kn) -> None:
    # tqdm prints "109.87s/it" on every bar: a log's rate is no complaint about speed
    log = ("Running predictions on sample ttbar on rank=0:  25%|##5       | 1/4 [01:49<05:29, "
           "109.87s/it]\n")
    from kb.symptom_text import text_branches

    assert "gpu_util" not in text_branches(log, kn)


@pytest.mark.parametrize(("text", "device"), [
    ("When I process 1920x1080 videos, the 40GB GPU memory runs out (OOM).", True),
    ("I am facing CUDA out-of-memory error with batch size 4", True),
    ("not enough VRAM to load the model", True),
    ("训练到一半显存不足", True),
    ("GPU内存不足", True),
    # the card's memory named as what fills up, and its running out a word away
    ("训练 13B 模型，显存占用特别高", True),
    ("VRAM usage keeps growing until the process crashes", True),
    ("32g显存直接溢出了", True),
    # the host's memory named and not the card's: said false ("no cuda memory" names none)
    ("内存爆了，进程被kill", False),
    ("during evaluation the memory (no cuda memory) keeps increasing and the program is killed", False),
    ("the notebook ran out of RAM while loading the checkpoint", False),
    ("the CPU memory usage (not GPU memory) gradually increases during training", False),
    # near-misses: the card's size or a flag named, not its memory running out; both memories
    # named; neither
    ("It should run, as there is 24gb vRAM. It fails on oom. I tried gpu-memory-utilization 0.9", None),
    ("CUDA out of memory, and my 32GB RAM is full too", None),
    ("显存占用不高，内存占用特别高", None),
    ("GPU memory utilization is only 30 %", None),
    # the machine's RAM named as its size, not as what ran out
    ("I got out of memory. I'm currently using 1080Ti 11GB and 32GB RAM.", None),
    ("When I try the llama3 model I get out of memory errors. I have 64GB of RAM and 24GB on the GPU.", None),
])
def test_which_memory_ran_out_said(text: str, device: bool | None) -> None:
    assert extract(text).get("oom", {}).get("device_memory_said") is device


@pytest.mark.parametrize(("text", "host_first"), [
    ("When I process 1920x1080 videos, the 40GB GPU memory runs out (OOM).", False),
    ("I get a CUDA out-of-memory error with batch size 4 on my 16 GB card", False),
    # near-miss: host RAM running out stays first
    ("the training process runs out of RAM after a few epochs and gets killed", True),
])
def test_the_gpus_memory_said_to_run_out_is_no_host_ram(kn, text: str, host_first: bool) -> None:
    assert (_first_cause(kn, text) == "oom.host_ram_oom") is host_first


def _first_cause(kn, text: str) -> str:
    rep = kb.diagnose({"symptom_text": text}, knowledge=kn)
    return [h.cause_id for h in rep.findings + rep.hypotheses][0]


def _first_branch(kn, text: str) -> str | None:
    return next(iter(kb.diagnose({"symptom_text": text}, knowledge=kn).branches), None)


@pytest.mark.parametrize(("text", "branch"), [
    # a library built from source is no graph compiler; the GPU's low use is the complaint
    ("I successfully compile gpu version on win10; gpu is 2x faster than cpu, but slow "
     "utilization of gpu ~ only about 26 percent", "gpu_util"),
    # a build option named by the tool, and TensorFlow's CPU-feature line at start-up
    # (cpu_feature_guard.cc): the build again, not a compiler at work
    ("Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON. Available providers: CPUExecutionProvider. "
     "Decoding is very slow and the GPU stays idle", "gpu_util"),
    ("Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA. "
     "Training crashed with CUDA out of memory", "oom"),
    # near-miss: torch.compile named stays the compiler's
    ("torch.compile made the training slow, it recompiles every step", "compile"),
    # an image-generation app at work is serving, not a training loop
    ("it takes about 12-15 minutes for fooocus to generate one image", "inference"),
    # of four GPUs given one is used: the GPU count is the symptom here, not the setup
    ("With one GPU it has been running for a week. I changed the number of GPU in my slurm job "
     "to 4, however, it only uses one GPU", "gpu_util"),
    ("with 8 cards only 1 GPU is being utilized and the epoch takes hours", "gpu_util"),
    ("there are 4 gpus but the sweep will only run on 1 GPU", "gpu_util"),
    ("the python script only use one GPU of the eight", "gpu_util"),
    ("one card works and the other 3 gpus remain idle", "gpu_util"),
    # near-misses: one GPU used by choice is the setup; the failure names the branch
    ("I only use one GPU and the job dies with CUDA out of memory", "oom"),
    ("we only run on one GPU and the job dies with CUDA out of memory", "oom"),
    ("I am only using one GPU, and the job dies with CUDA out of memory", "oom"),
    ("I'm only using one GPU, and the job dies with CUDA out of memory", "oom"),
])
def test_builds_and_image_apps_name_their_branch(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


def test_cross_validation_names_no_validation_phase(kn) -> None:
    # k-fold cross-validation splits the data: the evaluation loop's OOM cause is not named
    rep = kb.diagnose({"symptom_text": "hyperparameter optimization with 10 fold cross validation "
                                       "has been running for more than a week"}, knowledge=kn)
    assert "oom" not in rep.branches
    # the API's own name for it ("NeuralForecast.cross_validation", sklearn's cross_validate)
    rep = kb.diagnose({"symptom_text": "I'm getting the following error using "
                                       "`NeuralForecast.cross_validation`:"}, knowledge=kn)
    assert not any("validation" in r for why in rep.branch_reasons.values() for r in why)
    # near-miss: the validation phase itself named
    rep = kb.diagnose({"symptom_text": "CUDA out of memory during validation"}, knowledge=kn)
    assert [h.cause_id for h in rep.hypotheses][:1] == ["oom.eval_no_grad"]


@pytest.mark.parametrize(("text", "gemm_first"), [
    # fp16 lets a GEMM miss the Tensor Core tiles; it does not say one does
    ("training is too slow, about 1 min per iteration with fp16 and deepspeed", False),
    # near-miss: the dimension said to miss the alignment
    ("the vocab list length is 33708, which is not multiples of 8; fp16 step time is slow", True),
])
def test_an_enabling_condition_is_no_evidence(kn, text: str, gemm_first: bool) -> None:
    assert (_first_cause(kn, text) == "gpu_util.gemm_unaligned") is gemm_first


def test_half_precision_alone_does_not_lead_with_the_attention_softmax(kn) -> None:
    # fp16 lets attention scores overflow; it does not say they did (an enabling condition)
    rep = kb.diagnose({"symptom": "numerics", "numerics": {"dtype": "fp16", "loss": [2.1, 2.0, float("nan")]}},
                      knowledge=kn)
    assert [h.cause_id for h in rep.findings + rep.hypotheses][0] != "numerics.attention_softmax"
    # near-miss: a long sequence in an eager attention names it
    rep = kb.diagnose({"symptom": "numerics", "numerics": {"dtype": "fp16", "seq_len": 32768,
                                                           "attention_impl": "eager",
                                                           "loss": [2.1, 2.0, float("nan")]}},
                      knowledge=kn)
    assert [h.cause_id for h in rep.findings + rep.hypotheses][0] == "numerics.attention_softmax"


@pytest.mark.parametrize(("text", "named"), [
    # a word starting with 小/大 after a verb that takes it in ("减小 batch size": reduce the batch)
    ("减小 batch size 也无法解决", False),
    ("缩小 batch 之后还是慢", False),
    # near-misses: the small batch itself
    ("小 batch 训练 GPU 利用率低", True),
    ("用的是小 batch，速度很慢", True),
])
def test_a_chinese_size_verb_is_not_its_adjective(kn, text: str, named: bool) -> None:
    from kb.symptom_text import name_causes

    assert ("gpu_util.launch_bound" in name_causes(text, kn)) is named


@pytest.mark.parametrize(("text", "branch"), [
    ("训练过程中提示 GPU 已满", "oom"),
    ("跑到一半 gpu满了", "oom"),
    # near-miss: the card busy, not full
    ("GPU 使用率已经很高了，但训练还是很慢", "gpu_util"),
])
def test_the_card_said_full_is_an_oom(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "branch"), [
    # the input pipeline named beside an OOM, nothing said of speed: the OOM is the problem
    ("I use a DataLoader with batch_size=16 on one big graph and it caused the OOM error", "oom"),
    ("num_workers=4 and the dataloader gives out of memory", "oom"),
    # near-misses: the pipeline's speed or the GPU's load said too
    ("the DataLoader is slow and then I get CUDA out of memory", "gpu_util"),
    ("GPU usage was low with the data loader; with batch 64 it ran out of memory", "gpu_util"),
])
def test_the_input_pipeline_named_beside_an_oom_yields_to_it(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "branch", "first"), [
    # several nodes said slower than one, at length: the comparison is the symptom, and what the
    # several add is the network between them
    ("with 4 nodes every step needs far more time than single node training", "nccl",
     "nccl.cross_node_bandwidth"),
    ("two nodes are slower than one node for the same global batch", "nccl", "nccl.cross_node_bandwidth"),
    ("多机训练比单机还慢很多", "nccl", "nccl.cross_node_bandwidth"),
    # near-misses: one node slower than expected compares no setups; a single node said to take
    # longer than another single node is no multi-node job
    ("training on a single node is slower than I expected", "gpu_util", None),
    ("this epoch took longer than one machine should need", "gpu_util", None),
])
def test_several_nodes_slower_than_one(kn, text: str, branch: str, first: str | None) -> None:
    rep = kb.diagnose(symptom=text, knowledge=kn)
    assert rep.branches[:1] == [branch]
    if first:
        assert rep.hypotheses[0].cause_id == first



@pytest.mark.parametrize(("text", "windows"), [
    ("SDXL LoRA training on Windows 10 with an RTX 3060 12GB got slower every epoch", True),
    ("win11, 4070, generation takes minutes", True),
    ("I run it under WSL2 on my laptop", True),
    ("在windows系统上训练很慢", True),
    # near-misses: a window of time, a sliding window, a window of the app
    ("the loss spikes within a window of 100 steps", None),
    ("sliding window attention makes decoding slow", None),
    ("the preview windows freeze while generating", None),
])
def test_windows_said_is_the_machine(text: str, windows: bool | None) -> None:
    from kb.symptom_text import extract

    assert extract(text).get("software", {}).get("windows") is windows


@pytest.mark.parametrize(("text", "branch"), [
    # a hyphen-joined product name's parts are no words of the user's: "small model" inside
    # "deepseek-vl2-small" names no serving cause; the memory question is what is said
    ("I cannot load the deepseek-vl2-small model on my 3090, it does not fit", "oom"),
    # ... but the whole name still places a job in serving (a model family)
    ("Low GPU utilization when running Deepseek-r1-distill-llama-8B", "inference"),
    # Chinese glues its words to a name with no space: "训练时长" beside "qwen3.5-27B" and
    # "qwen3-32b" is the user's (a training's duration), not part of a product name
    ("同样的iteration数，qwen3.5-27B训练时长是qwen3-32b的5-6倍", "gpu_util"),
    # a screen gone dark for a moment beside slow serving: the slowness is the question
    ("推理很慢，每次生成都要一分钟，屏幕还黑屏了一下", "inference"),
    # ... while the name itself, glued to Chinese, is still only a name ("small" is no word)
    ("显存不够，加载deepseek-vl2-small模型就报错", "oom"),
    # a model or batch said not to fit is a memory question (a weak word), in either language
    ("I tried to run Llama 70B on NVIDIA A10G and it does not fit.", "oom"),
    ("模型太大，单卡放不下", "oom"),
    # 挂起: a job suspended, a hang
    ("多GPU执行时任务长时间挂起", "nccl"),
    # a generation said to take very long is serving slowness, not a crash of the collective branch
    ("koboldcpp generates for a very long time, and crashes when I choose CuBLAS", "inference"),
])
def test_names_products_fits_and_hangs(text: str, branch: str) -> None:
    assert kb.diagnose(symptom=text).branches[0] == branch


@pytest.mark.parametrize(("text", "branch"), [
    # "VRAM" is the card's memory named, most often to say how big the card is: a memory
    # question only when nothing else is asked
    ("VRAM usage is way too high, how can I reduce vram?", "oom"),
    ("The model only generates 11 tok/s although VRAM was available", "inference"),
    ("how can i reduce vram? 4x2080ti 22GB, hope all layers can run on gpus with ollama", "inference"),
    # the work said to run on the CPU instead of the GPU: the loop's question, or serving's when
    # the text is about serving
    ("It utilizes my CPU (Intel) instead of the GPU (NVIDIA Quadro) while training", "gpu_util"),
    ("My GPU is not getting used in processing, it is using CPU only", "gpu_util"),
    ("ollama runs on the CPU instead of the GPU and generates 2 tokens/s", "inference"),
])
def test_the_cards_memory_and_the_cpu_said_in_place_of_the_gpu(text: str, branch: str) -> None:
    assert kb.diagnose(symptom=text).branches[0] == branch


def test_a_quoted_line_of_gpu_work_names_no_cause() -> None:
    # Lightning's "used: True" quoted in the words speaks against the CPU cause: it is no
    # message of it (its "used: False" sibling is)
    from kb.symptom_text import quoted_messages

    kn = load_knowledge()
    assert quoted_messages("GPU available: True (cuda), used: True", kn) == []
    assert quoted_messages("GPU available: True (cuda), used: False", kn) == ["gpu_util.no_gpu_in_use"]


@pytest.mark.parametrize(("text", "read"), [
    # a setting said to have made the job work is the fixed job's, not the failing job's state
    # (pytorch forums: "I confirmed that the model works by setting the variable NCCL_P2P_DISABLE
    # =1"): P2P was on when it hung
    ("the model freezes (stuck) when using 4 or more GPUs. I confirmed that the model works by "
     "setting the variable NCCL_P2P_DISABLE=1 .", False),
    ("I solved it by setting export NCCL_P2P_DISABLE=1", False),
    # near-misses: the setting in effect, or tried without help
    ("export NCCL_P2P_DISABLE=1 and the job still hangs with 4 GPUs", True),
    ("the job hangs with 4 GPUs\nexport NCCL_P2P_DISABLE=1 did not help", True),
])
def test_a_setting_that_made_it_work_is_no_state_of_the_failing_job(text: str, read: bool) -> None:
    from kb.facts import Facts
    from kb.loaded import load_knowledge
    from kb.symptom_text import apply_text, extract

    assert (extract(text).get("distributed", {}).get("p2p_disabled") is True) is read
    facts, _, _ = apply_text(Facts(symptom_text=text), load_knowledge())
    if not read:  # nor do its words name the cause of that setting being on
        assert "nccl.p2p_nvlink_disabled" not in (facts.mentions or [])


def test_a_remedy_that_made_it_work_names_no_cause_of_its_setting() -> None:
    import kb

    rep = kb.diagnose(symptom="the model freezes (stuck) when using 4 or more GPUs on one node. I "
                              "confirmed that the model works by setting the variable NCCL_P2P_DISABLE=1.")
    assert rep.hypotheses[0].cause_id != "nccl.p2p_nvlink_disabled"
    # near-miss: the same setting in effect while the job runs slowly names it
    rep = kb.diagnose(symptom="all_reduce over 8 GPUs on one node is slow; we export NCCL_P2P_DISABLE=1")
    assert any(h.cause_id == "nccl.p2p_nvlink_disabled" for h in rep.findings + rep.hypotheses[:2])


@pytest.mark.parametrize(("text", "branch"), [
    # a precision named in a text about the card's memory, with no sign of bad numbers
    ("choosing fp8 model weights uses more VRAM than fp16, I expected a decrease in VRAM usage", "oom"),
    ("bf16 takes twice the gpu memory of int8 here", "oom"),
    # near-misses: bad numbers said too, and a precision with no memory word
    ("with fp16 the loss becomes nan and the VRAM usage stays the same", "numerics"),
    ("fp16 training gives garbage output", "numerics"),
])
def test_a_precision_named_about_memory_is_a_memory_question(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "overflow"), [
    # the host's CPU or RAM taking what the card cannot hold is a spill, not a numeric overflow
    ("the default mode of dGPU with CPU overflow is faster", False),
    ("the model overflows into system RAM and gets slow", False),
    ("it overflowed to shared GPU memory", False),
    # near-misses: a numeric overflow, said plainly and with its dtype
    ("fp16 overflow in the attention scores", True),
    ("gradient overflow, skipping step", True),
])
def test_memory_spilling_to_the_host_is_no_numeric_overflow(kn, text: str, overflow: bool) -> None:
    from kb.symptom_text import classify

    assert ("numerics" in classify(text, kn)) is overflow


@pytest.mark.parametrize(("text", "branch"), [
    # a language model run, with no training named: its utilisation words are about serving
    ("GPU utilization is only 30% when I run LLMs locally", "inference"),
    # near-miss: an LLM being trained
    ("GPU utilization is only 30% when training LLMs", "gpu_util"),
])
def test_a_language_model_at_work_takes_its_utilisation_to_serving(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "branch"), [
    # a demo script is a trained model put to work
    ("the demo runs at around 4 fps, too slow; GPU utilization is low", "inference"),
    ("Is the expectation that the demo runs at around 4.3fps at 1280x720?", "inference"),
    # near-miss: a training run, whatever demo it comes with
    ("training the demo model is slow and GPU utilization is low", "gpu_util"),
])
def test_a_demo_takes_its_slowness_to_serving(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize(("text", "named"), [
    ("训练时第一张显卡的显存比其他显卡多很多，然后就 OOM 了", True),
    ("8卡训练，0号显卡显存爆了，其余显卡还有空间", True),
    # near-miss: one card named, nothing said of GPU 0
    ("单卡训练，显卡显存爆了", False),
])
def test_gpu0_named_in_chinese_names_the_ranks_on_gpu0(kn, text: str, named: bool) -> None:
    assert ("oom.ranks_share_gpu0" in name_causes(text, kn)) is named


@pytest.mark.parametrize(("text", "mentioned"), [
    # "第一张显卡" is the first of eight cards: an ordinal, not the setup's "一张显卡" (one card),
    # so its words stay in the text and name GPU 0
    ("使用8卡V100的服务器，第一张显卡显存会爆，提示 CUDA out of memory，但是剩余7张显卡都没有用满", True),
    ("两台机器训练，第一张卡 OOM 了，CUDA out of memory", True),
    # near-miss: one card is the setup, and nothing is said of GPU 0
    ("我只有一张显卡，CUDA out of memory", False),
])
def test_an_ordinal_card_is_no_setup(kn, text: str, mentioned: bool) -> None:
    facts, _branches, _notes = apply_text(kb.Facts(symptom_text=text), kn)
    assert ("oom.ranks_share_gpu0" in (facts.model_dump().get("mentions") or [])) is mentioned


@pytest.mark.parametrize(("text", "one"), [
    ("But the python script only use one GPU.", True),
    ("it will use single gpu only when the model training", True),
    ("only one gpu working while requesting 4", True),
    ("I tried train_distributed.py but the other gpus clearly don't get to run at all", True),
    ("train_distributed.py does not distribute to other gpus", True),
    ("the other GPUs are all idle", True),
    # near-misses: the setup stated ("I only use one GPU"), DataParallel's turn-taking, and a
    # sentence about the other GPUs that says nothing of their being idle
    ("My GPU is an RTX 2080Ti and I only use one GPU", False),
    ("only one GPU is used at a time", False),
    ("the other GPUs are faster", False),
])
def test_one_gpu_of_several_said_in_other_words(text: str, one: bool) -> None:
    assert ("only uses one gpu" in _norm_text(text)) is one


def test_one_gpu_of_several_names_the_single_process_launch(kn) -> None:
    rep = kb.diagnose({"symptom_text": "I have 4 GPUs but the training only uses one GPU, the other GPUs are idle"},
                      knowledge=kn)
    assert rep.branches[:1] == ["gpu_util"]
    assert rep.hypotheses[0].cause_id == "gpu_util.single_process_launch"


@pytest.mark.parametrize("text", [
    "I have 4 GPUs but only one GPU is working",
    "4 GPUs in one process: only one GPU is busy at a time while training",
])
def test_the_gpu_at_work_is_no_count_of_the_machines(text: str) -> None:
    # "only one GPU is working" counts the cards at work; the machine's four stay its count
    assert extract(text)["gpu"]["count"] == 4


def test_one_gpu_at_work_is_not_a_one_gpu_machine() -> None:
    text = "Does someone also had only one gpu running while training, even when setting the gpus argument to 4?"
    assert extract(text).get("gpu", {}).get("count") != 1


PRINT = "compile.print_in_forward"


@pytest.mark.parametrize(("text", "first"), [
    # a tool's diagnostic output the user looked at (tapnet's "JAX also prints out this",
    # ONNX Runtime's verbose logging, our words): no print inside the compiled code
    ("jax.jit inference is very slow and JAX also prints out this in the command line", False),
    ("torch.compile is slow; I turned on verbose logging of the session to see why", False),
    ("the compiled step recompiles, as jax's compile logging shows", False),
    # near-misses: prints and logging the user's code does inside the compiled model
    ("torch.compile graph breaks: we use a ton of logging throughout the model's forward", True),
    ("torch.compile is slow, the forward has a print() call", True),
])
def test_a_tools_diagnostic_output_is_no_print_in_the_compiled_code(
        kn, text: str, first: bool) -> None:
    rep = kb.diagnose({"symptom_text": text}, knowledge=kn)
    assert (rep.hypotheses[0].cause_id == PRINT) is first


def test_tensorrt_alone_is_not_tensorrt_llms_batch_cap(kn) -> None:
    # ONNX Runtime's TensorRT provider or Torch-TensorRT build engines for any model: their
    # slowness is no in-flight batching cap
    rep = kb.diagnose({"symptom_text": "inference with the TensorRT execution provider is much slower "
                                       "than with the CUDA provider"}, knowledge=kn)
    assert "inference.trtllm_max_batch_size" not in [h.cause_id for h in rep.hypotheses[:3]]
    # near-miss: TensorRT-LLM named, with its requests queueing
    rep = kb.diagnose({"symptom_text": "trtllm-serve throughput plateaus, requests queue at "
                                       "max_batch_size"}, knowledge=kn)
    assert rep.hypotheses[0].cause_id == "inference.trtllm_max_batch_size"


def test_calling_generate_names_no_batching(kn) -> None:
    # every Hugging Face inference calls model.generate (dolly-v1's report, our words): the call
    # named is no sign of requests served one at a time
    rep = kb.diagnose({"symptom_text": "model.generate(input_ids, max_new_tokens=256) takes 3 minutes "
                                       "per response on the GPU"}, knowledge=kn)
    assert "inference.batching" not in [h.cause_id for h in rep.hypotheses[:1]]
    # near-miss: prompts said to be sent one at a time are
    rep = kb.diagnose({"symptom_text": "vLLM serving is slow, we send the prompts one at a time"},
                      knowledge=kn)
    assert rep.hypotheses[0].cause_id == "inference.batching"


@pytest.mark.parametrize(("text", "appended"), [
    # a log pasted up to its last good lines (three finite losses), and words that say the loss
    # then went NaN
    ("Losses appear as nan in the middle of training", True),
    ("after the first step, the loss_rcnn_bbox values are Nan", True),
    ("训练到一半loss变为nan", True),
    # near-misses: another metric non-finite, a loss said to be fine, no NaN said
    ("the loss decreased; the grad norm is inf", False),
    ("loss is 0.5 and accuracy nan", False),
    ("the loss plateaus at 1.0", False),
])
def test_a_nan_said_after_a_finite_log_follows_its_losses(kn, text: str, appended: bool) -> None:
    facts = kb.Facts.model_validate({"symptom": "numerics", "symptom_text": text,
                                     "numerics": {"loss": [1.2211, 0.9601, 1.0016]}})
    out, _branches, notes = apply_text(facts, kn)
    assert (len(out.numerics.loss) == 4) is appended
    rep = kb.diagnose(out, knowledge=kn)
    # the logged losses alone say the run ended finite, which rules a divergence out
    assert ("numerics.lr_too_high" in {r.cause_id for r in rep.ruled_out}) is not appended
    assert any("after the pasted log's last loss" in n for n in notes) is appended


def test_a_log_that_shows_the_nan_is_left_as_it_is(kn) -> None:
    facts = kb.Facts.model_validate({"symptom": "numerics", "symptom_text": "the loss went nan",
                                     "numerics": {"loss": [1.2, 0.9, float("nan")]}})
    out, _branches, _notes = apply_text(facts, kn)
    assert len(out.numerics.loss) == 3


@pytest.mark.parametrize(("text", "branch"), [
    # the loss said in Chinese to be high with words between, and a rate of images in Chinese
    ("我拿同样的模型和训练集在两个框架下测试，发现swift的loss和梯度都很高，这是否合理", "numerics"),
    ("换了框架以后loss比之前高很多", "numerics"),
    ("为什么一开始有1000+图片/Sec，而后面越来越小", "gpu_util"),
    ("训练时每秒20张，太慢了", "gpu_util"),
])
def test_chinese_loss_high_and_image_rates_name_their_branch(kn, text: str, branch: str) -> None:
    assert _first_branch(kn, text) == branch


@pytest.mark.parametrize("text", [
    # near-misses: another quantity high beside the loss, a path with "/sec" in it
    "loss下降了，但是准确率很高",
    "图片保存在/sec目录",
])
def test_chinese_near_misses_read_neither(text: str) -> None:
    norm = _norm_text(text)
    assert "loss很高" not in norm and "images/s" not in norm
