"""The reader through the loader and the CLI: readable text is never refused, stdin and gzip
are read, a real mixed paste gives the facts of all its parts."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb.engine.errors import InputError
from kb.inputs import load_inputs
from tests.parsers._fixtures import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(__file__).parent / "samples"
#: a real mixed paste: the OOM of tests/fixtures/formats/oom_2_1_capacty.log, the collect_env of
#: pytorch/pytorch#108650 and a torchrun command with env lines, as one user would paste them
MIXED = (
    "I run:\n\nexport PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512\n"
    "torchrun --nproc_per_node=4 train.py --bf16 --dataloader_num_workers 2\n\nand get\n\n"
    "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    loss.backward()\n"
    + (FIXTURES / "oom_2_1_capacty.log").read_text()
    + "\n\nEnvironment:\n" + (SAMPLES / "collect_env_torch21.txt").read_text()
)


def kb_diagnose(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kb", "diagnose", *args, "--format", "json"],
                          input=stdin, capture_output=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "KB_NO_CACHE": "1"})


def test_mixed_paste_gives_the_facts_of_every_part(tmp_path: Path) -> None:
    p = tmp_path / "incident.log"
    p.write_text(MIXED)
    bundle = load_inputs([str(p)])
    f = bundle.facts
    assert bundle.sources[str(p)] == "training_log"  # the traceback claims it; the tap reads the rest
    assert f["oom"]["occurred"] is True and f["oom"]["reserved_unallocated_mib"] > 4900
    assert f["oom"]["expandable_segments"] is False
    assert f["env"]["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:512"
    assert f["distributed"] == {"nnodes": 1, "world_size": 4}
    assert f["numerics"]["dtype"] == "bf16" and f["dataloader"]["num_workers"] == 2
    assert f["gpu"]["name"] == "NVIDIA L4" and f["gpu"]["driver_version"] == "535.104.05"
    assert f["software"]["torch_version"] == "2.1.0.dev20230903+cu121"
    assert "oom.allocator_reserved_unallocated" in f["signatures"]


def test_text_no_format_claims_is_read_not_refused(tmp_path: Path) -> None:
    p = tmp_path / "command.txt"
    p.write_text("vllm serve Qwen/Qwen2-7B --enforce-eager --max-num-seqs 8\n")
    bundle = load_inputs([str(p)])
    assert bundle.sources[str(p)] == "incident"
    assert bundle.facts["inference"] == {"engine": "vllm", "enforce_eager": True, "max_num_seqs": 8}


def test_words_only_text_is_accepted_with_a_note(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_text("nothing to see\n")
    bundle = load_inputs([str(p)])
    assert bundle.facts == {} and any("no known fact" in n for n in bundle.notes)


def test_binary_is_still_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.bin"
    p.write_bytes(b"abc\x00def")
    with pytest.raises(InputError, match="binary"):
        load_inputs([str(p)])


def test_gzip_file_and_stream(tmp_path: Path) -> None:
    p = tmp_path / "train.log.gz"
    p.write_bytes(gzip.compress(MIXED.encode()))
    f = load_inputs([str(p)]).facts
    assert f["oom"]["occurred"] is True and f["gpu"]["name"] == "NVIDIA L4"
    stdin = io.TextIOWrapper(io.BytesIO(gzip.compress(b"torchrun --nproc_per_node 2 t.py\n")))
    assert load_inputs(["-"], stdin=stdin).facts["distributed"]["world_size"] == 2


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    data = gzip.compress(("export NCCL_ALGO=Ring\n" + "x" * 200_000 + "\n").encode())
    p = tmp_path / "cut.log.gz"
    p.write_bytes(data[: len(data) - 12])
    bundle = load_inputs([str(p)])
    assert bundle.facts["env"]["NCCL_ALGO"] == "Ring"
    assert any("gzip data ends early" in n for n in bundle.notes)


def test_gzip_cap_counts_decompressed_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kb.inputs as inputs

    monkeypatch.setattr(inputs, "MAX_OTHER_INPUT_BYTES", 4096)
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(b"export CUDA_VISIBLE_DEVICES=1\n" + b"y" * 10_000_000))
    bundle = load_inputs([str(p)])
    assert bundle.sources[str(p)] == "incident"
    assert bundle.facts["env"]["CUDA_VISIBLE_DEVICES"] == "1"
    assert any("only the first 4096 bytes" in n for n in bundle.notes)


def test_cli_reads_what_it_used_to_refuse(tmp_path: Path) -> None:
    # a collect_env dump alone was refused with "format not recognised" (exit 2)
    r = kb_diagnose("--input", str(SAMPLES / "collect_env_torch21.txt"))
    assert r.returncode in (0, 3), r.stderr
    assert json.loads(r.stdout)["status"]


def test_cli_stdin(tmp_path: Path) -> None:
    r = kb_diagnose("--input", "-", stdin=b"python -m sglang.launch_server --disable-radix-cache --tp 2\n")
    assert r.returncode in (0, 3), r.stderr


def test_cli_still_refuses_binary(tmp_path: Path) -> None:
    p = tmp_path / "core.bin"
    p.write_bytes(b"\x7fELF\x00\x00\x01")
    r = kb_diagnose("--input", str(p))
    assert r.returncode == 2 and b"binary" in r.stderr
