"""Training / serving logs: CUDA OOM messages (every PyTorch era), c10d/NCCL watchdog and gloo
timeouts, ``NCCL_DEBUG`` lines, loss / grad-norm / learning-rate values (HF dict, Megatron, plain
prints), loss-scaler overflows (apex, DeepSpeed, fairseq, Megatron), anomaly-mode messages, plus
the torch.compile and vLLM stats lines that end up in the same logs.

Which lines are looked at is defined by :data:`TRIGGERS`: CASE-SENSITIVE literals, grouped by
the handler they feed. A line containing none of them is ignored; a line containing one goes to
:meth:`LogScanner.feed`, which calls the handler of every family whose literal it contains.
:func:`parse` applies that definition line by line (the reference); :func:`parse_stream` is a
faster scan that gives the same facts (a test holds them equal on every fixture and on
generated logs with signatures across block boundaries):

* blocks of 1 MiB (they stay in the CPU cache while several passes run over them), read with
  ``readinto`` into one reused buffer, never decoded as a whole;
* every trigger literal except ``oss`` contains a rare "pivot" byte (an upper-case letter);
  one ``bytes.find`` (memchr) loop per pivot finds the few candidate lines;
* ``oss`` (loss/Loss: the metric lines, often 1 line in 10) is one ``re.findall`` with a literal
  prefix over the block. Plain HF-Trainer dict lines (``{'loss': 2.1, 'grad_norm': 0.3,
  'learning_rate': 2e-05, 'epoch': 0.5}``, finite values, nothing else on the line) between two
  other candidate lines are taken in bulk: counted, checked with C-speed operations over their
  joined text, and their values parsed only while the sample lists (MAX_SAMPLES, the first
  values of a run) are not full. Any other ``oss`` line in that stretch sends the whole stretch
  through ``feed`` line by line.

Not seen by design (no trigger): lines whose only signal is lower-case ``nccl``/``gloo``,
an all-caps ``LOSS``, a grad norm on a line without ``loss``, and Dynamo lines without
``Graph``/``Recompiling``/``Unsupported``/``Explanation:`` (the ``torch_compile`` parser reads
compile logs fully, but categorises graph breaks from the same lines, so both agree).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from typing import Any, BinaryIO

from kb.parsers import ranks, vllm_metrics
from kb.parsers.base import (
    MAX_SAMPLES,
    ParseResult,
    add_unique,
    append_sample,
    get_fact,
    set_fact,
    strip_ansi,
    trim,
)
from kb.parsers.torch_compile import CompileScanner

NAME = "training_log"

#: Case-sensitive trigger literals by family (see the module docstring). Every literal but the
#: numerics one holds an upper-case pivot byte; keep it so (a test checks), or the scan slows down.
TRIGGERS: dict[str, tuple[str, ...]] = {
    "numerics": ("oss", "Bad grad_norm"),  # loss, Loss, lm loss, loss scale(r), overflow messages; Megatron
    "oom": (
        "CUDA", "CUBLAS", "CUDNN", "HIP out of memory", "XPU out of memory", "MPS backend out of memory",
        "Error: cuda runtime error",
    ),
    "distributed": ("NCCL", "Timed out waiting", "monitoredBarrier", "Watchdog", "Heartbeat"),
    "anomaly": ("Error detected in", "Backward"),  # Function 'MulBackward0' returned nan values
    "compile": (
        "Graph break", "Graph Break", "Graph Count", "Recompiling function", "Dynamo produced",
        "Unsupported", "UserError", "fullgraph=True",
        "Explanation:",  # 2.9+ records: the real reason behind "Encountered graph break when ..."
    ),
    "vllm": ("Avg prompt throughput",),
    "env": ("NCCL_", "CUDA_", "TORCH_"),
}
_NUMERIC = "oss"
#: pivot preference: the first of these bytes found in a literal is its pivot (rarest first)
_PIVOT_RANK = "QJZXKVYUWLHPBGCMDFSNAORTEI"
BLOCK_SIZE = 1024 * 1024
_MAX_LINE = 1024 * 1024  # a "line" longer than this is cut (binary junk, tqdm without newlines)
_LOOKBACK = 15  # lines before an OOM searched for a backward() frame


def _pivot(lit: str) -> tuple[int, int]:
    """(pivot byte, its offset in the literal) for a trigger literal."""
    best = min((_PIVOT_RANK.index(c), i) for i, c in enumerate(lit) if c in _PIVOT_RANK)
    return ord(_PIVOT_RANK[best[0]]), best[1]


_ALL_LITERALS: tuple[str, ...] = tuple(dict.fromkeys(x for v in TRIGGERS.values() for x in v))
_PIVOTS: dict[int, list[tuple[bytes, int]]] = {}
for _lit in _ALL_LITERALS:
    if _lit != _NUMERIC:
        _b, _k = _pivot(_lit)
        _PIVOTS.setdefault(_b, []).append((_lit.encode(), _k))
_PIVOT_LIST: tuple[tuple[bytes, tuple[tuple[bytes, int, int], ...]], ...] = tuple(
    (bytes([b]), tuple((lit, k, len(lit)) for lit, k in v)) for b, v in sorted(_PIVOTS.items())
)
_FAMILY_LITERALS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(TRIGGERS.items())
_NUM_B = r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?"
#: every "oss"; for a bare HF dict line (line start, finite loss) the rest of the line is captured
_OSS = re.compile(rb"oss(?:(?<=\n\{'loss)': (" + _NUM_B.encode() + rb"[,}][^\n]*))?")
_OSS_ANY = re.compile(rb"oss")
#: bytes allowed in the rest of a bulk HF line: finite numbers and the keys grad_norm,
#: learning_rate, epoch (no 's': no step/loss keys; no f/v/w/|/=/(: no overflow/inf/Megatron)
_HF_VALUE_END = re.compile(rb"[,}]")
_HF_ALLOWED = b"\n0123456789.e-+, ':_}gradnomlearingtpch"
_HF_HUGE = re.compile(rb"e\+?\d\d\d")  # 1e999 is float inf (a 300-digit number too: checked by length)


def is_candidate(line: str) -> bool:
    """True when a line contains a trigger literal (the definition both scans follow)."""
    return any(lit in line for lit in _ALL_LITERALS)


_SIZE = r"(\d+(?:\.\d+)?) (bytes|B|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1 / 2**20, "B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_OOM_NEW = re.compile(
    r"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate " + _SIZE + r"\. GPU \d+ has a total capac(?:i)?ty of "
    + _SIZE + r" of which " + _SIZE + r" is free\."
)
_OOM_NEW_ALLOC = re.compile(
    r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, (?:with " + _SIZE
    + r" allocated in private pools \(e\.g\., CUDA Graphs\), )?and " + _SIZE + r" is reserved by PyTorch but unallocated"
)
_OOM_OLD = re.compile(
    r"(?:CUDA|HIP) out of memory\. Tried to allocate " + _SIZE + r" \(GPU \d+; " + _SIZE + r" total capacity; "
    + _SIZE + r" already allocated; " + _SIZE + r" free; " + _SIZE + r" (cached|reserved in total by PyTorch)\)"
)
_OOM_BARE = re.compile(
    r"CUDA error: out of memory|cuda runtime error \(2\) : out of memory|(?:CUBLAS|CUDNN)_STATUS_ALLOC_FAILED"
    r"|Cuda failure 'out of memory'|(?:CUDA|HIP|XPU) out of memory|MPS backend out of memory"
)
_WATCHDOG = re.compile(
    r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=\d+, NumelOut=\d+)?, Timeout\(ms\)=(\d+)\)"
    r" ran for (\d+) milliseconds before timing out"
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
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?((?:NCCL|PYTORCH|TORCH|CUDA)_[A-Z0-9_]+)=(\S*)\s*$")
_NCCL_ERRORS: tuple[tuple[str, str], ...] = (
    ("remote process exited or there was a network error", "ncclRemoteError"),
    ("unhandled system error", "ncclSystemError"),
    ("unhandled cuda error", "ncclUnhandledCudaError"),
    ("invalid usage", "ncclInvalidUsage"),
    ("internal error", "ncclInternalError"),
)
_NUM = r"([-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?))"
_HF = re.compile(r"'(loss|grad_norm)': (?:tensor\()?" + _NUM.replace("nan|inf(?:inity)?", "nan|NaN|inf|Infinity"))
_HF_NUM = _NUM.replace("nan|inf(?:inity)?", "nan|NaN|inf|Infinity")
_HF_GRAD_B = re.compile(rb"'grad_norm': (?:tensor\()?" + _HF_NUM.encode())
_HF_LR = re.compile(r"'(?:learning_rate|lr)': " + _NUM)
_HF_LR_B = re.compile(rb"'(?:learning_rate|lr)': " + _NUM.encode())
_MEGATRON_LR = re.compile(r"\blearning rate: " + _NUM, re.I)
_HF_STEP = re.compile(r"'(?:step|global_step)': (\d+)")
_PLAIN_LOSS = re.compile(r"(?<![\w.'\"])loss(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
_PLAIN_GRAD = re.compile(r"(?<![\w.'\"])(?:grad[_ ]?norm|gnorm)(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
_STEP = re.compile(r"(?<![\w])(?:step|iteration|iter|global_step)[\s:=]+(\d+)", re.I)
_APEX = re.compile(r"Gradient overflow\.\s+Skipping step, loss scaler \d+ reducing loss scale to ([0-9.e+-]+)")
_DS = re.compile(
    r"OVERFLOW! Rank \d+ Skipping step\. Attempted loss scale: ([0-9.e+]+), (?:reducing to ([0-9.e+]+)|but hysteresis)"
)
_DS_COUNTER = re.compile(r"\bstep=(\d+), skipped=(\d+)")
_FAIRSEQ = re.compile(r"overflow detected, (?:ignoring gradient, )?setting loss scale to: ([0-9.e+-]+)")
_LOSS_SCALE_KV = re.compile(r"\bloss_scale=([0-9.e+-]+)")
_ANOMALY = re.compile(r"Error detected in (\w+Backward\d*)|Function '(\w+)' returned nan values")
_BACKWARD_FRAME = re.compile(r"\bin backward\s*$|\.backward\(")


def sniff(head: str) -> bool:
    """Any training-log signal this parser knows in the head of the text."""
    low = head.lower()
    return any(k in low for k in (
        "out of memory", "nccl", "watchdog", "'loss':", "grad_norm", "lm loss", "loss scale",
        "overflow", "error detected in", "processgroup", "iteration", "avg prompt throughput",
        "loss:", "loss=", "gloo", "traceback (most recent call last)",
    ))


def _mib(num: str, unit: str) -> float:
    return round(float(num) * _UNITS[unit], 3)


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


class LogScanner:
    """State carried across the lines of one log."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.facts: dict[str, Any] = {}
        self.notes: list[str] = []
        self.compile = CompileScanner()
        self.step: int | None = None
        self.metric_records = 0
        self.oom_count = 0
        self.skipped = 0
        self.run = 0
        self.longest_run = 0
        self.ds_skipped = 0
        self.nonfinite = 0
        self.first_nonfinite_step: int | None = None
        self.nan_source: str | None = None
        self.rank_states: dict[int, dict[str, Any]] = {}
        self.forced_outliers: set[int] = set()
        self.missing_lm_loss = 0
        self.inference: dict[str, Any] = {}
        #: zero-argument callables set by the scan around each fed line: the lines before it
        #: (up to _LOOKBACK, oldest first) and the line after it ("" at the end)
        self.before: Any = list
        self.after: Any = lambda: ""

    # -- helpers ---------------------------------------------------------------------------
    def _metric(self, path: str, value: float, kind: str) -> None:
        append_sample(self.facts, path, value, self.notes)
        if math.isfinite(value):
            return
        self.nonfinite += 1
        if self.nan_source is None:
            self.nan_source = kind
        if kind == "loss" and self.first_nonfinite_step is None:
            self.first_nonfinite_step = self.step if self.step is not None else self.metric_records

    def _success(self) -> None:
        self.run = 0

    def _skip(self, n: int = 1) -> None:
        self.skipped += n
        self.run += n
        self.longest_run = max(self.longest_run, self.run)

    # -- the line handler -----------------------------------------------------------------
    def feed(self, raw: str) -> None:
        """Consume one candidate line: every family whose trigger literal it holds is handled."""
        line = strip_ansi(raw).rstrip("\r\n")
        fams = {name for name, lits in _FAMILY_LITERALS if any(x in line for x in lits)}
        if not fams:
            return
        low = line.lower()
        if "oom" in fams and ("out of memory" in low or "alloc_failed" in low):
            self._oom(line)
        if "distributed" in fams:
            self._distributed(line, low)
            if "timed out waiting" in low:
                m = _GLOO_TIMEOUT.search(line)
                if m:
                    self._gloo(m, line)
        if "numerics" in fams:
            self._numerics(line, low)
        if "anomaly" in fams:
            m = _ANOMALY.search(line)
            if m:
                set_fact(self.facts, "numerics.anomaly_op", m.group(1) or m.group(2))
        if "compile" in fams:
            self.compile.feed(line)
        if "vllm" in fams:
            st = vllm_metrics.stats_line(line)
            if st:
                self.inference.update(st)
        if "env" in fams:
            m = _ENV_LINE.match(line)
            if m:
                self._env(m.group(1), m.group(2))

    def bulk_hf(self, rests: list[bytes]) -> bool:
        """Take a run of bare HF dict lines at once (see the module docstring).

        ``rests`` are the texts after ``{'loss': `` of consecutive such lines. Returns False (and
        does nothing) when one of them needs the line path.
        """
        joined = b"\n".join(rests)
        if joined.translate(None, _HF_ALLOWED) or b"nan" in joined:
            return False
        if _HF_HUGE.search(joined) or max(map(len, rests)) > 300:
            return False  # a value that may overflow to inf: the line path counts it as non-finite
        num = self.facts.setdefault("numerics", {})
        if len(num.get("loss", ())) <= MAX_SAMPLES:
            self._extend("numerics.loss", [float(_HF_VALUE_END.split(r, 1)[0]) for r in rests[: MAX_SAMPLES + 1]])
        if len(num.get("grad_norm", ())) <= MAX_SAMPLES and b"'grad_norm'" in joined:
            self._extend("numerics.grad_norm", [float(v) for v in _HF_GRAD_B.findall(joined)])
        if len(num.get("learning_rate", ())) <= MAX_SAMPLES and (b"'learning_rate'" in joined or b"'lr'" in joined):
            self._lr(_HF_LR_B.findall(joined)[: MAX_SAMPLES + 1])
        self.metric_records += len(rests)
        self.run = 0
        return True

    def _lr(self, texts: list[Any]) -> None:
        """Learning-rate values (str or bytes numbers); negative or non-finite ones are dropped."""
        for t in texts:
            try:
                v = float(t)
            except ValueError:
                continue
            if math.isfinite(v) and v >= 0:
                append_sample(self.facts, "numerics.learning_rate", v, self.notes)

    def _extend(self, path: str, values: list[float]) -> None:
        """append_sample for many values (same cap, same one-time note)."""
        if not values:
            return
        *groups, key = path.split(".")
        node = self.facts
        for g in groups:
            node = node.setdefault(g, {})
        cur = node.setdefault(key, [])
        for v in values:
            if len(cur) > MAX_SAMPLES:
                return
            append_sample(self.facts, path, v, self.notes)

    def _env(self, key: str, value: str) -> None:
        self.facts.setdefault("env", {}).setdefault(key, value)
        if key == "NCCL_P2P_DISABLE":
            set_fact(self.facts, "distributed.p2p_disabled", value.strip() == "1")
        if key == "PYTORCH_CUDA_ALLOC_CONF":
            set_fact(self.facts, "oom.expandable_segments", "expandable_segments:true" in value.lower())

    def _oom(self, line: str) -> None:
        m_new = _OOM_NEW.search(line)
        m_old = None if m_new else _OOM_OLD.search(line)
        if not (m_new or m_old or _OOM_BARE.search(line)):
            return
        self.oom_count += 1
        set_fact(self.facts, "oom.occurred", True)
        set_fact(self.facts, "oom.count", self.oom_count, overwrite=True)
        if self.oom_count > 1:
            return  # sizes of the first OOM; later ones are usually retries or other ranks
        if self.step is not None:
            set_fact(self.facts, "oom.at_step", self.step)
        if any(_BACKWARD_FRAME.search(strip_ansi(x).rstrip("\r\n")) for x in self.before()):
            set_fact(self.facts, "oom.phase", "backward")
        sizes: dict[str, float] = {}
        if m_new:
            g = m_new.groups()
            sizes = {"tried": _mib(g[0], g[1]), "total": _mib(g[2], g[3]), "free": _mib(g[4], g[5])}
            a = _OOM_NEW_ALLOC.search(line)
            if a:
                ga = a.groups()
                sizes["alloc"] = _mib(ga[0], ga[1])
                sizes["unalloc"] = _mib(ga[4], ga[5])
                sizes["reserved"] = round(sizes["alloc"] + sizes["unalloc"], 3)
        elif m_old:
            g = m_old.groups()
            sizes = {
                "tried": _mib(g[0], g[1]), "total": _mib(g[2], g[3]), "alloc": _mib(g[4], g[5]),
                "free": _mib(g[6], g[7]),
            }
            if g[10] == "cached":
                # 1.0-1.4 printed cached-but-unallocated here (it is below "already allocated")
                sizes["unalloc"] = _mib(g[8], g[9])
                sizes["reserved"] = round(sizes["alloc"] + sizes["unalloc"], 3)
            else:
                sizes["reserved"] = _mib(g[8], g[9])
                if sizes["reserved"] >= sizes["alloc"]:
                    sizes["unalloc"] = round(sizes["reserved"] - sizes["alloc"], 3)
        for key, path in (
            ("tried", "tried_to_allocate_mib"), ("total", "total_capacity_mib"), ("free", "free_mib"),
            ("alloc", "allocated_mib"), ("reserved", "reserved_mib"), ("unalloc", "reserved_unallocated_mib"),
        ):
            if key in sizes:
                set_fact(self.facts, f"oom.{path}", sizes[key])
        if sizes.get("total", 0) > 0 and "unalloc" in sizes:
            frac = min(sizes["unalloc"] / sizes["total"], 1.0)
            set_fact(self.facts, "oom.reserved_unallocated_fraction", round(frac, 6))

    def _rank_of(self, line: str) -> int | None:
        m = _RANK.search(line)
        if not m:
            return None
        return int(m.group(1) or m.group(2))

    def _rank_state(self, rank: int, **kw: Any) -> None:
        st = self.rank_states.setdefault(rank, {"rank": rank})
        for k, v in kw.items():
            if v is not None:
                st.setdefault(k, v)

    def _distributed(self, line: str, low: str) -> None:
        f = self.facts
        if "nccl" in low:
            set_fact(f, "distributed.backend", "nccl")
        m = _WATCHDOG.search(line) or _BLOCKING.search(line)
        if m:
            seq, op, timeout, elapsed = int(m.group(1)), m.group(2), float(m.group(3)), None
            if m.re is _WATCHDOG:
                elapsed = float(m.group(4))
            set_fact(f, "distributed.watchdog_timeout", True)
            set_fact(f, "distributed.timeout_op", op)
            set_fact(f, "distributed.timeout_seq", seq)
            set_fact(f, "distributed.timeout_ms", timeout)
            set_fact(f, "distributed.elapsed_ms", elapsed)
            add_unique(f, "distributed.errors", "watchdog_timeout")
            rank = self._rank_of(line)
            if rank is not None:
                self._rank_state(rank, collective=op, seq=seq)
            return
        m = _WORK_AT.search(line)
        if m:
            rank = self._rank_of(line)
            if rank is not None:
                self._rank_state(rank, seq=int(m.group(1) or m.group(2)))
            return
        if "heartbeat monitor timed out" in low or "watchdog got stuck" in low or (
            # a terminal-wrapped message continues on the next line
            line.endswith("ProcessGroupNCCL'") and "watchdog got stuck" in self.after()
        ):
            add_unique(f, "distributed.errors", "heartbeat_timeout")
        m = _MONITORED.search(line)
        if m:
            set_fact(f, "distributed.backend", "gloo")
            add_unique(f, "distributed.errors", "monitored_barrier_timeout")
            self.forced_outliers.add(int(m.group(1)))
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
        if "net/ib : no device found" in low:
            set_fact(f, "distributed.ib_hardware_present", False)
        elif "net/ib : using [" in low:
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
                self._intra(t)
            elif t not in ("CollNet",):
                set_fact(f, "distributed.inter_node_transport", t)
        if _NVLS.search(line):
            add_unique(f, "distributed.transports", "NVLS")
            set_fact(f, "distributed.nvlink_present", True)
            self._intra("NVLS")
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
            self._env(m.group(1), m.group(2))

    def _intra(self, t: str) -> None:
        """Intra-node transport: the best seen wins (NVLS over P2P over SHM)."""
        rank = {"SHM": 0, "P2P": 1, "NVLS": 2}
        cur = get_fact(self.facts, "distributed.intra_node_transport")
        if cur is None or rank[t] > rank.get(cur, -1):
            set_fact(self.facts, "distributed.intra_node_transport", t, overwrite=True)

    def _gloo(self, m: re.Match[str], line: str) -> None:
        """A gloo timeout: the op is the collective of the traceback above it (``in all_reduce``),
        else the transport operation (RECV / SEND); that rank waits in that collective."""
        f = self.facts
        set_fact(f, "distributed.backend", "gloo")
        set_fact(f, "distributed.watchdog_timeout", True)
        set_fact(f, "distributed.timeout_ms", float(m.group(1)))
        rank = self._rank_of(line)
        collective = self._traceback_collective(line)
        set_fact(f, "distributed.timeout_op", collective or m.group(2).upper())
        if rank is not None and collective:
            self._rank_state(rank, collective=collective)
        add_unique(f, "distributed.errors", "gloo_timeout")

    def _traceback_collective(self, line: str) -> str | None:
        """The collective of the traceback that ends at ``line`` (the same ``[rankN]:`` prefix).

        Looks back over at most _LOOKBACK lines, innermost frame first, up to the traceback's
        first line; None when no frame there is a collective (see ``ranks.collective_of``).
        """
        tag = line[: line.index("]:") + 2] if line.startswith("[rank") and "]:" in line else ""
        frames: list[tuple[str, str]] = []
        for prev in reversed(self.before()):
            prev = strip_ansi(prev).rstrip("\r\n")
            if tag and not prev.startswith(tag):
                continue
            if _TB_START in prev:
                break
            fm = _TB_FRAME.match(prev)
            if fm:
                frames.append((fm.group(2), fm.group(1)))
        return ranks.collective_of(frames)

    def _numerics(self, line: str, low: str) -> None:
        if "overflow" in low:
            m = _APEX.search(line)
            if m:
                self._skip()
                append_sample(self.facts, "numerics.loss_scale", _num(m.group(1)), self.notes)
                return
            m = _DS.search(line)
            if m:
                self._skip()
                if m.group(2):
                    append_sample(self.facts, "numerics.loss_scale", _num(m.group(2)), self.notes)
                return
            m = _FAIRSEQ.search(line)
            if m:
                self._skip()
                append_sample(self.facts, "numerics.loss_scale", _num(m.group(1)), self.notes)
                return
        if "nan or inf found in input tensor" in low:
            self.nonfinite += 1
            return
        if "skipped=" in line:
            m = _DS_COUNTER.search(line)
            if m:
                self.ds_skipped = max(self.ds_skipped, int(m.group(2)))
        if " | " in line and "iteration" in low and ":" in line:
            self._megatron(line)
            return
        if "'loss'" in line or "'grad_norm'" in line:
            if "step'" in line:
                m = _HF_STEP.search(line)
                if m:
                    self.step = int(m.group(1))
            found = False
            for m in _HF.finditer(line):
                v = _num(m.group(2))
                if v is None:
                    continue
                if not found:
                    self.metric_records += 1
                    found = True
                kind = "loss" if m.group(1).lower() == "loss" else "grad"
                self._metric("numerics.loss" if kind == "loss" else "numerics.grad_norm", v, kind)
            if "'l" in line:
                self._lr([m.group(1) for m in _HF_LR.finditer(line)])
            if found:
                self._success()
            return
        m = _STEP.search(line)
        if m:
            self.step = int(m.group(1))
        got = False
        m = _PLAIN_LOSS.search(line)
        if m and (v := _num(m.group(1))) is not None:
            self.metric_records += 1
            got = True
            self._metric("numerics.loss", v, "loss")
        m = _PLAIN_GRAD.search(line)
        if m and (v := _num(m.group(1))) is not None:
            if not got:
                self.metric_records += 1
            self._metric("numerics.grad_norm", v, "grad")
            got = True
        m = _LOSS_SCALE_KV.search(line)
        if m:
            append_sample(self.facts, "numerics.loss_scale", _num(m.group(1)), self.notes)
        if got:
            self._success()

    def _megatron(self, line: str) -> None:
        fields: dict[str, str] = {}
        for part in line.split(" | "):
            key, sep, value = part.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip().rstrip("|").strip()
        # "iteration     5426/  250000" has no colon; the step is read from the raw line
        m = re.search(r"iteration\s+(\d+)\s*/", line)
        if not m:
            return
        self.step = int(m.group(1))
        self.metric_records += 1
        loss_key = next((k for k in fields if k.endswith("loss") and "scale" not in k), None)
        if loss_key and (v := _num(fields[loss_key])) is not None:
            self._metric("numerics.loss", v, "loss")
        elif "loss scale" in fields or "grad norm" in fields:
            self.missing_lm_loss += 1
        if "grad norm" in fields and (v := _num(fields["grad norm"])) is not None:
            self._metric("numerics.grad_norm", v, "grad")
        if "loss scale" in fields and (v := _num(fields["loss scale"])) is not None and v >= 0:
            append_sample(self.facts, "numerics.loss_scale", v, self.notes)
        lr = fields.get("learning rate")
        if lr:
            self._lr([lr])
        ms = fields.get("elapsed time per iteration (ms)")
        if ms and (v := _num(ms)) is not None and v >= 0:
            append_sample(self.facts, "training.step_time_ms", v, self.notes)
        seq = fields.get("actual seqlen")
        if seq and seq.isdigit():
            set_fact(self.facts, "training.seq_len", int(seq))
        sk = fields.get("number of skipped iterations")
        n = int(sk) if sk and sk.isdigit() else 0
        if n:
            self._skip(n)
        else:
            self._success()
        nan_it = fields.get("number of nan iterations")
        if nan_it and nan_it.isdigit():
            self.nonfinite += int(nan_it)

    # -- results --------------------------------------------------------------------------
    def finish(self) -> ParseResult:
        """Assemble the partial Facts document."""
        f = self.facts
        num = f.setdefault("numerics", {})
        skipped = max(self.skipped, self.ds_skipped)
        if skipped:
            num["skipped_steps"] = skipped
            num["consecutive_skipped_steps"] = max(self.longest_run, 1)
        if self.nonfinite:
            num["nonfinite_count"] = self.nonfinite
        if self.first_nonfinite_step is not None:
            num["first_nonfinite_step"] = self.first_nonfinite_step
        if self.nan_source:
            num["nan_source"] = self.nan_source
        for key in ("loss_scale",):
            if key in num:
                num[key] = [v for v in num[key] if v is not None and math.isfinite(v) and v >= 0]
        if self.rank_states or self.forced_outliers:
            states, outliers, notes = ranks.analyse(
                self.rank_states.values(), timeout_op=get_fact(f, "distributed.timeout_op")
            )
            d = f.setdefault("distributed", {})
            d["rank_states"] = states
            d["outlier_ranks"] = sorted(set(outliers) | self.forced_outliers)
            self.notes.extend(notes)
        if len(get_fact(f, "distributed.nccl_versions") or []) > 1:
            set_fact(f, "distributed.version_mismatch", True)
        self.compile.finish(f)
        if self.inference:
            f["inference"] = self.inference
        if self.oom_count > 1:
            self.notes.append(f"{self.source}: {self.oom_count} out-of-memory messages; sizes are from the first")
        if self.missing_lm_loss:
            self.notes.append(
                f"{self.source}: {self.missing_lm_loss} Megatron iteration line(s) without a loss value (skipped or NaN)"
            )
        for path in (
            "numerics.loss", "numerics.grad_norm", "numerics.loss_scale", "numerics.learning_rate",
            "training.step_time_ms",
        ):
            vals = get_fact(f, path)
            if vals is not None and len(vals) > MAX_SAMPLES:
                del vals[MAX_SAMPLES:]
        res = ParseResult(format=NAME, source=self.source, facts=trim(f), notes=self.notes)
        if self.forced_outliers:
            res.meta["forced_outliers"] = sorted(self.forced_outliers)
        if not res.facts:
            res.notes.append(f"{self.source}: no known training-log signal found")
        return res


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Scan a log given as lines: the reference definition (every candidate line is fed)."""
    scanner = LogScanner(source)
    it = iter(lines)
    prev: deque[str] = deque(maxlen=_LOOKBACK)
    line = next(it, None)
    while line is not None:
        nxt = next(it, None)
        if is_candidate(line):
            scanner.before = lambda p=tuple(prev): list(p)
            scanner.after = lambda n=nxt: n or ""
            scanner.feed(line)
        prev.append(line)
        line = nxt
    return scanner.finish()


def parse_stream(stream: BinaryIO, source: str, block_size: int = BLOCK_SIZE) -> ParseResult:
    """Scan a binary stream in blocks; same facts as :func:`parse` (see the module docstring)."""
    scanner = LogScanner(source)
    _BlockScan(scanner).run(stream, block_size)
    return scanner.finish()


def parse_path(path: str, source: str | None = None) -> ParseResult:
    """Scan a log file with the pure-Python block scan (:func:`parse_stream`)."""
    with open(path, "rb", buffering=0) as fh:
        return parse_stream(fh, source or path)


def _text(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", "replace")


class _BlockScan:
    """The block scan behind :func:`parse_stream`.

    The buffer always starts with a newline (a sentinel, so that the HF-line lookbehind and the
    line-start search work at the first line). The last complete line of a block is held back
    for the next block, so that every fed line has its next line at hand; the lines before a
    block start are kept (at most _LOOKBACK) for the OOM phase.
    """

    def __init__(self, scanner: LogScanner) -> None:
        self.sc = scanner
        self.tail: deque[str] = deque(maxlen=_LOOKBACK)  # lines before the current region
        self.buf = bytearray()
        self.lo = 1
        self.hi = 1
        self.floor = 1  # where the text in buf starts (lookback stops there, then uses tail)

    def run(self, stream: BinaryIO, block_size: int) -> None:
        cap = max(block_size, 16) + 1
        buf = bytearray(cap)
        buf[0] = 10
        fill = 1  # bytes used in buf: the sentinel and the carried lines
        readinto = getattr(stream, "readinto", None)
        while True:
            if readinto is not None:
                with memoryview(buf) as mv:
                    n = readinto(mv[fill:cap]) or 0
            else:
                data = stream.read(cap - fill) or b""
                if isinstance(data, str):
                    data = data.encode("utf-8", "replace")
                n = len(data)
                buf[fill : fill + n] = data
            end = fill + n
            self.buf = buf
            if n == 0:  # end of input: everything left, the last line with it
                if end > 1:
                    self.scan(1, end)
                return
            cut = buf.rfind(b"\n", 1, end)
            cut2 = buf.rfind(b"\n", 1, cut) if cut > 0 else -1
            if cut2 > 0:
                hi = cut2 + 1  # the last complete line is held back for the next block
            elif end < cap:
                fill = end  # room left: read more first
                continue
            elif cap <= 2 * _MAX_LINE:
                grown = bytearray(2 * cap)  # lines longer than the block: a larger buffer
                grown[:end] = buf[:end]
                buf, cap, fill = grown, len(grown), end
                continue
            else:
                hi = end  # a line over _MAX_LINE (binary junk): cut here
            self.scan(1, hi)
            self._remember(1, hi)
            rest = end - hi
            buf[1 : 1 + rest] = buf[hi:end]
            fill = 1 + rest

    def _remember(self, lo: int, hi: int) -> None:
        """Keep the last _LOOKBACK lines of the region for the next region's lookback."""
        buf = self.buf
        pos = hi - 1 if buf[hi - 1] == 10 else hi
        lines = []
        while pos > lo - 1 and len(lines) < _LOOKBACK:
            start = max(buf.rfind(b"\n", lo, pos) + 1, lo)
            lines.append(_text(buf[start:pos]))
            pos = start - 1
        if len(lines) < _LOOKBACK:
            self.tail.extend(reversed(lines))
        else:
            self.tail.clear()
            self.tail.extend(reversed(lines))

    def _before(self, start: int) -> list[str]:
        buf = self.buf
        floor = self.floor
        lines: list[str] = []
        pos = start - 1  # the newline ending the previous line
        while pos >= floor and len(lines) < _LOOKBACK:
            s = max(buf.rfind(b"\n", floor, pos) + 1, floor)
            lines.append(_text(buf[s:pos]))
            pos = s - 1
        lines.reverse()
        if len(lines) < _LOOKBACK:
            lines = list(self.tail)[max(0, len(self.tail) - (_LOOKBACK - len(lines))) :] + lines
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
        for piv, lits in _PIVOT_LIST:
            p = find(piv, lo, hi)
            while p >= 0:
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

    def _numeric(self, a: int, b: int) -> None:
        """The ``oss`` lines of buf[a:b], a stretch without other candidate lines."""
        buf = self.buf
        rests = _OSS.findall(buf, a, b)
        if not rests:
            return
        if b"" not in rests and self.sc.bulk_hf(rests):
            return
        last = -1
        find = buf.find
        for m in _OSS_ANY.finditer(buf, a, b):
            p = m.start()
            s = max(buf.rfind(b"\n", a, p) + 1, a)
            if s == last:
                continue
            last = s
            e = find(b"\n", p, b)
            self._feed(s, e if e >= 0 else b)
