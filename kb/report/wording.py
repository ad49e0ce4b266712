"""Wording of the command outputs, from the knowledge's ``report.yaml`` (reviewable and
translated with the rest of the knowledge, never assembled in code)."""

from __future__ import annotations

from engine.errors import KnowledgeError
from engine.knowledge import Knowledge


def wording(kn: Knowledge, section: str, key: str, lang: str) -> str:
    """The text of ``report.yaml`` ``<section>.<key>`` in ``lang`` (en or zh)."""
    try:
        return str(kn.report_text[section][key]["zh" if lang == "zh" else "en"])
    except (KeyError, TypeError):
        raise KnowledgeError(f"{kn.root}/report.yaml", f"no wording for {section}.{key}",
                             "Add it with its en and zh texts") from None
