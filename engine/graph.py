"""The knowledge as one networkx MultiDiGraph, and the checks that keep it sound.

Node types: symptom, branch, check, decision, cause, fix, verification, reference.
Edge types: ``branch`` (symptom -> branch), ``first_tool`` (branch -> check), ``step`` (the
executable decision graph of :mod:`engine.steps`, keyed by the rule id), ``decided_by``
(decision -> check), ``fixed_by`` (cause -> fix), ``verified_by`` (cause -> verification),
``cites`` (cause/fix/check -> reference). Every node keeps its text in both languages.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from .conditions import base_path
from .knowledge import Knowledge, iter_conditions
from .steps import build_steps

ROOT = "symptom"


def _text(t: Any) -> dict[str, str] | None:
    return {"en": t.en, "zh": t.zh} if t is not None else None


def build(kn: Knowledge) -> nx.MultiDiGraph:
    """Build the typed knowledge graph."""
    g = nx.MultiDiGraph()
    g.add_node(ROOT, type="symptom", text=kn.sop.get("classify", {}).get("question"))
    for ref in kn.references.values():
        g.add_node(f"ref:{ref.id}", type="reference", title=ref.title, url=ref.url,
                   group=ref.group, seed=ref.seed, text=_text(ref.about))
    for chk in kn.checks.values():
        g.add_node(f"check:{chk.id}", type="check", command=chk.command,
                   produces=list(chk.produces), cost=chk.cost, health_check=chk.health_check,
                   text=_text(chk.title), look_for=_text(chk.look_for), env=dict(chk.env))
        for r in chk.refs:
            g.add_edge(f"check:{chk.id}", f"ref:{r}", type="cites")
    for b in kn.branches.values():
        g.add_node(f"branch:{b.id}", type="branch", text=_text(b.title),
                   symptom=_text(b.symptom), seed=b.seed, kind=b.overview_kind)
        g.add_edge(ROOT, f"branch:{b.id}", type="branch", text=_text(b.symptom))
        for t in b.first_tools:
            g.add_edge(f"branch:{b.id}", f"check:{t}", type="first_tool")
        for node in b.nodes:
            g.add_node(node.id, type="decision", kind=node.kind, text=_text(node.label),
                       branch=b.id)
            if node.check:
                g.add_edge(node.id, f"check:{node.check}", type="decided_by")
            if node.kind == "start":
                g.add_edge(f"branch:{b.id}", node.id, type="step", text=None, answer=None,
                           when=[], step=None)
    for s in build_steps(kn):
        # the same steps the rules are compiled from, keyed by the rule (step) id
        g.add_edge(s.source, s.target, key=s.id, type="step", step=s.id, text=_text(s.label),
                   answer=s.answer,
                   when=[c.model_dump(mode="json") for c in iter_conditions(list(s.clauses))])
    _add_sop_and_thresholds(g, kn)
    for c in kn.causes.values():
        g.add_node(c.id, type="cause", branch=c.branch, severity=c.severity, seed=c.seed,
                   text=_text(c.title), symptom=_text(c.symptom), why=_text(c.why),
                   conditions=[x.model_dump(mode="json") for x in iter_conditions(c.conditions)])
        for i, f in enumerate(c.fixes):
            fid = f"fix:{c.id}:{i}"
            g.add_node(fid, type="fix", command=f.command, text=_text(f.text))
            g.add_edge(c.id, fid, type="fixed_by")
            for r in f.refs:
                g.add_edge(fid, f"ref:{r}", type="cites")
        for i, v in enumerate(c.verify):
            vid = f"verify:{c.id}:{i}"
            g.add_node(vid, type="verification", command=v.command, text=_text(v.text),
                       expect=v.expect.model_dump(mode="json"))
            g.add_edge(c.id, vid, type="verified_by")
        for r in c.references:
            g.add_edge(c.id, f"ref:{r}", type="cites")
    return g


def _threshold_refs(conds: list[Any]) -> set[str]:
    return {c.value[1:] for c in conds if isinstance(c.value, str) and c.value.startswith("$")}


def _add_sop_and_thresholds(g: nx.MultiDiGraph, kn: Knowledge) -> None:
    """The agent SOP (steps, health checks, hard rules) and every threshold, as nodes, so
    that the whole knowledge is one auditable graph."""
    for t in kn.thresholds.values():
        g.add_node(f"threshold:{t.id}", type="threshold", value=t.value, unit=t.unit,
                   source=t.source, text=_text(t.text))
    sop = kn.sop
    g.add_node("sop", type="sop", text=sop.get("title"), closing=sop.get("closing"),
               environment=sop.get("environment"), triggers=sop.get("triggers"))
    g.add_edge(ROOT, "sop", type="sop")
    for i, step in enumerate(sop.get("steps", [])):
        g.add_node(f"sop_step:{step['id']}", type="sop_step", order=i + 1, text=step.get("text"))
        g.add_edge("sop", f"sop_step:{step['id']}", type="sop_step")
    for cid in sop.get("health_checks", []):
        g.add_edge("sop", f"check:{cid}", type="health_check")
    for rule in sop.get("hard_rules", []):
        g.add_node(f"rule:{rule['id']}", type="hard_rule", kind=rule.get("kind"),
                   text=rule.get("text"))
        g.add_edge("sop", f"rule:{rule['id']}", type="hard_rule")
    for b in kn.branches.values():
        for e in b.edges:
            for t in sorted(_threshold_refs(iter_conditions(e.when))):
                g.add_edge(e.source, f"threshold:{t}", type="uses_threshold")
        for t in sorted(_threshold_refs(list(b.entry))):
            g.add_edge(f"branch:{b.id}", f"threshold:{t}", type="uses_threshold")
    for c in kn.causes.values():
        conds = iter_conditions(list(c.conditions) + list(c.supporting)) + [v.expect for v in c.verify]
        for t in sorted(_threshold_refs(conds)):
            g.add_edge(c.id, f"threshold:{t}", type="uses_threshold")


def _fact_paths(kn: Knowledge) -> set[str]:
    """Every dotted path the fact schema can hold (summaries are accepted on top)."""
    from .schema import paths

    return paths(kn.facts_model())


def _fact_known(path: str, paths: set[str]) -> bool:
    base = base_path(path)
    if base in paths or path in paths:
        return True
    # dict-valued facts: compile.graph_break_reasons.<key>, env.<VAR>; a group of fields
    # ("distributed") is no dict: a misspelt field under it is unknown
    head = path.rsplit(".", 1)[0]
    return head in paths and not any(p.startswith(head + ".") for p in paths)


def validate(kn: Knowledge, g: nx.MultiDiGraph | None = None) -> list[str]:
    """Every problem with the knowledge graph, one line each (empty when sound)."""
    g = g if g is not None else build(kn)
    problems: list[str] = []
    root = kn.root
    paths = _fact_paths(kn)

    def check_fact(place: str, fact: str) -> None:
        if fact.startswith(("decision.", "branch.", "reached.")):
            problems.append(f"{place}: '{fact}' is not an observed fact; say where the cause "
                            f"hangs with 'under' (node and answer) instead")
        elif not _fact_known(fact, paths):
            problems.append(f"{place}: unknown fact path '{fact}'")

    def check_value(place: str, value: Any) -> None:
        if isinstance(value, str) and value.startswith("$") and value[1:] not in kn.thresholds:
            problems.append(f"{place}: unknown threshold '{value}'")
        if isinstance(value, str) and value.startswith("@"):
            check_fact(place, value[1:])

    for node, data in g.nodes(data=True):
        if "type" not in data:
            problems.append(f"{root}: dangling id '{node}' (used by an edge, never defined)")
    for c in kn.causes.values():
        place = f"{root}/{c.branch}/{c.id.split('.', 1)[1]}.yaml"
        if c.branch not in kn.branches:
            problems.append(f"{place}: unknown branch '{c.branch}'")
        if not nx.has_path(g, ROOT, c.id):
            problems.append(f"{place}: cause not reachable from the symptom through its "
                            f"branch's decision graph")
        b = kn.branches.get(c.branch)
        answers = ({(e.source, e.answer) for e in b.edges if e.answer}
                   | {(a.node, a.answer) for a in b.answers}) if b else set()
        for att in c.under:
            if b is None or att.node not in {n.id for n in b.nodes}:
                problems.append(f"{place} under: unknown node '{att.node}' in branch "
                                f"'{c.branch}'")
            elif att.answer and (att.node, att.answer) not in answers and not c.conditions:
                problems.append(f"{place} under: answer '{att.answer}' of '{att.node}' is "
                                f"defined nowhere (no branch step or answer, no conditions)")
        for cond in iter_conditions(list(c.conditions) + list(c.supporting)
                                    + list(c.signature_context)
                                    + [cl for f in c.fixes for cl in f.applied_if]
                                    + [w for f in c.fixes for w in f.when]
                                    + [w for v in c.verify for w in v.when]) + [
                v.expect for v in c.verify]:
            check_fact(place, cond.fact)
            check_value(place, cond.value)
        for target in c.leads_to:
            if target not in kn.causes and not (target.startswith("branch:")
                                                and target[7:] in kn.branches):
                problems.append(f"{place} leads_to: unknown cause or branch '{target}'")
        for what, items in (("fix", c.fixes), ("verify", c.verify)):
            for i, f in enumerate(items):
                if f.when_known and not f.when:
                    problems.append(f"{place} {what} {i + 1}: when_known without when")
        for r in c.references + [r for f in c.fixes for r in f.refs]:
            if r not in kn.references:
                problems.append(f"{place}: unknown reference '{r}'")
    for b in kn.branches.values():
        place = f"{root}/branches/{b.id}.yaml"
        ids = [n.id for n in b.nodes]
        for n in b.nodes:
            if n.check and n.check not in kn.checks:
                problems.append(f"{place} node {n.id}: unknown check '{n.check}'")
            if n.kind == "question" and not n.check:
                problems.append(f"{place} node {n.id}: a question needs the check that decides it")
        for t in b.first_tools:
            if t not in kn.checks:
                problems.append(f"{place} first_tools: unknown check '{t}'")
        for e in b.edges:
            for end in (e.source, e.target):
                if end not in ids and end not in kn.causes and not end.startswith("branch:"):
                    problems.append(f"{place} edge {e.source}->{e.target}: unknown node '{end}'")
            if e.target in kn.causes:
                problems.append(f"{place} edge {e.source}->{e.target}: a step into a cause "
                                f"belongs in the cause's file ('under')")
            for cond in iter_conditions(e.when):
                check_fact(place, cond.fact)
                check_value(place, cond.value)
            if e.when and e.answer is None:
                problems.append(f"{place} edge {e.source}->{e.target}: 'when' needs an 'answer'")
        for a in b.answers:
            if a.node not in ids:
                problems.append(f"{place} answers: unknown node '{a.node}'")
            for cond in iter_conditions(a.when):
                check_fact(place, cond.fact)
                check_value(place, cond.value)
        given = ({(e.source, e.answer) for e in b.edges if e.answer}
                 | {(a.node, a.answer) for a in b.answers}
                 | {(u.node, u.answer) for c in kn.causes.values() if c.branch == b.id
                    for u in c.under if u.answer})
        for w in b.said:
            if (w.node, w.answer) not in given:
                problems.append(f"{place} said: no step answers '{w.answer}' at '{w.node}'")
            if not (w.words.en or w.words.zh):
                problems.append(f"{place} said {w.node}={w.answer}: no words")
        for cond in b.entry:
            check_fact(place, cond.fact)
            check_value(place, cond.value)
            if cond.op == "missing":
                problems.append(f"{place} entry: '{cond.fact} missing' would put the branch "
                                f"in play with no evidence")
        for y in b.yields:
            if y.to not in kn.branches or y.to == b.id:
                problems.append(f"{place} yields: unknown branch '{y.to}'")
            if not (y.when_words.en or y.when_words.zh or y.when_setup):
                problems.append(f"{place} yields: no when_words and not when_setup")
            if y.when_setup and y.to in kn.branches and not kn.branches[y.to].context:
                problems.append(f"{place} yields when_setup: branch '{y.to}' has no context")
        for cond in b.context + iter_conditions(b.words_void_when):
            check_fact(place, cond.fact)
            check_value(place, cond.value)
        if sum(1 for n in b.nodes if n.kind == "start") != 1:
            problems.append(f"{place}: a branch needs exactly one 'start' node")
        sub = nx.DiGraph((s.source, s.target) for s in build_steps(kn) if s.branch == b.id)
        if not nx.is_directed_acyclic_graph(sub):
            cycle = nx.find_cycle(sub)
            problems.append(f"{place}: decision graph has a cycle {cycle}")
    for chk in kn.checks.values():
        for r in chk.refs:
            if r not in kn.references:
                problems.append(f"{root}/checks.yaml {chk.id}: unknown reference '{r}'")
        for p in chk.produces:
            if not _fact_known(p, paths):
                problems.append(f"{root}/checks.yaml {chk.id}: produces unknown fact '{p}'")
        for cond in chk.when:
            check_fact(f"{root}/checks.yaml {chk.id} when", cond.fact)
            check_value(f"{root}/checks.yaml {chk.id} when", cond.value)
        if chk.when_known and not chk.when:
            problems.append(f"{root}/checks.yaml {chk.id}: when_known without when")
    for ref in kn.references.values():
        if ref.group not in kn.ref_groups:
            problems.append(f"{root}/references.yaml {ref.id}: unknown group '{ref.group}'")
    urls: dict[str, str] = {}
    for ref in kn.references.values():
        if ref.url in urls:
            problems.append(f"{root}/references.yaml {ref.id}: url also used by {urls[ref.url]}")
        urls[ref.url] = ref.id
    return problems
