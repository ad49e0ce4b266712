#!/usr/bin/env python3
"""CUDA out of memory at the very first step: the batch is far too large for the card.

The batch size is derived from the card's capacity so that the first layer's output alone
needs about twice the device memory; the first forward fails with the real
``torch.OutOfMemoryError`` message. The driver records at which step it failed (from the
``step N`` lines of the log) in ``facts.json``.
"""

from __future__ import annotations

import sys

import _common as c

NAME = "gpu_oom_startup"
IN_DIM, HIDDEN = 1024, 16384


def workload() -> None:
    """Build a small MLP and run it on a batch whose activations cannot fit."""
    c.require_cuda()
    import torch
    from torch import nn

    c.seed_everything(0)
    dev = torch.device("cuda")
    total = torch.cuda.get_device_properties(dev).total_memory
    # fp32 hidden activations of shape (batch, HIDDEN): make them ~2x the whole card.
    batch = int(2 * total / (HIDDEN * 4))
    model = nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"batch_size {batch}, device {torch.cuda.get_device_name(dev)}")
    for step in range(3):
        print(f"step {step}")
        x = torch.randn(batch, IN_DIM, device=dev)
        y = torch.randint(0, 10, (batch,), device=dev)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")


def main() -> int:
    """Driver: run the workload (expected to crash with OOM), record the failing step."""
    args = c.parse_args(__doc__.splitlines()[0])
    if args.child:
        workload()
        return 0
    out = c.prepare_out(args.out)
    rc = c.run_child(__file__, out, timeout=120)
    if rc == 3:
        return 3  # no CUDA: nothing was measured
    log = (out / "train.log").read_text(errors="replace")
    step = c.last_step_before_error(log)
    oom = {"occurred": "OutOfMemoryError" in log}
    if step is not None:
        oom["at_step"] = step
        oom["phase"] = "first_step" if step == 0 else "loop"
    c.write_json(out / "facts.json", {"symptom": "oom", "oom": oom})
    c.write_expected(out, NAME)
    return 0 if rc != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
