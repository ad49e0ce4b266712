"""From facts to a language-neutral diagnosis: findings, hypotheses, ruled-out causes, checks.

Pipeline: flatten the facts -> run the compiled rules (forward chaining derives branch and
decision facts and confirms causes) -> classify every cause of the branches in play as
confirmed / hypothesis / ruled out with three-valued evaluation -> choose the next checks that
would decide the open hypotheses -> a status.
"""

from __future__ import annotations

import math
import os

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Literal

from dataclasses import dataclass, field

from pydantic import BaseModel

from . import rules
from .conditions import base_path, evaluate, evaluate_clause, flatten, for_setup, words_void
from .evaluate import FAILS, HOLDS, GraphState, evaluate_graph
from .knowledge import SEVERITY_ORDER, AnyOf, Check, Clause, Condition, Knowledge
from .steps import build_steps, clause_facts, graph_index

if TYPE_CHECKING:
    from .precedents import Near, Precedents

Status = Literal["confirmed", "hypotheses", "inconclusive", "healthy"]

#: below this cosine a text's likeness to a cause's description is noise (vague words share a
#: few common terms with every cause); measured on both corpora: 0.06-0.10 rank alike, 0 lets
#: noise override the prior; a branch no word names opens on a likeness above it (README "How
#: hypotheses are ranked")
MIN_RESEMBLANCE = 0.08
#: where the evidence ties, a hypothesis ranks by log(prior) + RESEMBLANCE_WEIGHT * likeness:
#: the words' likeness to its description weighed against how often it was the cause, not one
#: before the other (a likeness of 0.1, one rarer shared word, outweighs a prior 4.5 times
#: higher, not any prior). Measured on both corpora: 10-20 rank alike and better than either
#: order; likeness first let one shared word override a sevenfold prior
RESEMBLANCE_WEIGHT = 15.0
#: the nearest past cases' vote beside the likeness to the description, in the same units
#: (README "How hypotheses are ranked")
PRECEDENT_WEIGHT = 2.0
#: the past cases' word frequencies per cause (engine.precedents, naive Bayes): their
#: log-likelihood of the words, relative to the best cause and over the square root of the
#: words read, weighs this much in the same units (in a text of 25 known words, about the
#: corpus' median, one word ten times likelier under one cause moves it by 0.23, a third of a
#: doubled prior). Measured leave-one-out on the held-out corpus (README "How hypotheses are
#: ranked"): 0.35 / 0.5 / 0.65 put the right cause first 1120 / 1119 / 1112 times and in the
#: first three 1435 / 1440 / 1438 (of 1848); the log-likelihood summed, as before, at 0.05:
#: 1114 and 1432 (a long text's words outweighed the nearest cases, a short one's counted for
#: little); its mean per word did as well with words but cost files alone up to 8 of the first
#: three
READING_WEIGHT = 0.5
#: the nearest past cases' vote for one branch (their summed cosine over NEAREST) that opens
#: it when nothing else places the words
MIN_PRECEDENT_BRANCH = 0.1


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
    #: the alternatives of one ``any`` clause share it (the clause's alternatives, sorted):
    #: several of them holding are one observation, not several
    group: tuple[tuple[str, str, str], ...] | None = None


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
    #: node ids from the branch's root to the cause (confirmed: the steps that fired)
    path: list[str] = field(default_factory=list)
    #: nodes whose unknown steps could still lead to this hypothesis
    open_nodes: list[str] = field(default_factory=list)
    #: evidence that tells it apart from its open siblings (see ``Reasoner._score``)
    evidence: float = 0.0
    #: one of the cause's message signatures was seen in the inputs
    signature: bool = False
    #: the user's words name this cause
    mentioned: bool = False
    #: how many distinct words of the cause's own the user's text holds (1 or 2: two say more)
    mention_weight: int = 0
    #: answers the user's words give (node=answer) that lead to this cause
    said: list[str] = field(default_factory=list)
    #: confirmed causes this one sets off (its ``leads_to``), for the causal order
    leads_to: list[str] = field(default_factory=list)
    #: how much the user's words read like the cause's own description (0..1; ranking only)
    resemblance: float = 0.0
    #: the vote of the past cases nearest the words that had this cause (0..1; ranking only)
    precedent: float = 0.0
    #: how well this cause's past cases account for the words (naive Bayes log-likelihood,
    #: relative to the best in play: 0 or below; ranking only)
    reading: float = 0.0
    #: the branch of the cause ranked first, when this hypothesis would be its consequence
    #: (an OOM on one rank, then the others waiting in a collective): named second
    follows: str | None = None


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
    #: the past cases whose words read most like the text (engine.precedents), closest first
    precedents: list[Near] = field(default_factory=list)

    @property
    def confirmed(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "confirmed"]

    @property
    def hypotheses(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "hypothesis"]

    @property
    def ruled_out(self) -> list[CauseResult]:
        return [r for r in self.results if r.state == "ruled_out"]


_DIRECTION = {"<": "<", "<=": "<", ">": ">", ">=": ">"}


def _observation(key: tuple) -> tuple:
    """What a held test reads: a test of a fact in one direction reads the same observation
    whatever its threshold (util < 40 % and util < 90 % both read a low utilisation: the
    looser threshold is no evidence of its own); any other test is its own."""
    d = _DIRECTION.get(key[1])
    return key if d is None else (key[0], d)


class Reasoner:
    """A knowledge base compiled once, diagnosing many fact sets."""

    def __init__(self, kn: Knowledge, overrides: dict[str, float] | None = None,
                 engine: str | None = None) -> None:
        self.kn = kn
        self._settings = kn.fact_schema.settings()
        self.overrides = dict(overrides or {})
        # "graph": the rules as a walk of the graph (fast); "experta": the RETE engine. Both
        # run the rules generated from the graph's steps and are held equal by a test.
        self.engine = engine or os.environ.get("KB_ENGINE", "graph")
        if self.engine == "experta":
            from .rete import Runner  # experta only when asked for

            self._runner: Any = Runner(kn, self.overrides)
        else:
            self._runner = rules.GraphRunner(kn, self.overrides)
        index = graph_index(kn)
        self._check_produces = {c.id: frozenset(c.produces) for c in kn.checks.values()}
        self._produced_memo: dict[tuple[str, str], bool] = {}
        self._root_branch = {b.root: b.id for b in kn.branches.values()}
        self._prior = kn.prior()
        self._overlap = kn.overlap()
        # which check decides which node, the facts its outgoing steps test, its depth
        self._node_check: dict[str, str] = {}
        self._edge_facts: dict[str, set[str]] = {}
        self._depth: dict[str, int] = dict(index.depth)
        for b in kn.branches.values():
            for node in b.nodes:
                if node.check:
                    self._node_check[node.id] = node.check
        # node=answer -> the causes below that answer (the user's words may give it)
        below: dict[str, set[str]] = {}
        for st in build_steps(kn):
            facts = {base_path(f) for f in clause_facts(st.clauses)}
            self._edge_facts.setdefault(st.source, set()).update(facts)
            if st.answer:
                below.setdefault(f"{st.source}={st.answer}", set()).add(st.target)
        up = {c: set(index.ancestors.get(c, ())) for c in kn.causes}
        self._below_answer = {key: {c for c, anc in up.items() if targets & anc}
                              for key, targets in below.items()}
        self._like: Any = None
        self._cases: Precedents | None = None  # parsed on the first text
        hc = list(kn.sop.get("health_checks", []))
        self._health_order = {cid: i for i, cid in enumerate(hc)}

    def diagnose(self, facts: BaseModel | dict[str, Any],
                 extra_branches: dict[str, list[str]] | None = None,
                 fallback_branches: Callable[[], dict[str, list[str]]] | None = None,
                 more_text: str = "", like_text: str | None = None,
                 without_precedents: Collection[str] = ()) -> Diagnosis:
        """Reason over ``facts`` (a Facts model or an already flattened dict). ``extra_branches``
        adds branches in play (e.g. from the user's own words) with the reasons to show;
        ``fallback_branches`` gives branches (e.g. named by the artifacts' text) to open only
        when nothing else puts a branch in play and no measurement says the job is healthy;
        it is called only then (reading a text's words is not free). ``more_text`` is other
        text of the inputs (an artifact's prose) read, with the user's words, for how much it
        resembles each cause's description (ties of evidence only); ``like_text``, when given,
        stands for the user's words in that reading (the caller may leave out what the words
        say is not the problem). ``without_precedents``: sources of past cases left out of
        the precedents (a case scored against the corpus that holds it)."""
        if isinstance(facts, dict):
            flat = dict(facts)
            symptom_given = "symptom" in flat or "symptom_text" in flat
        else:
            flat = flatten(facts.model_dump(mode="python", exclude_defaults=False))
            symptom_given = facts.symptom is not None or bool(facts.symptom_text)
        flat.pop("schema_version", None)
        extra = {b: list(v) for b, v in (extra_branches or {}).items() if b in self.kn.branches}
        # a message of a cause seen in the inputs puts its branch in play, like an entry
        seen = [cid for cid in dict.fromkeys(flat.get("signatures") or ())
                if cid in self.kn.causes and self._in_context(cid, flat)]
        for cid in seen:
            extra.setdefault(self.kn.causes[cid].branch, []).append(f"signature:{cid}")
        words_roots = {self.kn.branches[b].root for b in extra}
        run = self._runner.run(flat, words_roots)
        if fallback_branches is not None and not any(
                root in run.reached for root in self._root_branch) and (
                symptom_given or not self._measured(flat)):
            # nothing put a branch in play and no measurement says "healthy": the weaker
            # reasons decide which branch to open (hypotheses only; a cause still needs facts)
            fallback = {b: list(v) for b, v in fallback_branches().items()
                        if b in self.kn.branches}
            if fallback:
                extra = fallback
                run = self._runner.run(flat, {self.kn.branches[b].root for b in extra})
        if not any(root in run.reached for root in self._root_branch) and (
                symptom_given or not self._measured(flat)):
            # still no branch: the facts say what kind of job this is (a serving engine's
            # launch command), and only one kind: its branch opens (hypotheses only; its
            # settings are then the evidence)
            kinds = [b.id for b in self.kn.branches.values() if b.context and all(
                evaluate(c, flat, self.kn, self.overrides) is True for c in b.context)]
            if len(kinds) == 1:
                extra = {kinds[0]: [f"context:{c.fact}" for c in self.kn.branches[kinds[0]].context]}
                run = self._runner.run(flat, {self.kn.branches[kinds[0]].root})
        text = flat.get("symptom_text") if like_text is None else like_text
        # the words, and any other text of the inputs (an artifact's prose) to read like a cause
        text = (text if isinstance(text, str) else "") + ("\n" + more_text if more_text else "")
        like: dict[str, float] | None = None  # the text against every cause, read once
        # the past cases like the text, read once for the branch and the ranking (the module
        # loads only with text: a start without words imports none of it)
        similar = self._precedents().similar(text, without_precedents) if (
            self.kn.precedents and text.strip()) else []
        near: list[Near] = []
        if text.strip() and not any(root in run.reached for root in self._root_branch) and (
                symptom_given or not self._measured(flat)):
            # still no branch: the past cases the text reads like, when most of the nearest
            # are of one branch, open that branch; else the cause whose description it reads
            # clearly like opens its own, if one of those past cases at least was of its branch
            # (a description shares words with texts no real report of its kind resembles: an
            # issue template's "CUDA Version" with a version mismatch); hypotheses only. Past
            # cases first: they are how people describe a problem (README "How hypotheses are
            # ranked")
            like = self._resemblance().scores(text, self.kn.causes)
            near_all = self._precedents().top(similar) if self.kn.precedents else []
            branch = self._precedent_branch(near_all, flat) if near_all else None
            best = self._likest(like)
            if best is not None and self.kn.precedents and not any(
                    n.branch == self.kn.causes[best].branch for n in near_all):
                best = None
            if branch is not None:
                extra = {branch[0]: [f"precedents:{s}" for s in branch[1]]}
                run = self._runner.run(flat, {self.kn.branches[branch[0]].root})
            elif best is not None:
                extra = {self.kn.causes[best].branch: [f"resembles:{best}"]}
                run = self._runner.run(flat, {self.kn.branches[b].root for b in extra})

        branch_reasons: dict[str, list[str]] = {}
        for root, b in self._root_branch.items():
            if root in run.reached:
                why = [r for r in run.fired if r.startswith(f"entry:{b}:") and
                       not r.endswith(":words")]
                branch_reasons[b] = why or list(extra.get(b, []))
        in_play = set(branch_reasons)
        roots = {self.kn.branches[b].root for b in in_play}
        state = run.state if run.state is not None and run.state.roots == roots else \
            evaluate_graph(self.kn, flat, roots, self.overrides)
        known = dict(flat)

        results: list[CauseResult] = []
        for cause in self.kn.causes.values():
            if cause.branch not in in_play:
                continue
            results.append(self._cause_result(cause.id, known, state, run))

        # "mentions" holds a cause once per distinct word of its own that the text holds
        named: dict[str, int] = {}
        for cid in flat.get("mentions") or ():
            named[cid] = named.get(cid, 0) + 1
        said = list(dict.fromkeys(flat.get("said") or ()))
        for r in results:
            r.signature = r.cause_id in seen
            r.mentioned = r.cause_id in named
            r.mention_weight = min(2, named.get(r.cause_id, 0))
            r.said = [k for k in said if r.cause_id in self._below_answer.get(k, ())]
        if text.strip():
            if like is None:
                like = self._resemblance().scores(text, [r.cause_id for r in results])
            for r in results:
                v = like.get(r.cause_id, 0.0)
                r.resemblance = v if v >= MIN_RESEMBLANCE else 0.0
            if self.kn.precedents:
                near = self._precedents().top(similar, known=True)
                votes = self._precedents().votes(near)
                tried = set(flat.get("tried") or ())  # a remedy said to have failed
                for r in results:
                    r.precedent = 0.0 if r.cause_id in tried else votes.get(r.cause_id, 0.0)
                readings = self._precedents().readings(text, [r.cause_id for r in results],
                                                       without_precedents)
                for r in results:
                    r.reading = readings.get(r.cause_id, 0.0)
        self._score(results)
        # among equally supported hypotheses, the branch the inputs name most strongly first:
        # one a measured fact enters, then those the words or messages name, in their order
        order = list(extra)
        # a message a cause's own tool prints names its branch as surely as a measured fact
        entered = {b for b in in_play if any(r.startswith(("entry:", "signature:"))
                                            for r in branch_reasons[b])}
        # (named by a measured fact first, then by more distinct words or messages, then the
        # order they were named in)
        strength = {b: (0, 0, 0) if b in entered else
                    (1, -len(extra.get(b, ())), 1 + order.index(b) if b in order else 0)
                    for b in in_play}
        # a branch named less than half as much as the most named one (a setting's word, "bf16",
        # beside five words of a hang) has its hypotheses after the others, whatever their
        # evidence: its facts are the setup's, not the symptom's
        most = max((len(extra.get(b, ())) for b in in_play), default=0)
        aside = {b for b in in_play if b not in entered and 2 * len(extra.get(b, ())) < most}
        keys = {id(r): (r.state != "confirmed" and r.branch in aside,
                        self._rank(r, strength.get(r.branch, (0, 0, 0)))) for r in results}
        results.sort(key=lambda r: keys[id(r)])
        results = self._spread(results, keys)
        results = self._causal_order(results)
        results = self._chained(results, entered)
        next_checks = self._next_checks(results, known, in_play, state)
        status = self._status(results, in_play, symptom_given, flat)
        # the lead branch is the one of the best-supported cause: artifacts and words decide
        # it together, not the order of the branch files
        lead = list(dict.fromkeys(r.branch for r in results if r.state != "ruled_out"))
        branches = sorted(in_play, key=lambda b: (lead.index(b) if b in lead else len(lead),
                                                  list(self.kn.branches).index(b)))
        derived = {f"branch.{b}": True for b in in_play}
        derived.update({f"reached.{n}": True for n in run.reached})
        return Diagnosis(status=status, branches=branches, branch_reasons=branch_reasons,
                         results=results, next_checks=next_checks, facts=flat,
                         derived=derived, fired=run.fired, precedents=near)

    # -- classification ---------------------------------------------------------------------

    def _measured(self, facts: dict[str, Any]) -> bool:
        """Whether a branch's entry is decided by the facts: a measurement that could have put
        it in play. A setting alone ("--max-model-len 350000" with no KV-cache size to compare
        it to) decides nothing, so it says nothing about health."""
        return any(c.fact in facts and evaluate(c, facts, self.kn, self.overrides) is not None
                   for b in self.kn.branches.values() for c in b.entry)

    def _in_context(self, cid: str, facts: dict[str, Any]) -> bool:
        """Whether a message of ``cid`` counts as evidence here (its ``signature_context``
        holds; an unknown fact does not hold: the message alone cannot tell)."""
        return all(evaluate_clause(c, facts, self.kn, self.overrides) is True
                   for c in self.kn.causes[cid].signature_context)

    def _cond_results(self, clauses: list[Clause] | tuple[Clause, ...],
                      known: dict[str, Any]) -> list[ConditionResult]:
        out = []
        for cl in clauses:
            conds = cl.any if isinstance(cl, AnyOf) else [cl]
            group = evaluate_clause(cl, known, self.kn, self.overrides)
            # an any-clause is named by its alternatives, so the same clause on two causes'
            # paths is the same observation for both
            gid = tuple(sorted((c.fact, c.op, repr(c.value)) for c in conds)) \
                if isinstance(cl, AnyOf) else None
            for c in conds:
                holds = evaluate(c, known, self.kn, self.overrides)
                if isinstance(cl, AnyOf) and holds is not True and group is True:
                    continue  # an alternative that did not matter
                if isinstance(cl, AnyOf) and cl.open_if_false and group is None and holds is False:
                    holds = None  # a clause whose failing says nothing: open, not failed
                out.append(ConditionResult(fact=c.fact, op=c.op, value=c.value,
                                           actual=known.get(c.fact), holds=holds, condition=c,
                                           group=gid))
        return out

    def _cause_result(self, cid: str, known: dict[str, Any], state: GraphState,
                      run: rules.RunResult) -> CauseResult:
        cause = self.kn.causes[cid]
        support = self._cond_results(list(cause.supporting), known)
        val = state.value(cid)
        # the differential test proves experta and the evaluator agree on what holds
        if cid in run.reached:
            nodes, steps = state.path(cid)
            conds = [c for s in steps for c in self._cond_results(s.clauses, known)]
            true_support = sum(1 for x in support if x.holds is True)
            confidence = 0.6 + 0.4 * true_support / len(support) if support else 0.8
            return CauseResult(cause_id=cid, branch=cause.branch, state="confirmed",
                               confidence=round(confidence, 3), severity=cause.severity,
                               conditions=conds, supporting=support, missing=[],
                               rules=[s.id for s in steps], path=nodes)
        if val == FAILS:
            failing = state.failing_steps(cid)
            conds, seen = [], set()
            for s in failing:
                for c in self._cond_results(s.clauses, known):
                    key = (c.fact, c.op, repr(c.value))
                    if c.holds is False and key not in seen:  # one line per excluding fact
                        seen.add(key)
                        conds.append(c)
            return CauseResult(cause_id=cid, branch=cause.branch, state="ruled_out",
                               confidence=0.0, severity=cause.severity, conditions=conds,
                               supporting=support, missing=[], rules=[], path=[])
        nodes, steps = state.path(cid)
        conds = [c for s in steps for c in self._cond_results(s.clauses, known)]
        open_steps = state.open_steps(cid)
        missing = sorted({f for s in open_steps for f in clause_facts(s.clauses)
                          if f not in known})
        decided = sum(1 for s in steps if s.clauses)
        # a step counts when it holds on something observed, not only on facts being absent
        known_steps = sum(1 for s in steps if s.clauses and state.step[s.id] == HOLDS and any(
            c.holds is True and c.op != "missing" for c in self._cond_results(s.clauses, known)))
        confidence = 0.5 * known_steps / decided if decided else 0.0
        return CauseResult(cause_id=cid, branch=cause.branch, state="hypothesis",
                           confidence=round(confidence, 3), severity=cause.severity,
                           conditions=conds, supporting=support, missing=missing, rules=[],
                           path=nodes, open_nodes=sorted({s.source for s in open_steps}))

    def _held(self, r: CauseResult) -> set[tuple]:
        # a fact's absence is no evidence: `missing` tests that hold do not count; nor does a
        # setting (an Ampere GPU lets TF32 be off, it does not say it is) or an enabling condition
        return {((c.fact, c.op, repr(c.value)), c.group) for c in r.conditions + r.supporting
                if c.holds is True and c.op != "missing" and c.fact not in self._settings
                and not c.condition.enabling}

    def _score(self, results: list[CauseResult]) -> None:
        """Each cause's evidence: what holds on its path and in its support, each item weighed
        by how few of its open siblings (same branch) share it (held by all: ~0; its own: 1; a
        sibling's test of the same fact in the same direction shares it),
        a message signature of its own seen in the inputs (2), the user's words naming it (1;
        2 for two words or more) or answering a question on the way to it (1 each), less the
        support that fails."""
        open_by_branch: dict[str, list[set[tuple]]] = {}
        tagged = {id(r): self._held(r) for r in results}
        held = {k: {key for key, _ in v} for k, v in tagged.items()}
        for r in results:
            if r.state != "ruled_out":
                open_by_branch.setdefault(r.branch, []).append({_observation(k) for k in held[id(r)]})
        for r in results:
            sib = open_by_branch.get(r.branch, [])
            n = max(1, len(sib))
            # one observed fact counts once, by its most specific test: three tests of the same
            # value (known, one of a list, equal to) are one observation, not three
            per_fact: dict[str, float] = {}  # by the fact's tests outside any-clauses
            clause_w: dict[tuple[tuple[str, str, str], ...], float] = {}
            clause_facts: dict[tuple[tuple[str, str, str], ...], set[str]] = {}
            for key, gid in tagged[id(r)]:
                seen = _observation(key)
                w = 1 - (sum(1 for h in sib if seen in h) - 1) / n
                if gid is None:
                    per_fact[key[0]] = max(per_fact.get(key[0], 0.0), w)
                else:
                    # the alternatives of one any-clause that hold are one observation ("a NaN
                    # was seen": in the loss, in the count, at a step), which weighs what its
                    # most widely shared form does: a NaN seen is no evidence for one cause
                    # over the next
                    clause_w[gid] = min(clause_w.get(gid, 1.0), w)
                    clause_facts.setdefault(gid, set()).add(key[0])
            # clauses (and plain tests) of one fact are one observation together, worth its
            # most telling clause or test ("the first NaN came from the attention softmax")
            parts: list[tuple[set[str], float]] = []
            for gid, facts in clause_facts.items():
                joined, best = set(facts), clause_w[gid]
                for other in [p for p in parts if p[0] & facts]:
                    joined |= other[0]
                    best = max(best, other[1])
                    parts.remove(other)
                parts.append((joined, best))
            own = sum(max([best] + [per_fact[f] for f in facts if f in per_fact])
                      for facts, best in parts)
            used = set().union(*(facts for facts, _ in parts)) if parts else set()
            own += sum(v for f, v in per_fact.items() if f not in used)
            # support that fails counts against; a fact merely absent (`exists` not met) does
            # not: what was not collected says nothing; nor does a reading of another moment,
            # nor a circumstance that only makes the cause likelier (`risk`)
            against = sum(1 for c in r.supporting if c.holds is False and c.op != "exists"
                          and not (c.condition.snapshot or c.condition.risk))
            r.evidence = round(own - against
                               + 2 * r.signature + r.mention_weight + len(r.said), 3)

    def _likest(self, like: dict[str, float]) -> str | None:
        """The cause whose branch the text reads most like: the branch whose causes together
        (its three likest) resemble the text most, then its likest cause; None when no cause
        reaches the threshold. One cause alone can share two rare words with a short text
        by chance (a table's "bs" and "step"); several siblings rarely do."""
        by_branch: dict[str, list[float]] = {}
        for cid, v in like.items():
            by_branch.setdefault(self.kn.causes[cid].branch, []).append(v)
        by_branch = {b: v for b, v in by_branch.items() if max(v) >= MIN_RESEMBLANCE}
        if not by_branch:
            return None
        branch = max(by_branch, key=lambda b: (round(sum(sorted(by_branch[b])[-3:]), 6),
                                               -list(self.kn.branches).index(b)))
        return max((c for c in like if self.kn.causes[c].branch == branch and
                    like[c] >= MIN_RESEMBLANCE), key=lambda c: (like[c], c))

    def _resemblance(self) -> Any:
        if self._like is None:
            from .resemblance import for_knowledge  # built once, on the first text

            self._like = for_knowledge(self.kn)
        return self._like

    def _precedent_branch(self, near: list[Near],
                          flat: dict[str, Any]) -> tuple[str, list[str]] | None:
        """The branch most of the past cases ``near`` the text were of, with their sources:
        None unless its vote reaches :data:`MIN_PRECEDENT_BRANCH` and at least half of the
        nearest cases are of it. Never a branch the stated setup rules out for words (its
        ``words_void_when``: "it hangs" on one GPU is no collective's hang)."""
        votes = {b: v for b, v in self._precedents().branch_votes(near).items()
                 if b in self.kn.branches and not words_void(b, flat, self.kn, self.overrides)}
        if not votes:
            return None
        branch = max(votes, key=lambda b: (votes[b], -list(self.kn.branches).index(b)))
        of = [n.source for n in near if n.branch == branch]
        if votes[branch] < MIN_PRECEDENT_BRANCH or 2 * len(of) < len(near):
            return None
        return branch, of[:3]

    def _precedents(self) -> Precedents:
        if self._cases is None:  # parsed once, on the first text (callers check kn.precedents)
            from .precedents import Precedents

            self._cases = Precedents(self.kn.precedents or "")
        return self._cases

    def _rank(self, r: CauseResult, branch_strength: tuple[int, int, int] = (0, 0, 0)) -> tuple:
        state_order = {"confirmed": 0, "hypothesis": 1, "ruled_out": 2}[r.state]
        cause = self.kn.causes[r.cause_id]
        if r.state == "confirmed":  # confirmed: the knowledge's priority, then the evidence
            return (state_order, -cause.priority, -r.evidence, -r.confidence,
                    SEVERITY_ORDER[r.severity], r.cause_id)
        # hypotheses: those of a branch a measured fact entered first (an OOM in the log leads
        # a serving engine only the words name); then the evidence
        seeded = 0 if cause.seed != "beyond-seed" else 1
        # when the evidence ties: the branch the inputs name with more words, then the prior
        # (how often the cause was behind its branch's incidents) and the likeness of the words
        # to the cause's description and to past incidents together; only then how much of the
        # path already holds (the path's conditions are in the evidence already: a cause deep
        # under generic steps, "a NaN was seen", is no likelier for them), then the order the
        # branches were named in, the SOP's own causes before additions beyond it, priority
        return (state_order, branch_strength[0], -r.evidence, branch_strength[:2],
                -round(self._likely(r), 9), -r.confidence, branch_strength[2], seeded,
                -cause.priority, SEVERITY_ORDER[r.severity], r.cause_id)

    def _likely(self, r: CauseResult, prior: float | None = None) -> float:
        return math.log(self._prior[r.cause_id] if prior is None else prior) + \
            RESEMBLANCE_WEIGHT * (r.resemblance + PRECEDENT_WEIGHT * r.precedent) + \
            READING_WEIGHT * r.reading

    def _spread(self, results: list[CauseResult], keys: dict[int, tuple]) -> list[CauseResult]:
        """Hypotheses of equal evidence, each in turn the one that adds the most to those ranked
        above it: a cause usually accepted together with one already above (observed.yaml
        ``together``) keeps only the share of its prior where that one was not the answer, so
        the first few cover as many past answers as they can."""
        if not self._overlap:
            return results
        out: list[CauseResult] = []
        i = 0
        while i < len(results):
            # the block of hypotheses that tie up to the prior (the key's first four places)
            head = keys[id(results[i])]
            j = i + 1
            while j < len(results) and keys[id(results[j])][:1] + keys[id(results[j])][1][:4] \
                    == head[:1] + head[1][:4]:
                j += 1
            block = results[i:j]
            while block:
                if len(block) > 1 and block[0].state == "hypothesis":
                    above = [r.cause_id for r in out if r.state != "ruled_out"]
                    best = max(range(len(block)), key=lambda k: (self._added(block[k], above), -k))
                else:
                    best = 0
                out.append(block.pop(best))
            i = j
        return out

    def _added(self, r: CauseResult, above: list[str]) -> float:
        """How likely r is the answer where none of ``above`` was: its prior less the share it
        was accepted together with them (never below a tenth of it)."""
        share = sum(self._overlap.get((r.cause_id, a), 0.0) for a in above)
        return self._likely(r, self._prior[r.cause_id] * max(1.0 - share, 0.1))

    def _leads(self, a: CauseResult, b: CauseResult) -> bool:
        targets = self.kn.causes[a.cause_id].leads_to
        return b.cause_id in targets or f"branch:{b.branch}" in targets

    def _causal_order(self, results: list[CauseResult]) -> list[CauseResult]:
        """Confirmed causes in causal order: one that sets off another comes first, and each
        knows what it explains (a chain across branches, e.g. OOM -> collective timeout)."""
        conf = [r for r in results if r.state == "confirmed"]
        for a in conf:
            a.leads_to = [b.cause_id for b in conf if b is not a and self._leads(a, b)]
        if not any(a.leads_to for a in conf):
            return results
        import networkx as nx  # only for a chain of confirmed causes

        g = nx.DiGraph()
        g.add_nodes_from(range(len(conf)))
        g.add_edges_from((i, j) for i, a in enumerate(conf) for j, b in enumerate(conf)
                         if i != j and b.cause_id in a.leads_to)
        if not nx.is_directed_acyclic_graph(g):
            return results  # a cycle in the knowledge's chains: keep the evidence order
        order = list(nx.lexicographical_topological_sort(g, key=lambda i: i))
        return [conf[i] for i in order] + [r for r in results if r.state != "confirmed"]

    def _chained(self, results: list[CauseResult], entered: set[str]) -> list[CauseResult]:
        """The first cause, of a branch a fact or a message entered, followed at once by the
        best hypothesis of a branch only the words name when the first leads to it: an OOM in
        the log beside "it hangs" on eight GPUs is one rank's OOM that left the others waiting,
        both named, in causal order (a branch after all eleven OOM hypotheses is not named)."""
        live = [r for r in results if r.state != "ruled_out"]
        if len(live) < 2 or live[0].branch not in entered:
            return results
        first = live[0]
        # which cause of the first branch it is may still be open: any that ties with it on
        # the evidence and leads on (a cause the evidence put ahead speaks for itself: vLLM's
        # KV cache too small for max_model_len stops one engine, it leaves no rank waiting)
        targets = {t for r in live if r.branch == first.branch and r.state == first.state
                   and r.evidence == first.evidence for t in self.kn.causes[r.cause_id].leads_to}
        follow = next((r for r in live[1:] if r.state == "hypothesis" and r.branch != first.branch
                       and r.branch not in entered
                       and (r.cause_id in targets or f"branch:{r.branch}" in targets)), None)
        if follow is None:
            return results
        follow.follows = first.branch
        if live[1] is follow:
            return results
        rest = [r for r in results if r is not first and r is not follow]
        return [first, follow] + rest

    # -- next checks ------------------------------------------------------------------------

    def _open_facts(self, r: CauseResult) -> set[str]:
        """Observable facts that would decide an open hypothesis: those its unknown steps test."""
        return {base_path(f) for f in r.missing}

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

    def _frontier(self, r: CauseResult, state: GraphState, known: dict[str, Any]
                  ) -> tuple[set[str], set[str]]:
        """The questions to ask now for a hypothesis: its unknown steps whose parent is
        reached, as (their source nodes, the unknown facts they test)."""
        nodes: set[str] = set()
        facts: set[str] = set()
        for st in state.open_steps(r.cause_id):
            if state.value(st.source) == HOLDS:
                nodes.add(st.source)
                facts |= {base_path(f) for f in clause_facts(st.clauses) if f not in known}
        return nodes, facts

    def _next_checks(self, results: list[CauseResult], known: dict[str, Any],
                     in_play: set[str], state: GraphState | None = None) -> list[CheckSuggestion]:
        hyps = [r for r in results if r.state == "hypothesis"]
        frontier = {r.cause_id: self._frontier(r, state, known) for r in hyps} if state else {}
        only_symptom = not any(not k.startswith(("symptom", "branch.")) for k in known)
        suggestions: list[tuple[tuple, CheckSuggestion]] = []
        open_by_cause = {r.cause_id: self._open_facts(r) for r in hyps}
        confidence = {r.cause_id: r.confidence for r in hyps}
        open_nodes = {n for r in hyps for n in r.open_nodes}
        for chk in self.kn.checks.values():
            if known.get(f"tools.{chk.id}.status") == "ok":
                continue  # it ran: what it could tell is already in the facts
            if chk.when and not self._for_setup(chk, known):
                continue  # a command for another setup (vLLM's flags on an Ollama server)
            # undecided nodes this check settles: it is their check, or gives their facts
            decides = sorted(n for n in open_nodes if self._node_check.get(n) == chk.id or any(
                self._produced(f, chk.id) for f in self._edge_facts.get(n, ())))
            facts_hit: set[str] = set()
            separates = []
            completes = 0
            likely = 0.0  # the best-supported hypothesis this check speaks to
            # hypotheses whose next question (a step out of a reached node) this check decides
            asks_now = sum(1 for f_nodes, f_facts in frontier.values() if any(
                self._node_check.get(n) == chk.id for n in f_nodes) or any(
                self._produced(f, chk.id) for f in f_facts))
            for cid, open_facts in open_by_cause.items():
                settled = {f for f in open_facts if self._produced(f, chk.id)}
                if settled:
                    separates.append(cid)
                    facts_hit |= settled
                    completes += settled == open_facts
                    likely = max(likely, confidence[cid])
            if not in_play:
                if not chk.health_check:
                    continue
            elif not separates:
                continue
            health_first = 0 if (chk.health_check and (only_symptom or not in_play)) else 1
            key = self._order_key(health_first, asks_now, completes, likely, len(separates),
                                  chk.cost,
                                  self._health_order.get(chk.id, len(self._health_order)),
                                  chk.id, decides)
            suggestions.append((key, CheckSuggestion(
                check_id=chk.id, separates=sorted(separates), facts=sorted(facts_hit),
                decides=decides, health_check=chk.health_check)))
        suggestions.sort(key=lambda kv: kv[0])
        return [s for _, s in suggestions]

    def _for_setup(self, chk: Check, known: dict[str, Any]) -> bool:
        return for_setup(chk.when, chk.when_known, known, self.kn, self.overrides)

    def _order_key(self, health_first: int, asks_now: int, completes: int, likely: float,
                   separates: int, cost: int, health_rank: int, check_id: str,
                   decides: list[str]) -> tuple:
        # walk the graph: first the check that answers the question now open for the most
        # hypotheses (a step out of a reached node); then one that settles a whole
        # hypothesis; then the most hypotheses touched; the best-supported; the cheapest;
        # the graph's own depth; the SOP's health-check order (tests/reasoning/test_chains.py)
        depth = min((self._depth.get(n, 99) for n in decides), default=99)
        return (health_first, -asks_now, -completes, -separates, -likely, cost, depth,
                health_rank, check_id)

    # -- status ------------------------------------------------------------------------------

    def _status(self, results: list[CauseResult], in_play: set[str], symptom_given: bool,
                flat: dict[str, Any]) -> Status:
        if any(r.state == "confirmed" for r in results):
            return "confirmed"
        if any(r.state == "hypothesis" for r in results):
            return "hypotheses"
        if not in_play:
            # measurements that put no branch in play are a healthy job; nothing is nothing
            return "healthy" if self._measured(flat) else "inconclusive"
        if symptom_given:
            # the user reports a problem, yet the facts exclude every known cause
            return "inconclusive"
        return "healthy"
