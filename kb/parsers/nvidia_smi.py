"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` and the default table.

CSV columns are found by header name (units in ``[..]`` stripped, ``gpu_name`` aliased to
``name``). Without a header the column order of ``DEFAULT_QUERY`` (what ``kb collect`` asks
for) is assumed. ``[N/A]``-style values are missing, never 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, append_sample, clamp_percent, set_fact, strip_ansi, to_float, trim

NAME = "nvidia_smi"

#: the --query-gpu list used by ``kb collect``; the column order of headerless CSV
DEFAULT_QUERY: tuple[str, ...] = (
    "index", "name", "utilization.gpu", "utilization.memory", "memory.used", "memory.total",
    "driver_version",
)
_KNOWN = {
    "index", "name", "gpu_name", "utilization.gpu", "utilization.memory", "memory.used",
    "memory.total", "memory.free", "driver_version", "temperature.gpu", "uuid", "pstate",
    "power.draw", "timestamp", "count", "fan.speed", "memory.reserved",
}
_TABLE_TITLE = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
#: the first row of a GPU: its index, name and persistence mode (Linux) or driver model (Windows:
#: WDDM, or TCC for a compute-only card)
_TABLE_ROW1 = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC)\s+\|")
_TABLE_ROW2 = re.compile(
    r"^\|\s*\S+\s+\S+\s+\S+\s+.*?\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+|N/A)%?\s+"
)
_HEADERLESS_DEFAULT = re.compile(r"^\d+, [^,]+(, ([\d.]+|\[[^\]]*\]|N/A)){4}, \d+\.\d+(\.\d+)?\s*$")
_CSV_VALUE_UNIT = re.compile(r"^\s*([-+0-9.,]+)\s*(%|MiB|W|MHz|KB/s|C)?\s*$")


def _header_key(cell: str) -> str:
    key = cell.strip().split(" [", 1)[0].strip().lower()
    return "name" if key == "gpu_name" else key


def _is_header(cells: list[str]) -> bool:
    keys = [_header_key(c) for c in cells]
    known = sum(k in _KNOWN for k in keys)
    return known >= max(1, len(keys) // 2) or (known >= 3 and bool({"index", "name", "utilization.gpu"} & set(keys)))


def sniff(head: str) -> bool:
    """CSV whose header names query fields, or the default table's title line."""
    head = strip_ansi(head)
    lines = [ln for ln in head.splitlines() if ln.strip()]
    boxed = sum(1 for ln in lines if ln.lstrip().startswith(("|", "+")))
    # a table only when it dominates the text (a training log that starts with a pasted
    # nvidia-smi table is a training log)
    if lines and boxed * 2 >= len(lines):
        if "NVIDIA-SMI" in head and "Driver Version" in head:
            return True
        if re.search(r"^\|\s+\d+\s+\S.*\s(On|Off)\s+\|\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f:.]+", head, re.M):
            return True
    for line in head.splitlines()[:5]:
        if line.startswith("#") or "," not in line:
            continue
        cells = line.split(",")
        if len(cells) >= 2 and _is_header(cells) and any("." in c or c.strip() in {"index", "name"} for c in cells):
            return True
        # headerless output of DEFAULT_QUERY (what kb collect runs)
        if _HEADERLESS_DEFAULT.match(line):
            return True
    return False


def _value(cell: str) -> float | None:
    m = _CSV_VALUE_UNIT.match(cell)
    return to_float(m.group(1)) if m else None


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Parse query-gpu CSV (any column set) or the default table into ``gpu.*`` facts."""
    res = ParseResult(format=NAME, source=source)
    facts = res.facts
    columns: list[str] | None = None
    indices: set[str] = set()
    table = False
    skipped = 0
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if not line.strip() or line.startswith("#"):
            continue
        m = _TABLE_TITLE.search(line)
        if m:
            table = True
            set_fact(facts, "gpu.driver_version", m.group(2))
            set_fact(facts, "gpu.cuda_version", m.group(3))
            continue
        if line.startswith(("|", "+")):
            table = True
            _table_line(line, facts, indices, res.notes)
            continue
        if table or "," not in line:
            skipped += 1
            continue
        cells = [c.strip() for c in line.split(",")]
        if _is_header(cells):
            columns = [_header_key(c) for c in cells]
            continue
        cols = columns or list(DEFAULT_QUERY)
        if len(cells) != len(cols):
            # a name with a comma, or a cut line: only safe to repair when name is last
            if len(cells) > len(cols) and cols and cols[-1] == "name":
                cells = cells[: len(cols) - 1] + [", ".join(cells[len(cols) - 1 :])]
            else:
                skipped += 1
                continue
        row = dict(zip(cols, cells))
        _csv_row(row, facts, indices)
    if indices:
        set_fact(facts, "gpu.count", len(indices))
    if skipped:
        res.notes.append(f"{source}: {skipped} line(s) not understood as nvidia-smi output were skipped")
    res.facts = trim(facts)
    return res


def _csv_row(row: dict[str, str], facts: dict, indices: set[str]) -> None:
    idx = row.get("index")
    indices.add(idx if idx is not None and idx.strip().isdigit() else f"row{len(indices)}")
    name = row.get("name")
    if name and not name.startswith("["):
        set_fact(facts, "gpu.name", name)
    drv = row.get("driver_version")
    if drv and not drv.startswith("[") and drv != "N/A":
        set_fact(facts, "gpu.driver_version", drv)
    append_sample(facts, "gpu.utilization_samples", clamp_percent(_value(row.get("utilization.gpu", ""))))
    append_sample(
        facts, "gpu.memory_utilization_samples", clamp_percent(_value(row.get("utilization.memory", "")))
    )
    used = _value(row.get("memory.used", ""))
    if used is not None and used >= 0:
        append_sample(facts, "gpu.memory_used_mib", used)
    total = _value(row.get("memory.total", ""))
    if total is not None and total > 0:
        set_fact(facts, "gpu.memory_total_mib", total)


def _table_line(line: str, facts: dict, indices: set[str], notes: list[str]) -> None:
    m = _TABLE_ROW1.match(line)
    if m and "MiB" not in line:
        indices.add(m.group(1))
        if m.group(3) in ("WDDM", "TCC"):
            set_fact(facts, "software.windows", True)
        name = m.group(2).strip()
        if name and not name.endswith("..."):
            set_fact(facts, "gpu.name", name)
        elif name:
            set_fact(facts, "gpu.name", name)
            if not any("truncates" in n for n in notes):
                notes.append("gpu.name: the table truncates product names; use --query-gpu=name for the full name")
        return
    m = _TABLE_ROW2.match(line)
    if m:
        append_sample(facts, "gpu.memory_used_mib", float(m.group(1)))
        set_fact(facts, "gpu.memory_total_mib", float(m.group(2)))
        if m.group(3) != "N/A":
            append_sample(facts, "gpu.utilization_samples", clamp_percent(float(m.group(3))))
