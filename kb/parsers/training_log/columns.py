"""The columnar engine's analysis of one region: templates, classes, value columns (polars).

Pure functions (nothing of a scan changes here, so regions can be analysed on other threads):
:func:`analyse` turns the bytes of whole lines into a :class:`Region` (see :mod:`.columnar` for
the method and why it gives the reference reader's facts).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from kb.parsers.training_log import formats
from kb.parsers.training_log.triggers import ALL_LITERALS, NUMERIC

MAX_TEMPLATES = 512  # more distinct templates in a region: the Python path reads it
MAX_RUNS = 256  # more runs of bulk lines (between fed lines): the Python path reads it

DIGITS = bytes.maketrans(b"123456789", b"000000000")
_DECIMAL = re.compile(rb"[-+]?(?:0+\.?0*|\.0+)(?:[eE][-+]?0+)?")
_OTHER = tuple(x for x in ALL_LITERALS if x != NUMERIC)
IGNORE, FEED = -1, -2  # line classes besides a format's index

#: per format: the role of each capture group ("" = unused); float roles are checked finite
ROLES: dict[str, tuple[str, ...]] = {
    "hf": ("loss", "grad", "lr"),
    "generic": ("step", "loss", "lr", "grad"),
    "deepspeed": ("step", "loss", "", ""),
    "lightning": ("loss", "grad"),
    "megatron": ("step", "ms", "lr", "loss", "scale", "grad", "skip", "nan"),
}
_INTS = ("step", "skip", "nan")
_NONNEG = {"hf": ("lr",), "generic": ("lr",), "megatron": ("ms", "lr", "scale")}
_REQUIRED = {"hf": ("loss",), "generic": ("step", "loss"), "deepspeed": ("step", "loss"), "lightning": ("loss",),
             "megatron": ("step", "ms", "lr", "loss", "scale", "skip", "nan")}
_ROLE_NAMES = ("step", "loss", "grad", "lr", "ms", "scale", "skip", "nan")


def _read(pl: Any, data: bytes) -> Any:
    return pl.read_csv(data, separator="\x00", has_header=False, quote_char=None, new_columns=["l"],
                       infer_schema=False, comment_prefix=None)["l"]


_LITS = tuple(x.encode() for x in ALL_LITERALS)
_OTHER_B = tuple(x.encode() for x in _OTHER)
_NUMERIC_B = NUMERIC.encode()


@functools.lru_cache(maxsize=4096)  # templates repeat from region to region
def plan_bytes(raw: bytes) -> tuple[int, dict[str, tuple[int, int]]] | int:
    """A template's class (``raw``: its bytes, no newline): IGNORE, FEED, or (format index,
    {role: (byte offset, byte length)}). Invalid UTF-8 is fed (or ignored without a trigger)."""
    if not any(lit in raw for lit in _LITS):
        return IGNORE
    if any(lit in raw for lit in _OTHER_B) or _NUMERIC_B not in raw:
        return FEED
    try:
        raw.decode()
    except UnicodeDecodeError:
        return FEED
    text = b"\n" + raw + b"\n"
    for k, fmt in enumerate(formats.FORMATS):
        m = fmt.line.match(text)
        if m is None or m.end() != len(raw) + 1:
            continue
        spans: dict[str, tuple[int, int]] = {}
        for g, role in enumerate(ROLES[fmt.name], start=1):
            s, e = m.span(g)
            if not role or s < 0 or s == e:
                continue
            if role not in _INTS and not _DECIMAL.fullmatch(text, s, e):
                return FEED  # nan, inf, 0x0, ...: the line reader decides
            spans[role] = (s - 1, e - s)
        if any(r not in spans for r in _REQUIRED[fmt.name]):
            return FEED
        return k, spans
    return FEED


@functools.lru_cache(maxsize=4096)
def _plan(tpl: str) -> tuple[int, dict[str, tuple[int, int]]] | int:
    """:func:`plan_bytes` for a template given as text, with spans in characters (polars slices by
    characters)."""
    raw = tpl.encode()
    plan = plan_bytes(raw)
    if isinstance(plan, int):
        return plan
    k, spans = plan
    return k, {r: (len(raw[:o].decode()), len(raw[o : o + n].decode())) for r, (o, n) in spans.items()}


class Region:
    """What the engine found in a region (pure: nothing of the scanner changed yet)."""

    __slots__ = ("runs", "cols", "cls", "steps", "starts", "widths")

    def __init__(self, runs: list[tuple[int, int, int]], cols: dict[str, Any], cls: Any, steps: Any,
                 starts: Any, widths: Any) -> None:
        self.runs = runs  # (first row, last row, class): a bulk run of one format, or one fed line
        self.cols = cols  # role -> Float64 column (null where a line has no such value)
        self.cls = cls  # per line: format index, FEED or IGNORE
        self.steps = steps  # (first, last) -> Int64 steps of those lines (computed on demand)
        self.starts = starts  # byte offset of each line in the region
        self.widths = widths  # bytes of each line with its newline


def analyse(seg: bytes) -> Region | None:
    """Classify and cut the lines of ``seg`` (whole lines); None when the Python path must read it."""
    import polars as pl

    if b"\r" in seg or b"\x00" in seg:
        return None
    tr = seg.translate(DIGITS)
    one = tr.find(b"\n") + 1
    # one template for every line (a regular log): the region is that line repeated, no template column
    single = 0 < one and seg.endswith(b"\n") and len(seg) % one == 0 and tr == tr[:one] * (len(seg) // one)
    try:
        lines = _read(pl, seg)
        if single:
            uniq = [tr[: one - 1].decode()]
        else:
            tpls = _read(pl, tr).fill_null("")
            uniq = tpls.unique(maintain_order=True).to_list()
    except (pl.exceptions.PolarsError, UnicodeDecodeError):  # invalid UTF-8 and the like
        return None
    del tr
    n = lines.len()
    widths = lines.str.len_bytes().fill_null(0) + 1
    if (not single and n != tpls.len()) or widths.sum() != len(seg) + (not seg.endswith(b"\n")):
        return None  # the rows are not exactly the region's lines
    if len(uniq) > MAX_TEMPLATES:
        return None
    plans = [_plan(t) for t in uniq]
    if all(p == IGNORE for p in plans):
        return Region([], {}, None, None, None, None)
    if len(uniq) == 1:
        tid = pl.zeros(n, dtype=pl.UInt32, eager=True)
    elif len(uniq) <= 8:  # a few comparisons with a constant are cheaper than a hash join
        expr: Any = pl.lit(len(uniq) - 1, dtype=pl.UInt32)
        for k in range(len(uniq) - 2, -1, -1):
            expr = pl.when(pl.col("t") == uniq[k]).then(pl.lit(k, dtype=pl.UInt32)).otherwise(expr)
        tid = pl.DataFrame({"t": tpls}).select(expr.alias("i"))["i"]
    else:
        tid = tpls.replace_strict(uniq, list(range(len(uniq))), return_dtype=pl.UInt32)
    kinds = [p if isinstance(p, int) else p[0] for p in plans]
    cls = pl.repeat(kinds[0], n, dtype=pl.Int32, eager=True) if len(uniq) == 1 else pl.Series(kinds, dtype=pl.Int32).gather(tid)
    bulk = [p for p in plans if not isinstance(p, int)]
    frame: dict[str, Any] = {"l": lines, "c": cls}
    exprs: dict[str, Any] = {}
    for role in _ROLE_NAMES:
        spans = [p[1].get(role) if not isinstance(p, int) else None for p in plans]
        got = {x for x in spans if x is not None}
        if not got:
            continue
        if len(got) == 1:  # one place in every bulk template that has it: constant offsets (faster)
            off, width = got.pop()
            text = pl.col("l").str.slice(off, width)
            if len(bulk) < len(plans) or not all(role in p[1] for p in bulk):  # else every line has it
                frame["h_" + role] = pl.Series([x is not None for x in spans], dtype=pl.Boolean).gather(tid)
                text = pl.when(pl.col("h_" + role)).then(text)
        else:
            frame["o_" + role] = pl.Series([x and x[0] for x in spans], dtype=pl.Int64).gather(tid)
            frame["n_" + role] = pl.Series([x and x[1] for x in spans], dtype=pl.Int64).gather(tid)
            text = pl.col("l").str.slice(pl.col("o_" + role), pl.col("n_" + role))
        if role in ("skip", "nan"):
            exprs[role] = text == "0"
        elif role == "step":
            exprs[role] = text.cast(pl.Int64, strict=False)
        else:
            exprs[role] = text.cast(pl.Float64, strict=False)
    df = pl.DataFrame(frame)
    # steps of up to 18 digits always fit an Int64: cast only those a run needs (its last line,
    # and a window after a first non-finite value), not every line's
    lazy_steps = "step" in exprs and all(x[1] <= 18 for x in ({p[1]["step"] for p in bulk if "step" in p[1]}))
    step_expr = exprs.pop("step") if lazy_steps else None
    vals = df.select(**exprs) if exprs else pl.DataFrame()
    if len(uniq) == 1 and kinds[0] >= 0 and _all_pass(vals, formats.FORMATS[kinds[0]].name):
        checks = []  # one bulk template, and its columns pass as wholes: no per-line checks
    else:
        checks = _line_checks(vals)
    if checks:
        cls = vals.with_columns(c=cls).select(
            pl.when(pl.any_horizontal(checks)).then(pl.lit(FEED, dtype=pl.Int32)).otherwise(pl.col("c")).alias("c")
        )["c"]
    # runs of consecutive active (not ignored) lines of one class, in log order
    active = cls != IGNORE
    a_idx = pl.Series(range(n), dtype=pl.Int64).filter(active)
    a_cls = cls.filter(active)
    feed = a_cls == FEED
    start = (a_cls != a_cls.shift(1)).fill_null(True) | feed
    if int(start.sum()) - int(feed.sum()) > MAX_RUNS:
        return None
    runs = list(zip(a_idx.filter(start).to_list(), a_idx.filter(start.shift(-1).fill_null(True)).to_list(),
                    a_cls.filter(start).to_list()))
    cols = {r: vals[r] for r in ("step", "loss", "grad", "lr", "ms", "scale") if r in vals.columns}
    if step_expr is not None:
        def steps(first: int, last: int) -> Any:
            return df.slice(first, last - first + 1).select(s=step_expr)["s"]
    elif "step" in cols:
        def steps(first: int, last: int) -> Any:
            return cols["step"].slice(first, last - first + 1)
    else:
        steps = None
    return Region(runs, cols, cls, steps, widths.cum_sum() - widths, widths)


def _line_checks(vals: Any) -> list[Any]:
    """Per line and format: the line is of that format and fails what ``Format.apply`` requires."""
    import polars as pl

    checks = []
    for k, fmt in enumerate(formats.FORMATS):
        roles = [r for r in ROLES[fmt.name] if r and r in vals.columns]
        ok: Any = pl.lit(True)
        for r in roles:
            c = pl.col(r)
            if r == "step":
                ok = ok & c.is_not_null()
            elif r in ("skip", "nan"):
                ok = ok & c.fill_null(False)
            else:
                ok = ok & (c.is_null() | c.is_finite())
                if r in _NONNEG.get(fmt.name, ()):
                    ok = ok & (c.is_null() | (c >= 0))
        if roles:
            checks.append((pl.col("c") == k) & ~ok)
    return checks


def _all_pass(vals: Any, name: str) -> bool:
    """Every line is of format ``name`` and passes its checks (a few aggregates, no per-line mask)."""
    for r in ROLES[name]:
        if not r or r not in vals.columns:
            continue
        col = vals[r]
        if col.null_count():
            return False
        if r in ("skip", "nan"):
            if not col.all():
                return False
        elif r != "step":
            lo, hi = col.min(), col.max()  # a decimal never casts to NaN; +-inf shows here
            if not (-math.inf < lo and hi < math.inf) or (r in _NONNEG.get(name, ()) and lo < 0):
                return False
    return True


