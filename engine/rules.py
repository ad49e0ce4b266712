"""Compile the decision graph into experta rules and run them forward over flattened facts.

Rules come from the graph, one per step, so forward chaining is exactly as deep as the graph:

* entry rules: ``Reached(<branch root>)`` when a branch's entry condition holds or the
  symptom names the branch (a branch put in play by the user's words is declared reached);
* step rules: ``Reached(source) & <the step's clauses> => Reached(target)``, for every step
  of :func:`engine.steps.build_steps`, causes included. A cause reached is confirmed.

Each fired rule is a step id (or an entry id): the steps that fired for a confirmed cause are
exactly the edges of its path in the exported graph.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from .compat import experta
from .conditions import evaluate_clause, resolve_value, test
from .evaluate import HOLDS, evaluate_graph
from .knowledge import AnyOf, Clause, Condition, Knowledge
from .steps import build_steps, clause_facts

Fact = experta.Fact
P = experta.P


class _PathFact(Fact):
    """One known fact: ``path`` and ``value`` (plus the rule that derived it, if any)."""


def _pred(op: str, expected: Any) -> Callable[[Any], bool]:
    def check(actual: Any) -> bool:
        return test(op, actual, expected)

    return check


def _join(cond: Condition, key: str) -> Any:
    """``fact op scale * other``: two facts joined on variables, then a test over both."""
    a, b = f"{key}a", f"{key}b"
    op, scale = cond.op, cond.scale

    def check(**kw: Any) -> bool:
        other = kw[b]
        if scale != 1.0:
            if isinstance(other, bool) or not isinstance(other, (int, float)):
                return False
            other = other * scale
        return test(op, kw[a], other)

    # experta passes bound variables by the test function's parameter names
    check.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in (a, b)])
    return experta.AND(_PathFact(path=cond.fact, value=experta.W(a)),
                       _PathFact(path=cond.other_fact, value=experta.W(b)),
                       experta.TEST(check))


def _pattern(cond: Condition, kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    if cond.other_fact is not None:
        return _join(cond, "j" + hashlib.sha1(repr(cond).encode()).hexdigest()[:10])
    if cond.op == "exists":
        return _PathFact(path=cond.fact)
    if cond.op == "missing":
        return experta.NOT(_PathFact(path=cond.fact))
    return _PathFact(path=cond.fact, value=P(_pred(cond.op, resolve_value(cond, kn, overrides))))


def _clause(cl: Clause, kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    if isinstance(cl, AnyOf):
        return experta.OR(*[_pattern(c, kn, overrides) for c in cl.any])
    return _pattern(cl, kn, overrides)


class _Reached(Fact):
    """A node of the decision graph reached from its branch's root."""


@dataclass
class RunResult:
    """What the forward chaining produced: reached nodes, and the rule that reached each."""

    reached: dict[str, str] = field(default_factory=dict)
    fired: list[str] = field(default_factory=list)
    #: the graph runner's three-valued state (None from experta), reused by the reasoner
    state: Any = None


def _reach_action(rule_id: str, node: str) -> Callable[..., None]:
    def action(self: Any) -> None:
        res = self._kb_result
        if node not in res.reached:  # the first path wins; the others add nothing
            res.reached[node] = rule_id
            self.declare(_Reached(node=node))
        res.fired.append(rule_id)

    return action


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


def _compile(specs: list[Spec], kn: Knowledge, overrides: dict[str, float] | None) -> type:
    attrs: dict[str, Any] = {}
    for n, (rule_id, _branch, clauses, source, target) in enumerate(specs):
        parts = [_clause(c, kn, overrides) for c in clauses]
        if source is not None:
            parts.insert(0, _Reached(node=source))
        if not parts:  # an unconditional entry cannot exist; keep experta's LHS non-empty
            continue
        lhs = experta.AND(*parts) if len(parts) > 1 else parts[0]
        attrs[f"r{n:04d}"] = experta.Rule(lhs)(_reach_action(rule_id, target))
    return type("CompiledKnowledge", (experta.KnowledgeEngine,), attrs)


def compile_engine(kn: Knowledge, overrides: dict[str, float] | None = None) -> type:
    """A KnowledgeEngine subclass holding every rule of the knowledge."""
    return _compile(rule_specs(kn), kn, overrides)


class _Part:
    """The rules of one branch: branches share no derived facts, so each runs alone."""

    def __init__(self, branch: str, specs: list[Spec], kn: Knowledge,
                 overrides: dict[str, float] | None) -> None:
        self.branch, self._specs, self._kn, self._overrides = branch, specs, kn, overrides
        self.root = kn.branches[branch].root
        self._engine: Any = None  # built on first use: most runs touch one or two branches
        self.used = set().union(*(clause_facts(s[2]) for s in specs))
        self._entry = [c for s in specs if s[3] is None for c in s[2]]

    @property
    def engine(self) -> Any:
        if self._engine is None:
            self._engine = _compile(self._specs, self._kn, self._overrides)()
        return self._engine

    def run(self, facts: dict[str, Any], reached: set[str]) -> RunResult:
        relevant = {p: v for p, v in facts.items() if p in self.used}
        if self.root not in reached and not any(
                evaluate_clause(c, relevant, self._kn, self._overrides) is True
                for c in self._entry):
            # the root is reached only by an entry rule: when none holds (they never test
            # `missing`), no rule of the branch can fire, so the engine need not run
            return RunResult()
        eng = self.engine
        eng._kb_result = RunResult()
        eng.reset()
        declared = [_PathFact(path=p, value=v) for p, v in relevant.items()]
        if self.root in reached:
            eng._kb_result.reached[self.root] = f"entry:{self.branch}:words"
            eng._kb_result.fired.append(f"entry:{self.branch}:words")
            declared.append(_Reached(node=self.root))
        if declared:  # one declare call: experta recomputes activations once per call
            eng.declare(*declared)
        eng.run()
        return eng._kb_result


class Runner:
    """The compiled rules, reused across diagnoses: building experta's RETE network is the
    costly part, so each branch's engine is built once and ``reset()`` between runs
    (serialised by a lock)."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None) -> None:
        self._lock = threading.Lock()
        by_branch: dict[str, list[Spec]] = {}
        for spec in rule_specs(kn):
            by_branch.setdefault(spec[1], []).append(spec)
        with self._lock:
            self._parts = [_Part(b, specs, kn, overrides) for b, specs in by_branch.items()]

    def run(self, facts: dict[str, Any], roots: set[str] | frozenset[str] = frozenset()
            ) -> RunResult:
        """Run every branch's rules to a fixed point; ``roots`` are declared reached (a
        branch the user's words put in play)."""
        out = RunResult()
        with self._lock:
            for part in self._parts:
                r = part.run(facts, set(roots))
                out.reached.update(r.reached)
                out.fired.extend(r.fired)
        return out


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
