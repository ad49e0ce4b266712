#!/usr/bin/env python3
"""How many rounds of "run the first next check" it takes to confirm each cause, from a bare
symptom, against the budget (the fewest checks that give the facts its path tests + 2).

The truth of each round is the cause's first `fire` example (tests/reasoning/test_chains.py
holds the simulation and asserts that every cause is reached at all).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.reasoning.test_chains import CAUSES, budget_for, run_chain, uncoverable  # noqa: E402


def main() -> None:
    within, over, rows = 0, 0, []
    for cid in CAUSES:
        if uncoverable(cid):
            rows.append((cid, "-", "-", "no check produces a fact it needs"))
            continue
        budget = budget_for(cid)
        ok, ran, _ = run_chain(cid, budget=100)
        n = len(ran)
        rows.append((cid, n, budget, "ok" if ok and n <= budget else "over"))
        within += ok and n <= budget
        over += not (ok and n <= budget)
    for r in rows:
        print(f"{r[0]:45s} rounds {r[1]!s:>3}  budget {r[2]!s:>3}  {r[3]}")
    done = [r[1] for r in rows if isinstance(r[1], int)]
    print(f"\nwithin budget: {within}/{within + over}; rounds median {statistics.median(done)}, "
          f"max {max(done)}")


if __name__ == "__main__":
    main()
