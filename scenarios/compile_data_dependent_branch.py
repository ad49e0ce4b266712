#!/usr/bin/env python3
"""Graph break from data-dependent Python control flow in a compiled ``forward``.

``if h.sum() > 0:`` needs the tensor's value to pick a branch, which Dynamo cannot know while
tracing, so it breaks the graph ("Data-dependent branching") on every call.
"""

from __future__ import annotations

import sys

import _common as c

NAME = "compile_data_dependent_branch"


def workload(backend: str) -> None:
    """Train a few steps of a compiled MLP with a branch on a tensor value."""
    import torch
    from torch import nn

    c.seed_everything(0)

    class Net(nn.Module):
        """MLP that takes a different path depending on the sign of the activations."""

        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 1)

        def forward(self, x):
            h = self.fc1(x)
            if h.sum() > 0:
                h = torch.relu(h)
            else:
                h = torch.tanh(h)
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
