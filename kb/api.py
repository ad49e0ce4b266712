"""The library API: load the knowledge, diagnose facts, get a worded report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from engine import knowledge as _knowledge
from engine.diagnosis import Reasoner
from engine.errors import InputError
from engine.facts import Facts
from engine.knowledge import Knowledge
from kb._data import data_dir
from kb.facts_io import facts_from_data, load_facts_file
from kb.report.build import ReportBuilder
from kb.report.model import Report

__version__ = "0.1.0"

_KNOWLEDGE: dict[str, Knowledge] = {}
_REASONERS: dict[tuple[str, tuple[tuple[str, float], ...]], Reasoner] = {}


def load_knowledge(path: str | os.PathLike[str] | None = None) -> Knowledge:
    """Load (once per process) and validate the knowledge base; the bundled one by default."""
    root = str(Path(path) if path is not None else data_dir("graphs"))
    kn = _KNOWLEDGE.get(root)
    if kn is None:
        kn = _knowledge.load(root)
        _KNOWLEDGE[root] = kn
    return kn


def check_overrides(kn: Knowledge, overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Validate threshold overrides against the knowledge's threshold ids."""
    out: dict[str, float] = {}
    for k, v in (overrides or {}).items():
        if k not in kn.thresholds:
            close = [t for t in kn.thresholds if k.split(".")[-1] in t or t.split(".")[0] in k]
            hint = f"Known thresholds include: {', '.join(sorted(close or kn.thresholds)[:8])}"
            raise InputError(f"--set {k}", "unknown threshold", hint)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"--set {k}", f"expected a number, got {v!r}")
        out[k] = float(v)
    return out


def reasoner(kn: Knowledge, overrides: Mapping[str, float] | None = None) -> Reasoner:
    """A compiled reasoner for this knowledge and these threshold overrides (cached)."""
    ov = check_overrides(kn, overrides)
    key = (kn.digest + kn.root, tuple(sorted(ov.items())))
    r = _REASONERS.get(key)
    if r is None:
        r = Reasoner(kn, ov)
        _REASONERS[key] = r
    return r


def as_facts(facts: Facts | Mapping[str, Any] | str | os.PathLike[str]) -> Facts:
    """Accept Facts, a mapping, or a path to a facts JSON file."""
    if isinstance(facts, Facts):
        return facts
    if isinstance(facts, Mapping):
        return facts_from_data(dict(facts))
    return load_facts_file(facts)


def diagnose(
    facts: Facts | Mapping[str, Any] | str | os.PathLike[str],
    *,
    lang: str = "en",
    overrides: Mapping[str, float] | None = None,
    knowledge: Knowledge | None = None,
    warnings: list[str] | None = None,
    inputs: Mapping[str, str] | None = None,
    conflicts: bool = False,
    llm: Any = None,
) -> Report:
    """Diagnose ``facts`` and return the worded :class:`Report`.

    ``facts`` may be a :class:`Facts`, a mapping or a path to a facts JSON file. ``overrides``
    replaces thresholds by id (``{"gpu_util.low": 60}``). ``llm`` (a model name or an
    ``LlmOptions``) phrases the report with a verified LLM answer; it is optional.
    """
    if lang not in ("en", "zh"):
        raise InputError("lang", f"unknown language {lang!r}", "Use en or zh")
    kn = knowledge or load_knowledge()
    f = as_facts(facts)
    r = reasoner(kn, overrides)
    extra: dict[str, list[str]] = {}
    warn = list(warnings or [])
    if f.symptom_text:  # issue 5.3: the user's words give branches and facts UNDER explicit ones
        from kb.symptom_text import apply_text

        f, cls, text_notes = apply_text(f, kn)
        warn += text_notes
        if f.symptom is None:
            extra = {b: [f"symptom_text:{w}" for w in words] for b, words in cls.items()}
    d = r.diagnose(f, extra_branches=extra)
    rep = ReportBuilder(kn, lang, r.overrides).build(
        d, f, warnings=warn, inputs=dict(inputs or {}), kb_version=__version__,
        conflicts=conflicts)
    if llm is not None:
        from kb.llm import phrase  # imported only when asked for: litellm is slow to import

        rep = phrase(rep, kn, llm)
    return rep
