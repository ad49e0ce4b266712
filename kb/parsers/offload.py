"""Where a local runner placed the model: the share of its weights on the GPU.

Read: llama.cpp's load line ``offloaded N/M layers to GPU`` (``llm_load_tensors:`` in older
builds, ``load_tensors:`` now; src/llama-model.cpp), and a row of ``ollama ps`` whose PROCESSOR
column says ``100% GPU``, ``100% CPU`` or a split ``48%/52% CPU/GPU`` (the Ollama FAQ, "How can
I tell if my model was loaded onto the GPU?"), and Ollama's server log line that sizes the
split (``msg="offload to cuda" layers.requested=-1 layers.model=33 layers.offload=25``;
llm/memory.go, MemoryEstimate.log). Below 1 the rest of the model runs on the CPU.

Also how many GPUs llama.cpp spread the model over: one ``CUDA<n> model buffer size = ...``
line per GPU holding weights (``load_tensors:``, ``CUDA<n> buffer size`` under
``llm_load_tensors:`` in older builds; src/llama-model.cpp), and the GPUs its CUDA backend found
(``ggml_cuda_init: found N CUDA devices:``, ``ggml_init_cublas:`` in older builds, each followed
by ``  Device i: <name>, compute capability X.Y, ...``; ggml/src/ggml-cuda/ggml-cuda.cu).
"""

from __future__ import annotations

import re

_LLAMA_CPP = re.compile(r"\boffloaded (\d+)/(\d+) layers to GPU\b")
_OLLAMA_LOG = re.compile(r"\blayers\.model=(\d+) layers\.offload=(\d+)\b")
#: NAME, a 12-hex ID, SIZE, then PROCESSOR
_OLLAMA_PS = re.compile(r"^\s*\S+\s+[0-9a-f]{12}\s+[\d.]+\s*[KMGT]?B\s+"
                        r"(?:(\d{1,3})%/(\d{1,3})% CPU/GPU|100% (CPU|GPU))\b")


_MODEL_BUFFER = re.compile(r"\bCUDA(\d{1,3}) (?:model )?buffer size\s*=")
_FOUND = re.compile(r"\b(?:ggml_cuda_init|ggml_init_cublas): found (\d{1,3}) CUDA devices")
_DEVICE = re.compile(r"^\s*Device \d{1,3}: (.{2,80}?), compute capability (\d{1,2})\.(\d)\b")


def model_buffer_device(line: str) -> int | None:
    """The CUDA device index of a llama.cpp line sizing the model weights it placed on that
    device (not its KV cache or compute buffers), or None."""
    m = _MODEL_BUFFER.search(line) if "buffer size" in line else None
    return int(m.group(1)) if m else None


def cuda_devices_line(line: str, after: str) -> tuple[int, str | None, float | None] | None:
    """``(GPUs found, first GPU's name, its compute capability)`` from llama.cpp's CUDA start-up
    line and the device line after it; None when ``line`` is not that line."""
    m = _FOUND.search(line) if "CUDA devices" in line else None
    if not m:
        return None
    d = _DEVICE.match(after)
    if not d:
        return int(m.group(1)), None, None
    return int(m.group(1)), d.group(1).strip(), float(f"{d.group(2)}.{d.group(3)}")


def placement_line(line: str) -> tuple[float, str] | None:
    """``(share of the model on the GPU, runner)`` that ``line`` states (the runner as the
    ``inference.engine`` value: ``llama.cpp`` or ``ollama``), or None if it states none."""
    m = _LLAMA_CPP.search(line)
    if m:
        placed, total = int(m.group(1)), int(m.group(2))
        return (round(min(placed / total, 1.0), 4), "llama.cpp") if total else None
    m = _OLLAMA_LOG.search(line)
    if m:
        total, placed = int(m.group(1)), int(m.group(2))
        return (round(min(placed / total, 1.0), 4), "ollama") if total else None
    m = _OLLAMA_PS.search(line)
    if m:
        if m.group(3):
            return (1.0 if m.group(3) == "GPU" else 0.0), "ollama"
        return round(int(m.group(2)) / 100, 4), "ollama"
    return None
