"""Split pasted text into regions of known tool output; the rest is log.

A region starts at a line that only that tool prints and extends over the lines that tool's
output is made of; it is kept only when the tool's own parser's ``sniff`` accepts it (so the
parsers decide what they read, not this module). One pass, each line looked at a constant
number of times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kb.parsers import (config_file, free, gpustat, iostat, memory_stats, nccl_tests, nvidia_smi, nvidia_smi_dmon, nvidia_smi_topo,
                        ps, py_spy, vllm_bench, vllm_metrics)
from kb.parsers.base import strip_ansi

#: lines one region may span (a table or a dump of a few hundred threads is far shorter)
MAX_REGION_LINES = 20_000


@dataclass
class Region:
    """Lines ``start:end`` of the text, in format ``fmt`` (a kb.parsers format name)."""

    fmt: str
    start: int
    end: int


# -- line shapes ---------------------------------------------------------------------------------
def _boxed(s: str) -> bool:
    """A line of a box-drawn table (nvidia-smi's default view, torch.cuda.memory_summary())."""
    return s.startswith(("|", "+")) and len(s) > 2


# iostat (sysstat iostat.c): avg-cpu / Device header, numeric rows, a "Linux <ver> (<host>) ... (N CPU)"
# banner and per-report timestamps (-t)
_NUMS = re.compile(r"^\s*[\d.,]+(\s+[\d.,]+)+\s*$")
_DEV_ROW = re.compile(r"^\S+\s+[\d.,]+(\s+[\d.,]+){2,}\s*$")
_IOSTAT_START = re.compile(r"^(avg-cpu:\s+%user|(\[[^\]]*\])?Device:?\s+.*(r/s|tps))|^Linux \S+ \([^)]*\)\s.*\(\d+ CPU\)")
_IOSTAT_TIME = re.compile(r"^\d{2}/\d{2}/\d{2,4}\s+\d{1,2}:\d{2}:\d{2}|^\d{4}-\d{2}-\d{2}T")
# py-spy dump (src/dump.rs: "Process N: cmd", "Thread 0x.. (active)", indented frames) and
# faulthandler ("Thread 0x... (most recent call first):", Python/faulthandler.c)
_PYSPY_START = re.compile(r"^(Process \d+: |Thread (0x[0-9A-Fa-f]+|\d+) \(|(Current thread|Thread) 0x[0-9A-Fa-f]+ \(most recent call first\):)")
_PYSPY_LINE = re.compile(r"^(Python v\d|Thread |Process \d+|Current thread |\s+\S)")
# Prometheus text exposition: https://prometheus.io/docs/instrumenting/exposition_formats/
_PROM = re.compile(r"^(# (HELP|TYPE) [a-zA-Z_:][\w:]*( .*)?|[a-zA-Z_:][\w:]*(\{[^}]*\})?\s+[-+\w.]+(\s+\d+)?)\s*$")
# nvidia-smi dmon: a "# gpu sm mem ..." header then numeric rows (nvidia-smi(1) man page)
_DMON_HEAD = re.compile(r"^\s*#\s*(gpu|Idx|Date|Time)\b")
_DMON_ROW = re.compile(r"^\s*(\d{8}\s+)?(\d{2}:\d{2}:\d{2}\s+)?\d+\s+[-\d]")
# procps ps: "USER PID %CPU ..." (aux) or "PID ... CMD" (-eo) headers, then rows
_PS_HEAD = re.compile(r"^\s*(USER\s+)?PID\s+.*(%CPU|CMD|COMMAND)")
_PS_ROW = re.compile(r"^\s*\S+\s+\d+\s+[\d.]+\s+[\d.]+\s")
# nvidia-smi --query-gpu=... --format=csv: a header of query field names (nvidia-smi --help-query-gpu)
_CSV_HEAD = re.compile(r"^\s*(index|name|timestamp|pci\.bus_id|utilization\.gpu|memory\.\w+|uuid|pid)(\s*\[[^\]]*\])?\s*,")


def _extent(lines: list[str], i: int, keep: Callable[[str], bool], blank_ok: int = 1) -> int:
    """End of the run of lines from ``i`` that ``keep`` accepts (up to ``blank_ok`` blank lines
    in a row inside the run; trailing blank lines are not part of it)."""
    end = j = i + 1
    blanks = 0
    while j < len(lines) and j - i < MAX_REGION_LINES:
        s = lines[j]
        if not s.strip():
            blanks += 1
            if blanks > blank_ok:
                break
        elif keep(s):
            blanks = 0
            end = j + 1
        else:
            break
        j += 1
    return end


def _bench_end(lines: list[str], i: int) -> int:
    # the vLLM / SGLang result block ends with a rule of '=' (benchmarks/benchmark_serving.py)
    for j in range(i + 1, min(len(lines), i + 80)):
        s = lines[j].strip()
        if len(s) >= 10 and set(s) == {"="}:
            return j + 1
    return min(len(lines), i + 80)


def _try(fmt_sniff: Callable[[str], bool], lines: list[str], start: int, end: int) -> bool:
    try:
        return bool(fmt_sniff("\n".join(lines[start:min(end, start + 2000)])))
    except Exception:  # noqa: BLE001 - a sniff must never stop the reader
        return False


def find_regions(raw: list[str]) -> list[Region]:
    """Known tool-output regions of ``raw`` (lines), in order, not overlapping."""
    lines = [strip_ansi(x).rstrip("\r\n") for x in raw]
    out: list[Region] = []
    i = 0
    n = len(lines)
    # the lines a config was looked for in (and none found): none starts inside them
    no_config_before = 0
    configs = 0
    while i < n:
        s = lines[i]
        st = s.strip()
        got: Region | None = None
        if "Serving Benchmark Result" in s:
            got = Region(vllm_bench.NAME, i, _bench_end(lines, i))
        elif nccl_tests.is_start(s):
            # NCCL INFO lines between its parts (NCCL_DEBUG=INFO) end a region: they are log
            end = _extent(lines, i, nccl_tests.is_line, blank_ok=2)
            got = Region(nccl_tests.NAME, i, end)
        elif _boxed(st):
            end = _extent(lines, i, lambda x: _boxed(x.strip()) or "NVIDIA-SMI" in x)
            for parser in (memory_stats, nvidia_smi):
                if _try(parser.sniff, lines, i, end):
                    got = Region(parser.NAME, i, end)
                    break
            if got is None:
                i = end
                continue
        elif "PyTorch CUDA memory summary" in s or memory_stats.sniff(s):
            got = Region(memory_stats.NAME, i, _extent(lines, i, lambda x: _boxed(x.strip())))
        elif _IOSTAT_START.search(st):
            end = _extent(lines, i, lambda x: bool(_IOSTAT_START.search(x.strip()) or _NUMS.match(x)
                                                   or _DEV_ROW.match(x.strip()) or _IOSTAT_TIME.match(x.strip())),
                          blank_ok=2)  # iostat separates its reports with blank lines
            if _try(iostat.sniff, lines, i, end):
                got = Region(iostat.NAME, i, end)
        elif _PYSPY_START.match(s):
            end = _extent(lines, i, lambda x: bool(_PYSPY_LINE.match(x)))
            if _try(py_spy.sniff, lines, i, end):
                got = Region(py_spy.NAME, i, end)
        elif _DMON_HEAD.match(s):
            end = _extent(lines, i, lambda x: bool(_DMON_HEAD.match(x) or _DMON_ROW.match(x)))
            if _try(nvidia_smi_dmon.sniff, lines, i, end):
                got = Region(nvidia_smi_dmon.NAME, i, end)
        elif nvidia_smi_topo.is_head(s):
            end = _extent(lines, i, nvidia_smi_topo.in_matrix, blank_ok=0)
            if end > i + 1:
                got = Region(nvidia_smi_topo.NAME, i, end)
        elif gpustat.is_row(s) or (gpustat.is_header(s) and i + 1 < n and gpustat.is_row(lines[i + 1])):
            end = _extent(lines, i if gpustat.is_row(s) else i + 1, gpustat.in_output, blank_ok=0)
            got = Region(gpustat.NAME, i, end)
        elif free.is_head(s):
            end = _extent(lines, i, free.in_table, blank_ok=0)
            if end > i + 1:
                got = Region(free.NAME, i, end)
        elif _PS_HEAD.match(s):
            end = _extent(lines, i, lambda x: bool(_PS_ROW.match(x)), blank_ok=0)
            if _try(ps.sniff, lines, i, end):
                got = Region(ps.NAME, i, end)
        elif _CSV_HEAD.match(s):
            commas = s.count(",")
            end = _extent(lines, i, lambda x: x.count(",") == commas, blank_ok=0)
            if _try(nvidia_smi.sniff, lines, i, end):
                got = Region(nvidia_smi.NAME, i, end)
        elif _PROM.match(st) and (st.startswith("# ") or ":" in st.split("{")[0]):
            end = _extent(lines, i, lambda x: bool(_PROM.match(x.strip())))
            if end - i >= 2 and _try(vllm_metrics.sniff, lines, i, end):
                got = Region(vllm_metrics.NAME, i, end)
        # (a YAML line "compute_environment: LOCAL_MACHINE" also has a metric's shape)
        if got is None and i >= no_config_before and configs < config_file.MAX_CONFIGS and (
                st.startswith("{") or config_file.may_start(s)):
            end, ok = config_file.block_end(lines, i)
            if ok:
                got = Region(config_file.NAME, config_file.lead(lines, i, out[-1].end if out else 0), end)
                configs += 1
            else:
                no_config_before = end
        if got is None:
            i += 1
            continue
        prev = out[-1] if out else None
        if prev is not None and prev.fmt == got.fmt != config_file.NAME and \
                not any(x.strip() for x in lines[prev.end:got.start]):
            prev.end = got.end  # one output split by blank lines (py-spy processes, iostat reports)
        else:
            out.append(got)
        i = max(got.end, i + 1)
    return out
