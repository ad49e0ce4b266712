#!/usr/bin/env python3
"""Graph break from ``.item()`` inside a compiled ``forward`` (host sync).

The forward normalises activations by a Python float read with ``Tensor.item()``. Without
``capture_scalar_outputs`` Dynamo must leave the graph to fetch the value to the host, so the
graph breaks on every call; ``TORCH_LOGS=graph_breaks`` shows it in ``train.log``.
"""

from __future__ import annotations

import sys

import _common as c

NAME = "compile_item_host_sync"


def workload(backend: str) -> None:
    """Train a few steps of a compiled MLP whose forward calls ``.item()``."""
    import torch
    from torch import nn

    c.seed_everything(0)

    class Net(nn.Module):
        """MLP that rescales the hidden layer by a host-side scalar."""

        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 1)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            scale = h.abs().max().item()
            return self.fc2(h / (scale + 1e-6))

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
