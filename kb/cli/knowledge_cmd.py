"""`kb validate`, `kb schema`, `kb causes`, `kb thresholds` and `kb refs`: the knowledge base
and the facts contract, listed for people (tables) and programs (``--format json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kb.cli.common import (
    Format, Lang, ReportLang, dumps_json, handle_errors, resolve_lang, write_output,
)

EXIT_NO_MATCH = 1  # a search or filter that matches nothing: say so, do not print nothing


def _kn():  # noqa: ANN202 - Knowledge; imported late to keep `kb --help` fast
    from kb.api import load_knowledge

    return load_knowledge()


def matches_all(query: str | None, *texts: str) -> bool:
    """Every word of ``query`` occurs (case-insensitively) in one of ``texts``; none: all match."""
    if not query:
        return True
    hay = " ".join(texts).lower()
    return all(word in hay for word in query.lower().split())


def _table(rows: list[list[str]], header: list[str]) -> str:
    """A Markdown table (pipes escaped in cells), readable as plain text too."""
    from kb.report.markdown import esc

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _nothing(what: str) -> None:
    typer.echo(f"kb: {what}: nothing matches", err=True)
    raise typer.Exit(EXIT_NO_MATCH)


LangOpt = Annotated[ReportLang, typer.Option("--lang", help="language of the text (auto: from LANG/LC_ALL)")]
FormatOpt = Annotated[Format, typer.Option("--format", help="md table or json")]


@handle_errors
def validate(
    path: Annotated[Optional[str], typer.Option("--path", help="knowledge directory (default: bundled)")] = None,
) -> None:
    """Check the knowledge graph: reachability, completeness, ids, cycles. Exit 1 on problems."""
    from kb.engine import knowledge
    from kb.engine.graph import build, validate as check
    from kb._data import data_dir

    kn = knowledge.load(path or data_dir("graphs"), use_cache=False)
    g = build(kn)
    problems = check(kn, g)
    gpus = Path(kn.root) / "gpus.yaml"
    if gpus.exists():  # what a GPU's name tells (kb.gpu_models): its examples resolve to it
        from kb.engine.errors import KnowledgeError
        from kb.gpu_models import load as load_gpus

        try:
            load_gpus(gpus)
        except KnowledgeError as err:
            problems = list(problems) + list(err.problems)
    if problems:
        for p in problems:
            typer.echo(f"kb: problem: {p}", err=True)
        typer.echo(f"{len(problems)} problem(s) in {kn.root}", err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: {len(kn.branches)} branches, {len(kn.causes)} causes, {len(kn.checks)} checks, "
               f"{len(kn.references)} references, {g.number_of_nodes()} nodes, "
               f"{g.number_of_edges()} edges")


@handle_errors
def schema() -> None:
    """Print the JSON Schema of the facts file."""
    from kb.facts import Facts

    typer.echo(json.dumps(Facts.model_json_schema(), indent=2, ensure_ascii=False))


@handle_errors
def causes(
    branch: Annotated[Optional[str], typer.Option("--branch", help="only this branch (gpu_util, oom, nccl, numerics, inference, compile)")] = None,
    search: Annotated[Optional[str], typer.Option("--search", help="only causes whose id, title or symptom holds every word")] = None,
    format: FormatOpt = Format.md,
    lang: LangOpt = ReportLang.auto,
) -> None:
    """List the known causes: id, branch, severity, title. Exit 1 when nothing matches."""
    from kb.engine.errors import InputError
    from kb.report.wording import label

    kn = _kn()
    lg = resolve_lang(lang.value, search)
    if branch is not None and branch not in kn.branches:
        raise InputError(f"--branch {branch}", "unknown branch",
                         f"Known branches: {', '.join(kn.branches)}")
    rows = [c for c in kn.causes.values()
            if (branch is None or c.branch == branch)
            and matches_all(search, c.id, c.title.en, c.title.zh, c.symptom.en, c.symptom.zh)]
    if not rows:
        _nothing("kb causes")
    if format is Format.json:
        doc = {"causes": [{"id": c.id, "branch": c.branch, "severity": c.severity,
                           "title": {"en": c.title.en, "zh": c.title.zh}} for c in rows]}
        write_output(dumps_json(doc), None)
        return
    sev = kn.report_text["severity"]
    header = [label(kn, k, lg) for k in ("cause_id", "branch", "severity", "title_col")]
    write_output(_table([[c.id, c.branch, sev[c.severity][lg], c.title.get(lg)] for c in rows],
                        header), None)


@handle_errors
def thresholds(
    search: Annotated[Optional[str], typer.Option("--search", help="only thresholds whose id or text holds every word")] = None,
    format: FormatOpt = Format.md,
    lang: LangOpt = ReportLang.auto,
) -> None:
    """List every threshold: id, value, unit, meaning and source (override with --set ID=VALUE)."""
    from kb.report.wording import label

    kn = _kn()
    lg = resolve_lang(lang.value, search)
    rows = [t for t in kn.thresholds.values()
            if matches_all(search, t.id, t.text.en, t.text.zh, t.source)]
    if not rows:
        _nothing("kb thresholds")
    if format is Format.json:
        doc = {"thresholds": [{"id": t.id, "value": t.value, "unit": t.unit, "source": t.source,
                               "text": {"en": t.text.en, "zh": t.text.zh}} for t in rows]}
        write_output(dumps_json(doc), None)
        return
    header = [label(kn, k, lg) for k in ("threshold", "value", "unit", "meaning", "source")]
    write_output(_table([[t.id, f"{t.value:g}", t.unit, t.text.get(lg), t.source] for t in rows],
                        header), None)


@handle_errors
def refs(
    group: Annotated[Optional[str], typer.Option("--group", help="only this group")] = None,
    search: Annotated[Optional[str], typer.Option(
        "--search", help="only references whose id, title, URL or text holds every word")] = None,
    format: FormatOpt = Format.md,
    lang: Annotated[Lang, typer.Option("--lang", help="language of the text")] = Lang.en,
) -> None:
    """The reference index: authoritative links grouped by topic. Exit 1 when nothing matches."""
    import json as _json

    from kb.exports import refs as mod

    kn = _kn()
    chosen = [r for r in mod.select(kn, group)
              if matches_all(search, r.id, r.title, r.url, r.about.en, r.about.zh, r.group)]
    if not chosen:
        _nothing("kb refs")
    if format is Format.json:
        ids = {r.id for r in chosen}
        doc = _json.loads(mod.export_json(kn, group))
        doc["references"] = [r for r in doc["references"] if r["id"] in ids]
        groups = {r["group"] for r in doc["references"]}
        doc["groups"] = [g for g in doc["groups"] if g["id"] in groups]
        write_output(dumps_json(doc), None)
        return
    from kb.exports.text import chrome

    write_output(f"# {chrome(kn, lang.value, 'index')}\n\n" + mod.markdown(kn, chosen, lang.value),
                 None)
