"""Benchmark: cross-rank analysis of 4096 generated py-spy dumps (target < 2 s).

Usage: python benchmarks/bench_ranks.py [--ranks 4096]

Writes one ``dump_rank<N>.txt`` per rank into a temp dir (most ranks in ``all_reduce``, a few
elsewhere), then times ``kb.inputs.load_inputs`` on the directory (detection, parsing, merge and
analysis) and ``kb.parsers.ranks.analyse`` alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kb.inputs import load_inputs  # noqa: E402
from kb.parsers import ranks  # noqa: E402

_STUCK = """Process {pid}: python train.py --deepspeed ds.json
Python v3.11.7 (/usr/bin/python3.11)

Thread {pid} (active): "MainThread"
    {func} ({file}:2501)
    wrapper (torch/distributed/c10d_logger.py:83)
    reduce_loss (train.py:141)
    train_step (train.py:212)
    main (train.py:300)
    <module> (train.py:321)
Thread {tid} (idle): "Thread-1 (_read_thread)"
    _recv_msg (torch/_inductor/compile_worker/subproc_pool.py:61)
    run (threading.py:1012)
"""


def main() -> int:
    """Generate the dumps, time the analysis, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4096)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kb-ranks-")
    try:
        outliers = {17, args.ranks // 2, args.ranks - 1}
        for r in range(args.ranks):
            func, file = ("all_reduce", "torch/distributed/distributed_c10d.py")
            if r in outliers:
                func, file = ("forward", "transformers/models/llama/modeling_llama.py")
            with open(os.path.join(tmp, f"dump_rank{r}.txt"), "w") as fh:
                fh.write(_STUCK.format(pid=10000 + r, tid=20000 + r, func=func, file=file))
        t0 = time.perf_counter()
        bundle = load_inputs([tmp])
        total = time.perf_counter() - t0
        states = bundle.facts["distributed"]["rank_states"]
        t0 = time.perf_counter()
        _, found, _ = ranks.analyse(states)
        analysis = time.perf_counter() - t0
        ok = set(found) == outliers
        print(f"{args.ranks} py-spy dumps: load+parse+merge+analyse {total:.2f} s, analyse alone {analysis * 1000:.1f} ms "
              f"(target < 2 s); outliers {sorted(found)} {'correct' if ok else 'WRONG'}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
