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


def _proc(rank: int, frames: list[str]) -> str:
    body = "".join(f"    {f}\n" for f in frames)
    return (
        f"Process {7000 + rank}: /usr/bin/python3 train.py --rank {rank}\n"
        "Python v3.11.9 (/usr/bin/python3.11)\n\n"
        f'Thread {7000 + rank} (active): "MainThread"\n{body}\n'
    )


SAVE_RANK0 = _proc(0, [
    "_write_files_from_queue (torch/distributed/checkpoint/filesystem.py:277)",
    "write_data (torch/distributed/checkpoint/filesystem.py:540)",
    "save (torch/distributed/checkpoint/state_dict_saver.py:150)",
    "save_checkpoint (train.py:210)",
    "<module> (train.py:300)",
]) + "".join(_proc(r, [
    "barrier (torch/distributed/distributed_c10d.py:3686)",
    "save_checkpoint (train.py:214)",
    "<module> (train.py:300)",
]) for r in (1, 2, 3))


def test_checkpoint_on_rank0_while_others_wait_in_barrier() -> None:
    from kb.parsers import py_spy

    res = py_spy.parse(SAVE_RANK0.splitlines(True), "dumps.txt")
    assert res.facts["distributed"]["ranks_in_barrier_waiting"] == 3
    assert res.facts["training"] == {"checkpoint_on_rank0_only": True}
    assert res.facts["distributed"]["outlier_ranks"] == [0]


def test_torch_save_on_rank2_one_file_per_rank(tmp_path) -> None:
    from kb.inputs import load_inputs

    for r in range(4):
        frames = (
            ["_save (torch/serialization.py:853)", "save (torch/serialization.py:619)", "save_model (trainer.py:40)"]
            if r == 2 else ["all_reduce (torch/distributed/distributed_c10d.py:2501)", "step (trainer.py:31)"]
        )
        (tmp_path / f"dump_rank{r}.txt").write_text(_proc(r, frames))
    facts = load_inputs([str(tmp_path)]).facts
    assert facts["distributed"]["ranks_in_barrier_waiting"] == 3
    assert "training" not in facts  # the saver is not rank 0


def test_no_checkpoint_facts_when_nobody_saves() -> None:
    from kb.parsers import py_spy

    text = "".join(_proc(r, ["barrier (torch/distributed/distributed_c10d.py:3686)"]) for r in range(3))
    facts = py_spy.parse(text.splitlines(True), "d.txt").facts
    assert "ranks_in_barrier_waiting" not in facts["distributed"] and "training" not in facts
