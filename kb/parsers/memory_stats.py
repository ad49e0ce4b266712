"""``torch.cuda.memory_stats()`` dict reprs (``OrderedDict([...])``, ``{...}``, bare tuples) and
the ``torch.cuda.memory_summary()`` box table (old KB/MB and new KiB/MiB units).

Keys and rows map to ``oom.allocated_mib`` / ``oom.reserved_mib`` (current values) and
``oom.reserved_unallocated_mib`` (reserved - allocated); ``num_ooms`` / ``CUDA OOMs`` above 0
set ``oom.occurred``. The text table is floored per row, so its values are coarse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, set_fact, strip_ansi, trim

NAME = "memory_stats"

_KV = re.compile(r"""['"]([a-z_]+(?:\.[a-z_]+)*)['"]\s*[,:]\s*(-?\d+(?:\.\d+)?)""")
_OOMS = re.compile(r"CUDA OOMs: (\d+)\s*\|\s*cudaMalloc retries: (\d+)")
_ROW = re.compile(
    r"^\|?\s*(?P<name>[A-Za-z][A-Za-z \-]+?)\s*\|\s*(?P<cur>\d+)\s*(?P<cu>[KMGTP]?i?B|[KM]?)\s*\|"
)
_UNIT = {"B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2, "GB": 1024**3, "GiB": 1024**3,
         "TB": 1024**4, "TiB": 1024**4, "PB": 1024**5, "PiB": 1024**5}
_ROWS = {"allocated memory": "allocated", "gpu reserved memory": "reserved"}


def sniff(head: str) -> bool:
    """The summary title or a stats key such as ``'allocated_bytes.all.current'``."""
    return bool(
        "PyTorch CUDA memory summary" in head
        or re.search(r"['\"](allocated_bytes|reserved_bytes|active_bytes|active|allocation|segment)\.(all|large_pool|small_pool)\.", head)
        or re.search(r"^\|\s*(Allocated memory|GPU reserved memory)\s+\|\s*\d+", head, re.M)
    )


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Read stats keys and summary rows; the first value of each kind wins."""
    res = ParseResult(format=NAME, source=source)
    stats: dict[str, float] = {}
    ooms: int | None = None
    for raw in lines:
        line = strip_ansi(raw).rstrip()
        for m in _KV.finditer(line):
            stats.setdefault(m.group(1), float(m.group(2)))
        m = _OOMS.search(line)
        if m and ooms is None:
            ooms = int(m.group(1))
            stats.setdefault("num_alloc_retries", float(m.group(2)))
            continue
        m = _ROW.match(line.strip())
        if m:
            key = _ROWS.get(m.group("name").strip().lower())
            unit = m.group("cu")
            if key and unit in _UNIT:
                stats.setdefault(f"{key}_bytes.all.current", float(m.group("cur")) * _UNIT[unit])
    if ooms is None and "num_ooms" in stats:
        ooms = int(stats["num_ooms"])
    facts: dict = {}
    alloc = stats.get("allocated_bytes.all.current")
    reserved = stats.get("reserved_bytes.all.current")
    if alloc is not None and alloc >= 0:
        set_fact(facts, "oom.allocated_mib", round(alloc / 2**20, 6))
    if reserved is not None and reserved >= 0:
        set_fact(facts, "oom.reserved_mib", round(reserved / 2**20, 6))
    if alloc is not None and reserved is not None and reserved >= alloc >= 0:
        set_fact(facts, "oom.reserved_unallocated_mib", round((reserved - alloc) / 2**20, 6))
    if ooms:
        set_fact(facts, "oom.occurred", True)
    retries = stats.get("num_alloc_retries")
    if retries:
        res.notes.append(f"{source}: cudaMalloc retries: {int(retries)} (allocator under memory pressure)")
    if not facts and not stats:
        res.notes.append(f"{source}: no memory_stats keys or memory_summary rows found")
    res.facts = trim(facts)
    return res
