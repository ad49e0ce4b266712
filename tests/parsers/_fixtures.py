"""Shared helpers for the parser tests: fixture paths and a parse-and-validate shortcut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb.facts import Facts
from kb.inputs import InputBundle, load_inputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


def load(name: str, input_format: str | None = None) -> InputBundle:
    """Parse one fixture through the public loader (detection, merge, validation), without the
    incident reader's tap (commands, env lines and message signatures over log inputs, tested in
    tests/readers): these tests pin what each parser reads."""
    from kb.readers import incident

    saved, incident.TAPPED = incident.TAPPED, frozenset()
    try:
        bundle = load_inputs([str(FIXTURES / name)], input_format)
    finally:
        incident.TAPPED = saved
    Facts.model_validate(bundle.facts)
    return bundle


def same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to NaN (JSON text comparison)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
