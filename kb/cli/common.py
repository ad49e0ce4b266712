"""What every command shares: turning KbError into one line on stderr and an exit code."""

from __future__ import annotations

import functools
import os
import sys
from enum import Enum
from typing import Any, Callable, TypeVar

import typer

from engine.errors import KbError

F = TypeVar("F", bound=Callable[..., Any])

#: documented exit codes (README "Exit codes")
EXIT_OK = 0
EXIT_FINDING = 1  # a finding at or above --fail-on; or `kb validate` found problems
EXIT_INPUT = 2  # bad input
EXIT_INCONCLUSIVE = 3  # the facts do not decide anything


class Lang(str, Enum):
    """Report and export languages."""

    en = "en"
    zh = "zh"


class Format(str, Enum):
    """Output formats of reports and listings."""

    md = "md"
    json = "json"


def fail(err: KbError) -> None:
    """Print the error's lines to stderr and exit with its code (a traceback only with --debug)."""
    if os.environ.get("KB_DEBUG"):
        raise err
    lines = getattr(err, "problems", None) or [err.line()]
    for line in lines[:50]:
        typer.echo(f"kb: error: {line}", err=True)
    if len(lines) > 50:
        typer.echo(f"kb: error: ... and {len(lines) - 50} more", err=True)
    raise typer.Exit(err.exit_code)


def handle_errors(func: F) -> F:
    """Decorate a command so that KbError becomes a clean one-line error and exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KbError as err:
            fail(err)
        except BrokenPipeError:  # `kb ... | head` closed the pipe: not an error of ours
            sys.stderr.close()
            raise typer.Exit(EXIT_OK) from None

    return wrapper  # type: ignore[return-value]


def write_output(text: str, output: str | None, force: bool = False) -> None:
    """Write to a file (never over an existing one unless forced) or to stdout."""
    if output in (None, "-"):
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    from pathlib import Path

    p = Path(output)
    if p.exists() and not force:
        raise KbError(str(p), "file exists, not overwritten", "Pass --force to replace it")
    p.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
