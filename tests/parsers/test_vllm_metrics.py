"""Every vllm_metrics sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('metrics_sglang.prom', 'vllm_metrics', {'inference': {'engine': 'sglang', 'num_running': 0.0, 'kv_cache_usage': 0.0, 'output_tokens_per_s': 0.0}}),
    ('metrics_sglang_dp.prom', 'vllm_metrics', {'inference': {'engine': 'sglang', 'num_waiting': 0.0, 'output_tokens_per_s': 177.17852687347417}}),
    ('metrics_v0.prom', 'vllm_metrics', {'inference': {'engine': 'vllm', 'ttft_ms_p50': 19.508929, 'ttft_ms_p99': 39.973737}}),
    ('metrics_v0_hist_tail.prom', 'vllm_metrics', {'inference': {'engine': 'vllm', 'ttft_ms_p50': 3750.0, 'ttft_ms_p99': 7425.0}}),
    ('metrics_v1.prom', 'vllm_metrics', {'inference': {'engine': 'vllm', 'kv_cache_usage': 9.75010481363281e-06, 'prefix_cache_hit_rate': 0.0}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


def test_quantile_interpolates_inside_the_bucket() -> None:
    from kb.parsers.vllm_metrics import quantile

    buckets = [(0.01, 0.0), (0.02, 50.0), (0.04, 100.0), (float("inf"), 100.0)]
    assert quantile(0.5, buckets) == 0.02
    assert quantile(0.75, buckets) == 0.03
    assert quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None
    assert quantile(0.99, [(1.0, 10.0), (float("inf"), 100.0)]) == 1.0  # in +Inf: largest bound


def test_v1_histograms_counters_and_engines_sum() -> None:
    from kb.parsers import vllm_metrics

    text = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 5.0
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.9
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.1
vllm:num_preemptions_total{engine="0",model_name="m"} 4.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 200.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 50.0
vllm:inter_token_latency_seconds_bucket{le="0.01",model_name="m"} 10.0
vllm:inter_token_latency_seconds_bucket{le="0.02",model_name="m"} 30.0
vllm:inter_token_latency_seconds_bucket{le="+Inf",model_name="m"} 30.0
vllm:request_time_per_output_token_seconds_bucket{le="0.05",model_name="m"} 2.0
vllm:request_time_per_output_token_seconds_bucket{le="+Inf",model_name="m"} 2.0
vllm:request_time_per_output_token_seconds_created{model_name="m"} 1.7e+09
vllm:request_prompt_tokens_sum{model_name="m"} 1000.0
vllm:request_prompt_tokens_count{model_name="m"} 4.0
"""
    res = vllm_metrics.parse(text.splitlines(True), "m")
    assert res.facts == {"inference": {
        "engine": "vllm", "num_running": 8.0, "num_waiting": 7.0, "kv_cache_usage": 0.9, "preemptions": 4,
        "prefix_cache_hit_rate": 0.25, "tpot_ms_p50": 25.0, "tpot_ms_p99": 49.5, "itl_ms_p50": 12.5,
        "mean_prompt_tokens": 250.0,
    }}


@pytest.mark.parametrize(("line", "want"), [
    # SGLang scheduler_metrics_mixin.log_decode_stats (0.4+: with "cuda graph")
    ("[2025-07-01 10:00:05 DP0 TP0] Decode batch. #running-req: 400, #token: 90000, token usage: 0.41, "
     "cuda graph: False, gen throughput (token/s): 512.00, #queue-req: 3, ",
     {"engine": "sglang", "num_running": 400.0, "num_waiting": 3.0, "kv_cache_usage": 0.41,
      "output_tokens_per_s": 512.0, "decode_cuda_graph": False}),
    # older SGLang: no "cuda graph" field
    ("[2024-09-01 10:00:05 TP0] Decode batch. #running-req: 1, #token: 89, token usage: 0.00, "
     "gen throughput (token/s): 29.41, #queue-req: 0",
     {"engine": "sglang", "num_running": 1.0, "num_waiting": 0.0, "kv_cache_usage": 0.0,
      "output_tokens_per_s": 29.41}),
    # hybrid (SWA) models: the full-attention pool's usage, not the sliding window's
    ("Decode batch. #running-req: 8, #full token: 5000, full token usage: 0.20, #swa token: 900, "
     "swa token usage: 0.90, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 0",
     {"engine": "sglang", "num_running": 8.0, "num_waiting": 0.0, "kv_cache_usage": 0.2,
      "output_tokens_per_s": 300.0, "decode_cuda_graph": True}),
    # near-miss: a prefill line is no decode stats
    ("Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
     "#queue-req: 0", None),
])
def test_sglang_decode_stats_lines(line: str, want: dict | None) -> None:
    from kb.parsers.vllm_metrics import sglang_decode_line

    assert sglang_decode_line(line) == want


def test_one_eager_decode_batch_is_enough() -> None:
    from kb.parsers import training_log

    text = ("Decode batch. #running-req: 400, #token: 1, token usage: 0.41, cuda graph: False, "
            "gen throughput (token/s): 512.00, #queue-req: 3\n"
            "Decode batch. #running-req: 40, #token: 1, token usage: 0.05, cuda graph: True, "
            "gen throughput (token/s): 900.00, #queue-req: 0\n")
    facts = training_log.parse(text.splitlines(True), "t").facts
    assert facts["inference"]["decode_cuda_graph"] is False
    assert facts["inference"]["num_running"] == 40.0  # the last line's state


@pytest.mark.parametrize(("line", "want"), [
    # vLLM V1's start-up (vllm/v1/core/kv_cache_utils.py, numbers with thousands separators)
    ("(EngineCore_0 pid=52) INFO 06-28 06:11:45 [kv_cache_utils.py:829] GPU KV cache size: 17,840 tokens",
     {"oom.kv_cache_capacity_tokens": 17840}),
    ("INFO 06-28 06:11:45 [kv_cache_utils.py:833] Maximum concurrency for 131,072 tokens per request: 0.14x",
     {"inference.max_model_len": 131072}),
    # SGLang's memory pool (python/sglang/srt/mem_cache/memory_pool.py)
    ("[2025-02-23 06:02:40 TP0] KV Cache is allocated. #tokens: 1526178, K size: 20.96 GB, V size: 20.96 GB",
     {"oom.kv_cache_capacity_tokens": 1526178}),
    # vLLM refusing to start (vllm/v1/core/kv_cache_utils.py; the older worker check): both sizes
    ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
     "stored in KV cache (7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
     {"inference.max_model_len": 32768, "oom.kv_cache_capacity_tokens": 7344}),
    ("ERROR 07-11 06:23:05 [core.py:390] ValueError: To serve at least one request with the models's max seq "
     "len (118000), (6.30 GiB KV cache is needed, which is larger than the available KV cache memory (6.11 GiB). "
     "Based on the available memory, the estimated maximum model length is 114432. Try increasing",
     {"inference.max_model_len": 118000, "oom.kv_cache_capacity_tokens": 114432}),
    # near-miss: the V1 refusal without its estimate (printed only when one fits at all)
    ("ValueError: To serve at least one request with the model's max seq len (4096), (0.58 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (0.00 GiB). Try increasing", None),
    # near-misses: vLLM V0's blocks (their tokens depend on a block size it does not print) and
    # the periodic usage line
    ("INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: 1638", None),
    ("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.4 tokens/s, Running: 1 reqs, "
     "GPU KV cache usage: 0.3%", None),
])
def test_kv_cache_size_at_start_up(line: str, want: dict | None) -> None:
    from kb.parsers.vllm_metrics import kv_capacity_line

    assert kv_capacity_line(line) == want


def test_a_kv_cache_smaller_than_one_request_is_found_in_the_log() -> None:
    # a start-up log whose KV cache cannot hold one request of the engine's max model length
    import kb

    log = ("INFO 06-28 06:11:40 [core.py:75] Initializing a V1 LLM engine (v0.9.1) with config: "
           "model='meta-llama/Llama-3.1-8B-Instruct', max_seq_len=131072\n"
           "INFO 06-28 06:11:45 [kv_cache_utils.py:829] GPU KV cache size: 17,840 tokens\n"
           "INFO 06-28 06:11:45 [kv_cache_utils.py:833] Maximum concurrency for 131,072 tokens per request: 0.14x\n")
    rep = kb.diagnose(inputs=[log])
    assert [f.cause_id for f in rep.findings] == ["oom.kv_cache_max_model_len"]
    # near-miss: the same engine with room for eight such requests is healthy on this count
    ok = log.replace("17,840", "1,048,576").replace("0.14x", "8.00x")
    assert "oom.kv_cache_max_model_len" not in [f.cause_id for f in kb.diagnose(inputs=[ok]).findings]


@pytest.mark.parametrize(("line", "stalled"), [
    # vLLM V0's periodic stats (vllm/engine/metrics.py): a request held, not one token in the interval
    ("INFO 11-23 19:12:45 llm_engine.py:624] Avg prompt throughput: 0.0 tokens/s, Avg generation "
     "throughput: 0.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
     "1.4%, CPU KV cache usage: 0.0%", True),
    # V1 (vllm/v1/metrics/loggers.py): the same counts after the engine's index
    ("(APIServer pid=1) INFO 09-07 06:35:50 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 "
     "tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache "
     "usage: 2.1%, Prefix cache hit rate: 0.0%", True),
    # near-misses: an idle server (nothing running), a long prompt being prefilled, a decode
    ("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, "
     "Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%", False),
    ("Avg prompt throughput: 8123.4 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 1 reqs, "
     "Pending: 0 reqs, GPU KV cache usage: 9.5%", False),
    ("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.4 tokens/s, Running: 1 reqs, "
     "GPU KV cache usage: 0.3%", False),
])
def test_requests_held_without_a_token_are_no_progress(line: str, stalled: bool) -> None:
    from kb.parsers.vllm_metrics import stats_line

    assert stats_line(line).get("no_progress", False) is stalled


def test_an_engine_without_progress_is_not_called_healthy() -> None:
    import kb

    line = ("INFO 11-23 19:12:45 llm_engine.py:624] Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
            "usage: 1.4%, CPU KV cache usage: 0.0%\n")
    rep = kb.diagnose(inputs=[line])
    assert rep.status != "healthy" and rep.branches == ["inference"]
    assert rep.findings == []
