"""``free`` (procps-ng) output: how much of the host's RAM is still available.

    $ free -h
                   total        used        free      shared  buff/cache   available
    Mem:           1.0Ti        38Gi       966Gi       278Mi       2.8Gi       966Gi
    Swap:             0B          0B          0B

Without a flag ``free`` prints KiB, with ``-m`` MiB, with ``-h`` numbers with a unit suffix; only
the share of the total that is still available is kept, which needs no unit. procps before 3.3.10
has no ``available`` column (``total used free shared buffers cached``): there free, buffers and
cache together are what a process can still get. A file with several snapshots keeps the lowest
share (the moment closest to the OOM killer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, set_fact, strip_ansi

NAME = "free"

#: the header, both procps layouts ("total used free shared buff/cache available"; before
#: 3.3.10 "total used free shared buffers cached")
_HEAD = re.compile(r"^\s*total\s+used\s+free\s+shared\s+(?:buff/cache\s+available|buffers\s+cached)\s*$")
_NUM = r"(\d+(?:[.,]\d+)?)\s?([KMGTP]i?|[KMGTP]B?|B)?"
_MEM = re.compile(r"^\s*Mem:" + (r"\s+" + _NUM) * 6 + r"\s*$")
_OTHER = re.compile(r"^\s*(?:Swap:|Total:|Low:|High:|-/\+ buffers/cache:)")
_SCALE = {"": 1.0, "B": 1.0 / 1024, "K": 1.0, "M": 1024.0, "G": 1024.0 ** 2, "T": 1024.0 ** 3, "P": 1024.0 ** 4}


def _kib(value: str, unit: str | None) -> float:
    """A field in KiB when it carries a unit; the bare number otherwise (all fields of one
    table share the flag's unit, so the ratio is right either way)."""
    return float(value.replace(",", ".")) * _SCALE[(unit or "")[:1]]


def is_head(line: str) -> bool:
    return bool(_HEAD.match(line))


def in_table(line: str) -> bool:
    """A line of a ``free`` table: its header, the Mem row or one of the rows after it."""
    return bool(_HEAD.match(line) or _MEM.match(line) or _OTHER.match(line))


def sniff(head: str) -> bool:
    """The head is ``free``'s output (a prompt line before it allowed)."""
    lines = [x for x in strip_ansi(head).splitlines()[:12] if x.strip()]
    i = next((k for k, x in enumerate(lines[:3]) if _HEAD.match(x)), None)
    return i is not None and i + 1 < len(lines) and bool(_MEM.match(lines[i + 1])) and \
        all(in_table(x) for x in lines[i:])


def available_fraction(header: str, mem_row: str) -> float | None:
    """Available / total from one table's header and Mem row, or None when unreadable."""
    m = _MEM.match(mem_row)
    if not m or not _HEAD.match(header):
        return None
    v = [_kib(m.group(2 * k + 1), m.group(2 * k + 2)) for k in range(6)]
    total = v[0]
    if total <= 0:
        return None
    # new layout: the last column is "available"; old: free + buffers + cached
    avail = v[5] if "available" in header else v[2] + v[4] + v[5]
    return round(min(max(avail / total, 0.0), 1.0), 4)


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """The lowest available share over the tables found (``oom.host_memory_available_fraction``)."""
    res = ParseResult(format=NAME, source=source)
    header: str | None = None
    seen: list[float] = []
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if _HEAD.match(line):
            header = line
            continue
        if header is not None and _MEM.match(line):
            frac = available_fraction(header, line)
            if frac is not None:
                seen.append(frac)
            header = None
    if seen:
        set_fact(res.facts, "oom.host_memory_available_fraction", min(seen))
    else:
        res.notes.append(f"{source}: no `free` Mem row found")
    return res
