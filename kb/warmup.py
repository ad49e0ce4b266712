"""How much slower the first of a short run of timed calls was than the rest.

torch.compile, JAX's jit, TensorRT's engine build, Triton's autotuning and cuDNN's benchmark
mode all do their one-time work on the first call with a new shape; a short timing that includes
that call shows it as a first step or request many times the others. Only short timings count
(a long training log's first step says nothing about what the user timed).
"""

from __future__ import annotations

from statistics import median
from typing import Any

#: the most calls a timing may hold for its first call to speak for it
MAX_CALLS = 50


def complete(probe: dict[str, dict[str, Any]]) -> list[str]:
    """Fill ``compile.first_call_ratio`` in ``probe`` from ``training.step_time_ms`` where
    nothing stated it; returns what was derived, in words."""
    times = probe.get("training", {}).get("step_time_ms") or []
    comp = probe.setdefault("compile", {})
    if "first_call_ratio" in comp or not 3 <= len(times) <= MAX_CALLS:
        return []
    rest = median(times[1:])
    if rest <= 0:
        return []
    comp["first_call_ratio"] = round(times[0] / rest, 2)
    return [f"compile.first_call_ratio = {comp['first_call_ratio']} (the first of {len(times)} "
            f"timed steps against the median of the others)"]
