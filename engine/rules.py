"""The rules of the decision graph, and the runner that fires them as a graph walk.

Rules come from the graph, one per step, so forward chaining is exactly as deep as the graph:

* entry rules: ``Reached(<branch root>)`` when a branch's entry condition holds or the
  symptom names the branch (a branch put in play by the user's words is declared reached);
* step rules: ``Reached(source) & <the step's clauses> => Reached(target)``, for every step
  of :func:`engine.steps.build_steps`, causes included. A cause reached is confirmed.

Each fired rule is a step id (or an entry id): the steps that fired for a confirmed cause are
exactly the edges of its path in the exported graph. :mod:`engine.rete` compiles the same
rules into experta; :class:`GraphRunner` here fires them without building a RETE network, so
a diagnosis does not import experta unless ``KB_ENGINE=experta`` asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .conditions import evaluate_clause
from .evaluate import HOLDS, evaluate_graph
from .knowledge import Clause, Condition, Knowledge
from .steps import build_steps

@dataclass
class RunResult:
    """What the forward chaining produced: reached nodes, and the rule that reached each."""

    reached: dict[str, str] = field(default_factory=dict)
    fired: list[str] = field(default_factory=list)
    #: the graph runner's three-valued state (None from experta), reused by the reasoner
    state: Any = None


Spec = tuple[str, str, list[Clause], str | None, str]  # rule id, branch, clauses, source, target


def rule_specs(kn: Knowledge) -> list[Spec]:
    """Every rule as ``(rule id, branch, clauses, source node or None, target node)``."""
    specs: list[Spec] = []
    for b in kn.branches.values():
        root = b.root
        specs.append((f"entry:{b.id}:symptom", b.id,
                      [Condition(fact="symptom", op="==", value=b.id)], None, root))
        for i, cond in enumerate(b.entry):
            specs.append((f"entry:{b.id}:{i}", b.id, [cond], None, root))
    for s in build_steps(kn):
        specs.append((s.id, s.branch, list(s.clauses), s.source, s.target))
    return specs


class GraphRunner:
    """The same rules, run as a walk of the graph in topological order: every rule whose
    left-hand side holds fires, exactly as experta's forward chaining does, without building
    or resetting a RETE network (a few ms instead of tens). A differential test
    (tests/reasoning/test_graph_runs.py) holds it equal to :class:`Runner` on every example and
    on random facts; ``KB_ENGINE=experta`` runs experta instead."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None) -> None:
        self._kn, self._overrides = kn, overrides
        self._entries = [s for s in rule_specs(kn) if s[3] is None]
        self._branch_of_root = {b.root: b.id for b in kn.branches.values()}

    def run(self, facts: dict[str, Any], roots: set[str] | frozenset[str] = frozenset()
            ) -> RunResult:
        out = RunResult()
        reached_roots = set(roots)
        for rule_id, branch, clauses, _src, target in self._entries:
            if all(evaluate_clause(c, facts, self._kn, self._overrides) is True for c in clauses):
                out.fired.append(rule_id)
                reached_roots.add(target)
                out.reached.setdefault(target, rule_id)
        for r in roots:  # put in play by the user's words, as experta is told
            if r not in out.reached:
                out.reached[r] = f"entry:{self._branch_of_root[r]}:words"
                out.fired.append(out.reached[r])
        state = evaluate_graph(self._kn, facts, reached_roots, self._overrides)
        for n in state.static.order:
            if state.node.get(n) != HOLDS:
                continue
            for u, k, _s in state.static.into[n]:
                if state.step.get(k) == HOLDS and state.node.get(u) == HOLDS:
                    out.fired.append(k)
                    out.reached.setdefault(n, k)
        out.state = state
        return out
