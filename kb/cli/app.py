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
from typing import Annotated, Any

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
    "refs": ("knowledge_cmd", "refs", "command"),  # multi-word --search, exit 1 on no match
    "collect": ("collect_cmd", "collect", "command"),
    "mcp": ("mcp_cmd", "mcp", "command"),
    "causes": ("knowledge_cmd", "causes", "command"),
    "thresholds": ("knowledge_cmd", "thresholds", "command"),
}
#: an example for every command's --help ("\b" keeps click from re-wrapping the lines)
EXAMPLES: dict[str, list[str]] = {
    "diagnose": ["kb diagnose -f examples/facts/gpu_util.dataloader_bound.json",
                 "kb diagnose -i logs/ --symptom 'GPU util stuck at 20%' --format html -o report.html",
                 "kb diagnose -f facts.json --format json | jq .findings"],
    "validate": ["kb validate", "kb validate --path my-graphs/"],
    "schema": ["kb schema > facts.schema.json"],
    "explain": ["kb explain oom.fragmentation", "kb explain nccl.rank_desync_timeout --lang zh"],
    "triage": ["kb triage", "kb triage -f facts.json --save facts.json --force"],
    "verify": ["kb verify --before before.json --after after.json"],
    "export": ["kb export agents-md -o AGENTS.md", "kb export mermaid --branch oom"],
    "refs": ["kb refs --search 'nccl timeout'", "kb refs --group nccl --format json"],
    "collect": ["kb collect -o facts.json", "kb collect --help"],
    "mcp": ["kb mcp"],
    "causes": ["kb causes", "kb causes --branch oom", "kb causes --search fragmentation --format json"],
    "thresholds": ["kb thresholds", "kb thresholds --format json"],
}


def epilog(name: str) -> str:
    """The "Examples:" epilog of a command's help, kept verbatim by click."""
    lines = "\n".join(f"  {e}" for e in EXAMPLES.get(name, []))
    return f"Examples:\n\n\b\n{lines}\n" if lines else ""


def _version(value: bool) -> None:
    if value:
        from kb.api import __version__

        typer.echo(f"kb {__version__}")
        raise typer.Exit()
GROUP_HELP = {"export": "Export the knowledge: agents-md, mermaid, dot, json, skill."}


def _new_app() -> typer.Typer:
    app = typer.Typer(
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish)
        help=HELP,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # help texts contain [brackets] (extras) that are not markup
        # click passes help_option_names down to every subcommand's context
        context_settings={"help_option_names": ["-h", "--help"]},
        epilog="Examples:\n\n\b\n  kb diagnose -f examples/facts/oom.fragmentation.json\n"
               "  kb causes --branch nccl\n  kb --install-completion\n",
    )

    @app.callback()
    def _root(
        version: Annotated[bool, typer.Option("--version", "-V", is_eager=True,
                                              callback=_version, help="print kb's version")] = False,
    ) -> None:
        # a callback keeps `kb <command>` a group even when it holds a single command
        pass

    return app


def _register(app: typer.Typer, name: str) -> None:
    module, attr, kind = COMMANDS[name]
    obj: Any = getattr(importlib.import_module(f"kb.cli.{module}"), attr)
    if kind == "group":
        app.add_typer(obj, name=name, help=GROUP_HELP.get(name), epilog=epilog(name))
    else:
        app.command(name, epilog=epilog(name))(obj)


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


class _Interrupted(BaseException):
    """Ctrl-C, raised past click's own KeyboardInterrupt handling (which exits 1, not 130)."""


def _on_sigint(signum: int, frame: Any) -> None:
    raise _Interrupted


def main() -> None:
    """Console-script entry point. Ctrl-C stops with exit status 130 (128 + SIGINT), the shell
    convention; reports are written only once complete, so no partial output file is left."""
    import signal

    name = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:  # not the main thread (embedded use): keep Python's default
        pass
    try:
        build([name] if name in COMMANDS else None)()
    except (_Interrupted, KeyboardInterrupt):
        sys.stderr.write("kb: interrupted\n")
        raise SystemExit(130) from None
