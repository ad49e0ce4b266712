"""The real litellm path with litellm's own ``mock_response=`` (no server, no network)."""

from __future__ import annotations

import os

import pytest

from kb.llm import LlmOptions, phrase
from tests.llm._support import good_answer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's pydantic models


def mocked(answer, **kw) -> LlmOptions:
    return LlmOptions(model="openai/fake", api_key="sk-test", cache_dir=None,
                      litellm_kwargs={"mock_response": answer}, **kw)


def test_network_side_effects_are_off(litellm):
    from kb.llm.client import LITELLM_ENV

    for k, v in LITELLM_ENV.items():
        assert os.environ[k] == v
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert litellm.telemetry is False and litellm.suppress_debug_info is True
    for name in ("callbacks", "success_callback", "failure_callback", "_async_success_callback"):
        assert getattr(litellm, name, []) == []


def test_mock_response_accepted(litellm, report_en, kn):
    out = phrase(report_en, kn, mocked(good_answer(report_en, kn)))
    assert out.llm.verified and out.llm.attempts == 1
    assert out.markdown == good_answer(report_en, kn)


def test_mock_response_rejected_twice_falls_back(litellm, report_en, kn):
    out = phrase(report_en, kn, mocked("Sure! Just run `sudo rm -rf /`."))
    assert out.markdown is None and out.llm.attempts == 2 and not out.llm.used
    assert any("sudo rm -rf /" in v for v in out.llm.violations)


def test_provider_error_falls_back(litellm, report_en, kn):
    out = phrase(report_en, kn, mocked(litellm.RateLimitError(
        message="slow down", llm_provider="openai", model="fake")))
    assert out.markdown is None and "provider error" in out.llm.fallback_reason
