"""`kb diagnose --input big.log`: a regular file is mapped by the fixed-width engine, which hands
the incident reader (signatures, stated facts) only the lines it does not take in bulk. The facts
must be those of the plain path, where the reader sees every byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

import kb.inputs as inputs_mod  # noqa: E402
from kb.api import gather  # noqa: E402
from kb.parsers.training_log import columnar  # noqa: E402


def _log(path: Path) -> Path:
    metric = "[2026-12-01 03:01:01] rank1 step {i} loss 2.5000 lr 3.0e-4 grad_norm 0.621 tokens/s 9617 mem 61.2GiB\n"
    n = columnar.THRESHOLD // len(metric) + 20_000
    with path.open("w", encoding="utf-8") as fh:
        fh.write("torchrun --nnodes 2 --nproc-per-node 8 train.py\n")
        fh.write("export NCCL_P2P_DISABLE=1\n")
        for i in range(n // 2):
            fh.write(metric.format(i=i))
        # a message of a known cause between metric lines
        fh.write("[rank3]:[E ProcessGroupNCCL.cpp:1182] [Rank 3] Watchdog caught collective operation "
                 "timeout: WorkNCCL(SeqNum=1021, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")
        for i in range(n // 2, n):
            fh.write(metric.format(i=i))
        fh.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                 "total capacity of 79.10 GiB of which 1.2 GiB is free.\n")
    return path


def test_the_mapped_path_gives_the_facts_of_the_plain_path(tmp_path: Path, monkeypatch) -> None:
    log = _log(tmp_path / "train.log")
    assert os.path.getsize(log) > columnar.THRESHOLD
    seen: list[int | None] = []
    real = inputs_mod._whole_file

    def spy(stream, cap):
        seen.append(real(stream, cap))
        return seen[-1]

    monkeypatch.setattr(inputs_mod, "_whole_file", spy)
    fast = gather(inputs=[str(log)]).facts.model_dump(mode="json", exclude_defaults=True)
    assert seen == [os.path.getsize(log)]  # the mapped path was taken
    monkeypatch.setattr(inputs_mod, "_whole_file", lambda s, cap: None)  # the plain path
    plain = gather(inputs=[str(log)]).facts.model_dump(mode="json", exclude_defaults=True)
    assert fast == plain
    assert fast["signatures"]  # the watchdog message between metric lines was matched
    assert fast["env"]["NCCL_P2P_DISABLE"] == "1"
    assert fast["distributed"]["watchdog_timeout"] is True
