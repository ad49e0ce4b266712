"""``gpustat`` output: one line per GPU, as gpustat's ``GPUStat.print_to`` writes it.

    myhost  Wed Jan  1 12:00:00 2020  440.33.01
    [0] GeForce GTX Titan X | 77°C,  96 % | 11848 / 12287 MB | python/52046(11821M)

The temperature (``°C``; ``'C`` in older releases), an optional fan speed (``--show-fan``,
``NN %,`` before the utilisation), the utilisation, optional codec and power fields, then
used / total memory in MiB (gpustat's ``MB`` is 2**20 bytes) and the processes. A field NVML
could not read prints ``??``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, append_sample, clamp_percent, set_fact, strip_ansi, trim

NAME = "gpustat"


def _v(name: str) -> str:
    """A number, or the ``??`` NVML could not read, as the named group."""
    return rf"(?P<{name}>\d+|\?\?)"


_ROW = re.compile(
    r"^\s*\[(?P<idx>\d{1,3})\]\s+(?P<name>[^|]*?)\s*\|\s*" + _v("temp") + r"\s*(?:°C|'C|C)\s*,\s*"
    + r"(?:" + _v("fan") + r"\s*%\s*,\s*)?" + _v("util") + r"\s*%[^|]*\|\s*"
    + _v("used") + r"\s*/\s*" + _v("total") + r"\s*MB\b")


#: gpustat's first line: host, time, driver version ("myhost  Wed Jan  1 12:00:00 2020  440.33.01")
_HEADER = re.compile(r"^\S+\s+\w{3} \w{3}\s+\d{1,2} \d{2}:\d{2}:\d{2} \d{4}\s+[\d.]+\s*$")

#: a process under its GPU line (``--show-full-cmd``/``-P``: " ├─  48448 (  85%,  257MB): python")
_PROC = re.compile(r"^\s*[├└│]─?\s*\d+\s*\(")


def is_header(line: str) -> bool:
    """gpustat's first line (host, time, driver version)."""
    return bool(_HEADER.match(line))


def is_row(line: str) -> bool:
    """A GPU line of gpustat's shape (distinctive alone: ``[i] name | T°C, U % | used / total MB``)."""
    return bool(_ROW.match(line))


def in_output(line: str) -> bool:
    """A line of gpustat's output once it has started: a GPU line or a process under one."""
    return bool(_ROW.match(line) or _PROC.match(line))


def sniff(head: str) -> bool:
    """The head is gpustat's output: its GPU lines, under its header or not, are most of it (a
    paste that holds one among other text is the incident reader's, which finds the region)."""
    lines = [x for x in strip_ansi(head).splitlines()[:40] if x.strip()]
    rows = sum(1 for x in lines if _ROW.match(x))
    ours = sum(1 for x in lines if in_output(x)) + sum(1 for x in lines[:1] if _HEADER.match(x))
    return rows >= 1 and 2 * ours >= len(lines)


def _num(v: str | None) -> float | None:
    return None if v is None or v == "??" else float(v)


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Each GPU line gives a utilisation and a memory sample; the card's total and its name."""
    res = ParseResult(format=NAME, source=source)
    facts = res.facts
    indices: set[str] = set()
    names: set[str] = set()
    for raw in lines:
        m = _ROW.match(strip_ansi(raw).rstrip("\r\n"))
        if not m:
            continue
        indices.add(m.group("idx"))
        name = m.group("name").strip().lstrip("…")
        if name:
            names.add(name)
        util = _num(m.group("util"))
        if util is not None:
            append_sample(facts, "gpu.utilization_samples", clamp_percent(util))
        used, total = _num(m.group("used")), _num(m.group("total"))
        if used is not None:
            append_sample(facts, "gpu.memory_used_mib", used)
        if total:
            set_fact(facts, "gpu.memory_total_mib", total)
    if indices:
        set_fact(facts, "gpu.count", len(indices))
    if len(names) == 1:  # a mixed box names no one product
        set_fact(facts, "gpu.name", names.pop())
    res.facts = trim(facts)
    if not res.facts:
        res.notes.append(f"{source}: no gpustat GPU line found")
    return res
