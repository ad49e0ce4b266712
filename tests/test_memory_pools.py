"""kb.memory_pools: a serving engine's pool, derived where nothing stated it."""

from __future__ import annotations

from typing import Any

import pytest

from kb.memory_pools import complete


@pytest.mark.parametrize(("probe", "want"), [
    ({"inference": {"engine": "vllm", "gpu_memory_utilization": 0.9}},
     {"framework_preallocates": True, "pool_fraction": 0.9}),
    ({"inference": {"engine": "sglang"}}, {"framework_preallocates": True}),
    # TensorRT-LLM's free_gpu_memory_fraction and LMDeploy's cache_max_entry_count take a share
    # of the memory left free for the KV cache at start-up
    ({"inference": {"engine": "tensorrt-llm"}}, {"framework_preallocates": True}),
    ({"inference": {"engine": "lmdeploy"}}, {"framework_preallocates": True}),
    ({"inference": {"engine": "ollama"}}, {}),
    # near-misses: an engine that sizes its cache by the context asked for, and a pool the
    # text already stated (a stated value wins)
    ({"inference": {"engine": "llama.cpp"}}, {}),
    ({"inference": {"engine": "vllm", "gpu_memory_utilization": 0.9}, "oom": {"framework_preallocates": False}},
     {"framework_preallocates": False}),
])
def test_engine_pools(probe: dict[str, Any], want: dict[str, Any]) -> None:
    notes = complete(probe)
    assert probe.get("oom", {}) == want
    assert bool(notes) == (want.get("framework_preallocates") is True)
