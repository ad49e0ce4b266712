"""``nvidia-smi dmon`` scrolling output (any ``-s`` groups, any driver's column set).

Columns come from the ``# gpu ...`` header, which may recur mid-stream; rows are split on
whitespace (drivers 520 and 525 differ in widths). ``-`` is missing. Rows whose field count
differs from the header (a line cut by a kill) are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from kb.parsers.base import ParseResult, append_sample, clamp_percent, set_fact, strip_ansi, to_float, trim

NAME = "nvidia_smi_dmon"


def sniff(head: str) -> bool:
    """A ``#`` header line naming the ``gpu`` (or ``Idx``) column plus known metric names."""
    for line in strip_ansi(head).splitlines()[:20]:
        s = line.strip()
        if s.startswith("#"):
            names = s.lstrip("#").split()
            if names and names[0] in {"gpu", "Idx"} and len(names) >= 2:
                if names[0] == "Idx" or {"sm", "mem", "pwr", "fb", "mclk", "rxpci", "pviol"} & set(names):
                    return True
            if names[:2] in (["Date", "Time"], ["Time", "gpu"], ["Date", "gpu"]):
                return True
    return False


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Per-row ``sm`` / ``mem`` / ``fb`` readings become GPU utilisation and memory samples."""
    res = ParseResult(format=NAME, source=source)
    facts = res.facts
    columns: list[str] | None = None
    gpus: set[str] = set()
    dropped = 0
    for raw in lines:
        s = strip_ansi(raw).strip()
        if not s:
            continue
        if s.startswith("#"):
            names = s.lstrip("#").split()
            if names and names[0] != "Idx" and "gpu" in names:
                columns = names
            continue
        fields = s.split()
        if columns is None or len(fields) != len(columns):
            dropped += 1
            continue
        row = dict(zip(columns, fields))
        if not row.get("gpu", "").isdigit():
            dropped += 1
            continue
        gpus.add(row["gpu"])
        append_sample(facts, "gpu.utilization_samples", clamp_percent(to_float(row.get("sm", "-"))))
        append_sample(facts, "gpu.memory_utilization_samples", clamp_percent(to_float(row.get("mem", "-"))))
        fb = to_float(row.get("fb", "-"))
        # dmon's "MB" is the driver's MiB (the same number the table prints as MiB)
        if fb is not None and fb >= 0:
            append_sample(facts, "gpu.memory_used_mib", fb)
    if gpus:
        set_fact(facts, "gpu.count", len(gpus))
    if dropped:
        res.notes.append(f"{source}: {dropped} line(s) without a matching dmon header were skipped")
    res.facts = trim(facts)
    return res
