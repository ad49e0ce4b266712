"""The real litellm path against a tiny OpenAI-compatible server on 127.0.0.1.

The server answers each POST /v1/chat/completions from a script: a good table, a table with
an invented URL, one with a cause the engine did not find, garbage, or an answer that comes
after the client's timeout.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kb.llm import LlmOptions, phrase
from tests.llm._support import good_answer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # litellm's pydantic models

TIMEOUT_S = 1.0


class FakeOpenAI(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: list[tuple[float, str]] = []  # (delay in seconds, answer)
        self.requests: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.requests.append({"path": self.path, "body": body,
                                     "auth": self.headers.get("Authorization")})
        if self.path.rstrip("/") != "/v1/chat/completions" or not self.server.script:
            self.send_error(404)
            return
        delay, answer = self.server.script.pop(0)
        time.sleep(delay)
        data = json.dumps({
            "id": f"chatcmpl-{len(self.server.requests)}", "object": "chat.completion",
            "created": 0, "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


@pytest.fixture(scope="module")
def server():
    srv = FakeOpenAI()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def fake(server):
    server.script.clear()
    server.requests.clear()
    return server


@pytest.fixture
def answers(report_en, kn):
    good = good_answer(report_en, kn)
    conclusion = good.index("### Conclusion")
    return {
        "good": good,
        "invented_url": good[:conclusion] + "See [tips](https://evil.example.com/tips).\n\n"
        + good[conclusion:],
        "not_found_cause": good.replace(
            "\n\n### Conclusion",
            "\n| GPU idle | **CPU / Python preprocessing bound** (`gpu_util.cpu_bound`) | — | — | — "
            "| — |\n\n### Conclusion", 1),
        "garbage": "I'm sorry, as a language model I cannot produce tables.",
    }


def options(server, **kw) -> LlmOptions:
    host, port = server.server_address[:2]
    return LlmOptions(model="openai/fake", api_base=f"http://{host}:{port}/v1", api_key="sk-test",
                      timeout_s=TIMEOUT_S, cache_dir=None, **kw)


def test_good_table_is_accepted(litellm, fake, answers, report_en, kn):
    fake.script[:] = [(0, answers["good"])]
    out = phrase(report_en, kn, options(fake))
    assert out.llm.verified and out.llm.attempts == 1 and out.markdown == answers["good"]
    (req,) = fake.requests
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["model"] == "fake" and req["body"]["temperature"] == 0


def test_invented_url_is_retried(litellm, fake, answers, report_en, kn):
    fake.script[:] = [(0, answers["invented_url"]), (0, answers["good"])]
    out = phrase(report_en, kn, options(fake))
    assert out.llm.verified and out.llm.attempts == 2 and out.markdown == answers["good"]
    second = fake.requests[1]["body"]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "https://evil.example.com/tips" in second[-1]["content"]


def test_cause_not_found_then_garbage_falls_back(litellm, fake, answers, report_en, kn):
    fake.script[:] = [(0, answers["not_found_cause"]), (0, answers["garbage"])]
    out = phrase(report_en, kn, options(fake))
    assert out.markdown is None and not out.llm.used and out.llm.attempts == 2
    assert any("exactly one table" in v for v in out.llm.violations)
    assert "gpu_util.cpu_bound" in fake.requests[1]["body"]["messages"][-1]["content"]


def test_answer_after_the_timeout_falls_back(litellm, fake, answers, report_en, kn):
    fake.script[:] = [(TIMEOUT_S + 1.5, answers["good"])]
    start = time.monotonic()
    out = phrase(report_en, kn, options(fake))
    assert out.markdown is None and not out.llm.used and out.llm.attempts == 1
    assert out.llm.fallback_reason.startswith("timeout"), out.llm.fallback_reason
    assert len(fake.requests) == 1  # no silent retries inside litellm or the OpenAI client
    assert time.monotonic() - start < TIMEOUT_S + 1.5
