"""Distributed lines: c10d/NCCL watchdog and blocking-wait timeouts, gloo timeouts and
monitoredBarrier failures (with the collective of the timing-out rank's traceback), heartbeat
monitor errors, and ``NCCL_DEBUG=INFO`` lines (version, transports, world size, init time)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kb.parsers import ranks
from kb.parsers.base import add_unique, get_fact, set_fact, strip_ansi

if TYPE_CHECKING:
    from kb.parsers.training_log.scanner import LogScanner

#: the timed-out work as c10d prints it: torch 1.8-1.9 ("WorkNCCL(OpType=BROADCAST[, TensorShape=
#: [..]], Timeout(ms)=1800000)", torch/lib/c10d/ProcessGroupNCCL.cpp, operator<<), later releases
#: with SeqNum and then NumelIn/NumelOut; "ran for N milliseconds before timing out" may be cut off
#: a pasted line, the watchdog's own words then say what it is
_WATCHDOG = re.compile(
    r"WorkNCCL\((?:SeqNum=(\d+), )?OpType=(\w+)(?:, TensorShape=\[[^\]]{0,200}\])?"
    r"(?:, NumelIn=\d+, NumelOut=\d+)?, Timeout\(ms\)=(\d+)\)"
    r"(?: ran for (\d+) milliseconds before timing out)?"
)
_BLOCKING = re.compile(r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)[^)]*?Timeout\(ms\)=(\d+)\)\) timed out in blocking wait")
_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]|^\[rank(\d+)\]:")
_WORK_AT = re.compile(r"detected by watchdog at work(?: sequence id)?: (\d+)|Timeout at NCCL work: (\d+)")
_GLOO_TIMEOUT = re.compile(r"Timed out waiting (\d+)ms for (recv|send) operation")
_TB_FRAME = re.compile(r'^(?:\[rank\d+\]:)?\s*File "([^"]+)", line \d+, in (\S+)')
_TB_START = "Traceback (most recent call last)"
_MONITORED = re.compile(r"Rank (\d+) failed to pass monitoredBarrier in (\d+) ms")
_NCCL_VERSION = re.compile(r"NCCL version:? (\d+\.\d+\.\d+)")
_NCCL_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_NCCL_CHANNEL = re.compile(r"via (P2P|SHM|NET/IB|NET/Socket|NET/[\w]+|NVLS|CollNet)")
_NCCL_NRANKS = re.compile(r"\bnranks (\d+)")
_NCCL_INIT = re.compile(r"Init timings[^:]*: .*?total ([\d.]+)")
_NCCL_ENV = re.compile(r"NCCL INFO (\w+) set by environment to (\S+)")
_NVLS = re.compile(r"Connected NVLS|[1-9]\d* nvls channels")
_NCCL_ERRORS: tuple[tuple[str, str], ...] = (
    ("remote process exited or there was a network error", "ncclRemoteError"),
    ("unhandled system error", "ncclSystemError"),
    ("unhandled cuda error", "ncclUnhandledCudaError"),
    ("invalid usage", "ncclInvalidUsage"),
    ("internal error", "ncclInternalError"),
)


def rank_of(line: str) -> int | None:
    """The rank a line names (``[Rank N]``, ``[PG ... Rank N]`` or a ``[rankN]:`` prefix)."""
    m = _RANK.search(line)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def rank_state(sc: LogScanner, rank: int, **kw: Any) -> None:
    """Record what a rank was doing (the first value of each key wins)."""
    st = sc.rank_states.setdefault(rank, {"rank": rank})
    for k, v in kw.items():
        if v is not None:
            st.setdefault(k, v)


def distributed(sc: LogScanner, line: str, low: str) -> None:
    """A line of the distributed family (``low`` is its lower-case form)."""
    _nccl(sc, line, low)
    if "timed out waiting" in low:
        m = _GLOO_TIMEOUT.search(line)
        if m:
            gloo(sc, m, line)


def _nccl(sc: LogScanner, line: str, low: str) -> None:
    f = sc.facts
    if "nccl" in low:
        set_fact(f, "distributed.backend", "nccl")
    m = _WATCHDOG.search(line)
    if m and m.group(4) is None and "collective operation timeout" not in low:
        m = None  # a work's repr in another message (no timeout said)
    m = m or _BLOCKING.search(line)
    if m:
        seq = int(m.group(1)) if m.group(1) else None  # torch 1.8-1.9 print no SeqNum
        op, timeout, elapsed = m.group(2), float(m.group(3)), None
        if m.re is _WATCHDOG and m.group(4):
            elapsed = float(m.group(4))
        set_fact(f, "distributed.watchdog_timeout", True)
        set_fact(f, "distributed.timeout_op", op)
        set_fact(f, "distributed.timeout_seq", seq)
        set_fact(f, "distributed.timeout_ms", timeout)
        set_fact(f, "distributed.elapsed_ms", elapsed)
        add_unique(f, "distributed.errors", "watchdog_timeout")
        rank = rank_of(line)
        if rank is not None:
            rank_state(sc, rank, collective=op, seq=seq)
        return
    m = _WORK_AT.search(line)
    if m:
        rank = rank_of(line)
        if rank is not None:
            rank_state(sc, rank, seq=int(m.group(1) or m.group(2)))
        return
    if "heartbeat monitor timed out" in low or "watchdog got stuck" in low or (
        # a terminal-wrapped message continues on the next line
        line.endswith("ProcessGroupNCCL'") and "watchdog got stuck" in sc.after()
    ):
        add_unique(f, "distributed.errors", "heartbeat_timeout")
    m = _MONITORED.search(line)
    if m:
        set_fact(f, "distributed.backend", "gloo")
        add_unique(f, "distributed.errors", "monitored_barrier_timeout")
        sc.forced_outliers.add(int(m.group(1)))
        set_fact(f, "distributed.timeout_ms", float(m.group(2)))
        return
    if "nccl" not in low:
        return
    m = _NCCL_VERSION.search(line)
    if m:
        add_unique(f, "distributed.nccl_versions", m.group(1))
    if "nccl warn" in low:
        add_unique(f, "distributed.errors", "nccl_warn")
    if "distbackenderror" in low or "nccl error" in low:
        add_unique(f, "distributed.errors", "DistBackendError")
        for text, kind in _NCCL_ERRORS:
            if text in low:
                add_unique(f, "distributed.errors", kind)
    if "nccl info" not in low:
        return
    # "NET/IB : No device found" sets no fact: NCCL saw no usable HCA, which does not say the
    # hosts have none (a container without /dev/infiniband or rdma-core prints it too)
    if "net/ib : using [" in low:
        set_fact(f, "distributed.ib_hardware_present", True, overwrite=True)
        add_unique(f, "distributed.transports", "IB")
        set_fact(f, "distributed.inter_node_transport", "IB")
    elif "net/socket : using" in low:
        add_unique(f, "distributed.transports", "Socket")
        set_fact(f, "distributed.inter_node_transport", "Socket")
    m = _NCCL_NETWORK.search(line)
    if m:
        net = m.group(1)
        kind = "IB" if net.startswith("IB") else net
        # "Using network X" names the transport NCCL chose: it wins over the probes above
        set_fact(f, "distributed.inter_node_transport", kind, overwrite=True)
        add_unique(f, "distributed.transports", kind)
    m = _NCCL_CHANNEL.search(line)
    if m:
        t = m.group(1)
        t = {"NET/IB": "IB", "NET/Socket": "Socket"}.get(t, t.replace("NET/", ""))
        add_unique(f, "distributed.transports", t)
        if t in ("P2P", "SHM", "NVLS"):
            _intra(sc, t)
        elif t not in ("CollNet",):
            set_fact(f, "distributed.inter_node_transport", t)
    if _NVLS.search(line):
        add_unique(f, "distributed.transports", "NVLS")
        set_fact(f, "distributed.nvlink_present", True)
        _intra(sc, "NVLS")
    m = _NCCL_NRANKS.search(line)
    if m:
        n = int(m.group(1))
        if n > (get_fact(f, "distributed.world_size") or 0):
            set_fact(f, "distributed.world_size", n, overwrite=True)
    m = _NCCL_INIT.search(line)
    if m:
        secs = float(m.group(1))
        if secs > (get_fact(f, "distributed.init_seconds") or -1):
            set_fact(f, "distributed.init_seconds", secs, overwrite=True)
    m = _NCCL_ENV.search(line)
    if m:
        sc.env(m.group(1), m.group(2))


def _intra(sc: LogScanner, t: str) -> None:
    """Intra-node transport: the best seen wins (NVLS over P2P over SHM)."""
    rank = {"SHM": 0, "P2P": 1, "NVLS": 2}
    cur = get_fact(sc.facts, "distributed.intra_node_transport")
    if cur is None or rank[t] > rank.get(cur, -1):
        set_fact(sc.facts, "distributed.intra_node_transport", t, overwrite=True)


def gloo(sc: LogScanner, m: re.Match[str], line: str) -> None:
    """A gloo timeout: the op is the collective of the traceback above it (``in all_reduce``),
    else the transport operation (RECV / SEND); that rank waits in that collective."""
    f = sc.facts
    set_fact(f, "distributed.backend", "gloo")
    set_fact(f, "distributed.watchdog_timeout", True)
    set_fact(f, "distributed.timeout_ms", float(m.group(1)))
    rank = rank_of(line)
    collective = traceback_collective(sc, line)
    set_fact(f, "distributed.timeout_op", collective or m.group(2).upper())
    if rank is not None and collective:
        rank_state(sc, rank, collective=collective)
    add_unique(f, "distributed.errors", "gloo_timeout")


def traceback_collective(sc: LogScanner, line: str) -> str | None:
    """The collective of the traceback that ends at ``line`` (the same ``[rankN]:`` prefix).

    Looks back over at most LOOKBACK lines, innermost frame first, up to the traceback's
    first line; None when no frame there is a collective (see ``ranks.collective_of``).
    """
    tag = line[: line.index("]:") + 2] if line.startswith("[rank") and "]:" in line else ""
    frames: list[tuple[str, str]] = []
    for prev in reversed(sc.before()):
        prev = strip_ansi(prev).rstrip("\r\n")
        if tag and not prev.startswith(tag):
            continue
        if _TB_START in prev:
            break
        fm = _TB_FRAME.match(prev)
        if fm:
            frames.append((fm.group(2), fm.group(1)))
    return ranks.collective_of(frames)
