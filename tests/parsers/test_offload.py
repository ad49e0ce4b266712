"""Where a local runner placed the model: llama.cpp's load line, Ollama's log and `ollama ps`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers.offload import placement_line


@pytest.mark.parametrize(("line", "want"), [
    # llama.cpp, src/llama-model.cpp (load_tensors) and its older llm_load_tensors form
    ("load_tensors: offloaded 25/33 layers to GPU", (round(25 / 33, 4), "llama.cpp")),
    ("llm_load_tensors: offloaded 33/33 layers to GPU", (1.0, "llama.cpp")),
    ("llm_load_tensors: offloaded 0/35 layers to GPU", (0.0, "llama.cpp")),
    # Ollama's server log, llm/memory.go MemoryEstimate.log (both wordings of its message)
    ('time=2024-07-01T10:00:00 level=INFO source=memory.go:309 msg="offload to cuda" layers.requested=-1 '
     'layers.model=81 layers.offload=47 layers.split="" memory.available="[23.4 GiB]"', (round(47 / 81, 4), "ollama")),
    ('< level=INFO source=server.go:168 msg=offload library=metal layers.requested=-1 layers.model=33 '
     'layers.offload=25 layers.split=""', (round(25 / 33, 4), "ollama")),
    # `ollama ps` rows (the Ollama FAQ: "How can I tell if my model was loaded onto the GPU?")
    ("llama3:70b      be39eb53a197    41 GB   42%/58% CPU/GPU 4 minutes from now", (0.58, "ollama")),
    ("llama3:70b\tbcfb190ca3a7\t42 GB\t100% GPU \t4 minutes from now", (1.0, "ollama")),
    ("qwen2.5:32b     9f13ba1299af    21 GB    100% CPU     Forever", (0.0, "ollama")),
    # near-misses: the header, llama.cpp's plan line (not what it did), a nvidia-smi share
    ("NAME            ID              SIZE    PROCESSOR       UNTIL", None),
    ("llm_load_tensors: offloading 32 repeating layers to GPU", None),
    ("|  0  NVIDIA A100  On | 00000000:07:00.0 Off |  100% GPU util |", None),
    ("my-model    not-a-hex-id    41 GB   42%/58% CPU/GPU 4 minutes from now", None),
])
def test_placement_lines(line: str, want: tuple[float, str] | None) -> None:
    assert placement_line(line) == want


@settings(max_examples=200, deadline=None)
@given(placed=st.integers(0, 200), total=st.integers(0, 200))
def test_the_share_is_a_fraction(placed: int, total: int) -> None:
    got = placement_line(f"load_tensors: offloaded {placed}/{total} layers to GPU")
    if total == 0:
        assert got is None
    else:
        assert got is not None and 0.0 <= got[0] <= 1.0


def test_the_least_placed_model_counts() -> None:
    # `ollama ps` lists every loaded model: the one split across CPU and GPU is the slow one
    ps = ("NAME            ID              SIZE    PROCESSOR       UNTIL\n"
          "llama3:70b      be39eb53a197    41 GB   42%/58% CPU/GPU 4 minutes from now\n"
          "llama3:latest   a6990ed6be41    5.4 GB  100% GPU        4 minutes from now\n")
    rep = kb.diagnose(inputs=[ps])
    assert rep.branches[0] == "inference"
    first = (rep.findings + rep.hypotheses)[0]
    assert first.cause_id == "inference.layers_on_cpu"
    shown = first.holding if hasattr(first, "holding") else first.evidence
    assert any(e.fact == "inference.gpu_model_share" and e.value == 0.58 and e.holds for e in shown)


def test_a_model_wholly_on_the_gpu_is_no_evidence() -> None:
    ps = ("NAME            ID              SIZE    PROCESSOR       UNTIL\n"
          "llama3:latest   a6990ed6be41    5.4 GB  100% GPU        4 minutes from now\n")
    rep = kb.diagnose(inputs=[ps], symptom="generation is slow")
    assert "inference.layers_on_cpu" not in [f.cause_id for f in rep.findings]
    assert (rep.findings + rep.hypotheses)[0].cause_id != "inference.layers_on_cpu"
