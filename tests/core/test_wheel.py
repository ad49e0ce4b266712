"""The installed wheel finds its data (graphs/, prompts/, examples/) from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                        str(ROOT)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"wheel build failed: {r.stderr[-2000:]}")
    return next(out.glob("kb_triage-*.whl"))


def test_wheel_contains_the_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "kb/_bundled/graphs/sop.yaml" in names
    assert "kb/_bundled/graphs/references.yaml" in names
    assert any(n.startswith("kb/_bundled/graphs/oom/") for n in names)
    assert any(n.startswith("kb/_bundled/prompts/") for n in names)
    assert "kb/engine/knowledge.py" in names and "kb/py.typed" in names


def test_record_lists_only_kb(wheel: Path) -> None:
    """One top-level import: the RECORD names kb/ and the dist-info, nothing else."""
    z = zipfile.ZipFile(wheel)
    record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    tops = {line.split(",", 1)[0].split("/", 1)[0] for line in
            z.read(record).decode().splitlines() if line}
    assert tops == {"kb", record.split("/", 1)[0]}, tops
    assert record.startswith("kb_triage-")


def test_import_kb_beside_another_engine_package(wheel: Path, tmp_path: Path) -> None:
    """A training repo with its own `engine/` package: `import kb` still works there."""
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    repo = tmp_path / "their_repo"
    (repo / "engine").mkdir(parents=True)
    (repo / "engine" / "__init__.py").write_text("raise ImportError('their engine, not ours')\n")
    env = {**os.environ, "PYTHONPATH": str(target), "KB_NO_CACHE": "1"}
    code = ("import kb; r = kb.diagnose({'symptom': 'oom', 'oom': {'occurred': True, "
            "'phase': 'eval', 'in_no_grad': False}}); print(r.findings[0].cause_id)")
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "oom.eval_no_grad"


def test_installed_wheel_runs_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    facts = elsewhere / "facts.json"
    facts.write_text(json.dumps({"symptom": "gpu_util",
                                 "gpu": {"utilization_samples": [12, 18, 9]},
                                 "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}))
    # the installed copy comes first on the path; the checkout is not on it
    env = {**os.environ, "PYTHONPATH": str(target), "KB_NO_CACHE": "1"}
    code = ("import kb, kb._data as d; print(kb.__file__); print(d.data_dir('graphs')); "
            "print(len(kb.load_knowledge().causes))")
    r = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    file, graphs, count = r.stdout.split()
    assert file.startswith(str(target)) and "_bundled" in graphs and int(count) >= 27
    r = subprocess.run([sys.executable, "-m", "kb", "diagnose", "--facts", str(facts)],
                       cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "gpu_util.dataloader_bound" in r.stdout
