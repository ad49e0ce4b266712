"""Contract tests over the knowledge: complete, sound, and found from a checkout."""

from __future__ import annotations

import json

import re
import shutil
from pathlib import Path

import pytest

from kb.engine.errors import KnowledgeError
from kb.engine.graph import build, validate
from kb.engine.knowledge import load

ROOT = Path(__file__).resolve().parents[2]
CANONICAL = re.findall(r"^\| `([a-z_]+\.[a-z0-9_]+)` \|",
                       (ROOT.parent / "shared" / "design" / "causes.md").read_text()
                       if (ROOT.parent / "shared" / "design" / "causes.md").exists() else "",
                       re.M)


def test_knowledge_validates(kn) -> None:
    assert validate(kn) == []


def test_graph_has_typed_nodes_and_edges(kn) -> None:
    g = build(kn)
    types = {d.get("type") for _, d in g.nodes(data=True)}
    assert {"symptom", "branch", "check", "decision", "cause", "fix", "verification",
            "reference"} <= types
    etypes = {d["type"] for *_, d in g.edges(data=True)}
    assert {"branch", "first_tool", "step", "decided_by", "fixed_by", "verified_by",
            "cites"} <= etypes


@pytest.mark.skipif(not CANONICAL, reason="../shared/design/causes.md not beside the checkout")
def test_every_canonical_cause_exists(kn) -> None:
    missing = [c for c in CANONICAL if c not in kn.causes]
    assert not missing, missing


def test_at_least_twelve_causes_beyond_the_seed(kn) -> None:
    extra = [c for c in kn.causes.values() if c.seed == "beyond-seed"]
    assert len(extra) >= 12, [c.id for c in extra]


def test_every_cause_is_complete(kn) -> None:
    for c in kn.causes.values():
        assert c.fixes and all(f.command and f.refs for f in c.fixes), c.id
        assert c.verify and all(v.expect for v in c.verify), c.id
        assert c.references, c.id
        assert c.title.en != c.title.zh, c.id


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", dst)
    return dst


def test_duplicate_id_names_both_files(tmp_path: Path) -> None:
    g = _copy(tmp_path)
    src = g / "gpu_util" / "cpu_bound.yaml"
    (g / "gpu_util" / "cpu_bound_copy.yaml").write_text(src.read_text())
    with pytest.raises(KnowledgeError) as ei:
        load(g, use_cache=False)
    text = "\n".join(ei.value.problems)
    assert "cpu_bound_copy.yaml" in text and "must equal its path" in text


def test_bad_entry_names_file_and_field(tmp_path: Path) -> None:
    g = _copy(tmp_path)
    p = g / "gpu_util" / "cpu_bound.yaml"
    p.write_text(p.read_text().replace("severity: fix_now", "severity: urgent"))
    with pytest.raises(KnowledgeError) as ei:
        load(g, use_cache=False)
    assert any("cpu_bound.yaml severity" in x for x in ei.value.problems), ei.value.problems


def test_new_cause_is_one_file(tmp_path: Path) -> None:
    g = _copy(tmp_path)
    text = (g / "gpu_util" / "cpu_bound.yaml").read_text().replace(
        "id: gpu_util.cpu_bound", "id: gpu_util.cpu_bound_two")
    (g / "gpu_util" / "cpu_bound_two.yaml").write_text(text)
    kn2 = load(g, use_cache=False)
    assert "gpu_util.cpu_bound_two" in kn2.causes


def test_cache_is_used_and_invalidated(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("KB_NO_CACHE", raising=False)
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    g = _copy(tmp_path)
    a = load(g)
    cached = list((tmp_path / "cache").glob("knowledge-*.json"))
    assert len(cached) == 1
    json.loads(cached[0].read_text())  # data, not pickle
    b = load(g)
    assert a.digest == b.digest
    p = g / "gpu_util" / "cpu_bound.yaml"
    p.write_text(p.read_text().replace("severity: fix_now", "severity: tune"))
    c = load(g)
    assert c.causes["gpu_util.cpu_bound"].severity == "tune"


@pytest.mark.parametrize(("branch", "old", "new", "problem"), [
    # a branch's words_void_when is checked like its entry: an unknown fact is a problem
    ("nccl", "{fact: gpu.count, op:", "{fact: gpu.cuont, op:", "gpu.cuont"),
    # a branch's yields must go to another branch that exists
    ("gpu_util", "  - to: inference", "  - to: infernce", "yields: unknown branch 'infernce'"),
])
def test_branch_word_rules_are_validated(tmp_path: Path, branch: str, old: str, new: str,
                                         problem: str) -> None:
    g = _copy(tmp_path)
    p = g / "branches" / f"{branch}.yaml"
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    problems = validate(load(g, use_cache=False))
    assert any(problem in x for x in problems), problems
