"""Every item of the seed SOP (commands, flags, env vars, thresholds, triggers, rules, the
reference index) is findable in `kb export json`, the auditable form of the knowledge."""

from __future__ import annotations

import json

import pytest

from kb.exports.graph_json import export

# Facts, numbers, commands and URLs carried over from ../shared/seed/triage-sop.zh.md,
# written as they appear in the seed (whitespace-normalised).
SEED_ITEMS = [
    # §2 low GPU utilisation
    "nvidia-smi dmon -s u -c 60", "iostat -xm 1", "py-spy record -o flame.svg --pid $PID --duration 30",
    "nsys profile -o train.nsys-rep --trace=cuda,nvtx python train.py", "num_workers",
    "prefetch_factor", "persistent_workers=True", "webdataset", "CUDA Graph",
    # §3 OOM
    "torch.cuda.memory_allocated()", "torch.cuda.empty_cache()",
    "torch.cuda.memory._record_memory_history(max_entries=100000)",
    "torch.cuda.memory._dump_snapshot('mem.pickle')", "https://pytorch.org/memory_viz",
    "memray run -o mem.bin train.py", "memray flamegraph mem.bin",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512",
    "gradient accumulation", "ZeRO-3", "activation checkpointing", "max_seq_len",
    "torch.no_grad()", ".detach()",
    # §4 NCCL
    "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=ALL", "TORCH_NCCL_DUMP_ON_TIMEOUT=1",
    "TORCH_NCCL_TRACE_BUFFER_SIZE=10485760", "py-spy dump --pid",
    "nsys profile --trace=cuda,nvtx,nccl,osrt -o nccl.nsys-rep python train.py",
    "NCCL_TOPO_DUMP_FILE=topo.xml", "NCCL_IB_HCA=mlx5", "NCCL_P2P_DISABLE=0",
    "TORCH_NCCL_BLOCKING_WAIT=1", "NCCL_ALGO=Ring", "nvbandwidth",
    # §5 numerics
    "torch.autograd.set_detect_anomaly(True)",
    "torch.nan_to_num_(loss, nan=0.0, posinf=1e9, neginf=-1e9)",
    "clip_grad_norm_(model.parameters(), max_norm=1.0)",
    "GradScaler(init_scale=2**16, growth_interval=2000)", "padding_idx=0",
    "scale_grad_by_freq", "fp32 master weights",
    # §6 inference
    "--gpu-memory-utilization 0.92", "--max-model-len 32768", "--enable-prefix-caching",
    "--enable-chunked-prefill", "--max-num-batched-tokens 8192", "--quantization fp8",
    "--speculative-model speculator-0.5b", "--num-speculative-tokens 5",
    "curl localhost:8000/metrics", "time_to_first_token", "time_per_output_token",
    # §7 compile
    'TORCH_LOGS="recompiles,graph_breaks"', 'TORCH_LOGS="+dynamo"', "TORCH_COMPILE_DEBUG=1",
    "fullgraph=True", 'mode="max-autotune"', "torch._dynamo.mark_dynamic", ".item()",
    ".tolist()",
    # §8 agent SOP: health checks and rules
    "nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv", "iostat -xm 1 3",
    "ps -eo pid,pcpu,pmem,cmd", 'rg -i "error|oom|nan|timeout|cuda"', "--no-pager",
    "--porcelain", "50 MB", "watch -n", "htop", "nvitop", "Perfetto",
]
# thresholds of the seed: value and where it applies
SEED_THRESHOLDS = [("gpu_util.low", 70), ("gpu_util.ideal", 90), ("disk.util_busy", 80)]


@pytest.fixture(scope="module")
def exported(kn) -> str:
    return " ".join(export(kn).replace("\\\"", '"').split())


@pytest.mark.parametrize("item", SEED_ITEMS)
def test_seed_item_is_in_the_export(exported: str, item: str) -> None:
    assert " ".join(item.split()).lower() in exported.lower(), item


@pytest.mark.parametrize("tid,value", SEED_THRESHOLDS)
def test_seed_threshold(kn, tid: str, value: float) -> None:
    doc = json.loads(export(kn))
    node = next(n for n in doc["nodes"] if n["id"] == f"threshold:{tid}")
    assert node["value"] == value and node["source"].startswith("seed")


def test_scaling_efficiency_threshold(kn) -> None:
    assert any(t.value == 0.7 and "scaling" in t.id for t in kn.thresholds.values())


def test_seed_reference_index_complete(kn) -> None:
    seed_refs = [r for r in kn.references.values() if r.seed]
    assert len(seed_refs) >= 32
    assert len({r.group for r in seed_refs}) == 13
    doc = json.loads(export(kn))
    urls = {n.get("url") for n in doc["nodes"] if n.get("type") == "reference"}
    assert all(r.url in urls for r in seed_refs)


def test_sop_steps_and_rules_in_graph(kn) -> None:
    doc = json.loads(export(kn))
    types = [n.get("type") for n in doc["nodes"]]
    assert types.count("sop_step") == 5 and types.count("hard_rule") == 6
