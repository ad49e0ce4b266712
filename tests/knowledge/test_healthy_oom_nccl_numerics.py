"""A healthy job in the oom, nccl and numerics branches comes out healthy (issue 14), and the
audit's cases for these branches (T1, T5, T6, T7, T9, T19) confirm no wrong cause."""

from __future__ import annotations

from pathlib import Path

import pytest

import kb
from kb.engine.knowledge import load

ROOT = Path(__file__).resolve().parents[2]
KN = load(ROOT / "graphs", use_cache=False)

HEALTHY = {
    "oom": {"oom": {"occurred": False, "memory_growth_mib_per_step": 0.0, "host_oom_killed": False}},
    "nccl": {"distributed": {"nnodes": 2, "world_size": 16, "watchdog_timeout": False, "hung": False,
                             "init_seconds": 8, "scaling_efficiency": 0.93, "version_mismatch": False,
                             "inter_node_transport": "IB", "ib_hardware_present": True}},
    "numerics": {"numerics": {"dtype": "bf16", "loss": [9.1, 7.8, 6.2, 5.1, 4.6],
                              "grad_norm": [150.0, 190.0, 230.0, 255.0], "loss_spikes": 0}},
}


@pytest.mark.parametrize("branch", sorted(HEALTHY))
def test_healthy_job_is_healthy(branch: str) -> None:
    report = kb.diagnose(HEALTHY[branch], knowledge=KN)
    assert report.status == "healthy", (report.status, [f.cause_id for f in report.findings])


# audit cases: facts -> causes that must NOT be confirmed, and (optionally) the one that must
CASES = [
    # T1: 2 nodes, Ethernet only -> no IB fix
    ({"symptom": "nccl", "distributed": {"nnodes": 2, "inter_node_transport": "Socket",
                                          "ib_hardware_present": False, "scaling_efficiency": 0.6}},
     {"nccl.ib_fallback_tcp"}, "nccl.ethernet_sockets_expected"),
    # T1: 1 node, healthy scaling -> nothing to fix
    ({"symptom": "nccl", "distributed": {"nnodes": 1, "inter_node_transport": "Socket",
                                          "scaling_efficiency": 0.94}},
     {"nccl.ib_fallback_tcp", "nccl.ethernet_sockets_expected"}, None),
    # T5: bf16, loss falling, grad norm 150 -> 255
    ({"symptom": "numerics", "numerics": {"dtype": "bf16", "loss": [9.1, 6.0, 4.6],
                                           "grad_norm": [150.0, 200.0, 255.0]}},
     {"numerics.lr_too_high"}, None),
    # T6: 2-min save under a 10-min timeout
    ({"symptom": "nccl", "training": {"checkpoint_on_rank0_only": True, "checkpoint_save_seconds": 120},
      "distributed": {"watchdog_timeout": True, "timeout_ms": 600000, "outlier_ranks": [0]}},
     {"nccl.checkpoint_barrier"}, None),
    # T7: 4x RTX 4090 on PCIe, P2P disabled, no NVLink
    ({"symptom": "nccl", "env": {"NCCL_P2P_DISABLE": "1"},
      "distributed": {"nnodes": 1, "nvlink_present": False, "p2p_disabled": True, "scaling_efficiency": 0.85}},
     {"nccl.p2p_nvlink_disabled"}, None),
    # T9: random steps, one long input, expandable segments already on
    ({"symptom": "oom", "oom": {"occurred": True, "phase": "loop", "steps": [812, 1977, 1403],
                                "input_length_ratio": 5.0, "reserved_unallocated_fraction": 0.03,
                                "expandable_segments": True}},
     {"oom.fragmentation"}, "oom.long_input_at_step"),
    # T19: 1024 GPUs, init 90 s
    ({"symptom": "nccl", "distributed": {"world_size": 1024, "nnodes": 128, "init_seconds": 90,
                                          "scaling_efficiency": 0.88}},
     {"nccl.slow_topology_discovery"}, None),
]


@pytest.mark.parametrize("facts,never,expected", CASES)
def test_audit_case(facts, never, expected) -> None:
    found = [f.cause_id for f in kb.diagnose(facts, knowledge=KN).findings]
    assert not (set(found) & never), found
    if expected:
        assert expected in found, found
