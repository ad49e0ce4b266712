"""`kb diagnose --input` on real artifacts, end to end, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "tests" / "fixtures" / "formats"
ARTIFACTS = ROOT / "tests" / "fixtures" / "artifacts"

CASES = [
    # (inputs, extra args, expected status, the cause expected first (finding or hypothesis))
    ([FORMATS / "oom_2_1_capacty.log"], [], "confirmed", "oom.allocator_reserved_unallocated"),
    # an OOM in backward alone does not tell a leak from large activations (seed §3: measure
    # the growth first): both stay hypotheses, see test_backward_oom_asks_for_growth
    # a watchdog timeout alone does not say which rank lags (audit, nccl (a)): the lead
    # hypothesis, settled by the per-rank stacks
    ([FORMATS / "nccl_watchdog_2_4.log"], [], "hypotheses", "nccl.rank_desync_timeout"),
    ([FORMATS / "nccl_watchdog_2_7_fr.log"], [], "hypotheses", "nccl.rank_desync_timeout"),
    ([ARTIFACTS / "vllm_metrics_overloaded.prom"], [], "confirmed", "inference.kv_cache_preemption"),
    ([FORMATS / "compile_recompiles_2025.log"], [], "confirmed", "compile.dynamic_shapes"),
    ([FORMATS / "compile_cache_limit_rank.log"], [], "confirmed", "compile.cache_size_limit"),
]


def test_v1_stats_line_full_cache_and_queue_stays_open() -> None:
    # KV cache 95.9 % full with 43 requests waiting and no preemption count: a small cache
    # and a server simply at capacity look the same (audit T18), so nothing is confirmed
    r = run("--input", str(FORMATS / "vllm_stats_v1.log"))
    doc = json.loads(r.stdout)
    assert not doc["findings"]
    top = [h["cause_id"] for h in doc["hypotheses"][:3]]
    assert "inference.kv_cache_preemption" in top or "inference.at_capacity" in top, top


def test_backward_oom_asks_for_growth() -> None:
    r = run("--input", str(ARTIFACTS / "oom_backward_traceback.log"))
    doc = json.loads(r.stdout)
    assert doc["status"] == "hypotheses" and not doc["findings"]
    assert {"oom.tensors_not_released", "oom.activations_optimizer_state"} <= {
        h["cause_id"] for h in doc["hypotheses"][:2]}


def test_three_nan_lines_make_fp16_overflow_the_lead_hypothesis() -> None:
    # three HF lines with NaN grad norms and no step: overflow is likely, not yet confirmed
    r = run("--input", str(FORMATS / "loss_hf_dict_nan.log"), "--symptom",
            "fp16 training, loss goes NaN")
    doc = json.loads(r.stdout)
    assert not doc["findings"]
    assert doc["hypotheses"][0]["cause_id"] in ("numerics.fp16_overflow",
                                                 "numerics.grad_scaler_skipping")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kb", "diagnose", *args, "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "KB_NO_CACHE": "1"})


@pytest.mark.parametrize("inputs,extra,status,expected", CASES,
                         ids=[c[0][0].name for c in CASES])
def test_real_artifact_names_the_cause(inputs: list[Path], extra: list[str], status: str,
                                       expected: str) -> None:
    args = [a for p in inputs for a in ("--input", str(p))] + extra
    r = run(*args)
    assert r.returncode in (0, 3), r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == status, (doc["status"], [h["cause_id"] for h in doc["hypotheses"]])
    first = (doc["findings"] or doc["hypotheses"])[0]["cause_id"]
    assert first == expected
    assert doc["inputs"]  # the report says what it read and as which format


def test_directory_input_and_explicit_facts_win(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "train.log").write_text((ARTIFACTS / "oom_backward_traceback.log").read_text())
    (d / "notes.bin").write_bytes(b"\x00\x01binary")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"oom": {"phase": "startup"}}))
    r = run("--input", str(d), "--facts", str(facts))
    doc = json.loads(r.stdout)
    # the user's explicit phase beats the one parsed from the traceback, and says so
    assert doc["findings"][0]["cause_id"] == "oom.startup_too_large"
    assert any("conflict" in w and "oom.phase" in w for w in doc["warnings"])
    assert doc["status"] == "confirmed"


def test_stdin_input() -> None:
    text = (FORMATS / "compile_recompiles_2025.log").read_text()
    r = subprocess.run([sys.executable, "-m", "kb", "diagnose", "--input", "-"], input=text,
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "compile.dynamic_shapes" in r.stdout


def test_unknown_file_given_explicitly_is_a_clear_error(tmp_path: Path) -> None:
    # readable text is never refused (issue 13): the incident reader reads it and says it
    # found nothing known; exit 2 stays for what cannot be read (tests/readers)
    p = tmp_path / "random.txt"
    p.write_text("hello\nworld\n")
    r = run("--input", str(p))
    assert r.returncode in (0, 3) and "Traceback" not in r.stderr
    assert any(str(p) in w and "no known fact" in w for w in json.loads(r.stdout)["warnings"])


def test_a_missing_input_path_is_an_error_not_text(tmp_path: Path) -> None:
    # any readable text is accepted, but a mistyped path must not be read as text
    r = run("--input", str(tmp_path / "no_such.log"))
    assert r.returncode == 2
    assert "no_such.log: no such file or directory" in r.stderr and "Traceback" not in r.stderr


# TensorFlow's start-up lines when its CUDA libraries do not load (as public logs quote them,
# tensorflow/core/common_runtime/gpu/gpu_device.cc), and Lightning's device lines
TF_NO_GPU = """\
2021-06-24 23:59:50.227929: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1598] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.
Skipping registering GPU devices...
2021-06-24 23:59:50.228666: I tensorflow/core/platform/cpu_feature_guard.cc:143] Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2
Epoch 1/10
 120/1875 [>.............................] - ETA: 21:03 - loss: 0.6931 - accuracy: 0.5021
"""
LIGHTNING_ON_GPU = """\
GPU available: True (cuda), used: True
TPU available: False, using: 0 TPU cores
LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]
Epoch 0:  12%|█▏        | 120/1000 [02:10<15:56,  1.09s/it, loss=0.693, v_num=0]
"""


def test_a_framework_left_on_the_cpu_is_found_from_its_log_alone(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(TF_NO_GPU, encoding="utf-8")
    doc = json.loads(run("--input", str(log)).stdout)
    assert doc["status"] == "confirmed" and "gpu_util" in doc["branches"]
    assert doc["findings"][0]["cause_id"] == "gpu_util.no_gpu_in_use"


def test_a_job_on_its_gpu_is_not_said_to_run_on_the_cpu(tmp_path: Path) -> None:
    # near-miss: Lightning says the GPU is used; the slowness is something else's
    log = tmp_path / "train.log"
    log.write_text(LIGHTNING_ON_GPU, encoding="utf-8")
    doc = json.loads(run("--input", str(log), "--symptom", "training is very slow").stdout)
    assert "gpu_util.no_gpu_in_use" not in [f["cause_id"] for f in doc["findings"]]
    assert doc["branches"][:1] == ["gpu_util"]


# a CPU baseline pasted beside the GPU run: JAX's fallback warning for the one
# (jax/_src/xla_bridge.py) and nvprof's summary of the other (CUDA profiler guide, summary mode)
CPU_BASELINE_AND_GPU_RUN = """\
CPU:
UserWarning: No GPU/TPU found, falling back to CPU.
  warnings.warn('No GPU/TPU found, falling back to CPU.')
0 epoch time: 0.559627
GPU:
==22168== NVPROF is profiling process 22168, command: python bench.py
0 epoch time: 1.203086
==22168== Profiling application: python bench.py
==22168== Profiling result:
            Type  Time(%)      Time     Calls       Avg       Min       Max  Name
 GPU activities:   41.27%  3.2041ms       120  26.700us  2.1440us  1.0512ms  [CUDA memcpy HtoD]
"""


@pytest.mark.parametrize(("text", "confirmed"), [
    (CPU_BASELINE_AND_GPU_RUN, False),
    # the fallback alone: the job is on the CPU
    (CPU_BASELINE_AND_GPU_RUN.split("GPU:")[0], True),
])
def test_a_cpu_fallback_beside_gpu_work_is_a_question_not_a_finding(tmp_path: Path, text: str,
                                                                   confirmed: bool) -> None:
    log = tmp_path / "bench.log"
    log.write_text(text, encoding="utf-8")
    doc = json.loads(run("--input", str(log), "--symptom", "the GPU is slower than the CPU").stdout)
    found = [f["cause_id"] for f in doc["findings"]]
    assert ("gpu_util.no_gpu_in_use" in found) is confirmed
    if not confirmed:  # still the first thing to check
        assert doc["hypotheses"][0]["cause_id"] == "gpu_util.no_gpu_in_use"


# JAX's allocator line (xla/pjrt/gpu/gpu_helpers.cc) and TensorFlow/XLA's cuBLAS handle
# failure (stream_executor/cuda/cuda_blas.cc), as public logs quote them
JAX_POOL_CUBLAS = """\
I0000 00:00:1745543868.274491 1243516 se_gpu_pjrt_client.cc:999] Using BFC allocator.
I0000 00:00:1745543868.274817 1243516 gpu_helpers.cc:136] XLA backend allocating 3825205248 bytes on device 0 for BFCAllocator.
E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_blas.cc:232] failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED
"""


def test_a_preallocated_pool_starving_cublas_is_found_from_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(JAX_POOL_CUBLAS, encoding="utf-8")
    doc = json.loads(run("--input", str(log)).stdout)
    assert doc["status"] == "confirmed" and doc["branches"] == ["oom"]
    assert doc["findings"][0]["cause_id"] == "oom.framework_preallocation"


def test_a_handle_failure_without_a_pool_is_only_a_hypothesis(tmp_path: Path) -> None:
    # near-miss: the pool grows on demand ("will use up to"): the handle failed for another reason
    log = tmp_path / "run.log"
    log.write_text(JAX_POOL_CUBLAS.replace("allocating 3825205248", "will use up to 3825205248"), encoding="utf-8")
    doc = json.loads(run("--input", str(log)).stdout)
    assert not any(f["cause_id"] == "oom.framework_preallocation" for f in doc.get("findings") or [])


# fairseq's progress line and PyTorch 1.x's OOM message as fairseq's trainer logs it when it
# skips the batch (fairseq/trainer.py, "ran out of memory with exception")
OOM_SKIPPED = """\
| epoch 003:   41%|####1     | 2050/5000 [12:31<18:02,  2.73it/s, loss=4.912, nll_loss=3.101, ppl=8.58, wps=10213, ups=2, wpb=4012.000, bsz=137.000, num_updates=5210, lr=0.0005, gnorm=0.612, clip=0.000, oom=0.000, wall=3401, train_wall=3150]
| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 3.20 GiB (GPU 0; 10.91 GiB total capacity; 4.27 GiB already allocated; 2.38 GiB free; 6.13 GiB cached);
 Skipping batch
"""


@pytest.mark.parametrize(("words", "follows"), [
    # the words name a hang of several ranks: one rank's OOM left the others in a collective
    ("the training gets stuck on 4 GPUs after an OOM batch, no new log lines", True),
    # near-miss: no hang is said, the OOM is the whole problem
    ("out of memory on 4 GPUs after a few hundred steps", False),
])
def test_a_hang_beside_an_oom_is_named_second_as_its_consequence(tmp_path: Path, words: str,
                                                                 follows: bool) -> None:
    log = tmp_path / "train.log"
    log.write_text(OOM_SKIPPED, encoding="utf-8")
    doc = json.loads(run("--input", str(log), "--symptom", words).stdout)
    ranked = [(f["branch"], None) for f in doc["findings"]] + [
        (h["branch"], h["follows"]) for h in doc["hypotheses"]]
    assert ranked[0][0] == "oom"
    assert (ranked[1] == ("nccl", "oom")) is follows
    assert sum(f is not None for _, f in ranked) == int(follows)
    md = subprocess.run([sys.executable, "-m", "kb", "diagnose", "--input", str(log), "--symptom",
                         words, "--format", "md"], capture_output=True, text=True, cwd=ROOT,
                        timeout=120, env={**os.environ, "KB_NO_CACHE": "1"}).stdout
    assert ("would follow from the failure above (`oom`)" in md) is follows


def test_a_serving_engine_stopped_by_its_kv_cache_leaves_no_rank_waiting(tmp_path: Path) -> None:
    # near-miss: vLLM's own check (vllm/v1/core/kv_cache_utils.py) stops the engine before it
    # serves; a crash said beside it is that stop, no collective a rank was left waiting in
    log = tmp_path / "serve.log"
    log.write_text("ValueError: To serve at least one request with the models's max seq len (131072), "
                   "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
                   "(9.87 GiB). Based on the available memory, the estimated maximum model length is "
                   "80832. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                   "initializing the engine.\n", encoding="utf-8")
    doc = json.loads(run("--input", str(log), "--symptom",
                         "vllm crashed and hangs on 4 GPUs with tensor parallel").stdout)
    assert all(h["follows"] is None for h in doc["hypotheses"])
