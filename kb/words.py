"""Conditions and values in words, for reports, exports and explanations.

The engine evaluates conditions; saying them to a person (operators in en/zh, units, the
knowledge's own ``text``) happens here.
"""

from __future__ import annotations

import math
from typing import Any

from kb.engine.conditions import base_path, resolve_value
from kb.engine.knowledge import Condition, Knowledge

_OP_WORDS = {
    "en": {"<": "below", "<=": "at most", ">": "above", ">=": "at least", "==": "is",
           "!=": "is not", "in": "is one of", "contains": "contains", "exists": "is known",
           "missing": "is not known"},
    "zh": {"<": "低于", "<=": "不超过", ">": "高于", ">=": "不低于", "==": "为", "!=": "不为",
           "in": "属于", "contains": "包含", "exists": "已知", "missing": "未知"},
}


def fmt_value(value: Any, unit: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Inf" if value > 0 else "-Inf"
        text = f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    elif isinstance(value, list):
        shown = [fmt_value(v) for v in value[:8]]
        text = "[" + ", ".join(shown) + (", …" if len(value) > 8 else "") + "]"
    else:
        text = str(value)
    if unit and unit not in ("fraction",):
        return f"{text} {unit}" if unit not in ("%", "x") else f"{text}{unit}"
    return text


def describe(cond: Condition, kn: Knowledge, lang: str, units: dict[str, str],
             overrides: dict[str, float] | None = None) -> str:
    """Human wording of a condition, e.g. ``gpu.utilization_samples.mean below 70%``."""
    if cond.text is not None:
        text = cond.text.get(lang)
        if "{value}" in text:
            text = text.replace("{value}", fmt_value(resolve_value(cond, kn, overrides)))
        return text
    words = _OP_WORDS["zh" if lang == "zh" else "en"][cond.op]
    if cond.op in ("exists", "missing"):
        return f"{cond.fact} {words}"
    if cond.other_fact is not None:
        scale = "" if cond.scale == 1.0 else f"{fmt_value(cond.scale)} × "
        return f"{cond.fact} {words} {scale}{cond.other_fact}"
    value = resolve_value(cond, kn, overrides)
    return f"{cond.fact} {words} {fmt_value(value, units.get(base_path(cond.fact), ''))}"


