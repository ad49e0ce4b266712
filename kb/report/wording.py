"""Wording of the command outputs, from the knowledge's ``report.yaml`` (reviewable and
translated with the rest of the knowledge, never assembled in code)."""

from __future__ import annotations

from typing import Any

from kb.engine.errors import KnowledgeError
from kb.engine.knowledge import Knowledge


def chrome(kn: Knowledge, lang: str, *keys: str) -> str:
    """A text of ``report.yaml`` by its key path, in ``lang`` (renderers' labels)."""
    node: Any = kn.report_text
    for k in keys:
        node = node[k]
    return str(node[lang])


def wording(kn: Knowledge, section: str, key: str, lang: str) -> str:
    """The text of ``report.yaml`` ``<section>.<key>`` in ``lang`` (en or zh)."""
    try:
        return str(kn.report_text[section][key]["zh" if lang == "zh" else "en"])
    except (KeyError, TypeError):
        raise KnowledgeError(f"{kn.root}/report.yaml", f"no wording for {section}.{key}",
                             "Add it with its en and zh texts") from None


def label(kn: Knowledge, key: str, lang: str) -> str:
    """A heading or label of the terminal/HTML renderings (``report.yaml`` ``render.<key>``)."""
    return wording(kn, "render", key, lang)


def node_label(kn: Knowledge, node_id: str, lang: str) -> str:
    """The label of a decision-graph node in ``lang``, or its id when no branch holds it."""
    for b in kn.branches.values():
        for n in b.nodes:
            if n.id == node_id:
                return n.label.get(lang)
    if node_id in kn.causes:  # a path ends at its cause: show the cause's title
        return kn.causes[node_id].title.get(lang)
    return node_id


def path_labels(kn: Knowledge, path: list[str], lang: str) -> list[str]:
    """Node ids of a decision path -> their labels (ids kept where no label exists)."""
    return [node_label(kn, n, lang) for n in path]


def fact_name(kn: Knowledge, path: str, lang: str) -> str:
    """The user-facing name of a fact path (``report.yaml`` ``fact_names``).

    Summaries (``.mean``, ``.count``...), dictionary keys (``compile.graph_break_reasons.print``),
    and environment variables are worded too, so a report
    never shows an internal name without saying what it means. Unknown paths stay as they are.
    """
    lang = "zh" if lang == "zh" else "en"
    rt = kn.report_text
    names: dict[str, Any] = rt.get("fact_names") or {}
    summ: dict[str, Any] = rt.get("fact_summaries") or {}
    if path in names:
        return str(names[path][lang])
    if path.startswith("env.") and "env" in summ:
        return str(summ["env"][lang]).format(key=path[len("env."):])
    head, _, tail = path.rpartition(".")
    if head and tail in summ and tail not in ("key", "env"):
        return str(summ[tail][lang]).format(name=fact_name(kn, head, lang))
    if head in names and "key" in summ:
        return str(summ["key"][lang]).format(name=names[head][lang], key=tail)
    doc = _schema_doc(kn, path)
    return doc if doc else path


def _schema_doc(kn: Knowledge, path: str) -> str | None:
    """The fact schema's own description of a fact (``facts.yaml`` ``doc``), for facts that
    ``report.yaml`` does not name; a map's key is shown with its map's description."""
    fs = kn.fact_schema
    group, _, field = path.partition(".")
    spec = fs.top.get(path) if not field else None
    if spec is None and group in fs.groups:
        name, _, key = field.partition(".")
        spec = fs.groups[group].fields.get(name)
        if spec is not None and key:
            return f"{spec.doc} ({key})" if spec.doc else None
    return spec.doc if spec is not None and spec.doc else None
