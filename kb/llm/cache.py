"""An optional cache of accepted answers: a re-run with the same inputs costs nothing.

Key: sha256 of the model name and the first-turn messages; one file per key holding the
answer text. Only verified answers are stored; a cache that cannot be read or written is
simply not used.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def cache_key(model: str, messages: list[dict[str, str]]) -> str:
    blob = json.dumps({"model": model, "messages": messages}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerCache:
    """Accepted answers under ``root``, one ``<key>.md`` file each."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / f"{key}.md"

    def get(self, key: str) -> str | None:
        try:
            return self.path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put(self, key: str, answer: str) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.path(key).with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(answer, encoding="utf-8")
            os.replace(tmp, self.path(key))
        except OSError:  # a read-only home is fine: we just do not cache
            pass
