"""kb: tells ML engineers why GPU training or LLM inference is slow or broken, and what to do.

Data flow: raw artifacts -> parsers -> Facts -> engine (knowledge graph + rules) -> findings,
ruled-out causes, next checks -> Report (md/json, en/zh) -> optional verified LLM phrasing.

The public API is what ``__all__`` lists; everything else (including ``engine``) is internal.
"""

from engine.errors import InputError, KbError
from engine.facts import Facts
from kb.api import __version__, diagnose, load_knowledge
from kb.report.model import Report

__all__ = ["diagnose", "load_knowledge", "Facts", "Report", "KbError", "InputError", "__version__"]
