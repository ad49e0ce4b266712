"""Whether a model's weights alone fit on one GPU: parameters x bytes per weight, over the
tensor-parallel degree, against the card's capacity. Weights that do not fit make a start-up
OOM expected whatever else is true (unless the model is sharded further than kb knows, which is
why the result is support for a cause, never its proof)."""

from __future__ import annotations

from typing import Any

from kb.factpath import get_fact, set_fact

#: bits per weight for a compute dtype, when no storage format is stated (half precision is how
#: checkpoints are loaded for inference and mixed-precision training today)
#: the weights alone take this share of one card or more: the model does not fit as loaded
EXCEEDS = 0.9

_DTYPE_BITS = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8}


def complete(facts: dict[str, Any]) -> list[str]:
    """Add ``oom.weights_fraction`` (and ``oom.weights_exceed_card`` when they do) to a nested
    facts dict, in place, when the model size and one GPU's capacity are known and nothing
    stated it; one note per fact added."""
    if get_fact(facts, "oom.weights_fraction") is not None:
        return []
    params = get_fact(facts, "training.model_params_billion")
    cap = get_fact(facts, "oom.total_capacity_mib") or get_fact(facts, "gpu.memory_total_mib")
    if not isinstance(params, (int, float)) or not isinstance(cap, (int, float)) or cap <= 0:
        return []
    dtype = get_fact(facts, "numerics.dtype")
    bits = get_fact(facts, "training.weight_bits") or _DTYPE_BITS.get(
        str(getattr(dtype, "value", dtype)), 16)
    tp = get_fact(facts, "inference.tensor_parallel_size")
    shards = tp if isinstance(tp, int) and tp >= 1 else 1
    weights_mib = params * 1e9 * bits / 8 / 2**20 / shards
    frac = round(weights_mib / cap, 2)
    set_fact(facts, "oom.weights_fraction", frac)
    notes = []
    if frac >= EXCEEDS and get_fact(facts, "oom.weights_exceed_card") is None:
        # stated only when true: below it, what else the job holds decides, not the weights
        set_fact(facts, "oom.weights_exceed_card", True)
        notes.append("oom.weights_exceed_card = true")
    return notes + [f"oom.weights_fraction = {frac} ({params:g}B parameters x {bits} bits"
            + (f" / TP {shards}" if shards > 1 else "") + f" against {cap / 1024:.0f} GiB)"]
