"""``iostat -x[m]`` (sysstat <= 11.5.6, 11.5.7+, 12.x layouts) and its ``avg-cpu`` block.

Columns are looked up by header name, rebuilt at every ``Device`` header. Reports start at an
``avg-cpu:`` line (or at a repeated ``Device`` header with ``-d``); when there is more than one
report, the first (averages since boot) is dropped. Per report the busiest data device (highest
``%util``; loop/ram/sr/zram/fd devices ignored) gives one sample of ``%util``, read MB/s and
``r_await``. Rows with ``%util`` above 100 (counter wrap, sysstat#312) are dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kb.parsers.base import ParseResult, append_sample, clamp_percent, set_fact, strip_ansi, to_float, trim

NAME = "iostat"

_PREFIX = re.compile(r"^\[[^\]]*\]")  # external timestampers: "[18:01:12]Device ..."
_BANNER = re.compile(r"^Linux\s+\S+\s+\(.*\)\s.*\((\d+)\s+CPU\)")
_IGNORED_DEVICES = re.compile(r"^(loop|ram|sr|zram|fd)\d*")


@dataclass
class _Report:
    iowait: float | None = None
    rows: list[dict[str, float | str | None]] = field(default_factory=list)
    has_header: bool = False


def sniff(head: str) -> bool:
    """``avg-cpu:`` block or an extended ``Device`` header with ``%util``."""
    head = strip_ansi(head)
    if re.search(r"^avg-cpu:\s+%user", head, re.M):
        return True
    return bool(re.search(r"^(\[[^\]]*\])?Device:?\s+.*(r/s|tps).*(%util|kB_read/s)", head, re.M))


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Turn iostat reports into ``disk.*`` and ``cpu.iowait_percent_samples`` facts."""
    res = ParseResult(format=NAME, source=source)
    reports: list[_Report] = [_Report()]
    columns: list[str] | None = None
    expect_cpu = False
    garbage = 0
    cores: int | None = None
    for raw in lines:
        line = _PREFIX.sub("", strip_ansi(raw)).rstrip()
        s = line.strip()
        if not s:
            continue
        m = _BANNER.match(s)
        if m:
            cores = int(m.group(1))
            continue
        if s.startswith("avg-cpu:"):
            if reports[-1].iowait is not None or reports[-1].rows or reports[-1].has_header:
                reports.append(_Report())
            expect_cpu = True
            continue
        if expect_cpu:
            expect_cpu = False
            vals = [to_float(v) for v in s.split()]
            if len(vals) >= 6 and vals[3] is not None:
                reports[-1].iowait = clamp_percent(vals[3])
            continue
        if s.startswith("Device"):
            columns = [c.rstrip(":") for c in s.split()]
            if reports[-1].has_header and reports[-1].rows:
                reports.append(_Report())  # -d: no avg-cpu block between reports
            reports[-1].has_header = True
            continue
        if columns is None:
            continue
        fields = s.split()
        if len(fields) != len(columns):
            continue
        row: dict[str, float | str | None] = {"Device": fields[0]}
        for name, value in zip(columns[1:], fields[1:]):
            row[name] = to_float(value)
        util = row.get("%util")
        if isinstance(util, float) and util > 100.0:
            garbage += 1
            continue
        reports[-1].rows.append(row)
    reports = [r for r in reports if r.iowait is not None or r.rows]
    if len(reports) > 1:
        reports = reports[1:]
        res.notes.append(f"{source}: first iostat report (averages since boot) ignored")
    if garbage:
        res.notes.append(f"{source}: {garbage} device row(s) with %util > 100 (counter wrap) dropped")
    facts = res.facts
    busiest: Counter[str] = Counter()
    for rep in reports:
        append_sample(facts, "cpu.iowait_percent_samples", rep.iowait)
        best = _busiest(rep.rows)
        if best is None:
            continue
        busiest[str(best["Device"])] += 1
        append_sample(facts, "disk.util_percent_samples", clamp_percent(_num(best.get("%util"))))
        append_sample(facts, "disk.read_mb_s_samples", _read_mb_s(best))
        wait = best.get("r_await", best.get("await"))
        w = _num(wait)
        if w is not None and w >= 0:
            append_sample(facts, "disk.await_ms_samples", w)
    if busiest:
        set_fact(facts, "disk.device", busiest.most_common(1)[0][0])
    set_fact(facts, "cpu.cores", cores)
    res.facts = trim(facts)
    return res


def _num(v: float | str | None) -> float | None:
    return v if isinstance(v, float) else None


def _busiest(rows: list[dict[str, float | str | None]]) -> dict[str, float | str | None] | None:
    best = None
    best_util = -1.0
    for row in rows:
        if _IGNORED_DEVICES.match(str(row["Device"])):
            continue
        util = _num(row.get("%util"))
        if util is not None and util > best_util:
            best, best_util = row, util
    return best


def _read_mb_s(row: dict[str, float | str | None]) -> float | None:
    for key, scale in (("rMB/s", 1.0), ("rkB/s", 1 / 1024), ("rGB/s", 1024.0), ("rsec/s", 512 / 1024 / 1024)):
        v = _num(row.get(key))
        if v is not None and v >= 0:
            return round(v * scale, 6)
    return None
