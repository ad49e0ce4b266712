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
