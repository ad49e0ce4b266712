"""The decision graphs as Graphviz DOT, with the same shapes' meaning and colours as Mermaid."""

from __future__ import annotations

from typing import Any

from kb.engine.knowledge import Knowledge
from kb.exports.text import COLOURS, Drawing, drawings, safe_ids


def _label(lines: list[str]) -> str:
    # pydot quotes; a backslash-n in the text is DOT's centred line break
    return "\\n".join(" ".join(x.split()).replace("\\", "\\\\") for x in lines if x)


_SHAPES = {"question": "diamond", "start": "ellipse"}


def to_pydot(d: Drawing) -> Any:
    """One drawing as a :class:`pydot.Dot` (the graph library writes the DOT text)."""
    import pydot

    ids = safe_ids(d)
    g = pydot.Dot(d.name, graph_type="digraph", rankdir="TB", labelloc="t",
                  label=" ".join(d.title.split()))
    g.set_node_defaults(shape="box", style="rounded", fontname="Helvetica")
    g.set_edge_defaults(fontname="Helvetica", fontsize="10")
    for n in d.nodes:
        attrs: dict[str, str] = {"label": _label(n.label)}
        if n.kind in _SHAPES:
            attrs["shape"] = _SHAPES[n.kind]
        if n.kind in COLOURS:
            fill, stroke = COLOURS[n.kind]
            attrs.update(style="rounded,filled", fillcolor=fill, color=stroke)
        g.add_node(pydot.Node(ids[n.id], **attrs))
    for e in d.edges:
        text = [x for x in e.label if x]
        g.add_edge(pydot.Edge(ids[e.source], ids[e.target],
                              **({"label": _label(text)} if text else {})))
    return g


def render(d: Drawing) -> str:
    """One drawing as a ``digraph``."""
    return to_pydot(d).to_string()


def export(kn: Knowledge, lang: str = "en", branch: str | None = None, *,
           fixes: bool = True) -> str:
    """``branch`` (a branch id or ``overview``): that digraph; None: the overview, then every
    branch, one ``digraph`` after the other (``dot -Tsvg -O`` writes one file per graph)."""
    return "\n".join(render(d) for d in drawings(kn, lang, branch, fixes=fixes))
