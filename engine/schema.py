"""The fact schema as data: a spec (``facts.yaml`` of the knowledge) and the input model built
from it.

Generic: the engine reads which groups, fields, types, bounds and units exist from the spec;
it knows nothing of GPUs. The built model rejects unknown keys with their path
(``extra="forbid"``), so a typo never silently drops a fact.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

SCALARS: dict[str, Any] = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "count": Annotated[int, Field(ge=0)],
    "nonneg": Annotated[float, Field(ge=0)],
    "percent": Annotated[float, Field(ge=0, le=100)],
    "fraction": Annotated[float, Field(ge=0, le=1)],
}
TYPES = set(SCALARS) | {"enum", "branch", "list", "map"}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ElementSpec(_Spec):
    """The element of a list or map: a scalar type name, or an enum."""

    type: str
    values: list[Any] | None = None


class FieldSpec(_Spec):
    """One fact: its type, bounds, unit and meaning."""

    type: str
    of: str | ElementSpec | None = None
    values: list[Any] | None = None
    min: float | None = None
    max: float | None = None
    max_length: int | None = None
    unit: str | None = None
    doc: str | None = None
    required: bool = False
    #: the hardware or setup, not something the run showed (a GPU's compute capability): a
    #: condition on it lets a cause apply or rules it out, but is no evidence that ranks it
    setting: bool = False

    @model_validator(mode="after")
    def _known(self) -> "FieldSpec":
        if self.type not in TYPES:
            raise ValueError(f"unknown type '{self.type}' (known: {', '.join(sorted(TYPES))})")
        if self.type == "enum" and not self.values:
            raise ValueError("an enum needs 'values'")
        if self.type in ("list", "map") and self.of is None:
            raise ValueError(f"a {self.type} needs 'of'")
        return self


class RecordSpec(_Spec):
    doc: str = ""
    fields: dict[str, FieldSpec]


class FactSchema(_Spec):
    """The whole spec: top-level facts, records (nested types) and fact groups."""

    schema_version: Literal[1] = 1
    top: dict[str, FieldSpec] = Field(default_factory=dict)
    records: dict[str, RecordSpec] = Field(default_factory=dict)
    groups: dict[str, RecordSpec]

    def settings(self) -> frozenset[str]:
        """The dotted paths of the facts marked ``setting`` (``gpu.compute_capability``)."""
        return frozenset([n for n, f in self.top.items() if f.setting] + [
            f"{g}.{n}" for g, r in self.groups.items() for n, f in r.fields.items() if f.setting])

    def problems(self) -> list[str]:
        """References to records that do not exist."""
        out = []
        for where, fields in [("top", self.top)] + [
                (f"{k}", r.fields) for k, r in {**self.records, **self.groups}.items()]:
            for name, f in fields.items():
                if isinstance(f.of, str) and f.of not in SCALARS and f.of not in self.records:
                    out.append(f"{where}.{name}: unknown type '{f.of}'")
        return out


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _element(spec: str | ElementSpec, records: dict[str, type[BaseModel]]) -> Any:
    if isinstance(spec, ElementSpec):
        if spec.type == "enum":
            return Literal[tuple(spec.values or ())]  # type: ignore[misc]
        return SCALARS[spec.type]
    return records[spec] if spec in records else SCALARS[spec]


def _field(f: FieldSpec, records: dict[str, type[BaseModel]], branches: tuple[str, ...]
           ) -> tuple[Any, Any]:
    extra = {"unit": f.unit} if f.unit else None
    kw: dict[str, Any] = {"description": f.doc, "json_schema_extra": extra}
    if f.type == "list":
        return list[_element(f.of, records)], Field(default_factory=list, **kw)  # type: ignore[arg-type]
    if f.type == "map":
        return dict[str, _element(f.of, records)], Field(default_factory=dict, **kw)  # type: ignore[arg-type]
    if f.type == "enum":
        ann: Any = Literal[tuple(f.values or ())]  # type: ignore[misc]
    elif f.type == "branch":
        ann = Literal[branches] if branches else str  # type: ignore[valid-type]
    else:
        ann = SCALARS[f.type]
        bounds = {k: v for k, v in (("ge", f.min), ("le", f.max), ("max_length", f.max_length))
                  if v is not None}
        if bounds:
            ann = Annotated[ann, Field(**bounds)]
    if f.required:
        return ann, Field(..., **kw)
    return Optional[ann], Field(None, **kw)


def build_model(schema: FactSchema, branches: tuple[str, ...], name: str = "Facts",
                groups: frozenset[str] | None = None) -> type[BaseModel]:
    """The input model: one optional group per ``groups`` entry, top-level facts, and
    ``schema_version``. ``groups`` keeps only those groups: a document holding no other group
    validates the same (same values, same errors), and the model builds in a fraction of the
    time (pydantic's schema generation is most of a cold start)."""
    records: dict[str, type[BaseModel]] = {}
    for rname, rec in schema.records.items():
        records[rname] = create_model(  # type: ignore[call-overload]
            rname, __base__=_Group, __doc__=rec.doc,
            **{n: _field(f, records, branches) for n, f in rec.fields.items()})
    fields: dict[str, Any] = {"schema_version": (Literal[1], 1)}
    for n, f in schema.top.items():
        fields[n] = _field(f, records, branches)
    for gname, grp in schema.groups.items():
        if groups is not None and gname not in groups:
            continue
        model = create_model(  # type: ignore[call-overload]
            gname.title().replace("_", "") + "Facts", __base__=_Group, __doc__=grp.doc,
            **{n: _field(f, records, branches) for n, f in grp.fields.items()})
        fields[gname] = (model, Field(default_factory=model, description=grp.doc))
    base = type("_FactsBase", (BaseModel,), {
        "model_config": ConfigDict(extra="forbid", validate_assignment=True),
        "__doc__": "Everything known about one job. The input of kb.diagnose."})
    return create_model(name, __base__=base, **fields)  # type: ignore[call-overload]


def schema_units(schema: FactSchema) -> dict[str, str]:
    """``{fact path: unit}`` for every top-level or group fact that declares a unit."""
    out = {n: f.unit for n, f in schema.top.items() if f.unit}
    for gname, grp in schema.groups.items():
        out.update({f"{gname}.{n}": f.unit for n, f in grp.fields.items() if f.unit})
    return out


def units(model: type[BaseModel]) -> dict[str, str]:
    """``{fact path: unit}`` for every field of the model that declares a unit."""
    out: dict[str, str] = {}

    def walk(m: type[BaseModel], prefix: str) -> None:
        for name, field in m.model_fields.items():
            path = f"{prefix}{name}"
            extra = field.json_schema_extra
            if isinstance(extra, dict) and extra.get("unit"):
                out[path] = str(extra["unit"])
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, path + ".")

    walk(model, "")
    return out


def paths(model: type[BaseModel]) -> set[str]:
    """Every dotted path the model can hold (group fields and the groups themselves)."""
    out: set[str] = set()

    def walk(m: type[BaseModel], prefix: str) -> None:
        for name, field in m.model_fields.items():
            path = f"{prefix}{name}"
            out.add(path)
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, path + ".")

    walk(model, "")
    return out
