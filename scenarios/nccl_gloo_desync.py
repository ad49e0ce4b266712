#!/usr/bin/env python3
"""Collective timeout from a rank desync: rank 1 skips an ``all_reduce``, rank 0 waits in it.

Two CPU ranks launched with ``torchrun --standalone --nproc-per-node 2`` (gloo backend,
127.0.0.1, 10 s collective timeout) run a data-parallel style loop that all-reduces a
gradient-like tensor every step. At step 3 rank 1 skips the all-reduce (a rank-dependent
"skip empty batch", the usual bug), does 2 s of end-of-epoch work and enters the ``barrier``;
rank 0 is still in the step-3 ``all_reduce`` and is the first to hit the gloo timeout. The
driver captures the launcher's and the ranks' output in ``train.log`` and, if ``py-spy`` is
available, a ``py-spy dump`` of each rank while they hang (``dump_rank0.txt``,
``dump_rank1.txt``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _common as c

NAME = "nccl_gloo_desync"
WORLD_SIZE = 2
TIMEOUT_S = 10
SKIP_STEP = 3


def rank_main(out: Path) -> None:
    """One rank (RANK from torchrun); rank 1 skips the all-reduce at ``SKIP_STEP``."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT_S))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    (out / f"rank{rank}.pid").write_text(str(os.getpid()))
    grad = torch.zeros(1024)
    for step in range(6):
        grad.normal_()
        if rank == 1 and step == SKIP_STEP:
            print(f"[rank{rank}] step {step}: empty batch, skipping", flush=True)
            break
        dist.all_reduce(grad)
        print(f"[rank{rank}] step {step} all_reduce done, grad norm {grad.norm():.3f}",
              flush=True)
        if rank == 0 and step == SKIP_STEP - 1:
            # Marker for the driver: the next all_reduce is the one that will hang.
            (out / "rank0.hanging").touch()
    if rank == 1:
        # End-of-epoch work before the barrier; it also makes rank 0 (waiting since step 3)
        # the first to hit the timeout, as in a real desync where the peers report it.
        time.sleep(2)
    (out / f"rank{rank}.hanging").touch()
    dist.barrier()
    dist.destroy_process_group()


def py_spy_dump(pid: int) -> str:
    """``py-spy dump --pid PID`` output (stdout+stderr), or "" when py-spy is not installed."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        return ""
    try:
        res = subprocess.run([exe, "dump", "--pid", str(pid)], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Error: {exc}\n"
    return res.stdout + res.stderr


def main() -> int:
    """Driver: start the job with torchrun, dump each rank while they hang, collect the log."""
    args = c.parse_args(__doc__.splitlines()[0])
    out = Path(args.out).resolve()
    if args.child:
        rank_main(out)
        return 0
    out = c.prepare_out(out)
    for stale in [*out.glob("rank*.pid"), *out.glob("rank*.hanging")]:
        stale.unlink()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={WORLD_SIZE}", str(c.stage(__file__)), "--child"]
    # TORCH_CPP_LOG_LEVEL=INFO: c10d's own lines, as users enable them when chasing hangs.
    proc = c.launch_cmd(cmd, out / "train.log", {"TORCH_CPP_LOG_LEVEL": "INFO",
                                                 "OMP_NUM_THREADS": "1", c.OUT_ENV: str(out)})
    deadline = time.monotonic() + TIMEOUT_S + 50
    markers = [out / f"rank{r}.hanging" for r in range(WORLD_SIZE)]
    while time.monotonic() < deadline and proc.poll() is None:
        if all(m.exists() for m in markers):
            time.sleep(1.5)  # let both ranks block inside the collectives
            for rank in range(WORLD_SIZE):
                dump = py_spy_dump(int((out / f"rank{rank}.pid").read_text()))
                if dump:
                    (out / f"dump_rank{rank}.txt").write_text(dump)
            break
        time.sleep(0.2)
    rc = c.wait_child(proc, max(1.0, deadline - time.monotonic()))
    for tmp in [*out.glob("rank*.pid"), *out.glob("rank*.hanging")]:
        tmp.unlink()
    c.write_json(out / "facts.json",
                 {"distributed": {"backend": "gloo", "world_size": WORLD_SIZE}})
    c.write_expected(out, NAME)
    # The job failing is the symptom: the scenario worked if the job failed.
    return 0 if rc != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
