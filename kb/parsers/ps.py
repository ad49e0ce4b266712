"""``ps -eo pid,pcpu,pmem,cmd`` and ``ps aux`` (procps-ng), with or without the header.

The header is searched for (it need not be the first line); the command is the rest of the line
(``split(None, n)``) so it keeps its spaces. Python processes are counted; the ``%CPU`` of those
that look like training/serving work (not grep, not inductor compile workers, not resource
trackers or notebooks) becomes ``cpu.process_cpu_percent``. Note that ps ``%CPU`` is a lifetime
average, not a current reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, append_sample, set_fact, strip_ansi, to_float, trim

NAME = "ps"

_HEADER = re.compile(r"^\s*(USER\s+)?PID\s+.*?(CMD|COMMAND|ARGS)\s*$")
# ps aux row without a header: USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND
_AUX_ROW = re.compile(
    r"^(\S+)\s+(\d+)\s+(\d+(?:[.,]\d+)?)\s+(\d+(?:[.,]\d+)?)\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\d+:\d+\s+(.+)$"
)
# -eo pid,pcpu,pmem,cmd without a header (-o pid= ...): only when the format is forced
_EO_ROW = re.compile(r"^\s*(\d+)\s+(\d+(?:[.,]\d+)?)\s+(\d+(?:[.,]\d+)?)\s+(\S.*)$")
_PYTHON = re.compile(r"(^|/)(python[\d.]*|torchrun|deepspeed|accelerate|vllm|ray::\S*)(\s|$)")
_HELPER = re.compile(
    r"grep\b|compile_worker|resource_tracker|jupyter|ipykernel|/bin/ps\b|^ps\s|multiprocessing\.spawn|semaphore_tracker"
)


def sniff(head: str) -> bool:
    """A ps header with PID and %CPU, or rows in ps aux shape."""
    lines = strip_ansi(head).splitlines()[:50]
    for line in lines:
        if _HEADER.match(line) and ("%CPU" in line or line.split()[0] == "PID"):
            return True
    return sum(1 for line in lines if _AUX_ROW.match(line)) >= 2


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Count python processes and collect their ``%CPU``."""
    res = ParseResult(format=NAME, source=source)
    facts = res.facts
    columns: list[str] | None = None
    python = 0
    rows = 0
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if not line.strip():
            continue
        if _HEADER.match(line):
            columns = line.split()
            continue
        pcpu: float | None
        if columns is not None:
            fields = line.split(None, len(columns) - 1)
            if len(fields) != len(columns) or not fields[columns.index("PID")].isdigit():
                continue
            row = dict(zip(columns, fields))
            cmd = row.get("CMD", row.get("COMMAND", row.get("ARGS", "")))
            pcpu = to_float(row["%CPU"]) if "%CPU" in row else None
        else:
            m = _AUX_ROW.match(line)
            if m:
                cmd, pcpu = m.group(5), to_float(m.group(3))
            else:
                m = _EO_ROW.match(line)
                if not m:
                    continue
                cmd, pcpu = m.group(4), to_float(m.group(2))
        rows += 1
        cmd = cmd.strip()
        if cmd.startswith("[") or not _PYTHON.search(cmd.split(" ", 1)[0] + " ") and not _PYTHON.search(cmd):
            continue
        if re.search(r"\bgrep\b", cmd):
            continue
        python += 1
        if pcpu is not None and pcpu >= 0 and not _HELPER.search(cmd):
            append_sample(facts, "cpu.process_cpu_percent", pcpu)
    if rows:
        set_fact(facts, "cpu.python_processes", python)
    else:
        res.notes.append(f"{source}: no ps rows found")
    res.facts = trim(facts)
    return res
