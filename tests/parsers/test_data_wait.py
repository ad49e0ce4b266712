"""How long a step waited for its batch, read where trainers print it beside the step's time
(dataloader.data_wait_fraction)."""

from __future__ import annotations

import pytest

import kb
from kb.parsers import training_log


def _imagenet(i: int, t: float, d: float) -> str:  # pytorch/examples imagenet/main.py ProgressMeter
    return f"Epoch: [0][{i:4d}/5005]\tTime {t:6.3f} ({t:6.3f})\tData {d:6.3f} ({d:6.3f})\tLoss 6.9065 (6.9074)\tAcc@1   0.00 (  0.14)"


def _mmcv(i: int, t: float, d: float) -> str:  # mmcv TextLoggerHook
    return (f"2019-07-05 18:38:44,201 - INFO - Epoch [1][{i}/3637]\tlr: 0.01000, eta: 132 days, 14:08:21, "
            f"time: {t:.3f}, data_time: {d:.3f}, memory: 5219, loss_cls: 6.0129, loss: 6.0129")


def _detectron2(i: int, t: float, d: float) -> str:  # detectron2 CommonMetricPrinter
    return (f"[07/05 18:38:44 d2.utils.events]:  eta: 1 day, 2:03:04  iter: {i}  total_loss: 1.234  "
            f"loss_cls: 0.5  time: {t:.4f}  data_time: {d:.4f}  lr: 0.02  max_mem: 5219M")


def _timm(i: int, t: float, d: float) -> str:  # timm train.py
    return (f"Train: 0 [{i:4d}/2502 ( 10%)]  Loss: 6.912 (6.93)  Time: {t:.3f}s,  250.09/s  ({t:.3f}s,  246.15/s)  "
            f"LR: 1.000e-03  Data: {d:.3f} ({d:.3f})")


def _centernet(i: int, t: float, d: float) -> str:  # CenterNet base_trainer.py (running averages)
    return (f"ctdet/coco_dla |####      | train: [54][{i}/14785]|Tot: 1:20:53 |ETA: 6:14:23 |loss 1.7448 "
            f"|hm_loss 1.3093 |Data {d * 2:.3f}s({d:.3f}s) |Net {t:.3f}s")


@pytest.mark.parametrize("line", [_imagenet, _mmcv, _detectron2, _timm, _centernet])
def test_a_starved_loop_and_a_fed_one(line) -> None:
    # the first record (workers starting) is left out: it waited for everything
    starved = [line(0, 48.8, 48.0)] + [line(10 * k, 1.0, 0.8) for k in range(1, 6)]
    res = training_log.parse(starved, "train.log")
    assert res.facts["dataloader"]["data_wait_fraction"] == pytest.approx(0.8)
    fed = [line(0, 5.0, 4.9)] + [line(10 * k, 0.5, 0.01) for k in range(1, 6)]
    res = training_log.parse(fed, "train.log")
    assert res.facts["dataloader"]["data_wait_fraction"] == pytest.approx(0.02)


def test_no_wait_printed_no_fraction() -> None:
    res = training_log.parse(["step 1 loss 2.5", "step 2 loss 2.4 time 0.5"], "train.log")
    assert "dataloader" not in res.facts


def test_a_starved_loop_reads_as_the_input_pipeline() -> None:
    log = "\n".join([_imagenet(0, 48.8, 45.0)] + [_imagenet(10 * k, 10.4, 10.3) for k in range(1, 6)])
    rep = kb.diagnose(inputs=[log])
    assert rep.branches == ["gpu_util"]
    top = [h.cause_id for h in rep.findings + rep.hypotheses][:2]
    assert top[0] in {"gpu_util.dataloader_bound", "gpu_util.dataloader_workers_cpu_bound", "gpu_util.dataloader_workers"}
