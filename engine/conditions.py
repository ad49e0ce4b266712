"""Fact paths and declarative conditions: flattening and three-valued evaluation.

Generic: nothing here knows what a GPU is. A fact is a dotted path with a value; a condition
is ``fact op value``; evaluating it gives True, False or None (the fact is unknown). Wording
conditions for people is the product's job (:mod:`kb.words`), not the engine's.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Iterable

from .knowledge import AnyOf, Clause, Condition, Knowledge

#: summaries exposed for every numeric list fact, as ``<path>.<name>``
SUMMARIES = ("mean", "min", "max", "p50", "p90", "first", "last", "count", "growth")


def _percentile(sorted_vals: list[float], q: float) -> float:
    # nearest-rank on the sorted finite values; simple and stable for small sample counts
    idx = min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[idx]


def _summaries(path: str, values: list[float], out: dict[str, Any]) -> None:
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    out[f"{path}.count"] = len(values)
    out[f"{path}.nonfinite"] = len(values) - len(finite)
    if not finite:
        return
    s = sorted(finite)
    out[f"{path}.mean"] = sum(finite) / len(finite)
    out[f"{path}.min"] = s[0]
    out[f"{path}.max"] = s[-1]
    out[f"{path}.p50"] = _percentile(s, 0.5)
    out[f"{path}.p90"] = _percentile(s, 0.9)
    out[f"{path}.first"] = finite[0]
    out[f"{path}.last"] = finite[-1]
    out[f"{path}.growth"] = finite[-1] - finite[0]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Turn a nested facts document into ``{dotted.path: value}``.

    Empty lists, empty dicts and ``None`` are unknown facts and are left out. Numeric lists get
    summaries; lists of mappings are kept whole (their path holds the list).
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if value is None or value == [] or value == {}:
            continue
        if isinstance(value, dict):
            out.update(flatten(value, path + "."))
        elif isinstance(value, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            out[path] = list(value)
            _summaries(path, value, out)
        else:
            out[path] = value
            if isinstance(value, list):
                out[f"{path}.count"] = len(value)
    return out


_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def resolve_value(cond: Condition, kn: Knowledge, overrides: dict[str, float] | None) -> Any:
    """The comparison value, with ``$threshold`` references replaced by numbers."""
    v = cond.value
    if isinstance(v, str) and v.startswith("$"):
        return kn.threshold_value(v[1:], overrides)
    return v


def test(op: str, actual: Any, expected: Any) -> bool:
    """Apply ``op`` to a known fact value. Type mismatches are simply False."""
    try:
        if op in _CMP:
            if isinstance(actual, bool) or not isinstance(actual, (int, float)):
                return False
            return bool(_CMP[op](actual, expected))
        if op == "==":
            return actual == expected
        if op == "!=":
            return actual != expected
        if op == "in":
            return actual in expected
        if op == "contains":
            if isinstance(actual, str):
                return str(expected).lower() in actual.lower()
            if isinstance(actual, (list, tuple)):
                return any(
                    (str(expected).lower() in a.lower()) if isinstance(a, str) else a == expected
                    for a in actual
                )
            return False
    except TypeError:
        return False
    raise ValueError(f"unknown operator {op!r}")


def other_value(cond: Condition, facts: dict[str, Any]) -> Any:
    """For ``value: "@path"``: the other fact's value times ``scale`` (None if unknown). A
    multiple of zero is unknown too: "100x its first grad norm" says nothing when that first
    value is 0 (fairseq logs ``gnorm=0.000`` for a step whose batches all ran out of memory)."""
    other = facts.get(cond.other_fact) if cond.other_fact else None
    if other is None:
        return None
    if cond.scale != 1.0 and isinstance(other, (int, float)) and not isinstance(other, bool):
        return None if other == 0 else other * cond.scale
    return other


def evaluate(cond: Condition, facts: dict[str, Any], kn: Knowledge,
             overrides: dict[str, float] | None = None) -> bool | None:
    """Three-valued: True, False, or None when the fact (or the fact compared to) is unknown."""
    present = cond.fact in facts
    if cond.op == "exists":
        return present
    if cond.op == "missing":
        return not present
    if not present:
        return None
    if cond.other_fact is not None:
        expected = other_value(cond, facts)
        if expected is None:
            return None
        return test(cond.op, facts[cond.fact], expected)
    return test(cond.op, facts[cond.fact], resolve_value(cond, kn, overrides))


def evaluate_clause(clause: Clause, facts: dict[str, Any], kn: Knowledge,
                    overrides: dict[str, float] | None = None) -> bool | None:
    if isinstance(clause, AnyOf):
        results = [evaluate(c, facts, kn, overrides) for c in clause.any]
        if any(r is True for r in results):
            return True
        if all(r is False for r in results):
            return None if clause.open_if_false else False
        return None
    return evaluate(clause, facts, kn, overrides)


def words_void(branch: str, facts: dict[str, Any], kn: Knowledge,
               overrides: dict[str, float] | None = None) -> bool:
    """Whether the stated setup rules ``branch`` out for words: every clause of its
    ``words_void_when`` holds on ``facts`` ("it hangs" on one GPU is no collective's hang)."""
    void = kn.branches[branch].words_void_when
    return bool(void) and all(evaluate_clause(c, facts, kn, overrides) is True for c in void)


def for_setup(when: Iterable[Condition], when_known: bool, facts: dict[str, Any], kn: Knowledge,
              overrides: dict[str, float] | None = None) -> bool:
    """Whether the known ``facts`` allow the setup a check or a fix is written for: none of its
    ``when`` conditions fails (and, with ``when_known``, all hold)."""
    got = [evaluate(c, facts, kn, overrides) for c in when]
    return False not in got and (not when_known or all(g is True for g in got))


def base_path(path: str) -> str:
    """``gpu.utilization_samples.mean`` -> ``gpu.utilization_samples``; a group's own field of a
    summary's name stays whole (``gpu.count`` is the number of GPUs, not a count of ``gpu``)."""
    head, _, tail = path.rpartition(".")
    if (tail in SUMMARIES or tail == "nonfinite") and "." in head:
        return head
    return path


def clause_conditions(clauses: Iterable[Clause]) -> list[Condition]:
    out: list[Condition] = []
    for cl in clauses:
        out.extend(cl.any if isinstance(cl, AnyOf) else [cl])
    return out
