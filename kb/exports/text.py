"""Helpers the exports share: Markdown escaping, the wording of conditions and the export
chrome (headings), and the drawing model of the decision graphs that Mermaid and DOT render.

Everything here is deterministic: it depends on the knowledge only, never on clocks,
file times or dict order that the knowledge does not fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx

from kb.engine.conditions import base_path, resolve_value
from kb.words import describe, fmt_value
from kb.engine.errors import InputError
from kb.facts import fact_units
from kb.engine.knowledge import AnyOf, BranchGraph, Clause, Condition, Knowledge
from kb.engine.steps import decision_graph
from kb.report.wording import wording

LANGS = ("en", "zh")

#: export chrome: headings and connecting words that are not knowledge (the knowledge itself,
#: every title, step, rule, command and threshold, comes from graphs/)

_SYMBOLS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "=", "!=": "≠"}


def check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise InputError("--lang", f"unknown language ({lang})", "Use en or zh")
    return lang


def chrome(kn: Knowledge, lang: str, key: str) -> str:
    """A heading or label of the exports, from ``report.yaml`` ``exports:``."""
    return wording(kn, "exports", key, lang)


# ---------------------------------------------------------------- Markdown


def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(str(text).replace("|", "\\|").split())


def code(text: str, *, table: bool = False) -> str:
    """An inline code span. In a table cell the pipe must still be escaped (GFM splits the row
    before it reads code spans); backslashes stay as they are (code spans are literal). A
    command of several lines is one span per line, joined by ``<br>``: lines joined by spaces
    would not run as printed (``with ...: x = ...`` on one line is another program)."""
    lines = [ln.rstrip() for ln in str(text).splitlines() if ln.strip()]
    if len(lines) > 1:
        # a line's indentation is Python's block structure: kept, inner runs of spaces folded
        return "<br>".join(_span(ln[:len(ln) - len(ln.lstrip())] + " ".join(ln.split()), table)
                           for ln in lines)
    return _span(" ".join(str(text).split()), table)


def _span(text: str, table: bool) -> str:
    if table:
        text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def link(title: str, url: str) -> str:
    return f"[{title.replace('[', '(').replace(']', ')')}]({url})"


# ---------------------------------------------------------------- ordering


def branch_order(kn: Knowledge) -> list[str]:
    """Branches in the SOP's order (``sop.yaml`` classify.branches), then any others by id."""
    return list(kn.branches)  # the loader orders them so


def select_branches(kn: Knowledge, wanted: Iterable[str] | None) -> list[str]:
    order = branch_order(kn)
    wanted = list(wanted or [])
    for b in wanted:
        if b not in kn.branches:
            raise InputError(f"--branch {b}", "unknown branch",
                             f"Known branches: {', '.join(order)}")
    return [b for b in order if b in wanted] if wanted else order


def causes_of(kn: Knowledge, branch: str) -> list[str]:
    """The causes of a branch, ordered by the decision graph (then by id)."""
    b = kn.branches.get(branch)
    seen: list[str] = []
    if b is not None:
        for nid in graph_order(b):
            if nid in kn.causes and nid not in seen:
                seen.append(nid)
    rest = sorted(c for c, v in kn.causes.items() if v.branch == branch and c not in seen)
    return seen + rest


def graph_order(b: BranchGraph) -> list[str]:
    """Node ids of a branch graph in topological order, ties broken by file order."""
    ids: list[str] = [n.id for n in b.nodes]
    for e in b.edges:
        for end in (e.source, e.target):
            if end not in ids:
                ids.append(end)
    pos = {n: i for i, n in enumerate(ids)}
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from((e.source, e.target) for e in b.edges)
    try:
        return list(nx.lexicographical_topological_sort(g, key=lambda n: pos[n]))
    except nx.NetworkXUnfeasible:  # a cycle (kb validate reports it): keep the file order
        return ids


# ---------------------------------------------------------------- wording of conditions


class Wording:
    """Words for conditions, decision answers and graph nodes, in one language."""

    def __init__(self, kn: Knowledge, lang: str) -> None:
        self.kn = kn
        self.lang = check_lang(lang)
        self.units = fact_units()
        self.nodes = {n.id: (b, n) for b in kn.branches.values() for n in b.nodes}

    def t(self, key: str) -> str:
        return chrome(self.kn, self.lang, key)

    def node_label(self, raw: str) -> str:
        """What a decision-graph node id reads as: node label, cause title, or branch title."""
        if raw in self.kn.causes:
            return self.kn.causes[raw].title.get(self.lang)
        if raw in self.nodes:
            return self.nodes[raw][1].label.get(self.lang)
        if raw.startswith("branch:") and raw[7:] in self.kn.branches:
            return self.kn.branches[raw[7:]].title.get(self.lang)
        return raw

    def value(self, cond: Condition) -> str:
        value = resolve_value(cond, self.kn, None)
        unit = self.units.get(base_path(cond.fact), "")
        if not unit and isinstance(cond.value, str) and cond.value.startswith("$"):
            th = self.kn.thresholds.get(cond.value[1:])
            unit = th.unit if th is not None else ""
        if unit in ("count", "fraction"):
            unit = ""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
            if value.is_integer() and abs(value) < 1e15:
                return fmt_value(int(value), unit) if unit else str(int(value))
        return fmt_value(value, unit)

    def condition(self, cond: Condition) -> str:
        """``gpu.utilization_samples.mean < 40%``; the knowledge's own words where it has them."""
        if cond.text is not None:
            return describe(cond, self.kn, self.lang, self.units)
        if cond.op in _SYMBOLS:
            return f"{cond.fact} {_SYMBOLS[cond.op]} {self.value(cond)}"
        return describe(cond, self.kn, self.lang, self.units)

    def clause(self, clause: Clause) -> str:
        if isinstance(clause, AnyOf) and len(clause.any) > 1:
            return "(" + self.t("or").join(self.condition(c) for c in clause.any) + ")"
        if isinstance(clause, AnyOf):  # one condition, open when false: worded as itself
            return self.condition(clause.any[0])
        return self.condition(clause)

    def clauses(self, clauses: Iterable[Clause]) -> str:
        return self.t("and").join(self.clause(c) for c in clauses)

    def edge_label(self, edge: Any) -> str:
        parts = []
        if edge.label is not None:
            parts.append(edge.label.get(self.lang))
        if edge.when:
            parts.append(self.clauses(edge.when))
        return ": ".join(parts)


# ---------------------------------------------------------------- drawing model

#: the seed's colour scheme (fill, stroke) per drawn kind; start and tool nodes stay plain
COLOURS: dict[str, tuple[str, str]] = {
    "question": ("#FDE8A9", "#E7C56D"),
    "problem": ("#F6CED0", "#D98F92"),
    "optimisable": ("#CFE0F3", "#8AB0DB"),
    "fixed": ("#D4E8CF", "#94C18A"),
}


@dataclass
class DNode:
    id: str
    label: list[str]  # lines
    kind: str  # start, question, problem, optimisable, fixed, tool, plain


@dataclass
class DEdge:
    source: str
    target: str
    label: list[str] = field(default_factory=list)


@dataclass
class Drawing:
    name: str
    title: str
    nodes: list[DNode] = field(default_factory=list)
    edges: list[DEdge] = field(default_factory=list)

    def node(self, nid: str, label: list[str], kind: str) -> None:
        if all(n.id != nid for n in self.nodes):
            self.nodes.append(DNode(nid, label, kind))


def overview_drawing(kn: Knowledge, lang: str) -> Drawing:
    """Symptom question -> the branches (coloured by overview_kind) -> each branch's first tools."""
    d = Drawing("overview", kn.sop.get("title", {}).get(lang, "overview"))
    triggers = kn.sop.get("triggers", {}).get(lang) or []
    question = (kn.sop.get("classify", {}).get("question") or {}).get(lang, "?")
    d.node("start", [" / ".join(triggers)] if triggers else ["?"], "start")
    d.node("symptom", [question], "question")
    d.edges.append(DEdge("start", "symptom"))
    for bid in branch_order(kn):
        b = kn.branches[bid]
        d.node(f"branch:{bid}", [bid], b.overview_kind)
        d.edges.append(DEdge("symptom", f"branch:{bid}", [b.title.get(lang)]))
        tools = [kn.checks[t].title.get(lang) if t in kn.checks else t for t in b.first_tools]
        d.node(f"tools:{bid}", tools, "tool")
        d.edges.append(DEdge(f"branch:{bid}", f"tools:{bid}"))
    return d


def branch_drawing(kn: Knowledge, bid: str, lang: str, *, fixes: bool = True) -> Drawing:
    """One branch's decision graph as it runs: the nodes and steps of
    :func:`engine.steps.decision_graph` (the steps the rules are compiled from), causes as
    problem leaves, with their fixes when asked."""
    w = Wording(kn, lang)
    b = kn.branches[bid]
    d = Drawing(bid, b.title.get(lang))
    g = decision_graph(kn)
    sub = g.subgraph([n for n, data in g.nodes(data=True) if data["branch"] == bid])
    pos = {n.id: i for i, n in enumerate(b.nodes)}
    pos.update({c: len(pos) + i for i, c in enumerate(causes_of(kn, bid))})
    own = {n.id: n for n in b.nodes}
    for nid in nx.lexicographical_topological_sort(sub, key=lambda n: pos.get(n, 10**6)):
        if nid in own:
            d.node(nid, [own[nid].label.get(lang)], own[nid].kind)
        else:
            d.node(nid, [kn.causes[nid].title.get(lang)], "problem")
    for u, v, step in sorted(sub.edges(data="step"), key=lambda e: (pos.get(e[0], 0),
                                                                   pos.get(e[1], 0), e[2].id)):
        label = []
        if step.label is not None:
            label.append(step.label.get(lang))
        if step.clauses:
            label.append(w.clauses(step.clauses))
        d.edges.append(DEdge(u, v, label))
    if fixes:
        for cid in causes_of(kn, bid):
            if not any(n.id == cid for n in d.nodes):
                continue
            c = kn.causes[cid]
            d.node(f"fix:{cid}", [f"{i}. {f.command}" for i, f in enumerate(c.fixes, 1)], "fixed")
            d.edges.append(DEdge(cid, f"fix:{cid}"))
    return d


def drawings(kn: Knowledge, lang: str, branch: str | None, *, fixes: bool = True) -> list[Drawing]:
    """``overview`` alone, one branch alone, or (None) the overview and every branch."""
    check_lang(lang)
    check_graph_branch(kn, branch)
    if branch == "overview":
        return [overview_drawing(kn, lang)]
    if branch is not None:
        return [branch_drawing(kn, branch, lang, fixes=fixes)]
    return [overview_drawing(kn, lang)] + [
        branch_drawing(kn, b, lang, fixes=fixes) for b in branch_order(kn)]


def check_graph_branch(kn: Knowledge, branch: str | None) -> None:
    if branch is not None and branch != "overview" and branch not in kn.branches:
        raise InputError(f"--branch {branch}", "unknown branch",
                         f"Known: overview, {', '.join(branch_order(kn))}")


_RESERVED = {"end", "graph", "subgraph", "style", "classdef", "class", "click", "flowchart",
             "direction", "linkstyle", "default", "call", "href"}


def safe_ids(d: Drawing) -> dict[str, str]:
    """A stable, collision-free ``[A-Za-z_][A-Za-z0-9_]*`` id for every drawn node."""
    import re

    out: dict[str, str] = {}
    used: set[str] = set()
    for n in d.nodes:
        base = re.sub(r"[^A-Za-z0-9_]", "_", n.id) or "n"
        if base[0].isdigit() or base.lower() in _RESERVED:
            base = f"n_{base}"
        sid, i = base, 2
        while sid in used:
            sid, i = f"{base}_{i}", i + 1
        used.add(sid)
        out[n.id] = sid
    return out
