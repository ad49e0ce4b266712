"""What a cold `kb diagnose` loads: the graph queries come from the knowledge's cached index,
so neither networkx nor experta is imported on the default path; the index is what networkx
answers on the live graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx

from kb.engine.knowledge import load
from kb.engine.steps import compute_index, decision_graph
from kb._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "facts" / "oom.fragmentation.json"


def _modules_after_diagnose(tmp_path: Path, engine: str | None) -> set[str]:
    code = ("import sys, kb; kb.diagnose(sys.argv[1]); "
            "print('\\n'.join(sorted(m for m in sys.modules)))")
    env = {**os.environ, "KB_CACHE_DIR": str(tmp_path)}
    env.pop("KB_ENGINE", None)
    env.pop("KB_NO_CACHE", None)  # the test session turns the cache off; a user's is on
    if engine:
        env["KB_ENGINE"] = engine
    for _ in range(2):  # the first run writes the cache, the second reads it
        out = subprocess.run([sys.executable, "-c", code, str(EXAMPLE)], env=env, cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout
    return {m.split(".")[0] for m in out.split()}


def test_a_cached_diagnosis_imports_neither_networkx_nor_experta(tmp_path: Path) -> None:
    mods = _modules_after_diagnose(tmp_path, None)
    assert "kb" in mods
    assert "networkx" not in mods
    assert "experta" not in mods


def test_the_experta_engine_is_loaded_when_asked_for(tmp_path: Path) -> None:
    assert "experta" in _modules_after_diagnose(tmp_path, "experta")


def test_the_cached_index_is_what_networkx_answers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KB_NO_CACHE", raising=False)
    fresh = load(data_dir("graphs"), use_cache=True)  # builds and writes the cache
    cached = load(data_dir("graphs"), use_cache=True)  # reads it back
    assert list(tmp_path.glob("knowledge-*.json"))
    assert cached.index == fresh.index == compute_index(fresh)
    g = decision_graph(fresh)
    ix = cached.index
    assert set(ix.order) == set(g) and len(ix.order) == len(g)
    pos = {n: i for i, n in enumerate(ix.order)}
    assert all(pos[u] < pos[v] for u, v in g.edges())  # a topological order
    for n in g:
        assert sorted(ix.ancestors[n]) == sorted(nx.ancestors(g, n) | {n})
        assert sorted(ix.into[n]) == sorted((u, k) for u, _, k in g.in_edges(n, keys=True))
    for b in fresh.branches.values():
        for n, d in nx.single_source_shortest_path_length(g, b.root).items():
            assert ix.depth[n] == d
    json.loads(cached.model_dump_json())  # the index travels as plain JSON


EXAMPLES = sorted((ROOT / "examples" / "facts").glob("*.json"))
BAD = [
    {"gpu": {"count": -1}},
    {"gpu": {"utilization_samples": [120]}, "oom": {"occurred": "maybe"}},
    {"oom": {"no_such_fact": 1}},
    {"no_such_group": {}},
    {"symptom": "not_a_branch", "inference": {"engine": "nope"}},
]


def _problems(model, doc):
    from pydantic import ValidationError

    try:
        model.model_validate(doc)
    except ValidationError as exc:
        return [(e["loc"], e["type"], e["msg"]) for e in exc.errors()]
    return []


def test_the_model_of_a_document_s_groups_validates_as_the_full_model() -> None:
    # the start-up path validates with the model of only the groups a document holds
    from kb.facts import facts_model, model_for

    full = facts_model()
    for path in EXAMPLES:
        doc = json.loads(path.read_text(encoding="utf-8"))
        small = model_for(doc)
        assert len(small.model_fields) <= len(full.model_fields)
        assert small.model_validate(doc).model_dump(exclude_defaults=True) == \
            full.model_validate(doc).model_dump(exclude_defaults=True), path.name
    for doc in BAD:
        got = _problems(model_for(doc), doc)
        assert got and got == _problems(full, doc), doc
