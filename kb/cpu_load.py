"""How crowded the host's cores are: the load average per core, and the OpenMP threads and
DataLoader workers the job's processes ask for per core.

Every PyTorch process runs an intra-op thread pool of OMP_NUM_THREADS threads (by default one
per core); eight ranks on a node, or several jobs sharing it, each with a full pool, put many
times more runnable threads on the cores than they have. The load average (threads running or
waiting for a core) over the core count says the same from the other side.
"""

from __future__ import annotations

from typing import Any


def complete(probe: dict[str, dict[str, Any]]) -> list[str]:
    """Fill ``cpu.load_per_core``, ``cpu.threads_per_core`` and ``cpu.workers_per_core`` in
    ``probe`` from the core count where nothing stated them; returns what was derived, in words."""
    cpu = probe.get("cpu", {})
    cores = cpu.get("cores")
    if not cores:
        return []
    notes: list[str] = []
    load = cpu.get("load_average")
    if load is not None and "load_per_core" not in cpu:
        cpu["load_per_core"] = round(load / cores, 2)
        notes.append(f"cpu.load_per_core = {cpu['load_per_core']} (load average {load} over "
                     f"{cores} cores)")
    dist = probe.get("distributed", {})
    world, nodes = dist.get("world_size"), dist.get("nnodes") or 1
    # the processes of one node; one process when no launch says more
    per_node = max(1, world // nodes) if world else 1
    threads = cpu.get("omp_threads")
    if threads is not None and "threads_per_core" not in cpu:
        cpu["threads_per_core"] = round(threads * per_node / cores, 2)
        notes.append(f"cpu.threads_per_core = {cpu['threads_per_core']} (OMP_NUM_THREADS={threads} "
                     f"x {per_node} processes on the node over {cores} cores)")
    workers = probe.get("dataloader", {}).get("num_workers")
    if workers and "workers_per_core" not in cpu:
        # num_workers is per process: every rank starts its own
        cpu["workers_per_core"] = round(workers * per_node / cores, 2)
        notes.append(f"cpu.workers_per_core = {cpu['workers_per_core']} (num_workers={workers} "
                     f"x {per_node} processes on the node over {cores} cores)")
    return notes
