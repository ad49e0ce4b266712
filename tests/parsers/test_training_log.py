"""Every training_log sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('loss_anomaly_new.log', 'training_log', {'numerics': {'anomaly_op': 'MmBackward0'}}),
    ('loss_anomaly_old.log', 'training_log', {'numerics': {'anomaly_op': 'MulBackward0'}}),
    ('loss_apex_overflow_1.log', 'training_log', {'numerics': {'loss_scale': [32768.0, 16384.0, 8192.0], 'skipped_steps': 3, 'consecutive_skipped_steps': 3}}),
    ('loss_apex_overflow_2.log', 'training_log', {'numerics': {'loss_scale': [2.0, 1.0, 0.5], 'skipped_steps': 3, 'consecutive_skipped_steps': 3}}),
    ('loss_deepspeed_overflow.log', 'training_log', {'numerics': {'loss_scale': [32768.0, 16384.0, 8192.0], 'skipped_steps': 4, 'consecutive_skipped_steps': 4}}),
    ('loss_deepspeed_tqdm.log', 'training_log', {'numerics': {'loss_scale': [32.0], 'skipped_steps': 1, 'consecutive_skipped_steps': 1}}),
    ('loss_fairseq_overflow.log', 'training_log', {'numerics': {'loss': [9.44], 'grad_norm': [156.036], 'loss_scale': [0.0, 0.00048828125, 0.000244140625], 'skipped_steps': 2, 'consecutive_skipped_steps': 2}}),
    ('loss_hf_dict_nan.log', 'training_log', {'numerics': {'loss': [0.2051, 0.0, 0.0], 'grad_norm': [NAN, NAN, NAN], 'learning_rate': [9.774074342405685e-06, 9.773696745450087e-06, 9.773318840518906e-06], 'nonfinite_count': 3, 'nan_source': 'grad'}}),
    ('loss_megatron_bad_gradnorm.log', 'training_log', {'numerics': {'grad_norm': [0.794, NAN], 'learning_rate': [6.245e-06, 6.245e-06], 'loss_scale': [1.0, 1.0], 'skipped_steps': 1, 'consecutive_skipped_steps': 1, 'nonfinite_count': 1, 'nan_source': 'grad'}, 'training': {'step_time_ms': [6956.6, 8295.0]}}),
    ('loss_megatron_nan.log', 'training_log', {'numerics': {'grad_norm': [NAN, NAN], 'learning_rate': [0.0002999, 0.0002999], 'loss_scale': [1.0, 1.0], 'nonfinite_count': 2, 'nan_source': 'grad'}, 'training': {'step_time_ms': [4247.9, 4225.8], 'seq_len': 2048}}),
    ('nccl_debug_channels_gdr.log', 'training_log', {'distributed': {'backend': 'nccl', 'transports': ['IB'], 'inter_node_transport': 'IB'}}),
    ('nccl_debug_ib_plugin.log', 'training_log', {'distributed': {'backend': 'nccl', 'ib_hardware_present': True, 'transports': ['IB'], 'inter_node_transport': 'IB'}, 'env': {'NCCL_SOCKET_IFNAME': 'bond0'}}),
    ('nccl_debug_init_timings.log', 'training_log', {'distributed': {'backend': 'nccl', 'world_size': 8, 'init_seconds': 55.17, 'transports': ['P2P'], 'intra_node_transport': 'P2P'}}),
    ('nccl_debug_nvls.log', 'training_log', {'distributed': {'backend': 'nccl', 'transports': ['NVLS'], 'nvlink_present': True, 'intra_node_transport': 'NVLS'}}),
    ('nccl_debug_socket.log', 'training_log', {'distributed': {'backend': 'nccl', 'nccl_versions': ['2.19.3'], 'ib_hardware_present': False, 'transports': ['Socket'], 'inter_node_transport': 'Socket', 'world_size': 1}}),
    ('nccl_distbackenderror.log', 'training_log', {'distributed': {'backend': 'nccl', 'watchdog_timeout': True, 'timeout_op': '_ALLGATHER_BASE', 'timeout_seq': 9141, 'timeout_ms': 600000.0, 'elapsed_ms': 600020.0, 'errors': ['watchdog_timeout'], 'rank_states': [{'rank': 5, 'collective': '_ALLGATHER_BASE', 'seq': 9141}]}}),
    ('nccl_fr_stack.log', 'training_log', {'distributed': {'backend': 'nccl'}}),
    ('nccl_heartbeat_wrapped.log', 'training_log', {'distributed': {'backend': 'nccl', 'errors': ['heartbeat_timeout']}}),
    ('nccl_warn_socket.log', 'training_log', {'distributed': {'backend': 'nccl', 'errors': ['nccl_warn']}}),
    ('nccl_watchdog_2_0.log', 'training_log', {'distributed': {'backend': 'nccl', 'watchdog_timeout': True, 'timeout_op': 'BROADCAST', 'timeout_seq': 880, 'timeout_ms': 1800000.0, 'elapsed_ms': 1800648.0, 'errors': ['watchdog_timeout'], 'rank_states': [{'rank': 2, 'collective': 'BROADCAST', 'seq': 880}, {'rank': 3, 'collective': 'BROADCAST', 'seq': 880}, {'rank': 4, 'collective': 'BROADCAST', 'seq': 880}, {'rank': 6, 'collective': 'BROADCAST', 'seq': 880}]}}),
    ('nccl_watchdog_2_4.log', 'training_log', {'distributed': {'backend': 'nccl', 'watchdog_timeout': True, 'timeout_op': '_REDUCE_SCATTER_BASE', 'timeout_seq': 7753, 'timeout_ms': 600000.0, 'elapsed_ms': 600061.0, 'errors': ['watchdog_timeout'], 'rank_states': [{'rank': 0, 'collective': '_REDUCE_SCATTER_BASE', 'seq': 7753}, {'rank': 3, 'collective': '_REDUCE_SCATTER_BASE', 'seq': 7753}, {'rank': 4, 'collective': '_REDUCE_SCATTER_BASE', 'seq': 7753}]}}),
    ('nccl_watchdog_2_7_fr.log', 'training_log', {'distributed': {'backend': 'nccl', 'watchdog_timeout': True, 'timeout_op': 'ALLREDUCE', 'timeout_seq': 460631, 'timeout_ms': 600000.0, 'elapsed_ms': 600020.0, 'errors': ['watchdog_timeout'], 'rank_states': [{'rank': 7, 'collective': 'ALLREDUCE', 'seq': 460631}]}}),
    ('nccl_watchdog_tqdm.log', 'training_log', {'distributed': {'backend': 'nccl'}}),
    ('oom_1_10_hint.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 74.0, 'total_capacity_mib': 12195.84, 'free_mib': 12.94, 'allocated_mib': 11048.96, 'reserved_mib': 11479.04, 'reserved_unallocated_mib': 430.08, 'reserved_unallocated_fraction': 0.035264}}),
    ('oom_1_2_cached.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 26.0, 'total_capacity_mib': 1024.0, 'free_mib': 24.17, 'allocated_mib': 435.61, 'reserved_mib': 462.0, 'reserved_unallocated_mib': 26.39, 'reserved_unallocated_fraction': 0.025771}}),
    ('oom_1_5_reserved.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 512.0, 'total_capacity_mib': 16281.6, 'free_mib': 415.88, 'allocated_mib': 13445.12, 'reserved_mib': 15155.2, 'reserved_unallocated_mib': 1710.08, 'reserved_unallocated_fraction': 0.105031}}),
    ('oom_2_1_capacty.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 3072.0, 'total_capacity_mib': 24217.6, 'free_mib': 1699.84, 'allocated_mib': 12380.16, 'reserved_mib': 17336.32, 'reserved_unallocated_mib': 4956.16, 'reserved_unallocated_fraction': 0.204651}}),
    ('oom_2_2.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 22.0, 'total_capacity_mib': 24217.6, 'free_mib': 11.06, 'allocated_mib': 23449.6, 'reserved_mib': 23644.47, 'reserved_unallocated_mib': 194.87, 'reserved_unallocated_fraction': 0.008047}}),
    ('oom_fairseq_wrapped.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 246.0, 'total_capacity_mib': 32512.0, 'free_mib': 460.38, 'allocated_mib': 26624.0, 'reserved_mib': 28549.12, 'reserved_unallocated_mib': 1925.12, 'reserved_unallocated_fraction': 0.059213}}),
    ('oom_single_space.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 20.0, 'total_capacity_mib': 4096.0, 'free_mib': 2406.4, 'allocated_mib': 825.15, 'reserved_mib': 850.0, 'reserved_unallocated_mib': 24.85, 'reserved_unallocated_fraction': 0.006067}}),
    ('oom_thc.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'phase': 'backward'}}),
    ('oom_vllm_private_pools.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 50.0, 'total_capacity_mib': 24125.44, 'free_mib': 21.75, 'allocated_mib': 23429.12, 'reserved_mib': 23704.5, 'reserved_unallocated_mib': 275.38, 'reserved_unallocated_fraction': 0.011415}}),
    ('oom_zero_free.log', 'training_log', {'oom': {'occurred': True, 'count': 1, 'tried_to_allocate_mib': 1002.0, 'total_capacity_mib': 8192.0, 'free_mib': 0.0, 'allocated_mib': 14315.52, 'reserved_mib': 14445.0, 'reserved_unallocated_mib': 129.48, 'reserved_unallocated_fraction': 0.015806}}),
    ('vllm_stats_v0.log', 'training_log', {'inference': {'engine': 'vllm', 'output_tokens_per_s': 69.1, 'num_running': 4.0, 'num_waiting': 0.0, 'kv_cache_usage': 0.156}}),
    ('vllm_stats_v1.log', 'training_log', {'inference': {'engine': 'vllm', 'output_tokens_per_s': 1055.3, 'num_running': 18.0, 'num_waiting': 43.0, 'kv_cache_usage': 0.959, 'prefix_cache_hit_rate': 0.0}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts


def _both(text: str) -> tuple[dict, dict]:
    import io

    from kb.parsers import training_log

    by_lines = training_log.parse(text.splitlines(True), "t").facts
    by_blocks = training_log.parse_stream(io.BytesIO(text.encode()), "t", block_size=64).facts
    return by_lines, by_blocks


def test_block_scan_equals_line_scan_on_all_log_fixtures() -> None:
    from tests.parsers._fixtures import FIXTURES

    for case in CASES:
        text = (FIXTURES / case[0]).read_text(encoding="utf-8")
        a, b = _both(text)
        assert same(a, b), case[0]
        assert same(a, case[2]), case[0]


def test_parse_path_equals_line_scan(tmp_path) -> None:
    from kb.parsers import training_log
    from tests.parsers._fixtures import FIXTURES

    log = tmp_path / "all.log"
    log.write_bytes(b"".join((FIXTURES / c[0]).read_bytes() for c in CASES if c[0].startswith(("oom_2_1", "nccl_w", "loss_"))))
    by_lines = training_log.parse(log.read_text(encoding="utf-8").splitlines(True), str(log)).facts
    assert same(training_log.parse_path(str(log)).facts, by_lines)


def _generated_log(seed: int, n: int = 3000) -> str:
    """Benign lines, HF metric dicts (some tqdm-prefixed, some NaN), Megatron lines and every
    error signature of the fixtures, in random order."""
    import random

    from tests.parsers._fixtures import FIXTURES

    rng = random.Random(seed)
    sigs = [
        line for c in CASES for line in (FIXTURES / c[0]).read_text(encoding="utf-8").splitlines(True)
        if training_log_candidate(line)
    ]
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.55:
            out.append(f"[2024-05-01 12:00:{i % 60:02d}] [INFO] [data/loader.py:88] prefetched shard {i} of 4096\n")
        elif r < 0.80:
            out.append(f"{{'loss': {rng.random() * 3:.4f}, 'grad_norm': {rng.random():.4f}, "
                       f"'learning_rate': {rng.random() * 1e-4:.3e}, 'epoch': {i / 1000:.2f}}}\n")
        elif r < 0.82:
            out.append("{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 0.5}\n")
        elif r < 0.84:
            out.append(f" 40%|####      | {i}/9000 [01:00<02:00]{{'loss': 1.5, 'grad_norm': 0.2, 'step': {i}}}\n")
        elif r < 0.86:
            out.append(f" iteration {i:8d}/  100000 | learning rate: 3.0E-04 | lm loss: 2.5E+00 | loss scale: 1024.0 | "
                       f"grad norm: 0.5 | number of skipped iterations: {int(rng.random() < 0.3)} |\n")
        else:
            out.append(rng.choice(sigs))
    return "".join(out)


def training_log_candidate(line: str) -> bool:
    from kb.parsers import training_log

    return training_log.is_candidate(line)


@pytest.mark.parametrize("block_size", [64, 1000, 4096, 65536])
def test_block_scan_equals_line_scan_on_generated_logs(block_size: int) -> None:
    import io

    from kb.parsers import training_log

    for seed in range(3):
        text = _generated_log(seed)
        by_lines = training_log.parse(text.splitlines(True), "g")
        by_blocks = training_log.parse_stream(io.BytesIO(text.encode()), "g", block_size=block_size)
        assert same(by_lines.facts, by_blocks.facts), (seed, block_size)
        assert by_lines.notes == by_blocks.notes


def test_bulk_metric_lines_past_the_sample_cap_equal_line_scan() -> None:
    import io

    from kb.parsers import training_log
    from kb.parsers.base import MAX_SAMPLES

    lines = [f"{{'loss': {i}.5, 'grad_norm': 1.0, 'learning_rate': 2e-05, 'epoch': 0.1}}\n" for i in range(MAX_SAMPLES + 700)]
    lines.insert(MAX_SAMPLES + 300, "{'loss': nan, 'grad_norm': 1.0}\n")
    lines.insert(MAX_SAMPLES + 500, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                                    "total capacity of 79.10 GiB of which 1.06 GiB is free.\n")
    text = "".join(lines)
    by_blocks = training_log.parse_stream(io.BytesIO(text.encode()), "t", block_size=1 << 16).facts
    assert same(training_log.parse(text.splitlines(True), "t").facts, by_blocks)
    num = by_blocks["numerics"]
    assert len(num["loss"]) == len(num["grad_norm"]) == len(num["learning_rate"]) == MAX_SAMPLES
    assert num["nonfinite_count"] == 1 and num["first_nonfinite_step"] == MAX_SAMPLES + 301
    assert by_blocks["oom"]["count"] == 1


def test_every_trigger_literal_has_a_pivot_byte() -> None:
    from kb.parsers import training_log

    for lit in training_log._ALL_LITERALS:
        assert lit == training_log._NUMERIC or any(c in training_log._PIVOT_RANK for c in lit), lit


def test_learning_rate_oom_count_and_transports() -> None:
    text = (
        "{'loss': 2.25, 'grad_norm': 0.5, 'learning_rate': 9.8e-06, 'epoch': 0.1}\n"
        " iteration      100/    8000 | learning rate: 3.000000E-04 | lm loss: 2.5E+00 | loss scale: 1.0 |\n"
        "gh1:185972:186354 [0] NCCL INFO NET/IB : Using [0]mlx5_2:1/IB/SHARP [RO]; OOB bond0:X.X.X.X<0>\n"
        "gh1:185972:186354 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
        "gh1:185972:186354 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 3.06 MiB is free.\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total "
        "capacity of 79.10 GiB of which 5.06 MiB is free.\n"
    )
    a, b = _both(text)
    assert same(a, b)
    assert a["numerics"]["learning_rate"] == [9.8e-06, 3e-04]
    assert a["oom"]["count"] == 2 and a["oom"]["free_mib"] == 3.06
    d = a["distributed"]
    assert d["inter_node_transport"] == "IB" and d["intra_node_transport"] == "P2P"
    socket = "host:1:2 [0] NCCL INFO NET/IB : No device found.\nhost:1:2 [0] NCCL INFO NET/Socket : Using [0]ens7:10.128.0.33<0>\n"
    assert _both(socket)[0]["distributed"]["inter_node_transport"] == "Socket"


def test_gloo_timeout_monitored_barrier_and_first_nonfinite_step() -> None:
    text = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms "
        "for recv operation to complete\n"
        "RuntimeError: Rank 3 failed to pass monitoredBarrier in 1800000 ms\n"
        " iteration       10/    100 | lm loss: 2.5E+00 | loss scale: 1024.0 | number of skipped iterations:   0 |\n"
        " iteration       11/    100 | lm loss: nan | loss scale: 512.0 | number of skipped iterations:   1 |\n"
        " iteration       12/    100 | loss scale: 256.0 | number of skipped iterations:   1 |\n"
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
    )
    a, b = _both(text)
    assert same(a, b)
    assert a["distributed"] == {
        "backend": "gloo", "watchdog_timeout": True, "timeout_ms": 1800000.0, "timeout_op": "RECV",
        "errors": ["gloo_timeout", "monitored_barrier_timeout"], "outlier_ranks": [3],
    }
    assert same(a["numerics"], {
        "loss": [2.5, NAN], "loss_scale": [1024.0, 512.0, 256.0], "skipped_steps": 2,
        "consecutive_skipped_steps": 2, "nonfinite_count": 1, "first_nonfinite_step": 11, "nan_source": "loss",
    })
    assert a["oom"] == {"expandable_segments": True}
    assert a["env"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def test_samples_are_bounded() -> None:
    from kb.parsers import training_log
    from kb.parsers.base import MAX_SAMPLES

    lines = (f"{{'loss': {i}.5, 'grad_norm': 1.0}}\n" for i in range(MAX_SAMPLES + 500))
    res = training_log.parse(lines, "t")
    assert len(res.facts["numerics"]["loss"]) == MAX_SAMPLES
    assert res.facts["numerics"]["loss"][-1] == MAX_SAMPLES - 0.5


def test_oom_phase_looks_back_across_blocks() -> None:
    import io

    from kb.parsers import training_log

    text = (
        "step 7 | loss 2.31 | lr 2.9e-04\n" + "  File \"train.py\", line 9, in main\n" * 3
        + "    loss.backward()\n" + "  File \"torch/_tensor.py\", line 626, in backward\n"
        + "    torch.autograd.backward(\n"
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.21 GiB is free.\n"
    )
    ref = training_log.parse(text.splitlines(True), "t").facts
    assert ref["oom"]["phase"] == "backward" and ref["oom"]["at_step"] == 7
    for bs in (64, 200, 1 << 20):
        assert same(training_log.parse_stream(io.BytesIO(text.encode()), "t", block_size=bs).facts, ref), bs
