#!/usr/bin/env python3
"""Collective timeout from a rank desync: rank 1 skips an ``all_reduce``, rank 0 waits in it.

Two CPU processes (gloo backend, 127.0.0.1, world size 2, 10 s collective timeout) run a
data-parallel style loop that all-reduces a gradient-like tensor every step. At step 3 rank 1
skips the all-reduce (a rank-dependent early ``continue``, the usual bug) and goes on to the
end-of-epoch ``barrier``; rank 0 is still in the step-3 ``all_reduce``. Both wait until the
gloo timeout fires. The driver captures the real error text in ``train.log`` and, if
``py-spy`` is available, a ``py-spy dump`` of each rank while they hang
(``dump_rank0.txt``, ``dump_rank1.txt``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import _common as c

NAME = "nccl_gloo_desync"
WORLD_SIZE = 2
TIMEOUT_S = 10
SKIP_STEP = 3


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for the rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank: int, port: int, out: str) -> None:
    """One rank of the job; rank 1 skips the all-reduce at ``SKIP_STEP``."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD_SIZE, timeout=timedelta(seconds=TIMEOUT_S))
    torch.manual_seed(rank)
    (Path(out) / f"rank{rank}.pid").write_text(str(os.getpid()))
    grad = torch.zeros(1024)
    for step in range(6):
        grad.normal_()
        if rank == 1 and step == SKIP_STEP:
            # e.g. "skip empty batch" logic that only triggers on one rank
            print(f"[rank{rank}] step {step}: empty batch, skipping", flush=True)
            break
        dist.all_reduce(grad)
        print(f"[rank{rank}] step {step} all_reduce done, grad norm {grad.norm():.3f}",
              flush=True)
        if rank == 0 and step == SKIP_STEP - 1:
            # Marker for the driver: the next all_reduce is the one that will hang.
            (Path(out) / "rank0.hanging").touch()
    (Path(out) / f"rank{rank}.hanging").touch()
    dist.barrier()
    dist.destroy_process_group()


def workload(out: Path) -> None:
    """Spawn the two ranks with torch.multiprocessing; errors propagate to this process."""
    import torch.multiprocessing as mp

    mp.spawn(rank_main, args=(free_port(), str(out)), nprocs=WORLD_SIZE, join=True)


def py_spy_dump(pid: int) -> str:
    """``py-spy dump --pid PID`` output (stdout+stderr), or why it could not run."""
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
    """Driver: start the job, dump each rank's stacks while they hang, collect the log."""
    args = c.parse_args(__doc__.splitlines()[0])
    out = Path(args.out)
    if args.child:
        workload(out)
        return 0
    out = c.prepare_out(out)
    for stale in [*out.glob("rank*.pid"), *out.glob("rank*.hanging"), *out.glob("dump_rank*.txt")]:
        stale.unlink()
    # TORCH_CPP_LOG_LEVEL=INFO makes c10d print its own process-group lines, as users set it
    # when chasing hangs.
    proc = c.launch_child(__file__, out, env={"TORCH_CPP_LOG_LEVEL": "INFO"})
    deadline = time.monotonic() + TIMEOUT_S + 40
    markers = [out / f"rank{r}.hanging" for r in range(WORLD_SIZE)]
    while time.monotonic() < deadline and proc.poll() is None:
        if all(m.exists() for m in markers):
            time.sleep(1.5)  # let both ranks block inside the collectives
            for rank in range(WORLD_SIZE):
                pid = int((out / f"rank{rank}.pid").read_text())
                dump = py_spy_dump(pid)
                if dump:
                    (out / f"dump_rank{rank}.txt").write_text(dump)
            break
        time.sleep(0.2)
    rc = c.wait_child(proc, max(1.0, deadline - time.monotonic()))
    for tmp in [*out.glob("rank*.pid"), *out.glob("rank*.hanging")]:
        tmp.unlink()
    c.write_json(out / "facts.json", {"distributed": {"backend": "gloo", "world_size": WORLD_SIZE}})
    c.write_expected(out, NAME)
    # The job failing is the symptom; the scenario itself succeeded if it failed as expected.
    return 0 if rc != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
