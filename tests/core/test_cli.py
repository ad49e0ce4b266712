"""`kb` as a user runs it: subprocesses, exit codes, streams, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "facts" / "gpu_util.dataloader_bound.json"
GOOD = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15, 22, 11]},
        "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}


def kb(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "KB_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "kb", *args], input=stdin, capture_output=True,
                          text=True, cwd=cwd or ROOT, env=env, timeout=120)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    p = tmp_path / "facts.json"
    p.write_text(json.dumps(GOOD))
    return p


def table_rows(md: str) -> list[list[str]]:
    """Rows of the first table, via markdown-it-py's token stream."""
    tokens = MarkdownIt().enable("table").parse(md)
    rows: list[list[str]] = []
    cur: list[str] | None = None
    for t in tokens:
        if t.type == "tr_open":
            cur = []
        elif t.type == "inline" and cur is not None:
            cur.append(t.content)
        elif t.type == "tr_close" and cur is not None:
            rows.append(cur)
            cur = None
        elif t.type == "table_close":
            break
    return rows


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_table_and_three_sentences(good: Path, lang: str) -> None:
    r = kb("diagnose", "--facts", str(good), "--lang", lang)
    assert r.returncode == 0, r.stderr
    rows = table_rows(r.stdout)
    assert len(rows) >= 2 and all(len(row) == 6 for row in rows)
    assert rows[0][0] == ("Symptom" if lang == "en" else "症状")
    assert "gpu_util.dataloader_bound" in rows[1][1]
    concl = r.stdout.strip().split("\n")[-1]
    ends = "。" if lang == "zh" else "."
    assert concl.count(ends) >= 3 if lang == "zh" else len([s for s in concl.split(". ") if s]) == 3


def test_json_shape(good: Path) -> None:
    r = kb("diagnose", "--facts", str(good), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["status"] == "confirmed"
    f = doc["findings"][0]
    for key in ("cause_id", "branch", "confidence", "severity", "evidence", "fixes", "verify",
                "references"):
        assert key in f
    assert "next_checks" in doc and "ruled_out" in doc and len(doc["conclusion"]) == 3


def test_fail_on(good: Path) -> None:
    assert kb("diagnose", "--facts", str(good), "--fail-on", "fix_now").returncode == 1
    assert kb("diagnose", "--facts", str(good), "--fail-on", "tune").returncode == 1


def test_fail_on_below_threshold(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text(json.dumps({"symptom": "gpu_util", "gpu": {"utilization_samples": [50, 55]}}))
    assert kb("diagnose", "--facts", str(p), "--fail-on", "fix_now").returncode == 0


def test_inconclusive_exit_code(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text("{}")
    r = kb("diagnose", "--facts", str(p), "--format", "json")
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["status"] == "inconclusive" and doc["question"]
    assert all(c["health_check"] for c in doc["next_checks"])


def test_facts_from_stdin() -> None:
    r = kb("diagnose", "--facts", "-", stdin=json.dumps(GOOD))
    assert r.returncode == 0 and "dataloader_bound" in r.stdout


def test_set_and_config(good: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "kb.yaml"
    cfg.write_text("thresholds:\n  disk.util_busy: 99.5\n")
    r = kb("diagnose", "--facts", str(good), "--config", str(cfg), "--format", "json")
    assert "gpu_util.dataloader_bound" not in r.stdout.split('"ruled_out"')[0]
    r = kb("diagnose", "--facts", str(good), "--set", "disk.util_busy=50", "--format", "json")
    assert json.loads(r.stdout)["findings"][0]["cause_id"] == "gpu_util.dataloader_bound"


BAD = [
    ("notjson.json", b"{not json", "not valid JSON"),
    ("empty.json", b"", "empty file"),
    ("binary.json", b"\x00\x01\x02\xff" * 100, "binary"),
    ("list.json", b"[1, 2]", "expected a JSON object"),
    ("range.json", json.dumps({"gpu": {"utilization_samples": [140]}}).encode(),
     "$.gpu.utilization_samples[0]"),
    ("type.json", json.dumps({"oom": {"occurred": "maybe"}}).encode(), "$.oom.occurred"),
    ("unknown.json", json.dumps({"gpu": {"utilisation": [1]}}).encode(), "unknown key"),
    ("symptom.json", json.dumps({"symptom": "slow"}).encode(), "$.symptom"),
]


@pytest.mark.parametrize("name,content,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_input_exit_2_one_line_no_traceback(tmp_path: Path, name: str, content: bytes,
                                                needle: str) -> None:
    p = tmp_path / name
    p.write_bytes(content)
    before = p.read_bytes()
    r = kb("diagnose", "--facts", str(p))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert needle in r.stderr and name in r.stderr
    assert p.read_bytes() == before  # nothing the user gave is touched


def test_huge_file(tmp_path: Path) -> None:
    p = tmp_path / "huge.json"
    with p.open("wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    r = kb("diagnose", "--facts", str(p))
    assert r.returncode == 2 and "too large" in r.stderr


def test_missing_file_and_nothing_given(tmp_path: Path) -> None:
    r = kb("diagnose", "--facts", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "file not found" in r.stderr
    r = kb("diagnose")
    assert r.returncode == 2 and "nothing to diagnose" in r.stderr


def test_output_never_overwritten(good: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    out.write_text("precious")
    r = kb("diagnose", "--facts", str(good), "-o", str(out))
    assert r.returncode == 2 and out.read_text() == "precious"
    r = kb("diagnose", "--facts", str(good), "-o", str(out), "--force")
    assert r.returncode == 0 and "dataloader_bound" in out.read_text()


def test_bad_set_value(good: Path) -> None:
    r = kb("diagnose", "--facts", str(good), "--set", "gpu_util.low=abc")
    assert r.returncode == 2 and "expected a number" in r.stderr


def test_schema_and_validate() -> None:
    r = kb("schema")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "Facts"
    r = kb("validate")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok:")


def test_validate_reports_problems(tmp_path: Path) -> None:
    import shutil

    g = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", g)
    p = g / "gpu_util" / "cpu_bound.yaml"
    p.write_text(p.read_text().replace("refs: [py-spy, pytorch-tuning-guide]", "refs: [nope-ref]"))
    r = kb("validate", "--path", str(g))
    assert r.returncode == 1 and "unknown reference 'nope-ref'" in r.stderr


def test_bundled_example_from_readme() -> None:
    r = kb("diagnose", "--facts", str(EXAMPLE))
    assert r.returncode == 0, r.stderr
    assert "gpu_util.dataloader_bound" in r.stdout


def test_every_command_has_help_alone_and_in_the_full_app() -> None:
    from kb.cli.app import COMMANDS

    full = kb("--help")
    assert full.returncode == 0
    for name in COMMANDS:
        assert name in full.stdout
        r = kb(name, "--help")  # built alone: only this command's module is imported
        assert r.returncode == 0 and "Usage: " in r.stdout, (name, r.stderr)


def test_unknown_command_is_a_usage_error() -> None:
    r = kb("diagnoze")
    assert r.returncode == 2 and "No such command" in r.stderr
