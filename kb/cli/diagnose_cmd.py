"""`kb diagnose`: facts and/or raw artifacts in, a report out."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from engine.errors import InputError
from kb.cli.common import (
    EXIT_FINDING, EXIT_INCONCLUSIVE, EXIT_OK, Format, Lang, handle_errors, write_output,
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
            out[key.strip()] = float(value)
        except ValueError:
            raise InputError(f"--set {item}", f"expected a number, got {value!r}") from None
    return out


def read_config(path: Path) -> dict[str, float]:
    """Threshold overrides from a YAML or JSON file: ``{thresholds: {id: value}}``."""
    import yaml

    from kb.facts_io import MAX_FACTS_BYTES

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), f"cannot read config ({exc.strerror})") from None
    if len(raw) > MAX_FACTS_BYTES or b"\x00" in raw[:4096]:
        raise InputError(str(path), "not a config file (binary or too large)")
    try:
        data = yaml.safe_load(raw.decode("utf-8", errors="replace"))
    except yaml.YAMLError as exc:
        raise InputError(str(path), f"not valid YAML/JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("thresholds", {}), dict):
        raise InputError(str(path), "expected a mapping with 'thresholds: {id: number}'")
    out: dict[str, float] = {}
    for k, v in (data.get("thresholds") or {}).items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{path} thresholds.{k}", f"expected a number, got {v!r}")
        out[str(k)] = float(v)
    return out


def gather_facts(facts: Optional[Path], inputs: list[str], input_format: Optional[str],
                 symptom: Optional[str]) -> tuple[Any, list[str], dict[str, str], bool]:
    """Explicit facts + parsed artifacts + the user's words -> (Facts, warnings, sources, conflict)."""
    from kb.facts_io import facts_from_data, load_facts_file

    warnings: list[str] = []
    sources: dict[str, str] = {}
    conflicts = False
    explicit: dict[str, Any] = {}
    if facts is not None:
        if str(facts) == "-":
            from kb.facts_io import read_facts_text

            explicit = read_facts_text(sys.stdin.read(), "<stdin>")
            facts_from_data(explicit, "<stdin>")
        else:
            explicit = load_facts_file(facts).model_dump(mode="json", exclude_defaults=True)
        sources[str(facts)] = "facts"
    data = explicit
    if inputs:
        from kb.inputs import load_inputs, merge_facts

        bundle = load_inputs(inputs, input_format)
        data, merge_conflicts = merge_facts(explicit, bundle.facts)
        all_conflicts = list(bundle.conflicts) + list(merge_conflicts)
        conflicts = bool(all_conflicts)
        warnings += [f"conflict: {c}" for c in all_conflicts]
        warnings += list(bundle.notes)
        sources.update(bundle.sources)
    if symptom:
        data = dict(data)
        data["symptom_text"] = symptom
    return facts_from_data(data, str(facts) if facts else "inputs"), warnings, sources, conflicts


@handle_errors
def diagnose(
    facts: Annotated[Optional[Path], typer.Option("--facts", "-f", help="facts JSON file (`-` for stdin)")] = None,
    input: Annotated[Optional[list[str]], typer.Option("--input", "-i", help="raw artifact: file, directory or `-`; repeatable")] = None,
    input_format: Annotated[Optional[str], typer.Option("--input-format", help="force the format of every --input")] = None,
    symptom: Annotated[Optional[str], typer.Option("--symptom", help="the problem in your own words (en or zh)")] = None,
    format: Annotated[Format, typer.Option("--format", help="md table or json")] = Format.md,
    lang: Annotated[Lang, typer.Option("--lang", help="report language")] = Lang.en,
    fail_on: Annotated[Optional[Severity], typer.Option("--fail-on", help="exit 1 on a finding of this severity or worse")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override a threshold: KEY=VALUE; repeatable")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="YAML/JSON file with thresholds: {id: value}")] = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="write the report here instead of stdout")] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --output if it exists")] = False,
    llm: Annotated[Optional[str], typer.Option("--llm", envvar="KB_LLM_MODEL", help="phrase the report with this litellm model (optional extra 'llm')")] = None,
    llm_dry_run: Annotated[bool, typer.Option("--llm-dry-run", help="print what would be sent to the model, send nothing")] = False,
    redact_hosts: Annotated[bool, typer.Option("--redact-hosts", help="also redact host names and IPs before sending")] = False,
) -> None:
    """Diagnose a job from its facts and/or raw artifacts.

    Exit codes: 0 report produced, 1 a finding at or above --fail-on, 2 bad input,
    3 inconclusive (the facts decide nothing; see the next checks).
    """
    import kb
    from kb.report.markdown import render

    if facts is None and not input and not symptom:
        raise InputError("kb diagnose", "nothing to diagnose",
                         "Give --facts FILE, --input PATH or --symptom TEXT")
    overrides: dict[str, float] = {}
    if config is not None:
        overrides.update(read_config(config))
    overrides.update(parse_sets(set_ or []))
    f, warnings, sources, conflicts = gather_facts(facts, input or [], input_format, symptom)
    llm_opts = None
    if llm or llm_dry_run:
        from kb.llm import LlmOptions

        llm_opts = LlmOptions(model=llm or "", dry_run=llm_dry_run, redact_hosts=redact_hosts)
    report = kb.diagnose(f, lang=lang.value, overrides=overrides, warnings=warnings,
                         inputs=sources, conflicts=conflicts, llm=llm_opts)
    if llm_dry_run:
        return
    if format == Format.json:
        text = json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2)
    else:
        text = report.markdown or render(report, kb.load_knowledge())
    write_output(text, output, force)
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
