"""What a GPU product name tells (graphs/gpus.yaml): the table validates itself, names in prose
are found, derived facts never override measured ones, and the reasoning uses them."""

from __future__ import annotations

from pathlib import Path

import pytest

import kb
from kb.engine.errors import KnowledgeError
from kb.gpu_models import complete, load, lookup, memory_range_gib, named_in, table


def test_every_example_resolves_to_its_own_entry() -> None:
    rows = table()
    for _, g in rows:
        for name in g.examples:
            assert lookup(name) is g, name


@pytest.mark.parametrize(("name", "cc", "nvlink"), [
    ("NVIDIA H100 80GB HBM3", 9.0, None),
    ("NVIDIA GeForce RTX 4090", 8.9, False),
    ("NVIDIA A100-SXM4-80GB", 8.0, None),
    ("NVIDIA A10G", 8.6, False),
    ("Tesla T4", 7.5, False),
    ("NVIDIA L40S", 8.9, False),
    ("Tesla V100-SXM2-16GB", 7.0, None),
    ("NVIDIA GeForce GTX 1080 Ti", 6.1, False),
    # near-misses: a longer name must not take a shorter one's entry
    ("NVIDIA H200", 9.0, None),
    ("NVIDIA RTX A4000", 8.6, False),
    ("NVIDIA RTX A6000", 8.6, None),
])
def test_lookup(name: str, cc: float, nvlink: bool | None) -> None:
    g = lookup(name)
    assert g is not None and g.compute_capability == cc and g.nvlink is nvlink


@pytest.mark.parametrize(("name", "gib"), [
    # the size in the name, as nvidia-smi prints it or people write it
    ("NVIDIA A100-SXM4-80GB", (80, 80)), ("NVIDIA A100 80GB PCIe", (80, 80)),
    ("Tesla V100-PCIE-16GB", (16, 16)), ("A100-40G", (40, 40)),
    # no size in the name: the product's variants (datasheets)
    ("NVIDIA A100", (40, 80)), ("NVIDIA GeForce RTX 4090", (24, 24)), ("Tesla T4", (16, 16)),
    ("NVIDIA L40S", (24, 48)), ("Quadro P6000", (24, 24)), ("NVIDIA A30", (24, 24)),
    # near-misses: "A10G" is a product, not 10 GB; an unknown product has no size
    ("NVIDIA A10G", (16, 24)), ("AMD Instinct MI300X", None),
])
def test_memory_range(name: str, gib: tuple[int, int] | None) -> None:
    assert memory_range_gib(name) == gib


def test_a_bad_memory_range_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "gpus.yaml"
    p.write_text("source: x\ngpus:\n  - {match: 'X1', compute_capability: 8.0, memory_gib: [80, 40], examples: [X1]}\n")
    with pytest.raises(KnowledgeError) as exc:
        load(p)
    assert any("memory_gib" in line for line in exc.value.problems)


def test_unknown_names() -> None:
    assert lookup("AMD Instinct MI300X") is None
    assert lookup("") is None


def test_a_shadowed_entry_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "gpus.yaml"
    p.write_text("source: x\ngpus:\n"
                 "  - {match: 'A10', compute_capability: 8.6, nvlink: false, examples: ['A10']}\n"
                 "  - {match: 'A100', compute_capability: 8.0, examples: ['A100']}\n")
    with pytest.raises(KnowledgeError, match="resolves to"):
        load(p)


def test_a_bad_regex_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "gpus.yaml"
    p.write_text("source: x\ngpus:\n  - {match: '(', compute_capability: 8.0, examples: ['x']}\n")
    with pytest.raises(KnowledgeError, match="gpus.yaml"):
        load(p)


@pytest.mark.parametrize(("text", "names"), [
    ("vLLM with TP 2 on 2x RTX 4090", ["RTX 4090"]),
    ("two 4090s, no NVLink", ["RTX 4090"]),
    ("8x H100 80GB", ["H100"]),
    ("on a Tesla T4", ["T4"]),
    ("T4 instance", []),              # a bare short name is too common a token
    ("fp16 and bf16 on v100", ["v100"]),
    ("A100-SXM4-80GB and A100", ["A100"]),
    ("in 2023 we moved", []),
    ("GTX 1080 Ti", ["GTX 1080 Ti"]),
])
def test_named_in(text: str, names: list[str]) -> None:
    assert named_in(text) == names


def test_complete_adds_only_what_was_not_measured() -> None:
    facts = {"gpu": {"name": "NVIDIA GeForce RTX 4090"}, "inference": {"tensor_parallel_size": 2}}
    notes = complete(facts)
    assert facts["gpu"]["compute_capability"] == 8.9
    assert facts["distributed"]["nvlink_present"] is False
    assert facts["inference"]["tp_all_nvlink"] is False
    assert len(notes) == 3
    measured = {"gpu": {"name": "NVIDIA GeForce RTX 4090", "compute_capability": 8.9},
                "distributed": {"nvlink_present": True}}
    assert complete(measured) == []
    assert measured["distributed"]["nvlink_present"] is True
    board = {"gpu": {"name": "NVIDIA H100 80GB HBM3"}}
    complete(board)
    assert "distributed" not in board  # NVLink depends on the board: unknown


@pytest.mark.parametrize(("name", "prone"), [
    # the GTX 16 series (TU116/TU117): fp16 NaN on these chips only (pytorch/pytorch#58123)
    ("NVIDIA GeForce GTX 1660 Ti", True), ("NVIDIA GeForce GTX 1650", True), ("GTX1660 SUPER", True),
    # near-misses: the same compute capability (7.5) with a sound fp16 path
    ("NVIDIA GeForce RTX 2060", False), ("NVIDIA GeForce RTX 2080 Ti", False), ("Tesla T4", False),
])
def test_the_gtx_16_series_is_marked_fp16_nan_prone(name: str, prone: bool) -> None:
    g = lookup(name)
    assert g is not None and g.compute_capability == 7.5 and g.fp16_nan_prone is prone
    facts = {"gpu": {"name": name}}
    complete(facts)
    assert facts["gpu"]["fp16_nan_prone"] is prone  # known either way: "not" rules the fault out


def test_the_reasoning_uses_what_the_name_tells() -> None:
    facts = {"symptom": "inference", "inference": {"engine": "vllm", "tensor_parallel_size": 2},
             "gpu": {"name": "NVIDIA GeForce RTX 4090"}}
    rep = kb.diagnose(facts)
    assert rep.hypotheses[0].cause_id == "inference.tp_over_pcie"
    assert any(w.startswith("derived: distributed.nvlink_present = false") for w in rep.warnings)
    # the same in words
    rep = kb.diagnose(symptom="vLLM tensor parallel on 2x RTX 4090 is slower than one GPU")
    assert any("RTX 4090" in w for w in rep.warnings)


def test_kb_validate_checks_the_table(edited_graphs) -> None:
    import subprocess
    import sys

    root = edited_graphs("gpus.yaml", 'examples: ["Tesla T4"]', 'examples: ["Tesla K80"]')
    p = subprocess.run([sys.executable, "-m", "kb", "validate", "--path", str(root)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "gpus.yaml" in p.stderr and "Tesla K80" in p.stderr
    assert "Traceback" not in p.stderr


def test_the_table_is_cached_as_json_and_a_damaged_cache_is_ignored(tmp_path: Path, monkeypatch) -> None:
    import kb.gpu_models as gm

    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KB_NO_CACHE", raising=False)
    gm.table.cache_clear()
    try:
        first = gm.table()
        cached = list(tmp_path.glob("gpus-*.json"))
        assert len(cached) == 1
        gm.table.cache_clear()
        assert [g for _, g in gm.table()] == [g for _, g in first]  # read back from JSON
        cached[0].write_text("{not json")
        gm.table.cache_clear()
        assert [g for _, g in gm.table()] == [g for _, g in first]  # damaged: the file again
    finally:
        gm.table.cache_clear()
