"""Reading a facts document from a file, a string or a mapping, with clear errors.

Bad input gets an :class:`InputError` listing one line per problem (JSON path and what was
expected); the user's file is only ever read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.errors import InputError
from engine.facts import Facts

MAX_FACTS_BYTES = 16 * 1024 * 1024  # a facts file is small; anything bigger is a wrong file


def _path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def validation_problems(place: str, exc: ValidationError) -> list[str]:
    """One line per validation error: ``<place> <json path>: <message> (got <value>)``."""
    lines = []
    for err in exc.errors():
        loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not a fact kb knows; see `kb schema`)"
        got = err.get("input")
        shown = "" if err["type"] in ("extra_forbidden", "missing") else f" (got {json.dumps(got, default=str)[:60]})"
        lines.append(f"{place} {_path(loc)}: {msg}{shown}")
    return lines


def facts_from_data(data: Any, place: str = "facts") -> Facts:
    """Validate a decoded JSON document as :class:`Facts`."""
    if not isinstance(data, dict):
        raise InputError(place, f"expected a JSON object at the top level, got {type(data).__name__}",
                         "See `kb schema` for the shape")
    try:
        return Facts.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(place, exc)
        raise InputError(place, f"{len(problems)} invalid fact(s)", problems=problems) from None


def read_facts_text(text: str, place: str) -> Any:
    if not text.strip():
        raise InputError(place, "empty file", "Expected a JSON object of facts (see `kb schema`)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{place}:{exc.lineno}:{exc.colno}", f"not valid JSON ({exc.msg})",
                         "Expected a JSON object of facts (see `kb schema`)") from None


def load_facts_file(path: str | os.PathLike[str]) -> Facts:
    """Read and validate a facts JSON file (``-`` is not handled here)."""
    p = Path(path)
    place = str(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise InputError(place, "file not found") from None
    except OSError as exc:
        raise InputError(place, f"cannot read ({exc.strerror})") from None
    if p.is_dir():
        raise InputError(place, "is a directory, expected a facts JSON file",
                         "Use --input for directories of raw artifacts")
    if size > MAX_FACTS_BYTES:
        raise InputError(place, f"too large for a facts file ({size} bytes > {MAX_FACTS_BYTES})",
                         "Pass raw logs with --input instead")
    raw = p.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InputError(place, "binary data, expected a JSON text file")
    text = raw.decode("utf-8", errors="replace")
    return facts_from_data(read_facts_text(text, place), place)
