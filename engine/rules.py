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

import hashlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.compat import experta
from engine.conditions import evaluate_clause, resolve_value, test
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
    """Build a KnowledgeEngine subclass whose rules are all the knowledge's rules."""
    return _compile(rule_specs(kn), kn, overrides)


def _compile(specs: list, kn: Knowledge, overrides: dict[str, float] | None) -> type:
    attrs: dict[str, Any] = {}
    for n, (rule_id, clauses, kind, target, value) in enumerate(specs):
        lhs = _lhs(clauses, kn, overrides)
        if kind == "derive":
            action = _derive_action(rule_id, target, value)
            salience = 10  # derive intermediate facts before confirming causes
        else:
            action = _confirm_action(rule_id, target)
            salience = 0
        attrs[f"r{n:04d}"] = experta.Rule(lhs, salience=salience)(action)
    return type("CompiledKnowledge", (experta.KnowledgeEngine,), attrs)


def _spec_paths(clauses: list[Clause]) -> set[str]:
    out: set[str] = set()
    for cl in clauses:
        for c in (cl.any if isinstance(cl, AnyOf) else [cl]):
            out.add(c.fact)
            if c.other_fact:
                out.add(c.other_fact)
    return out


def partitions(kn: Knowledge) -> list[list[tuple[str, list[Clause], str, Any, Any]]]:
    """Rule specs split into independent groups (one per branch, merged where a rule of one
    branch tests a fact derived by another). Each group can run in its own small engine with
    exactly the same outcome, and a group none of whose facts is present need not run."""
    specs = rule_specs(kn)
    owner: dict[str, str] = {}  # derived fact -> branch
    for b in kn.branches.values():
        owner[f"branch.{b.id}"] = b.id
        for n in b.nodes:
            owner[f"decision.{n.id}"] = b.id
    parent = {b: b for b in kn.branches}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def spec_branch(rule_id: str, kind: str, target: Any) -> str:
        if kind == "confirm":
            return kn.causes[target].branch
        return owner.get(target, rule_id.split(":")[1].split(".")[0])

    for rule_id, clauses, kind, target, _value in specs:
        home = spec_branch(rule_id, kind, target)
        for path in _spec_paths(clauses):
            other = owner.get(path)
            if other is not None and find(other) != find(home):
                parent[find(other)] = find(home)
    groups: dict[str, list[tuple[str, list[Clause], str, Any, Any]]] = {}
    for spec in specs:
        groups.setdefault(find(spec_branch(spec[0], spec[2], spec[3])), []).append(spec)
    return [groups[k] for k in sorted(groups)]


class _Part:
    def __init__(self, specs: list, kn: Knowledge, overrides: dict[str, float] | None) -> None:
        self._specs, self._kn, self._overrides = specs, kn, overrides
        self._engine: Any = None  # built on first use: most runs need only one or two parts
        self.used = set().union(*(_spec_paths(s[1]) for s in specs))
        # a fact tested only with `==` against constants matters only when it has one of them
        self.only_eq: dict[str, list[Any]] = {}
        other_ops: set[str] = set()
        for spec in specs:
            for cl in spec[1]:
                for c in (cl.any if isinstance(cl, AnyOf) else [cl]):
                    if c.op == "==" and not (isinstance(c.value, str) and c.value[:1] in "$@"):
                        self.only_eq.setdefault(c.fact, []).append(c.value)
                    else:
                        other_ops.add(c.fact)
                    if c.other_fact:
                        other_ops.add(c.other_fact)
        for path in other_ops:
            self.only_eq.pop(path, None)
        self.empty = self._empty()

    def _empty(self) -> RunResult:
        """What the rules derive from no facts at all (only ``missing`` tests can hold), by
        the same forward chaining done directly: it spares building the RETE network of a
        part that a diagnosis does not touch."""
        out = RunResult()
        changed = True
        while changed:
            changed = False
            for rule_id, clauses, kind, target, value in self._specs:
                if rule_id in out.fired:
                    continue
                if kind == "derive" and target in out.derived:
                    continue
                if all(evaluate_clause(cl, out.derived, self._kn, self._overrides) is True
                       for cl in clauses):
                    out.fired.append(rule_id)
                    if kind == "derive":
                        out.derived[target] = value
                        out.derived_by[target] = rule_id
                    else:
                        out.confirmed.append(target)
                    changed = True
        return out

    @property
    def engine(self) -> Any:
        if self._engine is None:
            self._engine = _compile(self._specs, self._kn, self._overrides)()
        return self._engine

    def _run(self, facts: dict[str, Any]) -> RunResult:
        eng = self.engine
        eng._kb_result = RunResult()
        eng.reset()
        if facts:  # one declare call: experta recomputes activations once per call
            eng.declare(*[_PathFact(path=p, value=v) for p, v in facts.items()])
        eng.run()
        return eng._kb_result

    def run(self, facts: dict[str, Any]) -> RunResult:
        relevant = {p: v for p, v in facts.items() if p in self.used}
        if all(p in self.only_eq and v not in self.only_eq[p] for p, v in relevant.items()):
            e = self.empty
            return RunResult(dict(e.derived), dict(e.derived_by), list(e.confirmed), list(e.fired))
        return self._run(relevant)


class Runner:
    """The compiled rules, reused across diagnoses: building experta's RETE network is the
    costly part, so each partition's engine is built once and ``reset()`` between runs
    (serialised by a lock)."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None) -> None:
        self._lock = threading.Lock()
        with self._lock:
            self._parts = [_Part(specs, kn, overrides) for specs in partitions(kn)]

    def run(self, facts: dict[str, Any]) -> RunResult:
        """Run every partition to a fixed point and merge the results (in a fixed order)."""
        out = RunResult()
        with self._lock:
            for part in self._parts:
                r = part.run(facts)
                out.derived.update(r.derived)
                out.derived_by.update(r.derived_by)
                out.confirmed.extend(r.confirmed)
                out.fired.extend(r.fired)
        return out
