"""Metric series in bounded memory (loss, grad norm, learning rate, loss scale, step time).

A 1 GB log has millions of samples; the end of a log is usually where the failure is, so
keeping the first N is wrong and keeping all is unbounded. A :class:`Series` keeps exact
running figures (count, finite min/max/mean, first and last finite value, the first non-finite
value with the log's own step and the samples around it) plus a bounded selection: the first
``HEAD`` values, a deterministic stride-doubling downsample for plots, the extremes, and the
last ``TAIL`` values verbatim. ``add`` (one sample, the line reader) and ``extend`` (a block of
finite samples, the block reader) give the same state for the same values: the downsample keeps
index ``i`` when ``i % stride == 0``, and the stride doubles while more than ``DOWNSAMPLE`` points
are kept, which does not depend on how the values were batched.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from functools import reduce
from collections.abc import Callable, Sequence
from typing import Any

from kb.parsers.base import MAX_SAMPLES

HEAD = 1000  # first values kept in the facts list once a series is longer than MAX_SAMPLES
TAIL = 1000  # last values kept verbatim
DOWNSAMPLE = 4096  # points of the plot series (index, value)
WINDOW = 20  # samples kept before and after the first non-finite one


class Series:
    """One metric's samples; see the module docstring."""

    __slots__ = (
        "count", "nonfinite", "total", "vmin", "vmax", "imin", "imax", "first", "last", "head",
        "stride", "ds", "_tail", "_pending", "nf_index", "nf_step", "window", "after",
    )

    def __init__(self) -> None:
        self.count = 0
        self.nonfinite = 0
        self.total = 0.0  # sum of the finite values
        self.vmin = math.inf
        self.vmax = -math.inf
        self.imin = -1
        self.imax = -1
        self.first: float | None = None  # first finite value
        self.last: float | None = None  # last finite value
        self.head: list[float] = []  # the first MAX_SAMPLES values, verbatim
        self.stride = 1
        self.ds: list[tuple[int, float]] = []
        self._tail: deque[tuple[int, float]] = deque(maxlen=TAIL)
        #: (index of the first, pyarrow array): the last TAIL values of :meth:`extend_arrow`, put in
        #: the tail when it is read (most are replaced by the next ones before that)
        self._pending: tuple[int, Any] | None = None
        self.nf_index: int | None = None
        self.nf_step: int | None = None
        self.window: list[tuple[int, int | None, float]] = []  # (index, step, value)
        self.after = 0  # samples still to take into the window after the first non-finite one

    @property
    def tail(self) -> deque[tuple[int, float]]:
        """The last TAIL (index, value) pairs."""
        if self._pending is not None:
            first, arr = self._pending
            self._pending = None
            self._tail.extend(zip(range(first, first + len(arr)), arr.to_pylist()))
        return self._tail

    def add(self, value: float, step: int | None = None) -> None:
        """One sample; ``step`` is the log's step at that line (None when it has none)."""
        i = self.count
        self.count = i + 1
        if len(self.head) < MAX_SAMPLES:
            self.head.append(value)
        if i % self.stride == 0:
            self.ds.append((i, value))
            self._thin()
        if self.after:
            self.window.append((i, step, value))
            self.after -= 1
        if math.isfinite(value):
            self.total += value
            if self.first is None:
                self.first = value
            self.last = value
            if value < self.vmin:
                self.vmin, self.imin = value, i
            if value > self.vmax:
                self.vmax, self.imax = value, i
        else:
            self.nonfinite += 1
            if self.nf_index is None:
                self.nf_index, self.nf_step = i, step
                self.window = [(j, None, v) for j, v in list(self.tail)[-WINDOW:]]
                self.window.append((i, step, value))
                self.after = WINDOW
        self.tail.append((i, value))

    def _begin(self, n: int, first: Callable[[int], Sequence[float]]) -> int:
        """Count ``n`` more samples, the first of them into the verbatim head while it has room
        (``first(room)`` gives them); the index of the first new sample."""
        base = self.count
        self.count = base + n
        room = MAX_SAMPLES - len(self.head)
        if room > 0:
            self.head.extend(first(room))
        return base

    def extend(self, values: Sequence[float], steps: Sequence[Any] | None = None, step: int | None = None) -> None:
        """Many FINITE samples at once (the caller checked ``math.isfinite(sum(values))``).

        ``steps`` (one per value, numbers or byte strings), else ``step`` for all: only read for
        the few samples that go into the window after a first non-finite value.
        """
        n = len(values)
        if not n:
            return
        base = self._begin(n, lambda room: values[:room])
        off = (-base) % self.stride
        if off < n:
            self.ds.extend(zip(range(base + off, base + n, self.stride), values[off :: self.stride]))
            self._thin()
        if self.after:
            k = min(self.after, n)
            self.window.extend(
                (base + j, int(steps[j]) if steps is not None else step, values[j]) for j in range(k)
            )
            self.after -= k
        # one addition at a time, in log order, as add() does: the mean is bit-identical
        self.total = reduce(operator.add, values, self.total)
        if self.first is None:
            self.first = values[0]
        self.last = values[-1]
        lo = min(values)
        if lo < self.vmin:
            self.vmin, self.imin = lo, base + values.index(lo)
        hi = max(values)
        if hi > self.vmax:
            self.vmax, self.imax = hi, base + values.index(hi)
        k = min(n, TAIL)
        self.tail.extend(zip(range(base + n - k, base + n), values[n - k :]))

    def extend_column(self, col: Any, steps: Any = None, step: int | None = None) -> None:
        """:meth:`extend` for a polars Float64 Series of FINITE values (the columnar engine).

        Same state as ``extend(col.to_list(), ...)`` without making a Python float per value:
        count, sequential sum (``cum_sum`` seeded with the running total adds one value at a
        time in log order, like :meth:`add`), first-occurrence min/max, and only the few values
        that are kept (head, downsample, window, tail) leave the column. ``steps`` is an Int64
        Series (one per value), a function returning one (called only when a window needs the
        steps), or None (then ``step`` for all).
        """
        import polars as pl

        n = col.len()
        if not n:
            return
        base = self.count
        self.count = base + n
        room = MAX_SAMPLES - len(self.head)
        if room > 0:
            self.head.extend(col.head(room).to_list())
        stride = self._stride_for(base, n)  # the stride _thin() would end with, then only those points
        first = (-base) % stride
        if first < n:
            self.ds.extend(zip(range(base + first, base + n, stride), col.gather_every(stride, first).to_list()))
        if self.after:
            k = min(self.after, n)
            if callable(steps):
                steps = steps()
            st = steps.head(k).to_list() if steps is not None else [step] * k
            self.window.extend((base + j, st[j], v) for j, v in enumerate(col.head(k).to_list()))
            self.after -= k
        seeded = pl.Series([self.total], dtype=pl.Float64)
        seeded.append(col)
        self.total = seeded.cum_sum()[-1]
        if self.first is None:
            self.first = col[0]
        self.last = col[-1]
        lo = col.min()
        if lo < self.vmin:
            i = (col == lo).arg_max()  # the first occurrence, as min() and list.index() find it
            self.vmin, self.imin = col[i], base + i
        hi = col.max()
        if hi > self.vmax:
            i = (col == hi).arg_max()
            self.vmax, self.imax = col[i], base + i
        k = min(n, TAIL)
        self.tail.extend(zip(range(base + n - k, base + n), col.tail(k).to_list()))

    def extend_arrow(self, col: Any, steps: Any = None, step: int | None = None,
                     extremes: tuple[float, float] | None = None, pool: Any = None) -> None:
        """:meth:`extend` for a pyarrow float64 array (or chunked array) of FINITE values (the
        fixed-width engine, :mod:`.fixed`): the same state as ``extend(col.to_pylist(), ...)``, and
        only the kept values leave the array. ``cumulative_sum`` seeded with the running total adds
        one value at a time in log order, like :meth:`add`; ``index`` finds the first occurrence of
        the minimum and maximum, like ``list.index``. ``steps(k)`` gives the steps of the first
        ``k`` values (called only when a window needs them), else ``step`` is every value's step.
        ``extremes``: the (min, max) of the values when the caller has them; ``pool``: the pyarrow
        memory pool for the running sums.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(col)
        if not n:
            return
        base = self._begin(n, lambda room: col.slice(0, room).to_pylist())
        stride = self._stride_for(base, n)
        first = (-base) % stride
        if first < n:
            if stride > 1:
                picked = pc.take(col, pa.array(range(first, n, stride), pa.int64()), memory_pool=pool)
            else:
                picked = col.slice(first)
            self.ds.extend(zip(range(base + first, base + n, stride), picked.to_pylist()))
        if self.after:
            k = min(self.after, n)
            st = steps(k) if steps is not None else [step] * k
            self.window.extend((base + j, st[j], v) for j, v in enumerate(col.slice(0, k).to_pylist()))
            self.after -= k
        self.total = pc.cumulative_sum(col, start=self.total, memory_pool=pool)[n - 1].as_py()
        if self.first is None:
            self.first = col[0].as_py()
        self.last = col[n - 1].as_py()
        if extremes is None:
            mm = pc.min_max(col)
            extremes = mm["min"].as_py(), mm["max"].as_py()
        lo, hi = extremes
        if lo < self.vmin:
            i = pc.index(col, lo).as_py()  # the first occurrence, as min() and list.index() find it
            self.vmin, self.imin = col[i].as_py(), base + i
        if hi > self.vmax:
            i = pc.index(col, hi).as_py()
            self.vmax, self.imax = col[i].as_py(), base + i
        if n >= TAIL:  # these replace the whole tail: kept as an array until read
            self._tail.clear()
            self._pending = (base + n - TAIL, col.slice(n - TAIL))
        else:
            self.tail.extend(zip(range(base, base + n), col.to_pylist()))

    def _stride_for(self, base: int, n: int) -> int:
        """The downsample stride once ``n`` values from index ``base`` are added (what :meth:`_thin`
        ends with), with the kept points already thinned to it."""
        stride = self.stride
        kept = len(self.ds)  # every kept point's index is a multiple of the stride
        while True:
            first = (-base) % stride
            new = (n - first + stride - 1) // stride if first < n else 0
            if kept + new <= DOWNSAMPLE:
                break
            stride *= 2
            kept = sum(1 for p in self.ds if p[0] % stride == 0)
        if stride != self.stride:
            self.stride = stride
            self.ds = [p for p in self.ds if p[0] % stride == 0]
        return stride

    def _thin(self) -> None:
        while len(self.ds) > DOWNSAMPLE:
            self.stride *= 2
            self.ds = [p for p in self.ds if p[0] % self.stride == 0]

    # -- results ------------------------------------------------------------------------------
    def samples(self) -> list[float]:
        """The facts list: every value up to MAX_SAMPLES samples, else a bounded selection in log
        order (first HEAD, downsample, extremes, the first non-finite window, last TAIL)."""
        if self.count <= MAX_SAMPLES:
            return list(self.head)
        keep: dict[int, float] = dict(enumerate(self.head[:HEAD]))
        keep.update(self.ds)
        if self.imin >= 0:
            keep[self.imin] = self.vmin
            keep[self.imax] = self.vmax
        keep.update((i, v) for i, _, v in self.window)
        keep.update(self.tail)
        return [keep[i] for i in sorted(keep)]

    def summary(self) -> dict[str, Any]:
        """Exact figures and the bounded plot/tail series (for reports and plots)."""
        finite = self.count - self.nonfinite
        out: dict[str, Any] = {"count": self.count, "nonfinite": self.nonfinite}
        if finite:
            out.update(
                min=self.vmin, max=self.vmax, mean=self.total / finite, first=self.first, last=self.last,
                growth=_ratios(self.first, self.last, self.vmin, self.vmax),
            )
        if self.nf_index is not None:
            out["first_nonfinite"] = {
                "index": self.nf_index, "step": self.nf_step,
                "around": [{"index": i, "step": s, "value": v} for i, s, v in self.window],
            }
        out["downsampled"] = {"stride": self.stride, "points": [list(p) for p in self.ds]}
        out["tail"] = [list(p) for p in self.tail]
        return out


def _ratios(first: float | None, last: float | None, vmin: float, vmax: float) -> dict[str, float]:
    """Growth as ratios (None-free: a ratio over zero is left out)."""
    out: dict[str, float] = {}
    if first:
        out["last_over_first"] = last / first if last is not None else math.nan
        out["max_over_first"] = vmax / first
    if vmin and last is not None:
        out["last_over_min"] = last / vmin
    return out
