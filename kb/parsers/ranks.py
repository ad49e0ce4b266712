"""Cross-rank hang analysis: where is each rank, and which ranks are not where the rest are?

Input: one RankState-shaped dict per rank (``rank``, ``collective``, ``seq``, ``frame``) from
py-spy dumps or watchdog messages. States of the same rank are combined (first non-empty value
per field). Ranks are grouped by the collective they wait in (or, outside any collective, by
their innermost frame); the largest group is the majority, with ties broken in favour of a
group that is inside a collective (peers of a hung rank wait in the collective; the hung rank
is elsewhere). Outliers are ranks outside the majority group, plus ranks whose sequence number
differs from the most common one. Without a majority (two ranks in two collectives), the
collective that timed out decides when it is known (``distributed.timeout_op``: the watchdog's
OpType or the collective of the timing-out rank's traceback): the ranks not in it are the
outliers, since the others wait for them there. Linear time: 4096 ranks take milliseconds.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

#: Python functions that mean "this rank waits in a collective or barrier"
COLLECTIVE_FUNCS: frozenset[str] = frozenset({
    "all_reduce", "all_reduce_coalesced", "broadcast", "broadcast_object_list", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "_all_gather_base", "all_gather_coalesced",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "reduce", "gather",
    "gather_object", "scatter", "scatter_object_list", "all_to_all", "all_to_all_single",
    "barrier", "monitored_barrier", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "_verify_param_shape_across_processes", "_sync_module_states", "_sync_params_and_buffers",
    "_all_gather_flat_param", "fetch_sub_module", "__all_gather_params", "__all_gather_params_",
    "new_group", "init_process_group", "_store_based_barrier", "synchronize",
    "_local_scalar_dense",
})
#: ranks of one job that hang together stand within a few collectives of each other; one rank's
#: SeqNum more than this many times another's means the states are not one moment of one job
SEQ_SPREAD = 2
# native frames (py-spy --native) inside NCCL or the c10d process group
_NATIVE_COLLECTIVE = re.compile(r"^(nccl[A-Z]\w*|c10d::ProcessGroupNCCL::\w+|cudaStreamSynchronize|cudaDeviceSynchronize)")
# files whose functions named like a collective really are collectives
_COLLECTIVE_FILES = ("torch/distributed", "torch\\distributed", "deepspeed", "torch/cuda", "fsdp", "megatron", "c10d")
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])rank[_\-.]?(\d+)", re.I)


def rank_from_name(source: str) -> int | None:
    """Rank named by a file name: ``rank3``, ``dump_rank3.txt``, ``rank_3.log`` (not a pid)."""
    m = _RANK_IN_NAME.search(os.path.basename(source))
    return int(m.group(1)) if m else None


def collective_of(frames: Sequence[tuple[str, str]]) -> str | None:
    """The collective or barrier a stack waits in: the innermost matching frame, else None.

    ``frames`` are ``(function, file)`` pairs, innermost first.
    """
    for func, file in frames:
        if func in COLLECTIVE_FUNCS and (
            not file or any(p in file for p in _COLLECTIVE_FILES) or func.startswith("_")
        ):
            return func
        if _NATIVE_COLLECTIVE.match(func):
            return func
    return None


def _combine(states: Iterable[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    by_rank: dict[int, dict[str, Any]] = {}
    for st in states:
        rank = st.get("rank")
        if not isinstance(rank, int) or rank < 0:
            continue
        cur = by_rank.get(rank)
        if cur is None:
            by_rank[rank] = {k: st.get(k) for k in ("rank", "collective", "seq", "frame")}
            continue
        for k in ("collective", "seq", "frame"):
            if cur.get(k) is None and st.get(k) is not None:
                cur[k] = st[k]
    return by_rank


def same_op(a: str, b: str) -> bool:
    """Whether two names are the same collective: ``ALLREDUCE`` (NCCL OpType) is ``all_reduce``
    (the Python function), ``_ALLGATHER_BASE`` is ``_all_gather_base``."""
    return re.sub(r"[^a-z]", "", a.lower()) == re.sub(r"[^a-z]", "", b.lower())


def analyse(
    states: Iterable[dict[str, Any]], timeout_op: str | None = None
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """Combine per-rank states and name the outliers.

    ``timeout_op`` is the collective that timed out, when known; it decides when no position
    holds a majority (see the module docstring). Returns ``(rank_states, outlier_ranks,
    notes)``: states sorted by rank with ``None`` fields left out (the shape
    ``distributed.rank_states`` takes), outlier ranks sorted, and notes describing the majority.
    """
    by_rank = _combine(states)
    ordered = [by_rank[r] for r in sorted(by_rank)]
    clean = [{k: v for k, v in st.items() if v is not None} for st in ordered]
    notes: list[str] = []
    if len(ordered) < 2:
        return clean, [], notes
    seqs = {r: st["seq"] for r, st in by_rank.items() if st.get("seq") is not None}
    low, high = min(seqs.values(), default=0), max(seqs.values(), default=0)
    if low > 0 and high > SEQ_SPREAD * low:
        # a rank cannot run more than a few collectives ahead of a peer (each one waits for
        # every rank), so states this far apart come from different runs or moments (two
        # pasted timeouts of two jobs): no rank is shown to be elsewhere
        notes.append(f"distributed.rank_states: SeqNum {low} and {high} are too far apart to be "
                     "one hang of one job; no rank is named an outlier")
        return clean, [], notes
    outliers: set[int] = set()
    keys = {r: (st.get("collective") or st.get("frame")) for r, st in by_rank.items()}
    known = {r: k for r, k in keys.items() if k}
    if len(known) >= 2:
        counts = Counter(known.values())
        ranked = counts.most_common()
        top = ranked[0][1]
        leaders = [k for k, c in ranked if c == top]
        in_coll = [k for k in leaders if any(by_rank[r].get("collective") == k for r in known if known[r] == k)]
        majority = leaders[0] if len(leaders) == 1 else (in_coll[0] if len(in_coll) == 1 else None)
        waiting = [r for r, k in known.items() if timeout_op and same_op(k, timeout_op)]
        if majority is None and waiting and len(waiting) < len(known):
            outliers.update(r for r in known if r not in waiting)
            notes.append(
                f"distributed.rank_states: no majority position among {len(known)} ranks; the timed-out "
                f"collective is {timeout_op}, so the ranks not in it are the outliers ({sorted(outliers)})"
            )
        elif majority is None:
            notes.append(f"distributed.rank_states: no majority position among {len(known)} ranks")
        else:
            outliers.update(r for r, k in known.items() if k != majority)
            notes.append(f"distributed.rank_states: {top} of {len(known)} ranks are in {majority}")
    if len(seqs) >= 2:
        counts_s = Counter(seqs.values()).most_common()
        if len(counts_s) > 1 and counts_s[0][1] > counts_s[1][1]:
            common = counts_s[0][0]
            outliers.update(r for r, s in seqs.items() if s != common)
            notes.append(f"distributed.rank_states: most ranks are at SeqNum {common}")
    return clean, sorted(outliers), notes


#: frames that mean "this rank is writing a checkpoint" (function, part of the file path or "")
_SAVE_FUNCS: frozenset[str] = frozenset({
    "save", "_save", "save_checkpoint", "_save_checkpoint", "save_state_dict", "_save_state_dict",
    "save_model", "_save_to_state_dict", "_legacy_save", "_write_files_from_queue", "write_data",
})
_SAVE_FILES = ("torch/serialization", "torch/distributed/checkpoint", "checkpoint", "safetensors")


def is_saving(frames: Sequence[tuple[str, str]]) -> bool:
    """True when a stack (innermost first) is inside a checkpoint save.

    ``torch.save`` (``torch/serialization.py``), ``torch.distributed.checkpoint``, DeepSpeed /
    Megatron / HF ``save_checkpoint`` and ``_save`` frames count.
    """
    for func, file in frames:
        f = file.replace("\\", "/")
        if "torch/distributed/checkpoint" in f:
            return True
        if func in _SAVE_FUNCS and (func not in ("save", "write_data") or any(p in f for p in _SAVE_FILES)):
            return True
    return False


def checkpoint_wait(status: dict[int, str]) -> dict[str, Any]:
    """Facts for "one rank saves a checkpoint while the others wait in a collective".

    ``status`` maps rank -> ``"saving"``, ``"waiting"`` (in a collective or barrier) or
    ``"other"``. Gives ``distributed.ranks_in_barrier_waiting`` (the waiting ranks) and
    ``training.checkpoint_on_rank0_only`` (true when rank 0 is the only saver), or nothing
    when the picture is not "savers plus waiters".
    """
    savers = [r for r, s in status.items() if s == "saving"]
    waiting = [r for r, s in status.items() if s == "waiting"]
    if not savers or not waiting or len(savers) + len(waiting) != len(status) or len(savers) > len(waiting):
        return {}
    out: dict[str, Any] = {"distributed": {"ranks_in_barrier_waiting": len(waiting)}}
    if savers == [0]:
        out["training"] = {"checkpoint_on_rank0_only": True}
    return out


def position(frames: Sequence[tuple[str, str]]) -> str:
    """``"waiting"`` (a collective or barrier), ``"saving"`` (a checkpoint save) or ``"other"``,
    from the innermost frame that is either (a save that waits in a barrier is waiting)."""
    for frame in frames:
        if collective_of([frame]):
            return "waiting"
        if is_saving([frame]):
            return "saving"
    return "other"
