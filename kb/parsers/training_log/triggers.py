"""Which lines a training log scan looks at: case-sensitive trigger literals by family.

A line containing none of the literals is ignored; a line containing one is fed to
``LogScanner.feed``, which calls the handler of every family whose literal it holds. Every literal
but the numerics one (``oss``: loss, Loss, lm loss, loss scale) holds an upper-case "pivot" byte:
the block scan finds candidate lines with one ``bytes.find`` (memchr) loop per pivot byte, so
keep it so (a test checks) or the scan slows down.
"""

from __future__ import annotations

TRIGGERS: dict[str, tuple[str, ...]] = {
    "numerics": ("oss", "Bad grad_norm",  # loss, Loss, lm loss, loss scale(r), overflow messages; Megatron
                 # NumPy casting a NaN or an Inf to an integer type (a black image saved)
                 "RuntimeWarning: invalid value encountered in cast"),
    "oom": (
        "CUDA", "CUBLAS", "CUDNN", "HIP out of memory", "XPU out of memory", "MPS backend out of memory",
        "Error: cuda runtime error",
        # a CUDA allocation call that failed, as llama.cpp/ggml, MXNet and TensorRT-LLM report it
        "cudaMalloc", "cudaErrorMemoryAllocation",
        # the CUDA libraries' allocation statuses (cuRAND, cuSOLVER, cuSPARSE, cuFFT)
        "_STATUS_ALLOC", "CURAND_STATUS_ALLOCATION", "CUFFT_ALLOC",
        # TensorFlow ("ResourceExhaustedError: OOM when allocating", "Resource exhausted: ...",
        # TF 1.x "Ran out of memory trying to allocate", TF 2.x "Allocator (GPU_0_bfc) ran out
        # of memory trying to allocate"), XLA/JAX ("RESOURCE_EXHAUSTED: Out of
        # memory"): pivots R and X, which other literals use already
        "Resource", "Ran out of memory", "RESOURCE_EXHAUSTED",
        "Allocator (",  # TF 2.x: "Allocator (GPU_0_bfc) ran out of memory trying to allocate"
        "] Chunk at ", "] Free at ",  # TF's BFC memory dump, printed only after a failure
        "freeMemory:",  # TF 1.x opening a device: "totalMemory: 15.90GiB freeMemory: 3.12GiB"
        # fairseq's handler of a caught CUDA OOM, copied by ParlAI, Boltz and others: "| WARNING:
        # ran out of memory, skipping batch"
        "WARNING: ran out of memory",
        # PaddlePaddle's allocators: "Out of memory error on GPU 0. Cannot allocate ..."
        "Out of memory error on GPU",
        # a notebook's traceback header: "OutOfMemoryError     Traceback (most recent call last)"
        "OutOfMemoryError ",
    ),
    "distributed": ("NCCL", "Timed out waiting", "monitoredBarrier", "Watchdog", "Heartbeat"),
    "anomaly": ("Error detected in", "Backward"),  # Function 'MulBackward0' returned nan values
    "compile": (
        "Graph break", "Graph Break", "Graph Count", "Recompiling function", "Dynamo produced",
        "Unsupported", "UserError", "fullgraph=True",
        "Explanation:",  # 2.9+ records: the real reason behind "Encountered graph break when ..."
    ),
    # vLLM's and SGLang's periodic stats; their KV cache size at start-up, and vLLM's refusal to
    # start when one request of max_model_len does not fit (old and V1 wordings)
    "vllm": ("Avg prompt throughput", "Decode batch", "GPU KV cache size", "Maximum concurrency for",
             "KV Cache is allocated", "stored in KV cache", "KV cache is needed"),
    # where a local runner placed the model: llama.cpp's load line, an `ollama ps` row
    "offload": ("layers to GPU", "CPU/GPU", "% GPU", "% CPU", "level=INFO source="),
    # the GPUs llama.cpp found and spread the model over ("found N CUDA devices", "CUDA1 model
    # buffer size"); the handler tests its two substrings before any regex
    "devices": ("CUDA",),
    "env": ("NCCL_", "CUDA_", "TORCH_"),
}
NUMERIC = "oss"
#: pivot preference: the first of these bytes found in a literal is its pivot (rarest first)
PIVOT_RANK = "QJZXKVYUWLHPBGCMDFSNAORTEI"

ALL_LITERALS: tuple[str, ...] = tuple(dict.fromkeys(x for v in TRIGGERS.values() for x in v))
FAMILY_LITERALS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(TRIGGERS.items())


def _pivot(lit: str) -> tuple[int, int]:
    """(pivot byte, its offset in the literal) for a trigger literal."""
    best = min((PIVOT_RANK.index(c), i) for i, c in enumerate(lit) if c in PIVOT_RANK)
    return ord(PIVOT_RANK[best[0]]), best[1]


def _pivot_table() -> tuple[tuple[bytes, tuple[tuple[bytes, int, int], ...]], ...]:
    by_byte: dict[int, list[tuple[bytes, int]]] = {}
    for lit in ALL_LITERALS:
        if lit != NUMERIC:
            b, k = _pivot(lit)
            by_byte.setdefault(b, []).append((lit.encode(), k))
    return tuple((bytes([b]), tuple((lit, k, len(lit)) for lit, k in v)) for b, v in sorted(by_byte.items()))


#: (pivot byte, ((literal, pivot offset, literal length), ...)) for the block scan
PIVOT_LIST = _pivot_table()


def is_candidate(line: str) -> bool:
    """True when a line contains a trigger literal (the definition both scans follow)."""
    return any(lit in line for lit in ALL_LITERALS)


def families(line: str) -> set[str]:
    """The families whose trigger literal the line holds."""
    return {name for name, lits in FAMILY_LITERALS if any(x in line for x in lits)}
