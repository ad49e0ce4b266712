"""Slow steps that come back: the step times of a log read as ``training.slow_step_ratio`` and
``training.slow_step_period``.

A step that takes markedly longer than the median is a slow step; when the slow steps are a few
of many and the gaps between them mostly agree, that gap is their period. The reader only
measures: whether the ratio is a stall is the knowledge's threshold (``gpu_util.stall_ratio``).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

#: a step this many times the median is "slow" for finding the recurring ones (jitter of a
#: healthy loop stays well under it; the knowledge decides what ratio is a stall)
SLOW = 1.5
#: the first records are warm-up (compilation, cudnn autotuning, allocator growth): left out
WARMUP = 3
#: records needed after the warm-up to speak of a median and of recurrence
MIN_RECORDS = 10


def slow_steps(times: Sequence[float], step_stride: float = 1.0) -> dict[str, Any]:
    """``{"slow_step_ratio": x[, "slow_step_period": n]}`` for step times in log order, or {}
    when they show no recurring slow steps. ``step_stride`` is the number of training steps
    between two records (a log that prints every 10 steps: 10), so the period is in steps."""
    t = [x for x in times[WARMUP:] if math.isfinite(x) and x > 0]
    if len(t) < MIN_RECORDS:
        return {}
    med = statistics.median(t)
    slow = [i for i, x in enumerate(t) if x >= SLOW * med]
    # a few slow steps among many: more than a third is a bimodal loop, not a stall
    if len(slow) < 2 or 3 * len(slow) > len(t):
        return {}
    out: dict[str, Any] = {"slow_step_ratio": round(statistics.median(t[i] for i in slow) / med, 2)}
    gaps = [b - a for a, b in zip(slow, slow[1:])]
    if len(gaps) >= 2:
        gap, n = Counter(gaps).most_common(1)[0]
        # a period: most gaps agree (two of three, or all of two)
        if gap >= 1 and 3 * n >= 2 * len(gaps) and n >= 2:
            out["slow_step_period"] = max(1, round(gap * step_stride))
    return out
