#!/usr/bin/env python3
"""Low GPU utilisation because the DataLoader cannot keep up (``num_workers=0``).

A small model trains on the GPU while every sample costs a few milliseconds of CPU work in
``__getitem__`` in the main process. The driver samples
``nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv`` while the job runs
(``nvidia-smi.csv``); the loop measures its data-wait share and step times (``facts.json``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common as c

NAME = "gpu_dataloader_low_util"
STEPS = 40
BATCH = 32
SAMPLE_DECODE_S = 0.004  # 32 samples: ~130 ms of CPU per batch vs ~1 ms of GPU work


def workload(out: Path) -> None:
    """Train with a main-process DataLoader and measure data wait vs compute."""
    c.require_cuda()
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    c.seed_everything(0)
    dev = torch.device("cuda")

    class SlowDataset(Dataset):
        """Synthetic samples whose loading sleeps, standing in for decode + augmentation."""

        def __len__(self) -> int:
            return STEPS * BATCH

        def __getitem__(self, idx: int):
            time.sleep(SAMPLE_DECODE_S)
            g = torch.Generator().manual_seed(idx)
            return torch.randn(1024, generator=g), idx % 10

    loader = DataLoader(SlowDataset(), batch_size=BATCH, num_workers=0, pin_memory=False)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    waits, steps = [], []
    it = iter(loader)
    with c.NvidiaSmiSampler(out / "nvidia-smi.csv"):  # samples the training loop only
        for step in range(STEPS):
            t = c.Timer()
            x, y = next(it)
            wait_ms = t.ms()
            x, y = x.to(dev), y.to(dev)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()  # step time must include the GPU work
            step_ms = t.ms()
            waits.append(wait_ms)
            steps.append(step_ms)
            print(f"step {step} loss {loss.item():.4f} data_time {wait_ms / 1000:.4f}s "
                  f"batch_time {step_ms / 1000:.4f}s")
    fraction = sum(waits) / sum(steps)
    print(f"data wait: {fraction:.1%} of step time (num_workers=0, pin_memory=False)")
    c.write_json(out / "facts.json", {
        "symptom": "gpu_util",
        "dataloader": {"num_workers": loader.num_workers, "pin_memory": loader.pin_memory,
                       "batch_size": BATCH, "data_wait_fraction": round(fraction, 4)},
        "training": {"step_time_ms": [round(s, 3) for s in steps]},
    })


def main() -> int:
    """Driver: run the loop (it samples nvidia-smi itself) and collect train.log."""
    args = c.parse_args(__doc__.splitlines()[0])
    if args.child:
        workload(Path(args.out))
        return 0
    out = c.prepare_out(args.out)
    rc = c.run_child(__file__, out, timeout=120)
    if rc == 3:
        return 3  # no CUDA
    c.write_expected(out, NAME)
    return rc


if __name__ == "__main__":
    sys.exit(main())
