#!/usr/bin/env python3
"""Start-up and per-call speed of `kb diagnose`, as ratios measured side by side in one run.

* cold: wall time of `kb diagnose --facts <example>` in a fresh process, against the import
  floor of its dependencies (networkx, typer, experta, and pydantic's model machinery; experta
  needs the compat shim on Python >= 3.10, so the floor imports it through `engine.compat`).
  pydantic's top-level import is lazy: `import pydantic` alone loads none of BaseModel's
  machinery (about 30 ms of pydantic's own import), which kb cannot avoid, so the floor imports
  `BaseModel` as every pydantic user does. The ratio to the older floor (`import pydantic`) is
  printed beside it. Runs are interleaved so that machine noise hits all sides alike; the median
  is reported.
* warm: `kb.diagnose()` per call on every bundled example facts file, in one process.

Both sides run from compiled bytecode, as an installed package does (pip writes it at install
time): the sources are byte-compiled first, since a PYTHONDONTWRITEBYTECODE environment would
otherwise charge kb, and only kb, for compiling its own modules on every start.

Targets (README): cold <= 1.3x the import floor; warm <= 10 ms per facts file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples" / "facts").glob("*.json"))
FLOOR = "import kb.engine.compat, networkx, typer; from pydantic import BaseModel"
#: the floor before 2026-12-04's fifth session: pydantic imported lazily (see above)
LAZY_FLOOR = "import kb.engine.compat, pydantic, networkx, typer"


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    example = str(ROOT / "examples" / "facts" / "gpu_util.dataloader_bound.json")
    cli = [sys.executable, "-m", "kb", "diagnose", "--facts", example]
    floor = [sys.executable, "-c", FLOOR]
    lazy = [sys.executable, "-c", LAZY_FLOOR]
    subprocess.run([sys.executable, "-m", "compileall", "-q", "kb", "engine"], cwd=ROOT,
                   check=True)
    # warm the knowledge cache and the OS file cache once, and make sure the command works
    first = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, check=False)
    if first.returncode != 0:
        sys.exit(f"kb diagnose failed ({first.returncode}): {first.stderr.strip()}")
    cold, base, base_lazy = [], [], []
    for _ in range(args.runs):
        base.append(timed(floor))
        base_lazy.append(timed(lazy))
        cold.append(timed(cli))
    c, b, bl = statistics.median(cold), statistics.median(base), statistics.median(base_lazy)
    print(f"import floor ({FLOOR}): {b * 1000:.0f} ms (median of {args.runs})")
    print(f"older floor ({LAZY_FLOOR}): {bl * 1000:.0f} ms")
    print(f"cold `kb diagnose --facts`:  {c * 1000:.0f} ms (median of {args.runs})")
    print(f"cold ratio: {c / b:.2f}x the import floor (target <= 1.3x); {c / bl:.2f}x the older floor")

    sys.path.insert(0, str(ROOT))
    import kb

    docs = [json.loads(p.read_text()) for p in EXAMPLES]
    if not docs:
        sys.exit("no examples/facts/*.json to measure")
    for d in docs:
        kb.diagnose(d)  # compile the rules once
    reps = max(1, 300 // max(1, len(docs)))
    t = time.perf_counter()
    for _ in range(reps):
        for d in docs:
            kb.diagnose(d)
    per = (time.perf_counter() - t) / (reps * len(docs))
    print(f"warm kb.diagnose(): {per * 1000:.2f} ms per facts file over {len(docs)} examples "
          f"x {reps} (target <= 10 ms)")


if __name__ == "__main__":
    main()
