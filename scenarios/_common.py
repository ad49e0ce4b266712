"""Shared helpers for the scenario scripts.

Each scenario is a driver: it re-launches itself as a child process (``--child``) with the
environment a user would set (``TORCH_LOGS`` etc.), captures the child's stdout and stderr into
``train.log`` exactly as printed, and writes ``facts.json`` (only measured values, keyed by
fields of ``graphs/facts.yaml``) and ``expected.json``.

This module must stay importable without torch, so that ``scenarios/run`` and the tests can read
the registry on a machine without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SCENARIO_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Scenario:
    """One reproducible symptom: its script, the cause kb must name, and whether it needs CUDA."""

    name: str
    cause: str
    gpu: bool = False

    @property
    def script(self) -> Path:
        """Path of the scenario script (``scenarios/<name>.py``)."""
        return SCENARIO_DIR / f"{self.name}.py"


# Order matters only for the report table: cheap scenarios first.
REGISTRY: tuple[Scenario, ...] = (
    Scenario("compile_print_in_forward", "compile.print_in_forward"),
    Scenario("compile_item_host_sync", "compile.host_sync"),
    Scenario("compile_data_dependent_branch", "compile.python_control_flow"),
    Scenario("compile_recompile_shapes", "compile.dynamic_shapes"),
    # the overflow is the mechanism; the unbounded LR warm-up without clipping is the cause
    # (grad norm x100+ within the run, NaN near step 30: audit numerics (c), T5)
    Scenario("numerics_fp16_overflow", "numerics.lr_too_high"),
    Scenario("dataloader_no_workers", "gpu_util.dataloader_workers"),
    Scenario("oom_tensors_kept_alive", "oom.tensors_not_released"),
    Scenario("nccl_gloo_desync", "nccl.rank_desync_timeout"),
    Scenario("gpu_oom_startup", "oom.startup_too_large", gpu=True),
    Scenario("gpu_oom_long_input", "oom.long_input_at_step", gpu=True),
    Scenario("gpu_oom_fragmentation", "oom.fragmentation", gpu=True),
    Scenario("gpu_dataloader_low_util", "gpu_util.dataloader_workers", gpu=True),
    Scenario("gpu_launch_bound_cuda_graphs", "gpu_util.launch_bound", gpu=True),
)

BY_NAME = {s.name: s for s in REGISTRY}

# How a driver tells its workload process where the artifact folder is.
OUT_ENV = "SCENARIO_OUT"

# Graph-break and recompile logs, as a user would enable them.
TORCH_LOGS = "graph_breaks,recompiles"


def seed_everything(seed: int = 0) -> None:
    """Seed Python, torch (and CUDA when present) so the symptom shows on every run."""
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON (the artifacts are meant to be read by people too)."""
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def write_expected(out: Path, name: str) -> None:
    """Write ``expected.json`` for scenario ``name`` from the registry."""
    write_json(out / "expected.json", {"cause": BY_NAME[name].cause, "scenario": name})


def child_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """Environment of the workload process: the caller's, plus ``extra`` (None removes a key).

    ``PYTHONUNBUFFERED`` keeps stdout and stderr lines in the order they were printed.
    """
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


_STAGE: Path | None = None


def stage(script: str | Path) -> Path:
    """Copy ``script`` (and this module) to a temporary folder as ``train.py``; return its path.

    Tracebacks and Dynamo logs print the user's file name. The scenario file names spell out
    the cause (``compile_print_in_forward.py``), which would hand the answer to kb's parsers;
    a user's logs show ``train.py``. The folder is removed when the driver exits.
    """
    global _STAGE
    import atexit
    import shutil
    import tempfile

    if _STAGE is None:
        _STAGE = Path(tempfile.mkdtemp(prefix="job-"))
        atexit.register(shutil.rmtree, _STAGE, True)
        shutil.copy(Path(__file__), _STAGE / "_common.py")
    target = _STAGE / "train.py"
    shutil.copy(Path(script), target)
    return target


def launch_child(
    script: str | Path,
    out: Path,
    args: list[str] | None = None,
    env: dict[str, str | None] | None = None,
    log_name: str = "train.log",
) -> subprocess.Popen:
    """Start ``script --child --out OUT ARGS`` with stdout+stderr going to ``OUT/<log_name>``.

    The child runs from a staged copy named ``train.py`` (see :func:`stage`) and finds OUT in
    the environment, so that its command line (shown by py-spy and launchers) names nothing.
    """
    cmd = [sys.executable, str(stage(script)), "--child", *(args or [])]
    return launch_cmd(cmd, out / log_name, {**(env or {}), OUT_ENV: str(out)})


def launch_cmd(
    cmd: list[str], log_path: Path, env: dict[str, str | None] | None = None
) -> subprocess.Popen:
    """Start ``cmd`` with stdout+stderr appended to ``log_path``; finish with wait_child."""
    log = open(log_path, "ab")  # noqa: SIM115 - closed in wait_child
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_env(env))
    proc._scenario_log = log  # type: ignore[attr-defined]
    return proc


def wait_child(proc: subprocess.Popen, timeout: float) -> int:
    """Wait for a child from :func:`launch_child`; kill it (and say so in the log) on timeout."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
        proc._scenario_log.write(  # type: ignore[attr-defined]
            f"[scenario driver] child killed after {timeout:.0f} s\n".encode()
        )
    proc._scenario_log.close()  # type: ignore[attr-defined]
    return rc


def run_child(
    script: str | Path,
    out: Path,
    args: list[str] | None = None,
    env: dict[str, str | None] | None = None,
    timeout: float = 120,
    log_name: str = "train.log",
) -> int:
    """Run the workload to completion; return its exit status (non-zero is often the symptom)."""
    return wait_child(launch_child(script, out, args, env, log_name), timeout)


def prepare_out(out: str | Path) -> Path:
    """Create the artifact folder and remove artifacts of an earlier run."""
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    for pattern in ("*.log", "*.csv", "*.txt", "facts.json", "expected.json"):
        for stale in path.glob(pattern):
            stale.unlink()
    return path


def mean(values: list[float]) -> float:
    """Arithmetic mean (0.0 for an empty list)."""
    return sum(values) / len(values) if values else 0.0


def slope(ys: list[float]) -> float:
    """Least-squares slope of ``ys`` against 0..n-1 (growth per step)."""
    n = len(ys)
    if n < 2:
        return 0.0
    mx = (n - 1) / 2
    my = mean(ys)
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den


class Timer:
    """Wall-clock stopwatch in milliseconds (``perf_counter``)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def ms(self) -> float:
        """Milliseconds since creation or the last :meth:`reset`."""
        return (time.perf_counter() - self.t0) * 1000.0

    def reset(self) -> float:
        """Return the elapsed milliseconds and restart."""
        elapsed = self.ms()
        self.t0 = time.perf_counter()
        return elapsed


def parse_args(description: str, extra: list[tuple[str, dict]] | None = None):
    """Parse the common scenario options: ``--out DIR`` and the internal ``--child`` flag.

    A child without ``--out`` takes the folder from ``$SCENARIO_OUT``.
    """
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", help="artifact folder (created if missing)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for flag, kwargs in extra or []:
        parser.add_argument(flag, **kwargs)
    args = parser.parse_args()
    if args.child and not args.out:
        args.out = os.environ.get(OUT_ENV)
    if not args.out:
        parser.error("--out DIR is required")
    return args


BACKEND_OPTION = (
    "--backend",
    {
        "default": "inductor",
        "help": "torch.compile backend; the logs are Dynamo's, so 'eager' shows the same "
        "breaks faster (default: inductor, what users run)",
    },
)


def require_cuda() -> None:
    """Exit with status 3 and a clear message when CUDA is not available (GPU scenarios)."""
    import torch

    if not torch.cuda.is_available():
        print("this scenario needs a CUDA GPU; torch.cuda.is_available() is False",
              file=sys.stderr)
        sys.exit(3)


def last_step_before_error(log_text: str) -> int | None:
    """The step number of the last ``step N`` line in a log (where a crash happened)."""
    import re

    steps = re.findall(r"^step (\d+)\b", log_text, flags=re.MULTILINE)
    return int(steps[-1]) if steps else None


class NvidiaSmiSampler:
    """Sample ``nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv``.

    Runs ``nvidia-smi ... -lms PERIOD`` in the background and writes its raw CSV output (header
    once, one row per GPU per sample) to a file, exactly as a user would capture it.
    """

    def __init__(self, path: Path, period_ms: int = 200) -> None:
        self.path = path
        self.period_ms = period_ms
        self.proc: subprocess.Popen | None = None
        self._file = None

    def __enter__(self) -> "NvidiaSmiSampler":
        import shutil

        exe = shutil.which("nvidia-smi")
        if exe is None:
            return self
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen(
            [exe, "--query-gpu=index,utilization.gpu,memory.used", "--format=csv",
             "-lms", str(self.period_ms)],
            stdout=self._file, stderr=subprocess.STDOUT,
        )
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._file is not None:
            self._file.close()
