"""Next checks, ruled-out causes and the status, over the bundled knowledge."""

from __future__ import annotations

import pytest

import kb

GPU_IDLE = {"symptom": "gpu_util", "gpu": {"utilization_samples": [20, 25]}}


def diag(kn, facts, **kw):
    return kb.diagnose(facts, knowledge=kn, **kw)


def test_bare_symptom_starts_with_the_gpu_snapshot(kn) -> None:
    rep = diag(kn, {"symptom": "gpu_util"})
    assert rep.status == "hypotheses"
    assert rep.next_checks[0].id == "nvidia_smi_query"
    assert rep.next_checks[0].command.startswith("nvidia-smi --query-gpu")


def test_idle_gpu_asks_the_disk_next(kn) -> None:
    rep = diag(kn, GPU_IDLE)
    # under "idle" the open questions are the input pipeline's: how long the loop waits for
    # data, and the data disk; the first check speaks to the input-bound causes
    first = rep.next_checks[0]
    assert first.id in ("dataloader_timing", "iostat")
    assert first.command == kn.checks[first.id].command
    assert "gpu_util.dataloader_bound" in first.separates
    assert "iostat" in [c.id for c in rep.next_checks[:4]]


def test_ruled_out_says_why_with_fact_and_threshold(kn) -> None:
    rep = diag(kn, {**GPU_IDLE, "disk": {"util_percent_samples": [95, 97]},
                    "cpu": {"iowait_percent_samples": [35, 41]}})
    assert rep.status == "confirmed"
    ruled = {r.cause_id: r for r in rep.ruled_out}
    cpu = ruled["gpu_util.dataloader_workers_cpu_bound"]  # disk busy: "quiet" is excluded
    assert [e.fact for e in cpu.because] == ["disk.util_percent_samples.mean"]
    assert "80" in cpu.because[0].condition and cpu.because[0].value == 96
    launch = ruled["gpu_util.launch_bound"]  # idle, not half busy
    assert launch.because[0].fact == "gpu.utilization_samples.mean"
    assert "40" in launch.because[0].condition and launch.because[0].value == 22.5
    md = __import__("kb.report.markdown", fromlist=["render"]).render(rep, kn)
    assert "disk.util_percent_samples.mean above 80%" in md


def test_status_confirmed(kn) -> None:
    rep = diag(kn, {**GPU_IDLE, "disk": {"util_percent_samples": [95]},
                   "cpu": {"iowait_percent_samples": [35, 41, 38]}})
    assert rep.status == "confirmed"
    assert rep.findings[0].cause_id == "gpu_util.dataloader_bound"


def test_status_partial_is_hypotheses(kn) -> None:
    rep = diag(kn, GPU_IDLE)
    assert rep.status == "hypotheses"
    hyp = {h.cause_id: h for h in rep.hypotheses}
    assert "disk.util_percent_samples.mean" in hyp["gpu_util.dataloader_bound"].missing
    assert rep.next_checks


def test_status_contradictory_symptom_is_inconclusive(kn) -> None:
    if not any(c.branch == "compile" for c in kn.causes.values()):
        pytest.skip("compile knowledge not written yet")
    facts = {"symptom": "compile", "compile": {
        "graph_breaks": 0, "recompiles": 0, "cache_limit_hit": False, "mark_dynamic_used": True,
        "graph_break_reasons": {"print": 0, "host_sync": 0, "control_flow": 0,
                                "shape_control_flow": 0, "other": 0, "unsupported": 0},
        "recompile_reasons": {"shape": 0, "dtype": 0, "other": 0}, "speedup_vs_eager": 1.5,
        # every compile measurement healthy, the first call's too (no one-time warm-up to speak of)
        "cudagraph_skips": 0, "first_call_ratio": 1.2}}
    rep = diag(kn, facts)
    assert not rep.findings and not rep.hypotheses
    assert rep.ruled_out and rep.status == "inconclusive"
    assert "contradicted" in rep.conclusion[0]


def test_status_conflicting_inputs_is_inconclusive(kn) -> None:
    from kb.api import Gathered, report_for
    from kb.facts import facts_model

    rep = report_for(Gathered(facts_model(kn).model_validate(GPU_IDLE), conflicts=True), kn)
    assert rep.status == "inconclusive"
    assert "contradict each other" in rep.conclusion[0]


def test_status_healthy(kn) -> None:
    rep = diag(kn, {"gpu": {"utilization_samples": [95, 96, 97]}})
    assert rep.status == "healthy"
    assert not rep.findings and not rep.hypotheses


def test_status_empty(kn) -> None:
    rep = diag(kn, {})
    assert rep.status == "inconclusive"
    assert rep.question == kn.sop["classify"]["question"]["en"]
    health = [c.id for c in rep.next_checks]
    assert health and all(c.health_check for c in rep.next_checks)
    assert set(health) == set(kn.sop["health_checks"])


def test_empty_status_in_chinese(kn) -> None:
    rep = diag(kn, {}, lang="zh")
    assert rep.question == kn.sop["classify"]["question"]["zh"]
