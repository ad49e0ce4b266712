"""Loading, detection, directory walking, stdin, merging and conflicts."""

from __future__ import annotations

import io
import json

import pytest

from kb.engine.errors import InputError
from kb.facts import Facts
from kb.inputs import load_inputs, merge_facts
from kb.parsers import FORMATS, detect_format
from tests.parsers._fixtures import FIXTURES


def test_every_fixture_detects_and_validates() -> None:
    undetectable = {"smi_csv_h100_noheader.csv"}  # a headerless custom query: needs --input-format
    for path in sorted(FIXTURES.iterdir()):
        if path.suffix == ".md" or path.name in undetectable:
            continue
        bundle = load_inputs([str(path)])
        Facts.model_validate(bundle.facts)
        assert bundle.sources[str(path)] in FORMATS


def test_directory_sorted_skips_hidden_binary_and_unknown(tmp_path) -> None:
    (tmp_path / "b.log").write_text("{'loss': 2.0, 'grad_norm': 1.0}\n")
    (tmp_path / "a.log").write_text("{'loss': 1.0, 'grad_norm': 1.0}\n")
    (tmp_path / ".hidden.log").write_text("{'loss': 9.0}\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "notes.txt").write_text("hello world\n")
    bundle = load_inputs([str(tmp_path)])
    assert bundle.facts == {"numerics": {"loss": [1.0, 2.0], "grad_norm": [1.0, 1.0]}}
    assert any("binary" in n for n in bundle.notes)
    assert any("format not recognised" in n for n in bundle.notes)
    assert list(bundle.sources) == [str(tmp_path / "a.log"), str(tmp_path / "b.log")]


def test_explicit_binary_unknown_missing_and_bad_format_raise(tmp_path) -> None:
    blob = tmp_path / "x.bin"
    blob.write_bytes(b"abc\x00def")
    with pytest.raises(InputError) as e:
        load_inputs([str(blob)])
    assert e.value.place == str(blob) and "binary" in e.value.problem
    text = tmp_path / "x.txt"
    text.write_text("nothing to see\n")
    # readable text is never refused (issue 13): the incident reader reads it and says so
    assert any("no known fact" in n for n in load_inputs([str(text)]).notes)
    with pytest.raises(InputError, match="no such file"):
        load_inputs([str(tmp_path / "missing")])
    with pytest.raises(InputError, match="unknown format"):
        load_inputs([str(text)], "nope")


def test_stdin_and_forced_format() -> None:
    bundle = load_inputs(["-"], "ps", stdin=io.StringIO("  PID %CPU %MEM CMD\n  12 99.0 1.0 python train.py\n"))
    assert bundle.facts == {"cpu": {"process_cpu_percent": [99.0], "python_processes": 1}}
    assert bundle.sources == {"<stdin>": "ps"}


def test_invalid_utf8_is_replaced(tmp_path) -> None:
    p = tmp_path / "t.log"
    p.write_bytes(b"\xff\xfe{'loss': 3.5, 'grad_norm': 1.0}\n")
    assert load_inputs([str(p)]).facts["numerics"]["loss"] == [3.5]


def test_merge_concatenates_samples_and_reports_scalar_conflicts() -> None:
    a = FIXTURES / "smi_table_r550.txt"
    b = FIXTURES / "smi_table_r580.txt"
    bundle = load_inputs([str(a), str(b)])
    assert len(bundle.facts["gpu"]["utilization_samples"]) == 12
    assert bundle.facts["gpu"]["name"] == "NVIDIA A40"
    assert f'gpu.name: "NVIDIA A40" (from {a}) vs "NVIDIA A100-SXM4-40GB" (from {b})' in bundle.conflicts
    assert any(c.startswith("gpu.driver_version: ") for c in bundle.conflicts)


def test_counters_add_up_across_inputs() -> None:
    files = [str(FIXTURES / "compile_explain.txt"), str(FIXTURES / "compile_explain_old.txt")]
    comp = load_inputs(files).facts["compile"]
    assert comp["graph_break_reasons"] == {"control_flow": 2, "print": 1}


def test_merge_facts_explicit_wins() -> None:
    explicit = {"gpu": {"count": 8, "utilization_samples": [50.0]}, "symptom": "gpu_util"}
    derived = {"gpu": {"count": 4, "name": "H100", "utilization_samples": [10.0]}, "cpu": {"cores": 2}}
    facts, conflicts = merge_facts(explicit, derived)
    assert facts == {"gpu": {"count": 8, "utilization_samples": [50.0], "name": "H100"}, "symptom": "gpu_util",
                     "cpu": {"cores": 2}}
    assert conflicts == [
        "gpu.count: 8 (from facts.json) vs 4 (from artifacts)",
        "gpu.utilization_samples: [50.0] (from facts.json) vs [10.0] (from artifacts)",
    ]
    Facts.model_validate(facts)


def test_facts_json_input_and_its_errors(tmp_path) -> None:
    good = tmp_path / "facts.json"
    good.write_text(json.dumps({"schema_version": 1, "gpu": {"count": 2}}))
    assert detect_format(good.read_text()) == "facts_json"
    assert load_inputs([str(good)]).facts == {"schema_version": 1, "gpu": {"count": 2}}
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpu": {"count": -1}}')
    with pytest.raises(InputError) as e:
        load_inputs([str(bad)])
    assert e.value.problems[0].startswith("gpu.count:")
    typo = tmp_path / "typo.json"
    typo.write_text('{"gpu": {}, "gpus": 1}')
    with pytest.raises(InputError, match="unknown Facts key"):
        load_inputs([str(typo)], "facts_json")


def test_library_inputs_none_is_no_inputs_and_a_non_sequence_is_refused() -> None:
    import kb

    assert kb.diagnose(inputs=None, symptom="CUDA out of memory").branches == ["oom"]
    with pytest.raises(TypeError, match="inputs: a path, text, bytes"):
        kb.diagnose(inputs=3)  # type: ignore[arg-type]
