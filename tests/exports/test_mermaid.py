"""`kb export mermaid`: a small Mermaid syntax checker applied to every exported graph.

Golden: tests/golden/mermaid-overview.{en,zh}.mmd (regenerate: see tests/exports/test_agents_md.py,
`KB_UPDATE_GOLDEN=1 python -m pytest tests/exports -q`). The official renderer runs only with
KB_MERMAID_CLI=1 (it needs `npx @mermaid-js/mermaid-cli` and a Chromium).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kb.exports import mermaid
from kb.exports.text import COLOURS, branch_order, safe_ids, branch_drawing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import golden, kb_all  # noqa: E402

LANGS = ("en", "zh")
ID = r"[A-Za-z_][A-Za-z0-9_]*"
LABEL = r'"([^"]*)"'
SHAPES = {"{": "}", "([": "])", "[": "]"}
RESERVED = {"end", "graph", "subgraph", "style", "classdef", "class", "click", "flowchart"}
NODE = re.compile(rf"^    ({ID})(\(\[|\{{|\[){LABEL}(\]\)|\}}|\])$")
EDGE = re.compile(rf"^    ({ID}) -->(?:\|{LABEL}\|)? ({ID})$")
STYLE = re.compile(rf"^    style ({ID}) fill:(#[0-9A-F]{{6}}),stroke:(#[0-9A-F]{{6}})$")
PAIRS = set(COLOURS.values())


def check_label(text: str) -> None:
    assert text.strip(), "empty label"
    assert '"' not in text and "`" not in text and "|" not in text
    assert "<" not in text.replace("<br/>", ""), f"raw '<' in {text!r}"
    assert ">" not in text.replace("<br/>", ""), f"raw '>' in {text!r}"
    for ent in re.findall(r"#[^;\s]*;", text):
        assert re.fullmatch(r"#\d+;", ent), f"bad entity {ent!r} in {text!r}"


def parse(src: str) -> dict:
    """Check one diagram; return its nodes (id -> (shape, label)), edges and styles."""
    lines = [x for x in src.splitlines() if x.strip() and not x.startswith("%%")]
    assert lines[0] in ("graph TD", "flowchart TD"), lines[0]
    nodes: dict[str, tuple[str, str]] = {}
    edges: list[tuple[str, str, str | None]] = []
    styles: dict[str, tuple[str, str]] = {}
    for line in lines[1:]:
        assert line.count('"') % 2 == 0, f"unbalanced quotes: {line}"
        if m := NODE.match(line):
            nid, left, text, right = m.groups()
            assert SHAPES[left] == right, f"bracket mismatch: {line}"
            assert nid not in nodes, f"node declared twice: {nid}"
            assert nid.lower() not in RESERVED
            check_label(text)
            nodes[nid] = (left, text)
        elif m := EDGE.match(line):
            src_id, text, dst = m.groups()
            if text is not None:
                check_label(text)
            edges.append((src_id, dst, text))
        elif m := STYLE.match(line):
            nid, fill, stroke = m.groups()
            assert (fill, stroke) in PAIRS, f"colour pair not in the scheme: {line}"
            assert nid not in styles
            styles[nid] = (fill, stroke)
        else:
            raise AssertionError(f"not a node, edge or style line: {line!r}")
    for s, d, _ in edges:
        assert s in nodes and d in nodes, f"edge {s} -> {d} uses an undeclared node"
    for nid in styles:
        assert nid in nodes, f"style for an undeclared node {nid}"
    return {"nodes": nodes, "edges": edges, "styles": styles}


def all_graphs(kn):
    for lang in LANGS:
        yield lang, "overview", mermaid.export(kn, lang, "overview")
        for bid in branch_order(kn):
            for fixes in (True, False):
                yield lang, bid, mermaid.export(kn, lang, bid, fixes=fixes)


def test_every_graph_is_valid_mermaid(kn):
    count = 0
    for _lang, _name, src in all_graphs(kn):
        parse(src)
        count += 1
    assert count == 2 * (1 + 2 * len(kn.branches))


@pytest.mark.parametrize("lang", LANGS)
def test_branch_graphs_follow_the_knowledge(kn, lang):
    """Questions are rhombi in yellow, causes are problems in pink, kinds keep their colours."""
    for bid in branch_order(kn):
        d = branch_drawing(kn, bid, lang)
        ids = safe_ids(d)
        g = parse(mermaid.render(d))
        for n in kn.branches[bid].nodes:
            shape, _ = g["nodes"][ids[n.id]]
            if n.kind == "question":
                assert shape == "{"
            if n.kind in COLOURS:
                assert g["styles"][ids[n.id]] == COLOURS[n.kind]
            else:
                assert ids[n.id] not in g["styles"]
        for e in kn.branches[bid].edges:
            if e.target in kn.causes:
                assert g["styles"][ids[e.target]] == COLOURS["problem"]
        assert len(g["edges"]) >= len(kn.branches[bid].edges)


def test_overview_has_every_branch_coloured_by_its_kind(kn):
    g = parse(mermaid.export(kn, "en", "overview"))
    questions = [n for n, (shape, _) in g["nodes"].items() if shape == "{"]
    assert len(questions) == 1 and g["styles"][questions[0]] == COLOURS["question"]
    for bid, b in kn.branches.items():
        nid = f"branch_{bid}"
        assert (questions[0], nid) in {(s, d) for s, d, _ in g["edges"]}
        assert g["styles"][nid] == COLOURS[b.overview_kind]
        assert any(s == nid for s, _, _ in g["edges"]), f"{bid} has no first tools"


def test_markdown_bundle_holds_every_graph(kn):
    md = mermaid.export(kn, "zh")
    blocks = re.findall(r"```mermaid\n(.*?)```", md, flags=re.S)
    assert len(blocks) == 1 + len(kn.branches)
    for b in blocks:
        parse(b)


def test_escape_keeps_labels_safe():
    text = 'say "hi" <b> a|b `x` #1 & 2'
    out = mermaid.escape(text)
    check_label(out)
    for raw, ent in (('"', "#34;"), ("<", "#60;"), ("|", "#124;"), ("#", "#35;"), ("&", "#38;")):
        assert ent in out
    assert mermaid.label(["a", "b"]) == '"a<br/>b"'


@pytest.mark.parametrize("lang", LANGS)
def test_mermaid_overview_golden(kn, lang):
    golden(f"mermaid-overview.{lang}.mmd", mermaid.export(kn, lang, "overview"))


def test_cli_mermaid(kn):
    r, bad = kb_all([["export", "mermaid", "--branch", "overview"],
                     ["export", "mermaid", "--branch", "nope"]])
    assert r.returncode == 0, r.stderr
    assert r.stdout == mermaid.export(kn, "en", "overview")
    assert bad.returncode == 2 and "overview" in bad.stderr


@pytest.mark.skipif(not os.environ.get("KB_MERMAID_CLI"), reason="set KB_MERMAID_CLI=1 to render "
                    "with the official Mermaid CLI (needs npx and a Chromium)")
def test_official_mermaid_cli_renders_every_graph(kn, tmp_path):
    npx = shutil.which("npx")
    assert npx, "npx not found"
    for lang, name, src in all_graphs(kn):
        inp = tmp_path / f"{name}.{lang}.mmd"
        inp.write_text(src, encoding="utf-8")
        out = tmp_path / f"{name}.{lang}.svg"
        r = subprocess.run([npx, "-y", "@mermaid-js/mermaid-cli", "-i", str(inp), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and out.exists(), r.stderr
