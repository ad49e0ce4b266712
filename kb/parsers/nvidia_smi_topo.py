"""``nvidia-smi topo -m``: the matrix of how each pair of GPUs (and NICs) is connected.

    \tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
    GPU0\t X \tNV1\tNV2\tNV1\t0-71\t0-1
    GPU1\tNV1\t X \tPHB\t...

A GPU pair's cell is ``NV#`` (bonded NVLinks), or the PCIe path between them: ``PIX``, ``PXB``,
``PHB``, ``NODE``, ``SYS`` (``SOC`` in old drivers), ``X`` on the diagonal. NIC rows and
columns (``NIC0``, ``mlx5_0``) and the legend that follows are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb.parsers.base import ParseResult, set_fact, strip_ansi, trim

NAME = "nvidia_smi_topo"

_HEAD = re.compile(r"^\s*GPU0(?:\s+(?:GPU\d+|NIC\d+|mlx\d+_\d+))*\s+CPU\s?Affinity\b")
_ROW = re.compile(r"^\s*GPU(\d+)\s")
_NIC_ROW = re.compile(r"^\s*(?:NIC\d+|mlx\d+_\d+)\s")
_LINK = re.compile(r"^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def is_head(line: str) -> bool:
    """The matrix's header line (the GPU columns, then CPU affinity)."""
    return bool(_HEAD.match(line))


def in_matrix(line: str) -> bool:
    """A row of the matrix: a GPU's or a NIC's."""
    return bool(_ROW.match(line) or _NIC_ROW.match(line))


def sniff(head: str) -> bool:
    """The header line, then a GPU row."""
    lines = strip_ansi(head).splitlines()[:60]
    return any(_HEAD.match(x) and i + 1 < len(lines) and _ROW.match(lines[i + 1]) for i, x in enumerate(lines))


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """The GPU count, whether any two GPUs are joined by NVLink, and whether all are."""
    res = ParseResult(format=NAME, source=source)
    columns: list[str] | None = None
    gpus: set[str] = set()
    pairs: list[str] = []
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if _HEAD.match(line):
            columns = line.replace("CPU Affinity", "CPU_Affinity").split()
            continue
        m = _ROW.match(line)
        if columns is None or not m:
            continue
        cells = line.split()[1:]
        gpus.add(m.group(1))
        for col, cell in zip(columns, cells):
            if col.startswith("GPU") and col != f"GPU{m.group(1)}" and _LINK.match(cell):
                pairs.append(cell)
    facts = res.facts
    if gpus:
        set_fact(facts, "gpu.count", len(gpus))
    if pairs:
        nv = [p.startswith("NV") for p in pairs]
        set_fact(facts, "distributed.nvlink_present", any(nv))
        if all(nv) or not any(nv):
            # every pair alike: any tensor-parallel group on this box has NVLink throughout, or
            # none has it (mixed boxes depend on which GPUs the group takes)
            set_fact(facts, "inference.tp_all_nvlink", all(nv))
    res.facts = trim(facts)
    if not res.facts:
        res.notes.append(f"{source}: no nvidia-smi topo -m matrix found")
    return res
