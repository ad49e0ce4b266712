"""`kb verify`: did the fix work? Compare the facts from before and after a change.

The ``before`` facts are diagnosed; for every confirmed finding each of its verification steps'
``expect`` condition is evaluated over the ``after`` facts (thresholds and overrides applied)
and the metric is shown side by side (before -> after). The cause itself is re-evaluated on
``after``: "no OOM in the log" style checks fall out of the cause no longer being confirmed.

Verdict per finding:

* ``fixed``: every expectation holds and the cause is no longer confirmed;
* ``not_fixed``: an expectation fails, or the cause is still confirmed;
* ``cannot_tell``: the ``after`` facts miss what an expectation measures.

UI-free: the CLI renders a :class:`VerifyResult` (:func:`render`) and maps it to an exit code.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Mapping

from pydantic import BaseModel, Field

from kb.engine.conditions import base_path, evaluate, flatten
from kb.words import fmt_value
from kb.facts import Facts, fact_units
from kb.engine.knowledge import Knowledge
from kb.report.model import SCHEMA_VERSION, Evidence
from kb.report.wording import wording

Verdict = Literal["fixed", "not_fixed", "cannot_tell"]



class MetricCheck(BaseModel):
    """One verification step: the metric before and after, and whether the expectation holds."""

    text: str
    command: str
    fact: str
    unit: str = ""
    before: Any = None
    after: Any = None
    expect: str
    holds: bool | None


class FindingCheck(BaseModel):
    """One finding of the ``before`` facts, re-checked on the ``after`` facts."""

    cause_id: str
    title: str
    verdict: Verdict
    checks: list[MetricCheck]
    #: the cause's state on ``after``: confirmed, hypothesis, ruled_out, or absent (no branch)
    cause_after: Literal["confirmed", "hypothesis", "ruled_out", "absent"]
    #: why the cause is ruled out on ``after`` (the conditions that now fail)
    because: list[Evidence] = Field(default_factory=list)


class VerifyResult(BaseModel):
    """The outcome of ``kb verify``."""

    schema_version: int = SCHEMA_VERSION
    lang: str
    verdict: Verdict
    before_status: str
    after_status: str
    findings: list[FindingCheck]
    warnings: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 all fixed, 1 any not fixed, 3 cannot tell."""
        return {"fixed": 0, "not_fixed": 1, "cannot_tell": 3}[self.verdict]


def _facts(x: Facts | Mapping[str, Any] | str | os.PathLike[str]) -> Facts:
    from kb.api import as_facts

    return as_facts(x)


def _json_safe(v: Any) -> Any:
    from kb.report.build import _json_safe as safe

    return safe(v)


def verify(before: Facts | Mapping[str, Any] | str | os.PathLike[str],
           after: Facts | Mapping[str, Any] | str | os.PathLike[str], *,
           lang: str = "en", knowledge: Knowledge | None = None,
           overrides: Mapping[str, float] | None = None,
           warnings: list[str] | None = None) -> VerifyResult:
    """Compare ``before`` and ``after`` facts for every finding confirmed on ``before``."""
    import kb
    from kb.api import reasoner

    kn = knowledge or kb.load_knowledge()
    ov = reasoner(kn, overrides).overrides
    fb, fa = _facts(before), _facts(after)
    if fa.symptom is None and fa.symptom_text is None:
        # the same job: judge `after` in the branch the user named for `before`
        fa = fa.model_copy(update={"symptom": fb.symptom, "symptom_text": fb.symptom_text})
    rep_b = kb.diagnose(fb, lang=lang, overrides=ov, knowledge=kn)
    rep_a = kb.diagnose(fa, lang=lang, overrides=ov, knowledge=kn)
    flat_b = flatten(fb.model_dump(mode="python"))
    flat_a = flatten(fa.model_dump(mode="python"))
    units = fact_units()
    state_after: dict[str, str] = {}
    for f in rep_a.findings:
        state_after[f.cause_id] = "confirmed"
    for h in rep_a.hypotheses:
        state_after.setdefault(h.cause_id, "hypothesis")
    because: dict[str, list[Evidence]] = {}
    for r in rep_a.ruled_out:
        state_after.setdefault(r.cause_id, "ruled_out")
        because[r.cause_id] = list(r.because)

    out: list[FindingCheck] = []
    for f in rep_b.findings:
        cause = kn.causes[f.cause_id]
        checks = []
        for v, vo in zip(cause.verify, f.verify):
            fact = v.expect.fact
            checks.append(MetricCheck(
                text=vo.text, command=vo.command, fact=fact, unit=units.get(base_path(fact), ""),
                before=_json_safe(flat_b.get(fact)), after=_json_safe(flat_a.get(fact)),
                expect=vo.expect, holds=evaluate(v.expect, flat_a, kn, ov)))
        after_state = state_after.get(f.cause_id, "absent")
        if any(c.holds is False for c in checks) or after_state == "confirmed":
            verdict: Verdict = "not_fixed"
        elif any(c.holds is None for c in checks):
            verdict = "cannot_tell"
        else:
            verdict = "fixed"
        out.append(FindingCheck(cause_id=f.cause_id, title=f.title, verdict=verdict,
                                checks=checks, cause_after=after_state,  # type: ignore[arg-type]
                                because=because.get(f.cause_id, [])))
    warn = list(warnings or [])
    if not out:
        overall: Verdict = "cannot_tell"
        warn.append(wording(kn, "verify", "nothing", lang))
    elif any(x.verdict == "not_fixed" for x in out):
        overall = "not_fixed"
    elif all(x.verdict == "fixed" for x in out):
        overall = "fixed"
    else:
        overall = "cannot_tell"
    return VerifyResult(lang=lang, verdict=overall, before_status=rep_b.status,
                        after_status=rep_a.status, findings=out, warnings=warn)


def render(res: VerifyResult, kn: Knowledge) -> str:
    """The verification as Markdown: one table row per verification step, then verdicts."""
    from kb.report.markdown import cell, code

    lang = res.lang

    def lb(key: str) -> str:
        return wording(kn, "verify", key, lang)

    def val(v: Any, unit: str) -> str:
        return "—" if v is None else cell(fmt_value(v, unit))

    cols = lb("columns").split("|")
    lines = [f"## {lb('title')}", "", f"**{lb('verdict')}:** {lb(res.verdict)}", ""]
    if res.findings:
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "|".join(["---"] * len(cols)) + "|")
        for f in res.findings:
            for c in f.checks:
                holds = lb("unknown") if c.holds is None else lb("yes" if c.holds else "no")
                lines.append(f"| **{cell(f.title)}** ({code(f.cause_id)}) | {cell(c.text)} "
                             f"{code(c.command)} | {code(c.fact)} | {val(c.before, c.unit)} | "
                             f"{val(c.after, c.unit)} | {cell(c.expect)} | {holds} |")
        lines.append("")
        for f in res.findings:
            state = lb(f.cause_after)
            why = ""
            if f.because:
                why = f" ({lb('because')} " + "; ".join(cell(e.condition) for e in f.because) + ")"
            lines.append(f"- {code(f.cause_id, False)}: **{lb(f.verdict)}**. "
                         f"{lb('cause_after')}: {state}{why}")
        lines.append("")
    if res.warnings:
        lines += [f"### {lb('warnings')}", ""] + [f"- {cell(w)}" for w in res.warnings] + [""]
    return "\n".join(lines)
