"""Load raw artifacts (files, directories, stdin), detect their formats, parse and merge them
into one Facts document.

Merge rules (:func:`merge_partial`): numeric sample lists concatenate in input order; string
lists are united; count maps (``compile.graph_break_reasons`` ...) add up; scalars: the first
input wins, and a different value from a later input is recorded as a conflict
``"<json.path>: <a> (from file1) vs <b> (from file2)"``. Rank states from all inputs are
re-analysed together so that one py-spy dump per rank gives the cross-rank picture.
"""

from __future__ import annotations

import inspect
import io
import itertools
import json
import math
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pydantic import ValidationError

from kb.engine.errors import InputError, KbError
from typing import TYPE_CHECKING

from kb.facts import facts_model

if TYPE_CHECKING:  # the model is built from the knowledge on first use, not at import
    from pydantic import BaseModel as Facts
from kb.inputs_blob import Blob
from kb.facts_io import drop_bad_numbers
from kb.parsers import FORMATS, HEAD_BYTES, MAX_SAMPLES, ParseResult, detect_format, get_parser, ranks
from kb.readers import incident
from kb.readers.gz import Gunzip, is_gzip
from kb.safe_text import one_line

#: count maps: values add up across inputs
_COUNTERS = frozenset({"compile.graph_break_reasons", "compile.recompile_reasons"})
#: keys recomputed after merging
_DERIVED = frozenset({"distributed.outlier_ranks"})


#: characters of free text kept over all inputs (a folder of many logs stays bounded)
PROSE_TOTAL = 256 * 1024


@dataclass
class InputBundle:
    """The merged result of all inputs."""

    facts: dict[str, Any] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: input name -> detected (or forced) format
    sources: dict[str, str] = field(default_factory=dict)
    #: the inputs' free text (bounded: :data:`PROSE_TOTAL` characters in all), whose words may
    #: name a branch when no fact does
    prose: list[str] = field(default_factory=list)


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


# -- limits ---------------------------------------------------------------------------------
#: Bytes read from one input, by format. Logs are streamed by their parsers in bounded memory,
#: so they may be large; tool outputs are parsed into per-line records and get less. Past the
#: cap the rest is ignored with a note (a truncated artifact still diagnoses).
MAX_INPUT_BYTES: dict[str, int] = {
    "training_log": 16 * 1024**3,
    "torch_compile": 1024**3,
}
MAX_OTHER_INPUT_BYTES = 64 * 1024**2
#: Characters of one line handed to a line parser; the rest of a longer line is skipped with
#: a note (a 500 MB line of ps output costs 64 KiB, not 1.6 GB).
MAX_LINE_BYTES = 64 * 1024
_BLOCK = 1 << 20


def input_cap(fmt: str) -> int:
    """How many bytes of an input in format ``fmt`` are read."""
    if fmt == "facts_json":
        from kb.facts_io import MAX_FACTS_BYTES

        return MAX_FACTS_BYTES
    return MAX_INPUT_BYTES.get(fmt, MAX_OTHER_INPUT_BYTES)


def _walk(directory: str, notes: list[str]) -> Iterator[str]:
    """Files under ``directory`` in sorted order, hidden ones left out; unreadable folders are
    reported in ``notes`` instead of being skipped silently."""

    def onerror(exc: OSError) -> None:
        notes.append(f"{exc.filename or directory}: skipped ({exc.strerror or exc})")

    for root, dirs, files in os.walk(directory, onerror=onerror):
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        for name in sorted(files):
            if not _is_hidden(name):
                yield os.path.join(root, name)


def _kind(mode: int) -> str | None:
    """What a non-regular file is, for a note; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(path: str) -> io.BufferedReader | str:
    """Open ``path`` for reading only if it is a regular file, else a note saying what it is.

    O_NONBLOCK makes the open itself return at once for a FIFO without a writer (a plain
    open() would wait forever); the type is then checked on the open descriptor, so a file
    swapped for a FIFO after a stat() cannot slip through.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            os.close(fd)
            return f"{path}: skipped ({kind})"
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise


def _whole_file(stream: Any, cap: int) -> int | None:
    """The size of the regular file ``stream`` reads when it is at most ``cap`` bytes (so it can
    be read whole, in place), else None."""
    if not isinstance(stream, (io.BufferedReader, io.FileIO)):
        return None
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) and 0 < st.st_size <= cap else None


class _Capped:
    """Chunks of ``head`` + a binary stream, at most ``limit`` bytes, remembering a cut."""

    def __init__(self, head: bytes, rest: Any, limit: int) -> None:
        self._head = head[:limit]
        self._rest = rest
        self.left = limit - len(self._head)
        self.cut = len(head) > limit

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (the head first, then the stream); b"" at the end or the cap."""
        if self._head:
            out, self._head = self._head, b""
            return out
        if self.left <= 0:
            if not self.cut and self._rest.read(1):  # anything past the cap?
                self.cut = True
            return b""
        want = self.left if n is None or n < 0 else min(n, self.left)
        data = self._rest.read(min(want, _BLOCK * 16))
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        self.left -= len(data)
        return data

    def chunks(self) -> Iterator[bytes]:
        while True:
            data = self.read(_BLOCK)
            if not data:
                return
            yield data


def _bounded_lines(src: _Capped, max_line: int, state: dict[str, int]) -> Iterator[str]:
    """Lines (with their ends) decoded as UTF-8 with replacement; a line longer than
    ``max_line`` bytes is cut there and the rest of it skipped (counted in ``state``).

    Each byte is looked at a constant number of times: linear in the input.
    """
    rest = b""
    skipping = False
    for chunk in src.chunks():
        start = 0
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            start, skipping = nl + 1, False
        data = rest + chunk[start:] if rest else chunk[start:]
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if nl + 1 - start > max_line:
                state["long_lines"] = state.get("long_lines", 0) + 1
                yield data[start:start + max_line].decode("utf-8", "replace") + "\n"
            else:
                yield data[start:nl + 1].decode("utf-8", "replace")
            start = nl + 1
        rest = data[start:]
        if len(rest) > max_line:
            state["long_lines"] = state.get("long_lines", 0) + 1
            yield rest[:max_line].decode("utf-8", "replace") + "\n"
            rest, skipping = b"", True
    if rest:
        yield rest.decode("utf-8", "replace")


def parse_binary(stream: Any, name: str, input_format: str | None, explicit: bool) -> ParseResult | str:
    """Detect and parse one binary stream, reading at most :func:`input_cap` bytes of it.

    Returns the ParseResult, or a note string when the input is skipped (only when not
    ``explicit``). Text no format claims goes to the incident reader; a non-explicit input that
    says nothing known is skipped. Raises InputError for explicit binary inputs. A parser that
    fails on odd input gives a note instead of a traceback (``KB_DEBUG=1`` re-raises).
    """
    head = stream.read(HEAD_BYTES)
    if isinstance(head, str):
        head = head.encode("utf-8", "replace")
    gz = None
    if is_gzip(head):  # a .gz log or gzipped stdin: read decompressed; the caps count those bytes
        gz = stream = Gunzip(head, stream)
        head = stream.read(HEAD_BYTES)
        if gz.damaged and not head:
            if explicit:
                raise InputError(name, f"gzip data could not be read ({gz.damaged})", "Check it with: gzip -t FILE")
            return f"{name}: skipped (gzip data could not be read)"
    if b"\x00" in head:
        if explicit:
            raise InputError(name, "binary data (NUL bytes) found", "Give a text artifact: a log, a tool's output, or facts JSON")
        return f"{name}: skipped (binary file)"
    fmt = input_format or detect_format(head.decode("utf-8", "replace"))
    if fmt is None:
        # any readable text: the general incident reader, not a refusal (issue 13)
        fmt = incident.NAME
    parser = get_parser(fmt)
    cap = input_cap(fmt)
    src = _Capped(head, stream, cap)
    # log parsers' inputs also give launch commands, env lines and message signatures
    tap = incident.Tap(src, name) if fmt in incident.TAPPED else None
    state: dict[str, int] = {}
    try:
        fast = getattr(parser, "parse_stream", None)
        # a file of lines (a line end in its head): mapping it pays; one giant line does not
        whole = _whole_file(stream, cap) if gz is None and b"\n" in head else None
        if fast is not None and tap is not None and whole is not None and \
                "observer" in inspect.signature(fast).parameters:
            # a regular file under the cap: the reader maps it and hands the tap only the lines
            # it does not take in bulk (no copy of every byte through Python)
            stream.seek(0)
            res = fast(stream, name, total=whole, observer=tap)
        elif fast is not None:
            res = fast(tap or src, name)
        else:
            res = parser.parse(_bounded_lines(tap or src, MAX_LINE_BYTES, state), name)
        if tap is not None:
            tap.finish(res)
    except KbError:
        raise
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - odd input must not become a traceback
        if os.environ.get("KB_DEBUG"):
            raise
        note = f"{name}: not parsed as {fmt} ({type(exc).__name__}: {str(exc)[:120]})"
        if explicit:
            raise InputError(name, f"could not be parsed as {fmt} ({type(exc).__name__})",
                             "Check that the file is complete, or force --input-format") from None
        return note
    if fmt == incident.NAME and not input_format and not explicit and not res.facts:
        return f"{name}: skipped (format not recognised)"  # a file in a folder that says nothing
    if gz is not None and gz.damaged:
        res.notes.append(f"{name}: the gzip data ends early ({gz.damaged}); read up to there")
    if src.cut:
        res.notes.append(f"{name}: only the first {cap} bytes were read (the {fmt} cap)")
    if state.get("long_lines"):
        res.notes.append(f"{name}: {state['long_lines']} line(s) longer than {MAX_LINE_BYTES} "
                         "bytes were cut")
    if fmt in incident.TAPPED:  # a log's words: its head (a tool's table has no prose)
        res.meta.setdefault("prose", incident.prose(
            incident.without_configs(head.decode("utf-8", "replace").splitlines())))
    res.facts, dropped = drop_bad_numbers(res.facts, name)
    res.notes.extend(dropped)
    return res


def _load_dir(path: str, input_format: str | None, bundle: InputBundle,
              results: list[ParseResult]) -> None:
    """Every regular file under ``path``; FIFOs, devices, sockets and unreadable files are
    skipped with a note (a FIFO in a log folder would otherwise block forever)."""
    for file in _walk(path, bundle.notes):
        try:
            fh = _open_regular(file)
        except OSError as exc:
            bundle.notes.append(f"{file}: skipped ({exc.strerror or exc})")
            continue
        if isinstance(fh, str):
            bundle.notes.append(fh)
            continue
        try:
            with fh:
                got = parse_binary(fh, file, input_format, False)
        except OSError as exc:
            bundle.notes.append(f"{file}: skipped ({exc.strerror or exc})")
            continue
        if isinstance(got, str):
            bundle.notes.append(got)
        else:
            results.append(got)


def _load_path(path: str, input_format: str | None) -> ParseResult:
    """One explicit file or FIFO (``<(cmd)``); devices and sockets are refused by name."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(path, "no such file or directory", "Give existing files, directories or - for stdin") from None
    except PermissionError:
        raise InputError(path, "permission denied", "Make the file readable") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    kind = _kind(mode)
    if kind is not None and not stat.S_ISFIFO(mode):
        raise InputError(path, f"not a regular file ({kind})", "Give a file, a directory or - for stdin")
    try:
        with open(path, "rb") as fh:
            return _checked(parse_binary(fh, path, input_format, True))
    except FileNotFoundError:
        raise InputError(path, "no such file or directory", "Give existing files, directories or - for stdin") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory that cannot be read", "Check its permissions") from None
    except PermissionError:
        raise InputError(path, "permission denied", "Make the file readable") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None


def load_inputs(
    paths: Sequence[str], input_format: str | None = None, stdin: TextIO | None = None
) -> InputBundle:
    """Parse every input (file, directory walked in sorted order, ``-`` for stdin, or a
    :class:`Blob` of data) and merge.

    ``input_format`` forces the format of every input. Raises InputError for a missing path, an
    unknown format, a binary file given explicitly, or merged facts that do not validate.
    """
    if input_format is not None and input_format not in FORMATS:
        raise InputError("--input-format", f"unknown format ({input_format})", f"Allowed: {', '.join(FORMATS)}")
    bundle = InputBundle()
    results: list[ParseResult] = []
    for raw_path in paths:
        if isinstance(raw_path, Blob):  # data given by a library caller, not a path
            name = one_line(raw_path.name, limit=200)
            results.append(_checked(parse_binary(raw_path.stream(), name, input_format, True)))
            continue
        raw_path = os.fspath(raw_path)
        path = one_line(raw_path, limit=1000)  # a newline in a name must not forge lines
        if raw_path == "-":
            stream = stdin if stdin is not None else sys.stdin
            raw = getattr(stream, "buffer", stream)
            results.append(_checked(parse_binary(raw, "<stdin>", input_format, True)))
        elif os.path.isdir(raw_path):
            _load_dir(raw_path, input_format, bundle, results)
        else:
            try:
                results.append(_load_path(raw_path, input_format))
            except InputError as err:
                if err.place == raw_path:  # name the file safely in the one-line error
                    err.place = path
                    err.problems = [err.line()]
                raise
    _renumber_ranks(results)
    origins: dict[str, str] = {}
    for res in results:
        bundle.sources[res.source] = res.format
        bundle.notes.extend(res.notes)
        merge_partial(bundle.facts, res.facts, res.source, origins, bundle.conflicts)
        text = res.meta.get("prose")
        room = PROSE_TOTAL - sum(map(len, bundle.prose))
        if text and room > 0:
            bundle.prose.append(text[:room])
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
        return facts_model().model_validate(facts)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']} ({_fmt(err.get('input'))[:80]})"
            for err in exc.errors()
        ]
        raise InputError(place, f"parsed facts are invalid ({problems[0]})", "Report this as a parser bug",
                         problems=problems) from None
