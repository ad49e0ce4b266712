"""Shared fixtures: the bundled knowledge, loaded once per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the incident corpora are data (a reporter's pasted `repro_test.py` is an artifact, not a test)
collect_ignore_glob = ["heldout/*", "heldout_*/*", "incidents/*"]
os.environ.setdefault("KB_NO_CACHE", "1")  # tests read the files, not a stale user cache
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def kn():
    import kb

    return kb.load_knowledge()


@pytest.fixture()
def edited_graphs(tmp_path: Path):
    """A copy of the bundled knowledge with edits: ``edit(relative path, old, new)`` replaces
    the first ``old`` (which must be there) and returns the copy's root."""
    import shutil

    root = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", root)

    def edit(rel: str, old: str, new: str) -> Path:
        p = root / rel
        text = p.read_text(encoding="utf-8")
        assert old in text, f"{rel}: {old!r} not found"
        p.write_text(text.replace(old, new, 1), encoding="utf-8")
        return root

    return edit


@pytest.fixture()
def edited_problems(edited_graphs):
    """The problems the loader reports for a copy of the knowledge with one edit
    (``problems(relative path, old, new)``), as one text; the load must fail."""
    from kb.engine.errors import KnowledgeError
    from kb.engine.knowledge import load

    def problems(rel: str, old: str, new: str) -> str:
        root = edited_graphs(rel, old, new)
        with pytest.raises(KnowledgeError) as ei:
            load(root, use_cache=False)
        return "\n".join(ei.value.problems)

    return problems
