"""Every fact a condition tests has a readable name in the report (``report.yaml`` names it, else
the fact schema's own description), in both languages: a report never shows a bare path."""

from __future__ import annotations

import pytest

from kb.engine.conditions import base_path
from kb.engine.knowledge import iter_conditions
from kb.loaded import load_knowledge
from kb.report.wording import fact_name

KN = load_knowledge()


def _tested() -> list[str]:
    used: set[str] = set()
    for c in KN.causes.values():
        for cond in iter_conditions(list(c.conditions) + list(c.supporting)):
            used.add(base_path(cond.fact))
    for b in KN.branches.values():
        for cl in [cl for e in b.edges for cl in e.when] + [cl for a in b.answers for cl in a.when]:
            for cond in iter_conditions([cl]):
                used.add(base_path(cond.fact))
    return sorted(used)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_tested_fact_has_a_readable_name(lang: str) -> None:
    bare = [p for p in _tested() if fact_name(KN, p, lang) == p]
    assert not bare, bare


def test_an_unknown_path_stays_as_it_is() -> None:
    assert fact_name(KN, "no_such_group.fact", "en") == "no_such_group.fact"
