#!/usr/bin/env python3
"""Graph break from a debugging ``print`` inside a compiled ``forward``.

The workload trains a tiny MLP under ``torch.compile`` with ``TORCH_LOGS=graph_breaks,recompiles``
and prints an activation statistic from ``forward``, as people do while debugging. Dynamo cannot
trace the builtin ``print`` and splits the graph; the break is logged in ``train.log``.
"""

from __future__ import annotations

import sys

import _common as c

NAME = "compile_print_in_forward"


def workload(backend: str) -> None:
    """Train a few steps of a compiled MLP whose forward prints a tensor statistic."""
    import torch
    from torch import nn

    c.seed_everything(0)

    class Net(nn.Module):
        """Two-layer MLP with a debugging print between the layers."""

        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 1)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            print("hidden mean", h.mean())
            return self.fc2(h)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model, backend=backend)
    for step in range(3):
        x, y = torch.randn(8, 16), torch.randn(8, 1)
        loss = nn.functional.mse_loss(compiled(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")


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
