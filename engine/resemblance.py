"""How much a text reads like each cause's own description (TF-IDF cosine).

The knowledge describes every cause in words (title, symptom, why, fixes, in en and zh). When
the evidence leaves hypotheses tied, the one whose description shares the user's rarer words
("wrap the learning rate in a tensor", "processes the whole prompt") is the likelier reading.
A weak, ranking-only signal: it never decides a step and never confirms a cause.

Knows nothing of the domain: tokens are ASCII words (a light suffix strip) and CJK character
pairs; weights are TF-IDF over the causes' descriptions.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable

from .knowledge import Knowledge

_WORD = re.compile(r"[a-z][a-z0-9]+|[\u4e00-\u9fff]+")
#: words too common in any text about a program to tell causes apart
_STOP = frozenset("""
a an and are as at be been but by can do does for from has have how i if in into is it its
my no not of on or so than that the their then there these this to too was we were what when
which while with you your our after before also any all only more most one same some such
use used using very will would should could may might out up down over per each via just
""".split())


def _stem(w: str) -> str:
    # a light strip so "recompiles"/"recompiled"/"recompiling" share one token
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def tokens(text: str) -> list[str]:
    """ASCII words (stemmed, stop words out) and CJK character pairs of ``text``."""
    out: list[str] = []
    for m in _WORD.finditer(text.lower().replace("_", " ")):
        t = m.group(0)
        if t[0].isascii():
            if t not in _STOP:
                out.append(_stem(t))
        elif len(t) == 1:
            out.append(t)
        else:
            out.extend(t[i:i + 2] for i in range(len(t) - 1))
    return out


def describe_causes(kn: Knowledge) -> str:
    """TF-IDF unit vectors of every cause's description (title, symptom, why, fixes and its
    own words, en and zh), with the idf of each token over the causes, as JSON text
    (``{"idf": {token: idf}, "vectors": {cause id: {token: weight}}}``)."""
    # one description per language: a Chinese word added to a cause would otherwise thin out
    # the weight of its English ones (and the reverse) in a text written in one language
    docs: dict[str, dict[str, Counter[str]]] = {"en": {}, "zh": {}}
    for c in kn.causes.values():
        # a fix proposed only for a setup the user names (llama-server's flag beside vLLM's)
        # describes that tool, not the cause
        general = [f for f in c.fixes if not f.when_known]
        for lang in ("en", "zh"):
            parts = [getattr(t, lang) for t in (c.title, c.symptom, c.why)]
            parts += [getattr(f.text, lang) for f in general] + list(getattr(c.words, lang))
            if lang == "zh":
                # Chinese text names flags, messages and tools in English: the English words
                # of a cause (its terms) belong to its Chinese description too
                parts += list(c.words.en)
            docs[lang][c.id] = Counter(tokens(" ".join(parts)))
    n = len(kn.causes)
    df: Counter[str] = Counter()
    for cid in kn.causes:
        df.update(set(docs["en"][cid]) | set(docs["zh"][cid]))
    # smooth idf; a token every cause shares weighs ~nothing
    idf = {t: round(math.log((1 + n) / (1 + d)), 6) for t, d in sorted(df.items())}
    vectors: dict[str, dict[str, dict[str, float]]] = {"en": {}, "zh": {}}
    for lang, by_cause in docs.items():
        for cid, tf in by_cause.items():
            v = {t: (1 + math.log(k)) * idf[t] for t, k in sorted(tf.items())}
            norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
            vectors[lang][cid] = {t: round(x / norm, 6) for t, x in v.items() if x > 0}
    return json.dumps({"idf": idf, "vectors": vectors}, ensure_ascii=False,
                      separators=(",", ":"))


_BUILT: dict[str, "Resemblance"] = {}


def for_knowledge(kn: Knowledge) -> "Resemblance":
    """The resemblance index of ``kn``, built once per knowledge and process (the reasoner and
    the reading of the user's words share it)."""
    key = kn.digest + kn.root
    like = _BUILT.get(key)
    if like is None:
        like = _BUILT[key] = Resemblance(kn)
    return like


class Resemblance:
    """A text compared with every cause's description by cosine."""

    def __init__(self, kn: Knowledge) -> None:
        index = json.loads(kn.descriptions or describe_causes(kn))
        self._idf: dict[str, float] = index["idf"]
        self._vec: dict[str, dict[str, dict[str, float]]] = index["vectors"]

    def scores(self, text: str, causes: Iterable[str]) -> dict[str, float]:
        """Cosine of ``text`` with each cause's description, 0..1, for causes sharing at least
        two words with it (only tokens the knowledge knows count: the rest tell no cause
        apart)."""
        tf = Counter(t for t in tokens(text) if t in self._idf)
        if not tf:
            return {}
        q = {t: (1 + math.log(k)) * self._idf[t] for t, k in tf.items()}
        norm = math.sqrt(sum(x * x for x in q.values())) or 1.0
        out: dict[str, float] = {}
        for cid in causes:
            for by_cause in self._vec.values():
                v = by_cause.get(cid)
                shared = [t for t in q if t in v] if v else []
                # one shared word is chance ("work", "job"), however rare it is
                if len(shared) >= 2:
                    like = round(sum(q[t] * v[t] for t in shared) / norm, 4)
                    out[cid] = max(out.get(cid, 0.0), like)
        return out
