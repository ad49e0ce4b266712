"""A message that a tool prints as plain state in other settings (NCCL logs its transport
choice and "NET/IB : No device found" on one node too) is evidence of its cause only where the
cause's ``signature_context`` holds; unknown does not hold."""

from __future__ import annotations

import subprocess
import sys

import kb

IB = "nccl.ib_fallback_tcp"


def _ib(report: kb.Report):
    return next(h for h in report.hypotheses + report.findings if h.cause_id == IB)


def test_the_message_counts_between_nodes_only() -> None:
    base = {"symptom": "nccl", "signatures": [IB]}
    two = kb.diagnose({**base, "distributed": {"nnodes": 2}})
    one = kb.diagnose({**base, "distributed": {"nnodes": 1}})
    unknown = kb.diagnose(base)
    assert _ib(two).signature is True
    assert _ib(unknown).signature is False
    # on one node the cause is not in play at all, or is without its message
    assert all(h.cause_id != IB or not h.signature for h in one.hypotheses)
    assert _ib(two).evidence > _ib(unknown).evidence


def test_out_of_context_the_message_opens_no_branch() -> None:
    rep = kb.diagnose({"signatures": [IB], "distributed": {"nnodes": 1}})
    assert "nccl" not in rep.branches
    rep = kb.diagnose({"signatures": [IB], "distributed": {"nnodes": 2}})
    assert "nccl" in rep.branches


def test_a_context_on_an_unknown_fact_is_refused(edited_graphs) -> None:
    root = edited_graphs("nccl/ib_fallback_tcp.yaml",
                         "- {fact: distributed.nnodes, op: \">=\", value: 2}\nsupporting:",
                         "- {fact: distributed.no_such_fact, op: \">=\", value: 2}\nsupporting:")
    p = subprocess.run([sys.executable, "-m", "kb", "validate", "--path", str(root)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "no_such_fact" in p.stderr and "Traceback" not in p.stderr


NO_BLOCKS = ("ERROR 04-27 11:08:32 [core.py:340] ValueError: No available memory for the cache blocks. "
             "Try increasing `gpu_memory_utilization` when initializing the engine.")
UTIL_LOW = "inference.gpu_memory_utilization_low"


def _served(share: float | None) -> kb.Report:
    # vLLM's start-up check (v1/core/kv_cache_utils.py check_enough_kv_cache_memory), with the
    # share of the card the launch gave it (vllm-project/vllm#17238: 0.9, the default)
    line = "vllm serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 2"
    if share is not None:
        line += f" --gpu-memory-utilization {share}"
    return kb.diagnose(inputs=[line + "\n" + NO_BLOCKS])


def test_no_cache_blocks_speaks_for_a_low_share_only_while_the_share_is_low_or_unknown() -> None:
    for share in (None, 0.4):
        rep = _served(share)
        assert "inference" in rep.branches, share
        assert any(h.cause_id == UTIL_LOW and h.signature
                   for h in rep.findings + rep.hypotheses), share
    # at the default 0.9 the message says the card is full, not that the share was low
    rep = _served(0.9)
    assert not any(h.cause_id == UTIL_LOW and h.signature for h in rep.findings + rep.hypotheses)
    assert rep.branches[:1] != ["inference"]


def test_no_cache_blocks_at_a_full_share_is_a_configuration_too_large() -> None:
    # at the default share the weights and the profiled batch fill the card: the engine is out
    # of memory at start-up, an OOM (oom.startup_too_large), not a share to raise
    rep = _served(0.9)
    assert rep.branches[:1] == ["oom"]
    assert any(h.cause_id == "oom.startup_too_large" and h.signature for h in rep.hypotheses)
    # a share set low is the other reading only
    rep = _served(0.4)
    assert not any(h.cause_id == "oom.startup_too_large" and h.signature
                   for h in rep.findings + rep.hypotheses)
    # the share unknown: both, neither confirmed
    rep = _served(None)
    sig = {h.cause_id for h in rep.hypotheses if h.signature}
    assert {"oom.startup_too_large", UTIL_LOW} <= sig and not rep.findings
