"""gzip inputs, read decompressed as a stream.

A ``.gz`` log is recognised by its magic bytes (not its name: stdin has none) and decompressed
while it is read, so the loader's byte caps count decompressed bytes (a small bomb cannot expand
past them). A truncated archive (a job killed while writing) gives what was decompressed up to
the damage, with a note, instead of failing.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

MAGIC = b"\x1f\x8b"


class _Chain:
    """``head`` then the rest of ``stream``, honouring ``read(n)`` sizes (GzipFile needs that)."""

    def __init__(self, head: bytes, stream: Any) -> None:
        self._head = head
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n is None or n < 0:
                out, self._head = self._head + (self._stream.read() or b""), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        data = self._stream.read(n)
        return data.encode("utf-8", "replace") if isinstance(data, str) else (data or b"")


class Gunzip:
    """A binary stream of the decompressed bytes; ``damaged`` tells why it ended early."""

    def __init__(self, head: bytes, stream: Any) -> None:
        self._gz = gzip.GzipFile(fileobj=_Chain(head, stream), mode="rb")  # type: ignore[arg-type]
        self.damaged: str | None = None

    def read(self, n: int = -1) -> bytes:
        if self.damaged is not None:
            return b""
        try:
            return self._gz.read(n)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            self.damaged = str(exc)[:120] or type(exc).__name__
            return b""


def is_gzip(head: bytes) -> bool:
    """The first bytes are gzip's magic number."""
    return head[:2] == MAGIC
