"""Benchmark: scan a generated training log with kb's training-log parser and with ripgrep.

Usage: python benchmarks/bench_log_scan.py [--size-mb 1024] [--repeat 3] [--keep]

Generates a log of realistic lines (tqdm bars, INFO lines, HF metric dicts 1 line in 12, NCCL INFO
lines) with a few error signatures (an OOM, a watchdog timeout, NaN losses) in a temp dir, then
prints the file size, the throughput (best of ``--repeat`` runs) of kb's pure-Python block scan
(``training_log.parse_path``: the file read in 1 MB blocks, no ripgrep involved)
and of ``rg -i "error|oom|nan|timeout|cuda"``, their ratio, and the peak RSS of the kb scan, which runs in a child process that reports its own
``ru_maxrss``. Targets: kb >= 0.5x rg's throughput, peak RSS < 200 MB. The machine's load moves
both figures; the runs alternate so that both see the same conditions.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SIGNATURES = (
    "[rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
    "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 79.10 GiB "
    "of which 11.06 MiB is free. Including non-PyTorch memory, this process has 79.00 GiB memory in use. Of the "
    "allocated memory 72.90 GiB is allocated by PyTorch, and 5.87 GiB is reserved by PyTorch but unallocated.\n",
    "{'loss': nan, 'grad_norm': nan, 'learning_rate': 9.77e-06, 'epoch': 0.53}\n",
)


def _lines(rng: random.Random) -> list[str]:
    """A pool of benign lines in the shapes a real run prints."""
    pool = []
    for i in range(2000):
        step = i * 10
        pool.append(
            f"{i % 100:3d}%|{'#' * (i % 20):<20}| {step}/200000 [12:{i % 60:02d}:{i % 60:02d}<40:12:01, "
            f"{1 + rng.random():.2f}s/it]\n"
        )
        pool.append(
            f"[2024-05-01 12:{i % 60:02d}:{i % 60:02d},{i % 1000:03d}] [INFO] [data/loader.py:{88 + i % 50}] "
            f"prefetched shard {i} of 4096 ({rng.randint(10**6, 10**7)} tokens, queue depth {i % 8})\n"
        )
        pool.append(
            f"[2024-05-01 12:{i % 60:02d}:{i % 60:02d},{i % 1000:03d}] [INFO] [trainer.py:2411] "
            f"saving throughput stats: tokens/s={rng.randint(10**4, 10**5)}, mfu={rng.random():.3f}\n"
        )
    metrics = [
        f"{{'loss': {2 + rng.random():.4f}, 'grad_norm': {rng.random():.4f}, 'learning_rate': 2.9e-05, "
        f"'epoch': {i / 1000:.2f}}}\n"
        for i in range(500)
    ]
    nccl = [f"node-{i % 8}:1234:{5678 + i} [{i % 8}] NCCL INFO Channel {i % 32:02d}/32 : {i % 8}[{i % 8}] -> "
            f"{(i + 1) % 8}[{(i + 1) % 8}] via P2P/CUMEM\n" for i in range(64)]
    # one metric line per 12 lines, NCCL lines rare: what a logging_steps=10 run looks like
    return pool * 1 + metrics[: len(pool) // 12] + nccl[:4]


def generate(path: str, size_mb: int, seed: int = 0) -> int:
    """Write about ``size_mb`` MB of log lines with a few error signatures; return the size."""
    rng = random.Random(seed)
    pool = _lines(rng)
    target = size_mb * 1024 * 1024
    chunk_lines = [pool[rng.randrange(len(pool))] for _ in range(20000)]
    chunk = "".join(chunk_lines).encode()
    written = 0
    n = 0
    with open(path, "wb") as fh:
        while written < target:
            fh.write(chunk)
            written += len(chunk)
            n += 1
            if n % 50 == 0:
                sig = _SIGNATURES[(n // 50) % len(_SIGNATURES)].encode()
                fh.write(sig)
                written += len(sig)
    return written


def _child_scan(path: str) -> None:
    sys.path.insert(0, ROOT)
    from kb.parsers import training_log

    t0 = time.perf_counter()
    res = training_log.parse_path(path)
    dt = time.perf_counter() - t0
    oom = res.facts.get("oom", {}).get("occurred")
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{dt:.6f} {rss_kib} {int(bool(oom))} {len(res.facts.get('numerics', {}).get('loss', []))}")


def _kb_scan(path: str) -> tuple[float, float, str]:
    """One kb scan in a child process: (seconds, peak RSS in MB, what it found)."""
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", path], capture_output=True, text=True, check=True,
    )
    secs, rss_kib, oom, nloss = out.stdout.split()
    return float(secs), int(rss_kib) / 1024, f"oom found: {bool(int(oom))}, loss samples kept: {nloss}"


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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the generated log (default 1024)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each scan; the best counts (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--log", help="scan this existing log instead of generating one")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child_scan(args.child)
        return 0
    tmp = tempfile.mkdtemp(prefix="kb-bench-")
    path = args.log or os.path.join(tmp, "train.log")
    try:
        if not args.log:
            t0 = time.perf_counter()
            generate(path, args.size_mb)
            print(f"generated in {time.perf_counter() - t0:.1f} s: {path}")
        size = os.path.getsize(path)
        mb = size / 1e6
        print(f"file size: {mb:.0f} MB ({size} bytes)")
        # warm the page cache once so that neither scan pays for the disk
        with open(path, "rb") as fh:
            while fh.read(16 * 1024 * 1024):
                pass
        rg = shutil.which("rg")
        kb_best = rg_best = float("inf")
        rss = 0.0
        found = ""
        matched = 0
        for _ in range(max(args.repeat, 1)):
            secs, peak, found = _kb_scan(path)
            kb_best, rss = min(kb_best, secs), max(rss, peak)
            if rg:
                secs, matched = _rg_scan(rg, path)
                rg_best = min(rg_best, secs)
        kb_tput = mb / kb_best
        print(f"kb pure-Python scan: best {kb_best:.2f} s, {kb_tput:.0f} MB/s, peak RSS {rss:.0f} MB ({found})")
        if rg is None:
            print("rg not found: ratio skipped (apt-get install -y ripgrep)")
            return 0
        rg_tput = mb / rg_best
        print(f"rg -i 'error|oom|nan|timeout|cuda': best {rg_best:.2f} s, {rg_tput:.0f} MB/s ({matched} lines matched)")
        print(f"ratio kb/rg throughput: {kb_tput / rg_tput:.2f}x (target >= 0.5x); "
              f"kb peak RSS {rss:.0f} MB (target < 200 MB)")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
