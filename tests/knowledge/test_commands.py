"""Every command the knowledge prints runs as printed: it parses as a shell command line
(``bash -n``) or as Python source, and the regexes it hands to rg / grep compile.

rg uses Rust's regex syntax and ``grep -E`` POSIX ERE; for the patterns the knowledge uses both
agree with Python's ``re`` on what matters here, and ``\\|`` (a literal pipe in both, audit T3)
is refused outright.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest

import kb

KN = kb.load_knowledge()


def _commands() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for cid, c in KN.causes.items():
        out += [(f"{cid} fix {i}", f.command) for i, f in enumerate(c.fixes)]
        out += [(f"{cid} verify {i}", v.command) for i, v in enumerate(c.verify)]
    out += [(f"check {k}", chk.command) for k, chk in KN.checks.items()]
    return out


COMMANDS = _commands()


def _shell_ok(cmd: str) -> bool:
    r = subprocess.run(["bash", "-n", "-c", cmd], capture_output=True, text=True, timeout=10)
    return r.returncode == 0


def _python_ok(cmd: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            compile(cmd, "<knowledge>", "exec")
    except SyntaxError:
        return False
    return True


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed to parse shell")
@pytest.mark.parametrize("where,cmd", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_command_parses(where: str, cmd: str) -> None:
    assert _shell_ok(cmd) or _python_ok(cmd), f"{where}: neither shell nor Python: {cmd}"


def _patterns(cmd: str) -> list[str]:
    """The pattern arguments of rg / grep / egrep in a shell command line."""
    try:
        words = shlex.split(cmd, comments=False)
    except ValueError:
        return []
    out = []
    for i, w in enumerate(words):
        if w in ("rg", "grep", "egrep") or w.endswith("/rg"):
            rest = words[i + 1:]
            j = 0
            while j < len(rest) and rest[j].startswith("-"):
                # options that take a value
                j += 2 if rest[j] in ("-e", "-m", "-A", "-B", "-C", "-g", "--glob", "-t") else 1
                if rest[j - 1] == "-e" and j - 1 < len(rest):
                    out.append(rest[j - 1 + 1] if j < len(rest) else "")
            if j < len(rest) and not rest[j].startswith("-"):
                out.append(rest[j])
    return [p for p in out if p]


PATTERNS = [(w, p) for w, c in COMMANDS for p in _patterns(c)]


@pytest.mark.parametrize("where,pattern", PATTERNS, ids=[f"{w}:{p[:30]}" for w, p in PATTERNS])
def test_search_patterns_compile(where: str, pattern: str) -> None:
    assert "\\|" not in pattern, f"{where}: '\\|' is a literal pipe in rg and grep -E (T3)"
    re.compile(pattern)


def test_there_are_commands_and_patterns() -> None:
    assert len(COMMANDS) > 150 and len(PATTERNS) > 10
