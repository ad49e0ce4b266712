"""Every ps sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('ps_aux_grep_python.txt', 'ps', {'cpu': {'process_cpu_percent': [0.3, 91.7], 'python_processes': 4}}),
    ('ps_aux_late_header.txt', 'ps', {'cpu': {'python_processes': 0}}),
    ('ps_auxww.txt', 'ps', {'cpu': {'python_processes': 0}}),
    ('ps_eo_comm.txt', 'ps', {'cpu': {'python_processes': 0}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


PS_SERVERS = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.0   4364  3200 ?        Ss   09:12   0:00 /bin/bash /start.sh
root          57 98.3  3.1 92311412 8123456 ?    Rl   09:12  41:07 /usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-70B-Instruct --gpu-memory-utilization 0.92 --max-num-seqs=128 --max-model-len 32k --max_num_batched_tokens 8192 --enable-chunked-prefill --no-enable-prefix-caching --enforce-eager -q fp8 --speculative-config {"method":"ngram","num_speculative_tokens":4} -tp 4
root         912  0.1  0.0   6480  2304 pts/0    S+   10:01   0:00 grep --color=auto python
"""

PS_SGLANG = """\
  PID %CPU %MEM CMD
 4242 87.5  2.0 python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.85 --tp 2 --chunked-prefill-size -1 --disable-radix-cache --context-length 8192 --max-running-requests 64 --speculative-algorithm EAGLE
 4300  0.0  0.0 python -m vllm.entrypoints.openai.api_server --model other --tensor-parallel-size 8
"""


def test_vllm_serve_flags_become_inference_facts() -> None:
    from kb.parsers import ps

    facts = ps.parse(PS_SERVERS.splitlines(True), "ps.txt").facts
    assert facts["inference"] == {
        "engine": "vllm", "gpu_memory_utilization": 0.92, "max_num_seqs": 128, "max_model_len": 32000,
        "max_num_batched_tokens": 8192, "enable_chunked_prefill": True, "enable_prefix_caching": False,
        "enforce_eager": True, "quantization": "fp8", "speculative": True, "tensor_parallel_size": 4,
    }
    assert facts["cpu"]["python_processes"] == 1


def test_sglang_flags_and_first_server_wins() -> None:
    from kb.parsers import ps

    facts = ps.parse(PS_SGLANG.splitlines(True), "ps.txt").facts
    assert facts["inference"] == {
        "engine": "sglang", "gpu_memory_utilization": 0.85, "tensor_parallel_size": 2,
        "enable_chunked_prefill": False, "enable_prefix_caching": False, "max_model_len": 8192,
        "max_num_seqs": 64, "speculative": True,
    }


def test_api_server_module_and_other_commands() -> None:
    from kb.parsers.ps import server_flags

    assert server_flags("python -m vllm.entrypoints.openai.api_server --model m --enable-prefix-caching") == {
        "engine": "vllm", "enable_prefix_caching": True,
    }
    assert server_flags("python train.py --max-num-seqs 4") == {}
    assert server_flags("vllm serve m --enable-chunked-prefill=false --gpu-memory-utilization 1.5") == {
        "engine": "vllm", "enable_chunked_prefill": False,
    }
