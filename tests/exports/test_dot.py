"""`kb export dot`: structure (pydot's parser when installed, else a strict regex check)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kb.exports import dot
from kb.exports.text import COLOURS, branch_order

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import kb  # noqa: E402

ID = r"[A-Za-z_][A-Za-z0-9_]*"
QSTR = r'"(?:[^"\\]|\\.)*"'
NODE = re.compile(rf"^  ({ID}) \[label=({QSTR})(.*)\];$")
EDGE = re.compile(rf"^  ({ID}) -> ({ID})(?: \[label=({QSTR})\])?;$")
PAIRS = set(COLOURS.values())


def check(src: str) -> list[dict]:
    """Every digraph in ``src``: nodes declared once, edges between declared nodes, colours in
    the scheme, strings properly quoted."""
    graphs: list[dict] = []
    cur: dict | None = None
    for line in src.splitlines():
        if not line.strip():
            continue
        if cur is None:
            assert re.fullmatch(rf"digraph {QSTR} \{{", line), line
            cur = {"nodes": {}, "edges": []}
            continue
        if line == "}":
            for s, d in cur["edges"]:
                assert s in cur["nodes"] and d in cur["nodes"], f"{s} -> {d} undeclared"
            graphs.append(cur)
            cur = None
            continue
        if line.startswith(("  graph [", "  node [", "  edge [")):
            assert line.endswith("];")
            continue
        if m := NODE.match(line):
            nid, _label, rest = m.groups()
            assert nid not in cur["nodes"]
            fill = re.search(r'fillcolor="(#[0-9A-F]{6})", color="(#[0-9A-F]{6})"', rest)
            if fill:
                assert fill.groups() in PAIRS, line
            cur["nodes"][nid] = (rest, fill.groups() if fill else None)
        elif m := EDGE.match(line):
            cur["edges"].append((m.group(1), m.group(2)))
        else:
            raise AssertionError(f"not a DOT statement we write: {line!r}")
    assert cur is None, "unterminated digraph"
    return graphs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_graph_is_valid_dot(kn, lang):
    graphs = check(dot.export(kn, lang))
    assert len(graphs) == 1 + len(kn.branches)
    for bid in branch_order(kn):
        (g,) = check(dot.export(kn, lang, bid))
        questions = [n for n in kn.branches[bid].nodes if n.kind == "question"]
        diamonds = [v for v in g["nodes"].values() if "shape=diamond" in v[0]]
        assert len(diamonds) == len(questions)
        assert all(v[1] == COLOURS["question"] for v in diamonds)


def test_quotes_are_escaped():
    assert dot.quote('a "b" \\ c') == '"a \\"b\\" \\\\ c"'


def test_pydot_reads_every_graph(kn, tmp_path):
    pytest.importorskip("pydot")
    import networkx as nx

    for bid in ["overview", *branch_order(kn)]:
        p = tmp_path / f"{bid}.dot"
        p.write_text(dot.export(kn, "en", bid), encoding="utf-8")
        g = nx.nx_pydot.read_dot(p)
        assert g.number_of_nodes() > 1


def test_cli_dot(kn):
    r = kb("export", "dot", "--lang", "zh")
    assert r.returncode == 0, r.stderr
    assert r.stdout == dot.export(kn, "zh")
