#!/usr/bin/env python3
"""Loss goes to inf, then NaN, from float16 overflow.

A small classifier is trained entirely in float16 (no loss scaler, no fp32 master weights) with
a learning-rate warm-up that keeps growing. After some steps the logits exceed the float16
range (65504), the loss becomes ``inf`` and then ``nan``. The log has HF-Trainer style metric
dicts; ``facts.json`` states the compute dtype, which the log does not show. The expected
answer is the learning rate (``numerics.lr_too_high``): the grad norm explodes under an
unclipped, ever-growing LR and the first NaN comes after ~30 steps, not after the hundreds of
healthy steps that mark a plain fp16 overflow.
"""

from __future__ import annotations

import sys

import _common as c

NAME = "numerics_fp16_overflow"
STEPS = 40


def workload(out) -> None:
    """Train in float16 and log ``{'loss': ..., 'grad_norm': ..., 'step': N}`` each step."""
    import torch
    from torch import nn

    c.seed_everything(0)
    dtype = torch.float16
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 32, dtype=dtype)
    y = torch.randint(0, 10, (256,))
    for step in range(1, STEPS + 1):
        # Unbounded exponential warm-up: the bug that drives the weights out of fp16 range.
        lr = 0.01 * 1.25**step
        for group in opt.param_groups:
            group["lr"] = lr
        i = (step * 16) % 256
        loss = nn.functional.cross_entropy(model(x[i : i + 16]), y[i : i + 16])
        opt.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        print(
            {
                "loss": round(loss.item(), 4),
                "grad_norm": round(grad_norm.item(), 4),
                "learning_rate": lr,
                "epoch": round(step * 16 / 256, 2),
                "step": step,
            }
        )
    # The dtype is part of the training config, not of the log: hand it over as a fact.
    c.write_json(out / "facts.json", {"numerics": {"dtype": "fp16"}})


def main() -> int:
    """Driver: run the fp16 training in a child process and collect train.log."""
    args = c.parse_args(__doc__.splitlines()[0])
    if args.child:
        from pathlib import Path

        workload(Path(args.out))
        return 0
    out = c.prepare_out(args.out)
    rc = c.run_child(__file__, out)
    c.write_expected(out, NAME)
    return rc


if __name__ == "__main__":
    sys.exit(main())
