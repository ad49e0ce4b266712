"""`kb export json`: node-link JSON of the whole knowledge graph, round-tripped into networkx."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import networkx as nx

from kb.engine.graph import build
from kb.exports import graph_json

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import kb  # noqa: E402


def test_round_trip(kn):
    doc = json.loads(graph_json.export(kn))
    assert doc["schema_version"] == graph_json.SCHEMA_VERSION
    g = graph_json.to_graph(doc)
    ref = build(kn)
    assert isinstance(g, nx.MultiDiGraph)
    assert set(g.nodes) == set(ref.nodes)
    assert sorted((u, v, d["type"]) for u, v, d in g.edges(data=True)) == sorted(
        (u, v, d["type"]) for u, v, d in ref.edges(data=True))


def test_every_cause_and_seed_reference(kn):
    g = graph_json.to_graph(json.loads(graph_json.export(kn)))
    for cid, c in kn.causes.items():
        node = g.nodes[cid]
        assert node["type"] == "cause"
        assert node["text"] == {"en": c.title.en, "zh": c.title.zh}
        assert node["symptom"]["zh"] and node["why"]["en"]
    seed = [r for r in kn.references.values() if r.seed]
    assert seed
    for r in seed:
        node = g.nodes[f"ref:{r.id}"]
        assert node["url"] == r.url and node["text"]["zh"] == r.about.zh


def test_sorted_and_deterministic(kn):
    a = graph_json.export(kn)
    assert a == graph_json.export(kn)
    doc = json.loads(a)
    ids = [n["id"] for n in doc["nodes"]]
    assert ids == sorted(ids)
    keys = [(e["source"], e["target"], e["key"]) for e in doc["edges"]]
    assert keys == sorted(keys)


def test_cli_json(kn, tmp_path):
    out = tmp_path / "kb.json"
    r = kb("export", "json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text(encoding="utf-8") == graph_json.export(kn)
