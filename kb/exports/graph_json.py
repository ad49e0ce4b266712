"""The whole knowledge graph (``engine.graph.build``) as node-link JSON, sorted and stable."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from kb.engine.graph import build
from kb.engine.knowledge import Knowledge

SCHEMA_VERSION = 1


def data(kn: Knowledge) -> dict[str, Any]:
    """Node-link data (``networkx.node_link_data``, edges under ``edges``), nodes sorted by id
    and edges by (source, target, key), with ``schema_version`` on top."""
    g = build(kn)
    d = nx.node_link_data(g, edges="edges")
    d["nodes"] = sorted(d["nodes"], key=lambda n: str(n["id"]))
    d["edges"] = sorted(d["edges"], key=lambda e: (str(e["source"]), str(e["target"]),
                                                   e.get("key", 0)))
    return {"schema_version": SCHEMA_VERSION, **d}


def export(kn: Knowledge) -> str:
    return json.dumps(data(kn), ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def to_graph(doc: dict[str, Any]) -> nx.MultiDiGraph:
    """The inverse of :func:`data`: back into a networkx MultiDiGraph."""
    return nx.node_link_graph(doc, directed=True, multigraph=True, edges="edges")
