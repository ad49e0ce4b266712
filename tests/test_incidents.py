"""The corpus of real incidents (tests/incidents/) as schema checks and regression tests.

Each incident is a public issue thread whose cause was established (a maintainer's diagnosis, a
merged fix, or the reporter confirming what fixed it), with the reporter's own artifacts kept
verbatim. Here we check that every case is well formed and that kb, run through the CLI as a new
user would run it (`kb diagnose --input <artifacts> --symptom "<words>" --format json`), never
confirms a cause the thread does not support. Accuracy targets (branch, top-1, top-3) are measured
by benchmarks/bench_accuracy.py, not asserted here.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "bench_accuracy", ROOT / "benchmarks" / "bench_accuracy.py"
)
bench = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_accuracy", bench)
_spec.loader.exec_module(bench)

DEV = bench.load_corpus()
#: the held-out set (tests/heldout/): scored by bench_accuracy.py --corpus tests/heldout, never
#: tuned against; here it is only checked for form and for never confirming a wrong cause
HELDOUT = bench.load_corpus(ROOT / "tests" / "heldout")
INCIDENTS = DEV + HELDOUT
IDS = [i.slug for i in INCIDENTS]
BRANCHES = bench.BRANCHES
REQUIRED = ("source", "title", "words", "artifacts", "cause", "expected", "established_by")


@pytest.fixture(scope="module")
def cause_ids() -> set[str]:
    return bench.knowledge_cause_ids()


def test_corpus_size():
    assert len(DEV) >= 60, f"only {len(DEV)} incidents"
    assert len(HELDOUT) >= 15, f"only {len(HELDOUT)} held-out incidents"
    per_branch = Counter(i.branch for i in DEV)
    thin = {b: per_branch.get(b, 0) for b in BRANCHES if per_branch.get(b, 0) < 8}
    assert not thin, f"branches with fewer than 8 incidents: {thin}"
    assert sum(1 for i in DEV if i.outside) >= 6, "need >= 6 incidents outside the knowledge"


def test_slugs_unique():
    dup = [s for s, n in Counter(IDS).items() if n > 1]
    assert not dup, f"duplicate slugs: {dup}"


def test_sources_unique():
    # one thread is one case: a second copy in the other corpus would score its own words
    dup = [s for s, n in Counter(i.source.strip() for i in INCIDENTS).items() if n > 1]
    assert not dup, f"a thread in the corpora twice: {dup}"


@pytest.mark.parametrize("inc", INCIDENTS, ids=IDS)
def test_schema(inc, cause_ids):
    missing = [k for k in REQUIRED if k not in inc.raw]
    assert not missing, f"{inc.path}/incident.yaml lacks {missing}"
    url = urlparse(inc.source)
    assert url.scheme == "https" and url.netloc, f"source is not a URL: {inc.source!r}"
    assert inc.title.strip() and inc.words, "title and words must not be empty"
    assert str(inc.raw["established_by"]).strip(), "established_by must say who established it"
    assert inc.branch in BRANCHES, f"expected.branch {inc.branch!r} is not a branch"
    assert inc.branch_dir == inc.branch, f"filed under {inc.branch_dir}/ but expects {inc.branch}"
    for name in inc.artifacts:
        f = inc.path / name
        assert f.is_file() and f.stat().st_size > 0, f"artifact {name} missing or empty"
    listed = set(inc.artifacts) | {"incident.yaml"}
    extra = sorted(p.name for p in inc.path.iterdir() if p.name not in listed)
    assert not extra, f"files not listed in artifacts: {extra}"
    if inc.outside:
        assert inc.top is None, "an outside incident expects no top cause"
        assert str(inc.outside_cause or "").strip(), "outside incidents describe it in outside_cause"
    else:
        assert inc.cause in cause_ids, f"cause {inc.cause!r} is not in graphs/"
        assert inc.top == inc.cause, "expected.top must be the established cause"
        assert inc.cause.startswith(inc.branch + "."), "cause and branch disagree"
    for cid in inc.accepted:
        assert cid in cause_ids, f"accepted cause {cid!r} is not in graphs/"


def _twins() -> dict[str, str]:
    """Causes the knowledge files twice, once per branch, with one title (one mechanism seen from
    training and from serving): each id to its twin."""
    from kb.loaded import load_knowledge

    by_title: dict[tuple[str, str], list[str]] = {}
    for c in load_knowledge().causes.values():
        by_title.setdefault((c.id.split(".", 1)[1], c.title.get("en")), []).append(c.id)
    return {a: b for ids in by_title.values() if len(ids) == 2 for a, b in (ids, ids[::-1])}


def test_twins_are_accepted_together():
    twins = _twins()
    assert twins, "the knowledge holds twins (warm-up in the timing, VRAM spilling to system memory)"
    # an answer with either twin names the mechanism the thread established
    alone = [(i.slug, cid) for i in INCIDENTS for cid in i.accepted
             if cid in twins and twins[cid] not in i.accepted]
    assert not alone, f"incidents accept one twin without the other: {alone[:5]}"


@pytest.fixture(scope="module")
def runs() -> dict:
    """kb on every incident (artifacts + words); refused files are dropped and the run repeated.

    The CLI runs in this process through click's test runner (same argument parsing, readers and
    exit codes, a fraction of the time); KB_INCIDENTS_SUBPROCESS=1 runs one `kb` process per case
    instead, two at a time, exactly as the benchmark does."""
    if os.environ.get("KB_INCIDENTS_SUBPROCESS"):
        bench.INVOKER = "subprocess"
        with ThreadPoolExecutor(max_workers=2) as ex:
            results = list(ex.map(lambda i: bench.run_kb(i, "files+words"), INCIDENTS))
    else:
        bench.INVOKER = "inprocess"
        results = [bench.run_kb(i, "files+words") for i in INCIDENTS]
    return dict(zip(IDS, results))


@pytest.mark.parametrize("inc", INCIDENTS, ids=IDS)
def test_never_confident_wrong(inc, runs):
    run = runs[inc.slug]
    assert run is not None
    assert not run.crashed, f"kb crashed (rc={run.rc}): {run.stderr[-600:]}"
    wrong = bench.wrong_confirmed(inc, run)
    expected = inc.accepted or ["no confirmed cause (outside the knowledge)"]
    assert not wrong, f"kb confirmed {wrong}; the thread establishes {expected} ({inc.source})"


def test_the_title_mode_says_the_title_before_the_words():
    inc = next(i for i in DEV if i.title and i.words)
    said = bench.said(inc, bench.TITLE_MODE)
    assert said.startswith(inc.title.strip().rstrip(".")) and said.endswith(inc.words)
    # the two historical modes are unchanged: nothing, and the first post's words alone
    assert bench.said(inc, "files") is None and bench.said(inc, "files+words") == inc.words
    assert bench.TITLE_MODE not in bench.MODES  # measured only when asked (--title)
