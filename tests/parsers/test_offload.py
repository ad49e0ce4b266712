"""Where a local runner placed the model: llama.cpp's load line, Ollama's log and `ollama ps`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.api import gather
from kb.parsers.offload import cuda_devices_line, model_buffer_device, placement_line


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
    # every weight on the GPU: none in host memory either, so the cause is ruled out
    assert "inference.layers_on_cpu" in [r.cause_id for r in rep.ruled_out]


@pytest.mark.parametrize(("line", "want"), [
    # llama.cpp src/llama-model.cpp: the weights it placed per device, new and old wording
    ("load_tensors:        CUDA1 model buffer size =  2146.22 MiB", 1),
    ("llm_load_tensors:      CUDA0 buffer size =  3577.56 MiB", 0),
    # near-misses: its KV cache and compute buffers, host buffers
    ("llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB", None),
    ("sched_reserve:      CUDA0 compute buffer size =  1000.00 MiB", None),
    ("load_tensors:   CPU_Mapped model buffer size =    70.31 MiB", None),
    ("load_tensors:    CUDA_Host model buffer size =   322.07 MiB", None),
])
def test_model_buffer_lines(line: str, want: int | None) -> None:
    assert model_buffer_device(line) == want


def test_cuda_devices_line() -> None:
    # ggml/src/ggml-cuda/ggml-cuda.cu (ggml_cuda_init; ggml_init_cublas in early 2024 builds)
    got = cuda_devices_line("ggml_init_cublas: found 8 CUDA devices:",
                            "  Device 0: Quadro P6000, compute capability 6.1, VMM: yes")
    assert got == (8, "Quadro P6000", 6.1)
    assert cuda_devices_line("ggml_cuda_init: found 1 CUDA devices:", "") == (1, None, None)
    assert cuda_devices_line("found 8 CUDA devices in the rack", "") is None


_SPLIT_LOG = """ggml_cuda_init: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
  Device 1: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
load_tensors: offloaded 33/33 layers to GPU
load_tensors:        CUDA0 model buffer size =  2084.35 MiB
load_tensors:        CUDA1 model buffer size =  2146.22 MiB
load_tensors:   CPU_Mapped model buffer size =    70.31 MiB
llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB
"""


def test_a_layer_split_is_read_and_named() -> None:
    rep = kb.diagnose(inputs=[_SPLIT_LOG], symptom="llama-3-8b Q4_K_M is slower on two 4090s than on one")
    notes = " ".join(rep.warnings)
    assert "inference.unsplit_weights_fraction = 0.16" in notes
    first = (rep.findings + rep.hypotheses)[0]
    assert first.cause_id == "inference.split_small_model"


def test_weights_on_one_gpu_of_several_is_no_split() -> None:
    one = _SPLIT_LOG.replace("load_tensors:        CUDA1 model buffer size =  2146.22 MiB\n", "")
    g = gather(None, inputs=[one])
    assert g.facts.inference is None or g.facts.inference.gpus_per_replica is None
    assert g.facts.gpu.count == 2
