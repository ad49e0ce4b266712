"""Where a local runner placed the model: the share of its weights on the GPU.

Read: llama.cpp's load line ``offloaded N/M layers to GPU`` (``llm_load_tensors:`` in older
builds, ``load_tensors:`` now; src/llama-model.cpp), and a row of ``ollama ps`` whose PROCESSOR
column says ``100% GPU``, ``100% CPU`` or a split ``48%/52% CPU/GPU`` (the Ollama FAQ, "How can
I tell if my model was loaded onto the GPU?"), and Ollama's server log line that sizes the
split (``msg="offload to cuda" layers.requested=-1 layers.model=33 layers.offload=25``;
llm/memory.go, MemoryEstimate.log). Below 1 the rest of the model runs on the CPU.
"""

from __future__ import annotations

import re

_LLAMA_CPP = re.compile(r"\boffloaded (\d+)/(\d+) layers to GPU\b")
_OLLAMA_LOG = re.compile(r"\blayers\.model=(\d+) layers\.offload=(\d+)\b")
#: NAME, a 12-hex ID, SIZE, then PROCESSOR
_OLLAMA_PS = re.compile(r"^\s*\S+\s+[0-9a-f]{12}\s+[\d.]+\s*[KMGT]?B\s+"
                        r"(?:(\d{1,3})%/(\d{1,3})% CPU/GPU|100% (CPU|GPU))\b")


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
