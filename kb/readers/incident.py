"""The general incident reader: any readable text that no specific format claims.

Engineers paste what they have into one file: a traceback, log lines, ``collect_env``, an
``nvidia-smi`` table, a benchmark summary, their launch command, ``export`` lines. This reader
splits the text into regions (:mod:`kb.readers.regions`), hands each to the parser of that
format (kb.parsers; nothing is parsed twice here), reads everything else as a log with the
training-log scanner, adds what single lines state (:mod:`kb.readers.lines`: commands, args
dumps, environment, versions) and matches the knowledge's message signatures
(:mod:`kb.readers.signatures`). Facts measured by a tool's parser come first; a line-stated
value that disagrees is reported as a conflict, not merged.

It is never detected by ``sniff``: the loader falls back to it when nothing else matches.
:class:`Tap` gives the same line facts and signatures for inputs read by the log parsers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kb.readers.signatures import MAX_UNWRAP_CHARS, Matcher, apply

if TYPE_CHECKING:
    from kb.parsers.base import ParseResult
    from kb.readers.lines import LineFacts

# kb.parsers lists this module among its parsers, so nothing from kb.parsers is imported at
# module level here (either package may be imported first): the functions import it late.

NAME = "incident"
#: formats whose inputs get line facts and signatures through :class:`Tap`
TAPPED = frozenset({"training_log", "torch_compile"})
#: bytes of a tapped input whose every line is read for line facts (commands, env, versions);
#: signatures are matched over the whole input
TAP_LINE_BYTES = 8 * 1024 * 1024
#: a tapped input is scanned for signatures in text blocks of about this size
TAP_BLOCK = 1 << 20
#: the kinds of output a note names (a paste of many tables says how many more)
MAX_KINDS_SHOWN = 12
#: characters of an input's free text kept for naming a branch (see kb.api.report_for)
PROSE_CHARS = 64 * 1024
#: an issue template's question answered "no" ("Using distributed or parallel set-up in
#: script?: No"): its words name what the job does not do
_DENIED = re.compile(r"\?\s*:?\s*(?:no|none|n/?a|false)\.?\s*$", re.I)
#: an issue template's question and its answer ("Using GPU in script?: <fill in>"): the
#: question's words are the template's, only the answer is the reporter's
_TEMPLATE_Q = re.compile(r"^[^?\n]{3,120}\?\s*:\s*")
#: a form's label left empty or "N/A" ("- GCC version (if compiling from source): N/A",
#: "Build command you used (if compiling from source):"): the template's words, nothing said
_EMPTY_FIELD = re.compile(r"^\s*[-*]?\s*[^:]{2,120}:\s*(?:n/?a|none|no|-|<[^>]*>)?\s*$", re.I)
#: an environment field, filled in ("- PyTorch version: 1.4.0", "Operating System: Ubuntu 18.04",
#: "Python: 3.7.5"): the setup's versions, not the symptom ("version" would read like a version
#: mismatch)
_ENV_FIELD = re.compile(
    r"^\s*[-*]?\s*(?:[^:?\n]{0,60}\bversions?\b[^:?\n]{0,40}(?:\((?:CPU\?/)?GPU\?(?:/TPU\?)?\))?|OS|Operating System|(?:Python )?Platform|Python"
    r"|GPU models? and configuration|GPU (?:information|info|name|model|type)|How you installed [^:\n]{0,60}|Is [A-Za-z ]{1,30}(?:available|build)|[A-Z][A-Z_]{3,40} set to"
    r"|Nvidia driver|Driver|GCC|CMake|Libc)\s*:\s*\S"
    # the rest of `python -m torch.utils.collect_env`: its header, the cuDNN library paths it
    # lists, lscpu's aligned fields ("Architecture:      x86_64") and its pip / conda lists
    r"|^\s*Collecting environment information|^\s*/\S+\.so(?:\.\d+)*\s*$"
    r"|^\s*[A-Z][\w ()/.-]{0,40}:\s{3,}\S|^\s*\[(?:pip3?|conda)\]\s"
    # a report's "Name: ..., Version: 3.10.10, ..." fields on one line
    r"|^[^\n]{0,60}\bVersion:\s*v?\d"
    # `nvcc --version`'s banner ("nvcc: NVIDIA (R) Cuda compiler driver", "Cuda compilation tools,
    # release 11.8, V11.8.89", "Build cuda_11.8.r11.8/compiler.31833905_0"), also quoted as a field
    # (OpenMMLab's collect_env: "'NVCC': 'Cuda compilation tools, release 11.7, V11.7.99'"): the
    # toolkit's version, not a compilation the job waits on
    r"|^\s*nvcc: NVIDIA \(R\) Cuda compiler driver|^[^\n]{0,40}Cuda compilation tools, release \d"
    r"|^\s*Build cuda_\S+/compiler\.", re.I)
#: a card's size stated as a spec ("VRAM: 10240 MiB", "GPU memory: 24 GB"): the setup, not a
#: memory symptom
_CARD_SIZE = re.compile(r"\b(?:VRAM|GPU memory|total memory|显存)\s*[:=]\s*\d[\d.,]*\s*(?:[KMGT]i?B|[KMGT])\b",
                        re.I)
#: a Python traceback's frame line
_FRAME = re.compile(r'\s*File "[^"]*", line \d+')
#: notes the sub-parsers write when a region they were handed holds nothing they know
_EMPTY_NOTES = ("no known training-log signal found", "no graph break, recompilation")


def sniff(head: str) -> bool:  # noqa: ARG001 - the fallback is never detected, only chosen
    """Never: this reader is the loader's fallback, not a detected format."""
    return False


def _merge(acc: dict[str, Any], part: dict[str, Any], source: str, origins: dict[str, str],
           conflicts: list[str]) -> None:
    from kb.inputs import merge_partial  # late: kb.inputs imports the parsers

    merge_partial(acc, part, source, origins, conflicts)


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Read a pasted incident (see the module docstring)."""
    from kb.parsers import config_file, get_parser, training_log
    from kb.parsers.base import ParseResult, trim
    from kb.readers import regions as _regions

    text_lines = list(lines)
    res = ParseResult(format=NAME, source=source)
    found = _regions.find_regions(text_lines)
    facts: dict[str, Any] = {}
    origins: dict[str, str] = {}
    conflicts: list[str] = []
    kinds: list[str] = []
    # one pass of the line reader: its facts, and which lines are settings (kept out of prose)
    lf = _line_facts()
    settings = [lf.feed(line) for line in text_lines]
    log: list[str] = []
    free: list[int] = []  # the log's lines by index, for its prose
    pos = 0
    for reg in found:
        log.extend(text_lines[pos:reg.start])
        free.extend(range(pos, reg.start))
        pos = reg.end
        try:
            sub = get_parser(reg.fmt).parse(iter(text_lines[reg.start:reg.end]), source)
        except Exception as exc:  # noqa: BLE001 - one odd region must not lose the rest
            res.notes.append(f"{source}: lines {reg.start + 1}-{reg.end}: not read as {reg.fmt} "
                             f"({type(exc).__name__})")
            log.extend(text_lines[reg.start:reg.end])
            free.extend(range(reg.start, reg.end))
            continue
        kinds.append(f"{reg.fmt} (lines {reg.start + 1}-{reg.end})")
        _take(res, sub, facts, origins, conflicts, reg.fmt)
        if reg.fmt == config_file.NAME:
            # a config's words are settings, not prose; its lines stay the log's, as before it
            # was read (a value the log scanner knows is not taken from it)
            log.extend(text_lines[reg.start:reg.end])
    log.extend(text_lines[pos:])
    free.extend(range(pos, len(text_lines)))
    # the free text (no tool's table, no command or settings): its words may name a branch
    # when nothing else does
    res.meta["prose"] = prose((text_lines[i] for i in free if not settings[i]), settings_read=True)
    if any(x.strip() for x in log):
        sub = training_log.parse(log, source)
        if sub.facts:
            kinds.append("log")
        _take(res, sub, facts, origins, conflicts, "log")
    own = lf.finish()
    kinds.extend(lf.kinds)
    _merge(facts, own, f"{source} (stated)", origins, conflicts)
    res.notes.extend(f"{source}: two regions disagree: {c}" for c in conflicts)
    matcher = Matcher()
    # a pasted message may be hard-wrapped
    matcher.scan("\n".join(x.rstrip("\r\n") for x in text_lines), unwrap=True)
    apply(facts, matcher.found(), res.notes, source)
    res.facts = trim(facts)
    if kinds:
        more = f", and {len(kinds) - MAX_KINDS_SHOWN} more" if len(kinds) > MAX_KINDS_SHOWN else ""
        res.notes.insert(0, f"{source}: read as a pasted incident: {', '.join(kinds[:MAX_KINDS_SHOWN])}{more}")
    if not res.facts:
        res.notes.append(f"{source}: no known fact found in this text")
    return res


def prose(lines: Iterable[str], *, settings_read: bool = False) -> str:
    """The free text of ``lines`` whose words may name a branch, at most PROSE_CHARS;
    ``settings_read``: the caller's line reader has already left the settings out."""
    out: list[str] = []
    size = 0
    for line in _prose(lines, settings_read):  # lazily: a long log is read only up to the bound
        out.append(line)
        size += len(line) + 1
        if size >= PROSE_CHARS:
            break
    return "\n".join(out)[:PROSE_CHARS]


def _prose(lines: Iterable[str], settings_read: bool) -> Iterable[str]:
    """The lines whose words may name a branch: not a traceback's frames and their source
    lines (code says ``eval_dataloader`` in any failure), not a template question answered
    "no" (nor any template question's own words), not an environment field's versions nor a
    card's memory size, not a launch command, arguments dump or
    setting (``torchrun``, ``--ddp_backend nccl``: they set the job up)."""
    code = False
    config = None if settings_read else _line_facts()
    for line in lines:
        if config is not None and config.feed(line):
            continue
        if _FRAME.match(line):
            code = True  # the frame's source line follows, indented
            continue
        if code and line[:1] in (" ", "\t"):
            code = False
            continue
        code = False
        if not _DENIED.search(line) and not _EMPTY_FIELD.match(line) and not _ENV_FIELD.match(line):
            yield _CARD_SIZE.sub(" ", _TEMPLATE_Q.sub("", line, count=1))


def without_configs(lines: list[str]) -> list[str]:
    """``lines`` less the configs among them (a log reader's input: their words are settings)."""
    from kb.parsers import config_file

    spans = config_file.find(lines)
    if not spans:
        return lines
    drop = {i for a, b in spans for i in range(a, b)}
    return [x for i, x in enumerate(lines) if i not in drop]


def _line_facts() -> LineFacts:
    from kb.readers.lines import LineFacts

    return LineFacts()


def _take(res: ParseResult, sub: ParseResult, facts: dict[str, Any], origins: dict[str, str],
          conflicts: list[str], label: str) -> None:
    """Merge one sub-parser's result: facts, notes (less 'nothing found'), loader hints."""
    _merge(facts, sub.facts, f"{res.source} ({label})", origins, conflicts)
    res.notes.extend(n for n in sub.notes if not any(e in n for e in _EMPTY_NOTES))
    for key, value in sub.meta.items():
        res.meta.setdefault(key, value)


class Tap:
    """A read-through wrapper over a binary stream that a log parser consumes: it sees every
    byte once, reads line facts over the first :data:`TAP_LINE_BYTES` and matches signatures
    over all of it, in blocks (linear, bounded memory)."""

    def __init__(self, stream: Any, source: str) -> None:
        self._stream = stream
        self.source = source
        self._pending = bytearray()
        self._lines: LineFacts = _line_facts()
        self._line_bytes = 0
        self._unwrapped_bytes = 0
        self._matcher = Matcher()
        self._configs: list[dict[str, Any]] = []  # the facts of each config seen

    def wrap(self, stream: Any) -> "Tap":
        """Read through ``stream`` from now on (a log reader's engine that reads a stream)."""
        self._stream = stream
        return self

    def read(self, n: int = -1) -> bytes:
        """Read from the wrapped stream, looking at what passes."""
        data = self._stream.read(n)
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        self.look(data)
        return data

    def look(self, data: bytes) -> None:
        """Look at ``data`` (bytes of the input, in order; a log reader hands over the lines
        it does not take in bulk)."""
        if data:
            self._pending += data
            if len(self._pending) >= TAP_BLOCK:
                cut = self._pending.rfind(b"\n") + 1
                if cut > 0:
                    self._look(bytes(self._pending[:cut]))
                    del self._pending[:cut]
                elif len(self._pending) > 4 * TAP_BLOCK:  # one huge line: look at a part
                    self._look(bytes(self._pending[:TAP_BLOCK]))
                    del self._pending[:]

    def chunks(self) -> Iterable[bytes]:
        """Blocks of the stream (what :func:`kb.inputs._bounded_lines` consumes)."""
        while True:
            data = self.read(1 << 20)
            if not data:
                return
            yield data

    def _look(self, block: bytes) -> None:
        text = block.decode("utf-8", "replace")
        # the stream's head may be a hard-wrapped paste
        self._matcher.scan(text, unwrap=self._unwrapped_bytes < MAX_UNWRAP_CHARS)
        self._unwrapped_bytes += len(block)
        if self._line_bytes < TAP_LINE_BYTES:
            self._line_bytes += len(block)
            lines = text.splitlines()
            for line in lines:
                self._lines.feed(line)
            self._read_configs(lines)

    def _read_configs(self, lines: list[str]) -> None:
        """The facts of the configs among ``lines`` (a config split by a block's end is not
        read: a log's configs are near its head)."""
        from kb.parsers import config_file

        room = config_file.MAX_CONFIGS - len(self._configs)
        for a, b in config_file.find(lines, room) if room > 0 else ():
            self._configs.append(config_file.parse(lines[a:b], self.source).facts)

    def finish(self, res: ParseResult) -> None:
        """Add the facts the stream stated and the signatures it matched to ``res``."""
        from kb.parsers.base import trim

        if self._pending:
            self._look(bytes(self._pending))
            self._pending.clear()
        own = trim(self._lines.finish())
        conflicts: list[str] = []
        origins: dict[str, str] = {}
        facts = res.facts
        _merge(facts, own, f"{self.source} (stated)", origins, conflicts)
        for got in self._configs:
            _merge(facts, got, f"{self.source} (config)", origins, conflicts)
        res.notes.extend(f"{self.source}: {c}" for c in conflicts)
        apply(facts, self._matcher.found(), res.notes, self.source)
