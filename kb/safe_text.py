"""Terminal hygiene for user-derived text: nothing a log or facts file holds can drive the terminal.

A fact string is printed to a terminal (reports, warnings, error lines). Escape sequences in it
could recolour the screen, rewrite earlier lines, set the window title or, with OSC 52, the
clipboard. :func:`clean_text` removes every escape sequence and control character (keeping
newlines and tabs unless asked not to), plus the bidirectional overrides that make text read
differently from what it is. :func:`one_line` also folds line breaks, so that a file name
cannot forge extra ``kb: error:`` lines. Both are linear in the length of the text.

Markdown and HTML escaping belong to the report renderers (``kb/report``), not here.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (ECMA-48): OSC/DCS/SOS/PM/APC strings up to their terminator (BEL or
# ST) or the end of the text, CSI with parameters, and two-byte escapes. The classes are
# disjoint from their terminators, so the scan never backtracks.
_ESCAPES = re.compile(
    r"\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC 52 (clipboard), title, DCS...
    r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # the same, 8-bit C1 form
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: colours, cursor moves, erase
    r"|\x1b[ -/]*[0-~]?"  # two-byte escapes (ESC c resets the terminal)
)
_C1_INTRO = re.compile(r"[\x90-\x9f]")
_CONTROLS = [c for c in range(0x00, 0x20) if c not in (0x09, 0x0A)] + [0x7F] + list(range(0x80, 0xA0))
# bidi embeddings/overrides/isolates: "Trojan Source" text that displays reordered
_BIDI = [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_DROP = dict.fromkeys(_CONTROLS + _BIDI)
_DROP_ALL = dict.fromkeys(_CONTROLS + _BIDI + [0x09, 0x0A])


def clean_text(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without escape sequences, control characters and bidi overrides.

    Newlines and tabs survive when ``keep_newlines`` (a multi-line report stays multi-line);
    a carriage return is dropped, since on a terminal it rewrites the line it ends.
    """
    if not text:
        return text
    if "\x1b" in text or _C1_INTRO.search(text):
        text = _ESCAPES.sub("", text)
    return text.translate(_DROP if keep_newlines else _DROP_ALL)


def one_line(text: str, limit: int = 500) -> str:
    """``text`` cleaned, with every line break shown as a space, cut to ``limit`` characters."""
    text = clean_text(text.replace("\r\n", " ").replace("\n", " ").replace("\t", " "),
                      keep_newlines=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
