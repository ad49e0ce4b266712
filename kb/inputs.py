"""Load raw artifacts (files, directories, stdin), detect their formats, parse and merge them
into one Facts document.

Merge rules (:func:`merge_partial`): numeric sample lists concatenate in input order; string
lists are united; count maps (``compile.graph_break_reasons`` ...) add up; scalars: the first
input wins, and a different value from a later input is recorded as a conflict
``"<json.path>: <a> (from file1) vs <b> (from file2)"``. Rank states from all inputs are
re-analysed together so that one py-spy dump per rank gives the cross-rank picture.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pydantic import ValidationError

from engine.errors import InputError
from engine.facts import Facts
from kb.parsers import FORMATS, HEAD_BYTES, MAX_SAMPLES, ParseResult, detect_format, get_parser, ranks

#: count maps: values add up across inputs
_COUNTERS = frozenset({"compile.graph_break_reasons", "compile.recompile_reasons"})
#: keys recomputed after merging
_DERIVED = frozenset({"distributed.outlier_ranks"})


@dataclass
class InputBundle:
    """The merged result of all inputs."""

    facts: dict[str, Any] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: input name -> detected (or forced) format
    sources: dict[str, str] = field(default_factory=dict)


def _fmt(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def merge_partial(
    acc: dict[str, Any],
    part: dict[str, Any],
    source: str,
    origins: dict[str, str],
    conflicts: list[str],
    prefix: str = "",
) -> None:
    """Merge ``part`` (from ``source``) into ``acc`` in place; see the module docstring.

    ``origins`` maps a scalar's JSON path to the input that set it (for conflict messages).
    """
    for key, value in part.items():
        path = f"{prefix}{key}"
        if path in _DERIVED:
            continue
        if key not in acc:
            if isinstance(value, dict):
                acc[key] = {}
                merge_partial(acc[key], value, source, origins, conflicts, f"{path}.")
            elif isinstance(value, list):
                acc[key] = list(value[:MAX_SAMPLES])
            else:
                acc[key] = value
                origins[path] = source
            continue
        cur = acc[key]
        if path in _COUNTERS and isinstance(cur, dict) and isinstance(value, dict):
            for k, n in value.items():
                if isinstance(n, int) and isinstance(cur.get(k, 0), int):
                    cur[k] = cur.get(k, 0) + n
            continue
        if isinstance(cur, dict) and isinstance(value, dict):
            merge_partial(cur, value, source, origins, conflicts, f"{path}.")
        elif isinstance(cur, list) and isinstance(value, list):
            if all(isinstance(v, str) for v in itertools.chain(cur, value)):
                cur.extend(v for v in value if v not in cur)
            else:
                cur.extend(value[: max(0, MAX_SAMPLES - len(cur))])
        elif not _same(cur, value):
            conflicts.append(
                f"{path}: {_fmt(cur)} (from {origins.get(path, 'an earlier input')}) vs {_fmt(value)} (from {source})"
            )


def merge_facts(explicit: dict[str, Any], derived: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Combine the user's facts (``explicit``, wins) with facts derived from artifacts.

    Returns ``(facts, conflicts)``. A derived scalar or list that differs from an explicit,
    non-empty one is reported as a conflict and dropped.
    """
    conflicts: list[str] = []

    def walk(exp: dict[str, Any], der: dict[str, Any], prefix: str) -> dict[str, Any]:
        out = dict(exp)
        for key, dv in der.items():
            path = f"{prefix}{key}"
            if key not in exp or exp[key] is None or exp[key] == [] or exp[key] == {}:
                out[key] = dv
                continue
            ev = exp[key]
            if isinstance(ev, dict) and isinstance(dv, dict):
                out[key] = walk(ev, dv, f"{path}.")
            elif not _same(ev, dv) and dv not in (None, [], {}):
                conflicts.append(f"{path}: {_fmt(ev)} (from facts.json) vs {_fmt(dv)} (from artifacts)")
        return out

    return walk(explicit, derived, ""), conflicts


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


def _walk(directory: str) -> Iterator[str]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        for name in sorted(files):
            if not _is_hidden(name):
                yield os.path.join(root, name)


def _text_lines(stream: io.BufferedIOBase | io.RawIOBase | Any, head: bytes) -> Iterator[str]:
    """Lines of ``head`` + the rest of a binary stream, decoded as UTF-8 with replacement."""
    text = io.TextIOWrapper(io.BufferedReader(_Prefixed(head, stream)), encoding="utf-8", errors="replace", newline="")
    yield from text


class _Prefixed(io.RawIOBase):
    """A raw stream that replays already-read bytes before the rest of the stream."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buf))
        if not data:
            return 0
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        n = len(data)
        buf[:n] = data
        return n


def parse_binary(stream: Any, name: str, input_format: str | None, explicit: bool) -> ParseResult | str:
    """Detect and parse one binary stream.

    Returns the ParseResult, or a note string when the input is skipped (only when not
    ``explicit``). Raises InputError for explicit binary or unknown inputs.
    """
    head = stream.read(HEAD_BYTES)
    if isinstance(head, str):
        head = head.encode("utf-8", "replace")
    if b"\x00" in head:
        if explicit:
            raise InputError(name, "binary data (NUL bytes) found", "Give a text artifact: a log, a tool's output, or facts JSON")
        return f"{name}: skipped (binary file)"
    fmt = input_format or detect_format(head.decode("utf-8", "replace"))
    if fmt is None:
        if explicit:
            raise InputError(
                name, "format not recognised",
                f"Pass --input-format with one of: {', '.join(FORMATS)}",
            )
        return f"{name}: skipped (format not recognised)"
    parser = get_parser(fmt)
    fast = getattr(parser, "parse_stream", None)
    if fast is not None:
        return fast(_BytesJoin(head, stream), name)
    return parser.parse(_text_lines(stream, head), name)


class _BytesJoin:
    """Minimal ``read(n)`` over head bytes followed by a binary stream."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        data = self._rest.read(n)
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        return data


def load_inputs(
    paths: Sequence[str], input_format: str | None = None, stdin: TextIO | None = None
) -> InputBundle:
    """Parse every input (file, directory walked in sorted order, or ``-`` for stdin) and merge.

    ``input_format`` forces the format of every input. Raises InputError for a missing path, an
    unknown format, a binary file given explicitly, or merged facts that do not validate.
    """
    if input_format is not None and input_format not in FORMATS:
        raise InputError("--input-format", f"unknown format ({input_format})", f"Allowed: {', '.join(FORMATS)}")
    bundle = InputBundle()
    results: list[ParseResult] = []
    for path in paths:
        if path == "-":
            stream = stdin if stdin is not None else __import__("sys").stdin
            raw = getattr(stream, "buffer", stream)
            results.append(_checked(parse_binary(raw, "<stdin>", input_format, True)))
            continue
        if os.path.isdir(path):
            for file in _walk(path):
                try:
                    with open(file, "rb") as fh:
                        got = parse_binary(fh, file, input_format, False)
                except OSError as exc:
                    bundle.notes.append(f"{file}: skipped ({exc.strerror})")
                    continue
                if isinstance(got, str):
                    bundle.notes.append(got)
                else:
                    results.append(got)
            continue
        try:
            with open(path, "rb") as fh:
                results.append(_checked(parse_binary(fh, path, input_format, True)))
        except FileNotFoundError:
            raise InputError(path, "no such file or directory", "Give existing files, directories or - for stdin") from None
        except IsADirectoryError:
            raise InputError(path, "is a directory that cannot be read", "Check its permissions") from None
        except PermissionError:
            raise InputError(path, "permission denied", "Make the file readable") from None
    _renumber_ranks(results)
    origins: dict[str, str] = {}
    for res in results:
        bundle.sources[res.source] = res.format
        bundle.notes.extend(res.notes)
        merge_partial(bundle.facts, res.facts, res.source, origins, bundle.conflicts)
    forced = {r for res in results for r in res.meta.get("forced_outliers", [])}
    _reanalyse_ranks(bundle, forced)
    _checkpoint_waits(bundle, results)
    validate(bundle.facts, ", ".join(bundle.sources) or "inputs")
    return bundle


def _checked(got: ParseResult | str) -> ParseResult:
    assert not isinstance(got, str)  # explicit inputs raise instead of returning a note
    return got


def _renumber_ranks(results: list[ParseResult]) -> None:
    """One-dump files whose rank is unknown get their position among such files as rank."""
    order = [r for r in results if r.meta.get("rank_sources") == ["order"]]
    if len(order) < 2:
        return
    for i, res in enumerate(order):
        states = res.facts.get("distributed", {}).get("rank_states", [])
        for st in states:
            st["rank"] = i
        status = res.meta.get("rank_status")
        if status:
            res.meta["rank_status"] = {i: next(iter(status.values()))}


def _reanalyse_ranks(bundle: InputBundle, forced: set[int]) -> None:
    dist = bundle.facts.get("distributed")
    if not dist or not (dist.get("rank_states") or forced):
        return
    states, outliers, notes = ranks.analyse(dist.get("rank_states", []), timeout_op=dist.get("timeout_op"))
    dist["rank_states"] = states
    if outliers or forced:
        dist["outlier_ranks"] = sorted(set(outliers) | forced)
    bundle.notes.extend(n for n in notes if n not in bundle.notes)


def _checkpoint_waits(bundle: InputBundle, results: list[ParseResult]) -> None:
    """One rank in a checkpoint save while the others wait: judged over all py-spy inputs."""
    status: dict[int, str] = {}
    for res in results:
        for rank, st in res.meta.get("rank_status", {}).items():
            status.setdefault(rank, st)
    if len(status) < 2:
        return
    for group, values in ranks.checkpoint_wait(status).items():
        bundle.facts.setdefault(group, {}).update(values)


def validate(facts: dict[str, Any], place: str) -> Facts:
    """Validate merged facts; InputError lists every problem with its JSON path."""
    try:
        return Facts.model_validate(facts)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']} ({_fmt(err.get('input'))[:80]})"
            for err in exc.errors()
        ]
        raise InputError(place, f"parsed facts are invalid ({problems[0]})", "Report this as a parser bug",
                         problems=problems) from None
