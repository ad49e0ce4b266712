"""Whether the job's serving engine reserves a memory pool up front, from what is known of it.

vLLM claims ``gpu_memory_utilization`` of the card for weights, activations and its KV cache at
start-up (docs.vllm.ai, Conserving Memory), SGLang ``mem_fraction_static``
(docs.sglang.io, hyperparameter tuning), TensorRT-LLM ``free_gpu_memory_fraction`` (0.9) of the
memory left after its weights for the KV cache (nvidia.github.io/TensorRT-LLM, KV cache config),
LMDeploy's TurboMind ``cache_max_entry_count`` (0.8) of the free memory (lmdeploy docs,
TurbomindEngineConfig): a run of any of them holds that share whatever it serves.
JAX/XLA and TensorFlow pools are read from their own lines and variables (kb.readers.env,
kb.readers.lines), not inferred here.
"""

from __future__ import annotations

from typing import Any

#: engines that reserve their pool when they start
PREALLOCATING_ENGINES = frozenset({"vllm", "sglang", "tensorrt-llm", "lmdeploy"})


def complete(probe: dict[str, dict[str, Any]]) -> list[str]:
    """Fill ``oom.framework_preallocates`` / ``oom.pool_fraction`` in ``probe`` where the engine
    says them and nothing stated them; returns what was derived, in words."""
    inf, oom = probe.setdefault("inference", {}), probe.setdefault("oom", {})
    engine, share = inf.get("engine"), inf.get("gpu_memory_utilization")
    if engine not in PREALLOCATING_ENGINES or "framework_preallocates" in oom:
        return []
    oom["framework_preallocates"] = True
    if share is None or "pool_fraction" in oom:
        return [f"oom.framework_preallocates = true ({engine} reserves its pool at start-up)"]
    oom["pool_fraction"] = share
    return [f"oom.framework_preallocates = true, oom.pool_fraction = {share} ({engine} reserves its "
            f"gpu_memory_utilization of the card at start-up)"]
