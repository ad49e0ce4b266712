#!/usr/bin/env python3
"""Training loop that waits on its DataLoader: slow ``__getitem__``, ``num_workers=0``.

Each sample costs a few milliseconds of (simulated) decoding in ``__getitem__``, and the
DataLoader runs it in the main process (``num_workers=0``, ``pin_memory=False``), so every step
waits for its batch while the model itself is tiny. The loop measures, per step, the time spent
in ``next(iterator)`` (data wait) and in forward/backward/step (compute), logs both, and writes
the DataLoader settings and the measured wait fraction and step times into ``facts.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common as c

NAME = "dataloader_no_workers"
STEPS = 20
BATCH = 8
SAMPLE_DECODE_S = 0.006  # per-sample "decode/augment" cost; 8 samples = ~48 ms per batch


def workload(out: Path) -> None:
    """Run the data-starved loop and write the measured facts."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    c.seed_everything(0)
    # One intra-op thread: the model is tiny, and on a shared 2-core box a thread pool spinning
    # against other processes would inflate the compute time instead of measuring it.
    torch.set_num_threads(1)

    class SlowDataset(Dataset):
        """Synthetic images whose loading sleeps, standing in for JPEG decode + augmentation."""

        def __len__(self) -> int:
            return STEPS * BATCH

        def __getitem__(self, idx: int):
            time.sleep(SAMPLE_DECODE_S)
            g = torch.Generator().manual_seed(idx)
            return torch.randn(3, 16, 16, generator=g), idx % 10

    loader = DataLoader(SlowDataset(), batch_size=BATCH, shuffle=False, num_workers=0,
                        pin_memory=False)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    waits, steps = [], []
    it = iter(loader)
    for step in range(STEPS):
        t = c.Timer()
        images, labels = next(it)
        wait_ms = t.ms()
        loss = nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step_ms = t.ms()
        waits.append(wait_ms)
        steps.append(step_ms)
        print(f"step {step} loss {loss.item():.4f} data_time {wait_ms / 1000:.4f}s "
              f"batch_time {step_ms / 1000:.4f}s")

    fraction = sum(waits) / sum(steps)
    print(f"data wait: {fraction:.1%} of step time over {STEPS} steps "
          f"(num_workers={loader.num_workers}, pin_memory={loader.pin_memory})")
    c.write_json(out / "facts.json", {
        "symptom": "gpu_util",
        "dataloader": {
            "num_workers": loader.num_workers,
            "pin_memory": loader.pin_memory,
            "batch_size": BATCH,
            "data_wait_fraction": round(fraction, 4),
        },
        "training": {"step_time_ms": [round(s, 3) for s in steps]},
    })


def main() -> int:
    """Driver: run the loop in a child process and collect train.log."""
    args = c.parse_args(__doc__.splitlines()[0])
    if args.child:
        workload(Path(args.out))
        return 0
    out = c.prepare_out(args.out)
    rc = c.run_child(__file__, out)
    c.write_expected(out, NAME)
    return rc


if __name__ == "__main__":
    sys.exit(main())
