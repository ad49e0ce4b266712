"""`kb triage`: the session logic, then the command driven by scripted answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kb.engine.errors import InputError
from kb.cli.app import app
from kb.triage import CheckRequest, Done, Question, TriageSession, fact_prompt, parse_value
from tests.conftest import ROOT

SMI_CSV = """index, utilization.gpu [%], memory.used [MiB]
0, 12 %, 30000 MiB
1, 18 %, 31000 MiB
"""
IOSTAT = """Linux 5.15.0 (host)  01/02/2025  _x86_64_  (32 CPU)

avg-cpu:  %user   %nice %system %iowait  %steal   %idle
           5.51    0.00    5.16   35.72    0.00   53.61

Device            r/s     rMB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wMB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dMB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util
nvme0n1        900.00    400.00     0.00   0.00    9.00   455.00    1.00      0.01     0.00   0.00    0.50     8.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00    8.00  98.50
"""


#: what the user can measure, by fact: a slow data disk behind an idle GPU
TRUTH = {"dataloader.data_wait_fraction": "0.6", "cpu.iowait_percent_samples.mean": "38",
         "disk.util_percent_samples.mean": "95"}


def drive(s: TriageSession, truth: dict[str, str], limit: int = 12) -> tuple[object, list[str]]:
    """Answer each check's first prompt from ``truth`` (skip it otherwise) until done."""
    asked: list[str] = []
    for _ in range(limit):
        step = s.next_step()
        if isinstance(step, Done):
            return step, asked
        assert isinstance(step, CheckRequest), step
        asked.append(step.check_id)
        s.answer(truth.get(step.facts[0].fact, "") if step.facts else "")
    return s.next_step(), asked


def test_session_from_nothing_to_a_cause(kn) -> None:
    s = TriageSession(kn)
    q = s.next_step()
    assert isinstance(q, Question)
    assert q.text == kn.sop["classify"]["question"]["en"]
    assert q.choices[0].id == "gpu_util"
    assert s.answer("1") == "symptom: gpu_util"
    step = s.next_step()
    assert isinstance(step, CheckRequest) and step.check_id == "nvidia_smi_query"
    assert step.question == "Is the GPU almost idle?"
    assert step.facts[0].fact == "gpu.utilization_samples.mean"
    assert step.facts[0].prompt() == "gpu.utilization_samples.mean (%)?"
    assert any("below 40%" in a for a in step.answers)
    s.answer("25")
    # then answer what the truth knows and skip the rest, as a user would
    done, asked = drive(s, TRUTH)
    assert isinstance(done, Done) and done.reason == "confirmed", asked
    assert done.report.findings[0].cause_id == "gpu_util.dataloader_bound"
    assert "iostat" in asked and len(asked) <= 8
    saved = s.saved_facts()
    assert saved["gpu"] == {"utilization_samples": [25.0]}
    assert saved["disk"] == {"util_percent_samples": [95.0]}


def test_session_pasted_output_and_file(kn, tmp_path: Path) -> None:
    s = TriageSession(kn, {"symptom": "gpu_util"})
    s.next_step()
    assert s.kind_of(SMI_CSV.splitlines()[0]) == "output"
    line = s.answer(SMI_CSV)
    assert "gpu.utilization_samples" in line and "nvidia_smi" in line
    p = tmp_path / "iostat.txt"
    p.write_text(IOSTAT)
    assert s.kind_of(str(p)) == "path"
    s.answer(str(p))  # the whole iostat output as a file: %util and iowait at once
    assert s.facts["disk"]["util_percent_samples"] and s.facts["cpu"]["iowait_percent_samples"]
    done, _asked = drive(s, TRUTH)
    assert isinstance(done, Done) and done.report.findings[0].cause_id == "gpu_util.dataloader_bound"


def test_session_assign_skip_and_errors(kn) -> None:
    s = TriageSession(kn, {"symptom": "gpu_util"})
    first = s.next_step()
    assert isinstance(first, CheckRequest)
    assert s.answer("") == "nvidia_smi_query: skipped"
    step = s.next_step()
    assert isinstance(step, CheckRequest) and step.check_id != "nvidia_smi_query"
    with pytest.raises(InputError):
        s.answer("gpu.utilization_samples=lots")
    s.answer("gpu.utilization_samples=50 55 60")  # half busy
    assert s.facts["gpu"]["utilization_samples"] == [50.0, 55.0, 60.0]
    s2 = TriageSession(kn)
    s2.next_step()
    with pytest.raises(InputError) as info:
        s2.answer("purple elephants")
    assert "no symptom branch matches" in info.value.line()
    assert s2.answer("my dataloader is slow and gpu utilization low") == "symptom: gpu_util"


def test_fact_prompts_and_values() -> None:
    assert fact_prompt("oom.occurred").kind == "bool"  # type: ignore[union-attr]
    assert parse_value(fact_prompt("oom.occurred"), "是") is True  # type: ignore[arg-type]
    assert fact_prompt("numerics.dtype").choices == ["fp32", "tf32", "fp16", "bf16", "fp8"]  # type: ignore[union-attr]
    assert fact_prompt("compile.graph_break_reasons.print").kind == "integer"  # type: ignore[union-attr]
    assert fact_prompt("distributed.outlier_ranks.count").fact == "distributed.outlier_ranks"  # type: ignore[union-attr]
    assert fact_prompt("distributed.rank_states") is None
    assert parse_value(fact_prompt("gpu.utilization_samples.mean"), "25 %") == 25.0  # type: ignore[arg-type]


def test_cli_runner_scripted(kn, tmp_path: Path) -> None:
    out = tmp_path / "facts.json"
    # the symptom, the GPU snapshot, then blank lines skip every other check: the session
    # ends with what it knows (hypotheses), and the answers are saved
    res = CliRunner().invoke(app, ["triage", "--save", str(out)], input="1\n25\n" + "\n" * 30)
    assert res.exit_code in (0, 3), res.output
    assert "## Diagnosis" in res.stdout and "gpu_util.dataloader_bound" in res.stdout
    assert "Run: nvidia-smi --query-gpu" in res.stderr  # the dialogue is on stderr
    assert json.loads(out.read_text())["gpu"] == {"utilization_samples": [25.0]}
    again = CliRunner().invoke(app, ["triage", "--save", str(out)], input="1\n")
    assert again.exit_code == 2 and "file exists" in again.stderr


def test_cli_runner_pasted_output_zh(kn) -> None:
    script = "gpu_util\n" + SMI_CSV + ".\n" + IOSTAT + ".\n"
    res = CliRunner().invoke(app, ["triage", "--lang", "zh"], input=script)
    assert res.exit_code == 0, res.output
    assert "## 诊断结果" in res.stdout and "gpu_util.dataloader_bound" in res.stdout


def test_cli_runner_end_of_input_reports_what_is_known(kn) -> None:
    res = CliRunner().invoke(app, ["triage"], input="1\n")
    assert res.exit_code == 3
    assert "**Status:** hypotheses" in res.stdout


def test_cli_subprocess_stdin(tmp_path: Path) -> None:
    facts = tmp_path / "start.json"
    facts.write_text(json.dumps({"symptom": "gpu_util"}))
    saved = tmp_path / "saved.json"
    res = subprocess.run(
        [sys.executable, "-m", "kb", "triage", "--facts", str(facts), "--save", str(saved)],
        input="25\n" + "\n" * 30, capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={**os.environ, "KB_NO_CACHE": "1"})
    assert res.returncode in (0, 3), res.stderr
    assert res.stdout.startswith("## Diagnosis")  # nothing but the report on stdout
    assert "gpu_util.dataloader_bound" in res.stdout
    assert json.loads(saved.read_text())["gpu"]["utilization_samples"] == [25.0]


def test_samples_answer_a_summary_prompt() -> None:
    """`gpu.utilization_samples.mean (%)?` may be answered with the samples themselves."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "kb", "triage"], input="1\n12 18 9 15\n" + "\n" * 30,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 3), r.stderr
    assert "13.5%" in r.stdout  # the mean of the samples given
