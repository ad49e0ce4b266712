"""A JSON file that already is a (partial) Facts document, e.g. a user's ``facts.json`` or the
output of ``kb collect``. Detected when it is a JSON object whose keys are Facts keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.engine.errors import InputError
from kb.parsers.base import ParseResult

NAME = "facts_json"
#: a Facts document is small; refuse to buffer more than this (the same cap as ``--facts``)
MAX_BYTES = 16 * 1024 * 1024
_FIRST_KEY = re.compile(r'^\s*\{\s*"([^"\\]+)"\s*:')


def fact_keys() -> frozenset[str]:
    """The top-level keys of a facts document (from the knowledge's fact schema)."""
    from kb.loaded import load_knowledge

    fs = load_knowledge().fact_schema
    return frozenset({"schema_version", *fs.top, *fs.groups})


def sniff(head: str) -> bool:
    """A JSON object whose first key is a Facts key."""
    m = _FIRST_KEY.match(head.lstrip("\ufeff"))
    return bool(m and m.group(1) in fact_keys())


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
    from kb.facts_io import check_numbers, loads_json

    # the same reader as --facts: depth, duplicate keys and NaN/huge numbers name their field
    data = check_numbers(loads_json(text, source), source)
    if not isinstance(data, dict):
        raise InputError(source, f"facts JSON must be an object ({type(data).__name__})", "Give a JSON object")
    unknown = sorted(set(data) - fact_keys())
    if unknown:
        raise InputError(
            source, f"unknown Facts key(s) ({', '.join(unknown)})", f"Allowed: {', '.join(sorted(fact_keys()))}"
        )
    return ParseResult(format=NAME, source=source, facts=data)
