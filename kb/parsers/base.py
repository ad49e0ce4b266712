"""The shared parser contract and small helpers every parser uses.

Each parser module exposes:

* ``NAME: str``: the format name (``--input-format`` value);
* ``sniff(head: str) -> bool``: cheap detection on the first ~64 KiB of text;
* ``parse(lines: Iterable[str], source: str) -> ParseResult``: a streamed parse.

A module may also expose ``parse_stream(stream: BinaryIO, source: str) -> ParseResult`` when it
has a faster path over raw bytes (training logs can be larger than 1 GB).

``ParseResult.facts`` is a PARTIAL Facts document: nested dicts and lists in exactly the JSON
shape ``kb.facts.Facts.model_validate`` accepts. Parsers never raise on bad input: they
skip what they do not understand and say so in ``notes``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kb.factpath import get_fact, set_fact  # noqa: F401 - the parsers' helpers, re-exported

#: Numeric sample lists are capped so that a 1 GB log cannot exhaust memory; the first
#: MAX_SAMPLES values are kept (the start of a run is where warm-up and divergence show).
MAX_SAMPLES = 10_000
#: Bytes of an input used for format detection.
HEAD_BYTES = 64 * 1024
#: A number as tools print it is short; a longer "number" is junk (and Python refuses to
#: convert integers of 4,300+ digits), so it is read as no value instead of costing time.
MAX_NUMBER_CHARS = 40
#: larger than any reading a tool prints for a GPU job (bytes, counts, microseconds)
MAX_ABS_VALUE = 1e18

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class ParseResult:
    """What one parser extracted from one input."""

    format: str
    source: str
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: parser-to-loader hints that are not facts (e.g. how a rank number was found)
    meta: dict[str, Any] = field(default_factory=dict)


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (iostat, py-spy and vLLM colour their output on a TTY)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def to_float(text: str) -> float | None:
    """Parse a number the way tools print it; ``None`` for N/A, ``[...]``, ``-`` or junk.

    Accepts a comma as the decimal separator (locale output of sysstat). NaN, ±Inf, values
    that overflow (``1e400``), absurd magnitudes and over-long digit strings are ``None``:
    callers do ``int()`` and arithmetic on the result, which such values would break.
    """
    t = text.strip()
    if not t or len(t) > MAX_NUMBER_CHARS or t.startswith("[") or t in {"-", "N/A", "n/a", "NA"}:
        return None
    if "," in t and "." not in t:
        t = t.replace(",", ".")
    try:
        value = float(t)
    except ValueError:
        return None
    if not math.isfinite(value) or abs(value) > MAX_ABS_VALUE:
        return None
    return value


def to_int(text: str) -> int | None:
    """An integer as tools print it, ``None`` for junk or over-long digit strings."""
    t = text.strip()
    if not t or len(t) > MAX_NUMBER_CHARS:
        return None
    try:
        value = int(t)
    except ValueError:
        return None
    return value if abs(value) <= MAX_ABS_VALUE else None


def finite(value: float | None) -> float | None:
    """The value if it is a finite float of a sensible size, else None."""
    if value is None or math.isnan(value) or math.isinf(value) or abs(value) > MAX_ABS_VALUE:
        return None
    return value


def append_sample(facts: dict[str, Any], path: str, value: Any, notes: list[str] | None = None) -> None:
    """Append to the list at ``path``, keeping at most MAX_SAMPLES entries."""
    if value is None:
        return
    *groups, key = path.split(".")
    node = facts
    for g in groups:
        node = node.setdefault(g, {})
    values = node.setdefault(key, [])
    if len(values) < MAX_SAMPLES:
        values.append(value)
    elif notes is not None and len(values) == MAX_SAMPLES:
        notes.append(f"{path}: more than {MAX_SAMPLES} samples; only the first {MAX_SAMPLES} kept")
        values.append(value)  # sentinel so the note is written once; removed by trim()


def add_unique(facts: dict[str, Any], path: str, value: str) -> None:
    """Append a string to the list at ``path`` unless it is already there."""
    *groups, key = path.split(".")
    node = facts
    for g in groups:
        node = node.setdefault(g, {})
    values = node.setdefault(key, [])
    if value not in values:
        values.append(value)


def bump(facts: dict[str, Any], path: str, key: str, by: int = 1) -> None:
    """Increment a counter inside the dict at ``path``."""
    *groups, last = path.split(".")
    node = facts
    for g in groups:
        node = node.setdefault(g, {})
    counts = node.setdefault(last, {})
    counts[key] = counts.get(key, 0) + by


def trim(facts: dict[str, Any]) -> dict[str, Any]:
    """Cut over-long sample lists back to MAX_SAMPLES and drop empty groups."""
    out: dict[str, Any] = {}
    for k, v in facts.items():
        if isinstance(v, dict) and k not in {"env", "tools"}:
            inner = trim(v) if not _is_counter(v) else v
            if inner:
                out[k] = inner
        elif isinstance(v, list):
            if v:
                out[k] = v[:MAX_SAMPLES]
        else:
            out[k] = v
    return out


def _is_counter(d: dict[str, Any]) -> bool:
    return bool(d) and all(isinstance(x, int) for x in d.values())


def clamp_percent(value: float | None) -> float | None:
    """A percent reading in 0..100, else None (counter wrap-around produces garbage)."""
    if value is None or not (0.0 <= value <= 100.0):
        return None
    return value
