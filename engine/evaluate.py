"""Three-valued evaluation of the decision graph over facts, and the queries built on it.

Each step holds, fails or is unknown (a fact it needs is missing). A node's value is the best,
over its incoming steps, of the worse of the parent's value and the step's value; a root in
play holds. So a node holds when some path of holding steps reaches it (this is exactly what
the experta rules derive), is unknown when the best path to it has an unknown step but none
failing, and fails when every path to it has a failing step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .conditions import evaluate_clause
from .knowledge import Clause, Knowledge
from .steps import Step, graph_index, step_map

HOLDS, UNKNOWN, FAILS = 2, 1, 0


def clauses_value(clauses: Iterable[Clause], facts: dict[str, Any], kn: Knowledge,
                  overrides: dict[str, float] | None) -> int:
    """AND of clauses, three-valued."""
    out = HOLDS
    for cl in clauses:
        v = evaluate_clause(cl, facts, kn, overrides)
        if v is False:
            return FAILS
        if v is None:
            out = UNKNOWN
    return out


class _Static:
    """What a diagnosis reads of the graph, once per knowledge: the topological order, each
    node's incoming steps and ancestors, from the knowledge's :class:`GraphIndex`."""

    def __init__(self, kn: Knowledge) -> None:
        ix = graph_index(kn)
        steps = step_map(kn)
        self.order = ix.order
        self.into: dict[str, list[tuple[str, str, Step]]] = {
            n: [(u, k, steps[k]) for u, k in edges] for n, edges in ix.into.items()}
        self.ancestors = ix.ancestors
        self.branch = ix.branch

    def upstream(self, node: str) -> list[str]:
        return self.ancestors.get(node, [node])


_STATIC: dict[str, _Static] = {}


def static_of(kn: Knowledge) -> _Static:
    key = kn.digest + kn.root
    st = _STATIC.get(key)
    if st is None:
        st = _STATIC[key] = _Static(kn)
    return st


@dataclass
class GraphState:
    """The value of every node and step of the branches in play, and for each node reached
    or open the best step into it (holding first, then the fewest unknown steps)."""

    roots: set[str]
    node: dict[str, int]
    step: dict[str, int]
    best: dict[str, tuple[str, Step] | None]
    static: _Static

    def value(self, node: str) -> int:
        return self.node.get(node, FAILS)

    def path(self, node: str) -> tuple[list[str], list[Step]]:
        """The best path from a root in play to ``node``: only holding steps when it holds,
        else the one with the fewest unknown steps. Empty when it is ruled out."""
        if self.value(node) == FAILS:
            return [], []
        nodes, steps = [node], []
        cur = node
        while cur not in self.roots:
            prev = self.best.get(cur)
            if prev is None:
                return [], []
            cur, st = prev
            steps.append(st)
            nodes.append(cur)
        return nodes[::-1], steps[::-1]

    def open_steps(self, node: str) -> list[Step]:
        """The unknown steps on the paths that can still reach ``node``: what to measure."""
        up = self.static.upstream(node)
        return [s for n in sorted(up) for u, k, s in self.static.into[n]
                if self.step.get(k) == UNKNOWN and self.value(u) != FAILS
                and self.value(n) != FAILS]

    def failing_steps(self, node: str) -> list[Step]:
        """The failing steps that cut every path to ``node`` (their parent is not itself cut)."""
        up = self.static.upstream(node)
        return [s for n in sorted(up) for u, k, s in self.static.into[n]
                if self.step.get(k) == FAILS and self.value(u) != FAILS]


def evaluate_graph(kn: Knowledge, facts: dict[str, Any], roots: set[str],
                   overrides: dict[str, float] | None = None) -> GraphState:
    """Evaluate the branches whose roots are in ``roots`` (a root in play holds), in the
    graph's topological order; each node keeps its best incoming step for :meth:`path`."""
    st = static_of(kn)
    branches = {st.branch[r] for r in roots}
    node: dict[str, int] = {}
    step: dict[str, int] = {}
    best: dict[str, tuple[str, Step] | None] = {}
    # per node, the cost of its best path: (unknown steps, minus conditional steps that hold),
    # so among equally open paths the one with the most evidence is shown
    cost: dict[str, tuple[int, int]] = {}
    for n in st.order:
        if st.branch[n] not in branches:
            continue
        if n in roots:
            node[n], cost[n], best[n] = HOLDS, (0, 0), None
            continue
        val, here, pick = FAILS, (0, 0), None
        for u, k, s in st.into[n]:
            sv = clauses_value(s.clauses, facts, kn, overrides)
            step[k] = sv
            v = min(node.get(u, FAILS), sv)
            if v == FAILS:
                continue
            cu = cost.get(u, (0, 0))
            c = (cu[0] + (sv == UNKNOWN), cu[1] - (sv == HOLDS and bool(s.clauses)))
            if pick is None or v > val or (v == val and c < here):
                val, here, pick = v, c, (u, s)
        node[n], cost[n], best[n] = val, here, pick
    return GraphState(roots=set(roots), node=node, step=step, best=best, static=st)
