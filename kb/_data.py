"""Where the bundled data lives: ``graphs/``, ``prompts/`` and ``examples/``.

From a checkout (or an editable install) they sit at the repository root next to ``kb/``;
in a wheel they are packaged as ``kb/_bundled/<name>`` (see ``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The directory of bundled data ``name`` (``graphs``, ``prompts`` or ``examples``)."""
    bundled = _PKG / "_bundled" / name
    if bundled.is_dir():
        return bundled
    return _PKG.parent / name
