"""`kb verify`: a fixed run, an unfixed run, and a run that cannot tell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kb.verify import render, verify
from tests.conftest import ROOT

BEFORE = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9]},
          "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}
FIXED = {"gpu": {"utilization_samples": [93, 95, 94]}, "disk": {"util_percent_samples": [40, 50]}}
UNFIXED = {"gpu": {"utilization_samples": [30, 35]}, "disk": {"util_percent_samples": [90, 95]},
           "cpu": {"iowait_percent_samples": [33, 36]}}
PARTIAL = {"gpu": {"utilization_samples": [93, 95, 94]}}


def test_fixed(kn) -> None:
    res = verify(BEFORE, FIXED, knowledge=kn)
    assert res.verdict == "fixed" and res.exit_code == 0
    (f,) = res.findings
    assert f.cause_id == "gpu_util.dataloader_bound" and f.cause_after != "confirmed"
    gpu = f.checks[0]
    assert gpu.fact == "gpu.utilization_samples.mean" and gpu.before == 13 and gpu.after == 94
    assert gpu.holds is True and "90" in gpu.expect
    md = render(res, kn)
    assert "| 13% | 94% |" in md and "**Verdict:** fixed" in md


def test_not_fixed(kn) -> None:
    res = verify(BEFORE, UNFIXED, knowledge=kn, lang="zh")
    assert res.verdict == "not_fixed" and res.exit_code == 1
    assert res.findings[0].cause_after == "confirmed"
    assert [c.holds for c in res.findings[0].checks] == [False, False]
    assert "未修复" in render(res, kn)


def test_cannot_tell(kn) -> None:
    res = verify(BEFORE, PARTIAL, knowledge=kn)
    assert res.verdict == "cannot_tell" and res.exit_code == 3
    assert [c.holds for c in res.findings[0].checks] == [True, None]


def test_expect_fails_even_when_cause_is_gone(kn) -> None:
    # the disk is quiet now (cause no longer confirmed) but the GPU is still idle
    res = verify(BEFORE, {"gpu": {"utilization_samples": [20]}, "disk": {"util_percent_samples": [10]}},
                 knowledge=kn)
    assert res.findings[0].cause_after == "ruled_out"
    assert res.verdict == "not_fixed"


def test_nothing_confirmed_before(kn) -> None:
    res = verify({"symptom": "gpu_util"}, FIXED, knowledge=kn)
    assert res.verdict == "cannot_tell" and not res.findings and res.warnings


def test_threshold_override(kn) -> None:
    res = verify(BEFORE, {"gpu": {"utilization_samples": [85]}, "disk": {"util_percent_samples": [40]}},
                 knowledge=kn, overrides={"gpu_util.ideal": 80})
    assert res.verdict == "fixed"


def _kb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kb", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "KB_NO_CACHE": "1"})


def test_cli(tmp_path: Path) -> None:
    b, a, u = tmp_path / "before.json", tmp_path / "after.json", tmp_path / "unfixed.json"
    b.write_text(json.dumps(BEFORE))
    a.write_text(json.dumps(FIXED))
    u.write_text(json.dumps(UNFIXED))
    ok = _kb("verify", "--before", str(b), "--after", str(a))
    assert ok.returncode == 0, ok.stderr
    assert "**Verdict:** fixed" in ok.stdout
    bad = _kb("verify", "--before", str(b), "--after", str(u), "--format", "json")
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["schema_version"] == 1 and doc["verdict"] == "not_fixed"
    missing = _kb("verify", "--before", str(b))
    assert missing.returncode == 2 and "no after facts" in missing.stderr


def test_cli_raw_inputs(tmp_path: Path) -> None:
    before = tmp_path / "smi_before.csv"
    before.write_text("index, utilization.gpu [%], memory.used [MiB]\n0, 10 %, 100 MiB\n1, 20 %, 100 MiB\n")
    after = tmp_path / "smi_after.csv"
    after.write_text("index, utilization.gpu [%], memory.used [MiB]\n0, 95 %, 100 MiB\n1, 97 %, 100 MiB\n")
    facts = tmp_path / "b.json"
    facts.write_text(json.dumps({"symptom": "gpu_util", "disk": {"util_percent_samples": [99]},
                                 "cpu": {"iowait_percent_samples": [38]}}))
    res = _kb("verify", "--before", str(facts), "--before-input", str(before),
              "--after-input", str(after), "--format", "json")
    assert res.returncode == 3, res.stderr  # the disk was not measured after the fix
    doc = json.loads(res.stdout)
    assert doc["findings"][0]["cause_id"] == "gpu_util.dataloader_bound"
    assert doc["findings"][0]["checks"][0]["after"] == 96
