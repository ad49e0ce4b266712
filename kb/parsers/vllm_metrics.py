"""vLLM (V0 and V1 names) and SGLang Prometheus ``/metrics`` exposition, vLLM's periodic
stats log lines (``Avg prompt throughput: ... Running: N reqs ...``) and SGLang's decode stats
lines (``Decode batch. #running-req: N, ... cuda graph: False, gen throughput (token/s): ...``).

Label sets are aggregated explicitly: running and waiting are summed over engines/ranks, KV
usage takes the max, histograms add their buckets by ``le`` before the quantile is computed by
linear interpolation inside the bucket (as Prometheus' ``histogram_quantile`` does). Counters
and histograms are cumulative since the server started: one scrape gives lifetime figures.
``*_created`` series are ignored.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kb.parsers.base import ParseResult, strip_ansi, trim

NAME = "vllm_metrics"

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+"
    r"(?P<value>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|NaN|\+Inf|-Inf|Inf))(?:\s+-?\d+)?\s*$"
)
_LE = re.compile(r'(?:^|,)\s*le="([^"]*)"')
#: vLLM's periodic stats (vllm/engine/metrics.py LoggingStatLogger; V1's loggers.py prefixes
#: "Engine 000: "): both throughputs over the logging interval, then the scheduler's counts
_STATS = re.compile(r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s")
_RUNNING = re.compile(r"Running: (\d+) reqs")
_WAITING = re.compile(r"(?:Pending|Waiting): (\d+) reqs")
_KV = re.compile(r"GPU KV cache usage: ([\d.]+)%")
_PREFIX_HIT = re.compile(r"Prefix cache hit rate: (?:GPU: )?([\d.]+)%")
#: SGLang's scheduler, log_decode_stats (python/sglang/srt/managers/scheduler_metrics_mixin.py;
#: scheduler.py before): "Decode batch. #running-req: 50, #token: 12000, token usage: 0.05,
#: cuda graph: False, gen throughput (token/s): 812.35, #queue-req: 0" ("cuda graph" since 0.4;
#: hybrid models print "full token usage")
_SG_DECODE = re.compile(r"Decode batch\. #running-req: (\d+), ")
_SG_FIELDS = (
    ("num_waiting", re.compile(r"#queue-req: (\d+)"), float),
    ("kv_cache_usage", re.compile(r", (?:full )?token usage: ([\d.]+)"), float),
    ("output_tokens_per_s", re.compile(r"gen throughput \(token/s\): ([\d.]+)"), float),
)
_SG_GRAPH = re.compile(r"cuda graph: (True|False)")

#: the KV cache a serving engine sized at start-up: vLLM V1 (vllm/v1/core/kv_cache_utils.py,
#: "GPU KV cache size: 17,840 tokens" then "Maximum concurrency for 131,072 tokens per request:
#: 0.14x", the second naming the engine's max model length) and SGLang
#: (python/sglang/srt/mem_cache/memory_pool.py: "KV Cache is allocated. #tokens: 17840, K size:
#: ..."). vLLM V0's "# GPU blocks: N" is left out: its tokens depend on a block size it does not print
_KV_SIZE = re.compile(r"GPU KV cache size: ([\d,]{1,15}) tokens")
_MAX_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]{1,15}) tokens per request: [\d.]+x")
_SG_KV_SIZE = re.compile(r"KV Cache is allocated\. #tokens: (\d{1,15})\b")
#: vLLM's start-up refusal, with both sizes (vllm/v1/core/kv_cache_utils.py and, older, the
#: worker's check): "The model's max seq len (32768) is larger than the maximum number of tokens
#: that can be stored in KV cache (7344)"; V1: "... max seq len (131072), (16.00 GiB KV cache is
#: needed, which is larger than the available KV cache memory (9.84 GiB). Based on the available
#: memory, the estimated maximum model length is 80608."
_KV_REFUSED_OLD = re.compile(r"max seq len \((\d{1,12})\) is larger than the \w+ number of tokens "
                             r"that can be stored in KV cache \((\d{1,12})\)")
_KV_REFUSED_V1 = re.compile(r"max seq len \((\d{1,12})\), \([\d.]+ GiB KV cache is needed, which is larger "
                            r"than the available KV cache memory \([\d.]+ GiB\)\. Based on the available "
                            r"memory, the estimated maximum model length is (\d{1,12})")

# (fact, [metric names in order of preference]) for histograms -> (p50 fact, p99 fact)
_HISTOGRAMS: tuple[tuple[str | None, str | None, tuple[str, ...]], ...] = (
    ("ttft_ms_p50", "ttft_ms_p99", ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")),
    ("tpot_ms_p50", "tpot_ms_p99", (
        "vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds",
        "sglang:time_per_output_token_seconds",
    )),
    ("itl_ms_p50", None, ("vllm:inter_token_latency_seconds", "sglang:inter_token_latency_seconds")),
)


def sniff(head: str) -> bool:
    """Exposition lines with ``vllm:`` / ``sglang:`` metric names."""
    return bool(re.search(r"^(# (HELP|TYPE) )?(vllm|sglang):\w+", head, re.M))


def stats_line(line: str) -> dict[str, Any] | None:
    """``inference.*`` facts from one periodic stats log line, or None if it is not one."""
    m = _STATS.search(line)
    if not m:
        return None
    out: dict[str, Any] = {"engine": "vllm", "output_tokens_per_s": float(m.group(2))}
    for key, rx, scale in (
        ("num_running", _RUNNING, 1.0), ("num_waiting", _WAITING, 1.0),
        ("kv_cache_usage", _KV, 0.01), ("prefix_cache_hit_rate", _PREFIX_HIT, 0.01),
    ):
        mm = rx.search(line)
        if mm:
            value = float(mm.group(1)) * scale
            out[key] = round(min(value, 1.0), 6) if scale != 1.0 else value
    if out.get("num_running", 0) >= 1 and float(m.group(1)) == 0 and float(m.group(2)) == 0:
        # requests held, and not one token prefilled or generated in the whole interval: no
        # step finished (kept once seen: the newest line's numbers do not clear it)
        out["no_progress"] = True
    return out


def kv_capacity_line(line: str) -> dict[str, Any] | None:
    """``{fact path: value}`` from a serving engine's start-up line that sizes its KV cache
    (``oom.kv_cache_capacity_tokens``, or ``inference.max_model_len`` from vLLM's concurrency
    line, or both from vLLM's refusal to start), or None if it is not one."""
    if "max seq len" in line:
        m = _KV_REFUSED_OLD.search(line) or _KV_REFUSED_V1.search(line)
        if m:
            return {"inference.max_model_len": int(m.group(1)),
                    "oom.kv_cache_capacity_tokens": int(m.group(2))}
    m = _KV_SIZE.search(line) or _SG_KV_SIZE.search(line)
    if m:
        return {"oom.kv_cache_capacity_tokens": int(m.group(1).replace(",", ""))}
    m = _MAX_CONCURRENCY.search(line)
    if m:
        return {"inference.max_model_len": int(m.group(1).replace(",", ""))}
    return None


def sglang_decode_line(line: str) -> dict[str, Any] | None:
    """``inference.*`` facts from one SGLang decode stats line, or None if it is not one."""
    m = _SG_DECODE.search(line)
    if not m:
        return None
    out: dict[str, Any] = {"engine": "sglang", "num_running": float(m.group(1))}
    for key, rx, conv in _SG_FIELDS:
        mm = rx.search(line, m.end())
        if mm:
            out[key] = conv(mm.group(1))
    if "kv_cache_usage" in out:
        out["kv_cache_usage"] = round(min(out["kv_cache_usage"], 1.0), 6)
    g = _SG_GRAPH.search(line, m.end())
    if g:
        out["decode_cuda_graph"] = g.group(1) == "True"
    return out


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Quantile ``q`` of a cumulative histogram ``[(upper_bound, count), ...]`` sorted by bound.

    Linear interpolation inside the bucket; the first bucket starts at 0; a quantile that falls
    in the ``+Inf`` bucket returns the largest finite bound. Without a ``+Inf`` bucket (a cut
    scrape) the last bucket's count is taken as the total.
    """
    if not buckets:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return prev_bound
            if count == prev_count:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / (count - prev_count)
        prev_bound, prev_count = bound, count
    return prev_bound


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Map exposition samples (and stats log lines) to ``inference.*`` facts."""
    res = ParseResult(format=NAME, source=source)
    values: dict[str, list[float]] = defaultdict(list)
    hist: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    stats: dict[str, Any] = {}
    bad = 0
    for raw in lines:
        line = strip_ansi(raw).strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            st = stats_line(line)
            if st:
                stats.update(st)  # the newest stats line describes the current state
            else:
                bad += 1
            continue
        name = m.group("name")
        if name.endswith("_created") or not name.startswith(("vllm:", "sglang:")):
            continue
        try:  # Prometheus numbers: a float, +Inf/-Inf or NaN; anything else is a bad line
            value = float(m.group("value").replace("Inf", "inf"))
        except ValueError:
            bad += 1
            continue
        if name.endswith("_bucket"):
            le = _LE.search(m.group("labels") or "")
            if le:
                try:
                    bound = float(le.group(1).replace("Inf", "inf"))
                except ValueError:  # a damaged bucket label: skip the bucket, keep the rest
                    bad += 1
                    continue
                hist[name[: -len("_bucket")]][bound] += value
            continue
        values[name].append(value)
    inf: dict[str, Any] = {}
    if values or hist:
        inf["engine"] = "sglang" if any(n.startswith("sglang:") for n in (*values, *hist)) else "vllm"
    _gauges(values, inf)
    for p50_key, p99_key, names in _HISTOGRAMS:
        for name in names:
            if name in hist:
                buckets = sorted(hist[name].items())
                for key, q in ((p50_key, 0.5), (p99_key, 0.99)):
                    v = quantile(q, buckets)
                    if key and v is not None:
                        inf[key] = round(v * 1000.0, 6)
                if not any(math.isinf(b) for b, _ in buckets):
                    res.notes.append(f"{source}: {name} has no +Inf bucket; the last bucket is taken as the total")
                break
    for fact, name in (("mean_prompt_tokens", "request_prompt_tokens"), ("mean_output_tokens", "request_generation_tokens")):
        s, c = sum(values.get(f"vllm:{name}_sum", [])), sum(values.get(f"vllm:{name}_count", []))
        if c > 0 and s >= 0:
            inf[fact] = round(s / c, 6)
    for k, v in stats.items():
        inf.setdefault(k, v)
    if inf:
        res.facts = trim({"inference": inf})
    if values or hist:
        res.notes.append(f"{source}: /metrics counters and histograms are lifetime totals since the server started")
    if bad:
        res.notes.append(f"{source}: {bad} line(s) that are not Prometheus samples were skipped")
    return res


def _first(values: dict[str, list[float]], *names: str) -> list[float] | None:
    for n in names:
        vs = [v for v in values.get(n, []) if not math.isnan(v)]
        if vs:
            return vs
    return None


def _gauges(values: dict[str, list[float]], inf: dict[str, Any]) -> None:
    running = _first(values, "vllm:num_requests_running", "sglang:num_running_reqs")
    if running:
        inf["num_running"] = sum(running)
    waiting = _first(values, "vllm:num_requests_waiting", "sglang:num_queue_reqs")
    if waiting:
        inf["num_waiting"] = sum(waiting)
    kv = _first(values, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage")
    if kv:
        inf["kv_cache_usage"] = min(max(max(kv), 0.0), 1.0)
    pre = _first(values, "vllm:num_preemptions_total", "vllm:num_preemptions")
    if pre:
        inf["preemptions"] = int(sum(pre))
    hit = _first(values, "vllm:gpu_prefix_cache_hit_rate")
    if hit:
        inf["prefix_cache_hit_rate"] = min(max(max(hit), 0.0), 1.0)
    else:
        hits = _first(values, "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
        queries = _first(values, "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
        if hits and queries and sum(queries) > 0:
            inf["prefix_cache_hit_rate"] = min(sum(hits) / sum(queries), 1.0)
        else:
            sg = _first(values, "sglang:cache_hit_rate")
            if sg:
                rate = max(sg)
                # early SGLang exported a percent (87.58), later a fraction
                inf["prefix_cache_hit_rate"] = min(rate / 100.0 if rate > 1.0 else rate, 1.0)
    tput = _first(values, "sglang:gen_throughput", "vllm:avg_generation_throughput_toks_per_s")
    if tput:
        inf["output_tokens_per_s"] = sum(tput)
