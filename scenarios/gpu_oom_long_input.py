#!/usr/bin/env python3
"""CUDA out of memory at one fixed step: one unusually long sequence in the data.

A one-layer attention model trains on sequences of ~512 tokens, but the sample at step 7 is
far longer (sized from the card's capacity so its L x L attention scores cannot fit). The job
is run twice with the same seed and fails at the same step both times. The driver reads the
``step N seq_len L`` lines and writes the OOM step of each run, whether it repeats, and the
length ratio of the failing input to the median into ``facts.json``.
"""

from __future__ import annotations

import math
import re
import statistics
import sys

import _common as c

NAME = "gpu_oom_long_input"
HEADS, HEAD_DIM, LONG_STEP, STEPS = 8, 64, 7, 10


def workload() -> None:
    """Train the attention model on a fixed, seeded length schedule with one outlier."""
    c.require_cuda()
    import torch
    from torch import nn

    c.seed_everything(0)
    dev = torch.device("cuda")
    total = torch.cuda.get_device_properties(dev).total_memory
    # fp32 scores (1, HEADS, L, L) of ~1.5x the card for the long sample.
    long_len = int(math.sqrt(1.5 * total / (4 * HEADS)))
    gen = torch.Generator().manual_seed(0)
    lengths = [int(x) for x in torch.randint(448, 577, (STEPS,), generator=gen)]
    lengths[LONG_STEP] = long_len

    dim = HEADS * HEAD_DIM
    emb = nn.Embedding(1000, dim).to(dev)
    qkv = nn.Linear(dim, 3 * dim).to(dev)
    head = nn.Linear(dim, 1000).to(dev)
    params = [*emb.parameters(), *qkv.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)

    for step, seq_len in enumerate(lengths):
        print(f"step {step} seq_len {seq_len}")
        tokens = torch.randint(0, 1000, (1, seq_len), device=dev)
        q, k, v = qkv(emb(tokens)).view(1, seq_len, 3, HEADS, HEAD_DIM).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        # Explicit attention (as in many research code bases): materialises L x L scores.
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(HEAD_DIM)
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(1, seq_len, dim)
        loss = nn.functional.cross_entropy(head(ctx).flatten(0, 1), tokens.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f} max_memory_allocated "
              f"{torch.cuda.max_memory_allocated() / 2**20:.0f}MiB")


def main() -> int:
    """Driver: run the job twice, compare the OOM steps, measure the length outlier."""
    args = c.parse_args(__doc__.splitlines()[0])
    if args.child:
        workload()
        return 0
    out = c.prepare_out(args.out)
    oom_steps, lengths = [], {}
    # Same job, same seed, twice: train.log is the first run, train_rerun.log the second.
    for log_name in ("train.log", "train_rerun.log"):
        rc = c.run_child(__file__, out, timeout=120, log_name=log_name)
        if rc == 3:
            return 3  # no CUDA
        log = (out / log_name).read_text(errors="replace")
        if not lengths:
            lengths = {int(s): int(n) for s, n in re.findall(r"^step (\d+) seq_len (\d+)", log,
                                                              flags=re.MULTILINE)}
        step = c.last_step_before_error(log)
        if "OutOfMemoryError" in log and step is not None:
            oom_steps.append(step)
    oom: dict = {"occurred": bool(oom_steps), "steps": oom_steps}
    if oom_steps:
        at = oom_steps[0]
        oom["at_step"] = at
        oom["phase"] = "first_step" if at == 0 else "loop"
        oom["same_step_every_run"] = len(set(oom_steps)) == 1 and len(oom_steps) == 2
        others = [n for s, n in lengths.items() if s != at]
        if at in lengths and others:
            oom["input_length_ratio"] = round(lengths[at] / statistics.median(others), 2)
    c.write_json(out / "facts.json", {"symptom": "oom", "oom": oom})
    c.write_expected(out, NAME)
    return 0 if oom_steps else 1


if __name__ == "__main__":
    sys.exit(main())
