"""``nvidia-smi topo -m`` as users paste it: real matrices from public threads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers import detect_format, nvidia_smi_topo
from tests.parsers._fixtures import FIXTURES


@pytest.mark.parametrize(("name", "count", "nvlink", "all_nvlink"), [
    # NV4 pairs beside SYS / NODE ones, NIC rows and columns: whether a TP group has NVLink
    # throughout depends on its GPUs
    ("topo_a40_nics.txt", 8, True, None),
    ("topo_pcie_4gpu.txt", 4, False, False),  # PXB / PIX / SYS only
])
def test_topology_matrices(name: str, count: int, nvlink: bool, all_nvlink: bool | None) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert detect_format(text) == "nvidia_smi_topo"
    facts = nvidia_smi_topo.parse(text.splitlines(), name).facts
    assert facts["gpu"]["count"] == count
    assert facts["distributed"]["nvlink_present"] is nvlink
    assert facts.get("inference", {}).get("tp_all_nvlink") is all_nvlink


def test_one_gpu_has_no_pair() -> None:
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-31\t0\n"
    facts = nvidia_smi_topo.parse(text.splitlines(), "topo.txt").facts
    assert facts == {"gpu": {"count": 1}}  # no pair: nothing said of NVLink


def test_a_pcie_box_answers_the_nvlink_question() -> None:
    # the matrix of a PCIe-only box beside a slow tensor-parallel server: the missing NVLink is
    # now a fact, no longer a question to ask
    text = (FIXTURES / "topo_pcie_4gpu.txt").read_text(encoding="utf-8")
    words = "vLLM with tensor-parallel-size 4 decodes slower than one GPU"
    rep = kb.diagnose(inputs=[text], symptom=words)
    assert (rep.findings + rep.hypotheses)[0].cause_id == "inference.tp_over_pcie"
    assert "inference.tp_all_nvlink" not in [m for h in rep.hypotheses for m in h.missing]
    alone = kb.diagnose(symptom=words)
    assert "inference.tp_all_nvlink" in [m for h in alone.hypotheses for m in h.missing]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_error(text: str) -> None:
    nvidia_smi_topo.sniff(text)
    nvidia_smi_topo.parse(text.splitlines(), "x")
