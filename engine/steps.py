"""The executable decision graph: every step (edge) of every branch, causes included.

A branch file holds its root, questions, checks and the steps between them; a cause file says
where it hangs (``under``: a node and one of its answers). A step into a cause holds when the
answer holds at that node (the ``when`` of the branch's steps or answers with that name, one
step per alternative) and the cause's own conditions hold. Everything that reasons (the
experta rules, the three-valued evaluator) and everything that draws (exports, explain) reads
these steps, so what is drawn is what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .knowledge import Clause, GraphIndex, Knowledge, Text

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Step:
    """One edge ``source -> target`` of a branch, with the clauses under which it holds."""

    id: str
    branch: str
    source: str
    target: str
    answer: str | None
    label: Text | None
    clauses: tuple[Clause, ...] = field(default_factory=tuple)
    #: how many leading clauses come from the answer (the rest are the cause's own)
    inherited: int = 0


def _answer_defs(kn: Knowledge, branch: str) -> dict[tuple[str, str], list[tuple[tuple, Any]]]:
    """(node, answer) -> the distinct alternatives (clauses, label) that define the answer."""
    b = kn.branches[branch]
    out: dict[tuple[str, str], list[tuple[tuple, Any]]] = {}
    for e in b.edges:
        if e.answer is not None and e.when:
            alts = out.setdefault((e.source, e.answer), [])
            if all(tuple(e.when) != w for w, _ in alts):
                alts.append((tuple(e.when), e.label))
    for a in b.answers:
        alts = out.setdefault((a.node, a.answer), [])
        if all(tuple(a.when) != w for w, _ in alts):
            alts.append((tuple(a.when), a.label))
    return out


_STEPS: dict[str, list[Step]] = {}


def build_steps(kn: Knowledge) -> list[Step]:
    """Every step of the knowledge, in a stable order (branch file order, then causes);
    built once per knowledge."""
    key = kn.digest + kn.root
    got = _STEPS.get(key)
    if got is None:
        got = _STEPS[key] = _build_steps(kn)
    return got


def step_map(kn: Knowledge) -> dict[str, Step]:
    """Step id -> step."""
    return {s.id: s for s in build_steps(kn)}


def _build_steps(kn: Knowledge) -> list[Step]:
    out: list[Step] = []
    seen: dict[tuple[str, str], int] = {}

    def sid(src: str, dst: str) -> str:
        n = seen.get((src, dst), 0)
        seen[(src, dst)] = n + 1
        return f"{src}->{dst}" + (f"#{n + 1}" if n else "")

    for b in kn.branches.values():
        for e in b.edges:
            out.append(Step(sid(e.source, e.target), b.id, e.source, e.target, e.answer,
                            e.label, tuple(e.when), len(e.when)))
            # an answer listed again under `answers` is another way the same answer holds
            for a in b.answers:
                if (a.node, a.answer) == (e.source, e.answer) and tuple(a.when) != tuple(e.when):
                    out.append(Step(sid(e.source, e.target), b.id, e.source, e.target, e.answer,
                                    e.label, tuple(a.when), len(a.when)))
        defs = _answer_defs(kn, b.id)
        for c in kn.causes.values():
            if c.branch != b.id:
                continue
            for att in c.under:
                alts = defs.get((att.node, att.answer), []) if att.answer else []
                if not alts:
                    alts = [((), att.label)]
                for when, label in alts:
                    own = tuple(cl for cl in c.conditions if cl not in when)
                    out.append(Step(sid(att.node, c.id), b.id, att.node, c.id, att.answer,
                                    att.label or label, when + own, len(when)))
    return out


_GRAPHS: dict[str, "nx.MultiDiGraph"] = {}


def _graph(kn: Knowledge) -> "nx.MultiDiGraph":
    import networkx as nx  # not on a diagnosis's path: it reads the cached GraphIndex

    g = nx.MultiDiGraph()
    for b in kn.branches.values():
        for n in b.nodes:
            g.add_node(n.id, branch=b.id, kind=n.kind, root=n.kind == "start")
    for c in kn.causes.values():
        g.add_node(c.id, branch=c.branch, kind="cause", root=False)
    for s in build_steps(kn):
        g.add_edge(s.source, s.target, key=s.id, step=s)
    return g


def decision_graph(kn: Knowledge) -> "nx.MultiDiGraph":
    """The decision graph of every branch: nodes are node/cause ids, edges keyed by step id,
    each carrying its :class:`Step` (built once per knowledge)."""
    key = kn.digest + kn.root
    g = _GRAPHS.get(key)
    if g is None:
        g = _GRAPHS[key] = _graph(kn)
    return g


def compute_index(kn: Knowledge) -> GraphIndex:
    """Answer the diagnosis's graph queries with networkx: a topological order, incoming
    steps, ancestors, and depth from the branch root."""
    import networkx as nx

    g = decision_graph(kn)
    depth: dict[str, int] = {}
    for b in kn.branches.values():
        if b.root in g:
            depth.update(nx.single_source_shortest_path_length(g, b.root))
    return GraphIndex(
        order=list(nx.topological_sort(g)),
        into={n: [(u, k) for u, _, k in g.in_edges(n, keys=True)] for n in g},
        ancestors={n: sorted(nx.ancestors(g, n) | {n}) for n in g},
        depth=depth,
        branch={n: g.nodes[n]["branch"] for n in g})


_INDEX: dict[str, GraphIndex] = {}


def graph_index(kn: Knowledge) -> GraphIndex:
    """The knowledge's :class:`GraphIndex`: the cached one, else computed once."""
    if kn.index is not None:
        return kn.index
    key = kn.digest + kn.root
    got = _INDEX.get(key)
    if got is None:
        got = _INDEX[key] = compute_index(kn)
    return got


def clause_facts(clauses: tuple[Clause, ...] | list[Clause]) -> set[str]:
    """Every fact path the clauses test (compared-to facts included)."""
    from .knowledge import iter_conditions

    out: set[str] = set()
    for c in iter_conditions(list(clauses)):
        out.add(c.fact)
        if c.other_fact:
            out.add(c.other_fact)
    return out
