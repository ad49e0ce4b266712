"""What a GPU's product name tells (``graphs/gpus.yaml``): its compute capability, the memory
its variants come with, and for products with no NVLink at all, that its GPUs talk over PCIe
only.

:func:`complete` fills ``gpu.compute_capability`` and ``distributed.nvlink_present`` (and, for
a tensor-parallel server, ``inference.tp_all_nvlink``) from ``gpu.name`` when no reader
measured them: a measured value always wins. :func:`named_in` finds a GPU product the user
names in words ("2x RTX 4090", "on a Tesla T4").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from kb._data import data_dir
from kb.engine.errors import KnowledgeError
from kb.factpath import get_fact, set_fact

#: bumped when the row layout changes (the JSON cache key holds it)
_CACHE_VERSION = 3


class GpuModel(NamedTuple):
    """One row of the table (validated by :func:`_validate` when the file is read)."""

    match: str
    compute_capability: float
    #: False: the product has no NVLink; None: it depends on the board (only topo -m tells)
    nvlink: bool | None
    #: names as tools print them that must resolve to this entry (the first that matches)
    examples: tuple[str, ...]
    #: (smallest, largest) memory in GiB of the products the entry covers; None: not listed
    memory_gib: tuple[int, int] | None = None
    #: the products whose half-precision path is known to return NaN (GTX 16-series, TU116/TU117)
    fp16_nan_prone: bool = False


Rows = tuple[tuple[re.Pattern[str], GpuModel], ...]


def _validate(path: Path, data: Any) -> list[GpuModel]:
    """The file's rows, checked by pydantic models (built here: only a new or changed table
    pays for them); raises KnowledgeError naming the file."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

    class _Row(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        match: str
        compute_capability: float = Field(gt=0, lt=20)
        nvlink: bool | None = None
        examples: list[str] = Field(min_length=1)
        memory_gib: tuple[int, int] | None = None
        fp16_nan_prone: bool = False

        @field_validator("memory_gib")
        @classmethod
        def _range(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
            if v is not None and not 1 <= v[0] <= v[1] <= 1024:
                raise ValueError("memory_gib must be [smallest, largest] GiB, 1 to 1024")
            return v

        @field_validator("match")
        @classmethod
        def _compiles(cls, v: str) -> str:
            try:
                re.compile(v, re.I)
            except re.error as exc:
                raise ValueError(f"match does not compile: {exc}") from None
            return v

    class _Table(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        source: str
        gpus: list[_Row] = Field(min_length=1)

    try:
        t = _Table.model_validate(data)
    except ValidationError as exc:
        raise KnowledgeError(str(path), str(exc).splitlines()[0],
                             problems=[f"{path}: {e['loc']}: {e['msg']}" for e in exc.errors()]) from None
    return [GpuModel(r.match, r.compute_capability, r.nvlink, tuple(r.examples), r.memory_gib,
                     r.fp16_nan_prone) for r in t.gpus]


def _rows(models: list[GpuModel]) -> Rows:
    return tuple((re.compile(g.match, re.I), g) for g in models)


def _check_examples(path: Path, rows: Rows) -> None:
    # an entry shadowed by an earlier one would never be used: each example names its own
    wrong = [f"example {name!r} of {g.match!r} resolves to "
             f"{hit.match if hit else 'nothing'!r}"
             for _, g in rows for name in g.examples
             if (hit := next((h for rx, h in rows if rx.search(name)), None)) is not g]
    if wrong:
        raise KnowledgeError(str(path), wrong[0], problems=[f"{path}: {w}" for w in wrong])


def load(path: Path) -> Rows:
    """A GPU table, validated; raises KnowledgeError naming the file when it is malformed or
    an entry's example resolves to another entry."""
    import yaml  # only when the table is read, not from the cache

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnowledgeError(str(path), str(exc).splitlines()[0]) from None
    rows = _rows(_validate(path, data))
    _check_examples(path, rows)
    return rows


@lru_cache(maxsize=1)
def table() -> Rows:
    """The bundled table (``graphs/gpus.yaml``), validated once and cached as JSON beside the
    knowledge cache, keyed by the file's content (a start of kb reads JSON, not YAML)."""
    from kb.engine.knowledge import cache_dir

    path = data_dir("graphs") / "gpus.yaml"
    raw = path.read_bytes()
    key = hashlib.sha256(raw + str(_CACHE_VERSION).encode()).hexdigest()[:20]
    d = cache_dir()
    cached = None if d is None else d / f"gpus-{key}.json"
    if cached is not None:
        try:
            rows = [GpuModel(r[0], r[1], r[2], tuple(r[3]), tuple(r[4]) if r[4] else None, bool(r[5]))
                    for r in json.loads(cached.read_text(encoding="utf-8"))]
            return _rows(rows)
        except (OSError, ValueError, TypeError, IndexError):
            pass  # no cache yet, or a damaged one: read the file
    rows = load(path)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps([list(g) for _, g in rows]), encoding="utf-8")
            os.replace(tmp, cached)
            old = sorted(cached.parent.glob("gpus-*.json"), key=lambda p: p.stat().st_mtime)
            for stale in old[:-4]:  # the tables of earlier versions
                stale.unlink(missing_ok=True)
        except OSError:  # a read-only home just means no cache
            pass
    return rows


def lookup(name: str) -> GpuModel | None:
    """The table's entry for a product name (the first that matches), or None."""
    for rx, g in table():
        if rx.search(name):
            return g
    return None


#: a memory size in the product name as nvidia-smi prints it ("A100-SXM4-80GB", "A100 80GB
#: PCIe", "V100-PCIE-16GB", "A100-40G" as people write it)
_NAME_GIB = re.compile(r"(?<![0-9A-Za-z])(\d{1,3})\s?G(?:B|iB)?(?![0-9A-Za-z])", re.I)


def memory_range_gib(name: str) -> tuple[int, int] | None:
    """One GPU's memory in GiB for a product name: the size the name states, else the
    table's (smallest, largest) for the product; None when neither is known."""
    m = _NAME_GIB.search(name)
    if m and 2 <= int(m.group(1)) <= 288:
        return int(m.group(1)), int(m.group(1))
    g = lookup(name)
    return g.memory_gib if g is not None else None


def complete(facts: dict[str, Any]) -> list[str]:
    """Add what ``gpu.name`` tells to a nested facts dict, in place, where nothing measured
    it; returns one note per fact added (shown in the report's notes)."""
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
    if get_fact(facts, "gpu.fp16_nan_prone") is None:
        # a card the table knows is either of the GTX 16 family or not: "not" rules that
        # family's fp16 fault out as surely as "is" raises it (only "is" is worth a note)
        set_fact(facts, "gpu.fp16_nan_prone", g.fp16_nan_prone)
        if g.fp16_nan_prone:
            notes.append(f"gpu.fp16_nan_prone = true ({name!r} is a GTX 16-series card)")
    # the interconnect matters between GPUs only: one card has none to speak of
    many = any(isinstance(v, int) and v >= 2 for v in (
        get_fact(facts, "gpu.count"), get_fact(facts, "inference.tensor_parallel_size"),
        get_fact(facts, "distributed.world_size"), get_fact(facts, "distributed.nnodes")))
    if g.nvlink is False and many and get_fact(facts, "distributed.nvlink_present") is None:
        set_fact(facts, "distributed.nvlink_present", False)
        notes.append(f"distributed.nvlink_present = false ({name!r} has no NVLink)")
        tp = get_fact(facts, "inference.tensor_parallel_size")
        if isinstance(tp, int) and tp >= 2 and get_fact(facts, "inference.tp_all_nvlink") is None:
            set_fact(facts, "inference.tp_all_nvlink", False)
            notes.append(f"inference.tp_all_nvlink = false (tensor parallel over {name!r})")
    return notes


#: how a GPU product is written in prose ("RTX 4090", "GTX 1080 Ti", "A100", "T4", "4090")
PRODUCT = (r"(?:rtx|gtx|titan|quadro)(?:\s*(?:pro|a))?\s*\d{3,4}(?:\s*(?:ti|super|ada|blackwell))?"
           r"|titan\s*(?:rtx|v|xp)|[a-z]{1,2}\d{1,3}[a-z]?|[2-5]0[5-9]0(?:\s*ti)?")
#: a GPU product in prose: a vendor word or a count ("2x", "8 x") may precede it; short names
#: (T4, L4, A10, A2) count only with one, as they are common tokens otherwise
_NAMED = re.compile(
    r"(?<![\w-])(?P<pre>(?:nvidia|tesla|geforce)\s+|\d+\s*[x×]\s*)?"
    r"(?P<name>" + PRODUCT + r")s?(?!\w)", re.I)


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
