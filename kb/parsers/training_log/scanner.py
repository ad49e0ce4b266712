"""The state of one training-log scan and the per-line dispatch both readers share."""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from kb.parsers import offload, ranks, vllm_metrics
from kb.parsers.base import MAX_SAMPLES, ParseResult, get_fact, set_fact, strip_ansi, trim
from kb.parsers.torch_compile import CompileScanner
from kb.parsers.training_log import dataload, distributed, oom, stalls
from kb.parsers.training_log.numerics import numerics
from kb.parsers.training_log.series import Series
from kb.parsers.training_log.triggers import FAMILY_LITERALS

NAME = "training_log"
#: fact paths kept as bounded series (see :mod:`.series`), in the order they are reported
SERIES_PATHS = (
    "numerics.loss", "numerics.grad_norm", "numerics.loss_scale", "numerics.learning_rate", "training.step_time_ms",
)
_ANOMALY = re.compile(r"Error detected in (\w+Backward\d*)|Function '(\w+)' returned nan values")
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?((?:NCCL|PYTORCH|TORCH|CUDA)_[A-Z0-9_]+)=(\S*)\s*$")


class LogScanner:
    """State carried across the lines of one log."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.facts: dict[str, Any] = {}
        self.notes: list[str] = []
        self.compile = CompileScanner()
        self.series: dict[str, Series] = {p: Series() for p in SERIES_PATHS}
        self.step: int | None = None  # the log's own step field, last seen
        self.metric_records = 0
        self.oom_count = 0
        self.skipped = 0
        self.run = 0  # consecutive skipped steps now
        self.longest_run = 0
        self.ds_skipped = 0
        self.nonfinite = 0
        self.first_nonfinite_step: int | None = None
        self.loss_nonfinite_seen = False
        self.nan_source: str | None = None
        self.rank_states: dict[int, dict[str, Any]] = {}
        self.forced_outliers: set[int] = set()
        self.missing_lm_loss = 0
        self.inference: dict[str, Any] = {}
        #: the CUDA devices llama.cpp placed model weights on
        self.model_devices: set[int] = set()
        #: the backward ops anomaly mode named; more than one (pastes of several runs) names none
        self.anomaly_ops: list[str] = []
        #: the log's steps at the first and the last step-time record (the records' stride)
        self.step_time_steps: list[int] = []
        #: how long the steps waited for their batch, where the trainer prints it
        self.data_waits = dataload.Waits()
        #: set by the reader around each fed line: the lines before it (up to LOOKBACK, oldest
        #: first) and the line after it ("" at the end)
        self.before: Callable[[], list[str]] = list
        self.after: Callable[[], str] = lambda: ""

    # -- what the line handlers call ---------------------------------------------------------
    def sample(self, path: str, value: float | None) -> None:
        """One value of a series; loss scales and learning rates only when finite and >= 0."""
        if value is None:
            return
        if path in ("numerics.loss_scale", "numerics.learning_rate") and not (math.isfinite(value) and value >= 0):
            return
        self.series[path].add(value, self.step)
        if path == "training.step_time_ms" and self.step is not None:
            self.timed_steps(self.step, self.step)

    def timed_steps(self, first: int, last: int) -> None:
        """The log's steps of a run of step-time records (the first and the last of them)."""
        if not self.step_time_steps:
            self.step_time_steps = [first, last]
        else:
            self.step_time_steps[1] = last

    def metric(self, path: str, value: float, kind: str) -> None:
        """A loss or grad-norm value; a non-finite one is counted with the step it came at."""
        self.series[path].add(value, self.step)
        if math.isfinite(value):
            return
        self.nonfinite += 1
        if self.nan_source is None:
            self.nan_source = kind
        if kind == "loss" and not self.loss_nonfinite_seen:
            self.loss_nonfinite_seen = True
            # only the log's own step places it: a paste is cut out of a longer run, so the
            # record's place in it says nothing of how many steps came before
            if self.step is not None:
                self.first_nonfinite_step = self.step

    def lr(self, texts: list[Any]) -> None:
        """Learning-rate values (str or bytes numbers); negative or non-finite ones are dropped."""
        for t in texts:
            try:
                v = float(t)
            except ValueError:
                continue
            self.sample("numerics.learning_rate", v)

    def skip(self, n: int = 1) -> None:
        """Steps skipped by the loss scaler."""
        self.skipped += n
        self.run += n
        self.longest_run = max(self.longest_run, self.run)

    def env(self, key: str, value: str) -> None:
        """An environment variable the log shows."""
        self.facts.setdefault("env", {}).setdefault(key, value)
        if key == "NCCL_P2P_DISABLE":
            set_fact(self.facts, "distributed.p2p_disabled", value.strip() == "1")
        if key in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):  # the new name, and the old
            set_fact(self.facts, "oom.expandable_segments", "expandable_segments:true" in value.lower())

    # -- the line handler -----------------------------------------------------------------------
    def feed(self, raw: str) -> None:
        """Consume one candidate line: every family whose trigger literal it holds is handled."""
        line = strip_ansi(raw).rstrip("\r\n")
        fams = {name for name, lits in FAMILY_LITERALS if any(x in line for x in lits)}
        if not fams:
            return
        low = line.lower()
        if "oom" in fams and ("out of memory" in low or "alloc_failed" in low
                              or "allocation_failed" in low  # cuRAND's status
                              or "oom when allocating" in low or "bfc_allocator.cc" in low
                              or "freememory:" in low
                              or "outofmemoryerror " in low):  # a notebook's traceback header
            oom.oom(self, line)
        if "distributed" in fams:
            distributed.distributed(self, line, low)
        if "numerics" in fams:
            numerics(self, line, low)
        if "anomaly" in fams:
            m = _ANOMALY.search(line)
            if m and (op := m.group(1) or m.group(2)) not in self.anomaly_ops:
                self.anomaly_ops.append(op)
        if "compile" in fams:
            self.compile.feed(line)
        if "vllm" in fams:
            cap = vllm_metrics.kv_capacity_line(line)
            # the newest start-up in the log is the one that ran; inference facts gather in
            # self.inference, which finish() writes whole
            for path, value in (cap or {}).items():
                if path.startswith("inference."):
                    self.inference[path.split(".", 1)[1]] = value
                else:
                    set_fact(self.facts, path, value, overwrite=True)
            st = None if cap else vllm_metrics.stats_line(line) or vllm_metrics.sglang_decode_line(line)
            if st:
                # one decode batch run without a CUDA graph is enough to say so
                eager = self.inference.get("decode_cuda_graph") is False
                self.inference.update(st)
                if eager:
                    self.inference["decode_cuda_graph"] = False
        if "devices" in fams:
            dev = offload.model_buffer_device(line)
            if dev is not None and len(self.model_devices) < 64:
                self.model_devices.add(dev)
                self.inference.setdefault("engine", "llama.cpp")
            found = None if dev is not None else offload.cuda_devices_line(line, self.after())
            if found is not None:
                count, name, cc = found
                set_fact(self.facts, "gpu.count", count)
                if name:
                    set_fact(self.facts, "gpu.name", name)
                    set_fact(self.facts, "gpu.compute_capability", cc)
        if "offload" in fams:
            placed = offload.placement_line(line)
            if placed is not None:
                # the least placed model: `ollama ps` lists every loaded model, and one split
                # across CPU and GPU is the slow one; the runner is the serving engine
                share, runner = placed
                seen = self.inference.get("gpu_model_share")
                self.inference["gpu_model_share"] = share if seen is None else min(seen, share)
                self.inference.setdefault("engine", runner)
        if "env" in fams:
            m = _ENV_LINE.match(line)
            if m:
                self.env(m.group(1), m.group(2))

    # -- results --------------------------------------------------------------------------------
    def finish(self) -> ParseResult:
        """Assemble the partial Facts document (series summaries go to ``meta["series"]``)."""
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
        if len(self.anomaly_ops) == 1:
            num["anomaly_op"] = self.anomaly_ops[0]
        elif self.anomaly_ops:
            self.notes.append(f"{self.source}: anomaly mode named {len(self.anomaly_ops)} different ops "
                              f"({', '.join(self.anomaly_ops)}): numerics.anomaly_op left unstated")
        summaries: dict[str, Any] = {}
        for path, s in self.series.items():
            if not s.count:
                continue
            group, key = path.split(".")
            f.setdefault(group, {})[key] = s.samples()
            summaries[path] = s.summary()
            if s.count > MAX_SAMPLES:
                self.notes.append(
                    f"{path}: {s.count} samples; {len(f[group][key])} kept (the first, a downsample, the extremes, "
                    "around the first non-finite value and the last)"
                )
        waited = self.data_waits.fraction()
        if waited is not None:
            f.setdefault("dataloader", {})["data_wait_fraction"] = waited
        st = self.series["training.step_time_ms"]
        if st.count and st.count <= MAX_SAMPLES:  # every record at hand, in log order
            first, last = self.step_time_steps or (0, 0)
            stride = (last - first) / (st.count - 1) if st.count > 1 and last > first else 1.0
            for key, value in stalls.slow_steps(st.head, stride).items():
                f.setdefault("training", {})[key] = value
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
        if len(self.model_devices) >= 2:
            # weights on 2+ GPUs: llama.cpp split the model layer-wise over them
            self.inference["gpus_per_replica"] = len(self.model_devices)
        if self.inference.get("gpu_model_share") == 1.0:
            # the runner placed every weight on the GPU: none is kept in host memory either
            self.inference.setdefault("cpu_offload_gb", 0.0)
        if self.inference:
            f["inference"] = self.inference
        if self.oom_count > 1:
            self.notes.append(f"{self.source}: {self.oom_count} out-of-memory messages; sizes are from the first")
        if self.missing_lm_loss:
            self.notes.append(
                f"{self.source}: {self.missing_lm_loss} Megatron iteration line(s) without a loss value (skipped or NaN)"
            )
        res = ParseResult(format=NAME, source=self.source, facts=trim(f), notes=self.notes)
        if summaries:
            res.meta["series"] = summaries
        if self.forced_outliers:
            res.meta["forced_outliers"] = sorted(self.forced_outliers)
        if not res.facts:
            res.notes.append(f"{self.source}: no known training-log signal found")
        return res
