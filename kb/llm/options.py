"""Options of the LLM layer (what the CLI's ``--llm*`` flags and ``diagnose(llm=...)`` build)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from kb.engine.errors import InputError


def default_cache_dir() -> Optional[Path]:
    """``~/.cache/kb/llm`` (honouring ``KB_CACHE_DIR`` / ``XDG_CACHE_HOME``); None with ``KB_NO_CACHE``."""
    if os.environ.get("KB_NO_CACHE"):
        return None
    base = os.environ.get("KB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kb")
    return Path(base) / "llm"


@dataclass
class LlmOptions:
    """How to phrase a report with an LLM.

    ``model`` is a litellm model name (``openai/gpt-4o-mini``, ``ollama/llama3``...).
    ``completion`` replaces ``litellm.completion`` (tests inject a fake; it receives the same
    keyword arguments and may return a string, a dict or a litellm response). ``cache_dir``
    None disables the answer cache (``--no-cache`` / ``KB_NO_CACHE=1``; by default verified
    answers are kept under ``~/.cache/kb/llm``, keyed by the model and the exact request).
    ``strict`` makes a fallback an error. ``litellm_kwargs`` are passed to the call as they are
    (e.g. ``{"mock_response": "..."}``).
    """

    model: str = ""
    api_base: Optional[str] = field(default_factory=lambda: os.environ.get("KB_LLM_API_BASE") or None)
    api_key: Optional[str] = field(default_factory=lambda: os.environ.get("KB_LLM_API_KEY") or None)
    timeout_s: float = 60.0
    dry_run: bool = False
    redact_hosts: bool = False
    cache_dir: Optional[Path] = field(default_factory=default_cache_dir)
    max_attempts: int = 2
    temperature: float = 0.0
    #: fail (:class:`kb.llm.flow.LlmRejectedError`, exit code 4) instead of falling back to
    #: the deterministic report when the answer cannot be used
    strict: bool = False
    completion: Optional[Callable[..., Any]] = None
    litellm_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cache_dir is not None:
            self.cache_dir = Path(self.cache_dir).expanduser()
        if self.max_attempts < 1:
            raise InputError("llm.max_attempts", f"must be at least 1, got {self.max_attempts}")
        if self.timeout_s <= 0:
            raise InputError("llm.timeout_s", f"must be positive, got {self.timeout_s}")

    @classmethod
    def coerce(cls, llm: "LlmOptions | str | Any") -> "LlmOptions":
        """A model name or LlmOptions -> LlmOptions."""
        if isinstance(llm, LlmOptions):
            return llm
        if isinstance(llm, str):
            return cls(model=llm)
        raise InputError("llm", f"expected a model name or LlmOptions, got {type(llm).__name__}",
                         "e.g. diagnose(facts, llm='openai/gpt-4o-mini')")
