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
    # (inputs, extra args, expected top finding)
    ([FORMATS / "oom_2_1_capacty.log"], [], "oom.allocator_reserved_unallocated"),
    ([ARTIFACTS / "oom_backward_traceback.log"], [], "oom.tensors_not_released"),
    ([FORMATS / "nccl_watchdog_2_4.log"], [], "nccl.rank_desync_timeout"),
    ([FORMATS / "nccl_watchdog_2_7_fr.log"], [], "nccl.rank_desync_timeout"),
    ([ARTIFACTS / "vllm_metrics_overloaded.prom"], [], "inference.kv_cache_preemption"),
    ([FORMATS / "vllm_stats_v1.log"], [], "inference.kv_cache_preemption"),
    ([FORMATS / "compile_recompiles_2025.log"], [], "compile.dynamic_shapes"),
    ([FORMATS / "compile_cache_limit_rank.log"], [], "compile.cache_size_limit"),
    ([FORMATS / "loss_hf_dict_nan.log"], ["--symptom", "fp16 training, loss goes NaN"],
     "numerics.fp16_overflow"),
]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kb", "diagnose", *args, "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "KB_NO_CACHE": "1"})


@pytest.mark.parametrize("inputs,extra,expected", CASES,
                         ids=[c[0][0].name for c in CASES])
def test_real_artifact_names_the_cause(inputs: list[Path], extra: list[str], expected: str) -> None:
    args = [a for p in inputs for a in ("--input", str(p))] + extra
    r = run(*args)
    assert r.returncode in (0, 3), r.stderr
    doc = json.loads(r.stdout)
    assert doc["findings"], (doc["status"], [h["cause_id"] for h in doc["hypotheses"]])
    assert doc["findings"][0]["cause_id"] == expected
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
    p = tmp_path / "random.txt"
    p.write_text("hello\nworld\n")
    r = run("--input", str(p))
    assert r.returncode == 2 and str(p) in r.stderr and "Traceback" not in r.stderr
