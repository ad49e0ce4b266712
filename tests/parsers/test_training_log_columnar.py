"""The columnar engine (polars) gives the reference reader's facts, bit for bit.

The same differential checks as ``test_training_log_fast`` (generated logs in every trainer
format with odd values and other lines between them, the fixture logs), with the engine forced
on for every region (``engine="polars"``), plus what only this engine does: templates, per-line
refusals, fixed-offset slicing, float parsing by polars, fallbacks, and the lazy import.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.parsers import training_log
from kb.parsers.base import MAX_SAMPLES
from kb.parsers.training_log import columnar, columns, fixed
from kb.parsers.training_log.series import Series
from tests.parsers._fixtures import FIXTURES, same
from tests.parsers.test_training_log_fast import _big_generic_log, _check, _log

pl = pytest.importorskip("polars")  # the `fast` and `dev` extras install it


def _check_polars(text: str, block_size: int) -> None:
    _check(text, block_size, engine="polars")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=_log(), block_size=st.sampled_from([333, 4096, 1 << 20]))
def test_columnar_engine_equals_line_reader_on_generated_logs(text: str, block_size: int) -> None:
    _check_polars(text, block_size)


def test_columnar_engine_equals_line_reader_on_every_fixture_log() -> None:
    logs = sorted(FIXTURES.glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        for bs in (64, 1 << 20):
            _check_polars(text, bs)


_LINES = {
    "hf": lambda i, v, g: f"{{'loss': {v}, 'grad_norm': {g}, 'learning_rate': 2e-05, 'epoch': {i / 1000:.2f}}}\n",
    "generic": lambda i, v, g: f"[2026-12-01 03:01:01] rank1 step {i} loss {v} lr 3.0e-4 grad_norm {g} tokens/s 9617 mem 61.2GiB\n",
    "deepspeed": lambda i, v, g: f"steps: {i} loss: {v} iter time (s): 0.512 samples/sec: 62.500\n",
    "lightning": lambda i, v, g: f"Epoch {i // 100}:  50%|█████     | {i % 100}/100 [00:10<00:10,  9.98it/s, v_num=0, loss={v}, grad_norm={g}]\n",
    "megatron": lambda i, v, g: (f" iteration {i:8d}/  500000 | consumed samples: {i * 512:12d} | elapsed time per iteration (ms): "
                                 f"{4000 + i % 97:.1f} | learning rate: 3.000000E-04 | global batch size:   512 | lm loss: {v} | "
                                 f"loss scale: 1.0 | grad norm: {g} | number of skipped iterations:   0 | number of nan iterations:   0 |\n"),
}


def _odd_lines_log(counters: bool) -> str:
    """Metric lines of three formats with odd lines between them: NaN/inf/overflow values, a
    negative lr, Megatron skips (``counters``: and NaN counters), an OOM and an eval line."""
    rng = random.Random(5)
    out = []
    for i in range(1, 6000):
        fmt = ("hf", "generic", "megatron")[i // 2000]
        v = rng.choice(["nan", "inf", "1e999", "-0.5", "0x1"]) if rng.random() < 0.01 else f"{rng.random():.4f}"
        line = _LINES[fmt](i, v, f"{rng.random():.3f}")
        if rng.random() < 0.005:
            line = line.replace("2e-05", "-2e-05").replace("skipped iterations:   0", "skipped iterations:   1")
        if counters and rng.random() < 0.005:
            line = line.replace("nan iterations:   0", "nan iterations:   2")
        out.append(line)
        if rng.random() < 0.003:
            out.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
        if rng.random() < 0.003:
            out.append(f"{{'eval_loss': {rng.random()}, 'epoch': 1.0}}\n")
    return "".join(out)


def _values(rng: random.Random, n: int) -> list[str]:
    """Decimal texts of every shape the engine takes in bulk: widths, exponents, signs, long mantissas."""
    out = []
    for _ in range(n):
        k = rng.randint(0, 6)
        v = rng.random() * 10 ** rng.randint(-8, 8)
        out.append([f"{v:.4f}", f"{v:.17g}", f"{v:.3e}", f"{v:.6E}", repr(v), f"+{v:.2f}", f"{v:.0f}."][k])
    return out


@pytest.mark.parametrize("fmt", sorted(_LINES))
def test_every_format_is_taken_by_the_engine(fmt: str) -> None:
    """Each format's lines go through the engine in bulk (few runs), with exact facts."""
    rng = random.Random(fmt)
    vals = _values(rng, 3000)  # many shapes of loss values (one template each with the line around)
    if fmt == "hf":
        vals = [v.lower() for v in vals]  # Python's repr: the HF grammar takes lower-case exponents only
    text = "".join(_LINES[fmt](i, vals[i], f"{rng.random():.3f}") for i in range(1, 3000))
    applied: list[int] = []
    orig = columnar.ColumnarScan._apply

    def spy(self: Any, region: Any, first: int, last: int, k: int) -> None:
        applied.append(int((region.cls.slice(first, last - first + 1) == k).sum()))
        orig(self, region, first, last, k)

    columnar.ColumnarScan._apply = spy  # type: ignore[method-assign]
    try:
        _check_polars(text, 1 << 20)
    finally:
        columnar.ColumnarScan._apply = orig  # type: ignore[method-assign]
    assert sum(applied) == 2999 and len(applied) <= 4, (fmt, applied)


@pytest.mark.parametrize("split_min", [columnar.SPLIT_MIN, 1000])
def test_odd_lines_inside_a_region_are_fed_in_order(split_min: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """NaN/inf/overflow values, negative lr, Megatron skips, other trigger lines and unknown metric
    lines between bulk lines: each is fed to the line reader at its place, the rest in bulk (a
    region whole, or cut in parts analysed on two threads)."""
    monkeypatch.setattr(columnar, "SPLIT_MIN", split_min)
    text = _odd_lines_log(counters=False)
    for bs in (4096, 1 << 16, 1 << 22):
        _check_polars(text, bs)
    got = training_log.parse_stream(io.BytesIO(text.encode()), "g", engine="polars")
    assert got.meta["engine"] == "polars"


def test_regions_the_engine_refuses_still_give_the_same_facts() -> None:
    r"""\r\n line ends, NUL bytes and invalid UTF-8 send a region to the Python path."""
    base = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 500))
    for text in (base.replace("\n", "\r\n"), base + "junk \x00 here\n" + base, base):
        _check_polars(text, 1 << 16)
    raw = base.encode() + b"\xff\xfe broken loss 1\n" + base.encode()
    ref = training_log.parse(raw.decode("utf-8", "replace").splitlines(True), "g")
    got = training_log.parse_stream(io.BytesIO(raw), "g", engine="polars")
    assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])


def test_polars_parses_decimals_like_float() -> None:
    """The bulk path takes only plain decimals; polars must round each one as float() does."""
    rng = random.Random(11)
    texts = _values(rng, 20_000) + [
        "0.1", "2.5E+00", "3.", ".5", "+1.5", "-0.0", "1e308", "1e-320", "4.9406564584124654e-324",
        "9007199254740993", "0.30000000000000004", "123456789012345678901234567890", "1.7976931348623157e308",
        "2.2250738585072011e-308", "0." + "9" * 40, "1" + "0" * 30 + ".5",
    ]
    got = pl.Series(texts).cast(pl.Float64).to_list()
    assert all(a == float(t) and str(a) == str(float(t)) for a, t in zip(got, texts))


def _series_values(rng: random.Random) -> tuple[list[float], Series]:
    """Values over six magnitudes with a tied minimum and a negative zero, and the Series
    the one-at-a-time ``add`` makes of them (the reference for the bulk adds)."""
    values = [rng.random() * 10 ** rng.randint(-3, 3) for _ in range(60_000)]
    values[100] = values[200] = min(values) - 1  # ties: the first index is kept
    values[300] = -0.0
    values[400] = -5.0
    one = Series()
    for v in values:
        one.add(v, 7)
    return values, one


def test_extend_column_equals_add() -> None:
    rng = random.Random(3)
    values, one = _series_values(rng)
    col = Series()
    i = 0
    while i < len(values):
        k = rng.randint(1, 9000)
        col.extend_column(pl.Series(values[i : i + k], dtype=pl.Float64), step=7)
        i += k
    assert one.summary() == col.summary() and one.samples() == col.samples()
    assert len(col.samples()) <= MAX_SAMPLES


@pytest.mark.parametrize("engine", ["arrow", "polars"])
def test_nan_in_the_last_percent_is_found_by_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        engine: str) -> None:
    """A 22 MB log (over the engines' threshold): the fixed-width engine (through a memory map)
    or, without pyarrow, the columnar one reads it; the NaN comes with its step and the facts are
    the Python path's."""
    if engine == "arrow":
        pytest.importorskip("pyarrow")
    else:
        monkeypatch.setattr(fixed, "_available", False)
    lines, nan_at = 220_000, 219_000
    log = tmp_path / "big.log"
    _big_generic_log(log, lines, nan_at)
    res = training_log.parse_path(str(log))
    assert res.meta["engine"] == engine
    num = res.facts["numerics"]
    assert num["first_nonfinite_step"] == nan_at * 10 and num["nonfinite_count"] == 1
    s = res.meta["series"]["numerics.loss"]
    assert s["count"] == lines and s["first_nonfinite"]["step"] == nan_at * 10
    assert [p["step"] for p in s["first_nonfinite"]["around"]][-1] == (nan_at + 20) * 10
    ref = training_log.parse_path(str(log), engine="python")
    assert ref.meta["engine"] == "python"
    assert same(ref.facts, res.facts) and same(ref.meta["series"], res.meta["series"]) and ref.notes == res.notes


def test_without_polars_the_python_path_reads_large_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "_available", False)
    monkeypatch.setattr(fixed, "_available", False)
    log = tmp_path / "big.log"
    _big_generic_log(log, 100_000, 99_500)
    res = training_log.parse_path(str(log))
    assert res.meta["engine"] == "python" and res.facts["numerics"]["first_nonfinite_step"] == 995_000
    monkeypatch.setattr(columnar, "_available", None)
    monkeypatch.setattr(fixed, "_available", None)
    monkeypatch.setenv(columnar.ENV, "python")
    assert training_log.parse_path(str(log)).meta["engine"] == "python"


def test_small_inputs_and_import_kb_do_not_import_polars(tmp_path: Path) -> None:
    log = tmp_path / "small.log"
    log.write_text("step 1 loss 2.5\n" * 1000)
    code = ("import sys, kb; from kb.parsers import training_log; "
            f"r = training_log.parse_path({str(log)!r}); "
            "assert r.meta['engine'] == 'python'; assert 'polars' not in sys.modules, 'imported'; "
            "assert 'pyarrow' not in sys.modules, 'imported pyarrow'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _digit_sets(tree: Any) -> list[set[str]]:
    """The set of digits each literal or character class of a parsed pattern accepts."""
    from re import _constants as c  # type: ignore[attr-defined]

    digits = "0123456789"
    out: list[set[str]] = []

    def member(items: Any, ch: str) -> bool:
        neg = False
        hit = False
        for op, av in items:
            if op is c.NEGATE:
                neg = True
            elif op is c.LITERAL:
                hit |= chr(av) == ch
            elif op is c.RANGE:
                hit |= av[0] <= ord(ch) <= av[1]
            elif op is c.CATEGORY:
                hit |= av in (c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_UNI_DIGIT, c.CATEGORY_UNI_WORD)
                assert av in (c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_SPACE, c.CATEGORY_UNI_DIGIT,
                              c.CATEGORY_UNI_WORD, c.CATEGORY_UNI_SPACE), av
            else:
                raise AssertionError(op)
        return hit != neg

    def walk(node: Any) -> None:
        for op, av in node:
            if op in (c.LITERAL, c.NOT_LITERAL):
                out.append({d for d in digits if (chr(av) == d) != (op is c.NOT_LITERAL)})
            elif op is c.IN:
                out.append({d for d in digits if member(av, d)})
            elif op is c.ANY:
                out.append(set(digits))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                walk(av[2])
            elif op is c.SUBPATTERN:
                walk(av[3])
            elif op is c.BRANCH:
                for alt in av[1]:
                    walk(alt)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                walk(av[1])
            elif op is c.ATOMIC_GROUP:
                walk(av)
            elif op in (c.AT, c.GROUPREF):
                pass
            else:
                raise AssertionError(f"unhandled {op}")

    walk(tree)
    return out


def test_grammars_treat_all_digits_alike_and_triggers_hold_none() -> None:
    """What makes a line's template stand for the line: every literal and class of every trainer
    grammar accepts all ten digits or none, and no trigger literal holds a digit."""
    import re._parser as sre_parse  # type: ignore[import-not-found]

    from kb.parsers.training_log import formats
    from kb.parsers.training_log.triggers import ALL_LITERALS

    for fmt in formats.FORMATS:
        sets = _digit_sets(sre_parse.parse(fmt.line.pattern.decode("latin-1")))
        assert sets and all(len(s) in (0, 10) for s in sets), fmt.name
    assert not any(ch.isdigit() for lit in ALL_LITERALS for ch in lit)
    # and on lines: matching a line and its template gives the same spans
    rng = random.Random(2)
    for name, make in _LINES.items():
        fmt = next(f for f in formats.FORMATS if f.name == name)
        for i in range(1, 400):
            line = b"\n" + make(i * 37, _values(rng, 1)[0], f"{rng.random():.3f}").encode()
            tpl = line.translate(columns.DIGITS)
            a, b = fmt.line.match(line), fmt.line.match(tpl)
            assert (a is None) == (b is None), line
            if a is not None and b is not None:
                assert a.regs == b.regs, line
