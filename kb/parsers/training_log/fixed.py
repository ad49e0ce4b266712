"""The fixed-width engine (optional, pyarrow): metric lines read in place from a memory map.

Trainers print their metric line with one format string, so with every digit made ``0`` (a line's
*template*, as in :mod:`.columns`) the lines of a log are the same bytes, line after line, for long
runs, or a short cycle of templates (a progress bar whose counter changes width). This engine
reads a regular file through a memory map in regions of whole lines (REGION bytes), and per
region, with no Python code per line:

1. the template of the line at hand is taken (Python, one line) and classified once
   (:func:`.columns.plan_bytes`): no trigger literal (ignored), a line for the line reader (fed),
   or a line of a trainer format (bulk), with the byte span of each value;
2. how many of the next lines have that template (or repeat a cycle of templates seen in the last
   runs) is counted with a few vectorised passes over the bytes as 64-bit words (pyarrow): with
   ``y = x ^ P`` (``P``: the template repeated) and ``A`` = ``0x76`` where the template has a
   digit, ``0x7F`` elsewhere, ``((y + A) | y) & 0x80..80`` is zero exactly when every byte equals
   the template's byte or is a digit where it has one (a carry out of a byte only comes from a
   byte flagged already and only moves to later bytes, so the first flagged byte is the first bad
   one; when no byte of ``y`` has its high bit, nothing carries and ``| y`` is left out).
   Megatron's skipped/NaN counters must be ``0`` exactly; a learning rate or loss scale that stays
   the same is *pinned* (its bytes are part of ``P``, so it is checked there and parsed once);
3. each other value is cut out of the run's lines at its offset (``binary_slice`` over the lines
   as fixed-size binaries, or over lines of a cycle with offsets from the line start or end) and
   cast (``cast(float64)``: correctly rounded, like ``float()``; a test compares them); a value
   that overflows, or a negative learning rate, loss scale or step time, sends the region to the
   other engines;
4. the main thread applies the region in log order: runs of bulk lines to the series
   (:meth:`.series.Series.extend_arrow`: sequential sums, so the mean is the line reader's bit for
   bit), fed lines to ``LogScanner.feed`` with their context (read from the map), then drops the
   region's pages (peak RSS stays bounded); steps are read from the lines only where needed.

The grammars treat all digits alike and no trigger literal holds a digit (tests check both), so a
line whose template is a bulk template is that format's line with each value at the template's
spans: the facts are the reference reader's (the differential tests hold them equal). Regions are
analysed on a thread pool (pyarrow releases the GIL) while the main thread applies the previous
one. A region that does not fall into few runs (lines of many shapes, ``\r``-separated tqdm
lines) goes to the columnar engine (:mod:`.columnar`, polars installed) or the Python path, as
does a region with a line over ``MAX_LINE`` bytes, and the rest of a file that shrinks under the
scan is read from the stream.
"""

from __future__ import annotations

import importlib.util
import io
import mmap
import os
import stat
import struct
import threading
from collections import OrderedDict, deque
from typing import Any

from kb.parsers.training_log import columnar, formats
from kb.parsers.training_log.blockscan import MAX_LINE, BlockScan, read_block
from kb.parsers.training_log.columnar import ColumnarScan
from kb.parsers.training_log.columns import _NONNEG, DIGITS, FEED, IGNORE, plan_bytes

THRESHOLD = columnar.THRESHOLD  # inputs over this many bytes use the engine (pyarrow imported then)
REGION = 8 * 1024 * 1024  # bytes per region (whole lines)
WINDOW = 1024 * 1024  # bytes verified per pass at most (the template buffers are this long)
FIRST = 16 * 1024  # bytes verified by the first pass of a run (then twice as many each pass)
PIN_MIN = 4096  # a value pinned (constant) for fewer lines than this is not pinned again
PINNED = ("lr", "scale")  # the values tried pinned
MAX_CYCLE = 4  # runs in a cycle of templates, at most
MAX_PATTERN_BYTES = 16 * 1024 * 1024  # templates repeated for the verification, kept at most
MAX_STEPS = 96  # single lines and runs a region may take before it goes to the other engines
THREADS = 2
OBSERVE = 1 << 20  # bytes handed to the observer per call, at most
ENV = columnar.ENV  # "python" or "polars" turns this engine off

_FLOATS = ("loss", "grad", "lr", "ms", "scale")
_TARGETS = (("loss", "numerics.loss"), ("grad", "numerics.grad_norm"), ("lr", "numerics.learning_rate"),
            ("scale", "numerics.loss_scale"), ("ms", "training.step_time_ms"))
#: the roles each format's ``apply`` extends its series with (HF: no step of its own)
_APPLIED = {"hf": ("loss", "grad", "lr"), "generic": ("loss", "grad", "lr"), "deepspeed": ("loss",),
            "lightning": ("loss", "grad"), "megatron": ("loss", "grad", "lr", "scale", "ms")}

_available: bool | None = None


def available() -> bool:
    """pyarrow can be imported (checked without importing it) and the engine is not turned off."""
    global _available
    if os.environ.get(ENV, "").lower() in ("python", "polars"):
        return False
    if _available is None:
        _available = importlib.util.find_spec("pyarrow") is not None
    return _available


def mappable(stream: Any) -> int | None:
    """The offset of a stream that is a regular file read as it is (so the rest can be
    memory-mapped), else None: not a wrapper with a ``fileno`` of its own (gzip, a cap)."""
    if not hasattr(mmap.mmap, "madvise"):
        return None  # pages could not be dropped as they are read (peak RSS)
    if not isinstance(stream, (io.BufferedReader, io.BufferedRandom, io.FileIO)):
        return None
    try:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return None
        return int(stream.tell())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


class _Pattern:
    """Lines verified together: a template (or a cycle of templates) and its mask (per byte:
    ``0x7F`` that byte exactly, ``0x76`` any digit)."""

    __slots__ = ("tpl", "exact", "size", "_bufs")

    def __init__(self, tpl: bytes, exact: bytes) -> None:
        self.tpl = tpl
        self.exact = exact
        self.size = len(tpl)
        self._bufs: tuple[Any, Any, int] = (None, None, 0)

    def buffers(self, reps: int) -> tuple[Any, Any]:
        """The template and its mask repeated at least ``reps`` times (pyarrow buffers; replaced
        whole, so that threads sharing the pattern see a consistent pair)."""
        bufs = self._bufs
        if reps > bufs[2]:
            pa = arrow()[0]
            reps = max(reps, min(2 * bufs[2], WINDOW // self.size + 1))
            bufs = (pa.py_buffer(self.tpl * reps), pa.py_buffer(self.exact * reps), reps)
            self._bufs = bufs
            with _BUILT_LOCK:  # the least recently built ones let go of theirs past MAX_PATTERN_BYTES
                _BUILT.pop(id(self), None)
                _BUILT[id(self)] = self
                total = sum(p._bufs[2] * p.size for p in _BUILT.values())
                while total > MAX_PATTERN_BYTES and len(_BUILT) > 1:
                    old = _BUILT.popitem(last=False)[1]
                    total -= old._bufs[2] * old.size
                    old._bufs = (None, None, 0)  # a thread using them holds its own references
        return bufs[0], bufs[1]


_BUILT: OrderedDict[int, _Pattern] = OrderedDict()  # patterns holding buffers, oldest first
_BUILT_LOCK = threading.Lock()


class _Plan:
    """A bulk template: its format, the byte span of each value, its verification patterns.

    A learning rate or loss scale often stays the same over many lines: it is *pinned* (the
    pattern holds its bytes, so the verification checks it, and it is parsed once). One that
    changes within PIN_MIN lines is not pinned again for this template.
    """

    __slots__ = ("k", "name", "floats", "step", "tpl", "size", "base", "pin_ok", "_patterns")

    def __init__(self, k: int, spans: dict[str, tuple[int, int]], tpl: bytes) -> None:
        self.k = k
        self.name = formats.FORMATS[k].name
        self.floats = {r: spans[r] for r in _FLOATS if r in spans}
        self.step = spans.get("step")
        self.tpl = tpl
        self.size = len(tpl)
        mask = bytearray(0x76 if ch == 0x30 else 0x7F for ch in tpl)
        for r in ("skip", "nan"):  # Megatron's counters: "0" exactly
            if r in spans:
                mask[spans[r][0]] = 0x7F
        self.base = _Pattern(tpl, bytes(mask))
        self.pin_ok = {r: r in PINNED for r in self.floats}
        self._patterns: dict[tuple[tuple[str, bytes], ...], _Pattern] = {}

    def pattern(self, pins: tuple[tuple[str, bytes], ...]) -> _Pattern:
        """The pattern with these values pinned (role, the value's bytes)."""
        if not pins:
            return self.base
        got = self._patterns.get(pins)
        if got is None:
            tpl, mask = bytearray(self.tpl), bytearray(self.base.exact)
            for role, raw in pins:
                off, width = self.floats[role]
                tpl[off : off + width] = raw
                mask[off : off + width] = b"\x7f" * width
            got = _Pattern(bytes(tpl), bytes(mask))
            if len(self._patterns) >= 8:
                self._patterns.clear()
            self._patterns[pins] = got
        return got


#: template (with its newline) -> IGNORE, FEED or a _Plan; shared by the worker threads
_PLANS: dict[bytes, Any] = {}
_MAX_PLANS = 256
_CYCLES: dict[tuple[tuple[bytes, int], ...], Any] = {}  # cycle key -> _Cycle or None (cannot be one)
_SEEN: deque[tuple[tuple[Any, int], ...]] = deque(maxlen=4)  # the runs of the cycles found last


def _plan(tpl: bytes) -> Any:
    plan = _PLANS.get(tpl)
    if plan is None:
        raw = tpl[:-1] if tpl.endswith(b"\n") else tpl
        got = plan_bytes(raw)
        if isinstance(got, int):
            plan = got
        else:
            k, spans = got
            if any(spans[r][1] != 1 for r in ("skip", "nan") if r in spans):
                plan = FEED  # a counter of two digits or more is not 0: the line reader decides
            else:
                plan = _Plan(k, spans, tpl)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
            _CYCLES.clear()
            _SEEN.clear()
        _PLANS[tpl] = plan
    return plan


class _Cycle:
    """A cycle of runs of bulk templates of one format that a log repeats (a progress bar whose
    counter changes width: 9 lines of one width, 90 of the next, 900 of the next, again): verified
    as one pattern, its values cut out of the lines at offsets that are the same, from the line
    start or from the line end, in every template of the cycle."""

    __slots__ = ("runs", "key", "pattern", "lines", "prefix", "lens", "spans", "plan")

    def __init__(self, runs: tuple[tuple[_Plan, int], ...], spans: dict[str, tuple[int, int]]) -> None:
        self.runs = runs
        self.key = runs
        self.plan = runs[0][0]  # format, roles, whether it has steps
        self.pattern = _Pattern(b"".join(p.tpl * n for p, n in runs), b"".join(p.base.exact * n for p, n in runs))
        self.lines = sum(n for _, n in runs)
        self.lens = b"".join(struct.pack("<i", p.size) * n for p, n in runs)  # int32 line lengths
        self.prefix: list[tuple[int, int, _Plan]] = []  # (first line, its offset in the cycle, plan)
        line = off = 0
        for p, n in runs:
            self.prefix.append((line, off, p))
            line += n
            off += n * p.size
        self.spans = spans  # role -> (start, stop) for binary_slice (negative: from the line end)

    @staticmethod
    def make(runs: tuple[tuple[_Plan, int], ...]) -> _Cycle | None:
        key = tuple((p.tpl, n) for p, n in runs)
        if key in _CYCLES:
            return _CYCLES[key]  # type: ignore[no-any-return]
        cyc = None
        plans = [p for p, _ in runs]
        if len({p.k for p in plans}) == 1 and len({tuple(p.floats) for p in plans}) == 1:
            spans: dict[str, tuple[int, int]] = {}
            for role in plans[0].floats:  # steps are read line by line, where needed (Run.step_at)
                got = [p.floats[role] for p in plans]
                if len({w for _, w in got}) != 1:
                    break
                width = got[0][1]
                if len({o for o, _ in got}) == 1:
                    spans[role] = (got[0][0], got[0][0] + width)
                elif len({p.size - o for p, (o, _) in zip(plans, got)}) == 1:
                    start = got[0][0] - plans[0].size
                    spans[role] = (start, start + width)
                else:
                    break
            else:
                cyc = _Cycle(runs, spans)
        _CYCLES[key] = cyc
        return cyc

    def line(self, i: int) -> tuple[int, _Plan]:
        """(offset from the block start, plan) of line ``i`` of a block of whole cycles."""
        q, r = divmod(i, self.lines)
        for first, off, p in reversed(self.prefix):
            if r >= first:
                return q * self.pattern.size + off + (r - first) * p.size, p
        raise AssertionError(i)


class _Run:
    """Bulk lines of one template (or of whole cycles): ``n`` lines from ``start``, and per float
    role (values, min, max)."""

    __slots__ = ("plan", "start", "n", "vals", "cycle")

    def __init__(self, plan: _Plan, start: int, n: int, vals: dict[str, Any], cycle: _Cycle | None = None) -> None:
        self.plan = plan
        self.start = start
        self.n = n
        self.vals = vals
        self.cycle = cycle

    def step_at(self, data: Any, i: int) -> int:
        if self.cycle is None:
            off, width = self.plan.step  # type: ignore[misc]
            p = self.start + i * self.plan.size + off
        else:
            at, plan = self.cycle.line(i)
            off, width = plan.step  # type: ignore[misc]
            p = self.start + at + off
        return int(data[p : p + width])


class _Region:
    """Analyses one region (in a worker thread): :meth:`run`."""

    def __init__(self, data: Any, buf: Any, a: int, b: int) -> None:
        self.data = data
        self.buf = buf  # pyarrow buffer over data
        self.a, self.b = a, b
        self.items: list[Any] = []  # _Run or (start, end) of a line to feed
        #: [start, end) spans of the lines not taken in bulk (merged when adjacent), for an
        #: observer that must see every line but the metric runs (signatures, stated facts)
        self.plain: list[list[int]] = []

    def run(self) -> tuple[list[Any], int]:
        """(items in log order, the offset from which the other engines read the rest of the
        region: ``b`` when none). The rest goes to them past MAX_STEPS single lines and runs
        (lines of many shapes), or from a run with a value that ``Format.apply`` refuses."""
        self.pa, self.pc, self.pool, self.high = arrow()
        data, b = self.data, self.b
        find = data.find
        items = self.items
        pos = self.a
        steps = 0
        recent: list[tuple[_Plan, int]] = []  # the bulk runs just before pos (for cycles)
        while pos < b:
            if recent and (got := self._cycle(recent, pos)) is not None:
                if got is False:
                    return items, pos
                items.append(got)
                pos += got.n // got.cycle.lines * got.cycle.pattern.size  # type: ignore[union-attr]
                recent.clear()
                continue
            steps += 1
            if steps > MAX_STEPS:
                return items, pos
            e = find(b"\n", pos, b)
            end = e + 1 if e >= 0 else b
            plan = _plan(data[pos:end].translate(DIGITS))
            if not isinstance(plan, _Plan):
                recent.clear()
                self._plain(pos, end)
                if plan == FEED:
                    items.append((pos, end - 1 if e >= 0 else end))
                pos = end
                continue
            run = self._take(plan, pos, (b - pos) // plan.size)
            if run is False:
                return items, pos
            if run is None:  # this line fails its own template (a Megatron counter not 0)
                self._plain(pos, end)
                items.append((pos, end - 1 if e >= 0 else end))
                recent.clear()
                pos = end
                continue
            items.append(run)
            recent.append((plan, run.n))
            pos += run.n * plan.size
        return items, b

    def _plain(self, a: int, b: int) -> None:
        if self.plain and self.plain[-1][1] == a:
            self.plain[-1][1] = b
        else:
            self.plain.append([a, b])

    def _take(self, plan: _Plan, pos: int, most: int) -> _Run | None | bool:
        """The run of lines from ``pos`` (at most ``most``) that have the template of ``plan``
        (the values it can pin pinned to the first line's); None when the first line fails it,
        False when a value fails what ``Format.apply`` requires."""
        data = self.data
        pins = tuple((r, data[pos + o : pos + o + w]) for r, (o, w) in plan.floats.items() if plan.pin_ok[r])
        pat = plan.pattern(pins)
        n, bad = self._count(pat, pos, most)
        if bad >= 0 and n < PIN_MIN:  # a pinned value changed soon: do not pin it again
            col = bad % plan.size
            for role, _ in pins:
                off, width = plan.floats[role]
                if off <= col < off + width:
                    plan.pin_ok[role] = False
        if not n:
            return None
        vals = self._values(plan, pos, n, dict(pins))
        if vals is None:
            return False
        return _Run(plan, pos, n, vals)

    def _cycle(self, recent: list[tuple[_Plan, int]], pos: int) -> _Run | None | bool:
        """Whole cycles from ``pos`` when the last runs repeat a cycle of 2 to MAX_CYCLE runs, or
        when the one run so far ends a run of a cycle seen before (a region starts inside a cycle);
        None when neither or the next lines break it; False: a value fails ``Format.apply``."""
        tries: list[tuple[tuple[_Plan, int], ...]] = []
        if len(recent) == 1:
            plan, n = recent[0]
            for runs in list(_SEEN):
                tries.extend(runs[j + 1 :] + runs[: j + 1] for j, (p, c) in enumerate(runs) if p is plan and n <= c)
        hinted = len(tries)
        for p in range(2, min(MAX_CYCLE, len(recent) // 2) + 1):
            last = recent[-p:]
            if all(a[0] is b[0] and a[1] == b[1] for a, b in zip(recent[-2 * p : -p], last)):
                tries.append(tuple(last))
        for runs in tries:
            cyc = _Cycle.make(runs)
            if cyc is None:
                continue
            k, _ = self._count(cyc.pattern, pos, (self.b - pos) // cyc.pattern.size)
            if not k:
                continue
            recent.clear()
            vals = self._cycle_values(cyc, pos, k)
            if vals is None:
                return False
            if cyc.key not in _SEEN:
                _SEEN.append(cyc.key)
            return _Run(cyc.plan, pos, k * cyc.lines, vals, cyc)
        if len(tries) > hinted:
            recent.clear()  # a repeat that the next lines break: not tried again before new runs
        return None

    def _count(self, pat: _Pattern, pos: int, most: int) -> tuple[int, int]:
        """How many copies of the pattern from ``pos`` (at most ``most``) the bytes match, and the
        offset of the first bad byte from ``pos`` (-1 when all ``most`` match). Window by window,
        the first ones small."""
        size = pat.size
        per = max(WINDOW // size, 1)
        done = 0
        m = max(FIRST // size, 1)
        while done < most:
            m = min(m, most - done, per)
            bad = self._first_bad(pat, pos + done * size, m * size)
            if bad >= 0:
                return done + bad // size, done * size + bad
            done += m
            m *= 2
        return done, -1

    def _first_bad(self, pat: _Pattern, pos: int, nbytes: int) -> int:
        """The offset of the first byte of data[pos:pos+nbytes] that the pattern (repeated)
        rejects, or -1."""
        pa, pc, pool = self.pa, self.pc, self.pool
        words = nbytes >> 3
        if words:
            tpl, mask = pat.buffers(-(-nbytes // pat.size))
            u64 = pa.uint64()
            x = pa.Array.from_buffers(u64, words, [None, self.buf.slice(pos, words * 8)])
            p = pa.Array.from_buffers(u64, words, [None, tpl.slice(0, words * 8)])
            a = pa.Array.from_buffers(u64, words, [None, mask.slice(0, words * 8)])
            u8 = pa.uint8()
            y = pc.bit_wise_xor(x, p, memory_pool=pool)
            h = pc.add(y, a, memory_pool=pool)
            # no byte of y with its high bit (the usual case): y + A carries nowhere and its high
            # bits are the bad bytes; else (y + A) | y (see the module doc)
            if pc.max(pa.Array.from_buffers(u8, words * 8, y.buffers())).as_py() >= 0x80:
                h = pc.bit_wise_or(h, y, memory_pool=pool)
            if pc.max(pa.Array.from_buffers(u8, words * 8, h.buffers())).as_py() >= 0x80:
                i = pc.indices_nonzero(pc.bit_wise_and(h, self.high)).to_pylist()[0]
                v = h[i].as_py() & 0x8080808080808080
                return i * 8 + ((v & -v).bit_length() - 1) // 8
        data, tpl_b, exact, size = self.data, pat.tpl, pat.exact, pat.size
        for j in range(words * 8, nbytes):  # the last bytes (under a word)
            x, t = data[pos + j], tpl_b[j % size]
            if not (x == t or (exact[j % size] == 0x76 and 0x30 <= x <= 0x39)):
                return j
        return -1

    def _values(self, plan: _Plan, pos: int, n: int, pins: dict[str, bytes]) -> dict[str, Any] | None:
        """The float values of ``n`` lines of ``plan`` from ``pos``: (values, min, max) per role;
        None when one fails what ``Format.apply`` requires (overflow to inf, a negative lr, loss
        scale or step time)."""
        pa, pc, pool = self.pa, self.pc, self.pool
        lines = pa.Array.from_buffers(pa.binary(plan.size), n, [None, self.buf.slice(pos, n * plan.size)])
        out = {}
        for role, (off, width) in plan.floats.items():
            if role in pins:  # the same bytes on every line (verified)
                got = _constant(pins[role], n)
            else:
                tokens = pc.binary_slice(lines, off, off + width, memory_pool=pool).buffers()[1]  # n * width bytes
                got = _parse(pa.Array.from_buffers(pa.string(), n, [None, _offsets(width, n), tokens]))
            if not _ok(plan.name, role, got):
                return None
            out[role] = got
        return out

    def _cycle_values(self, cyc: _Cycle, pos: int, k: int) -> dict[str, Any] | None:
        """:meth:`_values` for ``k`` whole cycles from ``pos`` (lines of several lengths)."""
        pa, pc, pool = self.pa, self.pc, self.pool
        n = k * cyc.lines
        lens = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(b"\0\0\0\0" + cyc.lens * k)])
        offsets = pc.cumulative_sum(lens, memory_pool=pool).buffers()[1]
        lines = pa.Array.from_buffers(pa.binary(), n, [None, offsets, self.buf.slice(pos, k * cyc.pattern.size)])
        out = {}
        for role in cyc.plan.floats:
            start, stop = cyc.spans[role]
            tok = pc.binary_slice(lines, start, stop, memory_pool=pool)
            got = _parse(pa.Array.from_buffers(pa.string(), n, [None, tok.buffers()[1], tok.buffers()[2]]))
            if not _ok(cyc.plan.name, role, got):
                return None
            out[role] = got
        return out


def _constant(raw: bytes, n: int) -> tuple[Any, float, float]:
    pa, _, pool, _ = arrow()
    v = float(raw)
    return pa.repeat(pa.scalar(v, pa.float64()), n, memory_pool=pool), v, v


def _parse(text: Any) -> tuple[Any, float, float]:
    """Decimal texts (ASCII, verified) as float64 values, with their min and max."""
    pa, pc, pool, _ = arrow()
    vals = pc.cast(text, pa.float64(), memory_pool=pool)
    return (vals, *extremes(vals))


def _ok(name: str, role: str, got: tuple[Any, float, float]) -> bool:
    """No value overflowed to inf, and none is negative where ``Format.apply`` refuses it."""
    lo, hi = got[1], got[2]
    return -_INF < lo and hi < _INF and not (role in _NONNEG.get(name, ()) and lo < 0)


def extremes(vals: Any) -> tuple[float, float]:
    """(min, max) of a float64 array without NaN. Finite non-negative doubles order as their bit
    patterns do, and min/max over int64 is many times faster than over float64 in pyarrow; with
    a sign bit set anywhere, the float kernel."""
    pa, pc, _, _ = arrow()
    bits = pc.min_max(vals.view(pa.int64()))
    lo, hi = bits["min"].as_py(), bits["max"].as_py()
    if lo >= 0:
        return _F64.unpack(_I64.pack(lo))[0], _F64.unpack(_I64.pack(hi))[0]
    got = pc.min_max(vals)
    return got["min"].as_py(), got["max"].as_py()


_F64, _I64 = struct.Struct("<d"), struct.Struct("<q")
_OFFSETS: dict[int, Any] = {}


def _offsets(width: int, n: int) -> Any:
    """An int32 buffer 0, width, 2 * width, ... (at least n + 1 of them), kept per width."""
    pa, pc, pool, _ = arrow()
    got = _OFFSETS.get(width)
    if got is None or len(got) < 4 * (n + 1):
        cap = max(n + 1, 2 * len(got) // 4 if got is not None else 0, 4096)
        if sum(len(b) for b in _OFFSETS.values()) + 4 * cap > MAX_PATTERN_BYTES:
            _OFFSETS.clear()
        ones = pa.repeat(pa.scalar(width, pa.int32()), cap, memory_pool=pool)
        got = pc.cumulative_sum(ones, start=-width, memory_pool=pool).buffers()[1]
        _OFFSETS[width] = got
    return got


_INF = float("inf")
_ARROW: list[Any] = []


def arrow() -> tuple[Any, Any, Any, Any]:
    """(pyarrow, pyarrow.compute, the memory pool, the high-bits scalar), imported once. The pool
    is jemalloc's (else the system's): pyarrow's default, mimalloc, keeps tens of MB more resident
    with a few threads allocating megabytes."""
    if not _ARROW:
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            pool = pa.jemalloc_memory_pool()
        except NotImplementedError:
            pool = pa.system_memory_pool()
        _ARROW.extend((pa, pc, pool, pa.scalar(0x8080808080808080, pa.uint64())))
    return _ARROW[0], _ARROW[1], _ARROW[2], _ARROW[3]


class FixedScan(ColumnarScan):
    """The block reader over a memory map, regions read by this engine (see the module doc); a
    region it refuses goes to the columnar engine (polars installed) or the Python path."""

    def __init__(self, scanner: Any, *, columnar_ok: bool = True, threads: int | None = None,
                 observer: Any = None) -> None:
        super().__init__(scanner, threshold=0, min_region=64 * 1024)
        self.columnar_ok = columnar_ok
        #: sees every byte but the metric runs taken in bulk: ``look(bytes)`` for spans of whole
        #: lines, ``wrap(stream)`` for a stream read by the other engines (see kb.readers.incident)
        self.observer = observer
        self.fixed_used = False  # this engine read at least one region
        self.nthreads = max(threads or THREADS, 1)
        self.data: Any = None

    @property
    def engine(self) -> str:
        return "arrow" if self.fixed_used else "polars" if self.used else "python"

    def run_stream(self, stream: Any, start: int, block_size: int) -> None:
        """Scan ``stream`` (a regular file) from ``start`` through a memory map; if the file shrinks
        under the scan, the rest is read from the stream."""
        size = os.fstat(stream.fileno()).st_size
        if size <= start:
            return
        try:
            mm = mmap.mmap(stream.fileno(), size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a file system that cannot map it
            stream.seek(start)
            self._read_rest(stream, block_size)
            return
        try:
            done = self.run_data(mm, start, size, fd=stream.fileno())
        finally:
            try:
                mm.close()
            except BufferError:  # a view still held (an exception on its way out): closed when freed
                pass
        if done < size:  # the file shrank: the stream gives what is left
            stream.seek(done)
            self._read_rest(stream, block_size)
        else:
            stream.seek(size)

    def _read_rest(self, stream: Any, block_size: int) -> None:
        """The rest of the stream read in blocks, by the columnar engine or the Python path."""
        if self.observer is not None:
            stream = self.observer.wrap(stream)
        if self.columnar_ok:
            ColumnarScan.run(self, stream, max(block_size, columnar.BLOCK))
        else:
            BlockScan.run(self, stream, block_size)

    def run_data(self, data: Any, start: int, end: int, fd: int | None = None) -> int:
        """Scan data[start:end] (an mmap or bytes); the offset where the scan stopped."""
        from concurrent.futures import ThreadPoolExecutor

        pa = arrow()[0]
        self.data = data
        buf = pa.py_buffer(data)
        dropped = 0  # pages below this offset were dropped
        page = mmap.PAGESIZE
        pending: deque[tuple[int, int, Any]] = deque()
        pos = start
        pool = ThreadPoolExecutor(self.nthreads, thread_name_prefix="kb-log-fixed")
        try:
            while pos < end or pending:
                while pos < end and len(pending) < self.nthreads + 1:
                    if fd is not None and os.fstat(fd).st_size < end:
                        end = pos  # the file shrank: stop here, the stream reads the rest
                        break
                    b = self._region_end(data, pos, end)
                    whole = b == end or data[b - 1] == 10  # else a line over MAX_LINE was cut: the Python path
                    region = _Region(data, buf, pos, b) if whole else None
                    job = pool.submit(region.run) if region is not None else None
                    pending.append((pos, b, job, region))
                    pos = b
                if not pending:
                    break
                a, b, job, region = pending.popleft()
                items, rest = job.result() if job is not None else ([], a)
                if self.observer is not None and region is not None:
                    for s0, s1 in region.plain:
                        if s0 < rest:
                            self._observe(data, s0, min(s1, rest))
                self._apply_items(data, a, rest, b, end, items)
                if rest < b:
                    if self.observer is not None:
                        self._observe(data, rest, b)
                    self._other(data, rest, b, end)
                del items, job, region
                if isinstance(data, mmap.mmap) and b - page > dropped:
                    cut = (b // page) * page
                    data.madvise(mmap.MADV_DONTNEED, dropped, cut - dropped)
                    dropped = cut
        finally:
            pool.shutdown(cancel_futures=True)
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None
            pending.clear()
            del buf
            self.data = None
        return pos

    def _observe(self, data: Any, a: int, b: int) -> None:
        """Hand data[a:b] to the observer in pieces of at most OBSERVE bytes (bounded copies)."""
        for i in range(a, b, OBSERVE):
            self.observer.look(bytes(data[i:min(i + OBSERVE, b)]))

    @staticmethod
    def _region_end(data: Any, a: int, end: int) -> int:
        """The end of the region from ``a``: after the last newline within REGION bytes, else after
        the next newline (a line over REGION bytes), else ``end``; a line over MAX_LINE is cut."""
        if end - a <= REGION:
            return end
        cut = data.rfind(b"\n", a, a + REGION)
        if cut >= 0:
            return cut + 1
        cut = data.find(b"\n", a + REGION, min(a + REGION + MAX_LINE, end))
        return cut + 1 if cut >= 0 else min(a + REGION + MAX_LINE, end)

    def _context(self, data: Any, a: int, b: int, end: int) -> None:
        """Fed lines of region [a, b) read their context from ``data``."""
        self.buf = data
        self.floor = a
        self.lo, self.hi = a, b
        nxt = data.find(b"\n", b, end) if b < end else -1
        self.limit = nxt if nxt >= 0 else end

    def _apply_items(self, data: Any, a: int, rest: int, b: int, end: int, items: list[Any]) -> None:
        """Apply region [a, rest) (analysed; region [a, b)) in log order: runs in bulk, lines fed
        with their context."""
        if rest == a:
            return
        self._context(data, a, b, end)
        if self.progress is not None:
            self.progress(rest - a)
        self.fixed_used = True
        batch: list[_Run] = []
        for it in items:
            if isinstance(it, _Run):
                if batch and batch[-1].plan.k != it.plan.k:
                    self._apply_runs(batch)
                    batch = []
                batch.append(it)
            else:
                if batch:
                    self._apply_runs(batch)
                    batch = []
                self._feed(it[0], it[1])
        if batch:
            self._apply_runs(batch)
        self._remember(a, rest)

    def _apply_runs(self, runs: list[_Run]) -> None:
        """Consecutive runs of one format (only ignored lines between them): ``Format.apply``."""
        pa, _, pool, _ = arrow()

        sc = self.sc
        data = self.data
        name = runs[0].plan.name
        stepped = runs[0].plan.step is not None
        for role, path in _TARGETS:
            if role not in _APPLIED[name]:
                continue
            mine = [r for r in runs if role in r.vals]
            if not mine:
                continue
            got = [r.vals[role] for r in mine]
            col = got[0][0] if len(got) == 1 else pa.chunked_array([g[0] for g in got], pa.float64())
            ext = (min(g[1] for g in got), max(g[2] for g in got))
            if stepped:
                def steps(k: int, mine: list[_Run] = mine) -> list[int]:
                    out: list[int] = []
                    for r in mine:
                        out.extend(r.step_at(data, i) for i in range(min(k - len(out), r.n)))
                        if len(out) >= k:
                            break
                    return out

                sc.series[path].extend_arrow(col, steps=steps, extremes=ext, pool=pool)
            else:
                sc.series[path].extend_arrow(col, step=sc.step, extremes=ext, pool=pool)
        if stepped:
            last = runs[-1]
            sc.step = last.step_at(data, last.n - 1)
            timed = [r for r in runs if "ms" in r.vals and "ms" in _APPLIED[name]]
            if timed:
                sc.timed_steps(timed[0].step_at(data, 0), timed[-1].step_at(data, timed[-1].n - 1))
        sc.metric_records += sum(r.n for r in runs)
        sc.run = 0

    def _other(self, data: Any, a: int, b: int, end: int) -> None:
        """Region [a, b) read by the columnar engine or the Python path, from a copy of its bytes (a
        leading newline, the region, the line after it)."""
        nxt = data.find(b"\n", b, end) if b < end else -1
        stop = nxt + 1 if nxt >= 0 else end
        buf = bytearray(1 + stop - a)
        buf[0] = 10
        with memoryview(data) as mv:
            buf[1:] = mv[a:stop]
        if isinstance(data, mmap.mmap):  # the copy is read from now on: drop the mapped pages
            lo, top = (a // mmap.PAGESIZE) * mmap.PAGESIZE, (stop // mmap.PAGESIZE) * mmap.PAGESIZE
            if top > lo:
                data.madvise(mmap.MADV_DONTNEED, lo, top - lo)
        hi = 1 + (b - a)
        self.floor = 1
        if self.columnar_ok:
            self._complete(buf, hi, self._submit(buf, 1, hi))
        else:
            self.buf = buf
            BlockScan.scan(self, 1, hi)
            self._remember(1, hi)


def read_all(stream: Any, block_size: int) -> bytes:
    """The rest of a (non-file) stream as bytes (the engine forced on a stream, in tests)."""
    out = bytearray()
    chunk = bytearray(max(block_size, 1 << 16))
    while n := read_block(stream, chunk, 0, len(chunk)):
        out += chunk[:n]
    return bytes(out)
