"""Sizes and counts stated in prose (kb.prose_sizes) and what they let kb derive (kb.weights):
each reader answers only when the text states one value, and the reasoning uses the result as
support, never as proof."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.prose_sizes import (full_parameter, gpu_count, gpu_memory_gib, nodes, params_billion,
                             weight_bits)
from kb.weights import complete


@pytest.mark.parametrize(("text", "n"), [
    ("training on two nodes with 8 GPUs each", 2),
    ("2 nodes each have 2 3090s", 2),
    ("I have 3 nodes, and the bandwidth between nodes 1 + 2 is low", 3),
    ("one node (4 T4) is way faster than two nodes (4 T4 each)", 2),  # the troubled side
    ("a single-node run with 8 GPUs", 1),
    ("16-node cluster", 16),
    ("两台机器，每台 8 张卡", 2),
    ("单机多卡训练", 1),
    # near-misses: no count of nodes
    ("multi-node training hangs", None),
    # one node said beside several without a number: the trouble is on the several
    ("any multi-node job dies at NCCL bootstrap. Single-node is unaffected.", None),
    # one node of eight GPUs is no node count; two GPU nodes are two nodes
    ("deploy the job unmodified on an 8-GPU node", None),
    ("training on 2 GPU nodes", 2),
    ("node 3 is slow", None),
    ("the nodes are connected by InfiniBand", None),
    # a product's number before "服务器" is no count of servers (one server of eight A800s)
    ("运行环境配置： 8卡A800服务器 python 3.9", None),
    ("两台服务器，每台8卡A800", 2),
    # the yardstick of a comparison is not the job's size
    ("training is 8 times slower than on single node with 8 gpu", None),
    ("两台机器比单机慢", 2),
    ("it is slower than the single machine run", None),
])
def test_nodes(text: str, n: int | None) -> None:
    assert nodes(text) == n


@pytest.mark.parametrize(("text", "b"), [
    ("evaluation of the 70b model", 70.0),
    ("meta-llama/Llama-2-7b-hf", 7.0),
    ("Qwen2.5-14B-Instruct-GPTQ-Int4", 14.0),
    ("a 1.5B model", 1.5),
    ("a 65 billion parameter model", 65.0),
    # near-misses
    ("Mixtral 8x7B", None),             # a mixture of experts: not 8 x 7
    ("A100 80GB", None),
    ("Llama-2-7b and Llama-2-13b", None),  # two models: which one?
    ("0x1b", None),
])
def test_params_billion(text: str, b: float | None) -> None:
    assert params_billion(text) == b


@pytest.mark.parametrize(("text", "bits"), [
    ("Qwen-14B GPTQ", 4), ("load_in_4bit=True", 4), ("an int8 checkpoint", 8),
    ("kept in fp32", 32), ("bf16 weights", None), ("int4 vs int8", None),
    # llama.cpp's GGUF quantization names (the nominal bits of its k-quants)
    ("mistral-7b-instruct-v0.2.Q5_K_M.gguf", 5), ("llama-2-13b.Q4_K_M.gguf", 4),
    ("Q8_0", 8), ("phi-2.Q6_K.gguf", 6), ("Q3_K_S and Q5_K_M", None),
])
def test_weight_bits(text: str, bits: int | None) -> None:
    assert weight_bits(text) == bits


@pytest.mark.parametrize(("text", "gib"), [
    ("I used 8*80G GPUs", 80),
    ("on an A100 80GB PCIe", 80),
    ("RTX 3090 with 24 GB of VRAM", 24),
    ("my 16GB card", 16),
    ("显存 24G", 24),
    # the Chinese copula between the word and the size, the word glued to "GPU"
    ("我的机器的系统是centos7，GPU显存为22G。", 22),
    ("显存是24GB", 24),
    ("host RAM 64GB, GPU 24GB", 24),
    # near-misses: host memory, files, disks
    ("the machine has 512GB RAM", None),
    ("a 200GB checkpoint file", None),
    ("24GB 3090 and 48GB A6000", None),  # two cards: which one?
    # the tail of a decimal is no size: Paddle's allocator prints six decimals
    ("Out of memory error on GPU 0. Cannot allocate 1.531250GB memory on GPU 0", None),
])
def test_gpu_memory(text: str, gib: int | None) -> None:
    assert gpu_memory_gib(text) == gib


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_a_plausible_value_or_none(text: str) -> None:
    n, b, bits, g = nodes(text), params_billion(text), weight_bits(text), gpu_memory_gib(text)
    assert n is None or 1 <= n <= 4096
    assert b is None or 0.1 <= b <= 2000
    assert bits in (None, 2, 3, 4, 5, 6, 8, 32)
    assert g is None or 2 <= g <= 288


@pytest.mark.parametrize(("facts", "frac", "exceeds"), [
    ({"training": {"model_params_billion": 70}, "gpu": {"memory_total_mib": 81920}}, 1.63, True),  # 140e9 B = 133,514 MiB
    # over the tensor-parallel degree
    ({"training": {"model_params_billion": 70}, "gpu": {"memory_total_mib": 81920},
      "inference": {"tensor_parallel_size": 8}}, 0.2, None),
    # bits per weight: a 4-bit 70B model is 35 GB
    ({"training": {"model_params_billion": 70, "weight_bits": 4},
      "gpu": {"memory_total_mib": 49152}}, 0.68, None),
    ({"training": {"model_params_billion": 7}, "numerics": {"dtype": "fp32"},
      "oom": {"total_capacity_mib": 24576}}, 1.09, True),
])
def test_weights_fraction(facts: dict, frac: float, exceeds: bool | None) -> None:
    complete(facts)
    assert facts["oom"]["weights_fraction"] == pytest.approx(frac, abs=0.01)
    assert facts["oom"].get("model_exceeds_card") is exceeds


def test_weights_need_both_sizes_and_never_override() -> None:
    only_model = {"training": {"model_params_billion": 70}}
    assert complete(only_model) == [] and "oom" not in only_model
    stated = {"training": {"model_params_billion": 70}, "gpu": {"memory_total_mib": 81920},
              "oom": {"weights_fraction": 0.5}}
    assert complete(stated) == [] and stated["oom"]["weights_fraction"] == 0.5


def test_the_reasoning_uses_the_sizes_in_the_words() -> None:
    rep = kb.diagnose(symptom="CUDA out of memory loading a 70B model on one A100 80GB")
    assert any(w.startswith("derived: oom.model_exceeds_card") for w in rep.warnings)
    top = rep.hypotheses[0]
    assert top.cause_id == "oom.startup_too_large"
    assert not rep.findings  # support, never proof: the job may shard further than kb knows
    # the same words with a 4-bit model that fits: no support from the weights
    small = kb.diagnose(symptom="CUDA out of memory loading a 70B AWQ model on one A100 80GB")
    assert not any("model_exceeds_card" in w for w in small.warnings)
    ev = {h.cause_id: h.evidence for h in small.hypotheses}
    assert top.evidence > ev["oom.startup_too_large"]


def test_the_setups_sizes_name_no_branch() -> None:
    # "40gb of vram" states the card's memory (a fact), it does not say memory ran out
    rep = kb.diagnose(symptom="the DataLoader worker died with a bus error although I have "
                              ">40gb of vram")
    assert rep.branches and rep.branches[0] != "oom"
    assert any("gpu.memory_total_mib = 40960" in w for w in rep.warnings)
    # the same word about the problem still names it
    rep = kb.diagnose(symptom="vram keeps growing until the job dies")
    assert rep.branches[0] == "oom"


@pytest.mark.parametrize(("text", "n"), [
    ("I used 8*80G GPUs", 8), ("vLLM TP 2 on 2x RTX 4090", 2), ("two 4090s", 2),
    ("4090 24GB * 6", 6), ("3 A6000 in a devcontainer", 3), ("目前用8*4090跑qwen", 8),
    ("我用4张4090部署了", 4), ("one GPU is faster than two GPUs", 2), ("a single 4090", 1),
    ("trained on 8 V100s", 8),
    # near-misses: a product named, no count
    ("Llama-2 7B on my RTX 4090", None), ("A100 80GB", None), ("epoch 2 of 8", None),
    # a model number after its family is no count
    ("a server with multiple RTX 4090 GPUs", None), ("GTX 1080 gpu", None),
    # nor a GeForce number alone before "GPU"; a count before it still is one
    ("utilises only 5% of NVIDIA 3090 GPU", None), ("my 2080 card", None),
    ("8 1080 GPUs", 8), ("2 2080ti GPUs", 2), ("on 4096 GPUs", 4096),
    # one card and two cards in Chinese; "单机多卡" (one machine, many cards) counts none
    ("单卡训练", 1), ("双卡跑qwen", 2), ("单机多卡", None),
    # a count straight before 卡 ("两卡", "四卡", "8卡"); not a card's memory, a model number
    # before 显卡, or a decimal
    ("两卡就卡住", 2), ("四卡推理", 4), ("8卡训练很慢", 8), ("24G卡", None), ("3090显卡", None),
    ("2.5卡", None),
    # a long number is no count followed by a model number ("996" + "1472")
    ("a bf16 array of size 9961472 on 2 GPUs", 2),
    # an image size is no count ("512x512" is not 512 cards of a product "x512")
    ("my 3080 12GB with euler_a, 512x512, from ~10.5it/s", None), ("1024x1024 images on 4 GPUs", 4),
    ("2x4090", 2), ("A100x8", 8),
    # one card beside several without a number: the trouble is on the several, count unknown
    ("training on a single card works, on multi 3090 cards rank 0 runs out of memory", None),
    ("single-GPU is fine but multi-GPU hangs", None), ("单卡可以跑，多卡就 OOM", None),
    ("one GPU; the other GPUs are idle", 1),
    # an ordinal names one card of several, not how many there are
    ("第一张显卡显存会爆", None), ("第 2 张卡没有用上", None), ("第12张卡", None), ("12张卡", 12),
])
def test_gpu_count(text: str, n: int | None) -> None:
    assert gpu_count(text) == n


@pytest.mark.parametrize(("text", "full"), [
    ("full fine-tuning of a 7B model", True), ("full-parameter SFT", True),
    ("pretraining from scratch", True), ("全参微调", True),
    ("QLoRA fine-tuning", False), ("peft adapters", False),
    ("fine-tuning a 7B model", None),              # does not say which
    ("full fine-tune vs LoRA comparison", None),   # says both
])
def test_full_parameter(text: str, full: bool | None) -> None:
    assert full_parameter(text) is full


def test_full_training_state_counts_gradients_and_adam() -> None:
    # 5.7B x 16 bytes = 91.2e9 B = 86,975 MiB against 24 GiB: 3.54 x the card
    facts = {"training": {"model_params_billion": 5.7, "full_parameter": True},
             "gpu": {"memory_total_mib": 24576}}
    complete(facts)
    assert facts["oom"]["weights_fraction"] == pytest.approx(0.44, abs=0.01)
    assert facts["oom"]["training_state_fraction"] == pytest.approx(3.54, abs=0.01)
    assert facts["oom"]["model_exceeds_card"] is True
    # ZeRO-3 over 8 ranks splits it: 0.44 of the card
    facts = {"training": {"model_params_billion": 5.7, "full_parameter": True, "zero_stage": 3},
             "distributed": {"world_size": 8}, "gpu": {"memory_total_mib": 24576}}
    complete(facts)
    assert facts["oom"]["training_state_fraction"] == pytest.approx(0.44, abs=0.01)
    assert "model_exceeds_card" not in facts["oom"]
    # adapters, or a serving engine: only the weights count
    for extra in ({"training": {"full_parameter": False}}, {"inference": {"engine": "vllm"}}):
        facts = {"training": {"model_params_billion": 5.7}, "gpu": {"memory_total_mib": 24576}}
        for group, values in extra.items():
            facts.setdefault(group, {}).update(values)
        complete(facts)
        assert "training_state_fraction" not in facts["oom"]


def test_full_fine_tuning_in_the_words_supports_too_large() -> None:
    full = kb.diagnose(symptom="full fine-tuning a 5.7B model on one 24GB card: CUDA out of memory")
    lora = kb.diagnose(symptom="LoRA fine-tuning a 5.7B model on one 24GB card: CUDA out of memory")
    assert full.hypotheses[0].cause_id == "oom.startup_too_large"
    ev = {h.cause_id: h.evidence for h in lora.hypotheses}
    assert full.hypotheses[0].evidence > ev["oom.startup_too_large"]


@pytest.mark.parametrize(("text", "units"), [
    ("Everything works fine on a single-node machine. We then move to a multi-node cluster and get an error.", {"node"}),
    ("Any multi-node job dies at NCCL bootstrap. Single-node is unaffected.", {"node"}),
    ("I checked single node training and it works fine. It fails on 2 nodes.", {"node"}),
    ("I have successfully run the training code in a single card. On multi 3090 cards it runs out of memory.", {"gpu"}),
    ("The error does not happen when I run training with a single GPU; with 4 GPUs it does.", {"gpu"}),
    ("单卡可以，多卡就 OOM", {"gpu"}),
    ("单卡正常，两卡就有问题，卡住不动", {"gpu"}),
    # near-misses: one unit alone, no several to compare with; the one unit being the slow one
    ("works fine on a single GPU", set()),
    ("I am running on a single GPU and it is slow", set()),
    ("slow on one node, ok on 2 nodes", set()),
    ("单机多卡训练正常", set()),
])
def test_works_alone(text: str, units: set[str]) -> None:
    from kb.prose_sizes import works_alone

    assert works_alone(text) == units


def test_working_alone_names_what_the_several_add() -> None:
    # the network between nodes, not a rank out of step
    rep = kb.diagnose(symptom="Training works fine on a single node, but across 2 nodes it hangs at init.")
    assert rep.branches[0] == "nccl"
    assert [h.cause_id for h in rep.hypotheses][0] in {
        "nccl.socket_ifname_wrong", "nccl.connect_refused", "nccl.roce_gid_index"}
    # the extra ranks' memory on GPU 0, not a model too large for the card
    rep = kb.diagnose(symptom="I have successfully run training on a single card, but on multiple cards "
                              "it fails with CUDA out of memory.")
    assert rep.hypotheses[0].cause_id == "oom.ranks_share_gpu0"



@pytest.mark.parametrize(("facts", "frac"), [
    # an 8B model in bf16 (16e9 B = 15,259 MiB) split TP=8 over A100-40GB: the name's own size
    ({"training": {"model_params_billion": 8}, "gpu": {"name": "NVIDIA A100-SXM4-40GB"},
      "inference": {"tensor_parallel_size": 8}}, 0.37),
    # no size in the name: the product's smallest variant (an A100 is 40 or 80 GB)
    ({"training": {"model_params_billion": 13}, "gpu": {"name": "NVIDIA A100"},
      "inference": {"tensor_parallel_size": 4}}, 0.61),
    # llama.cpp's layer split of a 7B Q5 model over Quadro P6000 (24 GB)
    ({"training": {"model_params_billion": 7, "weight_bits": 5}, "gpu": {"name": "Quadro P6000"},
      "inference": {"gpus_per_replica": 8}}, 0.17),
    # a measured capacity wins over the name
    ({"training": {"model_params_billion": 70}, "gpu": {"name": "NVIDIA H100", "memory_total_mib": 81559},
      "inference": {"tensor_parallel_size": 4}}, 1.64),
])
def test_unsplit_weights_fraction(facts: dict, frac: float) -> None:
    notes = complete(facts)
    assert facts["inference"]["unsplit_weights_fraction"] == pytest.approx(frac, abs=0.01)
    assert any(n.startswith("inference.unsplit_weights_fraction") for n in notes)


@pytest.mark.parametrize("facts", [
    # not split: nothing to say
    {"training": {"model_params_billion": 8}, "gpu": {"name": "NVIDIA A100-SXM4-40GB"},
     "inference": {"tensor_parallel_size": 1}},
    # a GPU whose memory kb does not know
    {"training": {"model_params_billion": 8}, "gpu": {"name": "AMD Instinct MI300X"},
     "inference": {"tensor_parallel_size": 8}},
    # stated already: never overridden
    {"training": {"model_params_billion": 8}, "gpu": {"memory_total_mib": 40960},
     "inference": {"tensor_parallel_size": 8, "unsplit_weights_fraction": 0.9}},
])
def test_unsplit_weights_fraction_near_misses(facts: dict) -> None:
    before = dict(facts["inference"])
    complete(facts)
    assert facts["inference"].get("unsplit_weights_fraction") == before.get("unsplit_weights_fraction")


def test_a_small_model_split_over_eight_gpus_is_named() -> None:
    rep = kb.diagnose(inputs=["vllm serve meta-llama/Meta-Llama-3-8B-Instruct --tensor-parallel-size 8\n"],
                      symptom="GPU util stays below 50% on 8x A100-40G while serving; tokens are slow")
    assert any(w.startswith("derived: inference.unsplit_weights_fraction = 0.37") for w in rep.warnings)
    first = (rep.findings + rep.hypotheses)[0]
    assert first.cause_id == "inference.split_small_model"


@pytest.mark.parametrize(("text", "stated"), [
    ("with multiple gpus it takes around 400 seconds for my dataset", True),
    ("This code takes more than 15 seconds to run, while numpy is instantaneous", True),
    ("1 epoch almost takes half an hour", True),
    ("Training time: 20 minute", True),
    ("问了模型你好，返回日志用时为16s", True),
    ("已经运行了5分钟,一条数据也没有跑出来", True),
    ("the training went on for 12 hours but still didn't stop", True),
    ("it has been running for 3 days", True),
    # near-miss: epochs counted, not time
    ("I trained for 100 epochs", False),
    # near-misses: a count of steps or items, a size, a time of day, a wish
    ("the loss takes 300 steps to go down", False),
    ("it takes 24GB of memory", False),
    ("at 5 pm the job died", False),
    ("it should take less time", False),
    # a generation's or a response's time is a server's, left to its own words
    ("Generation time: 20 minute", False),
])
def test_how_long_stated(text: str, stated: bool) -> None:
    from kb.prose_sizes import how_long_stated

    assert how_long_stated(text) is stated


def test_a_duration_alone_reads_as_slowness_and_yields_to_other_words() -> None:
    # a reported time is a time found too long: the training loop's branch, in its weakest words
    rep = kb.diagnose(symptom="with 7 GPUs one epoch takes 350 secs, with 1 GPU 300 secs")
    assert rep.branches[:1] == ["gpu_util"]
    # any other branch's word decides: a hang, a NaN
    assert kb.diagnose(symptom="the job hangs after it takes 5 minutes to load").branches[:1] == ["nccl"]
    assert kb.diagnose(symptom="the loss is nan after it takes 2 hours").branches[:1] == ["numerics"]


@given(st.text(max_size=400))
@settings(max_examples=200, deadline=None)
def test_how_long_stated_never_raises(text: str) -> None:
    from kb.prose_sizes import how_long_stated

    assert how_long_stated(text) in (True, False)


@pytest.mark.parametrize(("text", "slower"), [
    ("multi-node training will need much more step time than single node training", True),
    ("on 2 nodes it is 3x slower than on a single node", True),
    ("多节点训练比单节点慢一倍", True),
    # near-misses: no several nodes in play, or the one node is what is slow
    ("it is slower than a single node should be", False),
    ("a single node is slower than two nodes", False),
    ("multi-node training works; single node is fine too", False),
])
def test_slower_across_nodes(text: str, slower: bool) -> None:
    from kb.prose_sizes import slower_across_nodes

    assert slower_across_nodes(text) is slower


@given(st.text(max_size=400))
@settings(max_examples=200, deadline=None)
def test_slower_across_nodes_never_raises(text: str) -> None:
    from kb.prose_sizes import slower_across_nodes

    assert slower_across_nodes(text) in (True, False)


@pytest.mark.parametrize(("text", "spans"), [
    # the host's memory listed with its size is the setup
    ("System environment: CPU : i9 13900KS, RAM : 64G, GPU : RTX 4080 16G", ["RAM : 64G", "GPU : RTX 4080 16G"]),
    ("Memory: 128 GB", ["Memory: 128 GB"]),
    ("内存：64G", ["内存：64G"]),
    # near-misses: memory said to fill up is the symptom
    ("ram usage keeps growing to 64G", []),
    ("16G内存很快就占满了", []),
])
def test_host_memory_listed_is_setup(text: str, spans: list[str]) -> None:
    from kb.prose_sizes import setup_spans

    assert sorted(text[a:b] for a, b in setup_spans(text)) == sorted(spans)


def test_a_listed_host_memory_names_no_out_of_memory() -> None:
    words = "I get some error when I train. System environment: CPU : i9 13900KS, RAM : 64G, OS : Windows 11"
    why = kb.diagnose(symptom=words).branch_reasons
    assert not any(r.startswith("symptom_text:") for r in why.get("oom", [])), why
    # near-miss: the host's memory said to run out
    assert kb.diagnose(symptom="RAM : 64G, and the RAM fills up until the process is killed").branches[:1] == ["oom"]
