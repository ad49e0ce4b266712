"""Render a :class:`Report` as Markdown: the six-column table, then the other sections and the
three-sentence conclusion.

Everything that comes from the knowledge or the user's artifacts is escaped (:func:`esc`), so a
function name like ``__init__`` or a frame like ``<module>`` is shown as it is, not as markup.
Commands are shown verbatim: one-line commands as code spans in the table (``|`` escaped there
only, as GFM requires even inside code spans), multi-line ones in fenced blocks below the
table, next checks in fenced blocks, so every command can be copied and run as printed.
"""

from __future__ import annotations

import re
from typing import Any

from kb.words import fmt_value
from kb.engine.knowledge import Knowledge
from kb.report.model import Finding, Report
from kb.report.wording import fact_name, label, path_labels

#: a value longer than this is cut in a table cell (a list of 64 rank states is not evidence)
MAX_VALUE_CHARS = 60
# ASCII punctuation that can start or end markup inline (CommonMark §2.4 allows escaping it)
_ALWAYS = set("\\`*[]<>|~")
_ENTITY = re.compile(r"&(#\d+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


def esc_prose(sentence: str) -> str:
    """A sentence with ``code`` spans: the prose escaped with :func:`esc`, the spans kept."""
    import re

    def prose(p: str) -> str:  # esc() trims; keep the spaces around the code spans
        lead = " " if p[:1].isspace() else ""
        tail = " " if p[-1:].isspace() and p.strip() else ""
        return lead + esc(p) + tail

    parts = re.split(r"(`[^`\n]+`)", sentence)
    return "".join(p if i % 2 else prose(p) for i, p in enumerate(parts))


def esc(text: Any, in_table: bool = True) -> str:
    """Plain text made safe for Markdown on one line: markup characters are backslash-escaped,
    entity-like ``&name;`` too, whitespace (newlines included) collapses to one space.
    ``in_table`` is kept for callers; pipes are escaped everywhere (harmless outside tables)."""
    flat = " ".join(str(text).split())
    out: list[str] = []
    for i, ch in enumerate(flat):
        if ch in _ALWAYS:
            out.append("\\" + ch)
        elif ch == "_":
            # an underscore between two letters or digits cannot open emphasis: keep it plain
            left = flat[i - 1] if i else " "
            right = flat[i + 1] if i + 1 < len(flat) else " "
            out.append("_" if left.isalnum() and right.isalnum() else "\\_")
        else:
            out.append(ch)
    return _ENTITY.sub(lambda m: "\\" + m.group(0), "".join(out))


def cell(text: str, in_table: bool = True) -> str:
    """Make text safe on one line; inside a table cell, pipes are escaped (GFM requires it
    even inside code spans). Kept for callers that build their own tables (kb verify)."""
    flat = " ".join(str(text).split())
    return flat.replace("|", "\\|") if in_table else flat


def code(text: str, in_table: bool = True) -> str:
    """An inline code span holding ``text`` verbatim (for one-line text)."""
    # a backtick inside a command would end the code span early: use a longer fence
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.strip()) else ""
    # verbatim: runs of spaces are kept (a code span preserves them); only line breaks go
    body = text.replace("\r", " ").replace("\n", " ")
    return f"{fence}{pad}{body.replace('|', chr(92) + '|') if in_table else body}{pad}{fence}"


def fenced(command: str, indent: str = "") -> list[str]:
    """A fenced code block holding ``command`` verbatim (longer fence if it holds backticks)."""
    longest = max((len(m) for m in re.findall(r"`{3,}", command)), default=2)
    fence = "`" * (longest + 1)
    lang = "python" if is_python(command) else "bash"
    return ([f"{indent}{fence}{lang}"] + [f"{indent}{line}" for line in command.rstrip("\n").split("\n")]
            + [f"{indent}{fence}"])


def is_python(command: str) -> bool:
    """Whether a command is Python source rather than a shell line (for the fence's language)."""
    import ast

    first = command.strip().split("\n")[0]
    if re.match(r"^[A-Za-z_]\w*=\S", first) and "\n" not in command.strip():
        return False  # NAME=value ... is a shell assignment / env prefix
    import warnings

    try:
        with warnings.catch_warnings():  # a shell line's "\(" is an invalid Python escape
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            ast.parse(command)
    except SyntaxError:
        return False
    # `nvidia-smi -q` parses as a Python expression; a Python command has a call or a statement
    return bool(re.search(r"\w\(|^\s*(import|from|with|for|def|if)\b|\w\s*=\s*\w", command, re.M))


def inline_ok(command: str) -> bool:
    """A command that can sit in a table cell: one line, nothing that must stay verbatim."""
    return "\n" not in command.strip() and "\r" not in command


def short_value(value: Any, unit: str = "", limit: int = MAX_VALUE_CHARS) -> str:
    """A fact value for a report line: lists of records counted, long values cut."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return f"[{len(value)} × …]"
    text = fmt_value(value, unit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def evidence_text(e: Any, kn: Knowledge, lang: str, fails: str = "") -> str:
    """One piece of evidence: the condition, then the fact's user-facing name and value."""
    text = esc(e.condition)
    if e.holds is False and fails:
        text = f"{fails} {text}"
    return f"{text} ({esc(fact_name(kn, e.fact, lang))} = {esc(short_value(e.value, e.unit))})"


def missing_text(path: str, kn: Knowledge, lang: str) -> str:
    """A missing fact as the user can supply it: its name and its path in the facts file."""
    name = esc(fact_name(kn, path, lang))
    return name if name == esc(path) else f"{name} ({code(path, False)})"


def finding_path(f: Finding) -> list[str]:
    """The decision path of a finding (node ids), when the report carries one."""
    path = getattr(f, "path", None)
    return list(path) if isinstance(path, list) else []


def split_llm(markdown: str, heading: str) -> tuple[str, str]:
    """An LLM answer -> (its table part, its conclusion text) at the conclusion heading."""
    lines = markdown.strip().split("\n")
    for i, line in enumerate(lines):
        if line.lstrip("#").strip() == heading and line.startswith("#"):
            return "\n".join(lines[:i]).strip(), "\n".join(lines[i + 1:]).strip()
    return markdown.strip(), ""


def render(report: Report, kn: Knowledge) -> str:
    """The full Markdown report. With an accepted LLM answer (``report.markdown``), its table
    and conclusion replace the deterministic ones; every other section stays."""
    lang = report.lang
    rt = kn.report_text

    def t(*keys: str) -> str:
        node: Any = rt
        for k in keys:
            node = node[k]
        return node[lang]

    llm_table, llm_conclusion = ("", "")
    if report.markdown:
        llm_table, llm_conclusion = split_llm(report.markdown, t("headings", "conclusion"))
    colon, semi, period, comma = (t("punct", k) for k in ("colon", "semicolon", "period", "list"))
    lines: list[str] = []
    lines.append(f"## {t('headings', 'findings')}")
    lines.append("")
    lines.append(f"**{t('headings', 'status')}:** {t('status', report.status)}")
    lines.append("")
    below: list[tuple[str, str, str]] = []  # (finding title, text, command) shown under the table
    if llm_table:
        lines.append(llm_table)
    else:
        cols = rt["columns"][lang]
        lines.append("| " + " | ".join(esc(c) for c in cols) + " |")
        lines.append("|" + "|".join(["---"] * len(cols)) + "|")
        for f in report.findings:
            def cmd(text: str, command: str) -> str:
                if inline_ok(command):
                    return f"{esc(text)} {code(command.strip())}"
                below.append((f.title, text, command))
                return f"{esc(text)} ({esc(label(kn, 'code_below', lang))})"

            evidence = "<br>".join(evidence_text(e, kn, lang) for e in f.evidence[:6])
            fixes = "<br>".join(cmd(x.text, x.command) for x in f.fixes)
            verify = "<br>".join(cmd(v.text, v.command) for v in f.verify)
            refs = "<br>".join(f"[{esc(r.title)}]({r.url})" for r in f.references)
            sev = t("severity", f.severity)
            cause = (f"**{esc(f.title)}** ({code(f.cause_id)}; {sev}; "
                     f"{t('labels', 'confidence')} {f.confidence:.2f})")
            lines.append(f"| {esc(f.symptom)} | {cause} | {evidence} | {fixes} | {verify} | {refs} |")
        if not report.findings:
            lines.append("| " + " | ".join(["—"] * len(cols)) + " |")
    lines.append("")
    for title, text, command in below:
        lines.append(f"**{esc(title)}**{colon}{esc(text)}")
        lines.append("")
        lines.extend(fenced(command))
        lines.append("")
    paths = [(f, finding_path(f)) for f in report.findings]
    if any(p for _, p in paths):
        lines.append(f"### {label(kn, 'path', lang)}")
        lines.append("")
        for f, p in paths:
            if p:
                steps = " → ".join(esc(x) for x in path_labels(kn, p, lang))
                lines.append(f"- **{esc(f.title)}**{colon}{steps}")
        lines.append("")
    if report.question:
        lines.append(f"**{t('headings', 'question')}:** {esc(report.question)}")
        lines.append("")
    settles = settled_by(report)
    if report.hypotheses:
        lines.append(f"### {t('headings', 'hypotheses')}")
        lines.append("")
        for h in report.hypotheses:
            miss = comma.join(missing_text(m, kn, lang) for m in h.missing) or t("labels", "none")
            tail = ""
            if settles.get(h.cause_id):
                tail = f"{semi}{label(kn, 'settles', lang)}{colon}" + comma.join(
                    esc(x) for x in settles[h.cause_id])
            if h.follows:
                tail += f"{semi}{esc(label(kn, 'follows', lang))} ({code(h.follows, False)})"
            lines.append(f"- **{esc(h.title)}** ({code(h.cause_id, False)}){colon}"
                         f"{t('labels', 'missing')}{colon}{miss}{tail}")
        lines.append("")
    if report.past_incidents:
        lines.append(f"### {t('headings', 'past_incidents')}")
        lines.append("")
        for p in report.past_incidents:
            causes = comma.join(code(c, False) for c in p.causes)
            # an autolink is literal (no escapes); the knowledge holds only plain http(s) URLs
            lines.append(f"- <{p.source}>{colon}{causes}")
        lines.append("")
    if report.ruled_out:
        heading = label(kn, "passed", lang) if report.status == "healthy" else t("headings", "ruled_out")
        lines.append(f"### {heading}")
        lines.append("")
        for r in report.ruled_out:
            why = semi.join(evidence_text(e, kn, lang, t("labels", "fails")) for e in r.because)
            lines.append(f"- **{esc(r.title)}** ({code(r.cause_id, False)}){colon}"
                         f"{t('labels', 'because')} {why}")
        lines.append("")
    if report.next_checks:
        lines.append(f"### {t('headings', 'next_checks')}")
        lines.append("")
        for i, c in enumerate(report.next_checks[:8], 1):
            sep = comma.join(code(s, False) for s in c.separates)
            tail = f"{semi}{t('labels', 'separates')}{colon}{sep}" if sep else ""
            lines.append(f"{i}. {esc(c.title)}{period}"
                         f"{t('labels', 'look_for')}{colon}{esc(c.look_for)}{tail}")
            lines.append("")
            lines.extend(fenced(c.command, indent="   "))
            lines.append("")
    if report.warnings:
        lines.append(f"### {t('headings', 'warnings')}")
        lines.append("")
        for w in report.warnings:
            lines.append(f"- {esc(w)}")
        lines.append("")
    if report.llm is not None and report.llm.fallback_reason:
        lines.append(f"> {esc(label(kn, 'llm_fallback', lang))}{colon}{esc(report.llm.fallback_reason)}")
        lines.append("")
    lines.append(f"### {t('headings', 'conclusion')}")
    lines.append("")
    joiner = "" if lang == "zh" else " "
    # the conclusion quotes evidence values (user-derived): escape all but its `code` spans
    lines.append(llm_conclusion or joiner.join(esc_prose(s) for s in report.conclusion))
    lines.append("")
    return "\n".join(lines)


def settled_by(report: Report) -> dict[str, list[str]]:
    """For each hypothesis, the titles of the next checks that decide it."""
    out: dict[str, list[str]] = {}
    for c in report.next_checks:
        for cid in c.separates:
            out.setdefault(cid, []).append(c.title)
    return out
