"""Ctrl-C during a long log scan: exit status 130, no partial output file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_exits_130_without_output_file(tmp_path: Path) -> None:
    # eval-metric lines are read one at a time (no bulk grammar): a scan of several seconds
    log = tmp_path / "train.log"
    with open(log, "w") as fh:
        for _ in range(20):
            fh.write("{'eval_loss': 1.25, 'eval_runtime': 1.5, 'epoch': 1.0}\n" * 100_000)
    out = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kb", "diagnose", "--input", str(log), "--input-format", "training_log", "--format", "json", "--output", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    time.sleep(3.0)  # imports done, the scan under way
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    assert not out.exists()
