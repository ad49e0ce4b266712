"""The rules of :mod:`engine.rules` compiled into experta and run by its RETE network.

Selected with ``KB_ENGINE=experta``; a differential test (tests/reasoning/test_graph_runs.py)
holds it equal to :class:`engine.rules.GraphRunner` on every example and on random facts.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from typing import Any, Callable

from .compat import experta
from .conditions import evaluate_clause, resolve_value, test
from .knowledge import AnyOf, Clause, Condition, Knowledge
from .rules import RunResult, Spec, rule_specs
from .steps import clause_facts

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
            # a multiple of zero is no reference (see conditions.other_value)
            if isinstance(other, bool) or not isinstance(other, (int, float)) or other == 0:
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


def _reach_action(rule_id: str, node: str) -> Callable[..., None]:
    def action(self: Any) -> None:
        res = self._kb_result
        if node not in res.reached:  # the first path wins; the others add nothing
            res.reached[node] = rule_id
            self.declare(_Reached(node=node))
        res.fired.append(rule_id)

    return action


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


