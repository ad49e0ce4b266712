"""A raw artifact given as data rather than a path: a name to show and its bytes or stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Blob:
    """``name`` is what reports and errors show; ``data`` is bytes or a binary stream."""

    name: str
    data: Any

    def stream(self) -> Any:
        import io

        if isinstance(self.data, (bytes, bytearray)):
            return io.BytesIO(bytes(self.data))
        if isinstance(self.data, str):
            return io.BytesIO(self.data.encode("utf-8"))
        return self.data
