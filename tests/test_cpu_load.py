"""kb.cpu_load: how crowded the host's cores are (load average and OpenMP threads per core)."""

from __future__ import annotations

from typing import Any

import pytest

import kb
from kb.cpu_load import complete


@pytest.mark.parametrize(("probe", "load", "threads"), [
    ({"cpu": {"cores": 96, "load_average": 388.12}}, 4.04, None),
    # OMP_NUM_THREADS=64 for each of eight ranks on one node
    ({"cpu": {"cores": 96, "omp_threads": 64}, "distributed": {"world_size": 8, "nnodes": 1}},
     None, 5.33),
    # two nodes of eight ranks: the ranks of one node share its cores
    ({"cpu": {"cores": 64, "omp_threads": 8}, "distributed": {"world_size": 16, "nnodes": 2}},
     None, 1.0),
    # no launch: one process
    ({"cpu": {"cores": 8, "omp_threads": 16}}, None, 2.0),
    # eight ranks of 32 DataLoader workers each on 32 cores (workers, not threads)
    ({"cpu": {"cores": 32}, "dataloader": {"num_workers": 32},
      "distributed": {"world_size": 8, "nnodes": 1}}, None, None),
    # near-misses: no core count, a ratio already stated
    ({"cpu": {"load_average": 388.12, "omp_threads": 64}}, None, None),
    ({"cpu": {"cores": 96, "load_average": 388.12, "load_per_core": 1.0}}, 1.0, None),
])
def test_per_core(probe: dict[str, Any], load: float | None, threads: float | None) -> None:
    stated = "load_per_core" in probe["cpu"]
    notes = complete(probe)
    assert probe["cpu"].get("load_per_core") == load
    assert probe["cpu"].get("threads_per_core") == threads
    workers = probe.get("dataloader", {}).get("num_workers")
    assert probe["cpu"].get("workers_per_core") == (8.0 if workers else None)
    assert len(notes) == (load is not None and not stated) + (threads is not None) + bool(workers)


UPTIME = " 11:02:13 up 12 days,  3:35,  2 users,  load average: {}, 371.40, 290.77\n"


@pytest.mark.parametrize(("load", "confirmed"), [("388.12", True), ("80.50", False)])
def test_a_crowded_host_confirms_through_diagnose(load: str, confirmed: bool) -> None:
    # the pasted lscpu and uptime lines with low GPU utilisation: the cores crowded 4x confirm
    # it; a busy host under its core count rules it out
    text = ("OMP_NUM_THREADS=64 torchrun --nproc_per_node 8 train.py\n"
            "CPU(s):                                  96\n" + UPTIME.format(load))
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"utilization_samples": [31, 28, 35]}},
                      inputs=[text])
    found = [f.cause_id for f in rep.findings]
    assert ("gpu_util.cpu_threads_oversubscribed" in found) is confirmed, found
    assert any("cpu.load_per_core" in w for w in rep.warnings)
    if not confirmed:  # the load measured under the cores rules it out, whatever was asked for
        assert "gpu_util.cpu_threads_oversubscribed" in [r.cause_id for r in rep.ruled_out]
