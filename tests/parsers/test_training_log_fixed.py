"""The fixed-width engine (pyarrow, memory map) gives the reference reader's facts, bit for bit.

Differential tests against ``training_log.parse`` (generated logs of every trainer format with odd
values and other lines between them, the fixture logs), read through a file (memory-mapped) and
with small regions and windows, so that runs, cycles and pinned values cross them; plus what only
this engine does: the word-wise template check, pinned values, cycles of templates, float
parsing by pyarrow, the bounded series, and the fallbacks.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.parsers import training_log
from kb.parsers.base import MAX_SAMPLES
from kb.parsers.training_log import columns, fixed
from kb.parsers.training_log.series import Series
from tests.parsers._fixtures import FIXTURES, same
from tests.parsers.test_training_log_columnar import _LINES, _odd_lines_log, _series_values, _values
from tests.parsers.test_training_log_fast import _big_generic_log, _log, _summaries_match

pa = pytest.importorskip("pyarrow")  # the `fast` and `dev` extras install it
pc = pytest.importorskip("pyarrow.compute")


@contextlib.contextmanager
def _small(region: int = 4096, window: int = 512, first: int = 64) -> Iterator[None]:
    """Small regions and windows (and fresh caches): runs, cycles and pins cross them."""
    saved = fixed.REGION, fixed.WINDOW, fixed.FIRST
    fixed.REGION, fixed.WINDOW, fixed.FIRST = region, window, first
    fixed._PLANS.clear()
    fixed._CYCLES.clear()
    fixed._SEEN.clear()
    try:
        yield
    finally:
        fixed.REGION, fixed.WINDOW, fixed.FIRST = saved
        fixed._PLANS.clear()
        fixed._CYCLES.clear()
        fixed._SEEN.clear()


def _read(raw: bytes) -> Any:
    """``raw`` read by the engine through a file (memory-mapped)."""
    fd, name = tempfile.mkstemp(suffix=".log")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        return training_log.parse_path(name, "g", engine="arrow")
    finally:
        os.unlink(name)


def _check(text: str, **small: int) -> Any:
    ref = training_log.parse(text.splitlines(True), "g")
    with _small(**small):
        got = _read(text.encode())
    assert same(ref.facts, got.facts)
    assert ref.notes == got.notes
    _summaries_match(ref.meta.get("series", {}), got.meta.get("series", {}))
    return got


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=_log(), region=st.sampled_from([4096, 1 << 16, 1 << 23]), window=st.sampled_from([64, 512, 1 << 20]))
def test_fixed_engine_equals_line_reader_on_generated_logs(text: str, region: int, window: int) -> None:
    _check(text, region=region, window=window, first=min(64, window))


def test_fixed_engine_equals_line_reader_on_every_fixture_log() -> None:
    logs = sorted(FIXTURES.glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        for region in (4096, 1 << 23):
            _check(text, region=region)


def test_a_stream_that_is_not_a_file_is_read_into_memory() -> None:
    text = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 3000))
    ref = training_log.parse(text.splitlines(True), "g")
    got = training_log.parse_stream(io.BytesIO(text.encode()), "g", engine="arrow")
    assert got.meta["engine"] == "arrow" and same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])


def _spy_runs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    runs: list[Any] = []
    orig = fixed.FixedScan._apply_runs

    def spy(self: Any, batch: list[Any]) -> None:
        runs.extend(batch)
        orig(self, batch)

    monkeypatch.setattr(fixed.FixedScan, "_apply_runs", spy)
    return runs


@pytest.mark.parametrize("fmt", sorted(_LINES))
def test_every_format_is_taken_in_bulk_with_every_decimal_shape(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each format's lines go through the engine in runs (one per template), with exact facts."""
    rng = random.Random(fmt)
    vals = _values(rng, 3000)
    if fmt == "hf":
        vals = [v.lower() for v in vals]  # Python's repr: the HF grammar takes lower-case exponents only
    runs = _spy_runs(monkeypatch)
    # each shape repeated 600 lines: runs of one template (cycles of two for Lightning's counter)
    text = "".join(_LINES[fmt](i, vals[i // 600], f"{rng.random():.3f}") for i in range(1, 12_000))
    _check(text, region=1 << 23)
    assert sum(r.n for r in runs) == 11_999


def test_a_constant_value_is_pinned_and_a_changing_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """A learning rate constant for long stretches is checked with the template and parsed once;
    one that changes on every line is parsed per line; both give the reference's facts."""
    runs = _spy_runs(monkeypatch)
    lines = [f"{{'loss': {2 + (i % 97) / 100:.4f}, 'grad_norm': 0.5, 'learning_rate': {1 + i // 5000}e-05, "
             f"'epoch': 0.50}}\n" for i in range(20_000)]
    got = _check("".join(lines), region=1 << 23, window=1 << 16, first=1024)
    assert got.meta["series"]["numerics.learning_rate"]["count"] == 20_000
    assert len(runs) <= 8  # the loss is not pinned after its first change; the lr changes 3 times
    runs.clear()
    lines = [f"{{'loss': 2.5000, 'grad_norm': 0.5, 'learning_rate': {1 + i % 9}e-05, 'epoch': 0.50}}\n"
             for i in range(20_000)]
    _check("".join(lines), region=1 << 23, window=1 << 16, first=1024)
    assert len(runs) <= 4


def test_a_cycle_of_templates_is_read_as_one_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """A progress bar whose counter changes width (1, 2, 3 digits, again and again)."""
    runs = _spy_runs(monkeypatch)
    rng = random.Random(4)
    text = "".join(_LINES["lightning"](i, f"{rng.random():.4f}", f"{rng.random():.3f}") for i in range(1, 20_000))
    _check(text, region=1 << 23)
    assert sum(r.n for r in runs) == 19_999 and sum(r.n for r in runs if r.cycle is not None) > 15_000
    # a step-bearing format whose step changes width, cycling: steps read from the line ends
    runs.clear()
    text = "".join(f"steps: {i % 1000} loss: {rng.random():.4f} iter time (s): 0.512\n" for i in range(1, 20_000))
    _check(text, region=1 << 23, window=1 << 14)
    assert any(r.cycle is not None for r in runs)


def test_odd_lines_inside_a_region_are_fed_in_order() -> None:
    """NaN/inf/overflow values, negative lr, Megatron skips, other trigger lines and unknown metric
    lines between bulk lines: each at its place, through regions of several sizes."""
    text = _odd_lines_log(counters=True)
    for region in (4096, 1 << 16, 1 << 23):
        _check(text, region=region, window=1 << 12, first=256)


def test_lines_of_many_shapes_go_to_the_other_engines_from_where_they_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Metric lines, then lines of many shapes (more than MAX_STEPS), then metric lines again, in
    one region: the first run in bulk, the rest of the region by the other engines."""
    runs = _spy_runs(monkeypatch)
    metric = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 3000))
    junk = "".join(f"[INFO] worker {i} {'x' * (i % 50)} ready; loss of {i} packets\n" for i in range(300))
    text = metric + junk + metric.replace("step 1 ", "step 0 ")
    _check(text, region=1 << 23)
    assert runs and sum(r.n for r in runs) >= 2999 - 20  # the first metric lines in bulk
    runs.clear()
    _check(text, region=1 << 16)  # later regions: in bulk again
    assert sum(r.n for r in runs) > 4000


def test_regions_the_engine_refuses_still_give_the_same_facts() -> None:
    r"""\r\n line ends, NUL bytes, invalid UTF-8 and a line of many MB: other engines read them."""
    base = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 2000))
    for text in (base.replace("\n", "\r\n"), base + "junk \x00 here\n" + base, base):
        _check(text, region=1 << 14)
    raw = base.encode() + b"\xff\xfe broken loss 1\n" + base.encode()
    ref = training_log.parse(raw.decode("utf-8", "replace").splitlines(True), "g")
    with _small(region=1 << 14):
        got = _read(raw)
    assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])
    # a line over MAX_LINE (binary junk without newlines): cut like the Python path cuts it
    raw = base.encode() + b"x" * (3 << 20) + b" loss 7\n" + base.encode()
    with _small(region=1 << 16):
        got = _read(raw)
    fd, name = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as fh:
        fh.write(raw)
    try:
        ref = training_log.parse_path(name, "g", engine="python")
    finally:
        os.unlink(name)
    assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])


def test_a_file_read_from_an_offset_and_a_file_that_shrinks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 4000)).encode()
    log = tmp_path / "x.log"
    log.write_bytes(b"step 1 loss nan\n" + text)
    ref = training_log.parse(text.decode().splitlines(True), "g")
    with open(log, "rb") as fh:
        fh.readline()  # the NaN line is not part of the input
        got = training_log.parse_stream(fh, "g", engine="arrow")
        assert fh.tell() == len(text) + 16
    assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])
    # the file shrinks under the scan (fstat says so): the stream reads what is left
    real = os.fstat
    calls = [0]

    class _Small:
        def __init__(self, st: os.stat_result) -> None:
            self.st_size, self.st_mode = 1000, st.st_mode

    def fake(fd: int) -> Any:
        calls[0] += 1
        return real(fd) if calls[0] < 4 else _Small(real(fd))

    monkeypatch.setattr(fixed.os, "fstat", fake)
    with _small(region=1 << 14):
        got = training_log.parse_path(str(log), "g", engine="arrow")
    ref = training_log.parse((b"step 1 loss nan\n" + text).decode().splitlines(True), "g")
    assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])


def test_a_gzip_log_is_read_decompressed(tmp_path: Path) -> None:
    """A gzip file has a file number (its compressed file's): it is not memory-mapped."""
    import gzip

    text = "".join(_LINES["generic"](i, f"{i % 7}.25", "0.5") for i in range(1, 4000))
    gz = tmp_path / "x.log.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(text.encode())
    ref = training_log.parse(text.splitlines(True), "g")
    for engine in ("arrow", None):
        got = training_log.parse_path(str(gz), "g", engine=engine)
        assert same(ref.facts, got.facts) and same(ref.meta["series"], got.meta["series"])
    with gzip.open(gz, "rb") as zh:
        assert fixed.mappable(zh) is None


@pytest.mark.parametrize("line", [
    b"[2026-12-01 03:01:01] rank1 step 1234 loss 2.5000 lr 3.0e-4 \xe2\x96\x88 grad_norm 0.621\n",
    b"[2026-12-01 03:01:01] rank1 step 1234 loss 2.5000 lr 3.0e-4 grad_norm 0.621\n",  # ASCII: the short check
])
def test_the_word_check_finds_the_first_bad_byte(line: bytes) -> None:
    """The 64-bit word check against a byte-by-byte definition, on single-byte changes of every
    value at every place (high bytes and word ends included) and on runs of lines."""
    rng = random.Random(7)
    tpl = line.translate(columns.DIGITS)
    exact = bytes(0x76 if ch == 0x30 else 0x7F for ch in tpl)
    pat = fixed._Pattern(tpl, exact[:20] + b"\x7f" + exact[21:])  # a digit place that must be exact (pinned)

    def first_bad(data: bytes) -> int:
        for j, x in enumerate(data):
            t, e = pat.tpl[j % pat.size], pat.exact[j % pat.size]
            if not (x == t or (e == 0x76 and 0x30 <= x <= 0x39)):
                return j
        return -1

    good = bytearray()
    for _ in range(40):
        good += bytes(rng.choice(b"0123456789") if e == 0x76 else t for t, e in zip(pat.tpl, pat.exact))
    for trial in range(3000):
        data = bytearray(good)
        for _ in range(rng.choice([1, 1, 2])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        start = rng.randrange(0, 3) * pat.size
        raw = bytes(data)
        region = fixed._Region(raw, pa.py_buffer(raw), 0, len(raw))
        region.pa, region.pc, region.pool, region.high = fixed.arrow()
        n = len(raw) - start - rng.randrange(0, 9)
        assert region._first_bad(pat, start, n) == first_bad(raw[start : start + n]), trial


def test_pyarrow_parses_decimals_like_float() -> None:
    """The bulk path takes only plain decimals; pyarrow must round each one as float() does."""
    rng = random.Random(11)
    texts = _values(rng, 20_000) + [
        "0.1", "2.5E+00", "3.", ".5", "+1.5", "-0.0", "1e308", "1e-320", "4.9406564584124654e-324",
        "9007199254740993", "0.30000000000000004", "123456789012345678901234567890", "1.7976931348623157e308",
        "2.2250738585072011e-308", "0." + "9" * 40, "1" + "0" * 30 + ".5", "00012.50", "1E+05",
    ]
    got = fixed._parse(pa.array(texts, pa.string()))
    vals = got[0].to_pylist()
    assert all(a == float(t) and str(a) == str(float(t)) for a, t in zip(vals, texts))
    assert (got[1], got[2]) == (min(vals), max(vals))


def test_extremes_equal_min_and_max() -> None:
    rng = random.Random(12)
    for trial in range(300):
        vals = [rng.random() * 10 ** rng.randint(-310, 300) * rng.choice([1, 1, -1]) for _ in range(rng.randint(1, 50))]
        if trial % 7 == 0:
            vals += [0.0, -0.0, 5e-324]
        lo, hi = fixed.extremes(pa.array(vals, pa.float64()))
        assert lo == min(vals) and hi == max(vals), vals


def test_extend_arrow_equals_add() -> None:
    rng = random.Random(3)
    values, one = _series_values(rng)
    col = Series()
    i = 0
    while i < len(values):
        k = rng.randint(1, 9000)
        part = values[i : i + k]
        arr = pa.array(part, pa.float64())
        if k > 10 and rng.random() < 0.5:
            arr = pa.chunked_array([arr.slice(0, k // 3), arr.slice(k // 3)])
        col.extend_arrow(arr, step=7, extremes=(min(part), max(part)) if rng.random() < 0.5 else None)
        i += k
    assert one.summary() == col.summary() and one.samples() == col.samples()
    assert len(col.samples()) <= MAX_SAMPLES




def test_the_engine_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "big.log"
    _big_generic_log(log, 100_000, 99_500)
    monkeypatch.setenv(fixed.ENV, "polars")
    fixed._available = None
    try:
        assert training_log.parse_path(str(log)).meta["engine"] in ("polars", "python")
    finally:
        fixed._available = None
