"""As a user runs it: `import kb` and `kb diagnose` never load litellm unless asked to call a
model; `kb diagnose --llm-dry-run` prints the redacted request and sends nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm._support import DATALOADER_FACTS, HOT_FACTS, INJECTION, SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KB_NO_CACHE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_import_and_diagnose_do_not_load_litellm():
    code = ("import kb, kb.llm, sys; r = kb.diagnose(%r); assert r.findings; "
            "assert 'litellm' not in sys.modules, 'litellm was imported'" % (DATALOADER_FACTS,))
    proc = run("-c", code)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def facts_file(tmp_path):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(HOT_FACTS), encoding="utf-8")
    return path


def test_cli_without_llm_does_not_import_litellm(facts_file):
    proc = run("-X", "importtime", "-m", "kb", "diagnose", "--facts", str(facts_file))
    assert proc.returncode == 0, proc.stderr
    assert "| Symptom |" in proc.stdout
    assert "litellm" not in proc.stderr  # -X importtime lists every module imported


def test_cli_dry_run_prints_the_redacted_payload(facts_file):
    proc = run("-X", "importtime", "-m", "kb", "diagnose", "--facts", str(facts_file),
               "--llm-dry-run", "--llm", "openai/fake", "--redact-hosts")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)  # only the request: nothing else on stdout
    assert body["model"] == "openai/fake"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = body["messages"][1]["content"]
    assert "gpu_util.cpu_bound" in user and INJECTION in user  # the evidence, as data
    assert SECRET_KEY not in proc.stdout and "[REDACTED]" in user
    assert "node7.cluster.example.com" not in proc.stdout
    assert "litellm" not in proc.stderr  # a dry run needs no provider library
