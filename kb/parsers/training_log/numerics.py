"""Metric and loss-scaler lines read one at a time (the reference reader's definition).

HF Trainer dicts (``{'loss': 2.5, 'grad_norm': 0.6, 'learning_rate': 2e-05}``), Megatron
iteration lines (``iteration 5/ 100 | ... | lm loss: 2.5E+00 | ...``), plain prints (``step 5 loss
2.5 grad_norm 0.6``, ``loss=2.5``), DeepSpeed (``steps: 5 loss: 2.5``) and the loss-scaler
overflow messages of apex, DeepSpeed and fairseq. The block reader takes the common shapes of
these lines in bulk (:mod:`.formats`) and must give the same facts as this module.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from kb.parsers.base import set_fact
from kb.parsers.training_log import dataload

if TYPE_CHECKING:
    from kb.parsers.training_log.scanner import LogScanner

_NUM = r"([-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?))"
_HF = re.compile(r"'(loss|grad_norm)': (?:tensor\()?" + _NUM.replace("nan|inf(?:inity)?", "nan|NaN|inf|Infinity"))
_HF_LR = re.compile(r"'(?:learning_rate|lr)': " + _NUM)
#: transformers Trainer.evaluate()'s metrics dict as logged ("{'eval_loss': nan, ...}")
_HF_EVAL_LOSS = re.compile(r"'eval_loss': (?:tensor\()?" + _NUM.replace("nan|inf(?:inity)?", "nan|NaN|inf|Infinity"))
_HF_STEP = re.compile(r"'(?:step|global_step)': (\d+)")
_PLAIN_LOSS = re.compile(r"(?<![\w.'\"])loss(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
#: the learning rate printed on a loss line ("lr: 1.000e-02, eta: ..., loss: 0.53" (MMEngine),
#: "=> STEP 748 lr: 0.000598 ... total_loss: 8.31", "step 5 loss 2.5 lr 3e-4"); read only there, so
#: a launch command's "--lr 3e-4" is no sample of the schedule
_PLAIN_LR = re.compile(r"(?<![\w.'\"-])lr(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
_PLAIN_GRAD = re.compile(r"(?<![\w.'\"])(?:grad[_ ]?norm|gnorm)(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
#: a step's time on a loss line, in ms: nanoGPT's "iter 100: loss 4.2345, time 123.45ms, mfu
#: 12.34%" (train.py), nanochat's "step 00018/13920 (0.13%) | loss: 6.906673 | ... | dt: 682.98ms
#: | tok/sec: ..." (scripts/base_train.py), llm.c's "step 1/74 | train loss 11.0 | norm 1.2 | lr
#: 1.00e-04 | 123.45 ms | ..." (train_gpt2.cu), "step_time_ms=305.1" prints
_PLAIN_MS = re.compile(r"(?<![\w.])(?:dt|time|step[_ ]time(?:[_ ]ms)?|iter[_ ]time(?:[_ ]ms)?)\s*[:=]?\s*"
                       r"(\d+(?:\.\d+)?)\s*ms\b|\|\s*(\d+(?:\.\d+)?)\s*ms\s*\|", re.I)
#: the log's own step field; ``steps: N`` is DeepSpeed's pipeline engine
_STEP = re.compile(r"(?<![\w])(?:steps?|iteration|iter|global_step)[\s:=]+(\d+)", re.I)
_MEGATRON_ITER = re.compile(r"iteration\s+(\d+)\s*/")
_APEX = re.compile(r"Gradient overflow\.\s+Skipping step, loss scaler \d+ reducing loss scale to ([0-9.e+-]+)")
#: a loss scaler that skipped a step: DeepSpeed's "[deepspeed] OVERFLOW! Rank 0 Skipping step.
#: Attempted loss scale: X, reducing to Y" (runtime/fp16/loss_scaler.py) and "fp16 dynamic loss
#: scale overflow! Skipping step. ..." (fused_optimizer.py, unfused_optimizer.py); apex's
#: FP16_Optimizer "OVERFLOW! Skipping step. Attempted loss scale: X, reducing to Y"
#: (apex/fp16_utils/fp16_optimizer.py) and its Megatron-era copies without the new scale
#: (NVIDIA/tacotron2 fp16_optimizer.py: "... Attempted loss scale: X")
_DS = re.compile(
    r"(?:OVERFLOW! (?:Rank \d+ )?|fp16 dynamic loss scale overflow! )Skipping step\. Attempted loss scale: "
    r"([0-9.e+]+)(?:, (?:reducing to ([0-9.e+]+)|but hysteresis))?"
)
#: a training loop that stops on a non-finite loss: DETR, DeiT, MAE and torchvision's detection
#: reference engines print "Loss is nan, stopping training" (``if not math.isfinite(loss_value)``)
_STOPPING = re.compile(r"\bLoss is ([-+]?(?:nan|inf)), stopping training")
#: detectron2's trainer stopping on a non-finite total loss: "FloatingPointError: Loss became
#: infinite or NaN at iteration=27!" (detectron2/engine/train_loop.py, SimpleTrainer's
#: _write_metrics; copied by AdelaiDet, ViTDet and others, some with "iteration=27! loss_dict=")
_D2_NONFINITE = re.compile(r"\bLoss became infinite or NaN at iteration=(\d+)")
#: the total of a detector's losses where no plain "loss" is printed: detectron2's
#: CommonMetricPrinter ("iter: 659  total_loss: 1.619  loss_cls: 1.110 ...",
#: detectron2/utils/events.py), YOLOX's trainer ("iter: 2000/3905, ..., total_loss: 3.3, iou_loss:
#: 1.7, ...", yolox/core/trainer.py)
_TOTAL_LOSS = re.compile(r"(?<![\w.'\"])total_loss(?:\s*[=:]\s*|\s+)" + _NUM + r"(?![\w.])", re.I)
#: one named part of the loss printed non-finite ("loss_cls: nan", "'loss_cls': tensor(nan,
#: device='cuda:0')", "giou_loss:  nan", Keras's "val_loss: nan"): the sum is then non-finite too
_PART_NONFINITE = re.compile(r"(?<![\w.])['\"]?([a-z0-9]*(?:_loss|loss_)[a-z0-9_]*)['\"]?\s*[=:]\s*"
                             r"(?:tensor\(\s*)?[-+]?(?:nan|inf)(?![\w.])", re.I)
#: a part of an evaluation's loss ("val_loss", "eval_loss_cls", "test_loss"): no training step's
_EVAL_PART = re.compile(r"(?:val|valid|validation|eval|test)_", re.I)
_INF_WORD = re.compile(r"(?<![a-z])inf(?![a-z])")
_DS_COUNTER = re.compile(r"\bstep=(\d+), skipped=(\d+)")
_FAIRSEQ = re.compile(r"overflow detected, (?:ignoring gradient, )?setting loss scale to: ([0-9.e+-]+)")
_LOSS_SCALE_KV = re.compile(r"\bloss_scale=([0-9.e+-]+)")


def num(text: str) -> float | None:
    """A float, None when the text is not a number."""
    try:
        return float(text)
    except ValueError:
        return None


def numerics(sc: LogScanner, line: str, low: str) -> None:
    """A line of the numerics family (``low`` is its lower-case form)."""
    if "overflow" in low and _overflow(sc, line):
        return
    if "stopping training" in low:
        m = _STOPPING.search(line)
        if m:
            sc.metric_records += 1
            sc.metric("numerics.loss", float(m.group(1)), "loss")
            return
    if "became infinite or NaN" in line:
        m = _D2_NONFINITE.search(line)
        if m:
            # the trainer names the iteration itself: the log's own step
            sc.step = int(m.group(1))
            sc.metric_records += 1
            sc.metric("numerics.loss", math.nan, "loss")
            return
    if "nan or inf found in input tensor" in low:
        sc.nonfinite += 1
        return
    if "RuntimeWarning: invalid value encountered in cast" in line:
        # NumPy (>= 1.24) turned a NaN or an Inf into an integer: the array saved (an image, a
        # waveform) held non-finite values, a black image. Its other warnings (a 0/0 in a metric
        # or a visualisation) are not the job's output and name nothing
        sc.nonfinite += 1
        return
    if "'eval_loss'" in line:
        # the Trainer's evaluation dict ({'eval_loss': nan, 'eval_runtime': ...}): a non-finite
        # evaluation loss is one, not a training-loss sample
        m = _HF_EVAL_LOSS.search(line)
        if m and (v := num(m.group(1))) is not None and not math.isfinite(v):
            sc.nonfinite += 1
            if sc.nan_source is None:
                sc.nan_source = "loss"
        return
    if "skipped=" in line:
        m = _DS_COUNTER.search(line)
        if m:
            sc.ds_skipped = max(sc.ds_skipped, int(m.group(2)))
    if " | " in line and "iteration" in low and ":" in line:
        megatron(sc, line)
        return
    if "'loss'" in line or "'grad_norm'" in line:
        _hf(sc, line)
        return
    _plain(sc, line, low)


def _overflow(sc: LogScanner, line: str) -> bool:
    """Loss-scaler overflow messages (each is one skipped step); True when the line was one."""
    m = _APEX.search(line)
    if m:
        sc.skip()
        sc.sample("numerics.loss_scale", num(m.group(1)))
        return True
    m = _DS.search(line)
    if m:
        sc.skip()
        if m.group(2):
            sc.sample("numerics.loss_scale", num(m.group(2)))
        elif "hysteresis" not in line:  # the bare form: the scale that overflowed is the one set
            sc.sample("numerics.loss_scale", num(m.group(1)))
        return True
    m = _FAIRSEQ.search(line)
    if m:
        sc.skip()
        sc.sample("numerics.loss_scale", num(m.group(1)))
        return True
    return False


def _hf(sc: LogScanner, line: str) -> None:
    if "step'" in line:
        m = _HF_STEP.search(line)
        if m:
            sc.step = int(m.group(1))
    found = False
    for m in _HF.finditer(line):
        v = num(m.group(2))
        if v is None:
            continue
        if not found:
            sc.metric_records += 1
            found = True
        if m.group(1).lower() == "loss":
            sc.metric("numerics.loss", v, "loss")
        else:
            sc.metric("numerics.grad_norm", v, "grad")
    if "'l" in line:
        sc.lr([m.group(1) for m in _HF_LR.finditer(line)])
    if found:
        sc.run = 0


def _plain(sc: LogScanner, line: str, low: str) -> None:
    # each pattern is tried only when its own word is in the line: a regex scans a whole line
    # (up to a MiB of one), and most lines hold none of these
    dataload.data_time(sc, line)
    m = _STEP.search(line) if "step" in low or "iter" in low else None
    if m:
        sc.step = int(m.group(1))
    got = False
    m = _PLAIN_LOSS.search(line)
    if not m and "total_loss" in low:
        m = _TOTAL_LOSS.search(line)
    v = num(m.group(1)) if m else None
    if v is not None:
        sc.metric_records += 1
        got = True
        sc.metric("numerics.loss", v, "loss")
    # (the regex only where a non-finite word is: "inf" is in every "INFO" prefix)
    p = _PART_NONFINITE.search(line) if (v is None or math.isfinite(v)) and (
        "nan" in low or ("inf" in low and _INF_WORD.search(low))) else None
    if p and v is None and not _EVAL_PART.match(p.group(1)):
        # a part of the training loss printed non-finite, the total not printed: the total
        # (their sum) is not finite either ("loss_cls: nan", a loss dict's "'loss_cls': tensor(nan")
        sc.metric_records += 1
        got = True
        sc.metric("numerics.loss", math.nan, "loss")
    elif p:
        # an evaluation's loss not finite beside a finite training loss (Keras's "- loss: 0.31 -
        # val_loss: inf"): one non-finite value, no training-loss sample
        sc.nonfinite += 1
        if sc.nan_source is None:
            sc.nan_source = "loss"
    m = _PLAIN_GRAD.search(line) if "norm" in low else None
    if m and (v := num(m.group(1))) is not None:
        if not got:
            sc.metric_records += 1
        sc.metric("numerics.grad_norm", v, "grad")
        got = True
    m = _LOSS_SCALE_KV.search(line) if "loss_scale=" in line else None
    if m:
        sc.sample("numerics.loss_scale", num(m.group(1)))
    if got:
        sc.run = 0
        m = _PLAIN_LR.search(line) if "lr" in low else None
        if m:
            sc.lr([m.group(1)])
        m = _PLAIN_MS.search(line) if "ms" in low else None
        if m:
            sc.sample("training.step_time_ms", float(m.group(1) or m.group(2)))


def megatron(sc: LogScanner, line: str) -> None:
    """A Megatron-LM ``training_log`` line: ``key: value`` fields between `` | ``."""
    fields: dict[str, str] = {}
    for part in line.split(" | "):
        key, sep, value = part.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip().rstrip("|").strip()
    # "iteration     5426/  250000" has no colon; the step is read from the raw line
    m = _MEGATRON_ITER.search(line)
    if not m:
        return
    sc.step = int(m.group(1))
    sc.metric_records += 1
    loss_key = next((k for k in fields if k.endswith("loss") and "scale" not in k), None)
    if loss_key and (v := num(fields[loss_key])) is not None:
        sc.metric("numerics.loss", v, "loss")
    elif "loss scale" in fields or "grad norm" in fields:
        sc.missing_lm_loss += 1
    if "grad norm" in fields and (v := num(fields["grad norm"])) is not None:
        sc.metric("numerics.grad_norm", v, "grad")
    if "loss scale" in fields:
        sc.sample("numerics.loss_scale", num(fields["loss scale"]))
    lr = fields.get("learning rate")
    if lr:
        sc.lr([lr])
    ms = fields.get("elapsed time per iteration (ms)")
    if ms and (v := num(ms)) is not None and v >= 0:
        sc.sample("training.step_time_ms", v)
    seq = fields.get("actual seqlen")
    if seq and seq.isdigit():
        set_fact(sc.facts, "training.seq_len", int(seq))
    sk = fields.get("number of skipped iterations")
    n = int(sk) if sk and sk.isdigit() else 0
    if n:
        sc.skip(n)
    else:
        sc.run = 0
    nan_it = fields.get("number of nan iterations")
    if nan_it and nan_it.isdigit():
        sc.nonfinite += int(nan_it)
