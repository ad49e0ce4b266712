"""The columnar engine (optional, polars): the block reader's regions read as columns of lines.

Used by :func:`kb.parsers.training_log.parse_stream` for inputs over :data:`THRESHOLD` bytes
when polars is installed (``pip install kb[fast]``; polars is imported then, not before) and the
fixed-width engine (:mod:`.fixed`) does not read the input (not a regular file, no pyarrow), and
by that engine for the regions it leaves (lines of many shapes); otherwise the pure-Python block
path (:mod:`.blockscan`, :mod:`.formats`) runs. All give the reference reader's facts (the
differential tests hold them equal, the mean bit for bit).

How a region (4 MiB of whole lines, in two parts analysed on two threads) is read, with no
Python code per line:

1. ``polars.read_csv`` (one column, a separator byte the region does not hold, no quoting) on
   the region gives a column of lines; the region with every digit made ``0`` (one
   ``bytes.translate``) gives their *templates*. A metric log has few templates
   (``step 0000 loss 0.0000 ...``) whatever its size; when the region is one template repeated
   (a bytes comparison) no template column is read at all.
2. Each distinct template is classified once, in Python: no trigger literal -> not a candidate
   line (ignored, as by the reference); a trigger other than ``oss`` -> fed to the line reader;
   else the first trainer grammar of :mod:`.formats` that matches it in full, with every value a
   plain decimal (``[-+]?(0+.?0*|.0+)([eE][-+]?0+)?`` in the template) -> a bulk line, else fed.
   The grammars treat all digits alike and no trigger literal holds a digit (a test checks
   both), so a line matches, with each value at the same place, exactly when its template does:
   the values are cut at fixed offsets per template (``str.slice``) and cast
   (``cast(Float64)``, correctly rounded like ``float()``; a test compares them).
3. Per line, the checks ``Format.apply`` makes (finite values, learning rate, loss scale and step
   time >= 0, Megatron's skipped/NaN counters == 0); a line that fails one is fed instead. For
   a region of one template the checks are a few aggregates (min/max/null count).
4. The lines are applied in log order: runs of bulk lines of one format go to
   :meth:`.series.Series.extend_column` (count, sequential sum, min/max; only the kept values
   leave the column), fed lines go to ``LogScanner.feed`` with their context. Steps are cast
   only where needed (the last line of a run, the window after a first non-finite value).

Anything unusual (``\\r``, NUL bytes, invalid UTF-8, over MAX_TEMPLATES templates or MAX_RUNS
runs) sends the whole region to the Python path before any state changed.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from kb.parsers.training_log import formats
from kb.parsers.training_log.blockscan import BlockScan, regions
from kb.parsers.training_log.columns import FEED, ROLES, Region, analyse

THRESHOLD = 8 * 1024 * 1024  # inputs over this many bytes use the engine (polars imported then)
BLOCK = 4 * 1024 * 1024  # region size for the engine (peak RSS about 170 MB at 4 MiB)
THREADS = 2  # regions are analysed in this many parts at once (polars releases the GIL)
SPLIT_MIN = 1024 * 1024  # regions smaller than this are analysed whole
ENV = "KB_LOG_ENGINE"  # "python" turns the engine off

_available: bool | None = None


def available() -> bool:
    """polars can be imported (checked without importing it) and the engine is not turned off."""
    global _available
    if os.environ.get(ENV, "").lower() == "python":
        return False
    if _available is None:
        _available = importlib.util.find_spec("polars") is not None
    return _available


def _cuts(buf: Any, lo: int, hi: int, parts: int) -> list[int]:
    """Offsets cutting buf[lo:hi] in about equal parts just after newlines (lo and hi included)."""
    out = [lo]
    for k in range(1, parts):
        cut = buf.find(b"\n", lo + (hi - lo) * k // parts, hi)
        if cut < 0 or cut + 1 >= hi or cut + 1 <= out[-1]:
            break
        out.append(cut + 1)
    out.append(hi)
    return out


class ColumnarScan(BlockScan):
    """The block reader with large regions read by the columnar engine (see the module doc).

    Pipelined: each block is read into a fresh buffer, cut in ``threads`` parts at newlines, and
    the parts are analysed on a thread pool (polars releases the GIL) while this thread applies
    the previous block's results, in log order, with that block's buffer as the context of fed
    lines. A block the engine refuses is read by the Python path when its turn comes.
    """

    def __init__(self, scanner: Any, *, threshold: int = THRESHOLD, min_region: int = 64 * 1024,
                 threads: int = THREADS) -> None:
        super().__init__(scanner)
        self.threshold = threshold
        self.min_region = min_region
        self.seen = 0
        self.used = False  # the engine read at least one region
        self.threads = max(threads, 1)
        self._pool: Any = None

    def run(self, stream: Any, block_size: int) -> None:
        """:meth:`BlockScan.run` with a fresh buffer per block, so that one block is applied while
        the next one is analysed."""
        pending: tuple[bytearray, int, Any] | None = None
        try:
            for buf, hi, last in regions(stream, block_size, fresh=True):
                if last:
                    if pending is not None:
                        self._complete(*pending)
                        pending = None
                    if hi > 1:
                        self.buf = buf
                        self.scan(1, hi)
                    return
                job = self._submit(buf, 1, hi)
                if pending is not None:
                    self._complete(*pending)
                pending = (buf, hi, job)  # the block stays intact until it is applied
        finally:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)

    def _submit(self, buf: bytearray, lo: int, hi: int) -> Any:
        """Start the analysis of buf[lo:hi]: (part sizes, futures), or None for the Python path."""
        self.seen += hi - lo
        if self.seen <= self.threshold or hi - lo < self.min_region:
            return None
        cuts = _cuts(buf, lo, hi, self.threads if hi - lo >= SPLIT_MIN else 1)
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="kb-log")
        with memoryview(buf) as mv:
            parts = [bytes(mv[a:b]) for a, b in zip(cuts, cuts[1:])]
        return [len(p) for p in parts], [self._pool.submit(analyse, p) for p in parts]

    def _complete(self, buf: bytearray, hi: int, job: Any) -> None:
        """Apply block buf[1:hi] (analysed by ``job``, or read by the Python path)."""
        self.buf = buf
        found = [f.result() for f in job[1]] if job is not None else None
        if found is not None and all(r is not None for r in found):
            self._apply_found(1, hi, job[0], found)
            self.used = True
        else:
            BlockScan.scan(self, 1, hi)
        self._remember(1, hi)

    def scan(self, lo: int, hi: int) -> None:
        """One region at once (the last one of the input)."""
        self.seen += hi - lo
        if self.seen > self.threshold and hi - lo >= self.min_region:
            found = analyse(bytes(self.buf[lo:hi]))
            if found is not None:
                self._apply_found(lo, hi, [hi - lo], [found])
                self.used = True
                return
        super().scan(lo, hi)

    def _apply_found(self, lo: int, hi: int, sizes: list[int], found: list[Any]) -> None:
        """Apply the analysed parts of buf[lo:hi], in log order."""
        if self.progress is not None:
            self.progress(hi - lo)
        self.lo, self.hi = lo, hi
        nxt = self.buf.find(b"\n", hi) if hi < len(self.buf) else -1
        self.limit = nxt if nxt >= 0 else hi
        base = lo
        for size, region in zip(sizes, found):
            for first, last, c in region.runs:
                if c == FEED:
                    s = base + region.starts[first]
                    self._feed(s, s + region.widths[first] - 1)
                else:
                    self._apply(region, first, last, c)
            base += size

    def _apply(self, region: Region, first: int, last: int, k: int) -> None:
        """One run of bulk lines of format ``k``: what ``Format.apply`` does, on columns."""
        name = formats.FORMATS[k].name
        sc = self.sc
        s = sc.series
        n_rows = last - first + 1
        mine = region.cls.slice(first, n_rows) == k
        pure = bool(mine.all())  # no ignored line inside the run: no filtering
        cols = {r: region.cols[r].slice(first, n_rows) for r in ROLES[name] if r in region.cols}
        if not pure:
            cols = {r: v.filter(mine) for r, v in cols.items()}
        stepped = "step" in ROLES[name] and region.steps is not None
        loss = cols["loss"]
        n = loss.len()
        all_steps: list[Any] = []

        def steps() -> Any:  # the steps of this run's lines, only when a window needs them
            if not all_steps:
                st = region.steps(first, last)
                all_steps.append(st if pure else st.filter(mine))
            return all_steps[0]

        targets = [("loss", "numerics.loss"), ("grad", "numerics.grad_norm")]
        if name in ("hf", "megatron", "generic"):
            targets.append(("lr", "numerics.learning_rate"))
        if name == "megatron":
            targets += [("scale", "numerics.loss_scale"), ("ms", "training.step_time_ms")]
        for role, path in targets:
            col = cols.get(role)
            if col is None:
                continue
            has = col.is_not_null() if col.null_count() else None  # lines without this value
            vals = col if has is None else col.filter(has)
            if stepped:
                s[path].extend_column(vals, steps=(lambda h=has: steps() if h is None else steps().filter(h)))
            else:
                s[path].extend_column(vals, step=sc.step)
        if stepped:
            sc.step = int(region.steps(last, last)[0])
            if name == "megatron" and cols.get("ms") is not None:
                sc.timed_steps(int(region.steps(first, first)[0]), sc.step)
        sc.metric_records += n
        sc.run = 0
