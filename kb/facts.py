"""The fact model of the bundled knowledge, for code and users that need the class itself.

``Facts`` is built from ``graphs/facts.yaml`` (the fact schema is data): ``from kb.facts import
Facts`` loads the knowledge on first use. Code that works with another knowledge directory asks
that knowledge for its model (``Knowledge.facts_model()``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def facts_model(kn: Any = None) -> type[BaseModel]:
    """The input model of ``kn`` (the bundled knowledge by default)."""
    if kn is None:
        from kb.loaded import load_knowledge

        kn = load_knowledge()
    return kn.facts_model()


_UNITS: dict[str, dict[str, str]] = {}


def fact_units(kn: Any = None) -> dict[str, str]:
    """``{fact path: unit}`` for every fact that declares a unit."""
    from kb.engine.schema import units

    model = facts_model(kn)
    key = f"{id(model)}"
    got = _UNITS.get(key)
    if got is None:
        got = _UNITS[key] = units(model)
    return got


def __getattr__(name: str) -> Any:
    # lazily: building the model needs the knowledge, which `kb --help` never loads
    if name == "Facts":
        return facts_model()
    raise AttributeError(name)
