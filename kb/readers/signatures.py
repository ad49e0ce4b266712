"""Message signatures from the knowledge, matched against text in linear time.

Each cause file may list ``signatures`` (a Python regex as a tool prints the message, what it
means, the code that prints it, ``sets``: facts the message states). Running ~50 regexes on every
line of a multi-GB log would be slow and a careless ``.*`` can backtrack quadratically, so each
pattern gets a *required literal* (the longest run of plain characters it must contain): the
text is scanned with ``str.find`` per literal (memchr-fast, linear), and the regex runs only on
the few lines that hold the literal, cut to :data:`MAX_MATCH_LINE` characters. A pattern with
no usable literal runs on every line, cut the same way, for at most :data:`MAX_PLAIN_LINES`
lines. Each signature records its first match only (one evidence line is enough).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: characters of a line a signature regex sees (messages are short; bounds backtracking)
MAX_MATCH_LINE = 2048
#: literal hits examined per signature before giving up on it (a literal on every line)
MAX_HITS = 2000
#: lines a literal-free pattern is tried on per text block
MAX_PLAIN_LINES = 20_000
#: literals shorter than this do not narrow the search enough to be worth it
MIN_LITERAL = 4
#: a pasted text up to this size is also read with its hard-wrapped lines joined
MAX_UNWRAP_CHARS = 256 * 1024

_META = set(".^$*+?{}[]|()")
_ESCAPED_LITERAL = set(".^$*+?{}[]|()\\/-: '\"#%&,;<=>@!`~")


@dataclass(frozen=True)
class Signature:
    """One compiled signature of one cause."""

    cause: str
    regex: re.Pattern[str]
    literals: tuple[str, ...]  # any one of them must be in a matching line; () = none known
    sets: dict[str, Any]
    counter: bool = False  # it speaks against its cause: facts only, no evidence


@dataclass
class Hit:
    """The first line a signature matched."""

    cause: str
    line: str
    sets: dict[str, Any] = field(default_factory=dict)
    counter: bool = False


def _skip_group(p: str, i: int) -> int:
    """Index just past the group or class that starts at ``p[i]``."""
    if p[i] == "[":
        j = i + 1
        if j < len(p) and p[j] == "^":
            j += 1
        if j < len(p) and p[j] == "]":
            j += 1
        while j < len(p) and p[j] != "]":
            j += 2 if p[j] == "\\" else 1
        return j + 1
    depth = 0
    j = i
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _skip_group(p, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def _top_alternatives(p: str) -> list[str]:
    """Split a pattern at its top-level ``|`` (outside groups and classes)."""
    parts, start, i = [], 0, 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if c in "([":
            i = _skip_group(p, i)
            continue
        if c == "|":
            parts.append(p[start:i])
            start = i + 1
        i += 1
    parts.append(p[start:])
    return parts


def required_literal(alt: str) -> str:
    """The longest run of plain characters that every match of ``alt`` contains ('' if none).

    Conservative: a character followed by a quantifier that allows zero (``?``, ``*``, ``{``)
    ends the run without it; groups, classes and escapes like ``\\d`` break a run.
    """
    best, run, i = "", "", 0
    while i < len(alt):
        c = alt[i]
        nxt_i = i + 1
        if c == "\\" and i + 1 < len(alt):
            ch = alt[i + 1]
            nxt_i = i + 2
            if ch in _ESCAPED_LITERAL:
                lit = ch
            else:  # \d \w \s \b ...: not a literal
                best, run = max(best, run, key=len), ""
                i = nxt_i
                continue
        elif c in "([":
            best, run = max(best, run, key=len), ""
            i = _skip_group(alt, i)
            continue
        elif c in _META:
            if c == "+":  # x+ = at least one x: the run so far holds
                best, run = max(best, run, key=len), ""
            elif c in "?*{":
                best, run = max(best, run[:-1], key=len), ""
                if c == "{":
                    j = alt.find("}", i)
                    nxt_i = j + 1 if j >= 0 else len(alt)
            else:
                best, run = max(best, run, key=len), ""
            i = nxt_i
            continue
        else:
            lit = c
        quant = alt[nxt_i] if nxt_i < len(alt) else ""
        if quant in ("?", "*", "{"):
            best, run = max(best, run, key=len), ""
        else:
            run += lit
        i = nxt_i
    return max(best, run, key=len)


def literals_of(pattern: str) -> tuple[str, ...]:
    """One required literal per top-level alternative; () when some alternative has none."""
    if pattern.startswith("(?"):  # inline flags (case-insensitive ...): no literal search
        return ()
    out = []
    for alt in _top_alternatives(pattern):
        lit = required_literal(alt)
        if len(lit) < MIN_LITERAL:
            return ()
        out.append(lit)
    return tuple(out)


def compile_signatures(knowledge: Any) -> list[Signature]:
    """Every cause's signatures, compiled once; a pattern that does not compile is left out
    (the knowledge validator rejects those already)."""
    out: list[Signature] = []
    for cause_id, cause in knowledge.causes.items():
        for sig in getattr(cause, "signatures", ()) or ():
            try:
                rx = re.compile(sig.pattern)
            except re.error:
                continue
            out.append(Signature(cause_id, rx, literals_of(sig.pattern), dict(sig.sets), sig.counter))
    return out


_CACHE: dict[str, list[Signature]] = {}


def signatures_for(knowledge: Any) -> list[Signature]:
    """``knowledge``'s signatures, compiled once per knowledge version."""
    key = f"{knowledge.digest}{knowledge.root}"
    got = _CACHE.get(key)
    if got is None:
        got = _CACHE[key] = compile_signatures(knowledge)
    return got


def default_signatures() -> list[Signature]:
    """The bundled knowledge's signatures (compiled once per process)."""
    from kb.loaded import load_knowledge

    return signatures_for(load_knowledge())


def _line_at(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, (len(text) if end < 0 else end)


_WRAPPED = re.compile(r"(?<=\S)[ \t]*\n[ \t]*(?=[a-z(])")  # never across a blank line


_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")


def unwrapped(text: str) -> str:
    """``text`` with hard-wrapped lines joined: a line break followed by a lower-case word or
    "(" continues the sentence before it (a message pasted from a narrow terminal or an email,
    "... killed by signal: Bus\\nerror. It is possible ..."), and runs of spaces inside a line
    made one (a page or an editor that re-spaced the paste: "Function  'SqrtBackward'  returned
    nan"). Only for signatures, never for line-based readers (a log's "loss: 0.3" lines start in
    lower case too; a table's columns are its spaces)."""
    return _SPACES.sub(" ", _WRAPPED.sub(" ", text))


class Matcher:
    """Scans text (whole or block by block) and keeps each signature's first matching line."""

    def __init__(self, signatures: list[Signature] | None = None) -> None:
        self.signatures = default_signatures() if signatures is None else signatures
        self.hits: dict[int, Hit] = {}

    def scan(self, text: str, *, unwrap: bool = False) -> None:
        """Look for every not-yet-matched signature in ``text`` (complete lines); ``unwrap``:
        also in ``text`` with its hard-wrapped lines joined (a paste up to
        :data:`MAX_UNWRAP_CHARS`, read again only where joining changed it)."""
        self._scan(text)
        if unwrap and len(text) <= MAX_UNWRAP_CHARS and len(self.hits) < len(self.signatures):
            joined = unwrapped(text)
            if joined != text:
                self._scan(joined)

    def _scan(self, text: str) -> None:
        plain: list[int] = []
        for idx, sig in enumerate(self.signatures):
            if idx in self.hits:
                continue
            if not sig.literals:
                plain.append(idx)
                continue
            self._scan_literal(idx, sig, text)
        if plain:
            self._scan_plain(plain, text)

    def _scan_literal(self, idx: int, sig: Signature, text: str) -> None:
        tried = 0
        for lit in sig.literals:
            pos = text.find(lit)
            while pos >= 0 and tried < MAX_HITS:
                tried += 1
                start, end = _line_at(text, pos)
                # the literal may sit far into a long line: look at a window around it
                lo = max(start, pos - MAX_MATCH_LINE // 2)
                line = text[lo:min(end, lo + MAX_MATCH_LINE)]
                if sig.regex.search(line):
                    self.hits[idx] = Hit(sig.cause, text[start:end][:MAX_MATCH_LINE].strip(), sig.sets,
                                         sig.counter)
                    return
                pos = text.find(lit, end)

    def _scan_plain(self, plain: list[int], text: str) -> None:
        for n, line in enumerate(text.splitlines()):
            if n >= MAX_PLAIN_LINES:
                return
            cut = line[:MAX_MATCH_LINE]
            for idx in plain:
                if idx not in self.hits and self.signatures[idx].regex.search(cut):
                    sig = self.signatures[idx]
                    self.hits[idx] = Hit(sig.cause, cut.strip(), sig.sets, sig.counter)

    def found(self) -> list[Hit]:
        """The hits, in the knowledge's signature order."""
        return [self.hits[i] for i in sorted(self.hits)]


def apply(facts: dict[str, Any], hits: list[Hit], notes: list[str], source: str) -> None:
    """Record matched cause ids in ``signatures`` and state each hit's ``sets`` facts (a
    counter signature's facts only: it is no evidence for its cause).

    A fact the text states explicitly wins over a signature's ``sets`` when they disagree
    (the note says so): the message is evidence, the stated value is a measurement.
    """
    if not hits:
        return
    for hit in hits:
        if not hit.counter:
            ids = facts.setdefault("signatures", [])
            if hit.cause not in ids:
                ids.append(hit.cause)
        for path, value in hit.sets.items():
            *groups, key = path.split(".")
            node = facts
            for g in groups:
                node = node.setdefault(g, {})
            if key not in node:
                node[key] = value
            elif node[key] != value:
                notes.append(f"{source}: signature of {hit.cause} says {path}={value!r}, "
                             f"the text says {node[key]!r}; kept the text's value")
    for hit in hits:
        line = hit.line if len(hit.line) <= 200 else hit.line[:197] + "..."
        what = f"message against {hit.cause}" if hit.counter else f"message of {hit.cause}"
        notes.append(f"{source}: {what}: {line}")
