"""A check written for one setup is suggested only where the facts allow that setup: vLLM's
commands not for an Ollama or llama-server job, the local runners' own commands only when the
job is known to run on them; and the lines that answer those commands are read."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

import kb
from kb.loaded import load_knowledge
from kb.readers import incident

ROOT = Path(__file__).resolve().parents[2]
# one request at a time on a server of unknown cap: the cap's own question is open
SERIAL = {"symptom": "inference", "inference": {"num_running": 1, "num_waiting": 6, "ttft_ms_p50": 9000}}


def _checks(kn, engine: str | None) -> list[str]:
    facts = {**SERIAL, "inference": {**SERIAL["inference"], **({"engine": engine} if engine else {})}}
    return [c.id for c in kb.diagnose(facts, knowledge=kn).next_checks]


@pytest.mark.parametrize(("engine", "shown", "hidden"), [
    ("ollama", ["ollama_server_config"], ["vllm_serve_args", "vllm_server_state", "llama_server_slots",
                                          "sglang_decode_log", "trtllm_server_state"]),
    ("llama.cpp", ["llama_server_slots"], ["vllm_serve_args", "ollama_server_config"]),
    ("vllm", ["vllm_serve_args"], ["ollama_server_config", "llama_server_slots", "sglang_decode_log"]),
    # the engine not stated: vLLM's commands (the causes' assumption), none of the runners'
    (None, ["vllm_serve_args"], ["ollama_server_config", "llama_server_slots"]),
])
def test_checks_follow_the_engine(kn, engine: str | None, shown: list[str], hidden: list[str]) -> None:
    ids = _checks(kn, engine)
    for cid in shown:
        assert cid in ids, ids
    for cid in hidden:
        assert cid not in ids, ids


@pytest.mark.parametrize(("line", "want"), [
    # Ollama prints its environment as a Go map when the server starts (server/routes.go)
    ('time=2025-06-01T10:00:00.000Z level=INFO source=routes.go:1234 msg="server config" '
     'env="map[OLLAMA_KEEP_ALIVE:5m0s OLLAMA_MAX_LOADED_MODELS:0 OLLAMA_NUM_PARALLEL:1 OLLAMA_ORIGINS:[]]"',
     {"max_num_seqs": 1, "engine": "ollama"}),
    # llama-server's GET /props
    ('{"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4, "chat_template": ""}',
     {"max_num_seqs": 4, "engine": "llama.cpp"}),
    # llama-server's /completion answer (tools/server/README.md) and its fields grepped out
    ('{"content": "Hi", "tokens_cached": 1150, "tokens_evaluated": 1200, "timings": {"prompt_n": 50, '
     '"predicted_per_token_ms": 12.5}}', {"engine": "llama.cpp"}),
    # near-misses: 0 is Ollama's default, not a cap; the bare word is no setting
    ('msg="server config" env="map[OLLAMA_NUM_PARALLEL:0 OLLAMA_ORIGINS:[]]"', {}),
    ("how do I raise OLLAMA_NUM_PARALLEL for two users?", {}),
])
def test_runner_slot_lines(line: str, want: dict) -> None:
    got = incident.parse(io.StringIO(line + "\n"), "paste").facts.get("inference", {})
    assert {k: got[k] for k in ("max_num_seqs", "engine") if k in got} == want


def test_ollama_server_config_is_its_environment() -> None:
    # the Go map is read as the environment it is; an empty value is a variable left unset
    line = ('msg="server config" env="map[CUDA_VISIBLE_DEVICES: OLLAMA_KEEP_ALIVE:5m0s '
            'OLLAMA_NUM_PARALLEL:2 OLLAMA_ORIGINS:[]]"')
    env = incident.parse(io.StringIO(line + "\n"), "paste").facts["env"]
    assert env == {"OLLAMA_KEEP_ALIVE": "5m0s", "OLLAMA_NUM_PARALLEL": "2"}


@pytest.mark.parametrize(("edit", "problem"), [
    ("    when: [{fact: inference.engine, op: in, value: [ollama]}]\n",
     "    when: [{fact: inference.nope, op: in, value: [ollama]}]\n"),
    ("    when_known: true\n    refs: [ollama-faq]\n", None),
])
def test_when_is_validated(tmp_path: Path, edit: str, problem: str | None) -> None:
    g = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", g)
    p = g / "checks" / "inference.yaml"
    text = p.read_text()
    assert edit in text
    if problem is None:
        # when_known needs conditions: take the ollama check's away
        text = text.replace("    when: [{fact: inference.engine, op: in, value: [ollama]}]\n    when_known: true\n",
                            "    when_known: true\n", 1)
    else:
        text = text.replace(edit, problem, 1)
    p.write_text(text)
    from kb.engine.graph import validate

    problems = validate(load_knowledge(g))
    assert any("ollama_server_config" in x and ("inference.nope" in x or "when_known" in x) for x in problems), problems


def test_an_ollama_named_in_words_gets_its_own_checks(kn) -> None:
    # "ollama" said is the engine: the cap on parallel requests leads, and its own command is
    # suggested where vLLM's flags would have been
    rep = kb.diagnose(symptom="ollama answers requests one at a time, the second user waits until "
                      "the first answer is done", knowledge=kn)
    ids = [c.id for c in rep.next_checks]
    assert rep.hypotheses[0].cause_id == "inference.max_num_seqs_limit"
    assert "ollama_server_config" in ids and "vllm_serve_args" not in ids


# confirmed causes whose fixes and verifications are written for several engines
PREFIX = {"symptom": "inference", "inference": {"shared_prefix_fraction": 0.8, "enable_prefix_caching": False,
                                                "ttft_ms_p50": 9000}}
EAGER = {"symptom": "inference", "inference": {"tpot_ms_p50": 72, "num_running": 1, "enforce_eager": True}}
# one request at a time, layers left on the CPU: each runner reaches them by its own setting
SERIAL_CAP = {"symptom": "inference", "inference": {"max_num_seqs": 1, "num_running": 1, "num_waiting": 3,
                                                    "kv_cache_usage": 0.2}}
ON_CPU = {"symptom": "inference", "inference": {"gpu_model_share": 0.6, "tpot_ms_p50": 400}}
PREFIX_ID, EAGER_ID = "inference.prefix_caching_disabled", "inference.cuda_graphs_disabled"
CAP_ID, CPU_ID = "inference.max_num_seqs_limit", "inference.layers_on_cpu"


@pytest.mark.parametrize(("facts", "cause", "part", "engine", "shown", "hidden"), [
    # the engine not stated: vLLM's (the cause's assumption), not the runner's
    *[(f, c, "fixes", e, s, h) for f, c in ((PREFIX, PREFIX_ID), (EAGER, EAGER_ID))
      for e, s, h in (("llama.cpp", ["llama-server"], ["vllm serve"]), ("vllm", ["vllm serve"], ["llama-server"]),
                      (None, ["vllm serve"], ["llama-server"]))],
    *[(f, c, "verify", e, s, h) for f, c in ((PREFIX, PREFIX_ID), (EAGER, EAGER_ID))
      for e, s, h in (("llama.cpp", ["/completion"], ["/metrics"]), ("vllm", ["/metrics"], ["/completion"]),
                      (None, ["/metrics"], ["/completion"]))],
    # each runner's own command; the engine not stated: all of them, as before
    *[(f, c, "fixes", e, s, h) for f, c in ((SERIAL_CAP, CAP_ID), (ON_CPU, CPU_ID))
      for e, s, h in (("ollama", ["ollama"], ["vllm serve", "llama-server"]),
                      ("llama.cpp", ["llama-server"], ["vllm serve", "ollama"]),
                      ("vllm", ["vllm serve"], ["ollama", "llama-server"]),
                      (None, ["vllm serve", "ollama", "llama-server"], []))],
])
def test_fixes_and_verifications_follow_the_engine(kn, facts: dict, cause: str, part: str, engine: str | None,
                                                   shown: list[str], hidden: list[str]) -> None:
    given = {**facts, "inference": {**facts["inference"], **({"engine": engine} if engine else {})}}
    found = {f.cause_id: f for f in kb.diagnose(given, knowledge=kn).findings}
    assert cause in found, list(found)
    commands = [x.command for x in getattr(found[cause], part)]
    assert all(any(w in c for c in commands) for w in shown), commands
    assert not any(w in c for w in hidden for c in commands), commands


def test_a_fix_for_a_stated_setup_needs_its_setup(tmp_path: Path) -> None:
    g = tmp_path / "graphs"
    shutil.copytree(ROOT / "graphs", g)
    p = g / "inference" / "prefix_caching_disabled.yaml"
    text = p.read_text()
    edit = '    when: [{fact: inference.engine, op: "==", value: llama.cpp}]\n    when_known: true\n'
    assert edit in text
    p.write_text(text.replace(edit, "    when_known: true\n", 1))
    from kb.engine.graph import validate

    problems = validate(load_knowledge(g))
    assert any("prefix_caching_disabled" in x and "when_known without when" in x for x in problems), problems


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                    reason="the command is a curl | grep shell line")
@pytest.mark.parametrize("port", [9931, 8080])
def test_the_slots_command_runs_on_either_default_port(kn, port: int) -> None:
    # llama-server listens on 9931 by default on current builds, on 8080 on older ones: the
    # command as printed reads total_slots from whichever answers (a stand-in /props here)
    import subprocess

    srv = _serve(port, {"/props": b'{"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4}'})
    try:
        cmd = kn.checks["llama_server_slots"].command
        out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=20)
    finally:
        srv.shutdown()
        srv.server_close()
    assert out.stdout.strip() == '"total_slots": 4', (out.stdout, out.stderr)


@pytest.mark.parametrize(("text", "want"), [
    # the answer's prompt tokens: cached over evaluated; the latest answer counts (a prompt sent
    # twice is judged by its second answer), whether whole or grepped into single lines
    ('{"tokens_cached": 1150, "tokens_evaluated": 1200, "timings": {"predicted_per_token_ms": 12.5}}',
     {"prefix_cache_hit_rate": 0.9583, "tpot_ms_p50": 12.5}),
    ('"tokens_cached": 0\n"tokens_evaluated": 1200\n"tokens_cached": 1190\n"tokens_evaluated": 1200',
     {"prefix_cache_hit_rate": 0.9917}),
    # near-misses: nothing evaluated says nothing of a hit rate; a timing of 0 ms is no decode
    ('"tokens_cached": 0\n"tokens_evaluated": 0', {}),
    ('{"timings": {"predicted_n": 0, "predicted_per_token_ms": 0.0}}', {}),
])
def test_llama_server_answers(text: str, want: dict) -> None:
    got = incident.parse(io.StringIO(text + "\n"), "paste").facts.get("inference", {})
    assert {k: got[k] for k in ("prefix_cache_hit_rate", "tpot_ms_p50") if k in got} == want


def _serve(port: int, routes: dict[str, bytes]):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = routes.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body or b"{}")

        def do_GET(self) -> None:  # noqa: N802 (http.server's names)
            self._answer()

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer()

        def log_message(self, *args: object) -> None:
            pass

    try:
        srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        pytest.skip(f"port {port} is taken on this machine: {e}")
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                    reason="the commands are curl | grep shell lines")
@pytest.mark.parametrize("port", [9931, 8080])
def test_llama_server_verifications_run_and_are_read(kn, port: int) -> None:
    # each llama-server verification as printed, against a stand-in server on either default
    # port; what it prints is read back into the fact its expectation tests
    import subprocess

    answer = (b'{"content": "x", "tokens_cached": 1190, "tokens_evaluated": 1200, '
              b'"timings": {"predicted_n": 128, "predicted_per_token_ms": 9.5}}')
    srv = _serve(port, {"/completion": answer})
    try:
        for cause, fact in (("inference.prefix_caching_disabled", "prefix_cache_hit_rate"),
                            ("inference.cuda_graphs_disabled", "tpot_ms_p50")):
            v = next(v for v in kn.causes[cause].verify if v.when_known)
            out = subprocess.run(["bash", "-c", v.command], capture_output=True, text=True, timeout=30)
            assert out.returncode == 0 and out.stdout.strip(), (v.command, out.stderr)
            got = incident.parse(io.StringIO(out.stdout), "paste").facts.get("inference", {})
            assert fact in got and v.expect.fact == f"inference.{fact}", (out.stdout, got)
    finally:
        srv.shutdown()
        srv.server_close()
