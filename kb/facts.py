"""The fact model of the bundled knowledge, for code and users that need the class itself.

``Facts`` is built from ``graphs/facts.yaml`` (the fact schema is data): ``from kb.facts import
Facts`` loads the knowledge on first use. Code that works with another knowledge directory asks
that knowledge for its model (``Knowledge.facts_model()``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def _knowledge(kn: Any) -> Any:
    """``kn``, else the bundled knowledge."""
    if kn is None:
        from kb.loaded import load_knowledge

        kn = load_knowledge()
    return kn


def facts_model(kn: Any = None) -> type[BaseModel]:
    """The input model of ``kn`` (the bundled knowledge by default)."""
    kn = _knowledge(kn)
    return kn.facts_model()


def model_for(data: Any, kn: Any = None) -> type[BaseModel]:
    """The model to validate ``data`` (a decoded facts document) with: the input model of
    only the groups the document holds. It validates exactly as the full model does and is
    much cheaper to build; use :func:`facts_model` for the class itself."""
    kn = _knowledge(kn)
    return kn.facts_model(groups=data.keys() if isinstance(data, dict) else ())


_UNITS: dict[str, dict[str, str]] = {}


def fact_units(kn: Any = None) -> dict[str, str]:
    """``{fact path: unit}`` for every fact that declares a unit (read from the fact schema,
    so the input model need not be built)."""
    from kb.engine.schema import schema_units

    kn = _knowledge(kn)
    key = kn.digest + kn.root
    got = _UNITS.get(key)
    if got is None:
        got = _UNITS[key] = schema_units(kn.fact_schema)
    return got


def __getattr__(name: str) -> Any:
    # lazily: building the model needs the knowledge, which `kb --help` never loads
    if name == "Facts":
        return facts_model()
    raise AttributeError(name)
