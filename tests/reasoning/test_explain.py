"""`kb explain`: every cause, both languages; unknown ids; the CLI as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kb.engine.errors import UnknownCauseError
from kb.engine.knowledge import load
from kb.explain import explain, render
from tests.conftest import ROOT

KN = load(ROOT / "graphs", use_cache=False)
CASES = [(c, lang) for c in sorted(KN.causes) for lang in ("en", "zh")]


@pytest.mark.parametrize("cause_id,lang", CASES, ids=[f"{c}-{l}" for c, l in CASES])
def test_explain_every_cause(cause_id: str, lang: str) -> None:
    ex = explain(cause_id, KN, lang)
    cause = KN.causes[cause_id]
    assert ex.path[0].node == "symptom" and ex.path[0].type == "symptom"
    assert ex.path[-1].node == cause_id and ex.path[-1].type == "cause"
    assert ex.path[1].node == f"branch:{cause.branch}"
    assert ex.path[-1].label == cause.title.get(lang)
    assert all(s.label for s in ex.path)
    assert len(ex.conditions) == len(cause.conditions)
    assert len(ex.fixes) == len(cause.fixes) and all(f.references for f in ex.fixes)
    assert all(r.url.startswith("https://") for f in ex.fixes for r in f.references)
    assert len(ex.verification) == len(cause.verify)
    assert ex.why == cause.why.get(lang)
    md = render(ex, KN)
    assert cause_id in md and cause.fixes[0].command.split("\n")[0][:20] in md
    json.dumps(ex.model_dump(mode="json"), ensure_ascii=False)


def test_path_steps_carry_answers_and_thresholds() -> None:
    ex = explain("gpu_util.dataloader_bound", KN, "en")
    steps = {s.node: s for s in ex.path}
    idle_answer = steps["gpu_util.cpu_bound_node"]
    assert idle_answer.answer == "idle" and idle_answer.answer_label == "yes"
    assert idle_answer.conditions == ["gpu.utilization_samples.mean below 40%"]
    assert steps["gpu_util.idle"].check is not None
    last = ex.path[-1]
    # the step into the cause: its answer's conditions, then the cause's own
    assert last.answer == "busy"
    assert last.conditions[0] == "disk.util_percent_samples.mean above 80%"


def test_threshold_overrides_show_in_the_words() -> None:
    ex = explain("gpu_util.dataloader_bound", KN, "en", overrides={"gpu_util.idle": 30})
    assert "gpu.utilization_samples.mean below 30%" in [c for s in ex.path for c in s.conditions]


def test_chinese_words() -> None:
    ex = explain("gpu_util.dataloader_bound", KN, "zh")
    assert any("低于 40%" in c for s in ex.path for c in s.conditions)
    assert "推理路径" in render(ex, KN)


def test_unknown_cause_lists_close_matches() -> None:
    with pytest.raises(UnknownCauseError) as info:
        explain("gpu_util.dataloader_bund", KN)
    err = info.value
    assert err.place == "cause 'gpu_util.dataloader_bund'"
    assert err.problem == "unknown cause id"
    assert err.hint.startswith("Did you mean: gpu_util.dataloader_bound")
    assert err.exit_code == 2


def test_bare_cause_name_still_suggests() -> None:
    with pytest.raises(UnknownCauseError) as info:
        explain("cpu_bound", KN)
    assert "gpu_util.cpu_bound" in info.value.hint


def _kb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kb", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**__import__("os").environ, "KB_NO_CACHE": "1"})


def test_cli_markdown_and_json() -> None:
    res = _kb("explain", "gpu_util.cpu_bound")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("## CPU / Python preprocessing bound")
    res = _kb("explain", "gpu_util.cpu_bound", "--format", "json", "--lang", "zh")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == 1 and doc["lang"] == "zh"
    assert doc["path"][0]["node"] == "symptom" and doc["path"][-1]["node"] == "gpu_util.cpu_bound"


def test_cli_unknown_id_exit_2() -> None:
    res = _kb("explain", "gpu_util.cpu_bond")
    assert res.returncode == 2
    assert res.stdout == ""
    assert "kb: error: cause 'gpu_util.cpu_bond': unknown cause id. Did you mean: gpu_util.cpu_bound" \
        in res.stderr
