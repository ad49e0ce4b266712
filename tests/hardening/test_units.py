"""Units of the hardening: atomic exclusive writes, terminal hygiene, bounded readers, YAML
limits, the JSON answer cache and the input loader's skipping and caps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kb.engine.errors import InputError, KbError
from kb.facts_io import (
    check_numbers, drop_bad_numbers, load_facts_file, load_yaml, read_facts_text,
)
from kb.llm.cache import AnswerCache
from kb.safe_text import clean_text, one_line
from kb.safe_write import atomic_write_text, write_output

ROOT = Path(__file__).resolve().parents[2]


# -- safe_write -----------------------------------------------------------------------------
def test_refuses_existing_file_and_keeps_it(tmp_path):
    p = tmp_path / "r.md"
    p.write_text("user data")
    with pytest.raises(KbError, match="file exists"):
        atomic_write_text(p, "report")
    assert p.read_text() == "user data"
    atomic_write_text(p, "report", force=True)
    assert p.read_text() == "report"
    assert [x.name for x in tmp_path.iterdir()] == ["r.md"]  # no temp file left


def test_dangling_symlink_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    link = tmp_path / "out.md"
    link.symlink_to(target)
    with pytest.raises(KbError, match="file exists"):
        atomic_write_text(link, "x")
    atomic_write_text(link, "x", force=True)
    assert not target.exists() and not link.is_symlink() and link.read_text() == "x"


@pytest.mark.parametrize("make,fragment", [
    (lambda t: t / "missing" / "x.md", "does not exist"),
    (lambda t: t, "is a directory"),
])
def test_one_line_errors(tmp_path, make, fragment):
    with pytest.raises(KbError, match=fragment):
        atomic_write_text(make(tmp_path), "x", force=True)


def test_disk_full_is_one_line_and_leaves_nothing(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with pytest.raises(KbError, match="No space"):
        atomic_write_text("/dev/full", "x" * 10, force=True)


def test_concurrent_writers_exactly_one_wins(tmp_path):
    p = tmp_path / "same.md"
    results: list[str] = []

    def write(i: int) -> None:
        try:
            atomic_write_text(p, f"writer {i}\n" * 1000)
            results.append("ok")
        except KbError:
            results.append("exists")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["exists"] * 5 + ["ok"]
    assert len(set(p.read_text().splitlines())) == 1  # one writer's whole text, not a mix


def test_stdout_full_is_an_error_not_a_traceback():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    code = "from kb.safe_write import write_output\nwrite_output('x' * 100000, None)\n"
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE,
                           cwd=ROOT, timeout=60, text=True)
    assert r.returncode != 0 and "KbError" in r.stderr and "Exception ignored" not in r.stderr


def test_write_output_to_stdout(capsys):
    write_output("hello", None)
    assert capsys.readouterr().out == "hello\n"


# -- safe_text ------------------------------------------------------------------------------
@pytest.mark.parametrize("raw,clean", [
    ("a\x1b]52;c;ZXZpbA==\x07b", "ab"),  # OSC 52 sets the clipboard
    ("\x1b[31mred\x1b[0m", "red"),
    ("x\x1b[2J\x1b[Hy", "xy"),
    ("title\x1b]0;pwned\x1b\\", "title"),
    ("cr\roverwrite", "croverwrite"),
    ("bidi \u202eevil\u202c", "bidi evil"),
    ("nul\x00bell\x07del\x7f", "nulbelldel"),
    ("c1 \x9b2J csi", "c1  csi"),
    ("keeps\nnew lines\tand tabs", "keeps\nnew lines\tand tabs"),
    ("中文 ok", "中文 ok"),
])
def test_clean_text(raw, clean):
    assert clean_text(raw) == clean


def test_one_line_folds_breaks():
    assert one_line("a.log\nkb: error: forged") == "a.log kb: error: forged"


# -- facts_io -------------------------------------------------------------------------------
@pytest.mark.parametrize("text,fragment", [
    ('{"gpu": {"utilization_samples": [1, NaN]}}', "$.gpu.utilization_samples[1]: not a finite number (NaN)"),
    ('{"inference": {"ttft_ms_p50": -Infinity}}', "$.inference.ttft_ms_p50: not a finite"),
    ('{"inference": {"ttft_ms_p50": 1e400}}', "not a finite number"),
    ('{"inference": {"ttft_ms_p50": 1e300}}', "absurdly large"),
    ('{"oom": {"tried_to_allocate_mib": ' + "7" * 5000 + "}}", "integer of 5000 digits"),
    ('{"symptom": "oom", "symptom": "nccl"}', "$.symptom: duplicate key"),
    ('{"a":' * 40 + "1" + "}" * 40, "nested more than 32"),
])
def test_bad_numbers_and_structure_name_the_field(text, fragment):
    with pytest.raises(InputError) as err:
        read_facts_text(text, "f.json")
    assert any(fragment in line for line in err.value.problems), err.value.problems


def test_nan_in_numerics_is_data():
    data = read_facts_text('{"numerics": {"loss": [2.0, NaN, Infinity]}}', "f.json")
    assert str(data["numerics"]["loss"]) == "[2.0, nan, inf]"


def test_lenient_drop_names_the_field():
    data, warnings = drop_bad_numbers({"gpu": {"utilization_samples": [1.0, float("nan"), 2.0]}}, "x.log")
    assert data == {"gpu": {"utilization_samples": [1.0, 2.0]}}
    assert warnings == ["x.log: $.gpu.utilization_samples[1] ignored: not a number (NaN)"]


def test_library_dicts_are_checked_too():
    with pytest.raises(InputError, match="not a finite"):
        check_numbers({"inference": {"ttft_ms_p50": float("inf")}}, "facts")


def test_facts_file_bom_and_size(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b'\xef\xbb\xbf{"symptom": "oom"}')
    assert load_facts_file(p).symptom == "oom"
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (17 * 1024**2))
    with pytest.raises(InputError, match="too large"):
        load_facts_file(big)


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


@pytest.mark.parametrize("text,fragment", [
    (BOMB, "aliases"),  # billion laughs
    ("a: &a [1, 2]\n" + "".join(f"k{i}: [*a, *a]\n" for i in range(60)), "aliases"),
    ("a: &a [*a]\n", "YAML"),  # recursive
    ("x: " + "[" * 200 + "]" * 200 + "\n", "deep"),
])
def test_yaml_limits(text, fragment):
    with pytest.raises(InputError, match=fragment):
        load_yaml(text, "kb.yaml")


def test_yaml_bomb_is_refused_quickly_in_a_subprocess():
    code = f"from kb.facts_io import load_yaml\ntry:\n    load_yaml({BOMB!r}, 'b.yaml')\nexcept Exception as e:\n    print(type(e).__name__)\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=30, capture_output=True, text=True)
    assert r.stdout.strip() == "InputError"


def test_yaml_ordinary_config():
    assert load_yaml("thresholds:\n  gpu_util.low: 60\n", "kb.yaml") == {"thresholds": {"gpu_util.low": 60}}


# -- the answer cache -----------------------------------------------------------------------
def test_cache_is_json_checked_by_hash(tmp_path):
    root = tmp_path / "llm"
    c = AnswerCache(root)
    c.put("k1", "| table |", model="m")
    raw = json.loads((root / "k1.json").read_text())
    assert raw["format"] == "kb-llm-answer" and raw["answer"] == "| table |"
    assert oct(root.stat().st_mode & 0o777) == "0o700"
    assert c.get("k1") == "| table |"
    raw["answer"] = "tampered"
    (root / "k1.json").write_text(json.dumps(raw))
    assert c.get("k1") is None  # the hash no longer matches
    (root / "k2.json").write_bytes(b"\x80\x04\x95 pickle bytes")
    assert c.get("k2") is None


def test_cache_in_a_shared_folder_is_not_used(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    c = AnswerCache(root)
    c.put("k", "a")
    root.chmod(0o777)
    assert c.get("k") is None


# -- the input loader -----------------------------------------------------------------------
def test_directory_skips_fifo_device_and_reports_unreadable(tmp_path):
    from kb.inputs import load_inputs

    (tmp_path / "train.log").write_text("step 1 | loss: 2.0\n")
    os.mkfifo(tmp_path / "pipe.log")
    os.symlink("/dev/zero", tmp_path / "zero.log")
    bundle = load_inputs([str(tmp_path)])
    assert any("pipe.log" in n and "FIFO" in n for n in bundle.notes)
    assert any("zero.log" in n and "character device" in n for n in bundle.notes)


def test_explicit_device_is_refused(tmp_path):
    from kb.inputs import load_inputs

    with pytest.raises(InputError, match="character device"):
        load_inputs(["/dev/zero"])


def test_long_lines_are_cut_with_a_note(tmp_path):
    from kb.inputs import MAX_LINE_BYTES, load_inputs

    p = tmp_path / "ps.txt"
    p.write_bytes(b"  PID %CPU %MEM CMD\n 7 99.0 1.0 python " + b"a" * (MAX_LINE_BYTES * 3) + b"\n 8 1.0 1.0 sh\n")
    bundle = load_inputs([str(p)], input_format="ps")
    assert any("cut" in n for n in bundle.notes), bundle.notes


def test_per_format_cap(tmp_path, monkeypatch):
    import kb.inputs as inputs

    monkeypatch.setattr(inputs, "MAX_OTHER_INPUT_BYTES", 4096)
    p = tmp_path / "ps.txt"
    p.write_text("  PID %CPU %MEM CMD\n" + " 7 99.0 1.0 python train.py\n" * 1000)
    bundle = inputs.load_inputs([str(p)], input_format="ps")
    assert any("only the first 4096 bytes" in n for n in bundle.notes), bundle.notes
