"""The reference index: one Markdown table per group, or JSON."""

from __future__ import annotations

import json
from typing import Any

from kb.engine.errors import InputError
from kb.engine.knowledge import Knowledge, Reference
from kb.exports.text import cell, check_lang, chrome, link

SCHEMA_VERSION = 1


def select(kn: Knowledge, group: str | None = None, search: str | None = None,
           ids: set[str] | None = None) -> list[Reference]:
    """References in index order (group order of references.yaml, then file order)."""
    if group is not None and group not in kn.ref_groups:
        raise InputError(f"--group {group}", "unknown reference group",
                         f"Known groups: {', '.join(kn.ref_groups)}")
    order = {g: i for i, g in enumerate(kn.ref_groups)}
    refs = sorted(kn.references.values(), key=lambda r: order.get(r.group, len(order)))
    if group is not None:
        refs = [r for r in refs if r.group == group]
    if ids is not None:
        refs = [r for r in refs if r.id in ids]
    if search:
        needle = search.lower()
        refs = [r for r in refs if any(needle in s.lower() for s in (
            r.id, r.title, r.url, r.about.en, r.about.zh, r.group))]
    return refs


def markdown(kn: Knowledge, refs: list[Reference], lang: str = "en", *, level: int = 2) -> str:
    """``## <group>`` then a ``| Reference | About |`` table, for each group with references."""
    check_lang(lang)
    hashes = "#" * level
    out: list[str] = []
    for gid, g in kn.ref_groups.items():
        rows = [r for r in refs if r.group == gid]
        if not rows:
            continue
        out += [f"{hashes} {g.title.get(lang)}", "",
                f"| {chrome(kn, lang, 'refs')} | {chrome(kn, lang, 'about')} |", "|---|---|"]
        out += [f"| {cell(link(r.title, r.url))} | {cell(r.about.get(lang))} |" for r in rows]
        out.append("")
    return "\n".join(out)


def export_md(kn: Knowledge, lang: str = "en", group: str | None = None,
              search: str | None = None) -> str:
    refs = select(kn, group, search)
    head = f"# {chrome(kn, lang, 'index')}\n\n"
    return head + markdown(kn, refs, lang)


def as_json(r: Reference) -> dict[str, Any]:
    return {"id": r.id, "group": r.group, "title": r.title, "url": r.url, "seed": r.seed,
            "about": {"en": r.about.en, "zh": r.about.zh}}


def export_json(kn: Knowledge, group: str | None = None, search: str | None = None) -> str:
    refs = select(kn, group, search)
    doc = {"schema_version": SCHEMA_VERSION,
           "groups": [{"id": g.id, "title": {"en": g.title.en, "zh": g.title.zh}}
                      for g in kn.ref_groups.values() if any(r.group == g.id for r in refs)],
           "references": [as_json(r) for r in refs]}
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
