"""`kb diagnose`: facts and/or raw artifacts in, a report out."""

from __future__ import annotations

import math
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kb.engine.errors import InputError
from kb.cli.common import (
    EXIT_FINDING, EXIT_INCONCLUSIVE, EXIT_OK, ReportFormat, ReportLang, dumps_json,
    handle_errors, resolve_lang, write_output,
)


class Severity(str, Enum):
    fix_now = "fix_now"
    tune = "tune"
    investigate = "investigate"
    watch = "watch"


def parse_sets(items: list[str]) -> dict[str, float]:
    """``["gpu_util.low=60"]`` -> ``{"gpu_util.low": 60.0}`` with clear errors."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item}", "expected KEY=VALUE", "e.g. --set gpu_util.low=60")
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"--set {item}", f"expected a number, got {value!r}") from None
        if not math.isfinite(number):
            raise InputError(f"--set {item}", f"expected a finite number, got {value!r}")
        out[key.strip()] = number
    return out


def read_config(path: Path) -> dict[str, float]:
    """Threshold overrides from a YAML or JSON file: ``{thresholds: {id: value}}`` (bounded in
    size, aliases, depth and numbers by :func:`kb.facts_io.read_config_data`)."""
    from kb.facts_io import read_config_data

    data = read_config_data(path)
    if not isinstance(data, dict) or not isinstance(data.get("thresholds", {}), dict):
        raise InputError(str(path), "expected a mapping with 'thresholds: {id: number}'")
    out: dict[str, float] = {}
    for k, v in (data.get("thresholds") or {}).items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{path} thresholds.{k}", f"expected a finite number, got {v!r}")
        out[str(k)] = float(v)
    return out


def gather_facts(facts: Optional[Path], inputs: list[str], input_format: Optional[str],
                 symptom: Optional[str]) -> Any:
    """The CLI's arguments as the library's :func:`kb.api.gather` takes them: ``-`` (stdin)
    for facts is read here, the rest is the library's."""
    from kb.api import gather

    explicit: Any = facts
    if facts is not None and str(facts) == "-":
        from kb.facts_io import load_facts_file

        explicit = load_facts_file("-")  # stdin, bounded in size and depth
    # on the command line every --input names a path (or `-`): a typo is an error, not text
    paths = [i if i == "-" else Path(i) for i in inputs]
    got = gather(explicit, inputs=paths, input_format=input_format, symptom=symptom)
    if facts is not None and str(facts) == "-":
        got.sources = {("-" if k == "facts" else k): v for k, v in got.sources.items()}
    return got


def _cleaned(report: Any) -> Any:
    """The report with control characters and escape sequences removed from every text: a
    log line quoted as evidence must not drive the user's terminal."""
    from kb.safe_text import clean_text

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return clean_text(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return type(report).model_validate(walk(report.model_dump()))


def render_report(report: Any, facts: Any, format: ReportFormat, output: Optional[str],
                  plain: bool) -> str:
    """The report in the asked format; ``auto`` is the terminal rendering only when it goes to
    a terminal (stdout, no -o), else the Markdown table (pipes, files, CI logs)."""
    import kb

    kn = kb.load_knowledge()
    report = _cleaned(report)
    to_tty = output in (None, "-") and sys.stdout.isatty()
    if format is ReportFormat.auto:
        format = ReportFormat.terminal if to_tty else ReportFormat.md
    if format is ReportFormat.json:
        return dumps_json(report.model_dump(mode="json"))
    if format is ReportFormat.html:
        from kb.report.html import render as render_html

        return render_html(report, kn, facts)
    if format is ReportFormat.terminal:
        from kb.report.terminal import render as render_term, terminal_width, use_color

        color = to_tty and use_color(sys.stdout, plain)
        return render_term(report, kn, width=terminal_width(), color=color)
    from kb.report.markdown import render

    return render(report, kn)


EPILOG = """Examples:

  kb diagnose -f examples/facts/gpu_util.dataloader_bound.json

  kb diagnose -i logs/ --symptom "GPU util stuck at 20%" --format html -o report.html

  kb diagnose -f facts.json --format json | jq .findings

  kb diagnose --symptom "训练 loss 变成 NaN" --lang auto
"""


@handle_errors
def diagnose(
    facts: Annotated[Optional[Path], typer.Option("--facts", "-f", help="facts JSON file (`-` for stdin)")] = None,
    input: Annotated[Optional[list[str]], typer.Option("--input", "-i", help="raw artifact: file, directory or `-`; repeatable")] = None,
    input_format: Annotated[Optional[str], typer.Option("--input-format", help="force the format of every --input")] = None,
    symptom: Annotated[Optional[str], typer.Option("--symptom", help="the problem in your own words (en or zh)")] = None,
    format: Annotated[ReportFormat, typer.Option("--format", help="auto (terminal on a terminal, else md), terminal, md, json or html (one self-contained file)")] = ReportFormat.auto,
    lang: Annotated[ReportLang, typer.Option("--lang", help="report language; auto: Chinese when your words or LANG/LC_ALL are Chinese")] = ReportLang.auto,
    plain: Annotated[bool, typer.Option("--plain", help="terminal output without colours or styles (also NO_COLOR=1)")] = False,
    fail_on: Annotated[Optional[Severity], typer.Option("--fail-on", help="exit 1 on a finding of this severity or worse")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a threshold: KEY=VALUE; repeatable")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="YAML/JSON file with thresholds: {id: value}")] = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="write the report here instead of stdout")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --output if it exists")] = False,
    llm: Annotated[Optional[str], typer.Option("--llm", envvar="KB_LLM_MODEL", help="phrase the report with this litellm model (optional extra 'llm')")] = None,
    llm_dry_run: Annotated[bool, typer.Option("--llm-dry-run", help="print what would be sent to the model, send nothing")] = False,
    redact_hosts: Annotated[bool, typer.Option("--redact-hosts", help="also redact host names and IPs before sending")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="neither read nor write the LLM answer cache (~/.cache/kb/llm; also KB_NO_CACHE=1)")] = False,
    llm_strict: Annotated[bool, typer.Option("--llm-strict", help="exit 4 instead of falling back when the LLM answer is not used")] = False,
    without_precedent: Annotated[Optional[list[str]], typer.Option("--without-precedent", help="leave this past incident (its source URL) out of the precedents, e.g. to score a case the corpus already holds; repeatable")] = None,
) -> None:
    """Diagnose a job from its facts and/or raw artifacts.

    Exit codes: 0 report produced, 1 a finding at or above --fail-on, 2 bad input,
    3 inconclusive (the facts decide nothing; see the next checks), 4 --llm-strict and the
    LLM answer was not used.
    """
    import kb

    if facts is None and not input and not symptom:
        raise InputError("kb diagnose", "nothing to diagnose",
                         "Give --facts FILE, --input PATH or --symptom TEXT")
    overrides: dict[str, float] = {}
    if config is not None:
        overrides.update(read_config(config))
    overrides.update(parse_sets(set_ or []))
    got = gather_facts(facts, input or [], input_format, symptom)
    llm_opts = None
    if llm or llm_dry_run:
        from kb.llm import LlmOptions

        llm_opts = LlmOptions(model=llm or "", dry_run=llm_dry_run, redact_hosts=redact_hosts,
                              strict=llm_strict)
        if no_cache:
            llm_opts.cache_dir = None
    from kb.api import report_for

    report = report_for(got, kb.load_knowledge(), lang=resolve_lang(lang.value, symptom),
                        overrides=overrides, llm=llm_opts,
                        without_precedents=frozenset(without_precedent or ()))
    f = got.facts
    if llm_dry_run:
        # the library returns the request it would send; printing it is the CLI's job
        sys.stdout.write(report.llm.request_text if report.llm and report.llm.request_text
                         else "")
        sys.stdout.flush()
        return
    write_output(render_report(report, f, format, output, plain), output, force)
    if report.llm is not None and report.llm.fallback_reason:
        typer.echo(f"kb: warning: LLM answer not used ({report.llm.fallback_reason}); "
                   "showing the deterministic report", err=True)
    if fail_on is not None:
        order = ["fix_now", "tune", "investigate", "watch"]
        limit = order.index(fail_on.value)
        if any(order.index(x.severity) <= limit for x in report.findings):
            raise typer.Exit(EXIT_FINDING)
    if report.status == "inconclusive":
        raise typer.Exit(EXIT_INCONCLUSIVE)
    raise typer.Exit(EXIT_OK)
