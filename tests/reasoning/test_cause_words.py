"""The causes' own words (``words:`` in each cause file), table-driven over the knowledge: each
word names its cause in a sentence, no word names two causes of one branch, inflections are
heard but short words stay exact, and words rank a cause without ever confirming it."""

from __future__ import annotations

from collections import defaultdict

import pytest

import kb
from kb.loaded import load_knowledge
from kb.symptom_text import name_causes

KN = load_knowledge()
WORDS = [(c.id, w) for c in KN.causes.values() for w in list(c.words.en) + list(c.words.zh)]


@pytest.mark.parametrize(("cause_id", "word"), WORDS, ids=[f"{c}:{w}" for c, w in WORDS])
def test_each_word_names_its_cause(cause_id: str, word: str) -> None:
    sentence = f"since yesterday we see {word} on the cluster" if word.isascii() else f"从昨天起{word}。"
    assert cause_id in name_causes(sentence, KN)


def test_no_word_names_two_causes_of_one_branch() -> None:
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in KN.causes.values():
        for w in list(c.words.en) + list(c.words.zh):
            seen[(c.branch, " ".join(w.lower().replace("-", " ").replace("_", " ").split()))].add(c.id)
    shared = {k: sorted(v) for k, v in seen.items() if len(v) > 1}
    assert not shared, shared


@pytest.mark.parametrize(("word", "text", "heard"), [
    ("hang", "all ranks are hanging", True),
    ("hang", "it hangs at step 3", True),
    ("overheat", "the card is overheating", True),
    ("diverge", "the loss is diverging", True),
    ("diverge", "it diverged twice", True),
    ("recompile", "recompiling every step", True),
    ("inf", "we infer with the model", False),   # short words stay exact
    ("oom", "rooms and zoom", False),
    ("hang", "a hangar", False),                 # not a suffix we hear
    ("rank", "ranked 3rd", True),
])
def test_inflections(word: str, text: str, heard: bool) -> None:
    from kb.symptom_text import _ascii_word, _norm

    assert bool(_ascii_word(word).search(_norm(text))) is heard


def test_inflections_do_not_stretch_short_words() -> None:
    # "inf" (numerics) must not hear "infer"/"inference"; "oom" must not hear "zoom"
    from kb.symptom_text import classify

    assert "numerics" not in classify("we infer with the model", KN)
    assert "oom" not in classify("zoom in on the chart", KN)
    assert "nccl" in classify("all ranks are hanging", KN)
    assert "numerics" in classify("the loss is diverging", KN)


def test_words_rank_but_never_confirm() -> None:
    # every cause's words alone (no facts): the cause may lead the hypotheses, never a finding
    for c in KN.causes.values():
        if not c.words.en:
            continue
        rep = kb.diagnose(symptom=f"{c.words.en[0]}", lang="en")
        assert not rep.findings, (c.id, [f.cause_id for f in rep.findings])


def test_two_words_of_a_cause_weigh_more_than_one() -> None:
    from kb.symptom_text import apply_text
    from kb.facts import Facts

    a = KN.causes["oom.host_ram_oom"]
    b = KN.causes["oom.other_process_on_gpu"]
    text = f"{a.words.en[0]} and {a.words.en[1]}; also {b.words.en[0]}"
    facts, _, _ = apply_text(Facts(symptom="oom", symptom_text=text), KN)
    assert facts.mentions.count(a.id) == 2 and facts.mentions.count(b.id) == 1
    rep = kb.diagnose({"symptom": "oom", "mentions": [a.id, a.id, a.id, b.id]})
    ev = {h.cause_id: h.evidence for h in rep.hypotheses}
    # capped at two: three words count as two
    assert ev[a.id] - ev[b.id] == pytest.approx(1.0)


@pytest.mark.parametrize(("text", "named"), [
    ("the machine ran short of RAM", True),
    ("48 GB of VRAM is full", False),       # a whole word only: VRAM is the card's
    ("the program stops", False),
])
def test_ram_is_host_memory(text: str, named: bool) -> None:
    assert ("oom.host_ram_oom" in name_causes(text, KN)) is named


@pytest.mark.parametrize(("text", "cause", "named"), [
    # a generated image or video all black: NaN pixels, most often an fp16 VAE/UNet overflow
    # (hao-ai-lab/FastVideo#107, the SDXL VAE's fp16 NaNs)
    ("the demo result looks strange, it is all black", "numerics.fp16_overflow", True),
    ("SDXL gives black images with the refiner", "numerics.fp16_overflow", True),
    ("生成的视频全黑", "numerics.fp16_overflow", True),
    # "not using the GPU" in Chinese, said of a model server and of training
    ("怀疑是推理没有使用gpu？", "inference.layers_on_cpu", True),
    ("训练好像没有使用 GPU", "gpu_util.no_gpu_in_use", True),
    # the CPU said to be the only device at work, the GPU said to go unused (whisper apps,
    # local chat apps whose CUDA runtime was missing)
    ("Looks like Jan is using only CPU, and it is very slow", "gpu_util.no_gpu_in_use", True),
    ("Both Tiny and Large-v3-turbo does not utilize GPU", "gpu_util.no_gpu_in_use", True),
    # near-misses: a CPU share said, a GPU said to be used well
    ("GPU util is fine, but preprocessing is using only one CPU core", "gpu_util.no_gpu_in_use", False),
    ("it does utilize the GPU, but only at 40 %", "gpu_util.no_gpu_in_use", False),
    # near-misses: a black background, a GPU said to be in use
    ("the mask has a black background", "numerics.fp16_overflow", False),
    ("推理已经使用gpu了", "inference.layers_on_cpu", False),
    # "warmup" named is the warm-up a run has; its absence is the cause's
    ("the loss spikes in the first 200 steps; I train with no warmup", "numerics.loss_spike_no_warmup", True),
    ("训练没有预热，前几百步 loss 出现尖峰", "numerics.loss_spike_no_warmup", True),
    ("warmup_steps=2000 and the loss spikes at step 30k", "numerics.loss_spike_no_warmup", False),
    ("推理前先预热模型 10 秒", "numerics.loss_spike_no_warmup", False),
    # the card's memory taken as a module is imported: a pool taken at the first operation
    ("Upon importing nemos into my python script, the GPU has 18Gb of memory used.",
     "oom.framework_preallocation", True),
    ("When importing craftax functions such as the one below, my GPU memory immediately fills up",
     "oom.framework_preallocation", True),
    ("I get an error when importing torch", "oom.framework_preallocation", False),
    ("GPU memory fills up after 100 steps", "oom.framework_preallocation", False),
    # "keeps on increasing" reads as "keeps increasing"; "keep on trying" names nothing
    ("After each batch the GPU memory allocation keeps on increasing.", "oom.tensors_not_released", True),
    ("I keep on trying smaller batches but it still runs out of memory", "oom.tensors_not_released", False),
    # NaN said of the gradients, not of the grad norm (every gradient of an overflowed loss)
    ("F.normalize(p=1) gives NaN gradients. Manually dividing by the sum works.",
     "numerics.log_sqrt_at_zero", True),
    ("The gradients will become NaN sometimes", "numerics.log_sqrt_at_zero", True),
    ("I found nan when backward in very early iter when training", "numerics.log_sqrt_at_zero", True),
    ("grad norm is nan. Do not update model", "numerics.log_sqrt_at_zero", False),
    ("the grad_norm is NaN and the loss is normal", "numerics.log_sqrt_at_zero", False),
    ("the gradients are not nan, only the loss is", "numerics.log_sqrt_at_zero", False),
    # a setting or a time word said in passing names no cause: pin_memory is no worker count,
    # "immediately" no start-up (an import or a first step is as immediate)
    ("pin_memory=True, batch size 64 and GPU utilisation stays at 20 %", "gpu_util.dataloader_workers", False),
    ("num_workers=0 and GPU utilisation stays at 20 %", "gpu_util.dataloader_workers", True),
    ("it runs out of memory immediately", "oom.startup_too_large", False),
    ("CUDA out of memory when loading the model with from_pretrained", "oom.startup_too_large", True),
])
def test_words_that_name_a_cause(text: str, cause: str, named: bool) -> None:
    assert (cause in name_causes(text, KN)) is named


@pytest.mark.parametrize(("text", "branch"), [
    # a language model run or served, no training named: utilisation words are about serving
    ("Low GPU utilization when running Deepseek-r1-distill-llama-8B", "inference"),
    ("ollama uses only the CPU and the GPU usage stays at 0%", "inference"),
    # near-misses: the same model trained, or no model named
    ("GPU utilization is low when fine-tuning Llama-3-8B with LoRA", "gpu_util"),
    ("Low GPU utilization when running my ResNet", "gpu_util"),
    ("我用 qwen 微调的时候 GPU 利用率很低", "gpu_util"),
])
def test_a_training_branch_yields_to_serving(text: str, branch: str) -> None:
    rep = kb.diagnose(symptom=text)
    assert rep.branches[0] == branch
    if branch == "inference":
        assert any("read as inference" in w for w in rep.warnings)


@pytest.mark.parametrize(("text", "branch"), [
    # a server's load said never to finish across two GPUs, its devices "occupied" meanwhile
    # (vllm-project/vllm#3974): a hang said at length, not a question about memory
    ("The model is not loaded at all with tensor_parallel_size=2, the loading is never finished. "
     "I can see that the 2 GPU devices are occupied. The llm inference is quite fast on one GPU. "
     "Is it something due to nccl?", "nccl"),
    # near-miss: the same server's memory occupied, nothing said to hang
    ("The llm inference server occupies 70GB on each of the 2 GPU devices", "oom"),
])
def test_a_serving_load_that_never_finishes_is_a_hang(text: str, branch: str) -> None:
    assert kb.diagnose(symptom=text).branches[0] == branch


def test_several_gpus_stuck_where_one_works_reads_as_their_path() -> None:
    # several GPUs of one machine stuck where one works: the path between them (the cause's own
    # symptom). The LLaVA/DeepSpeed thread, fixed with NCCL_P2P_DISABLE=1, with its pasted
    # command, script and environment, and left out of the past incidents
    from pathlib import Path

    import yaml

    case = Path(__file__).parents[1] / "heldout" / "nccl" / "c-transformers-deepspeed-p2p-stuck"
    inc = yaml.safe_load((case / "incident.yaml").read_text())
    rep = kb.diagnose(symptom=inc["words"], inputs=[case / a for a in inc["artifacts"]],
                      without_precedents=[inc["source"]])
    assert not rep.findings and rep.hypotheses[0].cause_id == "nccl.pcie_p2p_broken"


def test_one_node_said_to_work_is_no_peer_path() -> None:
    # near-miss: several nodes hang where one works: the network between nodes, not PCIe P2P
    rep = kb.diagnose(symptom="training gets stuck across 2 nodes but works on a single node")
    assert rep.hypotheses and rep.hypotheses[0].cause_id != "nccl.pcie_p2p_broken"


TGI = ("docker run --gpus all --shm-size 1g -p 8080:80 ghcr.io/huggingface/text-generation-inference:1.0 "
       "--model-id $model --num-shard 4 --quantize bitsandbytes\n")


@pytest.mark.parametrize(("text", "inputs", "branch"), [
    # utilisation words beside a serving engine's launch command: the server's GPUs
    ("GPU utilization is around 50% with quantization compared to 99% without", TGI, "inference"),
    # a model's hub name says how it was trained, not that this job trains
    ("Model: OpenAssistant/pythia-12b-sft-v8-7k-steps. GPU utilization is around 50%", TGI, "inference"),
    # near-misses: the same words beside a training launch, or a text that trains
    ("GPU utilization is around 50% with quantization",
     "torchrun --nproc_per_node 4 train.py --bf16\n", "gpu_util"),
    ("GPU utilization is around 50% while we fine-tune with LoRA", TGI, "gpu_util"),
])
def test_a_training_branch_yields_to_a_serving_setup(text: str, inputs: str, branch: str) -> None:
    rep = kb.diagnose(symptom=text, inputs=[inputs])
    assert rep.branches[0] == branch
    assert any("setup places it there" in w for w in rep.warnings) is (branch == "inference")


@pytest.mark.parametrize(("text", "branch"), [
    # PyTorch/XLA compiles each step's lazy graph: a slow loop there is the compiler's first
    ("EfficientNet training with PyTorch XLA takes extremely slow, ~35 sec per epoch before, 10 min now",
     "compile"),
    ("my torch_xla model runs so slow, the GPU utilization was fine before", "compile"),
    # near-miss: a TPU alone names no compiler (JAX and TensorFlow starve on input there too)
    ("training on TPU slows down by 40% after this change, the GPU utilization is low", "gpu_util"),
    # near-misses: the same loop starved of data, or no XLA named
    ("training on TPU is slow, the dataloader cannot keep up", "gpu_util"),
    ("EfficientNet training takes extremely slow, the GPU utilization is low", "gpu_util"),
    # the compilers' other names: XLA itself, stable-fast, OneDiff, a jitted function
    ("some of my functions are not implemented on xla, so my model runs so slow", "compile"),
    ("applying stable-fast made my application much slower than without it", "compile"),
    ("the jitted train step is very slow, slower than numpy", "compile"),
    # near-miss: an XLA job starved of data is the loop's
    ("with xla the training is slow because the dataloader cannot keep up", "gpu_util"),
])
def test_a_training_loop_on_xla_yields_to_the_compiler(text: str, branch: str) -> None:
    rep = kb.diagnose(symptom=text)
    assert rep.branches[0] == branch


@pytest.mark.parametrize(("text", "branch"), [
    # a precision named in a text about speed, no sign of bad numbers: the loop's speed
    ("the mixed precision training version didn't get faster much", "gpu_util"),
    ("with fp16 the step time is 35 ms longer: the vocab is not a multiple of 8", "gpu_util"),
    ("fp16 的训练速度反而比 fp32 慢", "gpu_util"),
    ("a significant difference in code execution time with wandb, using Mixed Precision", "gpu_util"),
    # near-misses: the same precision with its numbers going wrong
    ("with fp16 the loss goes nan after 300 steps and training slows down", "numerics"),
    ("mixed precision training diverges", "numerics"),
])
def test_a_precision_said_of_speed_yields_to_the_loop(text: str, branch: str) -> None:
    assert kb.diagnose(symptom=text).branches[0] == branch


@pytest.mark.parametrize(("text", "branch"), [
    # a server that hangs or crashes across its GPUs, no word of speed: a collective problem
    ("vLLM with tensor-parallel-size=4 hangs at NCCL communicator init", "nccl"),
    ("Crash with `--tensor-parallel-size` in the docker container, vllm dies with SIGBUS", "nccl"),
    # near-misses: the same server slow, or crashing under concurrent load
    ("vLLM with tensor-parallel-size=4 is slow, TTFT is 10 s", "inference"),
    ("the lmdeploy server crashes at concurrency 4", "inference"),
])
def test_serving_that_hangs_yields_to_the_collective_branch(text: str, branch: str) -> None:
    assert kb.diagnose(symptom=text).branches[0] == branch


@pytest.mark.parametrize(("sentence", "cause_id"), [
    # words every report of the branch may hold, whatever its cause: a model's embeddings, its
    # input data, a package's name, a log path, the branch's own subject
    ("the embedding values come back as NaN", "numerics.embedding_padding"),
    ("the loss is nan, my input data is a CSV of sensor readings", "numerics.nonfinite_input"),
    ("generation is slow although flash-attn is installed", "inference.prefill_bound"),
    ("token generation is slower than in llama.cpp", "inference.decode_bound"),
    ("NCCL hangs; the log loads libnccl.so.2 from the conda env", "nccl.version_mismatch"),
    # an API every Hugging Face job calls, a library every vision pipeline imports
    ("CUDA out of memory in the first step after AutoModel.from_pretrained(name)", "oom.startup_too_large"),
    ("GPU utilization is low, we read the frames with opencv", "gpu_util.cpu_bound"),
])
def test_generic_words_name_no_cause(sentence: str, cause_id: str) -> None:
    assert cause_id not in name_causes(sentence, KN)


@pytest.mark.parametrize(("sentence", "cause_id"), [
    # near-misses: the words specific to each cause still name it
    ("NaN gradients in the embedding rows at padding_idx", "numerics.embedding_padding"),
    ("there is NaN in the input data before the first step", "numerics.nonfinite_input"),
    ("prefill is slow for 32k prompts", "inference.prefill_bound"),
    ("decode is memory-bound at batch size 1", "inference.decode_bound"),
    ("the two nodes have different nccl versions", "nccl.version_mismatch"),
    ("out of memory when loading the model: the model is too large for one card", "oom.startup_too_large"),
    ("GPU utilization is low, image decoding with cv2 keeps the CPU at 100%", "gpu_util.cpu_bound"),
])
def test_specific_words_still_name_their_cause(sentence: str, cause_id: str) -> None:
    assert cause_id in name_causes(sentence, KN)
