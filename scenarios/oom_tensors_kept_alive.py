#!/usr/bin/env python3
"""Memory grows every step because loss tensors are kept with their autograd graph.

Each training step also scores a validation batch and appends the validation loss *tensor* to
a list for a later average: no ``torch.no_grad()``, no ``.item()``. Every kept loss pins its
graph and the activations saved for backward, so memory rises by the same amount each step
until the job would run out of memory. The loop measures the bytes held by the kept graphs
(saved tensors reachable from the kept losses) and the process RSS, logs them per step, and
writes the growth per step to ``facts.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _common as c

NAME = "oom_tensors_kept_alive"
STEPS = 25
MIB = 1024 * 1024


def rss_mib() -> float:
    """Resident set size of this process in MiB, from /proc (no psutil needed)."""
    import os

    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / MIB


def graph_bytes(roots) -> int:
    """Bytes of distinct tensor storages saved for backward in the graphs of ``roots``.

    Walks ``grad_fn.next_functions`` and reads the ``_saved_*`` attributes that autograd nodes
    expose; storages are counted once (by data pointer) because nodes share activations.
    """
    import torch

    seen_nodes, seen_storages, total = set(), set(), 0
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError:  # already freed by a backward pass
                continue
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage()
                if storage.data_ptr() not in seen_storages:
                    seen_storages.add(storage.data_ptr())
                    total += storage.nbytes()
        stack.extend(fn for fn, _ in node.next_functions)
    return total


def workload(out: Path) -> None:
    """Train with a leaking validation-loss list and record the memory it pins."""
    import torch
    from torch import nn

    c.seed_everything(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    val_x, val_y = torch.randn(256, 512), torch.randint(0, 10, (256,))

    val_losses = []  # the bug: tensors with graphs, kept across steps
    held, rss = [], []
    grad_enabled_in_eval = True
    for step in range(STEPS):
        x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

        grad_enabled_in_eval = torch.is_grad_enabled()
        val_losses.append(nn.functional.cross_entropy(model(val_x), val_y))

        held.append(graph_bytes(val_losses) / MIB)
        rss.append(rss_mib())
        print(f"step {step} loss {loss.item():.4f} kept_graph_mem {held[-1]:.1f}MiB "
              f"rss {rss[-1]:.1f}MiB")

    growth = c.slope(held)
    print(f"memory growth: {growth:.2f} MiB/step held by kept graphs "
          f"(rss {c.slope(rss):.2f} MiB/step), {len(val_losses)} loss tensors with grad_fn kept")
    c.write_json(out / "facts.json", {
        "symptom": "oom",
        "oom": {
            "memory_growth_mib_per_step": round(growth, 3),
            "in_no_grad": not grad_enabled_in_eval,
        },
    })


def main() -> int:
    """Driver: run the leaking loop in a child process and collect train.log."""
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
