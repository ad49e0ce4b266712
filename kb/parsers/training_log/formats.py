"""Metric lines of the common trainers, taken a block at a time (the block reader's hot path).

One regular expression per trainer format matches a WHOLE line (it starts at the newline before
the line and ends before the newline after it) and captures the values; one ``findall`` per
block gives every such line's values, converted with ``map(float, ...)`` and folded into the
series with C-speed ``sum``/``min``/``max``. Nothing runs per line in Python.

Each grammar only accepts lines on which the line-by-line reader (:mod:`.numerics`) does exactly
what :meth:`Format.apply` does, and ``apply`` refuses (returns False) whatever it does not
handle: a value that is not a finite number (NaN, inf, overflow to inf), a negative learning
rate or loss scale, a Megatron line with skipped or NaN iterations or without ``lm loss``. The
caller then reads those lines one at a time, so both readers give the same facts (the
differential tests hold them equal).

* ``hf``: HF Trainer ``{'loss': 2.5, 'grad_norm': 0.6, 'learning_rate': 2e-05, 'epoch': 0.5}``
* ``generic``: ``[2026-12-01 03:01:01] rank1 step 1 loss 2.5 lr 3e-4 grad_norm 0.6 tokens/s 9617
  mem 61.2GiB`` (``key value``, ``key=value`` or ``key: value``; `` | `` or ``,`` between fields)
* ``deepspeed``: DeepSpeed's pipeline engine ``steps: 10 loss: 2.5 iter time (s): 0.5 samples/sec: 64.0``
* ``lightning``: a Lightning progress bar line ending ``..., v_num=0, loss=2.5, grad_norm=0.6]``
* ``megatron``: Megatron-LM ``iteration 5/ 100 | consumed samples: ... | lm loss: 2.5E+00 | ...``
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb.parsers.training_log.scanner import LogScanner

Row = tuple[bytes, ...]
#: a value token: float() accepts exactly the tokens of this class that the line reader's
#: number pattern reads in full (no "_", no spaces; anything else makes float() fail)
_V = rb"([-+.0-9a-zA-Z]++)"
_V_HF = rb"([-+.0-9a-z]++)"  # Python's repr: lower-case only, as the HF line reader expects
_KV = rb"[:= ] ?"  # between a key and its value (never empty)
_SEP = rb"[ ,|]++"  # between fields (never empty)
_TS = rb"(?:\[[-0-9 :.,T]++\] )?(?:\[?[Rr]ank ?\d++\]?:? )?"  # timestamp and rank prefixes
# possessive quantifiers (++): a value never backtracks into a shorter one, and it is faster


def _floats(col: Sequence[bytes]) -> list[float] | None:
    """The values as floats; None when one is not a number or they are not all finite."""
    try:
        uniq = set(col)
        if len(uniq) * 4 < len(col):  # a constant learning rate or loss scale: parse each text once
            table = {u: float(u) for u in uniq}
            vals = list(map(table.__getitem__, col))
        else:
            vals = list(map(float, col))
    except ValueError:
        return None
    return vals if math.isfinite(sum(vals)) else None


def _present(col: Sequence[bytes]) -> list[float] | None:
    """An optional column: the values of the rows that have one ([] when none has)."""
    if b"" in col:
        col = [x for x in col if x]
    return _floats(col)


class Format:
    """One trainer's metric line: its grammar and its bulk effect on a scanner."""

    def __init__(self, name: str, key: bytes, line: bytes, apply: Callable[[LogScanner, list[Row]], bool],
                 oss: Callable[[list[Row]], int]) -> None:
        self.name = name
        self.key = key  # a literal every such line holds (a cheap test before the regex)
        self.line = re.compile(line)
        self.apply = apply
        self.oss = oss  # how many "oss" the matched lines hold in their keys


def _one_each(rows: list[Row]) -> int:
    return len(rows)


def _hf(sc: LogScanner, rows: list[Row]) -> bool:
    loss_c, grad_c, lr_c = zip(*rows)
    loss, grad, lr = _floats(loss_c), _present(grad_c), _present(lr_c)
    if loss is None or grad is None or lr is None or (lr and min(lr) < 0):
        return False
    s = sc.series
    s["numerics.loss"].extend(loss, step=sc.step)
    s["numerics.grad_norm"].extend(grad, step=sc.step)
    s["numerics.learning_rate"].extend(lr, step=sc.step)
    sc.metric_records += len(rows)
    sc.run = 0
    return True


def _stepped(sc: LogScanner, rows: list[Row]) -> bool:
    """generic and deepspeed rows: (step, loss, lr or b"", grad or b"")."""
    step_c, loss_c, lr_c, grad_c = zip(*rows)
    loss, lr, grad = _floats(loss_c), _present(lr_c), _present(grad_c)
    if loss is None or grad is None or lr is None or (lr and min(lr) < 0):
        return False
    s = sc.series
    s["numerics.loss"].extend(loss, steps=step_c)
    if grad:
        gsteps = step_c if len(grad) == len(rows) else [st for st, g in zip(step_c, grad_c) if g]
        s["numerics.grad_norm"].extend(grad, steps=gsteps)
    if lr:
        lsteps = step_c if len(lr) == len(rows) else [st for st, v in zip(step_c, lr_c) if v]
        s["numerics.learning_rate"].extend(lr, steps=lsteps)
    sc.step = int(step_c[-1])
    sc.metric_records += len(rows)
    sc.run = 0
    return True


def _lightning(sc: LogScanner, rows: list[Row]) -> bool:
    loss_c, grad_c = zip(*rows)
    loss, grad = _floats(loss_c), _present(grad_c)
    if loss is None or grad is None:
        return False
    sc.series["numerics.loss"].extend(loss, step=sc.step)
    sc.series["numerics.grad_norm"].extend(grad, step=sc.step)
    sc.metric_records += len(rows)
    sc.run = 0
    return True


def _megatron(sc: LogScanner, rows: list[Row]) -> bool:
    step_c, ms_c, lr_c, loss_c, scale_c, grad_c, skip_c, nan_c = zip(*rows)
    n = len(rows)
    if skip_c.count(b"0") != n or nan_c.count(b"0") != n or b"" in loss_c:
        return False
    ms, lr, loss, scale, grad = _floats(ms_c), _floats(lr_c), _floats(loss_c), _floats(scale_c), _present(grad_c)
    if ms is None or lr is None or loss is None or scale is None or grad is None:
        return False
    if min(ms) < 0 or min(lr) < 0 or min(scale) < 0:
        return False
    s = sc.series
    s["numerics.loss"].extend(loss, steps=step_c)
    if grad:
        gsteps = step_c if len(grad) == n else [st for st, g in zip(step_c, grad_c) if g]
        s["numerics.grad_norm"].extend(grad, steps=gsteps)
    s["numerics.loss_scale"].extend(scale, steps=step_c)
    s["numerics.learning_rate"].extend(lr, steps=step_c)
    s["training.step_time_ms"].extend(ms, steps=step_c)
    sc.timed_steps(int(step_c[0]), int(step_c[-1]))
    sc.step = int(step_c[-1])
    sc.metric_records += n
    sc.run = 0
    return True


def _megatron_oss(rows: list[Row]) -> int:
    return 2 * len(rows)  # "lm loss" and "loss scale" (apply refuses rows without lm loss)


FORMATS: tuple[Format, ...] = (
    Format(
        "hf", b"{'loss': ",
        rb"\n\{'loss': " + _V_HF + rb"(?:, 'grad_norm': " + _V_HF + rb")?(?:, 'learning_rate': " + _V_HF
        + rb")?(?:, 'epoch': [-+.0-9a-z]++)?\}(?=\n)",
        _hf, _one_each,
    ),
    Format(
        "generic", b"step",
        rb"\n" + _TS + rb"step" + _KV + rb"(\d++)" + _SEP + rb"loss" + _KV + _V
        + rb"(?:" + _SEP + rb"lr" + _KV + _V + rb")?(?:" + _SEP + rb"grad_norm" + _KV + _V + rb")?"
        + rb"(?:" + _SEP + rb"tokens/s" + _KV + rb"[\d.]++)?(?:" + _SEP + rb"mem" + _KV + rb"[\d.]++ ?[KMGT]i?B)?(?=\n)",
        _stepped, _one_each,
    ),
    Format(
        "deepspeed", b"steps: ",
        rb"\n" + _TS + rb"steps: (\d++) loss: " + _V + rb"()()(?: iter time \(s\): [\d.]++)?(?: samples/sec: [\d.]++)?(?=\n)",
        _stepped, _one_each,
    ),
    Format(
        "lightning", b"Epoch ",
        rb"\nEpoch \d++: ++\d++%\|(?: |#|\xe2\x96[\x88-\x8f])*+\| \d++/\d++ \[[0-9:<>?]++, ++[0-9.?]++(?:it/s|s/it)"
        rb"(?:, v_num=\d++)?, loss=" + _V + rb"(?:, grad_norm=" + _V + rb")?\](?=\n)",
        _lightning, _one_each,
    ),
    Format(
        "megatron", b" iteration ",
        rb"\n iteration ++(\d++)/ *+\d++ \| consumed samples: ++\d++ \| elapsed time per iteration \(ms\): " + _V
        + rb" \|(?: throughput per GPU \(TFLOP/s/GPU\): [-+.0-9a-zA-Z]++ \|)? learning rate: " + _V
        + rb" \| global batch size: ++\d++ \|(?: lm loss: " + _V + rb" \|)? loss scale: " + _V
        + rb" \|(?: grad norm: " + _V + rb" \|)?(?: num zeros: [-+.0-9a-zA-Z]++ \|)?(?: params norm: [-+.0-9a-zA-Z]++ \|)?"
        rb" number of skipped iterations: ++(\d++) \| number of nan iterations: ++(\d++) \|(?=\n)",
        _megatron, _megatron_oss,
    ),
)


def detect(buf: Any, start: int, end: int) -> Format | None:
    """The format whose grammar matches the line buf[start:end] (``buf[start - 1]`` is a newline)."""
    for fmt in FORMATS:
        if buf.find(fmt.key, start, end) >= 0 and fmt.line.match(buf, start - 1, end + 1):
            return fmt
    return None
