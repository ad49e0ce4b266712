"""`kb` as a user runs it (subprocess): version, -h, examples, listings, --lang auto, formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15, 22, 11]},
        "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}


def kb(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    e = {**os.environ, "KB_NO_CACHE": "1", "LANG": "C.UTF-8", **(env or {})}
    e.pop("LC_ALL", None)
    return subprocess.run([sys.executable, "-m", "kb", *args], capture_output=True, text=True,
                          cwd=ROOT, env=e, input=stdin, timeout=120)


def test_version_both_spellings() -> None:
    for flag in ("--version", "-V"):
        r = kb(flag)
        assert r.returncode == 0 and r.stdout.startswith("kb ") and r.stdout.split()[1][0].isdigit()


def test_h_is_help_everywhere_with_an_example() -> None:
    from kb.cli.app import COMMANDS

    top = kb("-h")
    assert top.returncode == 0 and "--install-completion" in top.stdout
    for name in COMMANDS:
        r = kb(name, "-h")
        assert r.returncode == 0 and "Usage:" in r.stdout and "Examples:" in r.stdout, name


def test_causes_and_thresholds() -> None:
    r = kb("causes", "--branch", "oom")
    assert r.returncode == 0 and "oom.fragmentation" in r.stdout and "nccl." not in r.stdout
    doc = json.loads(kb("causes", "--format", "json").stdout)
    assert {c["branch"] for c in doc["causes"]} >= {"oom", "nccl"}
    assert kb("causes", "--branch", "nope").returncode == 2
    r = kb("thresholds")
    assert r.returncode == 0 and "gpu_util.low" in r.stdout and "70" in r.stdout
    assert json.loads(kb("thresholds", "--format", "json").stdout)["thresholds"]


def test_refs_search_matches_all_words_and_says_when_nothing_does() -> None:
    r = kb("refs", "--search", "nccl timeout")
    assert r.returncode == 0 and "Flight Recorder" in r.stdout
    r = kb("refs", "--search", "nccl zzzqqq")
    assert r.returncode == 1 and "nothing matches" in r.stderr and r.stdout == ""


def test_lang_auto_from_the_words_and_the_locale(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text(json.dumps(GOOD))
    r = kb("diagnose", "-f", str(p), "--symptom", "GPU 利用率很低，训练很慢")
    assert "诊断结果" in r.stdout, r.stderr
    r = kb("diagnose", "-f", str(p), env={"LANG": "zh_CN.UTF-8"})
    assert "诊断结果" in r.stdout
    r = kb("diagnose", "-f", str(p))
    assert "## Diagnosis" in r.stdout


def test_piped_output_is_markdown_and_terminal_format_has_no_ansi(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text(json.dumps(GOOD))
    r = kb("diagnose", "-f", str(p))
    assert r.stdout.startswith("## Diagnosis") and "\x1b[" not in r.stdout
    r = kb("diagnose", "-f", str(p), "--format", "terminal", "--plain", env={"COLUMNS": "100"})
    assert r.returncode == 0 and "\x1b[" not in r.stdout and "●" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 100


def test_html_file(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text(json.dumps(GOOD))
    out = tmp_path / "report.html"
    r = kb("diagnose", "-f", str(p), "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<script" not in html


def test_json_has_no_bare_nan(tmp_path: Path) -> None:
    facts = {"symptom": "numerics", "numerics": {"dtype": "fp16", "loss": [2.4, 2.1, 1.9],
                                                 "nonfinite_count": 8, "first_nonfinite_step": 340,
                                                 "nan_source": "loss"}}
    r = kb("diagnose", "-f", "-", "--format", "json", stdin=json.dumps(facts))

    def reject(token: str) -> None:
        raise AssertionError(f"bare {token} in JSON")

    json.loads(r.stdout, parse_constant=reject)


def test_llm_strict_exits_4_when_the_answer_is_not_used(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text(json.dumps(GOOD))
    # no model reachable: the call fails (nothing leaves the machine: an unknown local port)
    r = kb("diagnose", "-f", str(p), "--llm", "openai/none", "--llm-strict", "--no-cache",
           env={"KB_LLM_API_BASE": "http://127.0.0.1:9", "KB_LLM_API_KEY": "x"})
    if "litellm" in r.stderr and "install" in r.stderr.lower():
        pytest.fail("litellm missing: install the 'llm' extra to run this test")
    assert r.returncode == 4, (r.returncode, r.stderr[-500:])
    assert "LLM answer not used" in r.stderr
