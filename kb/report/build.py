"""Turn the engine's language-neutral diagnosis into a worded :class:`Report`."""

from __future__ import annotations

import math
from typing import Any

from kb.engine.conditions import base_path, evaluate_clause, for_setup, resolve_value
from kb.words import describe, fmt_value
from kb.engine.diagnosis import CauseResult, ConditionResult, Diagnosis
from typing import TYPE_CHECKING

from kb.facts import facts_model

if TYPE_CHECKING:  # the model is built from the knowledge on first use, not at import
    from pydantic import BaseModel as Facts
from kb.engine.knowledge import Condition, Knowledge
from kb.report.model import (
    Evidence, Finding, FixOut, Hypothesis, NextCheck, PastIncident, Ref, Report, RuledOut,
    VerifyOut,
)
from kb.facts import fact_units
from kb.report.wording import fact_name

MAX_ROWS_EVIDENCE = 6
#: past incidents shown, and the likeness of their words to the user's they need
PAST_INCIDENTS_SHOWN = 3
PAST_INCIDENT_SIMILARITY = 0.25


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return fmt_value(v)
    if isinstance(v, (list, tuple)):
        if len(v) > 16:  # long sample lists: the summaries carry the meaning
            return [_json_safe(x) for x in v[:16]] + ["…"]
        return [_json_safe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    return v


class ReportBuilder:
    """Words a diagnosis in one language, from the knowledge's texts only."""

    def __init__(self, kn: Knowledge, lang: str, overrides: dict[str, float] | None = None):
        self.kn = kn
        self.lang = lang
        self.overrides = overrides or {}
        self.units = fact_units()
        self.rt = kn.report_text

    def t(self, *keys: str) -> Any:
        node: Any = self.rt
        for k in keys:
            node = node[k]
        if isinstance(node, dict) and self.lang in node:
            return node[self.lang]
        return node

    def ref(self, rid: str) -> Ref:
        r = self.kn.references[rid]
        return Ref(id=r.id, title=r.title, url=r.url)

    def evidence_list(self, crs: list[ConditionResult], holds: bool | None = True) -> list[Evidence]:
        """Evidence for the conditions with ``holds``, each (fact, condition) once."""
        out: list[Evidence] = []
        for cr in crs:
            if cr.holds is not holds or cr.fact.startswith("branch."):
                continue
            if holds and cr.op == "missing":
                continue  # "X is not known" is not evidence of anything
            out.append(self.evidence(cr))
        seen: set[tuple[str, str]] = set()
        uniq = []
        for e in out:
            if (e.fact, e.condition) not in seen:
                seen.add((e.fact, e.condition))
                uniq.append(e)
        return uniq

    def evidence(self, cr: ConditionResult) -> Evidence:
        unit = self.units.get(base_path(cr.fact), "")
        return Evidence(fact=cr.fact, value=_json_safe(cr.actual), unit=unit,
                        condition=describe(cr.condition, self.kn, self.lang, self.units,
                                           self.overrides),
                        holds=cr.holds)

    def expect_text(self, cond: Condition) -> str:
        return describe(cond, self.kn, self.lang, self.units, self.overrides)

    def applied(self, fix: Any) -> bool:
        """The facts show this fix already in place (every ``applied_if`` clause holds)."""
        if not fix.applied_if:
            return False
        return all(evaluate_clause(cl, self._flat, self.kn, self.overrides) is True
                   for cl in fix.applied_if)

    def finding(self, r: CauseResult) -> Finding:
        c = self.kn.causes[r.cause_id]
        # one list, so a supporting fact that is also on the path shows once
        ev = self.evidence_list(r.conditions + r.supporting)
        # a fix the facts show already in place is not proposed again (unless it is the only
        # one: then the finding still says what the fix is)
        # nor one written for another setup (vLLM's flag for a llama-server job)
        fitting = [f for f in c.fixes
                   if for_setup(f.when, f.when_known, self._flat, self.kn, self.overrides)] or list(c.fixes)
        todo = [f for f in fitting if not self.applied(f)] or fitting
        fixes = [FixOut(text=f.text.get(self.lang), command=f.command,
                        references=[self.ref(x) for x in f.refs]) for f in todo]
        checks = [v for v in c.verify
                  if for_setup(v.when, v.when_known, self._flat, self.kn, self.overrides)] or list(c.verify)
        verify = [VerifyOut(text=v.text.get(self.lang), command=v.command,
                            expect=self.expect_text(v.expect), fact=v.expect.fact, op=v.expect.op,
                            value=resolve_value(v.expect, self.kn, self.overrides))
                  for v in checks]
        return Finding(cause_id=c.id, branch=c.branch, title=c.title.get(self.lang),
                       symptom=c.symptom.get(self.lang), why=c.why.get(self.lang),
                       confidence=r.confidence, severity=c.severity, evidence=ev, rules=r.rules,
                       path=list(r.path), leads_to=list(r.leads_to), fixes=fixes, verify=verify, references=[self.ref(x) for x in c.references])

    def _because(self, r: CauseResult) -> list[Evidence]:
        """Why a cause is excluded: the conditions of the steps that cut every path to it."""
        return [self.evidence(cr) for cr in r.conditions if cr.holds is False]

    def build(self, d: Diagnosis, facts: Facts, *, warnings: list[str],
              inputs: dict[str, str], kb_version: str, conflicts: bool = False) -> Report:
        self._flat = d.facts
        findings = [self.finding(r) for r in d.confirmed]
        hyps = [Hypothesis(cause_id=r.cause_id, path=list(r.path), branch=r.branch,
                           title=self.kn.causes[r.cause_id].title.get(self.lang),
                           confidence=r.confidence,
                           holding=self.evidence_list(r.conditions),
                           missing=r.missing, evidence=r.evidence, signature=r.signature,
                           mentioned=r.mentioned, said=list(r.said),
                           resemblance=r.resemblance, precedent=r.precedent,
                           reading=r.reading, follows=r.follows)
                for r in d.hypotheses]
        ruled = [RuledOut(cause_id=r.cause_id, branch=r.branch,
                          title=self.kn.causes[r.cause_id].title.get(self.lang),
                          because=self._because(r))
                 for r in d.ruled_out]
        checks = []
        for s in d.next_checks:
            chk = self.kn.checks[s.check_id]
            checks.append(NextCheck(id=chk.id, title=chk.title.get(self.lang),
                                    command=chk.command, look_for=chk.look_for.get(self.lang),
                                    produces=list(chk.produces), separates=s.separates,
                                    health_check=chk.health_check))
        status = d.status
        if conflicts and status != "confirmed":
            status = "inconclusive"
        question = None
        if not d.branches:
            question = self.kn.sop["classify"]["question"][self.lang]
        conclusion = self.conclusion(status, findings, hyps, ruled, checks, d, conflicts, facts)
        return Report(kb_version=kb_version, lang=self.lang, status=status,
                      symptom=facts.symptom, branches=d.branches,
                      branch_reasons={b: list(v) for b, v in sorted(d.branch_reasons.items())},
                      findings=findings,
                      hypotheses=hyps, ruled_out=ruled, next_checks=checks, question=question,
                      conclusion=conclusion, warnings=warnings, inputs=inputs,
                      past_incidents=self.past_incidents(d, findings, hyps))

    @staticmethod
    def past_incidents(d: Diagnosis, findings: list[Finding],
                       hyps: list[Hypothesis]) -> list[PastIncident]:
        """The nearest past incidents with a cause the report shows, that read clearly like
        the words (a real thread to compare with, not a reason)."""
        shown = {f.cause_id for f in findings} | {h.cause_id for h in hyps}
        out = [PastIncident(source=n.source, branch=n.branch, causes=list(n.causes),
                            similarity=n.similarity) for n in d.precedents
               if n.similarity >= PAST_INCIDENT_SIMILARITY and shown & set(n.causes)]
        return out[:PAST_INCIDENTS_SHOWN]

    def conclusion(self, status: str, findings: list[Finding], hyps: list[Hypothesis],
                   ruled: list[RuledOut], checks: list[NextCheck], d: Diagnosis,
                   conflicts: bool, facts: Facts) -> list[str]:
        tmpl = self.t("conclusion", status)
        sep = "、" if self.lang == "zh" else ", "
        first_check = checks[0].command if checks else self.kn.checks[
            self.kn.sop["health_checks"][0]].command
        values: dict[str, Any] = {"check": f"`{first_check}`", "count": len(hyps),
                                  "ruled": len(ruled)}
        if findings:
            f = findings[0]
            shown: dict[str, str] = {}
            for e in f.evidence:
                # measured numbers only: text from the user's artifacts (stack frames, log
                # lines) stays in the evidence column, never in the sentences
                value = _from_json(e.value)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if e.fact not in shown and len(shown) < 2:
                    shown[e.fact] = (f"{fact_name(self.kn, e.fact, self.lang)} = "
                                     f"{fmt_value(_from_json(e.value), e.unit)}")
            ev = sep.join(shown.values())
            if not ev:
                ev = sep.join(e.condition for e in f.evidence[:2])
            more = len(findings) - 1
            fix0 = f.fixes[0]
            # a multi-line command cannot sit in a sentence: name the fix, the table shows it
            fix = f"`{fix0.command}`" if "\n" not in fix0.command.strip() else fix0.text
            values.update(cause=f.title, evidence=ev, fix=fix,
                          verify=f"`{f.verify[0].command}` ({f.verify[0].expect})",
                          others=self.t("others").format(n=more) if more else "")
        elif hyps:
            values.update(cause=hyps[0].title)
        why = "empty"
        if conflicts:
            why = "conflict"
        elif d.branches and status == "inconclusive":
            why = "contradict"
        values["why"] = self.t("inconclusive_why", why)
        if status == "healthy":
            values["checked"] = sep.join(checks_passed(self.kn, facts, d, ruled, self.lang,
                                                       self.overrides)) or self.t("labels", "none")
        return [s.format(**values) for s in tmpl]


def checks_passed(kn: Knowledge, facts: Facts, d: Diagnosis, ruled: list[RuledOut], lang: str,
                  overrides: dict[str, float]) -> list[str]:
    """What a healthy verdict rests on: each branch whose entry measurements were taken and
    did not hold (with the values seen), and each branch in play whose causes were all ruled
    out."""
    from kb.engine.conditions import evaluate, flatten

    flat = flatten(facts.model_dump(mode="python", exclude={"symptom", "symptom_text"}))
    units = fact_units()
    out: list[str] = []
    for b in kn.branches.values():
        n_ruled = sum(1 for r in ruled if r.branch == b.id)
        if b.id in d.branches:
            if n_ruled:
                ruled_n = str(kn.report_text["render"]["ruled_n"][lang]).format(n=n_ruled)
                out.append(f"{b.title.get(lang)} ({ruled_n})")
            continue
        seen = [c for c in b.entry if c.fact in flat and evaluate(c, flat, kn, overrides) is False]
        if seen:
            vals = [f"{fact_name(kn, c.fact, lang)} = {fmt_value(flat[c.fact], units.get(base_path(c.fact), ''))}"
                    for c in seen[:2]]
            out.append(f"{b.title.get(lang)} ({', '.join(vals)})")
    return out


def _from_json(v: Any) -> Any:
    return v
