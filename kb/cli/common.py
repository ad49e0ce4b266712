"""What every command shares: turning KbError into one line on stderr and an exit code."""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from enum import Enum
from typing import Any, Callable, TypeVar

import typer

from kb.engine.errors import KbError

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
    from kb.safe_text import one_line

    lines = getattr(err, "problems", None) or [err.line()]
    for line in lines[:50]:
        # a file name or value from the user must not bring escape sequences to the terminal
        typer.echo(f"kb: error: {one_line(str(line), limit=2000)}", err=True)
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
    """Write to stdout, or atomically to a file (never over an existing one unless forced;
    an interrupted write leaves no partial file): :func:`kb.safe_write.write_output`."""
    from kb.safe_write import write_output as safe

    safe(text, output, force)


class ReportFormat(str, Enum):
    """Output formats of a diagnosis. ``auto``: the terminal rendering on a terminal, else md."""

    auto = "auto"
    terminal = "terminal"
    md = "md"
    json = "json"
    html = "html"


class ReportLang(str, Enum):
    """Report languages; ``auto`` follows the user's words, then LC_ALL / LC_MESSAGES / LANG."""

    auto = "auto"
    en = "en"
    zh = "zh"


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def resolve_lang(lang: str, words: str | None = None) -> str:
    """``auto`` -> ``zh`` when the user's words hold Chinese or the locale is zh*, else ``en``."""
    if lang in ("en", "zh"):
        return lang
    if words and _CJK.search(words):
        return "zh"
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:  # the first one set wins, as for gettext
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def json_safe(value: Any) -> Any:
    """Replace non-finite floats (NaN, ±Infinity) by the strings "NaN", "Inf", "-Inf": bare NaN
    is not JSON and strict parsers (jq, JSON.parse, json.loads(parse_constant=...)) reject it."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Inf" if value > 0 else "-Inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def dumps_json(value: Any) -> str:
    """Strict JSON text (``allow_nan=False`` after :func:`json_safe`), UTF-8, indented."""
    import json

    return json.dumps(json_safe(value), ensure_ascii=False, indent=2, allow_nan=False)
