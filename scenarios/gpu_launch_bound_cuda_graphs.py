#!/usr/bin/env python3
"""Launch-bound training loop (tiny kernels) and the speed-up CUDA graphs give it.

A deep, narrow MLP on a micro-batch of 16 issues a few hundred tiny kernels per step; the CPU
cannot launch them as fast as the GPU runs them, so the GPU is idle between kernels. The
workload times eager steps (while the driver samples ``nvidia-smi``), profiles them to get the
share of wall time with a kernel running and the mean kernel duration, then captures the same
step in a CUDA graph and times it again. ``facts.json``: eager step times, ``cuda_graphs:
false`` and the measured GPU facts; the log reports eager vs graphed step times.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _common as c

NAME = "gpu_launch_bound_cuda_graphs"
DEPTH, WIDTH, BATCH = 24, 64, 16
EAGER_SECONDS = 4.0  # long enough for several nvidia-smi samples


def kernel_stats(step_fn, steps: int = 20) -> tuple[float, float]:
    """(busy fraction, mean kernel us) of ``steps`` eager steps, from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step_fn()
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
    kernel_us, kernels = 0.0, 0
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            kernel_us += evt.time_range.elapsed_us()
            kernels += 1
    return min(1.0, kernel_us / wall_us), (kernel_us / kernels if kernels else 0.0)


def workload(out: Path) -> None:
    """Time eager vs CUDA-graphed training steps of a launch-bound model."""
    c.require_cuda()
    import torch
    from torch import nn

    c.seed_everything(0)
    dev = torch.device("cuda")
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    static_x = torch.randn(BATCH, WIDTH, device=dev)
    static_y = torch.randn(BATCH, 1, device=dev)

    def step_fn():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    # Eager: time each step (synchronised, so the time is the real step time).
    for _ in range(5):
        step_fn()
    eager_ms = []
    # nvidia-smi is sampled during the eager phase only: that is the state being diagnosed.
    with c.NvidiaSmiSampler(out / "nvidia-smi.csv"):
        t_end = time.perf_counter() + EAGER_SECONDS
        step = 0
        while time.perf_counter() < t_end:
            torch.cuda.synchronize()
            t = c.Timer()
            loss = step_fn()
            torch.cuda.synchronize()
            eager_ms.append(t.ms())
            if step % 200 == 0:
                print(f"step {step} loss {loss.item():.4f} step_time {eager_ms[-1]:.3f}ms "
                      "(eager)")
            step += 1
    try:
        busy, mean_kernel_us = kernel_stats(step_fn)
    except Exception as exc:  # noqa: BLE001 - the profiler is optional evidence
        print(f"profiler failed: {exc!r}")
        busy, mean_kernel_us = None, None

    # CUDA graph: warm up on a side stream, capture one whole step, replay it.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step_fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = nn.functional.mse_loss(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    graphed_ms = []
    for i in range(len(eager_ms)):
        torch.cuda.synchronize()
        t = c.Timer()
        graph.replay()
        torch.cuda.synchronize()
        graphed_ms.append(t.ms())
        if i % 200 == 0:
            print(f"step {i} loss {static_loss.item():.4f} step_time {graphed_ms[-1]:.3f}ms "
                  "(cuda graph)")

    eager, graphed = c.mean(eager_ms), c.mean(graphed_ms)
    print(f"eager mean step {eager:.3f} ms, CUDA graph mean step {graphed:.3f} ms, "
          f"speed-up {eager / graphed:.1f}x over {len(eager_ms)} steps")
    gpu = {"count": torch.cuda.device_count(), "name": torch.cuda.get_device_name(dev)}
    if busy is not None:
        print(f"profiler: kernel busy {busy:.1%} of wall time, mean kernel "
              f"{mean_kernel_us:.1f} us")
        gpu["kernel_busy_fraction"] = round(busy, 4)
        gpu["mean_kernel_duration_us"] = round(mean_kernel_us, 2)
    # Step times list: a sample of the eager steps (the state being diagnosed).
    stride = max(1, len(eager_ms) // 50)
    c.write_json(out / "facts.json", {
        "symptom": "gpu_util",
        "gpu": gpu,
        "training": {"micro_batch_size": BATCH, "cuda_graphs": False,
                     "step_time_ms": [round(s, 4) for s in eager_ms[::stride]]},
    })
    (out / "cuda_graph_step_time_ms.txt").write_text(
        f"eager_mean_ms {eager:.4f}\ngraphed_mean_ms {graphed:.4f}\n"
        f"speedup {eager / graphed:.2f}\n")


def main() -> int:
    """Driver: run the timing job while sampling nvidia-smi."""
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
