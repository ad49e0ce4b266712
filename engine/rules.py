"""Compile the knowledge into experta rules and run them forward over flattened facts.

Three kinds of rules come out of the knowledge:

* entry rules: ``branch.<id> = true`` when a branch's entry condition holds (or the symptom
  names the branch);
* decision rules: one per decision-graph edge that carries ``when`` conditions; it derives the
  intermediate fact ``decision.<question node> = <answer>``, which later rules can match;
* cause rules: one per cause, the conjunction of its conditions; firing it confirms the cause.

Forward chaining lets a derived fact (GPU idle) enable further rules (dataloader bound).
Each fired rule is recorded so that a finding can show the chain that led to it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.compat import experta
from engine.conditions import resolve_value, test
from engine.knowledge import AnyOf, Clause, Condition, Knowledge

Fact = experta.Fact
P = experta.P


class _PathFact(Fact):
    """One known fact: ``path`` and ``value`` (plus the rule that derived it, if any)."""


@dataclass
class RunResult:
    """What the forward chaining produced."""

    derived: dict[str, Any] = field(default_factory=dict)
    derived_by: dict[str, str] = field(default_factory=dict)
    confirmed: list[str] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)


def _pred(op: str, expected: Any) -> Callable[[Any], bool]:
    def check(actual: Any) -> bool:
        return test(op, actual, expected)

    return check


def _pattern(cond: Condition, kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    if cond.op == "exists":
        return _PathFact(path=cond.fact)
    if cond.op == "missing":
        return experta.NOT(_PathFact(path=cond.fact))
    return _PathFact(path=cond.fact, value=P(_pred(cond.op, resolve_value(cond, kn, overrides))))


def _clause(cl: Clause, kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    if isinstance(cl, AnyOf):
        return experta.OR(*[_pattern(c, kn, overrides) for c in cl.any])
    return _pattern(cl, kn, overrides)


def _lhs(clauses: list[Clause], kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    parts = [_clause(c, kn, overrides) for c in clauses]
    return experta.AND(*parts) if len(parts) > 1 else parts[0]


def _derive_action(rule_id: str, path: str, value: Any) -> Callable[..., None]:
    def action(self: Any) -> None:
        if path not in self._kb_result.derived:  # first answer wins; edges should be exclusive
            self._kb_result.derived[path] = value
            self._kb_result.derived_by[path] = rule_id
            self._kb_result.fired.append(rule_id)
            self.declare(_PathFact(path=path, value=value))

    return action


def _confirm_action(rule_id: str, cause_id: str) -> Callable[..., None]:
    def action(self: Any) -> None:
        self._kb_result.confirmed.append(cause_id)
        self._kb_result.fired.append(rule_id)

    return action


def rule_specs(kn: Knowledge) -> list[tuple[str, list[Clause], str, Any, str]]:
    """Every rule as ``(rule id, clauses, kind, target, value)``; the data behind the engine."""
    specs: list[tuple[str, list[Clause], str, Any, str]] = []
    for b in kn.branches.values():
        specs.append((f"entry:{b.id}:symptom",
                      [Condition(fact="symptom", op="==", value=b.id)], "derive",
                      f"branch.{b.id}", True))
        for i, cond in enumerate(b.entry):
            specs.append((f"entry:{b.id}:{i}", [cond], "derive", f"branch.{b.id}", True))
        for e in b.edges:
            if e.when:
                specs.append((f"edge:{e.source}->{e.target}", list(e.when), "derive",
                              f"decision.{e.source}", e.answer))
    for c in kn.causes.values():
        specs.append((f"cause:{c.id}", list(c.conditions), "confirm", c.id, None))
    return specs


def compile_engine(kn: Knowledge, overrides: dict[str, float] | None = None) -> type:
    """Build a KnowledgeEngine subclass whose rules are the knowledge's rules."""
    attrs: dict[str, Any] = {}
    for n, (rule_id, clauses, kind, target, value) in enumerate(rule_specs(kn)):
        lhs = _lhs(clauses, kn, overrides)
        if kind == "derive":
            action = _derive_action(rule_id, target, value)
            salience = 10  # derive intermediate facts before confirming causes
        else:
            action = _confirm_action(rule_id, target)
            salience = 0
        attrs[f"r{n:04d}"] = experta.Rule(lhs, salience=salience)(action)
    return type("CompiledKnowledge", (experta.KnowledgeEngine,), attrs)


def used_paths(kn: Knowledge) -> set[str]:
    """Fact paths that some rule tests: only these need to enter the rule engine."""
    out: set[str] = set()
    for _rule_id, clauses, _kind, _target, _value in rule_specs(kn):
        for cl in clauses:
            out.update(c.fact for c in (cl.any if isinstance(cl, AnyOf) else [cl]))
    return out


class Runner:
    """One compiled engine, reused: building experta's RETE network is the costly part, so it
    is built once and ``reset()`` between runs (serialised by a lock)."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None) -> None:
        self._engine = compile_engine(kn, overrides)()
        self._used = used_paths(kn)
        self._lock = threading.Lock()

    def run(self, facts: dict[str, Any]) -> RunResult:
        """Declare the facts that rules test and run the rules to a fixed point."""
        with self._lock:
            eng = self._engine
            eng._kb_result = RunResult()
            eng.reset()
            for path, value in facts.items():
                if path in self._used:
                    eng.declare(_PathFact(path=path, value=value))
            eng.run()
            return eng._kb_result
