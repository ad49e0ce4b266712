#!/usr/bin/env python3
"""CUDA out of memory with plenty of reserved-but-unallocated memory: allocator fragmentation.

Workload (alternating allocation sizes, no kernels needed):

* a warm-up step with the largest batch reserves one segment spanning almost all free memory;
* each following micro-step allocates a large activation buffer and a small tensor that lives
  on (a per-step statistic kept for the whole run), so large and small blocks alternate inside
  that one segment;
* at the end of the accumulation window the activations are freed: the segment is now mostly
  free, but in holes between the live small tensors, and it cannot be returned to the driver;
* the next, longer batch needs a buffer larger than any hole and fails with
  "reserved by PyTorch but unallocated" in the OOM message.

The driver runs it twice: as is (``train.log``, the OOM log) and with
``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` (``expandable_segments_run.txt``), where the
allocator can unmap the holes and the same request succeeds. ``facts.json`` gets the
allocator's own numbers at the OOM (``torch.cuda.memory_reserved/allocated``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import _common as c

NAME = "gpu_oom_fragmentation"
MIB = 2**20
GIB = 2**30


def workload(out: Path, tag: str) -> None:
    """Fragment the caching allocator, then ask for a block larger than every hole."""
    c.require_cuda()
    import torch

    dev = torch.device("cuda")
    free, total = torch.cuda.mem_get_info(dev)
    chunk = 2 * GIB  # activation buffer per micro-step
    pin = 64 * MIB  # small long-lived tensor per micro-step
    # Leave less than one "next batch" (2 * chunk) outside the big segment.
    segment = free - GIB
    print(f"device {torch.cuda.get_device_name(dev)} total {total / GIB:.1f} GiB "
          f"free {free / GIB:.1f} GiB, PYTORCH_CUDA_ALLOC_CONF="
          f"{os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')!r}")

    stats = {}
    try:
        step = 0
        print(f"step {step} warm-up batch: {segment / GIB:.1f} GiB of activations")
        warm = torch.empty(segment, dtype=torch.uint8, device=dev)
        del warm  # cached, not returned: one big free block inside one segment

        kept, acts = [], []
        micro_steps = int(segment // (chunk + pin))
        for _ in range(micro_steps):
            step += 1
            acts.append(torch.empty(chunk, dtype=torch.uint8, device=dev))
            kept.append(torch.empty(pin, dtype=torch.uint8, device=dev))
            print(f"step {step} allocated {torch.cuda.memory_allocated() / GIB:.2f} GiB "
                  f"reserved {torch.cuda.memory_reserved() / GIB:.2f} GiB")
        acts.clear()  # end of the accumulation window: activations freed, small tensors stay

        step += 1
        print(f"step {step} longer batch needs {2 * chunk / GIB:.1f} GiB; allocated "
              f"{torch.cuda.memory_allocated() / GIB:.2f} GiB reserved "
              f"{torch.cuda.memory_reserved() / GIB:.2f} GiB")
        big = torch.empty(2 * chunk, dtype=torch.uint8, device=dev)
        print(f"step {step} ok: allocated {big.numel() / GIB:.1f} GiB")
    except torch.OutOfMemoryError:
        reserved, allocated = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
        stats = {
            "at_step": step,
            "tried_to_allocate_mib": 2 * chunk / MIB,
            "total_capacity_mib": round(total / MIB, 1),
            "reserved_mib": round(reserved / MIB, 1),
            "allocated_mib": round(allocated / MIB, 1),
            "reserved_unallocated_mib": round((reserved - allocated) / MIB, 1),
            "reserved_unallocated_fraction": round((reserved - allocated) / total, 4),
        }
        raise  # the traceback with the real OOM message goes to the log
    finally:
        (out / f"oom_stats_{tag}.json").write_text(json.dumps(stats))


def main() -> int:
    """Driver: run without and with expandable segments; keep the OOM log and the numbers."""
    args = c.parse_args(__doc__.splitlines()[0], [("--tag", {"default": "default"})])
    out = Path(args.out)
    if args.child:
        workload(out, args.tag)
        return 0
    out = c.prepare_out(out)
    env = {"PYTORCH_CUDA_ALLOC_CONF": None}  # the default allocator settings
    rc = c.run_child(__file__, out, ["--tag", "default"], env, timeout=120)
    if rc == 3:
        return 3  # no CUDA
    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    rc_exp = c.run_child(__file__, out, ["--tag", "expandable"], env, timeout=120,
                         log_name="expandable_segments_run.txt")
    stats_path = out / "oom_stats_default.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    for tmp in out.glob("oom_stats_*.json"):
        tmp.unlink()
    oom = {"occurred": bool(stats), "expandable_segments": False, "phase": "loop", **stats}
    c.write_json(out / "facts.json", {"symptom": "oom", "oom": oom})
    c.write_expected(out, NAME)
    print(f"expandable_segments:True run exit status: {rc_exp} (0 = the fix worked)")
    return 0 if stats else 1


if __name__ == "__main__":
    sys.exit(main())
