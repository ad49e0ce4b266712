"""`kb validate` and `kb schema`: the knowledge base and the facts contract."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from kb.cli.common import handle_errors


@handle_errors
def validate(
    path: Annotated[Optional[str], typer.Option("--path", help="knowledge directory (default: bundled)")] = None,
) -> None:
    """Check the knowledge graph: reachability, completeness, ids, cycles. Exit 1 on problems."""
    from engine import knowledge
    from engine.graph import build, validate as check
    from kb._data import data_dir

    kn = knowledge.load(path or data_dir("graphs"), use_cache=False)
    g = build(kn)
    problems = check(kn, g)
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
    from engine.facts import Facts

    typer.echo(json.dumps(Facts.model_json_schema(), indent=2, ensure_ascii=False))
