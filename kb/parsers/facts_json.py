"""A JSON file that already is a (partial) Facts document, e.g. a user's ``facts.json`` or the
output of ``kb collect``. Detected when it is a JSON object whose keys are Facts keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from engine.errors import InputError
from engine.facts import Facts
from kb.parsers.base import ParseResult

NAME = "facts_json"
FACT_KEYS: frozenset[str] = frozenset(Facts.model_fields)
#: a Facts document is small; refuse to buffer more than this
MAX_BYTES = 64 * 1024 * 1024
_FIRST_KEY = re.compile(r'^\s*\{\s*"([^"\\]+)"\s*:')


def sniff(head: str) -> bool:
    """A JSON object whose first key is a Facts key."""
    m = _FIRST_KEY.match(head.lstrip("\ufeff"))
    return bool(m and m.group(1) in FACT_KEYS)


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Load the object; structure errors surface when the merged facts are validated.

    Raises InputError when the text is not a JSON object with only Facts keys.
    """
    parts: list[str] = []
    size = 0
    for line in lines:
        size += len(line)
        if size > MAX_BYTES:
            raise InputError(source, f"facts JSON is too large (over {MAX_BYTES} bytes)", "Give a Facts document of a few KiB")
        parts.append(line)
    text = "".join(parts).lstrip("\ufeff")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}:{exc.lineno}", f"invalid JSON ({exc.msg})", "Give a JSON object with Facts keys"
        ) from None
    if not isinstance(data, dict):
        raise InputError(source, f"facts JSON must be an object ({type(data).__name__})", "Give a JSON object")
    unknown = sorted(set(data) - FACT_KEYS)
    if unknown:
        raise InputError(
            source, f"unknown Facts key(s) ({', '.join(unknown)})", f"Allowed: {', '.join(sorted(FACT_KEYS))}"
        )
    return ParseResult(format=NAME, source=source, facts=data)
