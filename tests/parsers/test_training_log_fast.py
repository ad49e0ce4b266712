"""The block reader's bulk metric path gives the reference reader's facts, in bounded memory.

Differential tests: hypothesis-generated logs in every trainer format the bulk path knows (with
NaN, inf, overflowing, negative and odd values, odd separators, other lines in between) and the
real fixture logs, read line by line (``parse``, the reference) and in blocks (``parse_stream``).
"""

from __future__ import annotations

import gzip
import io
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.parsers import training_log
from kb.parsers.base import MAX_SAMPLES
from kb.parsers.training_log.series import Series
from tests.parsers._fixtures import FIXTURES, same

_VALUES = st.one_of(
    st.floats(min_value=0, max_value=20, allow_nan=False).map(lambda v: f"{v:.4f}"),
    st.floats(min_value=1e-9, max_value=1e-2).map(lambda v: f"{v:.3e}"),
    st.sampled_from(["nan", "inf", "-inf", "NaN", "1e999", "-0.5", "2.5E+00", "3.", ".5", "1_0", "0x1", "abc"]),
)


@st.composite
def _line(draw: Any, step: int) -> str:
    kind = draw(st.integers(0, 9))
    v = draw(_VALUES)
    g = draw(_VALUES)
    if kind == 0:  # HF Trainer
        extra = draw(st.sampled_from(["", f", 'grad_norm': {g}", f", 'grad_norm': {g}, 'learning_rate': 2e-05"]))
        return f"{{'loss': {v}{extra}, 'epoch': {step / 100:.2f}}}\n"
    if kind == 1:  # plain / generic
        sep = draw(st.sampled_from([" ", " | ", ", "]))
        kv = draw(st.sampled_from([" ", "=", ": "]))
        tail = draw(st.sampled_from(["", f"{sep}grad_norm{kv}{g}", f"{sep}lr{kv}3.0e-4{sep}grad_norm{kv}{g}{sep}tokens/s{kv}9617{sep}mem{kv}61.2GiB"]))
        return f"[2026-12-01 03:01:01] rank1 step{kv}{step}{sep}loss{kv}{v}{tail}\n"
    if kind == 2:  # DeepSpeed pipeline engine
        return f"steps: {step} loss: {v} iter time (s): 0.512 samples/sec: 62.500\n"
    if kind == 3:  # Lightning progress bar
        return f"Epoch 0:  50%|█████     | {step}/1000 [00:10<00:10,  9.98it/s, v_num=0, loss={v}, grad_norm={g}]\n"
    if kind == 4:  # Megatron-LM
        lm = draw(st.sampled_from([f" lm loss: {v} |", ""]))
        skipped = draw(st.sampled_from([0, 0, 0, 1]))
        return (f" iteration {step:8d}/  500000 | consumed samples: {step * 512:12d} | elapsed time per iteration (ms): "
                f"4021.5 | learning rate: 3.000000E-04 | global batch size:   512 |{lm} loss scale: 1.0 | grad norm: {g} | "
                f"number of skipped iterations: {skipped:3d} | number of nan iterations: {skipped:3d} |\n")
    if kind == 5:  # benign
        return f"[INFO] prefetched shard {step} of 4096\n"
    if kind == 6:  # a metric line the grammars do not know
        return f"{{'eval_loss': {v}, 'eval_runtime': 1.5, 'epoch': 1.0}}\n"
    if kind == 7:
        return "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0\n"
    if kind == 8:
        return f"step {step} loss {v}\r\n"
    return ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.10 GiB of which 1.06 GiB is free.\n")


@st.composite
def _log(draw: Any) -> str:
    n = draw(st.integers(1, 120))
    # runs of one kind make the bulk path run; a random kind per line makes the mixed path run
    out = []
    for i in range(n):
        line = draw(_line(i))
        out.append(line * draw(st.sampled_from([1, 1, 5, 40])))
    return "".join(out)


def _summaries_match(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Series summaries equal, the mean included (both readers add the values one at a time, in
    log order, so the sums are bit-identical)."""
    assert a.keys() == b.keys()
    for path in a:
        assert same(a[path], b[path]), path


def _check(text: str, block_size: int, engine: str | None = "python") -> None:
    ref = training_log.parse(text.splitlines(True), "g")
    got = training_log.parse_stream(io.BytesIO(text.encode()), "g", block_size=block_size, engine=engine)
    assert same(ref.facts, got.facts)
    assert ref.notes == got.notes
    _summaries_match(ref.meta.get("series", {}), got.meta.get("series", {}))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=_log(), block_size=st.sampled_from([64, 333, 4096, 1 << 20]))
def test_block_reader_equals_line_reader_on_generated_logs(text: str, block_size: int) -> None:
    _check(text, block_size)


def test_block_reader_equals_line_reader_on_every_fixture_log() -> None:
    logs = sorted(FIXTURES.glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        for bs in (64, 1 << 20):
            _check(text, bs)


def test_bulk_formats_are_taken_in_bulk() -> None:
    """Each format's metric lines really take the bulk path (not only the line-by-line fallback)."""
    from kb.parsers.training_log import formats

    rng = random.Random(1)
    lines = {
        "hf": lambda i: f"{{'loss': {rng.random():.4f}, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.1}}\n",
        "generic": lambda i: f"[2026-12-01 03:01:01] rank1 step {i} loss {rng.random():.4f} lr 3.0e-4 grad_norm 0.621 "
                             "tokens/s 9617 mem 61.2GiB\n",
        "deepspeed": lambda i: f"steps: {i} loss: {rng.random():.4f} iter time (s): 0.512 samples/sec: 62.500\n",
        "lightning": lambda i: f"Epoch 0:  50%|█████     | {i}/1000 [00:10<00:10,  9.98it/s, v_num=0, loss=2.5]\n",
        "megatron": lambda i: f" iteration {i:8d}/  500000 | consumed samples: {i * 512:12d} | elapsed time per iteration "
                              "(ms): 4021.5 | learning rate: 3.000000E-04 | global batch size:   512 | lm loss: "
                              "2.500000E+00 | loss scale: 1.0 | grad norm: 0.5 | number of skipped iterations:   0 | "
                              "number of nan iterations:   0 |\n",
    }
    for fmt in formats.FORMATS:
        calls = []
        orig = fmt.apply
        fmt.apply = lambda sc, rows, orig=orig: calls.append(len(rows)) or orig(sc, rows)  # type: ignore[method-assign]
        try:
            text = "".join(lines[fmt.name](i) for i in range(1, 2001))
            _check(text, 1 << 16)
        finally:
            fmt.apply = orig  # type: ignore[method-assign]
        assert sum(calls) == 2000, fmt.name


def test_series_add_and_extend_give_the_same_state() -> None:
    rng = random.Random(3)
    values = [rng.random() for _ in range(50_000)]
    one, bulk = Series(), Series()
    for v in values:
        one.add(v, 1)
    i = 0
    while i < len(values):
        k = rng.randint(1, 5000)
        bulk.extend(values[i : i + k], step=1)
        i += k
    a, b = one.summary(), bulk.summary()
    assert a == b and one.samples() == bulk.samples()  # the mean too: the same additions in the same order
    assert len(one.samples()) <= MAX_SAMPLES and one.samples()[-1] == values[-1]


def _big_generic_log(path: Path, lines: int, nan_at: int) -> None:
    rng = random.Random(0)
    vals = [f"{2 + rng.random():.4f}" for _ in range(997)]
    with open(path, "w") as fh:
        chunk = []
        for i in range(1, lines + 1):
            loss = "nan" if i == nan_at else vals[i % 997] if i < nan_at - 50 else f"{3 + (i - nan_at + 50) * 0.5:.4f}"
            chunk.append(f"[2026-12-01 03:01:01] rank1 step {i * 10} loss {loss} lr 3.0e-4 grad_norm 0.621 "
                         f"tokens/s 9617 mem 61.2GiB\n")
            if len(chunk) == 10_000:
                fh.write("".join(chunk))
                chunk = []
        fh.write("".join(chunk))


def test_nan_in_the_last_percent_of_a_large_log_is_found_with_its_step(tmp_path: Path) -> None:
    """~22 MB, a metric line every step; the loss climbs, then goes NaN in the last 0.5 %."""
    lines = 220_000
    nan_at = lines - 1000
    log = tmp_path / "big.log"
    _big_generic_log(log, lines, nan_at)
    res = training_log.parse_path(str(log))
    num = res.facts["numerics"]
    assert num["first_nonfinite_step"] == nan_at * 10 and num["nan_source"] == "loss"
    assert num["nonfinite_count"] == 1
    assert len(num["loss"]) <= MAX_SAMPLES and any(v != v for v in num["loss"])
    # the climb before the NaN is in the facts list (growth > 0) and in the summary
    assert num["loss"][-1] > 400
    s = res.meta["series"]["numerics.loss"]
    assert s["count"] == lines and s["nonfinite"] == 1
    assert s["first_nonfinite"]["step"] == nan_at * 10
    steps = [p["step"] for p in s["first_nonfinite"]["around"]]
    assert nan_at * 10 in steps and steps[-1] == (nan_at + 20) * 10
    assert s["growth"]["last_over_first"] > 50 and len(s["tail"]) == 1000
    assert len(s["downsampled"]["points"]) <= 4096


def test_gzip_logs_are_streamed(tmp_path: Path) -> None:
    text = (FIXTURES / "loss_megatron_nan.log").read_bytes() + (FIXTURES / "oom_2_2.log").read_bytes()
    plain = tmp_path / "x.log"
    plain.write_bytes(text)
    gz = tmp_path / "x.log.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(text)
    assert same(training_log.parse_path(str(gz)).facts, training_log.parse_path(str(plain)).facts)


def test_progress_bar_is_silent_off_a_terminal(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.parsers.training_log import progress

    monkeypatch.setattr(progress, "THRESHOLD", 10)
    log = tmp_path / "x.log"
    log.write_text("step 1 loss 2.5\n" * 1000)
    training_log.parse_path(str(log))
    assert capfd.readouterr().err == ""
    assert progress.wanted(10**9, None) is False  # stderr is not a terminal under pytest
    assert progress.wanted(10, True) is True
    res = training_log.parse_path(str(log), progress=True)  # drawn, then removed (transient)
    assert res.facts["numerics"]["loss"][0] == 2.5
