"""Issue 14, branches gpu_util / inference / compile: healthy jobs come out healthy, and the
audit's cases (knowledge-audit.md T8, T12, T13, T14, T16, T18, F2) get the expert's answer."""

from __future__ import annotations

import pytest

import kb

HEALTHY = {
    "gpu_util busy and efficient": {"gpu": {"utilization_samples": [95, 96, 94]}, "training": {"mfu": 0.45}},
    "gpu_util busy, quiet disk": {"gpu": {"utilization_samples": [93, 95, 97]}, "disk": {"util_percent_samples": [4, 3, 5]}},
    "inference within objectives": {"inference": {"engine": "vllm", "ttft_ms_p50": 300, "tpot_ms_p50": 30,
                                                  "tpot_ms_p99": 60, "num_waiting": 0, "kv_cache_usage": 0.7}},
    "inference at peak with one preemption": {"inference": {"ttft_ms_p50": 400, "tpot_ms_p50": 30, "preemptions": 1,
                                                            "kv_cache_usage": 0.96, "num_waiting": 0}},
    "compile: one automatic-dynamic recompile": {"compile": {"graph_breaks": 0, "recompiles": 1,
                                                              "recompile_reasons": {"shape": 1}, "speedup_vs_eager": 1.6}},
}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_job_is_healthy(kn, name: str) -> None:
    report = kb.diagnose(HEALTHY[name], knowledge=kn)
    assert report.status == "healthy", (name, report.status, [f.cause_id for f in report.findings])


def _confirmed(kn, facts) -> list[str]:
    return [f.cause_id for f in kb.diagnose(facts, knowledge=kn).findings]


def test_t8_network_storage_is_not_cpu_bound(kn) -> None:
    facts = {"symptom": "gpu_util", "gpu": {"utilization_samples": [20, 25, 18]},
             "disk": {"util_percent_samples": [3, 4, 2], "data_fs_type": "lustre"},
             "dataloader": {"num_workers": 8, "data_wait_fraction": 0.7},
             "cpu": {"process_cpu_percent": [100.0], "hot_functions": ["__next__ (torch/utils/data/dataloader.py)"]}}
    found = _confirmed(kn, facts)
    assert "gpu_util.cpu_bound" not in found and "gpu_util.dataloader_workers" not in found
    assert found[0] == "gpu_util.network_storage_bound"


def test_t8_rank_in_all_reduce_is_not_cpu_bound(kn) -> None:
    facts = {"symptom": "gpu_util", "gpu": {"utilization_samples": [20, 25, 18]},
             "disk": {"util_percent_samples": [3, 4, 2]},
             "cpu": {"hot_functions": ["all_reduce (torch/distributed/distributed_c10d.py)"]}}
    found = _confirmed(kn, facts)
    assert "gpu_util.cpu_bound" not in found and "gpu_util.waiting_for_other_ranks" in found


def test_f2_busy_but_slow_reaches_the_kernel_causes(kn) -> None:
    facts = {"symptom": "gpu_util", "gpu": {"utilization_samples": [98, 97], "compute_capability": 9.0,
                                            "clock_event_reasons": ["sw_power_cap"]},
             "training": {"mfu": 0.08, "float32_matmul_precision": "highest"}, "numerics": {"dtype": "fp32"}}
    assert _confirmed(kn, facts) == ["gpu_util.tf32_disabled"]


def test_t12_ttft_alone_confirms_nothing(kn) -> None:
    report = kb.diagnose({"symptom": "inference", "inference": {"ttft_ms_p50": 1400}}, knowledge=kn)
    assert report.findings == [] and report.status == "hypotheses"


def test_t13_sglang_gets_no_vllm_command(kn) -> None:
    facts = {"symptom": "inference", "inference": {"engine": "sglang", "gpu_memory_utilization": 0.8,
                                                   "kv_cache_usage": 0.98, "num_waiting": 12, "preemptions_per_min": 4}}
    report = kb.diagnose(facts, knowledge=kn)
    ids = [f.cause_id for f in report.findings]
    assert ids and all("vllm serve" not in fx.command for c in ids for fx in kn.causes[c].fixes), ids
    assert "inference.sglang_kv_pool_full" in ids


def test_t14_recommended_cap_does_not_trigger_the_opposite_advice(kn) -> None:
    facts = {"symptom": "inference", "inference": {"max_num_seqs": 128, "num_running": 128, "num_waiting": 5,
                                                   "kv_cache_usage": 0.8, "preemptions": 14}}
    assert "inference.max_num_seqs_limit" not in _confirmed(kn, facts)
    assert all("--max-num-seqs 128" not in f.command for f in kn.causes["inference.kv_cache_preemption"].fixes)


def test_t18_full_cache_with_queue_is_capacity(kn) -> None:
    facts = {"symptom": "inference", "inference": {"engine": "vllm", "num_running": 18, "num_waiting": 43,
                                                   "kv_cache_usage": 0.959, "gpu_memory_utilization": 0.9}}
    found = _confirmed(kn, facts)
    assert "inference.kv_cache_preemption" not in found and "inference.at_capacity" in found


def test_t16_many_shape_recompiles_still_confirm(kn) -> None:
    facts = {"symptom": "compile", "compile": {"recompiles": 4, "recompile_reasons": {"shape": 4}}}
    assert "compile.dynamic_shapes" in _confirmed(kn, facts)
