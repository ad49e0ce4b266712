"""Whether a model fits on one GPU before any activation: its weights (parameters x bits per
weight, over the tensor-parallel degree) and, when every parameter trains, its gradients and
Adam state too (16 bytes per parameter in mixed precision: ZeRO, Rajbhandari et al. 2020, §3.1),
against the card's capacity. A model that does not fit makes a start-up OOM expected whatever
else is true, unless the job shards it further than kb knows: the result is support for a
cause, never its proof. And, for a model split over several GPUs, what its whole weights would
take of one of them: a small share says one GPU could hold it unsplit."""

from __future__ import annotations

from typing import Any

from kb.factpath import get_fact, set_fact

#: the model takes this share of one card or more: it does not fit as loaded
EXCEEDS = 0.9
#: bits per weight for a compute dtype, when no storage format is stated (half precision is how
#: checkpoints are loaded for inference and mixed-precision training today)
_DTYPE_BITS = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8}
#: bytes per parameter of mixed-precision Adam training: fp16 weights and gradients (2 + 2),
#: fp32 master weights, momentum and variance (4 + 4 + 4)
TRAINING_BYTES_PER_PARAM = 16


def _num(facts: dict[str, Any], path: str) -> float | None:
    v = get_fact(facts, path)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _weights_mib(params: float, bits: float) -> float:
    """The whole model's weights in MiB: ``params`` billion parameters at ``bits`` each."""
    return params * 1e9 * bits / 8 / 2**20


def _split(facts: dict[str, Any]) -> int:
    """GPUs one copy of the model is spread over (tensor parallel, or a layer split)."""
    return max(int(_num(facts, "inference.tensor_parallel_size") or 1),
               int(_num(facts, "inference.gpus_per_replica") or 1))


def _unsplit(facts: dict[str, Any], params: float, bits: int) -> list[str]:
    """``inference.unsplit_weights_fraction`` for a model split over 2+ GPUs: its whole
    weights over one GPU's memory, measured, or else the smallest variant of the product named
    (so a small share holds whichever variant it is)."""
    split = _split(facts)
    if split < 2 or get_fact(facts, "inference.unsplit_weights_fraction") is not None:
        return []
    cap = _num(facts, "oom.total_capacity_mib") or _num(facts, "gpu.memory_total_mib")
    how = "measured"
    if not cap:
        name = get_fact(facts, "gpu.name")
        if not isinstance(name, str):
            return []
        from kb.gpu_models import memory_range_gib

        rng = memory_range_gib(name)
        if rng is None:
            return []
        cap, how = rng[0] * 1024, f"the smallest {name} variant"
    frac = round(_weights_mib(params, bits) / cap, 2)
    set_fact(facts, "inference.unsplit_weights_fraction", frac)
    return [f"inference.unsplit_weights_fraction = {frac} ({params:g}B parameters x {bits} bits, "
            f"split over {split} GPUs, against one GPU's {cap / 1024:.0f} GiB, {how})"]


def complete(facts: dict[str, Any]) -> list[str]:
    """Add ``oom.weights_fraction`` (and ``oom.training_state_fraction`` when every parameter
    trains, and ``oom.model_exceeds_card`` when either reaches :data:`EXCEEDS`) to a nested
    facts dict, in place, when the model size and one GPU's capacity are known and nothing
    stated them, and ``inference.unsplit_weights_fraction`` for a split model; one note per
    fact added."""
    params = _num(facts, "training.model_params_billion")
    if params is None:
        return []
    dtype = get_fact(facts, "numerics.dtype")
    bits = get_fact(facts, "training.weight_bits") or _DTYPE_BITS.get(
        str(getattr(dtype, "value", dtype)), 16)
    split_notes = _unsplit(facts, params, bits)
    cap = _num(facts, "oom.total_capacity_mib") or _num(facts, "gpu.memory_total_mib")
    if get_fact(facts, "oom.weights_fraction") is not None or not cap:
        return split_notes
    tp = _num(facts, "inference.tensor_parallel_size")
    shards = int(tp) if tp and tp >= 1 else 1
    frac = round(_weights_mib(params, bits) / shards / cap, 2)
    set_fact(facts, "oom.weights_fraction", frac)
    notes = [f"oom.weights_fraction = {frac} ({params:g}B parameters x {bits} bits"
             + (f" / TP {shards}" if shards > 1 else "") + f" against {cap / 1024:.0f} GiB)"]
    worst = frac
    if get_fact(facts, "training.full_parameter") is True and get_fact(
            facts, "inference.engine") is None:
        # ZeRO-3 splits the state over the ranks; other sharding (FSDP) kb may not know of
        ranks = _num(facts, "distributed.world_size") or _num(facts, "gpu.count") or 1
        split = int(ranks) if get_fact(facts, "training.zero_stage") == 3 else 1
        train = round(_weights_mib(params, 8 * TRAINING_BYTES_PER_PARAM) / split / cap, 2)
        set_fact(facts, "oom.training_state_fraction", train)
        notes.append(f"oom.training_state_fraction = {train} ({params:g}B parameters x "
                     f"{TRAINING_BYTES_PER_PARAM} bytes of weights, gradients and Adam state"
                     + (f" / {split} ZeRO-3 ranks" if split > 1 else "")
                     + f" against {cap / 1024:.0f} GiB)")
        worst = max(worst, train)
    if worst >= EXCEEDS and get_fact(facts, "oom.model_exceeds_card") is None:
        # stated only when true: below it, what else the job holds decides, not the model
        set_fact(facts, "oom.model_exceeds_card", True)
        notes.insert(0, "oom.model_exceeds_card = true")
    return notes + split_notes
