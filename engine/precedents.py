"""Past cases whose words read like this one (TF-IDF cosine, nearest neighbours).

The knowledge may carry precedents: the words of past cases whose cause was established, each
with its source and the causes accepted for it. A text that reads like past cases of a cause
lends that cause weight among hypotheses the evidence leaves tied: people describe the same
trouble with the same words ("the first batch is slow", "after a few hundred steps"), words no
cause's own description holds. A weak signal: it orders tied hypotheses and may open a branch
nothing else places (hypotheses only); it never decides a step and never confirms a cause.

Knows nothing of the domain: the tokens are :func:`engine.resemblance.tokens`, the weights
TF-IDF over the precedents' words.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .resemblance import tokens

#: how many nearest past cases vote (each with its cosine; a cause's vote is their sum over
#: this many, so one close case alone weighs a tenth of ten)
NEAREST = 10
#: below this cosine a past case shares only common words with the text: it does not vote
MIN_SIMILARITY = 0.05
#: a posting's weight is stored as an integer number of these parts (JSON integers parse fast)
SCALE = 10_000
#: the second reading of the past cases, each cause's word frequencies (multinomial naive
#: Bayes): the pseudo-count every word gets for every cause. Small: a cause's own words count
#: most, and a word none of its past cases held costs it without ruling it out
SMOOTHING = 0.1


@dataclass(frozen=True)
class Near:
    """One past case near the text: its source, its branch, its accepted causes (none: its
    cause was outside the knowledge), its cosine."""

    source: str
    branch: str
    causes: tuple[str, ...]
    similarity: float


def _unit(tf: Counter[str], idf: Mapping[str, float]) -> dict[str, float]:
    v = {t: (1 + math.log(k)) * idf[t] for t, k in tf.items() if t in idf}
    norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
    return {t: x / norm for t, x in v.items() if x > 0}


def index_precedents(cases: Iterable[tuple[str, str, Iterable[str], str]]) -> str:
    """The precedents ``(source, branch, accepted causes, words)`` as TF-IDF unit vectors, as
    JSON text: ``{"idf": {token: idf}, "cases": [[source, branch, [cause, ...]]], "postings":
    {token: [case, weight, case, weight, ...]}}``, weights in units of 1/:data:`SCALE`
    (postings of integers, not vectors: a text reads only the lists of its own tokens, and
    loading parses numbers and builds no per-case dicts). A token only one case holds tells
    nothing about any other: it is left out."""
    docs = [(src, branch, sorted(set(causes)), Counter(tokens(words)))
            for src, branch, causes, words in cases]
    n = len(docs)
    df: Counter[str] = Counter()
    for *_, tf in docs:
        df.update(tf.keys())
    idf = {t: round(math.log((1 + n) / (1 + d)), 5) for t, d in sorted(df.items()) if d >= 2}
    postings: dict[str, list[int]] = {}
    # each cause's word counts over its cases, summed here once, not on every start; and each
    # such case's own (to leave it out), as a JSON text parsed only by a reading that leaves a
    # case out (a benchmark's), never by every diagnosis with text
    freq: dict[str, dict[str, int]] = {}
    own: list[list[Any]] = []
    for i, (_, _, causes, tf) in enumerate(docs):
        for t, x in sorted(_unit(tf, idf).items()):
            postings.setdefault(t, []).extend((i, round(x * SCALE)))
        words = sorted((t, k) for t, k in tf.items() if t in idf) if causes else []
        own.append([x for tk in words for x in tk])
        for c in causes:
            f = freq.setdefault(c, {})
            for t, k in words:
                f[t] = f.get(t, 0) + k
    return json.dumps({"idf": idf, "cases": [[src, branch, causes] for src, branch, causes, _ in docs],
                       "postings": dict(sorted(postings.items())),
                       "freq": {c: dict(sorted(f.items())) for c, f in sorted(freq.items())},
                       "own": json.dumps(own, ensure_ascii=False, separators=(",", ":"))},
                      ensure_ascii=False, separators=(",", ":"))


class Precedents:
    """The past cases, searchable by a text's words."""

    def __init__(self, index: str) -> None:
        data = json.loads(index)
        self._idf: dict[str, float] = data["idf"]
        self._cases: list[tuple[str, str, tuple[str, ...]]] = [
            (src, branch, tuple(causes)) for src, branch, causes in data["cases"]]
        # token -> [case, weight, case, weight, ...]: a text touches only its tokens' cases
        self._post: dict[str, list[int]] = data["postings"]
        # cause -> {token: count} over its cases; per case, its own [token, count, ...]
        self._freq: dict[str, dict[str, int]] = data.get("freq", {})
        self._total = {c: sum(f.values()) for c, f in self._freq.items()}
        # the words some cause's cases hold (one no known case holds tells no cause apart)
        self._vocab = {t for f in self._freq.values() for t in f}
        self._own_text: str = data.get("own", "[]")
        self._own: list[list[Any]] | None = None
        self._by_source = {src: i for i, (src, _, causes) in enumerate(self._cases) if causes}

    def __len__(self) -> int:
        return len(self._cases)

    def nearest(self, text: str, k: int = NEAREST, without: Collection[str] = (),
                known: bool = False) -> list[Near]:
        """The ``k`` past cases most like ``text`` (cosine at least :data:`MIN_SIMILARITY`),
        closest first; only those with an accepted cause when ``known``. Cases whose source
        is in ``without`` are left out (a case scored against the corpus that holds it)."""
        return self.top(self.similar(text, without), k, known)

    def similar(self, text: str, without: Collection[str] = ()) -> list[Near]:
        """Every past case at least :data:`MIN_SIMILARITY` like ``text``, closest first (one
        pass for the callers that want several cuts of it: :meth:`top`)."""
        q = {t: w / SCALE for t, w in _unit(Counter(tokens(text)), self._idf).items()}
        sims: dict[int, float] = {}
        for t, w in q.items():
            post = self._post.get(t, ())
            for j in range(0, len(post), 2):
                i = post[j]
                sims[i] = sims.get(i, 0.0) + w * post[j + 1]
        ranked = sorted(((s, i) for i, s in sims.items() if s >= MIN_SIMILARITY and
                         self._cases[i][0] not in without), key=lambda p: (-p[0], p[1]))
        # (stored weights are rounded: a text identical to a case may sum a hair over 1)
        return [Near(*self._cases[i], min(1.0, round(s, 4))) for s, i in ranked]

    def readings(self, text: str, causes: Iterable[str], without: Collection[str] = ()) -> dict[str, float]:
        """How well each cause's past cases account for the text's words: the log-likelihood
        of its words under the cause's word frequencies (multinomial naive Bayes, smoothed by
        :data:`SMOOTHING`), relative to the best (0 for it, below 0 for the others), over the
        square root of how many words it read (a text twice as long, saying the same twice,
        reads about 1.4 times as strongly, not twice). Where
        the nearest cases are few or far, the frequencies of all a cause's cases still speak.
        Cases whose source is in ``without`` are left out."""
        causes = list(dict.fromkeys(causes))
        words = Counter(t for t in tokens(text) if t in self._vocab)
        if not words or not causes:
            return {c: 0.0 for c in causes}
        gone: dict[str, Counter[str]] = {}
        for src in without:  # the left-out cases' own counts come off their causes
            i = self._by_source.get(src)
            if i is None:
                continue
            if self._own is None:
                self._own = json.loads(self._own_text)
            own = self._own[i]
            for c in self._cases[i][2]:
                less = gone.setdefault(c, Counter())
                for j in range(0, len(own), 2):
                    less[own[j]] += own[j + 1]
        out: dict[str, float] = {}
        for c in causes:
            f, less = self._freq.get(c, {}), gone.get(c, Counter())
            n = self._total.get(c, 0) - sum(less.values()) + SMOOTHING * len(self._vocab)
            out[c] = sum(k * math.log((f.get(t, 0) - less[t] + SMOOTHING) / n) for t, k in words.items())
        best = max(out.values())
        # over the square root of the words read: a text's words are not independent draws (a
        # long report repeats its theme), so their summed log-likelihoods would grow with its
        # length and let a long text's frequencies override everything else, a short one's
        # count for little
        per = math.sqrt(sum(words.values()))
        return {c: round((v - best) / per, 4) for c, v in out.items()}

    @staticmethod
    def top(similar: Iterable[Near], k: int = NEAREST, known: bool = False) -> list[Near]:
        """The first ``k`` of ``similar`` (closest first); only those with an accepted cause
        when ``known``."""
        return [n for n in similar if n.causes or not known][:k]

    @staticmethod
    def votes(near: Iterable[Near], k: int = NEAREST) -> dict[str, float]:
        """Each cause's vote: the summed cosine of the near cases that accepted it, over
        ``k`` (0..1)."""
        out: dict[str, float] = {}
        for n in near:
            for c in n.causes:
                out[c] = out.get(c, 0.0) + n.similarity / k
        return {c: round(v, 4) for c, v in out.items()}

    @staticmethod
    def branch_votes(near: Iterable[Near], k: int = NEAREST) -> dict[str, float]:
        """Each branch's vote: the summed cosine of the near cases of that branch, over ``k``."""
        out: dict[str, float] = {}
        for n in near:
            out[n.branch] = out.get(n.branch, 0.0) + n.similarity / k
        return {b: round(v, 4) for b, v in out.items()}
