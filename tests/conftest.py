"""Shared fixtures: the bundled knowledge, loaded once per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("KB_NO_CACHE", "1")  # tests read the files, not a stale user cache
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def kn():
    import kb

    return kb.load_knowledge()
