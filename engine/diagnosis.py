"""From facts to a language-neutral diagnosis: findings, hypotheses, ruled-out causes, checks.

Pipeline: flatten the facts -> run the compiled rules (forward chaining derives branch and
decision facts and confirms causes) -> classify every cause of the branches in play as
confirmed / hypothesis / ruled out with three-valued evaluation -> choose the next checks that
would decide the open hypotheses -> a status.
"""

from __future__ import annotations

from typing import Any, Literal

from dataclasses import dataclass, field

from engine import rules
from engine.conditions import base_path, evaluate, evaluate_clause, flatten
from engine.facts import Facts
from engine.knowledge import SEVERITY_ORDER, AnyOf, Clause, Condition, Knowledge

Status = Literal["confirmed", "hypotheses", "inconclusive", "healthy"]


# Plain dataclasses: these never cross the API boundary (kb.report words them into the
# pydantic Report), and building pydantic models here would only slow a cold start.


@dataclass
class ConditionResult:
    """One condition of a cause, the fact value it saw, and whether it held."""

    fact: str
    op: str
    value: Any
    actual: Any
    holds: bool | None
    condition: Condition
    #: for a derived fact (``decision.*``): the observed conditions that derived its value
    basis: list["ConditionResult"] = field(default_factory=list)


@dataclass
class CauseResult:
    """The state of one cause after reasoning."""

    cause_id: str
    branch: str
    state: Literal["confirmed", "hypothesis", "ruled_out"]
    confidence: float
    severity: str
    conditions: list[ConditionResult]
    supporting: list[ConditionResult] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)


@dataclass
class CheckSuggestion:
    """A check worth running next: what it decides and why."""

    check_id: str
    separates: list[str]
    facts: list[str]
    decides: list[str] = field(default_factory=list)
    health_check: bool = False


@dataclass
class Diagnosis:
    """The engine's answer, before wording and rendering."""

    status: Status
    branches: list[str]
    branch_reasons: dict[str, list[str]]
    results: list[CauseResult]
    next_checks: list[CheckSuggestion]
    facts: dict[str, Any]
    derived: dict[str, Any]
    fired: list[str]

    @property
    def confirmed(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "confirmed"]

    @property
    def hypotheses(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "hypothesis"]

    @property
    def ruled_out(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "ruled_out"]


class Reasoner:
    """A knowledge base compiled once, diagnosing many fact sets."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None) -> None:
        self.kn = kn
        self.overrides = dict(overrides or {})
        self._runner = rules.Runner(kn, self.overrides)
        # which check decides which decision node / produces which fact
        self._node_check: dict[str, str] = {}
        self._edge_facts: dict[str, set[str]] = {}
        self._rule_clauses = {spec[0]: spec[1] for spec in rules.rule_specs(kn)}
        self._entry_paths = {c.fact for b in kn.branches.values() for c in b.entry}
        self._check_produces = {c.id: frozenset(c.produces) for c in kn.checks.values()}
        self._produced_memo: dict[tuple[str, str], bool] = {}
        # distance of each decision node from its branch's start: the graph's own order
        self._depth: dict[str, int] = {}
        for b in kn.branches.values():
            adj: dict[str, list[str]] = {}
            for e in b.edges:
                adj.setdefault(e.source, []).append(e.target)
            frontier = [n.id for n in b.nodes if n.kind == "start"]
            d = 0
            while frontier:
                nxt = []
                for n in frontier:
                    if n not in self._depth:
                        self._depth[n] = d
                        nxt.extend(adj.get(n, []))
                frontier, d = nxt, d + 1
        hc = list(kn.sop.get("health_checks", []))
        self._health_order = {cid: i for i, cid in enumerate(hc)}
        for b in kn.branches.values():
            for node in b.nodes:
                if node.check:
                    self._node_check[node.id] = node.check
            for e in b.edges:
                if e.when:
                    facts = {base_path(f) for c in _conditions(e.when)
                             for f in (c.fact, c.other_fact) if f}
                    self._edge_facts.setdefault(e.source, set()).update(facts)

    def diagnose(self, facts: Facts, extra_branches: dict[str, list[str]] | None = None) -> Diagnosis:
        """Reason over ``facts``. ``extra_branches`` adds branches in play (e.g. from the
        user's own words) with the reasons to show."""
        flat = flatten(facts.model_dump(mode="python", exclude_defaults=False))
        flat.pop("schema_version", None)
        run = self._runner.run(flat)
        known = {**flat, **run.derived}

        branch_reasons: dict[str, list[str]] = {}
        for path, rule_id in run.derived_by.items():
            if path.startswith("branch."):
                branch_reasons.setdefault(path[len("branch."):], []).append(rule_id)
        for b, why in (extra_branches or {}).items():
            if b in self.kn.branches and b not in branch_reasons:
                branch_reasons[b] = list(why)
        confirmed = set(run.confirmed)
        in_play = set(branch_reasons)

        results: list[CauseResult] = []
        for cause in self.kn.causes.values():
            if cause.id not in confirmed and cause.branch not in in_play:
                continue
            results.append(self._cause_result(cause.id, known, confirmed, run))

        results.sort(key=self._rank)
        next_checks = self._next_checks(results, known, in_play)
        status = self._status(results, in_play, facts, flat)
        branches = sorted(in_play | {r.branch for r in results if r.state == "confirmed"},
                          key=lambda b: list(self.kn.branches).index(b))
        return Diagnosis(status=status, branches=branches, branch_reasons=branch_reasons,
                         results=results, next_checks=next_checks, facts=flat,
                         derived=run.derived, fired=run.fired)

    # -- classification ---------------------------------------------------------------------

    def _cond_results(self, clauses: list[Clause], known: dict[str, Any],
                      derived_by: dict[str, str] | None = None) -> list[ConditionResult]:
        out = []
        for cl in clauses:
            conds = cl.any if isinstance(cl, AnyOf) else [cl]
            group = evaluate_clause(cl, known, self.kn, self.overrides)
            for c in conds:
                holds = evaluate(c, known, self.kn, self.overrides)
                if isinstance(cl, AnyOf) and holds is not True and group is True:
                    continue  # an alternative that did not matter
                basis: list[ConditionResult] = []
                rule_id = (derived_by or {}).get(c.fact)
                if rule_id is not None:
                    basis = self._cond_results(self._rule_clauses[rule_id], known, derived_by)
                out.append(ConditionResult(fact=c.fact, op=c.op, value=c.value,
                                           actual=known.get(c.fact), holds=holds, condition=c,
                                           basis=basis))
        return out

    def _cause_result(self, cid: str, known: dict[str, Any], confirmed: set[str],
                      run: rules.RunResult) -> CauseResult:
        cause = self.kn.causes[cid]
        conds = self._cond_results(list(cause.conditions), known, run.derived_by)
        support = self._cond_results(list(cause.supporting), known, run.derived_by)
        groups = [evaluate_clause(cl, known, self.kn, self.overrides) for cl in cause.conditions]
        missing = sorted({f for c in conds if c.holds is None
                          for f in (c.fact, c.condition.other_fact)
                          if f is not None and f not in known})
        if cid in confirmed:
            state = "confirmed"
            true_support = sum(1 for s in support if s.holds is True)
            confidence = 0.6 + 0.4 * true_support / len(support) if support else 0.8
        elif any(g is False for g in groups):
            state, confidence = "ruled_out", 0.0
        else:
            state = "hypothesis"
            confidence = 0.5 * sum(1 for g in groups if g is True) / len(groups)
        chain: list[str] = []
        if state == "confirmed":
            for c in conds:
                by = run.derived_by.get(c.fact)
                if by and by not in chain:
                    chain.append(by)
            chain.append(f"cause:{cid}")
        return CauseResult(cause_id=cid, branch=cause.branch, state=state,
                           confidence=round(confidence, 3), severity=cause.severity,
                           conditions=conds, supporting=support, missing=missing, rules=chain)

    def _rank(self, r: CauseResult) -> tuple:
        state_order = {"confirmed": 0, "hypothesis": 1, "ruled_out": 2}[r.state]
        specificity = sum(1 for c in r.conditions + r.supporting if c.holds is True)
        return (state_order, -self.kn.causes[r.cause_id].priority, -specificity, -r.confidence,
                SEVERITY_ORDER[r.severity], r.cause_id)

    # -- next checks ------------------------------------------------------------------------

    def _open_facts(self, r: CauseResult) -> set[str]:
        """Observable facts that would decide an open hypothesis. An undecided decision node
        is decided by the facts its edges test (``@node`` when its edges test none)."""
        out: set[str] = set()
        for fact in r.missing:
            if fact.startswith("decision."):
                node = fact[len("decision."):]
                edge_facts = self._edge_facts.get(node)
                if edge_facts:
                    out.update(edge_facts)
                else:
                    out.add("@" + node)
            else:
                out.add(base_path(fact))
        return out

    def _produced(self, fact: str, check_id: str) -> bool:
        """Does the check's output give this fact (itself or a parent path)? Memoised: both
        sides come from the knowledge, so the table stays small."""
        key = (check_id, fact)
        hit = self._produced_memo.get(key)
        if hit is None:
            produces = self._check_produces[check_id]
            parts = fact.split(".")
            hit = any(".".join(parts[:i]) in produces for i in range(1, len(parts) + 1))
            self._produced_memo[key] = hit
        return hit

    def _next_checks(self, results: list[CauseResult], known: dict[str, Any],
                     in_play: set[str]) -> list[CheckSuggestion]:
        hyps = [r for r in results if r.state == "hypothesis"]
        only_symptom = not any(not k.startswith(("symptom", "branch.")) for k in known)
        suggestions: list[tuple[tuple, CheckSuggestion]] = []
        open_by_cause = {r.cause_id: self._open_facts(r) for r in hyps}
        confidence = {r.cause_id: r.confidence for r in hyps}
        open_nodes = {f[len("decision."):] for r in hyps for f in r.missing
                      if f.startswith("decision.")}
        for chk in self.kn.checks.values():
            # undecided nodes this check settles: it is their check, or gives their facts
            decides = sorted(n for n in open_nodes if self._node_check.get(n) == chk.id or any(
                self._produced(f, chk.id) for f in self._edge_facts.get(n, ())))
            facts_hit: set[str] = set()
            separates = []
            completes = 0
            likely = 0.0  # the best-supported hypothesis this check speaks to
            for cid, open_facts in open_by_cause.items():
                settled = {f for f in open_facts if (f.startswith("@") and f[1:] in decides)
                           or (not f.startswith("@") and self._produced(f, chk.id))}
                if settled:
                    separates.append(cid)
                    facts_hit |= {f for f in settled if not f.startswith("@")}
                    completes += settled == open_facts
                    likely = max(likely, confidence[cid])
            if not in_play:
                if not chk.health_check:
                    continue
            elif not separates:
                continue
            health_first = 0 if (chk.health_check and (only_symptom or not in_play)) else 1
            key = self._order_key(health_first, completes, likely, len(separates), chk.cost,
                                  self._health_order.get(chk.id, len(self._health_order)),
                                  chk.id, decides)
            suggestions.append((key, CheckSuggestion(
                check_id=chk.id, separates=sorted(separates), facts=sorted(facts_hit),
                decides=decides, health_check=chk.health_check)))
        suggestions.sort(key=lambda kv: kv[0])
        return [s for _, s in suggestions]

    def _order_key(self, health_first: int, completes: int, likely: float, separates: int,
                   cost: int, health_rank: int, check_id: str, decides: list[str]) -> tuple:
        # settle a whole hypothesis first; then separate the most hypotheses; then serve the
        # best-supported one; cheapest first; then the decision graph's own order from its
        # root; the SOP's health-check order last (tests/reasoning/test_chains.py measures it)
        depth = min((self._depth.get(n, 99) for n in decides), default=99)
        return (health_first, -completes, -separates, -likely, cost, depth, health_rank,
                check_id)

    # -- status ------------------------------------------------------------------------------

    def _status(self, results: list[CauseResult], in_play: set[str], facts: Facts,
                flat: dict[str, Any]) -> Status:
        # healthy needs a measurement that could have put a branch in play (an entry fact)
        entry_paths = self._entry_paths
        if any(r.state == "confirmed" for r in results):
            return "confirmed"
        if any(r.state == "hypothesis" for r in results):
            return "hypotheses"
        observed = [k for k in flat if k in entry_paths]
        if not in_play:
            # measurements that put no branch in play are a healthy job; nothing is nothing
            return "healthy" if observed else "inconclusive"
        if facts.symptom is not None or facts.symptom_text:
            # the user reports a problem, yet the facts exclude every known cause
            return "inconclusive"
        return "healthy"


def _conditions(clauses: list[Clause]) -> list[Condition]:
    out: list[Condition] = []
    for cl in clauses:
        out.extend(cl.any if isinstance(cl, AnyOf) else [cl])
    return out
