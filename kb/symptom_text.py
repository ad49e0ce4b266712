"""Classify a problem described in the user's own words into symptom branches."""

from __future__ import annotations

import re

from engine.knowledge import Knowledge


def classify(text: str, kn: Knowledge) -> dict[str, list[str]]:
    """``{branch: [matched words]}`` for every branch whose vocabulary (en or zh) occurs in
    ``text``, best match first."""
    low = text.lower()
    hits: dict[str, list[str]] = {}
    for b in kn.branches.values():
        words = []
        for w in list(b.words.en) + list(b.words.zh):
            wl = w.lower()
            if wl.isascii():
                if re.search(r"(?<![a-z0-9])" + re.escape(wl) + r"(?![a-z0-9])", low):
                    words.append(w)
            elif wl in low:
                words.append(w)
        if words:
            hits[b.id] = words
    return dict(sorted(hits.items(), key=lambda kv: -len(kv[1])))
