"""The decision graphs as Mermaid ``graph TD`` diagrams, in the seed's colour scheme.

Questions are rhombi, start nodes stadiums, everything else rectangles. Labels are always
quoted, with the characters Mermaid would read as syntax written as entity codes (``#34;``).
"""

from __future__ import annotations

from kb.engine.knowledge import Knowledge
from kb.exports.text import COLOURS, Drawing, drawings, safe_ids

# '#' first: every other replacement introduces one
_ENTITIES = (("#", "#35;"), ('"', "#34;"), ("&", "#38;"), ("<", "#60;"), (">", "#62;"),
             ("|", "#124;"), ("`", "#96;"))


def escape(text: str) -> str:
    """One label line, safe inside ``"..."`` in a Mermaid node or edge label."""
    text = " ".join(str(text).split())
    for raw, ent in _ENTITIES:
        text = text.replace(raw, ent)
    return text


def label(lines: list[str]) -> str:
    return '"' + "<br/>".join(escape(x) for x in lines if x) + '"'


_SHAPES = {"question": ("{", "}"), "start": ("([", "])")}


def render(d: Drawing) -> str:
    """One drawing as a Mermaid flowchart."""
    ids = safe_ids(d)
    out = [f"%% {' '.join(d.title.split())}", "graph TD"]
    for n in d.nodes:
        left, right = _SHAPES.get(n.kind, ("[", "]"))
        out.append(f"    {ids[n.id]}{left}{label(n.label)}{right}")
    for e in d.edges:
        text = [x for x in e.label if x]
        arrow = f'-->|{label(text)}|' if text else "-->"
        out.append(f"    {ids[e.source]} {arrow} {ids[e.target]}")
    for n in d.nodes:
        if n.kind in COLOURS:
            fill, stroke = COLOURS[n.kind]
            out.append(f"    style {ids[n.id]} fill:{fill},stroke:{stroke}")
    return "\n".join(out) + "\n"


def export(kn: Knowledge, lang: str = "en", branch: str | None = None, *,
           fixes: bool = True) -> str:
    """``branch`` (a branch id or ``overview``): that graph alone, as plain Mermaid. None: a
    Markdown document with the overview and every branch graph in ``mermaid`` fences."""
    ds = drawings(kn, lang, branch, fixes=fixes)
    if branch is not None:
        return render(ds[0])
    parts = [f"# {kn.sop.get('title', {}).get(lang, 'kb')}", ""]
    for d in ds:
        parts += [f"## {d.title} ({d.name})", "", "```mermaid", render(d).rstrip("\n"), "```", ""]
    return "\n".join(parts)
