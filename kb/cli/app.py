"""The typer application. Every command is registered here, explicitly, in help order."""

from __future__ import annotations

import typer

from kb.cli import collect_cmd, diagnose_cmd, knowledge_cmd, mcp_cmd, reason_cmd
from kb.cli import export_cmd

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="kb: why is my GPU training or LLM inference slow or broken, and what do I do about it.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts contain [brackets] (extras) that are not markup
)

app.command("diagnose")(diagnose_cmd.diagnose)
app.command("validate")(knowledge_cmd.validate)
app.command("schema")(knowledge_cmd.schema)
# -- commands of other modules are registered below (one line each) --
app.command("explain")(reason_cmd.explain)
app.command("triage")(reason_cmd.triage)
app.command("verify")(reason_cmd.verify)
app.add_typer(export_cmd.export_app, name="export", help="Export the knowledge: agents-md, mermaid, dot, json, skill.")
app.command("refs")(export_cmd.refs)
app.command("collect")(collect_cmd.collect)
app.command("mcp")(mcp_cmd.mcp)


def main() -> None:
    """Console-script entry point."""
    app()
