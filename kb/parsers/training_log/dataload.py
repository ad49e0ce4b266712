"""How long each step waited for its batch, where a trainer prints it beside the step's time.

The share of the step spent waiting (``dataloader.data_wait_fraction``) tells a loop starved of
input from one slow on the GPU. These records all carry the loss too, so they reach this reader
through the numerics family's trigger:

* pytorch/examples ``imagenet/main.py`` (and the many scripts built on it):
  ``Epoch: [0][10/5005]  Time 22.424 (7.498)  Data 22.372 (7.070)  Loss 6.9065 ...``
  (``Speed`` may sit between the two); the values before the brackets are this batch's;
* mmcv's ``TextLoggerHook`` / mmengine: ``..., time: 31.499, data_time: 11.109, memory: ...``;
  detectron2's ``CommonMetricPrinter``: ``time: 0.5123  data_time: 0.0123``;
* timm ``train.py``: ``Time: 0.512s,  250.09/s  (0.520s, ...)  LR: ...  Data: 0.010 (0.012)``;
* CenterNet ``base_trainer.py``: ``|Data 3.556s(0.517s) |Net 1.014s`` (running averages).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.parsers.training_log.scanner import LogScanner

_N = r"(\d+(?:\.\d+)?)"
#: (pattern, group of the step's time, group of the wait), in seconds
_RECORDS: tuple[tuple[re.Pattern[str], int, int], ...] = (
    (re.compile(r"\bTime:?\s+" + _N + r"s?\s*\(\s*[\d.]+s?\s*\).{0,80}?\bData:?\s+" + _N + r"s?\s*\("), 1, 2),
    (re.compile(r"\bTime:\s*" + _N + r"s,.{0,120}?\bData:\s*" + _N + r"\s*\("), 1, 2),
    (re.compile(r"(?<![\w])time:\s*" + _N + r",?\s+data_time:\s*" + _N), 1, 2),
    (re.compile(r"\|Data\s+[\d.]+s\(" + _N + r"s\)\s*\|Net\s+" + _N + r"s"), 2, 1),
)


def data_time(sc: LogScanner, line: str) -> None:
    """A record with the step's time and its wait for data: both are summed."""
    if "ata" not in line:
        return
    for rx, step_g, wait_g in _RECORDS:
        m = rx.search(line)
        if m:
            step, wait = float(m.group(step_g)), float(m.group(wait_g))
            if step > 0:
                sc.data_waits.add(min(wait, step), step)
            return


class Waits:
    """Running sums (bounded memory over any log): the first record apart, as it includes the
    workers starting and the first batch read cold."""

    __slots__ = ("first", "wait", "step", "n")

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None
        self.wait = self.step = 0.0
        self.n = 0

    def add(self, wait: float, step: float) -> None:
        if self.first is None:
            self.first = (wait, step)
            return
        self.wait += wait
        self.step += step
        self.n += 1

    def fraction(self) -> float | None:
        """The share of the steps' time spent waiting for data (the first record left out when
        two or more follow it), or None when no record was read."""
        if self.first is None:
            return None
        wait, step = (self.wait, self.step) if self.n >= 2 else (
            self.wait + self.first[0], self.step + self.first[1])
        return round(wait / step, 3) if step > 0 else None
