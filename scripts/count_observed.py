"""Count how often each cause was behind a real incident, and keep their words, for ranking.

Reads every ``incident.yaml`` of the corpora of real incidents (``tests/incidents`` and
``tests/heldout``: public threads with an established cause) and writes two knowledge files:

- ``graphs/observed.yaml``: per branch, how many incidents the corpus holds, and per cause, in
  how many an expert accepts it as the answer. kb orders hypotheses of equal evidence by these
  counts plus the cause's ``prevalence`` (a few incidents of belief). Per pair of causes, in how
  many both were accepted: a cause usually accepted beside one already ranked adds little below
  it.
- ``graphs/precedents.yaml``: each incident with words, its source, branch, accepted
  causes and the reporter's words; the nearest of them lend their causes weight among tied
  hypotheses, and their branch to words nothing else places (``engine/precedents.py``).

Never edit the files by hand: run

    python scripts/count_observed.py            # rewrite both files
    python scripts/count_observed.py --check    # exit 1 when either is out of date (CI)

Cases gathered after the files were written (a new held-out batch) do not count until they are
rewritten, so a batch is scored before its answers reach the prior or the precedents. A case
already in them is scored without its own precedent (``kb diagnose --without-precedent``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("tests/incidents", "tests/heldout")
OUT = ROOT / "graphs" / "observed.yaml"
CASES_OUT = ROOT / "graphs" / "precedents.yaml"
HEADER = """\
# How often each cause was an accepted answer among real incidents of its branch (public
# threads with an established cause). Written by scripts/count_observed.py; do not edit.
# A prior for ordering hypotheses of equal evidence, never evidence.
"""
CASES_HEADER = """\
# Real incidents (public threads with an established cause): the reporter's words and the
# causes accepted for them. Written by scripts/count_observed.py; do not edit. The nearest
# cases to a text lend their causes weight among tied hypotheses, never evidence.
"""


def _cases(root: Path) -> list[dict]:
    out = []
    for corpus in CORPORA:
        for path in sorted((root / corpus).glob("*/*/incident.yaml")):
            out.append(yaml.safe_load(path.read_text(encoding="utf-8")))
    return out


def count(cases: list[dict]) -> dict:
    """The counts over the corpora's ``cases``, as the file's mapping."""
    incidents: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    together: Counter[tuple[str, str]] = Counter()
    for case in cases:
        expected = case["expected"]
        incidents[expected["branch"]] += 1
        answers = sorted(set(expected.get("accepted") or ()))
        accepted.update(answers)
        together.update(combinations(answers, 2))
    pairs: dict[str, dict[str, int]] = {}
    for (a, b), n in sorted(together.items()):
        pairs.setdefault(a, {})[b] = n
    return {
        "source": f"{' + '.join(CORPORA)}: {sum(incidents.values())} incidents",
        "incidents": dict(sorted(incidents.items())),
        "accepted": dict(sorted(accepted.items())),
        "together": pairs,
    }


def precedents(cases: list[dict]) -> dict:
    """The incidents with words, as the precedents file's mapping (one whose cause was outside
    the knowledge has no accepted cause: it tells the branch only)."""
    out = []
    for case in cases:
        expected = case["expected"]
        words = " ".join(str(case.get("words") or "").split())
        if words:
            out.append({"source": str(case["source"]).strip(), "branch": expected["branch"],
                        "accepted": list(expected["accepted"]), "words": words})
    return {"source": f"{' + '.join(CORPORA)}: {len(out)} incidents with words",
            "cases": sorted(out, key=lambda c: c["source"])}


def render(data: dict, header: str = HEADER) -> str:
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when either file differs from the corpora")
    args = ap.parse_args(argv)
    cases = _cases(ROOT)  # read once for both files
    files = {OUT: render(count(cases)), CASES_OUT: render(precedents(cases), CASES_HEADER)}
    if args.check:
        stale = [p for p, text in files.items()
                 if (p.read_text(encoding="utf-8") if p.exists() else "") != text]
        for p in stale:
            print(f"{p}: out of date; run python scripts/count_observed.py", file=sys.stderr)
        return 1 if stale else 0
    for p, text in files.items():
        p.write_text(text, encoding="utf-8")
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
