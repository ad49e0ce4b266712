"""The knowledge bases loaded in this process (once each): the bundled one by default."""

from __future__ import annotations

import os
from pathlib import Path

from kb.engine import knowledge as _knowledge
from kb.engine.knowledge import Knowledge
from kb._data import data_dir

_KNOWLEDGE: dict[str, Knowledge] = {}


def load_knowledge(path: str | os.PathLike[str] | None = None) -> Knowledge:
    """Load (once per process) and validate the knowledge base; the bundled one by default."""
    root = str(Path(path) if path is not None else data_dir("graphs"))
    kn = _KNOWLEDGE.get(root)
    if kn is None:
        kn = _knowledge.load(root)
        _KNOWLEDGE[root] = kn
    return kn
