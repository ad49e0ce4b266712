"""The one place that talks to a model, through litellm (imported here, inside a function).

Before the import, litellm is told to stay off the network except for the call itself: the
bundled model cost map instead of a download (``LITELLM_LOCAL_MODEL_COST_MAP``), no telemetry
(``LITELLM_TELEMETRY``), offline mode for catalogs/tokenizers it would fetch by itself
(``LITELLM_OFFLINE_MODE``, ``LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS``, ``LITELLM_LOCAL_BLOG_POSTS``).
After it: ``telemetry`` off, debug banners suppressed, message logging off, no Hugging Face
tokenizer downloads, and every logging callback list emptied. Each call passes no retries
(we retry ourselves, once, with the verifier's findings).

Every failure (missing package, provider error, timeout, empty answer) becomes
:class:`LlmCallError` with a one-line reason; never a traceback.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from kb.llm.options import LlmOptions
from kb.llm.redact import redact

#: environment litellm reads at import time; set before importing it
LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "LITELLM_OFFLINE_MODE": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
}
_CALLBACK_LISTS = ("callbacks", "success_callback", "failure_callback", "input_callback",
                   "service_callback", "audit_log_callbacks", "_async_success_callback",
                   "_async_failure_callback", "_async_input_callback")


class LlmCallError(Exception):
    """The model could not be asked or did not answer; ``reason`` is one line for the report."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def load_litellm() -> Any:
    """Import litellm with its network side effects (telemetry, downloads, callbacks) off."""
    for k, v in LITELLM_ENV.items():
        os.environ[k] = v
    try:
        import litellm
    except ImportError:
        raise LlmCallError("litellm is not installed (pip install 'kb[llm]')") from None
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.turn_off_message_logging = True
    litellm.disable_hf_tokenizer_download = True
    litellm.set_verbose = False
    for name in _CALLBACK_LISTS:
        value = getattr(litellm, name, None)
        if isinstance(value, list):
            value.clear()
    return litellm


def _content(resp: Any) -> str:
    """The text of a completion: a string, an OpenAI-style dict or a litellm ModelResponse."""
    if isinstance(resp, str):
        return resp
    try:
        if isinstance(resp, dict):
            content = resp["choices"][0]["message"]["content"]
        else:
            content = resp.choices[0].message.content
    except (KeyError, IndexError, AttributeError, TypeError):
        raise LlmCallError("the provider's response has no message content") from None
    if not isinstance(content, str) or not content.strip():
        raise LlmCallError("the model returned an empty answer")
    return content


def _reason(exc: BaseException, timeout_s: float) -> str:
    name = type(exc).__name__
    text = f"{name} {exc}".lower()
    if isinstance(exc, TimeoutError) or "timeout" in name.lower() or "timed out" in text:
        return f"timeout: no answer within {timeout_s:g} s"
    first = (str(exc).strip().splitlines() or [""])[0]
    first = redact(first)
    if len(first) > 200:
        first = first[:199] + "…"
    return f"provider error: {name}" + (f": {first}" if first else "")


def complete(messages: list[dict[str, str]], opts: LlmOptions) -> str:
    """Send ``messages`` once and return the answer text, or raise :class:`LlmCallError`."""
    kwargs: dict[str, Any] = {
        "model": opts.model,
        "messages": messages,
        "temperature": opts.temperature,
        "timeout": opts.timeout_s,
        "num_retries": 0,
        "max_retries": 0,
    }
    if opts.api_base:
        kwargs["api_base"] = opts.api_base
    if opts.api_key:
        kwargs["api_key"] = opts.api_key
    kwargs.update(opts.litellm_kwargs)
    fn: Callable[..., Any]
    if opts.completion is not None:
        fn = opts.completion
    else:
        fn = load_litellm().completion
    try:
        resp = fn(**kwargs)
    except LlmCallError:
        raise
    except Exception as exc:  # noqa: BLE001 - any provider failure becomes a fallback reason
        raise LlmCallError(_reason(exc, opts.timeout_s)) from None
    return _content(resp)
