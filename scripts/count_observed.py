"""Count how often each cause was behind a real incident, for the ranking prior.

Reads every ``incident.yaml`` of the corpora of real incidents (``tests/incidents`` and
``tests/heldout``: public threads with an established cause) and writes
``graphs/observed.yaml``: per branch, how many incidents the corpus holds, and per cause, in how
many an expert accepts it as the answer. kb orders hypotheses of equal evidence by these counts
plus the cause's ``prevalence`` (a few incidents of belief). Never edit the file by hand: run

    python scripts/count_observed.py            # rewrite graphs/observed.yaml
    python scripts/count_observed.py --check    # exit 1 when it is out of date (CI)

Cases gathered after the file was written (a new held-out batch) do not count until it is
rewritten, so a batch is scored before its answers reach the prior.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("tests/incidents", "tests/heldout")
OUT = ROOT / "graphs" / "observed.yaml"
HEADER = """\
# How often each cause was an accepted answer among real incidents of its branch (public
# threads with an established cause). Written by scripts/count_observed.py; do not edit.
# A prior for ordering hypotheses of equal evidence, never evidence.
"""


def count(root: Path = ROOT) -> dict:
    """The counts over the corpora under ``root``, as the file's mapping."""
    incidents: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    for corpus in CORPORA:
        for path in sorted((root / corpus).glob("*/*/incident.yaml")):
            case = yaml.safe_load(path.read_text(encoding="utf-8"))
            expected = case["expected"]
            incidents[expected["branch"]] += 1
            accepted.update(dict.fromkeys(expected.get("accepted") or (), 1))
    return {
        "source": f"{' + '.join(CORPORA)}: {sum(incidents.values())} incidents",
        "incidents": dict(sorted(incidents.items())),
        "accepted": dict(sorted(accepted.items())),
    }


def render(data: dict) -> str:
    return HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when graphs/observed.yaml differs from the corpora")
    args = ap.parse_args(argv)
    text = render(count())
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT}: out of date; run python scripts/count_observed.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
