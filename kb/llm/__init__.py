"""The optional LLM layer: phrase the report's table and conclusion, grounded and verified.

The model only rewords what the engine found. What is sent (:mod:`kb.llm.payload`) is the
findings, their evidence, the next checks, the status and the allowed references and
commands, redacted first (:mod:`kb.llm.redact`); never raw logs. The answer is shown only when
:mod:`kb.llm.verify` accepts it (one table, known causes, allowed URLs, commands and numbers,
three sentences); otherwise the deterministic report stays, and ``report.llm`` says why.

Nothing here imports litellm at module level: :mod:`kb.llm.client` does so inside a function,
so ``import kb`` and a plain ``kb diagnose`` never load it.
"""

from __future__ import annotations

from kb.llm.flow import phrase
from kb.llm.options import LlmOptions

__all__ = ["LlmOptions", "phrase"]
