"""send -> verify -> (retry once with the violations) -> accept, or fall back.

Never shows an unverified answer: ``report.markdown`` is set only when the verifier found
nothing; otherwise the deterministic report stays and ``report.llm`` records the model, the
attempts, the reason and the violations.
"""

from __future__ import annotations

import json
from typing import Any

from kb.engine.errors import KbError
from kb.engine.knowledge import Knowledge
from kb.llm.cache import AnswerCache, cache_key
from kb.llm.client import LlmCallError, complete
from kb.llm.options import LlmOptions
from kb.llm.payload import Request, build_request, retry_message
from kb.llm.redact import redact
from kb.llm.verify import check
from kb.report.model import LlmInfo, Report

MAX_VIOLATIONS_KEPT = 20


def dry_run_text(req: Request, opts: LlmOptions) -> str:
    """Exactly what would be sent (the API key is never shown), as JSON."""
    api_base = redact(opts.api_base) if opts.api_base else None
    body: dict[str, Any] = {"model": opts.model, "api_base": api_base,
                            "temperature": opts.temperature, "timeout_s": opts.timeout_s,
                            "messages": req.messages}
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


#: exit code of ``kb diagnose --llm-strict`` when the answer was not used
EXIT_LLM_REJECTED = 4


class LlmRejectedError(KbError):
    """With ``strict``: the model's answer could not be used (the call failed or the verifier
    rejected it). ``report`` is the deterministic report, with ``report.llm`` saying why."""

    exit_code = EXIT_LLM_REJECTED

    def __init__(self, report: Report) -> None:
        reason = report.llm.fallback_reason if report.llm is not None else "unknown"
        super().__init__("--llm-strict", f"LLM answer not used ({reason})",
                         "Drop --llm-strict to get the deterministic report instead")
        self.report = report


def _with(report: Report, info: LlmInfo, markdown: str | None = None,
          strict: bool = False) -> Report:
    out = report.model_copy(update={"llm": info, "markdown": markdown})
    if strict and markdown is None and info.fallback_reason:
        raise LlmRejectedError(out)  # why: a pipeline asked for phrasing or nothing
    return out


def phrase(report: Report, kn: Knowledge, llm: LlmOptions | str | Any) -> Report:
    """``report`` phrased by the model when its answer verifies, else unchanged (with
    ``report.llm`` saying why). With ``dry_run`` send nothing and return the request in
    ``report.llm.request_text`` (the library never prints; the CLI shows it)."""
    opts = LlmOptions.coerce(llm)
    req = build_request(report, kn, redact_hosts=opts.redact_hosts)
    if opts.dry_run:
        return _with(report, LlmInfo(model=opts.model, used=False, verified=False,
                                     fallback_reason="dry run: nothing was sent",
                                     request_text=dry_run_text(req, opts)))
    if not opts.model:
        return _with(report, LlmInfo(model="", used=False, verified=False,
                                     fallback_reason="no model given (--llm MODEL or KB_LLM_MODEL)"),
                     strict=opts.strict)

    cache = AnswerCache(opts.cache_dir) if opts.cache_dir is not None else None
    key = cache_key(opts.model, req.messages)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None and not check(hit, req.grounding):
            return _with(report, LlmInfo(model=opts.model, used=True, verified=True, attempts=0,
                                         cached=True), hit)

    messages = list(req.messages)
    violations: list[str] = []
    attempts = 0
    while attempts < opts.max_attempts:
        attempts += 1
        try:
            answer = complete(messages, opts)
        except LlmCallError as err:
            return _with(report, LlmInfo(model=opts.model, used=False, verified=False,
                                         attempts=attempts, fallback_reason=err.reason,
                                         violations=violations[:MAX_VIOLATIONS_KEPT]),
                         strict=opts.strict)
        violations = check(answer, req.grounding)
        if not violations:
            if cache is not None:
                cache.put(key, answer, model=opts.model)
            return _with(report, LlmInfo(model=opts.model, used=True, verified=True,
                                         attempts=attempts), answer)
        messages = messages + [{"role": "assistant", "content": answer},
                               retry_message(req, violations)]
    n = len(violations)
    return _with(report, LlmInfo(
        model=opts.model, used=False, verified=False, attempts=attempts,
        fallback_reason=f"the answer failed verification after {attempts} attempt(s) "
                        f"({n} violation(s), first: {violations[0]})",
        violations=violations[:MAX_VIOLATIONS_KEPT]), strict=opts.strict)
