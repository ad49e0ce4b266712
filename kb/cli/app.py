"""The typer application. Every command is listed here, explicitly, in help order.

Typer turns every registered function into a click command when the program starts, and each
command module imports what it needs; for a single command that is wasted start-up time. So
:func:`main` builds an application holding only the command named on the command line (the
same functions, options and help), and the full application for anything else (``--help``,
an unknown name). ``app`` is the full application, for tests and documentation.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

HELP = "kb: why is my GPU training or LLM inference slow or broken, and what do I do about it."

#: command name -> (module in kb.cli, attribute, kind); "group" entries are typer sub-apps
COMMANDS: dict[str, tuple[str, str, str]] = {
    "diagnose": ("diagnose_cmd", "diagnose", "command"),
    "validate": ("knowledge_cmd", "validate", "command"),
    "schema": ("knowledge_cmd", "schema", "command"),
    "explain": ("reason_cmd", "explain", "command"),
    "triage": ("reason_cmd", "triage", "command"),
    "verify": ("reason_cmd", "verify", "command"),
    "export": ("export_cmd", "export_app", "group"),
    "refs": ("export_cmd", "refs", "command"),
    "collect": ("collect_cmd", "collect", "command"),
    "mcp": ("mcp_cmd", "mcp", "command"),
}
GROUP_HELP = {"export": "Export the knowledge: agents-md, mermaid, dot, json, skill."}


def _new_app() -> typer.Typer:
    app = typer.Typer(
        no_args_is_help=True,
        add_completion=False,
        help=HELP,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # help texts contain [brackets] (extras) that are not markup
    )

    @app.callback()
    def _root() -> None:
        # a callback keeps `kb <command>` a group even when it holds a single command
        pass

    return app


def _register(app: typer.Typer, name: str) -> None:
    module, attr, kind = COMMANDS[name]
    obj: Any = getattr(importlib.import_module(f"kb.cli.{module}"), attr)
    if kind == "group":
        app.add_typer(obj, name=name, help=GROUP_HELP.get(name))
    else:
        app.command(name)(obj)


def build(names: list[str] | None = None) -> typer.Typer:
    """The application with the given commands (all of them by default)."""
    app = _new_app()
    for name in names if names is not None else list(COMMANDS):
        _register(app, name)
    return app


_FULL: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    # `from kb.cli.app import app` builds the full application on first use only (PEP 562)
    global _FULL
    if name == "app":
        if _FULL is None:
            _FULL = build()
        return _FULL
    raise AttributeError(name)


def main() -> None:
    """Console-script entry point."""
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    build([name] if name in COMMANDS else None)()
