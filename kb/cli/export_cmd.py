"""`kb export ...` and `kb refs`: everything generated from the knowledge base.

    kb export agents-md [--lang en|zh] [--branch B ...] [-o FILE] [--force] [--stats]
    kb export mermaid   [--branch B|overview] [--lang en|zh] [--no-fixes] [-o FILE]
    kb export dot       [--branch B|overview] [--lang en|zh] [--no-fixes] [-o FILE]
    kb export json      [-o FILE]
    kb export skill     [-o DIR] [--force] [--lang en|zh]
    kb export agents-snippet [--lang en|zh] [-o FILE]
    kb refs [--group G] [--search TEXT] [--format md|json] [--lang en|zh]
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kb.cli.common import Format, Lang, handle_errors
from kb.safe_write import write_output  # atomic, exclusive unless --force (issue 17)

export_app = typer.Typer(
    no_args_is_help=True,
    help="Export the knowledge: agents-md, mermaid, dot, json, skill.",
)


LangOpt = Annotated[Lang, typer.Option("--lang", help="language of the text")]
OutOpt = Annotated[Optional[str], typer.Option(
    "--output", "-o", help="write here instead of stdout")]
ForceOpt = Annotated[bool, typer.Option("--force", help="overwrite the output if it exists")]
GraphBranchOpt = Annotated[Optional[str], typer.Option(
    "--branch", help="one branch id, or 'overview'; default: the overview and every branch "
                     "(Markdown with one fenced graph each)")]
FixesOpt = Annotated[bool, typer.Option("--fixes/--no-fixes", help="draw each cause's fixes")]


def _kn():
    from kb.api import load_knowledge

    return load_knowledge()


def _graphs(module: str, branch: Optional[str], lang: Lang, fixes: bool, output: Optional[str],
            force: bool) -> None:
    """Mermaid and DOT share one drawing model (kb.exports.text); only the syntax differs."""
    import importlib

    mod = importlib.import_module(f"kb.exports.{module}")
    write_output(mod.export(_kn(), lang.value, branch, fixes=fixes), output, force)


@export_app.command("agents-md")
@handle_errors
def agents_md(
    lang: LangOpt = Lang.en,
    branch: Annotated[Optional[list[str]], typer.Option(
        "--branch", help="only this branch (repeatable); default: all")] = None,
    output: OutOpt = None,
    force: ForceOpt = False,
    stats: Annotated[bool, typer.Option(
        "--stats", help="print bytes, lines and approximate tokens to stderr")] = False,
) -> None:
    """The complete agent SOP as Markdown, ready to paste into AGENTS.md."""
    from kb.exports import agents_md as mod

    text = mod.render(_kn(), lang.value, branch)
    write_output(text, output, force)
    if stats:
        s = mod.size(text)
        typer.echo(f"{s['bytes']} bytes, {s['lines']} lines, ~{s['approx_tokens']} tokens",
                   err=True)


@export_app.command("mermaid")
@handle_errors
def mermaid(
    branch: GraphBranchOpt = None,
    lang: LangOpt = Lang.en,
    fixes: FixesOpt = True,
    output: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Decision graphs as Mermaid: plain Mermaid for one --branch, else Markdown with fences."""
    _graphs("mermaid", branch, lang, fixes, output, force)


@export_app.command("dot")
@handle_errors
def dot(
    branch: GraphBranchOpt = None,
    lang: LangOpt = Lang.en,
    fixes: FixesOpt = True,
    output: OutOpt = None,
    force: ForceOpt = False,
) -> None:
    """Decision graphs as Graphviz DOT (one digraph per graph; `dot -Tsvg -O`)."""
    _graphs("dot", branch, lang, fixes, output, force)


@export_app.command("json")
@handle_errors
def graph_json(output: OutOpt = None, force: ForceOpt = False) -> None:
    """The whole knowledge graph as node-link JSON (networkx), sorted and stable."""
    from kb.exports import graph_json as mod

    write_output(mod.export(_kn()), output, force)


@export_app.command("skill")
@handle_errors
def skill(
    output: Annotated[str, typer.Option("--output", "-o", help="folder to write")] = "gpu-triage",
    force: Annotated[bool, typer.Option("--force", help="write into a non-empty folder")] = False,
    lang: LangOpt = Lang.en,
) -> None:
    """A skill folder: SKILL.md plus references/causes.md, checks.md and sources.md."""
    from kb.exports import skill as mod

    for p in mod.write(_kn(), output, lang=lang.value, force=force):
        typer.echo(str(p), err=True)


@export_app.command("agents-snippet")
@handle_errors
def agents_snippet(lang: LangOpt = Lang.en, output: OutOpt = None, force: ForceOpt = False) -> None:
    """A short AGENTS.md section pointing agents at `kb diagnose --format json` and `kb mcp`."""
    from kb.exports import skill as mod

    write_output(mod.snippet(_kn(), lang.value), output, force)


@handle_errors
def refs(
    group: Annotated[Optional[str], typer.Option("--group", help="only this group")] = None,
    search: Annotated[Optional[str], typer.Option(
        "--search", help="only references whose id, title, URL or text contains this")] = None,
    format: Annotated[Format, typer.Option("--format", help="md tables or json")] = Format.md,
    lang: LangOpt = Lang.en,
) -> None:
    """The reference index: authoritative links grouped by topic."""
    from kb.exports import refs as mod

    kn = _kn()
    if format is Format.json:
        text = mod.export_json(kn, group, search)
    else:
        text = mod.export_md(kn, lang.value, group, search)
    write_output(text, None)
