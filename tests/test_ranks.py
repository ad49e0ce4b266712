"""Cross-rank analysis: grouping by collective and sequence number, naming the outliers."""

from __future__ import annotations

import time

from kb.inputs import load_inputs
from kb.parsers import ranks


def _dump(func: str, file: str) -> str:
    return (
        'Thread 100 (active): "MainThread"\n'
        f"    {func} ({file}:10)\n"
        "    train_step (train.py:88)\n"
        "    <module> (train.py:120)\n"
    )


def test_majority_collective_and_outlier() -> None:
    states = [{"rank": r, "collective": "all_reduce", "frame": "all_reduce (x)"} for r in range(7)]
    states.append({"rank": 7, "collective": None, "frame": "forward (model.py:3)"})
    got, outliers, notes = ranks.analyse(states)
    assert outliers == [7]
    assert got[7] == {"rank": 7, "frame": "forward (model.py:3)"}
    assert "7 of 8 ranks are in all_reduce" in notes[0]


def test_sequence_number_outlier_and_merge_of_sources() -> None:
    states = [{"rank": r, "collective": "ALLREDUCE", "seq": 460631} for r in range(4)]
    states.append({"rank": 4, "collective": "ALLREDUCE", "seq": 460630})
    states.append({"rank": 0, "frame": "all_reduce (c10d.py:1)"})  # py-spy view of rank 0
    got, outliers, _ = ranks.analyse(states)
    assert outliers == [4]
    assert got[0] == {"rank": 0, "collective": "ALLREDUCE", "seq": 460631, "frame": "all_reduce (c10d.py:1)"}


def test_tie_prefers_the_collective_group_and_no_majority_gives_none() -> None:
    _, outliers, _ = ranks.analyse([
        {"rank": 0, "collective": "barrier"}, {"rank": 1, "frame": "save (ckpt.py:9)"},
    ])
    assert outliers == [1]
    _, outliers, notes = ranks.analyse([{"rank": 0, "frame": "a"}, {"rank": 1, "frame": "b"}])
    assert outliers == [] and "no majority" in notes[0]


def test_rank_from_file_name() -> None:
    assert ranks.rank_from_name("/x/dump_rank3.txt") == 3
    assert ranks.rank_from_name("rank12") == 12
    assert ranks.rank_from_name("/x/dump_4711.txt") is None


def test_one_dump_per_file_named_and_by_order(tmp_path) -> None:
    named = tmp_path / "named"
    named.mkdir()
    for r in range(4):
        func, file = ("all_gather_coalesced", "deepspeed/runtime/zero/partition_parameters.py") if r != 2 else (
            "forward", "transformers/models/mixtral/modeling_mixtral.py")
        (named / f"dump_rank{r}.txt").write_text(_dump(func, file))
    bundle = load_inputs([str(named)])
    assert bundle.facts["distributed"]["outlier_ranks"] == [2]
    assert [s["rank"] for s in bundle.facts["distributed"]["rank_states"]] == [0, 1, 2, 3]
    by_pid = tmp_path / "pids"
    by_pid.mkdir()
    for i, pid in enumerate((300, 301, 302)):
        func = "barrier" if i != 0 else "save"
        (by_pid / f"dump_{pid}.txt").write_text(_dump(func, "torch/distributed/distributed_c10d.py"))
    bundle = load_inputs([str(by_pid)])
    assert bundle.facts["distributed"]["outlier_ranks"] == [0]


def test_rank_from_locals_in_one_file_with_many_processes() -> None:
    text = ""
    for r in (5, 6, 7):
        func = "all_reduce" if r != 6 else "load_batch"
        text += (
            f"Process {1000 + r}: python train.py\nPython v3.11.7 (/usr/bin/python3)\n\n"
            f'Thread {1000 + r} (active): "MainThread"\n'
            f"    {func} (torch/distributed/distributed_c10d.py:2501)\n"
            "        Locals:\n"
            f"            RANK: {r}\n"
        )
    from kb.parsers import py_spy

    res = py_spy.parse(text.splitlines(True), "all.txt")
    assert res.facts["distributed"]["outlier_ranks"] == [6]
    assert [s["rank"] for s in res.facts["distributed"]["rank_states"]] == [5, 6, 7]


def test_4096_ranks_fast() -> None:
    states = [{"rank": r, "collective": "all_reduce", "seq": 99} for r in range(4096)]
    states[1234] = {"rank": 1234, "frame": "forward (m.py:1)", "seq": 98}
    t0 = time.perf_counter()
    _, outliers, _ = ranks.analyse(states)
    assert time.perf_counter() - t0 < 1.0
    assert outliers == [1234]


def test_no_majority_the_timed_out_collective_decides() -> None:
    """Two ranks in two collectives: the one outside the timed-out collective is the outlier."""
    states = [{"rank": 0, "collective": "all_reduce"}, {"rank": 1, "collective": "barrier"}]
    _, outliers, notes = ranks.analyse(states)
    assert outliers == [] and "no majority" in notes[0]
    _, outliers, notes = ranks.analyse(states, timeout_op="all_reduce")
    assert outliers == [1] and "timed-out collective is all_reduce" in notes[0]
    _, outliers, _ = ranks.analyse(states, timeout_op="ALLREDUCE")  # the NCCL OpType spelling
    assert outliers == [1]
    # the op names no rank's position (a gloo RECV) or every rank's: still no outlier
    assert ranks.analyse(states, timeout_op="RECV")[1] == []
    both = [{"rank": 0, "collective": "all_reduce", "seq": 3}, {"rank": 1, "collective": "all_reduce", "seq": 3}]
    assert ranks.analyse(both, timeout_op="all_reduce")[1] == []
    # a majority is not overruled by the timed-out op
    four = [{"rank": r, "collective": "all_reduce"} for r in range(3)] + [{"rank": 3, "collective": "barrier"}]
    assert ranks.analyse(four, timeout_op="barrier")[1] == [3]


def test_gloo_desync_scenario_log_and_dumps() -> None:
    """The nccl_gloo_desync scenario (torch 2.13): rank 0 timed out in all_reduce, rank 1 sits in barrier."""
    from tests.parsers._fixtures import FIXTURES

    names = ["gloo_desync_2_13.log", "gloo_desync_2_13_dump_rank0.txt", "gloo_desync_2_13_dump_rank1.txt"]
    bundle = load_inputs([str(FIXTURES / n) for n in names])
    d = bundle.facts["distributed"]
    assert d["watchdog_timeout"] is True and d["timeout_op"] == "all_reduce"
    assert [(s["rank"], s["collective"]) for s in d["rank_states"]] == [(0, "all_reduce"), (1, "barrier")]
    assert d["outlier_ranks"] == [1]
    assert "transports" not in d and "inter_node_transport" not in d


def test_ranks_too_far_apart_are_not_one_hang() -> None:
    # two watchdog lines pasted from two runs (vLLM 0.2.7 and 0.3.0): SeqNum 20518 on rank 4 in
    # ALLREDUCE and 369526 on rank 1 in GATHER cannot be one job's ranks at one moment (a rank
    # runs at most a few collectives ahead of a peer), so neither is an outlier
    got, outliers, notes = ranks.analyse(
        [{"rank": 4, "collective": "ALLREDUCE", "seq": 20518},
         {"rank": 1, "collective": "GATHER", "seq": 369526}], timeout_op="ALLREDUCE")
    assert outliers == [] and "too far apart" in notes[0]
    assert [s["rank"] for s in got] == [1, 4]
    # near-miss: one job, one rank a collective behind in another op
    _, outliers, _ = ranks.analyse(
        [{"rank": 0, "collective": "ALLREDUCE", "seq": 57}, {"rank": 1, "collective": "BARRIER", "seq": 56}],
        timeout_op="ALLREDUCE")
    assert outliers == [1]
