"""Step times in a training log: read from the lines that print them, and recurring slow steps
measured from them (``training.slow_step_ratio`` / ``training.slow_step_period``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers import training_log
from kb.parsers.training_log.stalls import slow_steps


def _times(n: int, every: int, base: float = 310.0, slow: float = 3100.0) -> list[float]:
    return [slow if i % every == 0 else base + (i % 3) for i in range(1, n + 1)]


@pytest.mark.parametrize(("times", "stride", "expected"), [
    # a 10x step every 10 records
    (_times(60, 10), 1.0, {"slow_step_ratio": 9.97, "slow_step_period": 10}),
    # the same records from a log printed every 10 steps: the period is in steps
    (_times(60, 10), 10.0, {"slow_step_ratio": 9.97, "slow_step_period": 100}),
    # a stall every 7 records, one gap off (a save that ran late): two of three gaps agree
    ([3000.0 if i in (7, 14, 22, 29) else 300.0 for i in range(40)], 1.0,
     {"slow_step_ratio": 10.0, "slow_step_period": 7}),
    # irregular slow steps: a ratio, no period
    ([3000.0 if i in (5, 13, 14, 30) else 300.0 for i in range(40)], 1.0, {"slow_step_ratio": 10.0}),
])
def test_recurring_slow_steps(times: list[float], stride: float, expected: dict) -> None:
    assert slow_steps(times, stride) == expected


@pytest.mark.parametrize("times", [
    [300.0 + (i % 5) * 10 for i in range(60)],  # jitter within 15 %: no slow step
    [300.0 if i % 2 else 900.0 for i in range(60)],  # every other step slow: bimodal, not a stall
    [3000.0, 3000.0, 3000.0] + [300.0] * 20,  # slow only in the warm-up (compilation)
    [300.0] * 8 + [3000.0, 300.0, 3000.0],  # too few records after the warm-up
    [300.0] * 30 + [3000.0] + [300.0] * 30,  # one slow step is no recurrence
])
def test_no_recurring_slow_steps(times: list[float]) -> None:
    assert slow_steps(times) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.floats(min_value=0, max_value=1e4), max_size=200),
       st.floats(min_value=0.5, max_value=1000))
def test_any_series_gives_a_sane_answer(times: list[float], stride: float) -> None:
    out = slow_steps(times, stride)
    assert set(out) <= {"slow_step_ratio", "slow_step_period"}
    if out:
        assert math.isfinite(out["slow_step_ratio"]) and out["slow_step_ratio"] >= 1.5
        assert out.get("slow_step_period", 1) >= 1


# ---------------------------------------------------------------- lines that print step times

def _nanogpt(i: int, ms: float) -> str:  # nanoGPT train.py
    return f"iter {i}: loss {4.5 - i * 0.01:.4f}, time {ms:.2f}ms, mfu 31.20%"


def _nanochat(i: int, ms: float) -> str:  # nanochat scripts/base_train.py
    return (f"step {i:05d}/13920 ({i / 139.2:.2f}%) | loss: {6.9 - i * 0.01:.6f} | lrm: 1.00 | "
            f"dt: {ms:.2f}ms | tok/sec: 767,650 | mfu: 47.98 | epoch: 1 | total time: 0.09m | eta: 157.6m")


def _llmc(i: int, ms: float) -> str:  # llm.c train_gpt2.cu
    return f"step {i:4d}/74 | train loss 5.123456 | norm 1.2345 | lr 1.00e-04 | {ms:.2f} ms | 45.1% bf16 MFU | 45000 tok/s"


@pytest.mark.parametrize("line", [_nanogpt, _nanochat, _llmc])
def test_step_times_of_common_trainers(line) -> None:
    times = _times(40, 8)
    res = training_log.parse([line(i + 1, t) for i, t in enumerate(times)], "train.log")
    assert res.facts["training"]["step_time_ms"] == pytest.approx(times)
    assert res.facts["training"]["slow_step_ratio"] == pytest.approx(9.97)
    assert res.facts["training"]["slow_step_period"] == 8


def test_period_in_steps_of_a_log_printed_every_ten_steps() -> None:
    times = _times(40, 5)
    res = training_log.parse([_nanogpt(10 * (i + 1), t) for i, t in enumerate(times)], "train.log")
    assert res.facts["training"]["slow_step_period"] == 50


def test_a_time_without_a_loss_on_its_line_is_no_step_time() -> None:
    lines = [f"[eval] iter {i}: time {300 + i}ms" for i in range(30)]
    res = training_log.parse(lines, "train.log")
    assert "training" not in res.facts


def test_megatron_step_times_give_the_period(tmp_path: Path) -> None:
    # Megatron-LM prints "elapsed time per iteration (ms)" every log interval (here 10 steps)
    rows = []
    for k, ms in enumerate(_times(30, 4, base=1200.0, slow=5000.0)):
        it = 10 * (k + 1)
        rows.append(
            f" iteration       {it}/  250000 | consumed samples:        {it * 8} | elapsed time per iteration (ms): "
            f"{ms:.1f} | learning rate: 1.500E-04 | global batch size:     8 | lm loss: 2.500000E+00 | "
            f"loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        )
    p = tmp_path / "megatron.log"
    p.write_text("\n".join(rows) + "\n")
    res = training_log.parse_path(str(p))
    assert res.facts["training"]["slow_step_period"] == 40
    assert res.facts["training"]["slow_step_ratio"] == pytest.approx(5000.0 / 1201.0, rel=1e-2)


def test_a_recurring_stall_is_a_hypothesis_until_the_workers_are_known(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("\n".join(_nanogpt(i + 1, t) for i, t in enumerate(_times(60, 10))) + "\n")
    rep = kb.diagnose(inputs=[str(p)], symptom="training is slow")
    assert [h.cause_id for h in rep.hypotheses][0] == "gpu_util.periodic_stalls"
    assert not rep.findings
    # with 4 DataLoader workers a period of 10 is not the loader running dry: confirmed
    facts = {"symptom": "gpu_util", "dataloader": {"num_workers": 4},
             "training": {"slow_step_ratio": 9.97, "slow_step_period": 10}}
    rep = kb.diagnose(facts=facts)
    assert [f.cause_id for f in rep.findings] == ["gpu_util.periodic_stalls"]
    # with 10 workers it is the loader's rhythm: not confirmed
    facts["dataloader"]["num_workers"] = 10
    rep = kb.diagnose(facts=facts)
    assert "gpu_util.periodic_stalls" not in [f.cause_id for f in rep.findings]
