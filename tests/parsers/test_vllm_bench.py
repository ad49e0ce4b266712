"""Every vllm_bench sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('bench_sglang.txt', 'vllm_bench', {'inference': {'ttft_ms_p50': 6711.85, 'ttft_ms_p99': 15292.66, 'itl_ms_p50': 8584.2, 'itl_ms_p99': 13753.42, 'request_throughput': 4.18, 'output_tokens_per_s': 6.6, 'mean_prompt_tokens': 32767.53125, 'mean_output_tokens': 1.578125, 'engine': 'sglang'}}),
    ('bench_vllm_2025.txt', 'vllm_bench', {'inference': {'ttft_ms_p50': 201.98, 'ttft_ms_p99': 953.35, 'tpot_ms_p50': 108.15, 'tpot_ms_p99': 169.89, 'itl_ms_p50': 80.62, 'itl_ms_p99': 340.52, 'request_throughput': 2.34, 'output_tokens_per_s': 529.33, 'mean_prompt_tokens': 169.356218, 'mean_output_tokens': 226.151554}}),
    ('bench_vllm_goodput.txt', 'vllm_bench', {'inference': {'ttft_ms_p50': 136.7, 'ttft_ms_p99': 360.23, 'tpot_ms_p50': 14.77, 'request_throughput': 3.75, 'output_tokens_per_s': 5624.71, 'mean_prompt_tokens': 3496.01, 'mean_output_tokens': 1500.0, 'client_max_concurrency': 100}}),
    ('bench_vllm_serve_2026.txt', 'vllm_bench', {'inference': {'ttft_ms_p50': 2648.65, 'ttft_ms_p99': 4610.48, 'tpot_ms_p50': 51.75, 'tpot_ms_p99': 57.57, 'itl_ms_p50': 46.55, 'itl_ms_p99': 258.31, 'request_throughput': 0.77, 'output_tokens_per_s': 268.31, 'mean_prompt_tokens': 1023.0, 'mean_output_tokens': 350.0, 'failed_requests': 0}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


def test_the_clients_concurrency_cap() -> None:
    from kb.parsers.vllm_bench import parse

    # SGLang's bench_serving prints it inside the block; "not set" is no cap
    block = ("============ Serving Benchmark Result ============\n"
             "Backend:                                 sglang\n"
             "Max request concurrency:                 {}\n"
             "Successful requests:                     20\n"
             "Request throughput (req/s):              0.55\n"
             "==================================================\n")
    got = parse(block.format("4").splitlines(True), "b").facts
    assert got["inference"]["client_max_concurrency"] == 4
    got = parse(block.format("not set").splitlines(True), "b").facts
    assert "client_max_concurrency" not in got["inference"]
