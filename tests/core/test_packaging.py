"""One top-level import: the code refers to the engine as ``kb.engine`` (or relatively inside
it), never as a top-level ``engine`` package, which would load a second copy of every class
(and break in a folder that has its own ``engine/``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ABSOLUTE = re.compile(r"^\s*(from engine[\s.]|import engine\b)", re.M)


def test_no_absolute_engine_imports() -> None:
    bad = []
    for folder in ("engine", "kb", "tests", "benchmarks", "scenarios", "scripts"):
        base = ROOT / folder
        if not base.is_dir():
            continue
        for p in base.rglob("*.py"):
            if "kb/engine" in p.as_posix():  # the link to engine/, already scanned
                continue
            for m in ABSOLUTE.finditer(p.read_text(encoding="utf-8")):
                bad.append(f"{p.relative_to(ROOT)}: {m.group(0).strip()}")
    assert bad == []


def test_kb_engine_is_the_repository_engine() -> None:
    import kb.engine.knowledge as k

    assert Path(k.__file__).resolve().parent == (ROOT / "engine").resolve()
