"""Reading a facts document (or a YAML/JSON config) from a file, a stream, a string or a
mapping, with clear errors and bounded cost.

Bad input gets an :class:`InputError` listing one line per problem (the file, the JSON path
and what was expected); the user's file is only ever read. Limits, all checked before or while
parsing so that no input can hang kb or exhaust its memory:

* size: at most :data:`MAX_FACTS_BYTES` are read from any facts or config source (a file,
  ``-``/stdin, a FIFO); ``/dev/zero`` or ``yes '{'`` stop there with one line;
* devices and sockets are refused by name (a FIFO is read, bounded: ``<(cmd)`` works);
* structure: at most :data:`MAX_DEPTH` levels of nesting; duplicate JSON keys are an error
  (no silent "last one wins");
* numbers: NaN, ±Infinity, overflowing literals (``1e400``), integers longer than
  :data:`MAX_NUMBER_DIGITS` digits and magnitudes above :data:`MAX_ABS_NUMBER` are rejected,
  naming the field (:func:`check_numbers`); artifacts get the same check leniently, the value
  dropped with a warning (:func:`drop_bad_numbers`). The exception is the ``numerics``
  group, where a NaN or infinite loss or grad norm is the observation itself
  (:data:`NONFINITE_OK`);
* YAML: the safe loader, with at most :data:`MAX_YAML_ALIASES` aliases and
  :data:`MAX_YAML_NODES` nodes counted *with* aliases expanded, so a "billion laughs"
  document is refused while it is still a few hundred bytes of events.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from kb.engine.errors import InputError
from typing import TYPE_CHECKING

from kb.facts import model_for

if TYPE_CHECKING:  # the model is built from the knowledge on first use, not at import
    from pydantic import BaseModel as Facts

MAX_FACTS_BYTES = 16 * 1024 * 1024  # a facts file is small; anything bigger is a wrong file
#: facts are groups of fields of small records: 32 levels is far more than any real document
MAX_DEPTH = 32
#: an integer literal longer than this is junk (and Python refuses to convert 4,300+ digits)
MAX_NUMBER_DIGITS = 30
#: larger than any count, byte size or duration a GPU job can report (an exabyte)
MAX_ABS_NUMBER = 1e18
#: JSON-path prefixes where NaN/±Inf and huge floats are data (a diverged loss), not junk
NONFINITE_OK: tuple[str, ...] = ("$.numerics.",)
MAX_YAML_ALIASES = 100
MAX_YAML_NODES = 200_000


def _path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _place(place: str) -> str:
    """A file name fit for a one-line message (no control characters, no forged lines)."""
    from kb.safe_text import one_line

    return one_line(place, limit=300)


def validation_problems(place: str, exc: ValidationError) -> list[str]:
    """One line per validation error: ``<place> <json path>: <message> (got <value>)``."""
    lines = []
    for err in exc.errors():
        loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not a fact kb knows; see `kb schema`)"
        got = err.get("input")
        shown = "" if err["type"] in ("extra_forbidden", "missing") else f" (got {_short_json(got)})"
        lines.append(f"{_place(place)} {_path(loc)}: {msg}{shown}")
    return lines


def _short_json(value: Any) -> str:
    """At most 60 characters of ``value`` as JSON, without serialising a huge value first."""
    if isinstance(value, (dict, list)) and len(value) > 8:
        value = type(value).__name__ + f" of {len(value)} items"
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = type(value).__name__
    from kb.safe_text import one_line

    return one_line(text, limit=60)


# -- numbers and structure --------------------------------------------------------------------
class _BadNumber:
    """A literal the JSON reader met that is not a usable number (kept for the walk to report)."""

    def __init__(self, text: str, why: str) -> None:
        self.text = text[:20] + ("…" if len(text) > 20 else "")
        self.why = why


class _DupDict(dict):  # type: ignore[type-arg]
    """A JSON object that had a key more than once (``dups`` lists them)."""

    dups: list[str]


def _number_problem(value: Any, path: str) -> str | None:
    """Why ``value`` at ``path`` is not an acceptable number, or None (also for non-numbers)."""
    if isinstance(value, _BadNumber):
        if value.why.startswith("not a finite") and path.startswith(NONFINITE_OK):
            return None  # replaced by the float when the walk finishes
        return f"{value.why} ({value.text})"
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and path.startswith(NONFINITE_OK):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return "not a number (NaN)"
        if math.isinf(value):
            return "not a finite number (Infinity or an overflowing literal)"
        if abs(value) > MAX_ABS_NUMBER:
            return f"absurdly large number ({value:.3g} > {MAX_ABS_NUMBER:.0e})"
    elif isinstance(value, int):
        if value.bit_length() > 64 or abs(value) > MAX_ABS_NUMBER:
            return f"absurdly large number (over {MAX_ABS_NUMBER:.0e})"
    return None


def _walk_problems(data: Any, *, drop: bool) -> tuple[Any, list[tuple[str, str]]]:
    """``(data without bad values when drop, [(json path, problem)])``; iterative (no recursion
    limit to hit) and checks the depth."""
    problems: list[tuple[str, str]] = []
    root: list[Any] = [data]
    # (container, key in container, value, json path, depth)
    stack: list[tuple[Any, Any, Any, str, int]] = [(root, 0, data, "$", 0)]
    while stack:
        parent, key, value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            problems.append((path, f"nested more than {MAX_DEPTH} levels deep"))
            if drop:
                _remove(parent, key)
            continue
        if isinstance(value, dict):
            for dup in getattr(value, "dups", []):
                problems.append((f"{path}.{dup}", "duplicate key (each key may appear once)"))
            for k in reversed(list(value)):
                stack.append((value, k, value[k], f"{path}.{k}", depth + 1))
        elif isinstance(value, list):
            for i in range(len(value) - 1, -1, -1):
                stack.append((value, i, value[i], f"{path}[{i}]", depth + 1))
        else:
            why = _number_problem(value, path)
            if why is not None:
                problems.append((path, why))
                if drop:
                    _remove(parent, key)
            elif isinstance(value, _BadNumber):
                parent[key] = float(value.text)  # NaN/Infinity where they are data
    return root[0], problems


_GONE = object()


def _remove(parent: Any, key: Any) -> None:
    """Mark for removal (lists shrink after the walk, so indices stay valid while walking)."""
    parent[key] = _GONE


def _purge(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _purge(v) for k, v in value.items() if v is not _GONE}
    if isinstance(value, list):
        return [_purge(v) for v in value if v is not _GONE]
    return value


def check_numbers(data: Any, place: str) -> Any:
    """Raise InputError naming every field that holds NaN, ±Infinity, an over-long or absurdly
    large number, a duplicate key, or nesting deeper than :data:`MAX_DEPTH`.

    Returns ``data`` (NaN/Infinity literals turned into floats where they are allowed)."""
    data, problems = _walk_problems(data, drop=False)
    if problems:
        lines = [f"{_place(place)} {p}: {why}" for p, why in problems[:200]]
        raise InputError(_place(place), f"{len(problems)} unusable value(s) ({problems[0][0]}: "
                         f"{problems[0][1]})", "Give finite numbers of a sensible size",
                         problems=lines)
    return data


def drop_bad_numbers(data: Any, place: str) -> tuple[Any, list[str]]:
    """``data`` without the values :func:`check_numbers` would reject, and one warning per
    dropped value naming ``place`` and the field (for facts parsed from artifacts)."""
    cleaned, problems = _walk_problems(data, drop=True)
    if not problems:
        return data, []
    warnings = [f"{_place(place)}: {p} ignored: {why}" for p, why in problems[:50]]
    if len(problems) > 50:
        warnings.append(f"{_place(place)}: ... and {len(problems) - 50} more value(s) ignored")
    return _purge(cleaned), warnings


# -- reading --------------------------------------------------------------------------------
def read_capped(source: str | os.PathLike[str] | IO[bytes] | IO[str], place: str,
                limit: int = MAX_FACTS_BYTES, what: str = "facts file") -> bytes:
    """All bytes of a path or stream, refusing more than ``limit`` (read in bounded chunks, so
    an endless stream costs ``limit`` bytes at most). Devices, sockets and directories are
    refused by name; a FIFO is read (``--facts <(cmd)``)."""
    if isinstance(source, (str, os.PathLike)):
        try:
            st = os.stat(source)
        except FileNotFoundError:
            raise InputError(_place(place), "file not found") from None
        except OSError as exc:
            raise InputError(_place(place), f"cannot read ({exc.strerror})") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(_place(place), f"is a directory, expected a {what}",
                             "Use --input for directories of raw artifacts")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise InputError(_place(place), f"not a regular file ({_kind(st.st_mode)})",
                             f"Give a {what}")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise InputError(_place(place), f"too large for a {what} ({st.st_size} bytes > {limit})",
                             "Pass raw logs with --input instead")
        try:
            with open(source, "rb") as fh:
                return _read_stream(fh, place, limit, what)
        except PermissionError:
            raise InputError(_place(place), "permission denied", "Make the file readable") from None
        except OSError as exc:
            raise InputError(_place(place), f"cannot read ({exc.strerror})") from None
    return _read_stream(source, place, limit, what)


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _read_stream(stream: Any, place: str, limit: int, what: str) -> bytes:
    raw = getattr(stream, "buffer", stream)
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = raw.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogateescape")
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise InputError(_place(place), f"too large for a {what} (over {limit} bytes)",
                             "Pass raw logs with --input instead")
    return b"".join(parts)


def _decode(raw: bytes, place: str, what: str) -> str:
    if b"\x00" in raw[:8192]:
        raise InputError(_place(place), f"binary data, expected a {what}")
    return raw.decode("utf-8", errors="replace").lstrip("\ufeff")  # a BOM is not content


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dups: list[str] = []
    for k, v in pairs:
        if k in out and k not in dups:
            dups.append(k)
        out[k] = v
    if dups:
        d = _DupDict(out)
        d.dups = dups
        return d
    return out


def _parse_int(text: str) -> Any:
    digits = len(text.lstrip("-"))
    if digits > MAX_NUMBER_DIGITS:
        return _BadNumber(text, f"integer of {digits} digits")
    return int(text)


def _parse_constant(text: str) -> Any:
    return _BadNumber(text, "not a finite number")


def loads_json(text: str, place: str) -> Any:
    """Decode JSON text; InputError (with line:column) for invalid JSON or nesting too deep.

    Bad numbers and duplicate keys come back marked for :func:`check_numbers` (strict) or
    :func:`drop_bad_numbers` (lenient) to report with their JSON path."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_int=_parse_int,
                          parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{_place(place)}:{exc.lineno}:{exc.colno}", f"not valid JSON ({exc.msg})",
                         "Expected a JSON object of facts (see `kb schema`)") from None
    except RecursionError:
        raise InputError(_place(place), f"nested more than {MAX_DEPTH} levels deep",
                         "A facts document is a few levels of groups and fields") from None


def facts_from_data(data: Any, place: str = "facts") -> Facts:
    """Validate a decoded JSON document as :class:`Facts` (numbers and depth checked first)."""
    if not isinstance(data, dict):
        raise InputError(_place(place), f"expected a JSON object at the top level, got {type(data).__name__}",
                         "See `kb schema` for the shape")
    data = check_numbers(data, place)
    try:
        return model_for(data).model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(place, exc)
        raise InputError(_place(place), f"{len(problems)} invalid fact(s)", problems=problems) from None
    except RecursionError:  # pragma: no cover - check_numbers bounds the depth first
        raise InputError(_place(place), "nested too deeply") from None


def read_facts_text(text: str, place: str) -> Any:
    """Decode a facts JSON text; InputError for empty, invalid or unusable documents."""
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise InputError(_place(place), "empty file", "Expected a JSON object of facts (see `kb schema`)")
    return check_numbers(loads_json(text, place), place)


def read_facts_stream(stream: IO[bytes] | IO[str] | None = None, place: str = "<stdin>") -> Any:
    """Decode a facts document from ``stream`` (stdin by default), reading at most
    :data:`MAX_FACTS_BYTES` (``yes '{' | kb diagnose --facts -`` stops there)."""
    raw = read_capped(stream if stream is not None else sys.stdin, place)
    return read_facts_text(_decode(raw, place, "JSON text"), place)


def load_facts_file(path: str | os.PathLike[str]) -> Facts:
    """Read and validate a facts JSON file (``-``: stdin), bounded in size and depth."""
    place = str(path)
    if place == "-":
        return facts_from_data(read_facts_stream(None, "<stdin>"), "<stdin>")
    raw = read_capped(path, place)
    data = read_facts_text(_decode(raw, place, "JSON text file"), place)
    return facts_from_data(data, place)


# -- YAML -----------------------------------------------------------------------------------
def load_yaml(text: str, place: str, *, max_aliases: int = MAX_YAML_ALIASES,
              max_nodes: int = MAX_YAML_NODES) -> Any:
    """``yaml.safe_load`` with alias and expanded-size limits (billion-laughs safe).

    The document is composed into nodes first; aliases are counted and the size of the
    document with every alias expanded is computed on the node graph (memoised, so linear in
    the number of nodes) before any Python object is built.
    """
    import yaml

    class _Loader(yaml.SafeLoader):
        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > max_aliases:
                    raise _YamlLimit(f"more than {max_aliases} aliases")
            return super().compose_node(parent, index)

    if len(text) > MAX_FACTS_BYTES:
        raise InputError(_place(place), f"too large (over {MAX_FACTS_BYTES} bytes)")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes)
        return loader.construct_document(node)
    except _YamlLimit as exc:
        raise InputError(_place(place), f"YAML refused: {exc}",
                         "Anchors and aliases are limited; write the values out") from None
    except yaml.YAMLError as exc:
        from kb.safe_text import one_line

        raise InputError(_place(place), f"not valid YAML/JSON ({one_line(str(exc), 200)})") from None
    except RecursionError:
        raise InputError(_place(place), "YAML nested too deeply") from None
    finally:
        loader.dispose()


class _YamlLimit(Exception):
    pass


def _expanded_size(root: Any, limit: int) -> int:
    """Nodes of the document with aliases expanded; raises _YamlLimit above ``limit``.

    Iterative post-order over the node graph, each distinct node computed once.
    """
    import yaml

    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    on_path: set[int] = set()
    depth = 0
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            depth -= 1
            total = 1
            for child in _children(node, yaml):
                total += sizes.get(id(child), 1)
                if total > limit:
                    raise _YamlLimit(f"more than {limit} values once aliases are expanded")
            sizes[nid] = total
            continue
        if nid in sizes:
            continue
        if nid in on_path:  # a recursive alias: it can never be written out
            raise _YamlLimit("a recursive alias")
        on_path.add(nid)
        depth += 1
        if depth > 4 * MAX_DEPTH:
            raise _YamlLimit(f"nested more than {4 * MAX_DEPTH} levels deep")
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []


def read_config_data(path: str | os.PathLike[str], place: str | None = None) -> Any:
    """A YAML/JSON config file, bounded in size, aliases, depth and numbers (``--config``)."""
    place = place or str(path)
    raw = read_capped(path, place, what="config file")
    return check_numbers(load_yaml(_decode(raw, place, "YAML/JSON text file"), place), place)
