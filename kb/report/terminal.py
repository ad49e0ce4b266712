"""Render a :class:`Report` for a terminal with rich: one section per finding, then the
hypotheses, ruled-out causes (or, when healthy, the checks passed), next checks, warnings and
the conclusion.

Layout rules that tests rely on (tests/report/test_terminal.py):

- no line is wider than ``width``: prose wraps; commands are broken only where the shell or
  Python allows it (``\\``-continuations outside quotes, inside brackets, before a comment),
  so a copied command runs as printed;
- commands, and only commands, are indented by :data:`CODE_INDENT` spaces;
- no ANSI escape codes unless ``color`` (a terminal without ``NO_COLOR`` or ``--plain``).
"""

from __future__ import annotations

import io
import os
import re
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from kb.engine.knowledge import Knowledge
from kb.report.markdown import finding_path, is_python, settled_by, short_value
from kb.report.model import Report
from kb.report.wording import chrome, fact_name, label, path_labels

CODE_INDENT = 8
SEVERITY_STYLE = {"fix_now": "bold red", "tune": "bold yellow", "investigate": "bold magenta",
                  "watch": "bold blue"}
STATUS_STYLE = {"confirmed": "bold red", "hypotheses": "bold yellow", "inconclusive": "bold magenta",
                "healthy": "bold green"}
_COMPOUND = re.compile(r"^\s*(with|for|while|if|elif|else|def|class|try|except|finally|async)\b")


def use_color(stream: Any = None, plain: bool = False) -> bool:
    """Colour only on a terminal, never with ``--plain`` or ``NO_COLOR`` (https://no-color.org)."""
    if plain or os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else __import__("sys").stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def terminal_width(default: int = 100) -> int:
    """The terminal's width; ``COLUMNS`` or ``default`` when stdout is not a terminal."""
    import shutil

    return max(40, shutil.get_terminal_size((default, 24)).columns)


# -- commands: wrapped only where the language allows it ---------------------------------------


def _scan_shell(line: str, soft: list[int] | None = None) -> tuple[list[int], int | None]:
    """Unquoted space positions and the start of an unquoted ``#`` comment in one shell line.
    ``soft`` receives spaces inside double quotes (outside any inner '...'): bash removes a
    backslash-newline there too, so a long ``python -c "..."`` can still be broken."""
    spaces: list[int] = []
    quote: str | None = None
    inner = False
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if quote == '"' and ch == "'":
                inner = not inner
            elif quote == '"' and ch == " " and not inner and soft is not None:
                soft.append(i)
            if ch == quote:
                quote = None
                inner = False
        elif ch == "\\":
            i += 2
            continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;"):
            return spaces, i
        elif ch == " ":
            spaces.append(i)
        i += 1
    return spaces, None


#: marks a continuation line that must be printed at column 0 (inside a quoted string)
RAW = "\x00"


def _dq_cut(code: str, start: int, limit: int) -> int | None:
    """The last position in ``code[start:limit]`` inside double quotes where a
    backslash-newline may go (not right after a backslash)."""
    quote: str | None = None
    best: int | None = None
    i = 0
    while i < min(len(code), limit):
        ch = code[i]
        if quote == '"' and i > start + 1 and code[i - 1] != "\\" and ch != '"':
            best = i
        if ch == "\\":
            i += 2
            continue
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        i += 1
    return best


def _wrap_comment(comment: str, indent: str, width: int) -> list[str]:
    """A ``# comment`` as several ``# `` lines within ``width`` (a folded comment would run)."""
    words = comment.lstrip("#").split()
    out: list[str] = []
    cur = indent + "#"
    for w in words:
        if len(cur) + 1 + len(w) > width and cur.strip() != "#":
            out.append(cur)
            cur = indent + "#"
        cur += " " + w
    out.append(cur)
    return out


def _wrap_shell_line(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    soft: list[int] = []
    spaces, comment_at = _scan_shell(line, soft)
    code, comment = (line, "") if comment_at is None else (line[:comment_at].rstrip(), line[comment_at:])
    indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
    out: list[str] = []
    start = 0
    cont = indent + "  "
    prefix = ""
    while len(prefix) + len(code) - start > width:
        limit = start + width - len(prefix) - 2  # room for " \"
        cands = [s for s in spaces if start < s <= limit and s < len(code)]
        if not cands:  # inside a long "..." argument: the continuation adds blanks only
            cands = [s for s in soft if start < s <= limit and s < len(code)]
        if not cands:
            # one long "..." word: bash drops a backslash-newline inside double quotes, so cut
            # it anywhere there and go on at column 0 (RAW: no indentation may enter the string)
            cut = _dq_cut(code, start, limit + 1)
            if cut is None:
                break  # truly unbreakable: the console folds it
            out.append(prefix + code[start:cut] + "\\")
            start = cut
            prefix = RAW
            continue
        cut = cands[-1]
        out.append(prefix + code[start:cut].rstrip() + " \\")
        start = cut + 1
        prefix = cont
    out.append(prefix + code[start:])
    if comment:
        if len(out[-1]) + 2 + len(comment) <= width:
            out[-1] += "  " + comment
        else:  # a comment on its own line(s) before nothing: same meaning, fits the width
            out.extend(_wrap_comment(comment, indent, width))
    return out


def _scan_python(line: str) -> tuple[list[tuple[int, int]], list[int], int | None]:
    """(spaces with their bracket depth, top-level ``;`` positions, comment start) in a line."""
    spaces: list[tuple[int, int]] = []
    semis: list[int] = []
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch == "#":
            return spaces, semis, i
        elif ch in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ("'''", '"""') else ch
            i += len(quote)
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            semis.append(i)
        elif ch == " ":
            spaces.append((i, depth))
        i += 1
    return spaces, semis, None


def _wrap_python_line(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    spaces, semis, comment_at = _scan_python(line)
    indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
    if comment_at is not None and line[:comment_at].strip():
        # a trailing comment goes on its own line above the code: same program
        code = line[:comment_at].rstrip()
        return _wrap_comment(line[comment_at:], indent, width) + _wrap_python_line(code, width)
    if comment_at is not None:
        return _wrap_comment(line[comment_at:], indent, width)
    if semis and not _COMPOUND.match(line):
        # `a; b` at the top level of a simple line is `a` then `b`
        parts = [line[:semis[0]]] + [indent + line[semis[0] + 1:].lstrip()]
        return [w for p in parts for w in _wrap_python_line(p, width)]
    out: list[str] = []
    start = 0
    prefix = ""
    inner = indent + "    "
    while len(prefix) + len(line) - start > width:
        limit = start + width - len(prefix)
        cands = [s for s, d in spaces if d > 0 and start < s <= limit]
        if not cands:
            break
        cut = cands[-1]
        out.append(prefix + line[start:cut].rstrip())
        start = cut + 1
        prefix = inner  # inside brackets a line break is free
    out.append(prefix + line[start:])
    return out


def wrap_command(command: str, width: int) -> str:
    """``command`` broken into lines of at most ``width`` characters where its language allows
    a break, so that the printed text runs as the original (``bash -n`` / ``ast`` equivalent)."""
    lines = command.strip("\n").split("\n")
    wrap = _wrap_python_line if is_python(command) else _wrap_shell_line
    return "\n".join(w for line in lines for w in wrap(line.rstrip(), width))


def plain_command(wrapped: str) -> str:
    """A :func:`wrap_command` result as text (the column-0 marks removed)."""
    return wrapped.replace(RAW, "")


# -- the report -------------------------------------------------------------------------------


def render(report: Report, kn: Knowledge, *, width: int | None = None,
           color: bool = False) -> str:
    """The report as terminal text, ``width`` columns wide, with ANSI styles only if ``color``."""
    width = width or terminal_width()
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=color, no_color=not color,
                  color_system="standard" if color else None, highlight=False, markup=False,
                  emoji=False, soft_wrap=False, legacy_windows=False)
    lang = report.lang

    def t(*keys: str) -> str:
        return chrome(kn, lang, *keys)

    colon = t("punct", "colon")

    def para(text: str | Text, indent: int = 2, style: str = "") -> None:
        txt = text if isinstance(text, Text) else Text(text, style=style)
        con.print(Padding(txt, (0, 0, 0, indent), expand=False))

    def bullet(text: str | Text, indent: int = 4, mark: str = "•") -> None:
        # a hanging indent: wrapped lines start under the text, not under the mark
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(width=len(mark), no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(Text(mark), text if isinstance(text, Text) else Text(text))
        con.print(Padding(grid, (0, 0, 0, indent), expand=False))

    def command(cmd: str) -> None:
        wrapped = wrap_command(cmd, width - CODE_INDENT - 1)
        for line in wrapped.split("\n"):
            lead = "" if line.startswith(RAW) else " " * CODE_INDENT
            # a token wider than the terminal is printed whole: a command must run as printed
            con.print(Text(lead + line.lstrip(RAW), style="cyan"), no_wrap=True,
                      overflow="ignore", crop=False)

    def sentence_with_commands(sentence: str) -> None:
        # a command inside a sentence would wrap like prose: show it as a command block
        parts = re.split(r"(`+)(.+?)\1", sentence)
        text = ""
        i = 0
        while i < len(parts):
            if i + 2 < len(parts) and parts[i + 1].startswith("`"):
                text += parts[i]
                if text.strip():
                    para(text.rstrip())
                command(parts[i + 2].strip())
                text = ""
                i += 3
            else:
                text += parts[i]
                i += 1
        if text.strip():
            para(text.strip())

    def heading(text: str) -> None:
        con.print()
        con.print(Text(text, style="bold underline"))

    status = Text(f"{t('headings', 'findings')} — {t('headings', 'status')}{colon}")
    status.append(t("status", report.status), style=STATUS_STYLE.get(report.status, "bold"))
    con.print(Rule(characters="─", style="dim"))
    con.print(status)
    if report.symptom or report.branches:
        para(Text(f"{label(kn, 'branch', lang)}{colon}" + ", ".join(report.branches or [report.symptom or ""]),
                  style="dim"), indent=0)
    for f in report.findings:
        con.print()
        title = Text("● ", style=SEVERITY_STYLE.get(f.severity, "bold"))
        title.append(f.title, style="bold")
        title.append(f"  [{t('severity', f.severity)}]", style=SEVERITY_STYLE.get(f.severity, ""))
        con.print(title)
        para(Text(f"{f.cause_id} · {t('labels', 'confidence')} {f.confidence:.2f}", style="dim"))
        para(f.symptom, style="italic")
        para(Text(f"{label(kn, 'why', lang)}{colon}", style="bold") + Text(f.why))
        para(Text(label(kn, "evidence", lang), style="bold"))
        for e in f.evidence[:6]:
            bullet(_evidence(e, kn, lang))
        path = finding_path(f)
        if path:
            para(Text(f"{label(kn, 'path', lang)}{colon}", style="bold")
                 + Text(" → ".join(path_labels(kn, path, lang))))
        para(Text(label(kn, "fixes", lang), style="bold"))
        for i, x in enumerate(f.fixes, 1):
            bullet(x.text, mark=f"{i}.")
            command(x.command)
        para(Text(label(kn, "verify", lang), style="bold"))
        for v in f.verify:
            bullet(Text(v.text) + Text(f" ({v.expect})", style="dim"))
            command(v.command)
        if f.references:
            para(Text(label(kn, "references", lang), style="bold"))
            for r in f.references:
                bullet(Text(r.title) + Text("  ") + Text(r.url, style="blue underline"))
    if report.question:
        heading(t("headings", "question"))
        para(report.question)
    settles = settled_by(report)
    if report.hypotheses:
        heading(t("headings", "hypotheses"))
        for h in report.hypotheses:
            body = Text(h.title, style="bold") + Text(f"  {h.cause_id}", style="dim")
            miss = t("punct", "list").join(
                f"{fact_name(kn, m, lang)} ({m})" for m in h.missing)
            if miss:
                body.append(f"\n{t('labels', 'missing')}{colon}{miss}")
            if settles.get(h.cause_id):
                body.append(f"\n{label(kn, 'settles', lang)}{colon}"
                            + t("punct", "list").join(settles[h.cause_id]))
            if h.follows:
                body.append(f"\n{label(kn, 'follows', lang)} ({h.follows})")
            bullet(body)
    if report.past_incidents:
        heading(t("headings", "past_incidents"))
        for p in report.past_incidents:
            bullet(Text(p.source) + Text(f"  {t('punct', 'list').join(p.causes)}", style="dim"))
    if report.ruled_out:
        healthy = report.status == "healthy"
        heading(label(kn, "passed", lang) if healthy else t("headings", "ruled_out"))
        for r in report.ruled_out:
            why = t("punct", "semicolon").join(_evidence(e, kn, lang, t("labels", "fails")).plain
                                              for e in r.because)
            bullet(Text(r.title, style="bold") + Text(f"{colon}{t('labels', 'because')} {why}"),
                   mark="✓" if healthy else "✗")
    if report.next_checks:
        heading(t("headings", "next_checks"))
        for i, c in enumerate(report.next_checks[:8], 1):
            body = Text(c.title, style="bold") + Text(
                f"{t('punct', 'period')}{t('labels', 'look_for')}{colon}{c.look_for}")
            bullet(body, mark=f"{i}.")
            command(c.command)
    if report.warnings:
        heading(t("headings", "warnings"))
        for w in report.warnings:
            bullet(Text(w, style="yellow"))
    if report.llm is not None:
        if report.llm.fallback_reason:
            heading(label(kn, "llm_fallback", lang))
            para(Text(report.llm.fallback_reason, style="yellow"))
    heading(t("headings", "conclusion"))
    for sentence in report.conclusion:
        sentence_with_commands(sentence)
    if report.markdown and report.llm is not None:
        heading(f"{label(kn, 'llm_phrased', lang)} {report.llm.model}")
        from rich.markdown import Markdown

        con.print(Padding(Markdown(report.markdown), (0, 0, 0, 2)))
    con.print(Rule(characters="─", style="dim"))
    out = buf.getvalue()
    # rich pads some lines to the width: trailing blanks only hurt copying and diffs
    return "\n".join(line.rstrip(" ") for line in out.split("\n"))


def _evidence(e: Any, kn: Knowledge, lang: str, fails: str = "") -> Text:
    text = Text(f"{fails} {e.condition}" if (e.holds is False and fails) else e.condition)
    text.append(f" ({fact_name(kn, e.fact, lang)} = {short_value(e.value, e.unit)})", style="dim")
    return text
