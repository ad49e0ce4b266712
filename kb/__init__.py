"""kb: tells ML engineers why GPU training or LLM inference is slow or broken, and what to do.

Data flow: raw artifacts -> readers -> facts -> engine (the executable decision graph: experta
rules generated from its steps, a three-valued evaluator over the same steps) -> findings,
hypotheses, ruled-out causes, next checks -> Report (terminal / md / json / html, en / zh) ->
optional verified LLM phrasing.

The public API is what ``__all__`` lists; everything else (``kb.engine`` included) is internal.
Names load on first use, so ``import kb`` (and ``import kb.engine``) stays cheap.
"""

from typing import Any

from kb.engine.errors import InputError, KbError

__version__ = "0.1.0"
__all__ = ["diagnose", "load_knowledge", "Facts", "Report", "KbError", "InputError",
           "__version__"]


def __getattr__(name: str) -> Any:
    if name == "diagnose":
        from kb.api import diagnose

        return diagnose
    if name == "load_knowledge":
        from kb.loaded import load_knowledge

        return load_knowledge
    if name == "Report":
        from kb.report.model import Report

        return Report
    if name == "Facts":  # built from the knowledge's fact schema on first use
        from kb.facts import facts_model

        return facts_model()
    raise AttributeError(f"module 'kb' has no attribute {name!r}")
