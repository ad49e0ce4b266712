"""Dotted paths into a nested facts dict (``"gpu.name"``): read and set. No imports, so any
module (a parser, the GPU table) can use them without loading the readers."""

from __future__ import annotations

from typing import Any


def set_fact(facts: dict[str, Any], path: str, value: Any, *, overwrite: bool = False) -> None:
    """Set ``facts[a][b] = value`` for the dotted ``path``; the first value wins by default."""
    if value is None:
        return
    *groups, key = path.split(".")
    node = facts
    for g in groups:
        node = node.setdefault(g, {})
    if overwrite or key not in node:
        node[key] = value


def get_fact(facts: dict[str, Any], path: str) -> Any:
    """Read a dotted path, None when absent."""
    node: Any = facts
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
