"""Render a :class:`Report` as Markdown: the six-column table, then three sentences."""

from __future__ import annotations

from typing import Any

from engine.conditions import fmt_value
from engine.knowledge import Knowledge
from kb.report.model import Report


def cell(text: str, in_table: bool = True) -> str:
    """Make text safe on one line; inside a table cell, pipes are escaped (GFM requires it
    even inside code spans)."""
    flat = " ".join(str(text).split())
    return flat.replace("|", "\\|") if in_table else flat


def code(text: str, in_table: bool = True) -> str:
    # a backtick inside a command would end the code span early: use a longer fence
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{cell(text, in_table)}{pad}{fence}"


def _ev(e: Any, fails: str = "") -> str:
    """One piece of evidence; ``fails`` words a condition that did not hold."""
    text = cell(e.condition) if e.holds is not False or not fails else f"{fails} {cell(e.condition)}"
    if e.fact.startswith("decision."):
        return text
    return f"{text} ({code(e.fact)} = {cell(fmt_value(e.value, e.unit))})"


def render(report: Report, kn: Knowledge) -> str:
    """The full Markdown report."""
    lang = report.lang
    rt = kn.report_text

    def t(*keys: str) -> str:
        node: Any = rt
        for k in keys:
            node = node[k]
        return node[lang]

    lines: list[str] = []
    lines.append(f"## {t('headings', 'findings')}")
    lines.append("")
    lines.append(f"**{t('headings', 'status')}:** {t('status', report.status)}")
    lines.append("")
    cols = rt["columns"][lang]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "|".join(["---"] * len(cols)) + "|")
    for f in report.findings:
        evidence = "<br>".join(_ev(e) for e in f.evidence[:6])
        fixes = "<br>".join(f"{cell(x.text)} {code(x.command)}" for x in f.fixes)
        verify = "<br>".join(f"{cell(v.text)} {code(v.command)}" for v in f.verify)
        refs = "<br>".join(f"[{cell(r.title)}]({r.url})" for r in f.references)
        sev = t("severity", f.severity)
        cause = f"**{cell(f.title)}** ({code(f.cause_id)}; {sev}; {t('labels', 'confidence')} {f.confidence:.2f})"
        lines.append(f"| {cell(f.symptom)} | {cause} | {evidence} | {fixes} | {verify} | {refs} |")
    if not report.findings:
        dash = "—"
        lines.append("| " + " | ".join([dash] * len(cols)) + " |")
    lines.append("")
    if report.question:
        lines.append(f"**{t('headings', 'question')}:** {cell(report.question)}")
        lines.append("")
    colon, semi, period, comma = (t("punct", k) for k in ("colon", "semicolon", "period", "list"))
    if report.hypotheses:
        lines.append(f"### {t('headings', 'hypotheses')}")
        lines.append("")
        for h in report.hypotheses:
            miss = comma.join(code(m, False) for m in h.missing) or t("labels", "none")
            lines.append(f"- **{cell(h.title, False)}** ({code(h.cause_id, False)}){colon}"
                         f"{t('labels', 'missing')}{colon}{miss}")
        lines.append("")
    if report.ruled_out:
        lines.append(f"### {t('headings', 'ruled_out')}")
        lines.append("")
        for r in report.ruled_out:
            why = semi.join(_ev(e, t("labels", "fails")) for e in r.because)
            lines.append(f"- **{cell(r.title, False)}** ({code(r.cause_id, False)}){colon}"
                         f"{t('labels', 'because')} {why}")
        lines.append("")
    if report.next_checks:
        lines.append(f"### {t('headings', 'next_checks')}")
        lines.append("")
        for i, c in enumerate(report.next_checks[:8], 1):
            sep = comma.join(code(s, False) for s in c.separates)
            tail = f"{semi}{t('labels', 'separates')}{colon}{sep}" if sep else ""
            lines.append(f"{i}. {code(c.command, False)} — {cell(c.title, False)}{period}"
                         f"{t('labels', 'look_for')}{colon}{cell(c.look_for, False)}{tail}")
        lines.append("")
    if report.warnings:
        lines.append(f"### {t('headings', 'warnings')}")
        lines.append("")
        for w in report.warnings:
            lines.append(f"- {cell(w)}")
        lines.append("")
    lines.append(f"### {t('headings', 'conclusion')}")
    lines.append("")
    joiner = "" if lang == "zh" else " "
    lines.append(joiner.join(report.conclusion))
    lines.append("")
    return "\n".join(lines)
