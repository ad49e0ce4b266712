"""What a GPU's product name tells (``graphs/gpus.yaml``): its compute capability, and for
products with no NVLink at all, that its GPUs talk over PCIe only.

:func:`complete` fills ``gpu.compute_capability`` and ``distributed.nvlink_present`` (and, for
a tensor-parallel server, ``inference.tp_all_nvlink``) from ``gpu.name`` when no reader
measured them: a measured value always wins. :func:`named_in` finds a GPU product the user
names in words ("2x RTX 4090", "on a Tesla T4").
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kb._data import data_dir
from kb.engine.errors import KnowledgeError
from kb.parsers.base import get_fact, set_fact


class GpuModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str
    compute_capability: float = Field(gt=0, lt=20)
    #: False: the product has no NVLink; None: it depends on the board (only topo -m tells)
    nvlink: bool | None = None
    #: names as tools print them that must resolve to this entry (the first that matches)
    examples: list[str] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v, re.I)
        except re.error as exc:
            raise ValueError(f"match does not compile: {exc}") from None
        return v


class GpuTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    gpus: list[GpuModel] = Field(min_length=1)


@lru_cache(maxsize=1)
def table() -> tuple[tuple[re.Pattern[str], GpuModel], ...]:
    """The bundled table (``graphs/gpus.yaml``), validated once."""
    return load(data_dir("graphs") / "gpus.yaml")


def load(path: Path) -> tuple[tuple[re.Pattern[str], GpuModel], ...]:
    """A GPU table, validated; raises KnowledgeError naming the file when it is malformed or
    an entry's example resolves to another entry."""
    import yaml  # only when a GPU name is seen

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        t = GpuTable.model_validate(data)
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise KnowledgeError(str(path), str(exc).splitlines()[0]) from None
    rows = tuple((re.compile(g.match, re.I), g) for g in t.gpus)
    # an entry shadowed by an earlier one would never be used: each example names its own
    wrong = [f"example {name!r} of {g.match!r} resolves to "
             f"{hit.match if hit else 'nothing'!r}"
             for _, g in rows for name in g.examples
             if (hit := next((h for rx, h in rows if rx.search(name)), None)) is not g]
    if wrong:
        raise KnowledgeError(str(path), wrong[0], problems=[f"{path}: {w}" for w in wrong])
    return rows


def lookup(name: str) -> GpuModel | None:
    """The table's entry for a product name (the first that matches), or None."""
    for rx, g in table():
        if rx.search(name):
            return g
    return None


def complete(facts: dict[str, Any]) -> list[str]:
    """Add what ``gpu.name`` tells to a nested facts dict, in place, where nothing measured
    it; returns one note per fact added (shown as evidence in the report)."""
    name = get_fact(facts, "gpu.name")
    if not isinstance(name, str) or not name.strip():
        return []
    g = lookup(name)
    if g is None:
        return []
    notes: list[str] = []
    if get_fact(facts, "gpu.compute_capability") is None:
        set_fact(facts, "gpu.compute_capability", g.compute_capability)
        notes.append(f"gpu.compute_capability = {g.compute_capability} (from gpu.name {name!r})")
    if g.nvlink is False and get_fact(facts, "distributed.nvlink_present") is None:
        set_fact(facts, "distributed.nvlink_present", False)
        notes.append(f"distributed.nvlink_present = false ({name!r} has no NVLink)")
        tp = get_fact(facts, "inference.tensor_parallel_size")
        if isinstance(tp, int) and tp >= 2 and get_fact(facts, "inference.tp_all_nvlink") is None:
            set_fact(facts, "inference.tp_all_nvlink", False)
            notes.append(f"inference.tp_all_nvlink = false (tensor parallel over {name!r})")
    return notes


#: a GPU product in prose: a vendor word or a count ("2x", "8 x") may precede it; short names
#: (T4, L4, A10, A2) count only with one, as they are common tokens otherwise
_NAMED = re.compile(
    r"(?<![\w-])(?P<pre>(?:nvidia|tesla|geforce)\s+|\d+\s*[x×]\s*)?"
    r"(?P<name>(?:rtx|gtx|titan|quadro)(?:\s*(?:pro|a))?\s*\d{3,4}(?:\s*(?:ti|super|ada|blackwell))?"
    r"|titan\s*(?:rtx|v|xp)|[a-z]{1,2}\d{1,3}[a-z]?|[2-5]0[5-9]0(?:\s*ti)?)s?(?!\w)", re.I)


def named_in(text: str) -> list[str]:
    """GPU products the text names, as written ("RTX 4090", "A100"), each once, in order."""
    out: list[str] = []
    for m in _NAMED.finditer(text):
        name = m.group("name")
        if name[:1].isdigit():  # "two 4090s": a GeForce RTX card
            name = "RTX " + name
        short = re.fullmatch(r"[a-z]{1,2}\d{1,2}", name, re.I) is not None
        if (short and not m.group("pre")) or lookup(name) is None:
            continue
        if name.upper() not in (n.upper() for n in out):
            out.append(name)
    return out
