"""The block reader: whole blocks of bytes, candidate lines found with C-speed searches.

* blocks (1 MiB by default) are read with ``readinto`` into one reused buffer, never decoded as
  a whole;
* every trigger literal but ``oss`` holds a rare "pivot" byte; one ``bytes.find`` (memchr)
  loop per pivot finds the few candidate lines; a pivot byte the log uses a lot (``GiB``,
  ``3.0E-04``) switches to one find per literal, so no per-line loop hides there;
* between two such lines, the ``oss`` lines (metric lines, often every line) of a known trainer
  format are taken in bulk (:mod:`.formats`); any other line is fed one at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import BinaryIO

from kb.parsers.training_log import formats
from kb.parsers.training_log.scanner import LogScanner
from kb.parsers.training_log.triggers import PIVOT_LIST

BLOCK_SIZE = 1024 * 1024
MAX_LINE = 1024 * 1024  # a "line" longer than this is cut (binary junk, tqdm without newlines)
LOOKBACK = 15  # lines before an OOM searched for a backward() frame


def _text(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", "replace")


def regions(stream: BinaryIO, block_size: int, fresh: bool = False
            ) -> Iterator[tuple[bytearray, int, bool]]:
    """The stream cut into regions of whole lines: ``(buf, hi, last)``, buf[1:hi] to scan (buf[0]
    is a newline sentinel). The last complete line of a block is held back for the next one (its
    lookahead); the last region (``last``) holds everything left. A block without two line ends
    is read on into a larger buffer, up to lines of MAX_LINE bytes; past that it is cut. With
    ``fresh`` each region comes in a new buffer, so that it can be analysed while the next one is
    read."""
    cap = max(block_size, 16) + 1
    buf = bytearray(cap)
    buf[0] = 10
    fill = 1  # bytes used in buf: the sentinel and the carried lines
    while True:
        n = read_block(stream, buf, fill, cap)
        end = fill + n
        if n == 0:  # end of input: everything left, the last line with it
            yield buf, end, True
            return
        cut = buf.rfind(b"\n", 1, end)
        cut2 = buf.rfind(b"\n", 1, cut) if cut > 0 else -1
        if cut2 > 0:
            hi = cut2 + 1  # the last complete line is held back for the next block
        elif end < cap:
            fill = end  # room left: read more first
            continue
        elif cap <= 2 * MAX_LINE:
            grown = bytearray(2 * cap)  # lines longer than the block: a larger buffer
            grown[:end] = buf[:end]
            buf, cap, fill = grown, len(grown), end
            continue
        else:
            hi = end  # a line over MAX_LINE (binary junk): cut here
        yield buf, hi, False
        rest = end - hi
        if fresh:
            nbuf = bytearray(cap)
            nbuf[0] = 10
            nbuf[1 : 1 + rest] = buf[hi:end]
            buf = nbuf
        else:
            buf[1 : 1 + rest] = buf[hi:end]
        fill = 1 + rest


def read_block(stream: BinaryIO, buf: bytearray, fill: int, cap: int) -> int:
    """Read into ``buf[fill:cap]`` (``readinto`` when the stream has it, no copy); the count."""
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        with memoryview(buf) as mv:
            return readinto(mv[fill:cap]) or 0
    data = stream.read(cap - fill) or b""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    buf[fill : fill + len(data)] = data
    return len(data)


class BlockScan:
    """The block scan behind ``parse_stream``.

    The buffer always starts with a newline (a sentinel, so that the HF-line lookbehind and the
    line-start search work at the first line). The last complete line of a block is held back
    for the next block, so that every fed line has its next line at hand; the lines before a
    block start are kept (at most LOOKBACK) for the OOM phase.
    """

    def __init__(self, scanner: LogScanner) -> None:
        self.sc = scanner
        self.tail: deque[str] = deque(maxlen=LOOKBACK)  # lines before the current region
        self.buf = bytearray()
        self.lo = 1
        self.hi = 1
        self.floor = 1  # where the text in buf starts (lookback stops there, then uses tail)
        self.limit = 1
        #: called with the bytes of each region scanned (a progress bar), or None
        self.progress: Callable[[int], None] | None = None

    def run(self, stream: BinaryIO, block_size: int) -> None:
        for buf, hi, last in regions(stream, block_size):
            self.buf = buf
            if hi > 1:
                self.scan(1, hi)
            if not last:
                self._remember(1, hi)

    def _remember(self, lo: int, hi: int) -> None:
        """Keep the last LOOKBACK lines of the region for the next region's lookback."""
        buf = self.buf
        pos = hi - 1 if buf[hi - 1] == 10 else hi
        lines = []
        while pos > lo - 1 and len(lines) < LOOKBACK:
            start = max(buf.rfind(b"\n", lo, pos) + 1, lo)
            lines.append(_text(buf[start:pos]))
            pos = start - 1
        if len(lines) < LOOKBACK:
            self.tail.extend(reversed(lines))
        else:
            self.tail.clear()
            self.tail.extend(reversed(lines))

    def _before(self, start: int) -> list[str]:
        buf = self.buf
        floor = self.floor
        lines: list[str] = []
        pos = start - 1  # the newline ending the previous line
        while pos >= floor and len(lines) < LOOKBACK:
            s = max(buf.rfind(b"\n", floor, pos) + 1, floor)
            lines.append(_text(buf[s:pos]))
            pos = s - 1
        lines.reverse()
        if len(lines) < LOOKBACK:
            lines = list(self.tail)[max(0, len(self.tail) - (LOOKBACK - len(lines))) :] + lines
        return lines

    def _after(self, end: int) -> str:
        """The line after the one ending at ``end`` (its newline), "" if none is in the buffer."""
        buf = self.buf
        if end >= self.limit:
            return ""
        e = buf.find(b"\n", end + 1, self.limit)
        return _text(buf[end + 1 : e if e >= 0 else self.limit])

    def _feed(self, start: int, end: int) -> None:
        sc = self.sc
        sc.before = lambda: self._before(start)
        sc.after = lambda: self._after(end)
        sc.feed(_text(self.buf[start:end]))

    def scan(self, lo: int, hi: int) -> None:
        """Feed the candidate lines of buf[lo:hi] (whole lines) in order."""
        buf = self.buf
        self.lo, self.hi = lo, hi
        # the line after the region is in the buffer (held back); find where it ends
        nxt = buf.find(b"\n", hi) if hi < len(buf) else -1
        self.limit = nxt if nxt >= 0 else hi
        find = buf.find
        rfind = buf.rfind
        starts: set[int] = set()
        many = 32 + ((hi - lo) >> 16)  # past this many hits, finding the literals is cheaper
        for piv, lits in PIVOT_LIST:
            p = find(piv, lo, hi)
            hits = 0
            while p >= 0:
                hits += 1
                if hits > many:
                    # a byte this log uses a lot (GiB, 3.0E-04, [Rank 0]): one find per literal instead
                    self._literal_lines(lits, lo, hi, starts)
                    break
                for lit, k, n in lits:
                    q = p - k
                    if q >= lo and q + n <= hi and buf[q : q + n] == lit:
                        s = max(rfind(b"\n", lo, p) + 1, lo)
                        starts.add(s)
                        e = find(b"\n", p, hi)
                        p = find(piv, e, hi) if e >= 0 else -1
                        break
                else:
                    p = find(piv, p + 1, hi)
        seg = lo
        if self.progress is not None:
            self.progress(hi - lo)
        for s in sorted(starts):
            e = find(b"\n", s, hi)
            if e < 0:
                e = hi
            if s > seg:
                self._numeric(seg, s)
            self._feed(s, e)
            seg = e + 1
        if seg < hi:
            self._numeric(seg, hi)

    def _literal_lines(self, lits: tuple[tuple[bytes, int, int], ...], lo: int, hi: int, starts: set[int]) -> None:
        """Add the start of every line of buf[lo:hi] that holds one of ``lits``."""
        buf = self.buf
        for lit, _k, _n in lits:
            q = buf.find(lit, lo, hi)
            while q >= 0:
                starts.add(max(buf.rfind(b"\n", lo, q) + 1, lo))
                e = buf.find(b"\n", q, hi)
                q = buf.find(lit, e, hi) if e >= 0 else -1

    def _numeric(self, a: int, b: int) -> None:
        """The ``oss`` lines of buf[a:b] (whole lines, no other candidate line among them).

        Lines of a known trainer format are taken in bulk (:mod:`.formats`); the others, and
        runs that a format's ``apply`` refuses, are fed one at a time.
        """
        buf = self.buf
        pos = a
        while pos < b:
            p = buf.find(b"oss", pos, b)
            if p < 0:
                return
            s = max(buf.rfind(b"\n", pos, p) + 1, pos)
            e = buf.find(b"\n", p, b)
            e = b if e < 0 else e
            fmt = formats.detect(buf, s, e)
            if fmt is None:
                self._feed(s, e)
                pos = e + 1
            else:
                self._bulk(fmt, s, b)
                return

    def _bulk(self, fmt: formats.Format, a: int, b: int) -> None:
        """Lines of buf[a:b] that match ``fmt`` in bulk, the other ``oss`` lines one by one."""
        buf = self.buf
        rows = fmt.line.findall(buf, a - 1, b)
        if fmt.oss(rows) == buf.count(b"oss", a, b):  # every oss line is one of them
            if not fmt.apply(self.sc, rows):
                self._lines(a, b)
            return
        # mixed: contiguous runs of matching lines in bulk, the lines between one by one
        run: list[formats.Row] = []
        run_lo = done = a
        for m in fmt.line.finditer(buf, a - 1, b):
            s = m.start() + 1
            if s != done:  # a gap before this line
                self._flush(fmt, run, run_lo, done)
                run = []
                self._lines(done, s)
                run_lo = s
            run.append(m.groups(b""))
            done = m.end() + 1
        self._flush(fmt, run, run_lo, done)
        if done < b:
            self._lines(done, b)

    def _flush(self, fmt: formats.Format, rows: list[formats.Row], lo: int, hi: int) -> None:
        if rows and not fmt.apply(self.sc, rows):
            self._lines(lo, hi)

    def _lines(self, a: int, b: int) -> None:
        """Feed the ``oss`` lines of buf[a:b] one at a time."""
        buf = self.buf
        find = buf.find
        p = find(b"oss", a, b)
        while p >= 0:
            s = max(buf.rfind(b"\n", a, p) + 1, a)
            e = find(b"\n", p, b)
            if e < 0:
                e = b
            self._feed(s, e)
            p = find(b"oss", e + 1, b) if e + 1 < b else -1
