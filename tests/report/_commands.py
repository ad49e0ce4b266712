"""Shared helpers: every command a renderer prints must be a knowledge command, verbatim or
broken only where its language allows it, and must parse (bash -n, or Python's ast)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# examples whose loss curves hold bare NaN/Infinity are left to the facts-loader tests (the
# loader's policy on non-finite numbers is another issue's); the commands are what is tested here
EXAMPLES = sorted(p for p in (ROOT / "examples" / "facts").glob("*.json")
                  if not re.search(r"\b(NaN|-?Infinity)\b", p.read_text()))


def load_example(path: Path) -> dict[str, Any]:
    # the examples hold NaN/Infinity on purpose (loss curves): Python's json reads them
    return json.loads(path.read_text())


def known_commands(kn) -> set[str]:
    out: set[str] = set()
    for c in kn.causes.values():
        out.update(f.command.strip() for f in c.fixes)
        out.update(v.command.strip() for v in c.verify)
    out.update(ch.command.strip() for ch in kn.checks.values())
    return out


def _strip_comments_shell(text: str) -> str:
    from kb.report.terminal import _scan_shell

    out = []
    for line in text.split("\n"):
        _, at = _scan_shell(line)
        out.append(line if at is None else line[:at])
    return " ".join(" ".join(out).split())


def python_ok(text: str) -> str | None:
    import warnings

    try:
        with warnings.catch_warnings():  # shell text tried as Python: escapes warn
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            return ast.dump(ast.parse(text))
    except SyntaxError:
        return None


@lru_cache(maxsize=None)
def bash_ok(text: str) -> bool:
    bash = shutil.which("bash")
    assert bash, "bash is needed to parse the printed shell commands"
    return subprocess.run([bash, "-n", "-c", text], capture_output=True).returncode == 0


def same_program(printed: str, original: str) -> bool:
    """``printed`` runs as ``original``: same Python AST, or the same shell words once the
    backslash-newline continuations and comments are removed (and it parses with bash -n)."""
    printed, original = printed.strip("\n"), original.strip("\n")
    from kb.report.markdown import is_python

    if is_python(original):
        a, b = python_ok(printed), python_ok(original)
        return a is not None and a == b
    joined = printed.replace("\\\n", "")  # what bash does with a backslash-newline
    return bash_ok(printed) and _strip_comments_shell(joined) == _strip_comments_shell(original)


def matches_known(printed: str, known: set[str]) -> str | None:
    """The knowledge command ``printed`` stands for, if any."""
    if printed.strip() in known:
        return printed.strip()
    for k in known:
        if same_program(printed, k):
            return k
    # a knowledge command that parses in neither language (see test_markdown): it is still
    # printed word for word, broken only with shell continuations
    words = " ".join(printed.replace("\\\n", "").split())
    for k in known:
        if words == " ".join(k.split()) and not bash_ok(k) and python_ok(k) is None:
            return k
    return None


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
