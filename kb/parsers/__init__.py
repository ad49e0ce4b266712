"""Parsers that turn raw tool outputs into partial Facts documents.

``PARSERS`` is tried in order by :func:`detect_format`: specific, self-announcing formats
first (a Facts JSON, a benchmark banner, the memory summary title, dmon's ``#`` header), then
table/CSV formats, then the general log scanners (``training_log`` before ``torch_compile``
because the training-log scanner also reads Dynamo lines, so a mixed log loses nothing).
``incident`` (kb.readers) is last and never detected: the loader falls back to it for any other
text (a pasted mix of traceback, commands, env lines and tool output).
"""

from __future__ import annotations

from types import ModuleType

from kb.parsers import (
    config_file,
    facts_json,
    free,
    gpustat,
    iostat,
    memory_stats,
    nccl_tests,
    nvidia_smi,
    nvidia_smi_dmon,
    nvidia_smi_topo,
    ps,
    py_spy,
    torch_compile,
    training_log,
    vllm_bench,
    vllm_metrics,
)
from kb.parsers.base import HEAD_BYTES, MAX_SAMPLES, ParseResult
from kb.readers import incident  # the fallback for any other text; its sniff never claims one

PARSERS: tuple[ModuleType, ...] = (
    facts_json,
    vllm_bench,
    nccl_tests,
    memory_stats,
    nvidia_smi_dmon,
    nvidia_smi_topo,
    nvidia_smi,
    gpustat,
    free,
    iostat,
    py_spy,
    vllm_metrics,
    ps,
    training_log,
    torch_compile,
    config_file,
    incident,
)
FORMATS: tuple[str, ...] = tuple(p.NAME for p in PARSERS)
_BY_NAME: dict[str, ModuleType] = {p.NAME: p for p in PARSERS}

__all__ = ["FORMATS", "HEAD_BYTES", "MAX_SAMPLES", "PARSERS", "ParseResult", "detect_format", "get_parser"]


def detect_format(text: str) -> str | None:
    """Name of the first parser whose ``sniff`` accepts the head of ``text``, else None."""
    head = text[:HEAD_BYTES]
    for parser in PARSERS:
        try:
            if parser.sniff(head):
                return parser.NAME
        except Exception:  # noqa: BLE001 - a sniff must never stop detection; treat as "no"
            continue
    return None


def get_parser(name: str) -> ModuleType:
    """The parser module for a format name; KeyError if unknown."""
    return _BY_NAME[name]
