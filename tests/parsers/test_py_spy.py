"""Every py_spy sample in /work/shared/formats parses into exactly these facts."""

from __future__ import annotations

import pytest

from tests.parsers._fixtures import load, same

NAN = float("nan")

CASES = [
    ('faulthandler_sglang.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'collective': 'all_reduce', 'frame': 'all_reduce (torch/distributed/distributed_c10d.py:2501)'}]}}),
    ('pyspy_ddp_init.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'collective': '_verify_param_shape_across_processes', 'frame': '_verify_param_shape_across_processes (torch/distributed/utils.py:263)'}]}, 'cpu': {'hot_functions': ['_verify_param_shape_across_processes (torch/distributed/utils.py)']}}),
    ('pyspy_ddp_init_native.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'collective': 'ncclGroupEndInternal', 'frame': 'clock_nanosleep (libc.so.6)'}]}}),
    ('pyspy_deepspeed_zero3.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'collective': 'all_gather_coalesced', 'frame': 'all_gather_coalesced (deepspeed/runtime/zero/partition_parameters.py:1254)'}]}, 'cpu': {'hot_functions': ['all_gather_coalesced (deepspeed/runtime/zero/partition_parameters.py)']}}),
    ('pyspy_hex_tid.txt', 'py_spy', {}),
    ('pyspy_homeassistant.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'frame': 'select (selectors.py:468)'}]}}),
    ('pyspy_macos.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'frame': 'wait (threading.py:327)'}]}}),
    ('pyspy_old.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'frame': '_periodically_flush_profile_events (ray/profiling.py:97)'}]}, 'cpu': {'hot_functions': ['_periodically_flush_profile_events (ray/profiling.py)']}}),
    ('pyspy_ray_threads.txt', 'py_spy', {'distributed': {'rank_states': [{'rank': 0, 'frame': 'main_loop (ray/_private/worker.py:1066)'}]}}),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample(fixture: str, fmt: str, expected: dict) -> None:
    bundle = load(fixture)
    assert bundle.sources[next(iter(bundle.sources))] == fmt
    assert same(bundle.facts, expected), bundle.facts
