"""The knowledge as one networkx MultiDiGraph, and the checks that keep it sound.

Node types: symptom, branch, check, decision, cause, fix, verification, reference.
Edge types: ``branch`` (symptom -> branch), ``first_tool`` (branch -> check), ``step`` (branch
or decision -> decision/cause, following the seed's decision graphs), ``decided_by``
(decision -> check), ``fixed_by`` (cause -> fix), ``verified_by`` (cause -> verification),
``cites`` (cause/fix/check -> reference). Every node keeps its text in both languages.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from engine.conditions import base_path
from engine.facts import Facts
from engine.knowledge import Knowledge, iter_conditions

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
            nid = node.id if node.id in kn.causes else f"node:{node.id}"
            if node.id not in kn.causes:
                g.add_node(nid, type="decision", kind=node.kind, text=_text(node.label),
                           branch=b.id)
            if node.check:
                g.add_edge(nid, f"check:{node.check}", type="decided_by")
            if node.kind == "start":
                g.add_edge(f"branch:{b.id}", nid, type="step", text=None, answer=None, when=[])
        for e in b.edges:
            src = _node_id(kn, b.id, e.source)
            dst = _node_id(kn, b.id, e.target)
            g.add_edge(src, dst, type="step", text=_text(e.label), answer=e.answer,
                       when=[c.model_dump(mode="json") for c in iter_conditions(e.when)])
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
                g.add_edge(_node_id(kn, b.id, e.source), f"threshold:{t}", type="uses_threshold")
        for t in sorted(_threshold_refs(list(b.entry))):
            g.add_edge(f"branch:{b.id}", f"threshold:{t}", type="uses_threshold")
    for c in kn.causes.values():
        conds = iter_conditions(list(c.conditions) + list(c.supporting)) + [v.expect for v in c.verify]
        for t in sorted(_threshold_refs(conds)):
            g.add_edge(c.id, f"threshold:{t}", type="uses_threshold")


def _node_id(kn: Knowledge, branch: str, raw: str) -> str:
    if raw in kn.causes:
        return raw
    if raw.startswith("branch:"):
        return raw
    return f"node:{raw}"


def _fact_paths() -> set[str]:
    """Every dotted path the Facts model can hold (summaries are accepted on top)."""
    out: set[str] = set()

    def walk(model: Any, prefix: str) -> None:
        for name, field in model.model_fields.items():
            ann = field.annotation
            sub = getattr(ann, "model_fields", None)
            path = f"{prefix}{name}"
            out.add(path)
            if sub is not None:
                walk(ann, path + ".")

    walk(Facts, "")
    return out


def _fact_known(path: str, paths: set[str]) -> bool:
    if path.startswith(("decision.", "branch.")):
        return True
    base = base_path(path)
    if base in paths or path in paths:
        return True
    head = path.rsplit(".", 1)[0]  # dict-valued facts: compile.graph_break_reasons.<key>
    return head in paths or path.split(".", 1)[0] in ("env", "tools")


def validate(kn: Knowledge, g: nx.MultiDiGraph | None = None) -> list[str]:
    """Every problem with the knowledge graph, one line each (empty when sound)."""
    g = g if g is not None else build(kn)
    problems: list[str] = []
    root = kn.root
    paths = _fact_paths()
    decision_nodes = {n.id for b in kn.branches.values() for n in b.nodes}

    def check_fact(place: str, fact: str) -> None:
        if fact.startswith("decision.") and fact[len("decision."):] not in decision_nodes:
            problems.append(f"{place}: condition on unknown decision node '{fact}'")
        elif fact.startswith("branch.") and fact[len("branch."):] not in kn.branches:
            problems.append(f"{place}: condition on unknown branch '{fact}'")
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
        for cond in iter_conditions(list(c.conditions) + list(c.supporting)) + [
                v.expect for v in c.verify]:
            check_fact(place, cond.fact)
            check_value(place, cond.value)
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
            for cond in iter_conditions(e.when):
                check_fact(place, cond.fact)
                check_value(place, cond.value)
            if e.when and e.answer is None:
                problems.append(f"{place} edge {e.source}->{e.target}: 'when' needs an 'answer'")
        for cond in b.entry:
            check_fact(place, cond.fact)
            check_value(place, cond.value)
        sub = nx.DiGraph((e.source, e.target) for e in b.edges)
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
    for ref in kn.references.values():
        if ref.group not in kn.ref_groups:
            problems.append(f"{root}/references.yaml {ref.id}: unknown group '{ref.group}'")
    urls: dict[str, str] = {}
    for ref in kn.references.values():
        if ref.url in urls:
            problems.append(f"{root}/references.yaml {ref.id}: url also used by {urls[ref.url]}")
        urls[ref.url] = ref.id
    return problems
