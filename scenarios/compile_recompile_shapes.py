#!/usr/bin/env python3
"""Recompilations from changing input shapes with ``dynamic=False``.

Batches of variable sequence length (no padding to a fixed length) reach a model compiled with
``dynamic=False``; every new length fails the size guard and Dynamo recompiles, which
``TORCH_LOGS=recompiles`` reports with the guard ("size mismatch at index 1").
"""

from __future__ import annotations

import sys

import _common as c

NAME = "compile_recompile_shapes"


def workload(backend: str) -> None:
    """Train on batches of five distinct sequence lengths with a shape-specialised compile."""
    import torch
    from torch import nn

    c.seed_everything(0)

    class Net(nn.Module):
        """Token embedding + mean-pooling + linear head (shape-generic in eager mode)."""

        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(100, 16)
            self.head = nn.Linear(16, 1)

        def forward(self, tokens):
            return self.head(self.emb(tokens).mean(dim=1))

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model, backend=backend, dynamic=False)
    # Five distinct lengths stay under the default recompile limit (8), as in a typical run.
    for step, seq_len in enumerate([8, 12, 16, 20, 24, 8]):
        tokens = torch.randint(0, 100, (4, seq_len))
        loss = compiled(tokens).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} seq_len {seq_len} loss {loss.item():.4f}")


def main() -> int:
    """Driver: run the workload with graph-break logging, collect train.log."""
    args = c.parse_args(__doc__.splitlines()[0], [c.BACKEND_OPTION])
    if args.child:
        workload(args.backend)
        return 0
    out = c.prepare_out(args.out)
    rc = c.run_child(__file__, out, ["--backend", args.backend], {"TORCH_LOGS": c.TORCH_LOGS})
    c.write_expected(out, NAME)
    return rc


if __name__ == "__main__":
    sys.exit(main())
