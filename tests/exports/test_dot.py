"""`kb export dot`: written by pydot from the executable decision graph, read back by pydot's
parser (Graphviz's grammar) and by networkx."""

from __future__ import annotations

import sys
from pathlib import Path

import pydot
import pytest

from kb.engine.steps import decision_graph
from kb.exports import dot
from kb.exports.text import COLOURS, Drawing, DNode, DEdge, branch_order

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import kb  # noqa: E402

PAIRS = set(COLOURS.values())


def _unquote(v: str | None) -> str:
    return (v or "").strip('"')


def parse(src: str) -> list[pydot.Dot]:
    graphs = pydot.graph_from_dot_data(src)
    assert graphs, "pydot could not parse the export"
    return graphs


def test_every_graph_is_valid_dot(kn) -> None:
    for lang in ("en", "zh"):
        graphs = parse(dot.export(kn, lang))
        assert len(graphs) == 1 + len(kn.branches)
    for bid in branch_order(kn):
        (g,) = parse(dot.export(kn, "en", bid))
        nodes = {n.get_name(): n for n in g.get_nodes() if n.get_name() not in ("node", "edge")}
        for e in g.get_edges():
            assert e.get_source() in nodes and e.get_destination() in nodes
        questions = [n for n in kn.branches[bid].nodes if n.kind == "question"]
        diamonds = [n for n in nodes.values() if _unquote(n.get("shape")) == "diamond"]
        assert len(diamonds) == len(questions)
        for n in nodes.values():
            if n.get("fillcolor"):
                assert (_unquote(n.get("fillcolor")), _unquote(n.get("color"))) in PAIRS


def test_drawn_edges_are_the_steps_that_run(kn) -> None:
    """Every step of the executable graph is an edge of its branch's drawing, and nothing
    else is, except the cause -> fix edges."""
    g = decision_graph(kn)
    for bid in branch_order(kn):
        (d,) = parse(dot.export(kn, "en", bid, fixes=False))
        drawn = sorted((e.get_source(), e.get_destination()) for e in d.get_edges())
        steps = sorted((u.replace(".", "_"), v.replace(".", "_")) for u, v, k in g.edges(keys=True)
                       if g.nodes[u]["branch"] == bid)
        assert drawn == steps


def test_quotes_and_backslashes_survive() -> None:
    d = Drawing("t", 'a "title"', [DNode("a", ['say "hi" \\ now', "line 2"], "question"),
                                   DNode("b", ["b"], "start")], [DEdge("a", "b", ['x "y"'])])
    (g,) = parse(dot.render(d))
    label = g.get_node("a")[0].get("label")
    assert '\\"hi\\"' in label and "\\n" in label


def test_networkx_reads_every_graph(kn, tmp_path) -> None:
    import networkx as nx

    for bid in ["overview", *branch_order(kn)]:
        p = tmp_path / f"{bid}.dot"
        p.write_text(dot.export(kn, "en", bid), encoding="utf-8")
        assert nx.nx_pydot.read_dot(p).number_of_nodes() > 1


def test_cli_dot(kn) -> None:
    r = kb("export", "dot", "--lang", "zh")
    assert r.returncode == 0, r.stderr
    assert r.stdout == dot.export(kn, "zh")


@pytest.mark.parametrize("branch", ["oom"])
def test_one_branch_from_the_cli(kn, branch) -> None:
    r = kb("export", "dot", "--branch", branch)
    assert r.returncode == 0, r.stderr
    (g,) = parse(r.stdout)
    assert g.get_name() == branch
