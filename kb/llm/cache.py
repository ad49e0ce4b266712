"""An optional cache of accepted LLM answers: a re-run with the same inputs costs no call.

Where: ``KB_CACHE_DIR`` or ``$XDG_CACHE_HOME/kb`` or ``~/.cache/kb``, subfolder ``llm``
(:func:`kb.llm.options.default_cache_dir`); ``KB_NO_CACHE=1`` turns it off, and deleting
the folder at any time is safe.

What: one JSON file per answer, ``<key>.json``, where the key is the sha256 of the model name
and the exact first-turn messages (so any change of facts, knowledge, prompt or model is a
different key). The file is data only, never code (no pickle):
``{"format": "kb-llm-answer", "version": 1, "key": ..., "model": ..., "answer": ...,
"answer_sha256": ...}``. A read checks the format, the key and the answer's hash, and the
caller verifies the answer again against the current report before it is shown, so a
tampered or stale file is at worst ignored.

Who may write it: the folder is created ``0700``; a folder that is not owned by the user or is
writable by group or others (a shared ``XDG_CACHE_HOME``, a restored CI cache) is not used at
all. Only verified answers are stored; a cache that cannot be read or written is simply not
used. Each file is at most :data:`MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

FORMAT = "kb-llm-answer"
VERSION = 1
#: an answer is a table and three sentences; anything bigger is not ours
MAX_ANSWER_BYTES = 1024 * 1024


def cache_key(model: str, messages: list[dict[str, str]]) -> str:
    """sha256 of the model and the first-turn messages: the content, not a file stamp."""
    blob = json.dumps({"model": model, "messages": messages}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _private_dir(path: Path) -> bool:
    """True when only the current user can write ``path`` (on systems with owners)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class AnswerCache:
    """Accepted answers under ``root``, one ``<key>.json`` file each (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored answer for ``key``; None when absent, foreign, tampered or unreadable."""
        if not _private_dir(self.root):
            return None
        try:
            with open(self.path(key), "rb") as fh:
                raw = fh.read(MAX_ANSWER_BYTES * 2 + 1)
            data = json.loads(raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            return None
        answer = data.get("answer")
        if data.get("key") != key or not isinstance(answer, str):
            return None
        if data.get("answer_sha256") != _sha256(answer):
            return None
        return answer

    def put(self, key: str, answer: str, model: str = "") -> None:
        """Store a verified answer atomically; silently nothing when the folder is unusable."""
        record = {"format": FORMAT, "version": VERSION, "key": key, "model": model,
                  "answer": answer, "answer_sha256": _sha256(answer)}
        data = json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8")
        if len(data) > MAX_ANSWER_BYTES * 2:
            return
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:  # a read-only home is fine: we just do not cache
            return
        if not _private_dir(self.root):
            return
        from kb.engine.errors import KbError
        from kb.safe_write import atomic_write_bytes

        try:
            atomic_write_bytes(self.path(key), data, force=True)
        except KbError:
            pass
