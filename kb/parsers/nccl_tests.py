"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ...): the ranks, the hosts they
ran on, and the best bus bandwidth the run reached.

    # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid   4349 on    node-01 device  0 [0x01] NVIDIA A100 80GB PCIe
    ...
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
       134217728      33554432     float     sum      -1   1589.2   84.46  147.80      0   1584.1 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 65.2146

The layout is nccl-tests' src/common.cu: the device lines ("#  Rank %2d Group %2d Pid %6d on
%10s device %2d [0x%02x] %s"; before the Group column, "#   Rank %2d Pid %6d on %10s ..."),
then a header naming the columns, then one row per message size. Columns are found by the
header's names (older releases have no ``redop``/``root`` column and call ``#wrong`` ``error``).
The bandwidth kept is the highest ``busbw`` of the rows of 1 MiB or more: what the fabric
reached at its best size, the figure nccl-tests' doc/PERFORMANCE.md compares with the
hardware's. Smaller messages measure latency (their busbw is near 0 on any fabric), and the
closing "Avg bus bandwidth" averages over every size, so neither is read as the bandwidth.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, set_fact, strip_ansi, to_float

NAME = "nccl_tests"

_PARAMS = re.compile(r"^#\s*nThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s+\d+\s+maxBytes\s+\d+")
_DEVICE = re.compile(r"^#\s+Rank\s+(\d{1,9})(?:\s+Group\s+\d+)?\s+Pid\s+(\d{1,12})\s+on\s+(\S*)\s+device\s+\d+\s+"
                     r"\[[^\]]*\]\s+(\S.*?)\s*$")
_HEADER = re.compile(r"^#\s+size\s+count\s+type\s.*\bbusbw\b")
_UNITS = re.compile(r"^#\s+\(B\)\s+\(elements\)")
_ROW = re.compile(r"^\s*\d{1,20}\s+\d{1,20}\s+[a-z]\w*\s")  # a size and a count, then the type
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:")
_OUT_OF_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:")
#: the banner newer releases print first ("# nccl-tests version 2.17.8", "# Collective test
#: starting: all_reduce_perf"; RCCL's fork the same with rccl-tests)
_BANNER = re.compile(r"^#\s*(?:[nr]ccl-tests version\b|Collective test starting:)")
#: rows below this size measure latency, not bandwidth
MIN_BANDWIDTH_BYTES = 1 << 20


def is_line(line: str) -> bool:
    """A line nccl-tests prints: its ``#`` parameter, device and header lines, a result row,
    or its closing summary."""
    s = line.rstrip()
    return bool(_PARAMS.match(s) or _DEVICE.match(s) or _HEADER.match(s) or _UNITS.match(s)
                or _ROW.match(s) or _AVG.match(s) or _OUT_OF_BOUNDS.match(s) or _BANNER.match(s)
                or s.strip() in ("#", "# Using devices"))


def is_start(line: str) -> bool:
    """A line only nccl-tests prints, where its output (or a part of it) begins."""
    if line[:1] != "#":  # every line of a paste passes here: the cheap test first
        return False
    s = line.rstrip()
    return bool(_BANNER.match(s) or _PARAMS.match(s) or _DEVICE.match(s) or _HEADER.match(s))


def sniff(head: str) -> bool:
    """Its parameter line or a device line: lines only nccl-tests prints."""
    return any(_BANNER.match(x) or _PARAMS.match(x) or _DEVICE.match(x)
               for x in strip_ansi(head).splitlines())


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """nccl-tests' output alone is read here; a file with other lines too (NCCL_DEBUG=INFO's
    log, a failure, the user's notes) goes to the incident reader, which hands this parser
    the nccl-tests parts and the log reader the rest."""
    text = [strip_ansi(x).rstrip("\r\n") for x in lines]
    if all(is_line(x) for x in text if x.strip()):
        return parse_output(text, source)
    from kb.readers import incident  # late: the incident reader imports the parsers

    return incident.parse(text, source)


def parse_output(lines: Iterable[str], source: str) -> ParseResult:
    """``distributed.world_size``, ``distributed.nnodes`` (when the device lines tell) and
    ``distributed.bus_bandwidth_gbps`` (the best row's busbw)."""
    res = ParseResult(format=NAME, source=source)
    ranks: set[int] = set()
    hosts: set[str] = set()
    pids: set[str] = set()
    names: list[str] = []
    busbw_cols: list[int] = []
    best: float | None = None
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        m = _DEVICE.match(line)
        if m:
            ranks.add(int(m.group(1)))
            pids.add(m.group(2))
            if m.group(3):
                hosts.add(m.group(3))
            names.append(m.group(4))
            continue
        if _HEADER.match(line):
            # the row has no "#": its fields sit one to the left of the header's names
            cols = line.split()
            busbw_cols = [k - 1 for k, c in enumerate(cols) if c == "busbw"]
            continue
        if busbw_cols and _ROW.match(line):
            fields = line.split()
            if int(fields[0]) < MIN_BANDWIDTH_BYTES:
                continue
            for k in busbw_cols:
                v = to_float(fields[k]) if k < len(fields) else None
                if v is not None and v >= 0 and (best is None or v > best):
                    best = v
    if ranks:
        set_fact(res.facts, "distributed.world_size", max(ranks) + 1)
        # a host name printed for every rank tells the nodes; with the names left out, ranks of
        # one process (one Pid) are on one host
        if hosts:
            set_fact(res.facts, "distributed.nnodes", len(hosts))
        elif len(pids) == 1:
            set_fact(res.facts, "distributed.nnodes", 1)
    if names:
        set_fact(res.facts, "gpu.name", names[0])
    if best is not None:
        set_fact(res.facts, "distributed.bus_bandwidth_gbps", round(best, 3))
    if not (ranks or best is not None):
        res.notes.append("nccl-tests output without device lines or results")
    return res
