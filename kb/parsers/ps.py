"""``ps -eo pid,pcpu,pmem,cmd`` and ``ps aux`` (procps-ng), with or without the header.

The header is searched for (it need not be the first line); the command is the rest of the line
(``split(None, n)``) so it keeps its spaces. Python processes are counted; the ``%CPU`` of those
that look like training/serving work (not grep, not inductor compile workers, not resource
trackers or notebooks) becomes ``cpu.process_cpu_percent``. Note that ps ``%CPU`` is a lifetime
average, not a current reading.

The command line of an inference server (``vllm serve``, ``python -m
vllm.entrypoints.openai.api_server``, ``python -m sglang.launch_server``) gives ``inference.*``
facts from its flags (``--flag value`` and ``--flag=value``, ``-`` or ``_`` in the name); the first
server found wins. A truncated command line (``ps aux`` without ``ww``) gives what is left.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

from kb.parsers.base import (
    ParseResult,
    append_sample,
    set_fact,
    strip_ansi,
    to_float,
    trim,
)

NAME = "ps"

_HEADER = re.compile(r"^\s*(USER\s+)?PID\s+.*?(CMD|COMMAND|ARGS)\s*$")
# ps aux row without a header: USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND
_AUX_ROW = re.compile(
    r"^(\S+)\s+(\d+)\s+(\d+(?:[.,]\d+)?)\s+(\d+(?:[.,]\d+)?)\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\d+:\d+\s+(.+)$"
)
# -eo pid,pcpu,pmem,cmd without a header (-o pid= ...): only when the format is forced
_EO_ROW = re.compile(r"^\s*(\d+)\s+(\d+(?:[.,]\d+)?)\s+(\d+(?:[.,]\d+)?)\s+(\S.*)$")
_PYTHON = re.compile(r"(^|/)(python[\d.]*|torchrun|deepspeed|accelerate|vllm|ray::\S*)(\s|$)")
_HELPER = re.compile(
    r"grep\b|compile_worker|resource_tracker|jupyter|ipykernel|/bin/ps\b|^ps\s|multiprocessing\.spawn|semaphore_tracker"
)


_VLLM = re.compile(r"(?:^|[\s/])vllm(?:\s+serve\b|\.entrypoints\.openai\.api_server\b)")
_SGLANG = re.compile(r"\bsglang\.launch_server\b")
# flag (normalised: dashes) -> (fact, kind); kind: float, int, bool, str, true (presence means
# speculative decoding), not (presence means the fact is False)
_VLLM_FLAGS: dict[str, tuple[str, str]] = {
    "--gpu-memory-utilization": ("gpu_memory_utilization", "float"),
    "--max-num-seqs": ("max_num_seqs", "int"),
    "--max-num-batched-tokens": ("max_num_batched_tokens", "int"),
    "--max-model-len": ("max_model_len", "int"),
    "--enable-chunked-prefill": ("enable_chunked_prefill", "bool"),
    "--no-enable-chunked-prefill": ("enable_chunked_prefill", "not"),
    "--enable-prefix-caching": ("enable_prefix_caching", "bool"),
    "--no-enable-prefix-caching": ("enable_prefix_caching", "not"),
    "--enforce-eager": ("enforce_eager", "bool"),
    "--quantization": ("quantization", "str"),
    "-q": ("quantization", "str"),
    "--speculative-model": ("speculative", "true"),
    "--speculative-config": ("speculative", "true"),
    "--tensor-parallel-size": ("tensor_parallel_size", "int"),
    "-tp": ("tensor_parallel_size", "int"),
}
_SGLANG_FLAGS: dict[str, tuple[str, str]] = {
    "--mem-fraction-static": ("gpu_memory_utilization", "float"),
    "--max-running-requests": ("max_num_seqs", "int"),
    "--max-prefill-tokens": ("max_num_batched_tokens", "int"),
    "--context-length": ("max_model_len", "int"),
    "--chunked-prefill-size": ("enable_chunked_prefill", "chunk"),
    "--disable-radix-cache": ("enable_prefix_caching", "not"),
    "--disable-cuda-graph": ("enforce_eager", "bool"),
    "--quantization": ("quantization", "str"),
    "--speculative-algorithm": ("speculative", "true"),
    "--speculative-draft-model-path": ("speculative", "true"),
    "--tp-size": ("tensor_parallel_size", "int"),
    "--tp": ("tensor_parallel_size", "int"),
}
_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _int(text: str) -> int | None:
    """``4096``, ``32k``, ``1M`` (vLLM accepts k/m suffixes for lengths)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip())
    if not m:
        return None
    scale = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}[m.group(2)]
    return int(float(m.group(1)) * scale)


def server_flags(cmd: str) -> dict[str, Any]:
    """``inference.*`` facts from a vLLM / SGLang server command line ({} for other commands)."""
    if _VLLM.search(cmd):
        engine, table = "vllm", _VLLM_FLAGS
    elif _SGLANG.search(cmd):
        engine, table = "sglang", _SGLANG_FLAGS
    else:
        return {}
    try:
        argv = shlex.split(cmd)
    except ValueError:  # an unbalanced quote in a truncated command line
        argv = cmd.split()
    out: dict[str, Any] = {"engine": engine}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            continue
        name, eq, value = arg.partition("=")
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        spec = table.get(name)
        if spec is None:
            continue
        fact, kind = spec
        has_next = i < len(argv) and not argv[i].startswith("-")
        if kind in ("bool", "not", "true"):
            flag = True
            word = value if eq else (argv[i] if has_next and argv[i].lower() in _BOOL_WORDS else None)
            if word is not None:
                flag = _BOOL_WORDS.get(word.lower(), True)
                if not eq:
                    i += 1
            if kind == "true":
                flag = True
            out.setdefault(fact, (not flag) if kind == "not" else flag)
            continue
        if not eq:
            if i >= len(argv):
                continue
            value = argv[i]
            i += 1
        if kind == "float":
            v = to_float(value)
            if v is not None and 0 < v <= 1:
                out.setdefault(fact, v)
        elif kind == "int":
            n = _int(value)
            if n is not None:
                out.setdefault(fact, n)
        elif kind == "chunk":
            n = _int(value.lstrip("-")) if value.strip() else None
            if n is not None:
                out.setdefault(fact, not value.strip().startswith("-") and n > 0)
        elif value:
            out.setdefault(fact, value)
    return out


def sniff(head: str) -> bool:
    """A ps header with PID and %CPU, or rows in ps aux shape."""
    lines = strip_ansi(head).splitlines()[:50]
    for line in lines:
        if _HEADER.match(line) and ("%CPU" in line or line.split()[0] == "PID"):
            return True
    return sum(1 for line in lines if _AUX_ROW.match(line)) >= 2


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Count python processes and collect their ``%CPU``."""
    res = ParseResult(format=NAME, source=source)
    facts = res.facts
    columns: list[str] | None = None
    python = 0
    rows = 0
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if not line.strip():
            continue
        if _HEADER.match(line):
            columns = line.split()
            continue
        pcpu: float | None
        if columns is not None:
            fields = line.split(None, len(columns) - 1)
            if len(fields) != len(columns) or not fields[columns.index("PID")].isdigit():
                continue
            row = dict(zip(columns, fields))
            cmd = row.get("CMD", row.get("COMMAND", row.get("ARGS", "")))
            pcpu = to_float(row["%CPU"]) if "%CPU" in row else None
        else:
            m = _AUX_ROW.match(line)
            if m:
                cmd, pcpu = m.group(5), to_float(m.group(3))
            else:
                m = _EO_ROW.match(line)
                if not m:
                    continue
                cmd, pcpu = m.group(4), to_float(m.group(2))
        rows += 1
        cmd = cmd.strip()
        if cmd.startswith("[") or not _PYTHON.search(cmd.split(" ", 1)[0] + " ") and not _PYTHON.search(cmd):
            continue
        if re.search(r"\bgrep\b", cmd):
            continue
        python += 1
        for key, value in server_flags(cmd).items():
            set_fact(facts, f"inference.{key}", value)
        if pcpu is not None and pcpu >= 0 and not _HELPER.search(cmd):
            append_sample(facts, "cpu.process_cpu_percent", pcpu)
    if rows:
        set_fact(facts, "cpu.python_processes", python)
    else:
        res.notes.append(f"{source}: no ps rows found")
    res.facts = trim(facts)
    return res
