"""The decision graphs as Graphviz DOT, with the same shapes' meaning and colours as Mermaid."""

from __future__ import annotations

from engine.knowledge import Knowledge
from kb.exports.text import COLOURS, Drawing, drawings, safe_ids


def quote(text: str) -> str:
    """A DOT double-quoted string (``\\n`` is a centred line break in a label)."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(lines: list[str]) -> str:
    return quote("\n".join(" ".join(x.split()) for x in lines if x)).replace("\n", "\\n")


_SHAPES = {"question": "diamond", "start": "ellipse"}


def render(d: Drawing) -> str:
    """One drawing as a ``digraph``."""
    ids = safe_ids(d)
    out = [f"digraph {quote(d.name)} {{",
           f"  graph [rankdir=TB, labelloc=t, label={quote(' '.join(d.title.split()))}];",
           '  node [shape=box, style="rounded", fontname="Helvetica"];',
           '  edge [fontname="Helvetica", fontsize=10];']
    for n in d.nodes:
        attrs = [f"label={_label(n.label)}"]
        if n.kind in _SHAPES:
            attrs.append(f"shape={_SHAPES[n.kind]}")
        if n.kind in COLOURS:
            fill, stroke = COLOURS[n.kind]
            attrs += ['style="rounded,filled"', f'fillcolor="{fill}"', f'color="{stroke}"']
        out.append(f"  {ids[n.id]} [{', '.join(attrs)}];")
    for e in d.edges:
        text = [x for x in e.label if x]
        tail = f" [label={_label(text)}]" if text else ""
        out.append(f"  {ids[e.source]} -> {ids[e.target]}{tail};")
    out.append("}")
    return "\n".join(out) + "\n"


def export(kn: Knowledge, lang: str = "en", branch: str | None = None, *,
           fixes: bool = True) -> str:
    """``branch`` (a branch id or ``overview``): that digraph; None: the overview, then every
    branch, one ``digraph`` after the other (``dot -Tsvg -O`` writes one file per graph)."""
    return "\n".join(render(d) for d in drawings(kn, lang, branch, fixes=fixes))
