"""Text from the user's inputs never reaches the terminal with escape sequences in it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ESC = "\x1b]52;c;ZWNobyBoaQ==\x07 \x1b[31mred\x1b[0m \x9b2J"


@pytest.mark.parametrize("fmt", ["md", "terminal", "json"])
def test_escape_sequences_are_stripped(tmp_path: Path, fmt: str) -> None:
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps({"symptom": "gpu_util", "symptom_text": "GPU util low " + ESC,
                                 "gpu": {"utilization_samples": [12, 18]}}))
    r = subprocess.run([sys.executable, "-m", "kb", "diagnose", "-f", str(facts), "--format",
                        fmt, "--plain"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode in (0, 3), r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\x9b" not in r.stdout


def test_error_lines_are_one_clean_line(tmp_path: Path) -> None:
    bad = tmp_path / "evil\x1b[2Jname.json"
    bad.write_text("{")
    r = subprocess.run([sys.executable, "-m", "kb", "diagnose", "-f", str(bad)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1
