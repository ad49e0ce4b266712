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
