"""`kb explain`: how a cause is reached from the symptom, and everything the knowledge says
about it (conditions, why, fixes, verification, references), in one language.

The path is the shortest path from the ``symptom`` root to the cause through the branch and
decision-graph edges of :func:`engine.graph.build`; each step carries its node label, the
answer of the edge that leads into it and that edge's conditions in words (with thresholds).
UI-free: the CLI renders an :class:`Explanation` as Markdown (:func:`render`) or JSON.
"""

from __future__ import annotations

import difflib
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field

from kb.words import describe
from kb.engine.errors import UnknownCauseError
from kb.facts import fact_units
from kb.engine.graph import ROOT, build
from kb.engine.knowledge import AnyOf, Clause, Condition, Knowledge
from kb.report.model import SCHEMA_VERSION, FixOut, Ref, VerifyOut
from kb.report.wording import wording

#: edge types that make up the reasoning path (symptom -> branch -> decision nodes -> cause)
_PATH_EDGES = frozenset({"branch", "step"})



class CheckRef(BaseModel):
    """The check (command) that decides a decision node."""

    id: str
    title: str
    command: str
    look_for: str


class PathStep(BaseModel):
    """One node on the way from the symptom to the cause."""

    node: str = Field(description="graph node id: symptom, branch:<id>, a decision node id or the cause id")
    type: str = Field(description="symptom, branch, decision or cause")
    kind: str | None = Field(None, description="decision-node kind: start, question, tool, problem ...")
    label: str
    answer: str | None = Field(None, description="answer id of the edge leading into this node")
    answer_label: str | None = Field(None, description="wording of that edge")
    conditions: list[str] = Field(default_factory=list, description="that edge's conditions in words")
    check: CheckRef | None = Field(None, description="the command that decides this node")


class Explanation(BaseModel):
    """Everything about one cause, worded in one language."""

    schema_version: int = SCHEMA_VERSION
    lang: str
    cause_id: str
    branch: str
    branch_title: str
    title: str
    symptom: str
    why: str
    severity: str
    seed: str
    path: list[PathStep]
    conditions: list[str]
    supporting: list[str]
    fixes: list[FixOut]
    verification: list[VerifyOut]
    references: list[Ref]


_GRAPHS: dict[str, nx.MultiDiGraph] = {}


def knowledge_graph(kn: Knowledge) -> nx.MultiDiGraph:
    """The knowledge graph of ``kn``, built once per knowledge digest."""
    key = kn.digest + kn.root
    g = _GRAPHS.get(key)
    if g is None:
        g = _GRAPHS[key] = build(kn)
    return g


def unknown_cause(cause_id: str, kn: Knowledge) -> UnknownCauseError:
    """The error for an unknown cause id, with the closest known ids as a hint."""
    ids = sorted(kn.causes)
    close = difflib.get_close_matches(cause_id, ids, n=3, cutoff=0.4)
    if not close:  # a bare cause name ("cpu_bound") or a branch prefix still finds its ids
        tail = cause_id.rsplit(".", 1)[-1]
        close = [c for c in ids if c.endswith("." + tail) or c.startswith(cause_id)][:3]
    hint = f"Did you mean: {', '.join(close)}?" if close else (
        f"Known causes: {', '.join(ids[:8])}{', ...' if len(ids) > 8 else ''}"
        if ids else "The knowledge base has no causes")
    return UnknownCauseError(place=f"cause '{cause_id}'", problem="unknown cause id", hint=hint)


class _Words:
    """Conditions in words, with thresholds (and their overrides) resolved."""

    def __init__(self, kn: Knowledge, lang: str, overrides: dict[str, float] | None) -> None:
        self.kn = kn
        self.lang = lang
        self.overrides = overrides or {}
        self.units = fact_units()

    def cond(self, c: Condition) -> str:
        return describe(c, self.kn, self.lang, self.units, self.overrides)

    def clause(self, cl: Clause) -> str:
        if isinstance(cl, AnyOf):
            return wording(self.kn, "explain", "or", self.lang).join(self.cond(c) for c in cl.any)
        return self.cond(cl)


def _text(t: Any, lang: str) -> str:
    if isinstance(t, dict):
        return str(t.get(lang) or t.get("en") or "")
    return "" if t is None else str(t)


def _check_ref(kn: Knowledge, check_id: str, lang: str) -> CheckRef | None:
    chk = kn.checks.get(check_id)
    if chk is None:
        return None
    return CheckRef(id=chk.id, title=chk.title.get(lang), command=chk.command,
                    look_for=chk.look_for.get(lang))


def reasoning_path(cause_id: str, kn: Knowledge, lang: str = "en",
                   overrides: dict[str, float] | None = None) -> list[PathStep]:
    """The steps from the symptom root to ``cause_id`` through the decision graph."""
    if cause_id not in kn.causes:
        raise unknown_cause(cause_id, kn)
    g = knowledge_graph(kn)
    view = nx.subgraph_view(g, filter_edge=lambda u, v, k: g[u][v][k].get("type") in _PATH_EDGES)
    try:
        nodes = nx.shortest_path(view, ROOT, cause_id)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        nodes = [ROOT, cause_id]  # `kb validate` reports the unreachable cause; still explain it
    words = _Words(kn, lang, overrides)
    steps: list[PathStep] = []
    for i, nid in enumerate(nodes):
        data = g.nodes[nid]
        ntype = data.get("type", "decision")
        if ntype == "cause":
            text = kn.causes[nid].title.get(lang)
        else:
            text = _text(data.get("text"), lang)
        step = PathStep(node=nid, type=ntype, kind=data.get("kind") if ntype == "decision" else None,
                        label=text)
        if i > 0:
            prev = nodes[i - 1]
            edges = [d for d in g.get_edge_data(prev, nid, default={}).values()
                     if d.get("type") in _PATH_EDGES]
            if edges:
                e = edges[0]
                step.answer = e.get("answer")
                if ntype == "branch":
                    step.answer = nid.split(":", 1)[1]
                lab = _text(e.get("text"), lang)
                step.answer_label = lab or None
                step.conditions = [words.cond(Condition.model_validate(c))
                                   for c in e.get("when") or []]
        for _u, v, d in g.out_edges(nid, data=True):
            if d.get("type") == "decided_by":
                step.check = _check_ref(kn, v.split(":", 1)[1], lang)
                break
        steps.append(step)
    return steps


def explain(cause_id: str, kn: Knowledge, lang: str = "en",
            overrides: dict[str, float] | None = None) -> Explanation:
    """Explain ``cause_id``; :class:`UnknownCauseError` (with close matches) when unknown."""
    if cause_id not in kn.causes:
        raise unknown_cause(cause_id, kn)
    c = kn.causes[cause_id]
    words = _Words(kn, lang, overrides)
    b = kn.branches.get(c.branch)

    def ref(rid: str) -> Ref:
        r = kn.references.get(rid)
        if r is None:  # `kb validate` reports it; keep the id visible
            return Ref(id=rid, title=rid, url="")
        return Ref(id=r.id, title=r.title, url=r.url)

    from kb.engine.conditions import resolve_value

    return Explanation(
        lang=lang, cause_id=c.id, branch=c.branch,
        branch_title=b.title.get(lang) if b else c.branch,
        title=c.title.get(lang), symptom=c.symptom.get(lang), why=c.why.get(lang),
        severity=c.severity, seed=c.seed,
        path=reasoning_path(cause_id, kn, lang, overrides),
        conditions=[words.clause(cl) for cl in c.conditions],
        supporting=[words.clause(cl) for cl in c.supporting],
        fixes=[FixOut(text=f.text.get(lang), command=f.command, references=[ref(r) for r in f.refs])
               for f in c.fixes],
        verification=[VerifyOut(text=v.text.get(lang), command=v.command,
                                expect=words.cond(v.expect), fact=v.expect.fact, op=v.expect.op,
                                value=resolve_value(v.expect, kn, overrides))
                      for v in c.verify],
        references=[ref(r) for r in c.references],
    )


def render(ex: Explanation, kn: Knowledge) -> str:
    """The explanation as Markdown."""
    from kb.report.markdown import code

    lang = ex.lang

    def lb(key: str) -> str:
        return wording(kn, "explain", key, lang)

    severity = kn.report_text.get("severity", {}).get(ex.severity, {}).get(lang, ex.severity) \
        if isinstance(kn.report_text, dict) else ex.severity
    out = [f"## {ex.title} ({code(ex.cause_id, False)})", "",
           f"**{lb('branch')}:** {ex.branch_title} ({code(ex.branch, False)}) · "
           f"**{lb('severity')}:** {severity}", "", ex.symptom, "",
           f"### {lb('path')}", ""]
    for i, s in enumerate(ex.path, 1):
        line = f"{i}. **{s.label}**"
        if s.answer_label or s.conditions:
            said = s.answer_label or s.answer or ""
            cond = "; ".join(s.conditions)
            line += f" ← {said}" if said else ""
            line += f" ({lb('when')}: {cond})" if cond else ""
        if s.check is not None:
            line += f" — {lb('decided_by')} {code(s.check.command, False)}"
        out.append(line)
    out += ["", f"### {lb('conditions')}", ""]
    out += [f"- {c}" for c in ex.conditions]
    if ex.supporting:
        out += ["", f"### {lb('supporting')}", ""]
        out += [f"- {c}" for c in ex.supporting]
    out += ["", f"### {lb('why')}", "", ex.why, "", f"### {lb('fixes')}", ""]
    for i, f in enumerate(ex.fixes, 1):
        links = ", ".join(f"[{r.title}]({r.url})" for r in f.references)
        out.append(f"{i}. {f.text} {code(f.command, False)}" + (f" — {links}" if links else ""))
    out += ["", f"### {lb('verify')}", ""]
    for i, v in enumerate(ex.verification, 1):
        out.append(f"{i}. {v.text} {code(v.command, False)} ({lb('expect')}: {v.expect})")
    out += ["", f"### {lb('references')}", ""]
    out += [f"- [{r.title}]({r.url})" for r in ex.references]
    out.append("")
    return "\n".join(out)
