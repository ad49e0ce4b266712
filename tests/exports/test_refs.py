"""`kb refs`: the reference index as Markdown tables or JSON.

Golden: tests/golden/refs.en.md
(regenerate: `KB_UPDATE_GOLDEN=1 python -m pytest tests/exports -q`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kb.engine.errors import InputError
from kb.exports import refs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import check_markdown, golden, kb_all, link_urls, raw_tables  # noqa: E402


def test_markdown_has_one_table_per_group_and_every_reference(kn):
    md = refs.export_md(kn)
    check_markdown(md, kn)
    groups = {r.group for r in kn.references.values()}
    assert len(raw_tables(md)) == len(groups)
    assert sorted(link_urls(md)) == sorted(r.url for r in kn.references.values())
    # groups come in the order of references.yaml
    positions = [md.index(f"## {g.title.en}\n") for g in kn.ref_groups.values() if g.id in groups]
    assert positions == sorted(positions)


def test_group_and_search(kn):
    first = next(iter(kn.ref_groups))
    md = refs.export_md(kn, "zh", group=first)
    assert len(raw_tables(md)) == 1
    some = next(iter(kn.references.values()))
    found = refs.select(kn, search=some.title.upper())
    assert some in found
    assert refs.select(kn, search="no-such-reference-anywhere") == []


def test_unknown_group_lists_the_groups(kn):
    with pytest.raises(InputError) as err:
        refs.select(kn, group="nope")
    assert all(g in err.value.line() for g in kn.ref_groups)


def test_json(kn):
    doc = json.loads(refs.export_json(kn))
    assert doc["schema_version"] == refs.SCHEMA_VERSION
    assert [r["id"] for r in doc["references"]] == [r.id for r in refs.select(kn)]
    assert all(set(r["about"]) == {"en", "zh"} for r in doc["references"])


def test_refs_golden(kn):
    golden("refs.en.md", refs.export_md(kn, "en"))


def test_cli_refs(kn):
    bad, r = kb_all([["refs", "--group", "nope"],
                     ["refs", "--search", "flight", "--format", "json"]])
    assert bad.returncode == 2
    assert "unknown reference group" in bad.stderr and next(iter(kn.ref_groups)) in bad.stderr
    assert r.returncode == 0, r.stderr
    ids = [x["id"] for x in json.loads(r.stdout)["references"]]
    assert ids and all("flight" in json.dumps(x).lower()
                       for x in json.loads(r.stdout)["references"])
