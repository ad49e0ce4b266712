"""Benchmark: kb's training-log scan beside ripgrep, on generated logs of each trainer format.

Usage: python benchmarks/bench_log_scan.py [--size-mb 1024] [--formats hf,generic,...] [--repeat 3]
       [--engine auto|python|polars|arrow] [--keep]

For each format (HF Trainer dicts, plain ``step N loss X ...`` lines, DeepSpeed ``steps: N loss:``,
Lightning progress bars, Megatron iteration lines) a log of ``--size-mb`` MB is generated with a
metric line every step; near the end (the last 0.5 %) the loss goes NaN, then an OOM message and
an NCCL watchdog timeout follow. Printed per format: kb's throughput (``training_log.parse_path``
in a child process, which reports its own peak RSS) and ``rg -i "error|oom|nan|timeout|cuda"``'s
on the same file in the same run, their ratio, and whether kb found the NaN with its step.
kb and rg runs alternate (kb, rg, kb, rg, ...) ``--repeat`` times; the medians are printed, with
kb's CPU time (all its threads) beside its wall time, and the engine that read the log: "arrow"
(the fixed-width engine over a memory map, :mod:`kb.parsers.training_log.fixed`, when pyarrow is
installed), "polars" (the columnar engine, :mod:`kb.parsers.training_log.columnar`) or "python"
(the pure-Python block path). Targets (issue #15): >= 0.5x rg's throughput at <= 200 MB
peak RSS. Both runs read a file that is already in the page cache; the machine's load moves both
figures (the load average is printed before and after).
"""

from __future__ import annotations

import argparse
import os
import statistics
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 79.00 GiB memory in "
        "use. Of the allocated memory 72.90 GiB is allocated by PyTorch, and 5.87 GiB is reserved by PyTorch but "
        "unallocated.\n")
_WATCHDOG = ("[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, "
             "NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n")


def _hf(i: int, loss: str, g: str) -> str:
    return f"{{'loss': {loss}, 'grad_norm': {g}, 'learning_rate': 2.9e-05, 'epoch': {i / 10000:.2f}}}\n"


def _generic(i: int, loss: str, g: str) -> str:
    return (f"[2026-12-01 03:{i // 60 % 60:02d}:{i % 60:02d}] rank1 step {i} loss {loss} lr 3.0e-4 grad_norm {g} "
            f"tokens/s {9000 + i % 997} mem 61.2GiB\n")


def _deepspeed(i: int, loss: str, g: str) -> str:
    return f"steps: {i} loss: {loss} iter time (s): 0.512 samples/sec: 62.500\n"


def _lightning(i: int, loss: str, g: str) -> str:
    return (f"Epoch {i // 1000}:  {i % 1000 // 10:2d}%|█████     | {i % 1000}/1000 [00:10<00:10,  9.98it/s, v_num=0, "
            f"loss={loss}, grad_norm={g}]\n")


def _megatron(i: int, loss: str, g: str) -> str:
    return (f" iteration {i:8d}/  500000 | consumed samples: {i * 512:12d} | elapsed time per iteration (ms): "
            f"{4000 + i % 97:.1f} | learning rate: 3.000000E-04 | global batch size:   512 | lm loss: {loss} | "
            f"loss scale: 1.0 | grad norm: {g} | number of skipped iterations:   0 | number of nan iterations:   0 |\n")


FORMATS: dict[str, Callable[[int, str, str], str]] = {
    "hf": _hf, "generic": _generic, "deepspeed": _deepspeed, "lightning": _lightning, "megatron": _megatron,
}


def generate(path: str, fmt: str, size_mb: int, seed: int = 0) -> int:
    """Write about ``size_mb`` MB of ``fmt`` metric lines, NaN loss then errors at ~99.5 %.

    Returns the step of the NaN line.
    """
    rng = random.Random(seed)
    line = FORMATS[fmt]
    losses = [f"{2 + rng.random():.4f}" for _ in range(1009)]
    grads = [f"{rng.random():.3f}" for _ in range(1013)]
    target = size_mb * 1_000_000
    per_line = len(line(1, losses[0], grads[0]).encode())
    n = max(target // per_line, 100)
    nan_at = n - n // 200
    written = 0
    step = 1
    with open(path, "w", encoding="utf-8") as fh:
        while step <= n:
            hi = min(step + 20_000, n + 1)
            if step <= nan_at < hi:
                text = "".join(line(i, "nan" if i == nan_at else losses[i % 1009], grads[i % 1013]) for i in range(step, hi))
            else:
                text = "".join(line(i, losses[i % 1009], grads[i % 1013]) for i in range(step, hi))
            fh.write(text)
            written += len(text)
            if step <= nan_at < hi:
                fh.write(_OOM + _WATCHDOG)
            step = hi
    return nan_at


def _child_scan(path: str, engine: str) -> None:
    sys.path.insert(0, ROOT)
    from kb.parsers import training_log

    t0, c0 = time.perf_counter(), time.process_time()
    res = training_log.parse_path(path, progress=False, engine=None if engine == "auto" else engine)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    num = res.facts.get("numerics", {})
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    oom = int(bool(res.facts.get("oom", {}).get("occurred")))
    count = res.meta.get("series", {}).get("numerics.loss", {}).get("count", 0)
    print(f"{dt:.6f} {cpu:.6f} {rss_kib} {num.get('first_nonfinite_step', -1)} {oom} {count} {res.meta.get('engine')}")


def _kb_scan(path: str, engine: str) -> tuple[float, float, float, int, bool, int, str]:
    """One kb scan in a child process: (seconds, CPU seconds, peak RSS MB, NaN step, OOM found,
    loss samples, engine). CPU seconds (all threads) say what the scan costs when other jobs share
    the cores. The child's time is the scan's alone (the interpreter's start is not counted)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path, "--engine", engine],
                         capture_output=True, text=True, check=True)
    secs, cpu, rss_kib, nan_step, oom, count, used = out.stdout.split()
    return float(secs), float(cpu), int(rss_kib) / 1024, int(nan_step), bool(int(oom)), int(count), used


def _rg_scan(rg: str, path: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([rg, "-i", "error|oom|nan|timeout|cuda", path], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    matched = 0
    while block := proc.stdout.read(1 << 20):
        matched += block.count(b"\n")
    proc.wait()
    return time.perf_counter() - t0, matched


def main() -> int:
    """Generate, scan with kb (child process) and rg, print the figures."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="size of each generated log (default 1024)")
    ap.add_argument("--formats", default=",".join(FORMATS), help=f"comma-separated, of: {', '.join(FORMATS)}")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs of each scan; medians are printed (default 3)")
    ap.add_argument("--engine", default="auto", choices=("auto", "python", "polars", "arrow"),
                    help="kb's engine: auto (for logs over 8 MB: arrow when pyarrow is installed, else polars "
                         "when polars is), python, polars or arrow")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child_scan(args.child, args.engine)
        return 0
    rg = shutil.which("rg")
    if rg is None:
        print("rg not found: ratios skipped (apt-get install -y ripgrep)")
    tmp = tempfile.mkdtemp(prefix="kb-bench-")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'format':10} {'MB':>6} {'engine':>7} {'kb s':>7} {'kb MB/s':>8} {'kb cpu s':>8} {'kb cpu MB/s':>11} "
          f"{'RSS MB':>7} {'rg s':>6} {'rg MB/s':>8} {'ratio':>6}  found")
    try:
        for fmt in args.formats.split(","):
            path = os.path.join(tmp, f"{fmt}.log")
            nan_at = generate(path, fmt, args.size_mb)
            mb = os.path.getsize(path) / 1e6
            with open(path, "rb") as fh:  # into the page cache, so that neither scan pays for the disk
                while fh.read(16 << 20):
                    pass
            kb_s: list[float] = []
            kb_c: list[float] = []
            rg_s: list[float] = []
            rss = 0.0
            got = (0, False, 0, "-")
            for _ in range(max(args.repeat, 1)):  # interleaved: kb, rg, kb, rg, ...
                secs, cpu, peak, nan_step, oom, count, used = _kb_scan(path, args.engine)
                kb_s.append(secs)
                kb_c.append(cpu)
                rss = max(rss, peak)
                got = (nan_step, oom, count, used)
                if rg:
                    rg_s.append(_rg_scan(rg, path)[0])
            kb_med, cpu_med = statistics.median(kb_s), statistics.median(kb_c)
            kb_tput = mb / kb_med
            # HF's dicts and Lightning's bars print no global step: the NaN is found, with no step
            # (kb reports none rather than a record number, which is not the trainer's step)
            stepless = fmt in ("hf", "lightning")
            where = ("no step in this format" if stepless and got[0] == -1 else
                     f"NaN at step {got[0]} (expected {nan_at})")
            found = f"{where}, OOM {got[1]}, {got[2]} loss values"
            row = (f"{fmt:10} {mb:6.0f} {got[3]:>7} {kb_med:7.2f} {kb_tput:8.1f} {cpu_med:8.2f} {mb / cpu_med:11.1f} "
                   f"{rss:7.0f}")
            if rg:
                rg_med = statistics.median(rg_s)
                rg_tput = mb / rg_med
                print(f"{row} {rg_med:6.2f} {rg_tput:8.0f} {kb_tput / rg_tput:6.3f}  {found}", flush=True)
            else:
                print(f"{row} {'-':>6} {'-':>8} {'-':>6}  {found}", flush=True)
            if not args.keep:
                os.remove(path)
        print(f"load average after: {os.getloadavg()[0]:.2f}; medians of {max(args.repeat, 1)} alternating runs")
        print("targets: ratio >= 0.5 (kb/rg throughput), peak RSS <= 200 MB")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
