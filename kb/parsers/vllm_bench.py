"""``benchmark_serving.py`` / ``vllm bench serve`` result block and SGLang ``bench_serving``.

The block starts at the ``Serving Benchmark Result`` banner and ends at a line of ``=``.
Labels are matched case-insensitively; trailing padding is stripped. When a log holds several
blocks (a sweep), the first block is used and the others are counted in a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kb.parsers.base import ParseResult, strip_ansi, to_float, trim

NAME = "vllm_bench"

_LINE = re.compile(r"^(.+?):\s+(\S.*?)\s*$")
_STAT = re.compile(r"^(mean|median|p(\d+(?:\.\d+)?)|max|std) (ttft|tpot|itl|e2el|e2e latency) \(ms\)$")
_FACT_OF_STAT = {
    ("median", "ttft"): "ttft_ms_p50", ("p50", "ttft"): "ttft_ms_p50", ("p99", "ttft"): "ttft_ms_p99",
    ("median", "tpot"): "tpot_ms_p50", ("p50", "tpot"): "tpot_ms_p50", ("p99", "tpot"): "tpot_ms_p99",
    ("median", "itl"): "itl_ms_p50", ("p50", "itl"): "itl_ms_p50", ("p99", "itl"): "itl_ms_p99",
}


def sniff(head: str) -> bool:
    """The result banner."""
    return "Serving Benchmark Result" in head


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Map the first result block to ``inference.*`` facts."""
    res = ParseResult(format=NAME, source=source)
    blocks = 0
    inside = False
    fields: dict[str, str] = {}
    inf: dict[str, Any] = {}
    for raw in lines:
        line = strip_ansi(raw).strip()
        if line.startswith("Maximum request concurrency:") and blocks == 0:
            # printed above the banner by older releases, inside the block by newer ones
            fields.setdefault("maximum request concurrency", line.split(":", 1)[1].strip())
            continue
        if "Serving Benchmark Result" in line:
            blocks += 1
            inside = blocks == 1
            continue
        if not inside:
            continue
        if line and set(line) == {"="}:
            inside = False
            continue
        if line.startswith("-"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        label, value = m.group(1).strip().lower(), m.group(2).strip()
        fields.setdefault(label, value)
        s = _STAT.match(label)
        if s:
            key = _FACT_OF_STAT.get((s.group(1), s.group(3)))
            v = to_float(value)
            if key and v is not None and v >= 0:
                inf.setdefault(key, v)
    if blocks == 0:
        res.notes.append(f"{source}: no 'Serving Benchmark Result' block found")
        return res
    if blocks > 1:
        res.notes.append(f"{source}: {blocks} result blocks; only the first is used")
    completed = to_float(fields.get("successful requests", ""))
    for label, key in (
        ("request throughput (req/s)", "request_throughput"),
        ("output token throughput (tok/s)", "output_tokens_per_s"),
    ):
        v = to_float(fields.get(label, ""))
        if v is not None and v >= 0:
            inf[key] = v
    if completed:
        for label, key in (("total input tokens", "mean_prompt_tokens"), ("total generated tokens", "mean_output_tokens")):
            v = to_float(fields.get(label, ""))
            if v is not None and v >= 0:
                inf[key] = round(v / completed, 6)
    # vLLM's "Maximum request concurrency: N" ("None" uncapped); SGLang's "Max request
    # concurrency: N" ("not set")
    conc = to_float(fields.get("maximum request concurrency", "")
                    or fields.get("max request concurrency", ""))
    if conc is not None and conc >= 1:
        inf["client_max_concurrency"] = int(conc)
    backend = fields.get("backend", "").lower()
    if backend.startswith(("sglang", "vllm", "tensorrt", "trt", "lmdeploy", "tgi")):
        inf["engine"] = backend
    failed = to_float(fields.get("failed requests", ""))
    if failed is not None and failed >= 0:
        inf["failed_requests"] = int(failed)
    if failed:
        res.notes.append(f"{source}: {int(failed)} failed request(s) in the benchmark")
    res.facts = trim({"inference": inf}) if inf else {}
    return res
