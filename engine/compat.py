"""The one place that makes experta importable on Python >= 3.10.

experta 1.9.4 pins ``frozendict==1.2``, whose class statement reads ``collections.Mapping``;
that alias was removed from :mod:`collections` in Python 3.10. We restore the few ABC aliases
that frozendict 1.2 and experta touch, *before* the first experta import, and only if they are
missing. Nothing else in the project imports experta directly: import it from here.
"""

from __future__ import annotations

import collections
import collections.abc

_ALIASES = ("Mapping", "MutableMapping", "Sequence", "Iterable", "Hashable", "Callable")

for _name in _ALIASES:
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

import experta  # noqa: E402  (must follow the aliases above)

__all__ = ["experta"]
