"""`kb explain`, `kb triage` and `kb verify`: reasoning about one cause, one dialogue, one fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kb.engine.errors import InputError, KbError
from kb.cli.common import EXIT_INCONCLUSIVE, EXIT_OK, handle_errors, write_output
from kb.cli.common import Format, Lang
from kb.cli.diagnose_cmd import parse_sets


@handle_errors
def explain(
    cause_id: Annotated[str, typer.Argument(metavar="CAUSE_ID", help="cause id, e.g. gpu_util.dataloader_bound")],
    lang: Annotated[Lang, typer.Option("--lang", help="language")] = Lang.en,
    format: Annotated[Format, typer.Option("--format", help="md or json")] = Format.md,
) -> None:
    """Explain a cause: the path from the symptom to it, its conditions, fixes and checks.

    Exit codes: 0 explained, 2 unknown cause id (the closest ids are suggested).
    """
    import kb
    from kb.explain import explain as do_explain, render

    kn = kb.load_knowledge()
    ex = do_explain(cause_id, kn, lang.value)
    if format == Format.json:
        write_output(json.dumps(ex.model_dump(mode="json"), ensure_ascii=False, indent=2), None)
    else:
        write_output(render(ex, kn), None)


# -- triage ---------------------------------------------------------------------------------

_WORDS = {
    "en": {"run": "Run", "look_for": "Look for", "question": "Question", "decides": "decides",
           "reply": "Paste its output (end with a line '.'), give a file path, or answer",
           "skip": "blank to skip", "choose": "Choose a number or an id (blank to skip)",
           "error": "cannot use that answer", "done": "Confirmed", "exhausted": "No more checks",
           "saved": "facts saved to"},
    "zh": {"run": "运行", "look_for": "关注", "question": "问题", "decides": "判定",
           "reply": "粘贴命令输出（以只含 '.' 的一行结束）、给出文件路径，或直接回答",
           "skip": "留空跳过", "choose": "输入序号或 id（留空跳过）",
           "error": "无法使用这个回答", "done": "已确认", "exhausted": "没有更多检查",
           "saved": "事实已保存到"},
}


def _say(text: str = "") -> None:
    """Dialogue text goes to stderr: stdout carries only the final report."""
    typer.echo(text, err=True)


def _ask(text: str) -> str | None:
    """One line from the user (None at end of input). The prompt text is echoed to stderr
    first, and typer.prompt gets an empty prompt, so nothing but the report reaches stdout."""
    typer.echo(text, err=True, nl=False)
    try:
        return typer.prompt("", default="", show_default=False, prompt_suffix="", err=True)
    except (typer.Abort, EOFError):
        return None


#: a pasted output ends at a line holding only one of these, at two empty lines, or at EOF
PASTE_END = (".", "EOF")


def _read_paste(first: str) -> str:
    """The rest of a pasted output (outputs such as iostat's contain single empty lines)."""
    lines = [first]
    while True:
        more = _ask("")
        if more is None or more.strip() in PASTE_END:
            break
        if not more.strip() and lines and not lines[-1].strip():
            break
        lines.append(more)
    return "\n".join(lines).rstrip() + "\n"


@handle_errors
def triage(
    lang: Annotated[Lang, typer.Option("--lang", help="language")] = Lang.en,
    save: Annotated[Optional[Path], typer.Option("--save", help="write the gathered facts to this JSON file")] = None,
    facts: Annotated[Optional[Path], typer.Option("--facts", "-f", help="start from these facts (JSON file)")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --save if it exists")] = False,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a threshold: KEY=VALUE; repeatable")] = None,
) -> None:
    """Find the cause step by step: answer the symptom question, then give each next check's
    output (pasted, a file path, or the fact's value); blank skips a check.

    The dialogue goes to stderr, the final Markdown report to stdout. Exit codes: 0 a cause is
    confirmed (or the job is healthy), 2 bad input, 3 no cause confirmed.
    """
    import kb
    from kb.facts_io import load_facts_file
    from kb.report.markdown import render
    from kb.triage import CheckRequest, Done, Question, TriageSession

    if save is not None and save.exists() and not force:
        raise KbError(str(save), "file exists, not overwritten", "Pass --force to replace it")
    kn = kb.load_knowledge()
    start = load_facts_file(facts) if facts is not None else None
    session = TriageSession(kn, start, lang=lang.value, overrides=parse_sets(set_ or []))
    w = _WORDS[lang.value]
    step: Any = session.next_step()
    while not isinstance(step, Done):
        _say()
        if isinstance(step, Question):
            _say(step.text)
            for i, c in enumerate(step.choices, 1):
                _say(f"  {i}. {c.id}: {c.title}")
            reply = _ask(f"{w['choose']}: ")
        else:
            assert isinstance(step, CheckRequest)
            _say(f"{w['run']}: {step.command}")
            _say(f"  {step.title}. {w['look_for']}: {step.look_for}")
            if step.question:
                _say(f"  {w['question']}: {step.question}")
                for a in step.answers:
                    _say(f"    - {a}")
            what = step.facts[0].prompt() if step.facts else ""
            reply = _ask(f"{w['reply']}{(' ' + what) if what else ''} ({w['skip']}): ")
        if reply is None:  # end of input: stop here and report what is known
            break
        if session.kind_of(reply) == "output":
            reply = _read_paste(reply)
        try:
            _say(f"  -> {session.answer(reply)}")
        except KbError as err:
            for line in (getattr(err, "problems", None) or [err.line()])[:10]:
                _say(f"  kb: {w['error']}: {line}")
            continue
        step = session.next_step()
    report = step.report if isinstance(step, Done) else session.report()
    if save is not None:
        text = json.dumps(session.saved_facts(), ensure_ascii=False, indent=2)
        write_output(text, str(save), force=True)
        _say(f"{w['saved']} {save}")
    _say()
    write_output(render(report, kn), None)
    raise typer.Exit(EXIT_OK if report.status in ("confirmed", "healthy") else EXIT_INCONCLUSIVE)


# -- verify ---------------------------------------------------------------------------------

@handle_errors
def verify(
    before: Annotated[Optional[Path], typer.Option("--before", help="facts JSON from before the fix")] = None,
    after: Annotated[Optional[Path], typer.Option("--after", help="facts JSON from after the fix")] = None,
    before_input: Annotated[Optional[list[str]], typer.Option("--before-input", help="raw artifact from before the fix; repeatable")] = None,
    after_input: Annotated[Optional[list[str]], typer.Option("--after-input", help="raw artifact from after the fix; repeatable")] = None,
    input_format: Annotated[Optional[str], typer.Option("--input-format", help="force the format of every artifact")] = None,
    lang: Annotated[Lang, typer.Option("--lang", help="language")] = Lang.en,
    format: Annotated[Format, typer.Option("--format", help="md or json")] = Format.md,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a threshold: KEY=VALUE; repeatable")] = None,
) -> None:
    """Check a fix: diagnose BEFORE, then test every finding's verification on AFTER.

    Exit codes: 0 every finding fixed, 1 a finding not fixed, 2 bad input, 3 cannot tell
    (AFTER lacks the facts, or BEFORE confirms nothing).
    """
    import kb
    from kb.cli.diagnose_cmd import gather_facts
    from kb.verify import render, verify as do_verify

    if before is None and not before_input:
        raise InputError("kb verify", "no before facts", "Give --before FILE or --before-input PATH")
    if after is None and not after_input:
        raise InputError("kb verify", "no after facts", "Give --after FILE or --after-input PATH")
    gb = gather_facts(before, before_input or [], input_format, None)
    ga = gather_facts(after, after_input or [], input_format, None)
    fb, fa = gb.facts, ga.facts
    warnings = [f"before: {x}" for x in gb.warnings] + [f"after: {x}" for x in ga.warnings]
    kn = kb.load_knowledge()
    res = do_verify(fb, fa, lang=lang.value, knowledge=kn, overrides=parse_sets(set_ or []),
                    warnings=warnings)
    if format == Format.json:
        write_output(json.dumps(res.model_dump(mode="json"), ensure_ascii=False, indent=2), None)
    else:
        write_output(render(res, kn), None)
    raise typer.Exit(res.exit_code)
