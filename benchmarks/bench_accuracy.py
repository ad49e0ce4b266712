#!/usr/bin/env python3
"""Accuracy of `kb diagnose` on the corpus of real incidents in tests/incidents/.

Every incident is a directory tests/incidents/<branch>/<slug>/ holding `incident.yaml` and the
artifacts the reporter pasted, verbatim. kb is run on it exactly as a new user would run it:

    kb diagnose --input <artifact> [--input <artifact> ...] [--symptom "<words>"] --format json

in two modes: `files` (the artifacts alone) and `files+words` (the artifacts plus the reporter's
own sentence), and with `--title` a third, `files+title+words`: the thread's title said before the
words (a reporter's one-line statement of the problem, written before the answer; kept apart so
the first two stay comparable with earlier measurements). When kb refuses the combined run (exit
2), each artifact is tried alone to find which ones it refuses, and the run is repeated with the
ones it accepts (a user drops the file kb rejects). An incident without artifacts is skipped in `files` mode.

Scores, per mode:
* refused: artifacts kb refused (exit 2) / artifacts given.
* branch: the first reported branch is the expected branch (or the branch of a cause the
  incident accepts).
* top-1 / top-3 (incidents whose cause is in the knowledge): an accepted cause id is first / in
  the first three of findings + hypotheses, in report order.
* outside ok (incidents whose cause is outside the knowledge): nothing confirmed, or only
  causes the incident lists as tolerated (`expected.accepted`).
* confident-wrong: a confirmed finding whose cause id is not accepted for the incident.

The keyword-grep baseline counts branch words and cause-id words in the same text (artifacts,
plus the words in `files+words`) and picks the highest; a grep has no notion of a hypothesis, so
each cause it names counts as asserted (its confident-wrong = wrong top cause).

    python benchmarks/bench_accuracy.py            # table
    python benchmarks/bench_accuracy.py --json     # machine-readable
    python benchmarks/bench_accuracy.py -v         # plus one line per incident
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "incidents"
BRANCHES = ("gpu_util", "oom", "nccl", "numerics", "inference", "compile")
MODES: tuple[str, ...] = ("files", "files+words")
TITLE_MODE = "files+title+words"
TIMEOUT_S = 60


# ---------------------------------------------------------------- corpus


@dataclass
class Incident:
    slug: str
    branch_dir: str
    path: Path
    source: str
    title: str
    words: str
    artifacts: list[str]
    cause: str
    outside_cause: str | None
    branch: str
    top: str | None
    accepted: list[str]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def outside(self) -> bool:
        return self.cause == "outside"

    @property
    def branches(self) -> set[str]:
        """The branches a right answer may lead with: the incident's own, and the branch of any
        accepted cause filed under another (a GPU's Xid fault is both a hardware error of the
        loop and an NCCL fault): naming the accepted cause's branch is not a wrong branch."""
        return {self.branch} | {c.split(".", 1)[0] for c in self.accepted}

    @property
    def artifact_paths(self) -> list[Path]:
        return [self.path / a for a in self.artifacts]


def knowledge_cause_ids(root: Path = ROOT) -> set[str]:
    """Every cause id in graphs/<branch>/*.yaml."""
    ids: set[str] = set()
    for branch in BRANCHES:
        for f in sorted((root / "graphs" / branch).glob("*.yaml")):
            data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            cid = data.get("id")
            if isinstance(cid, str) and "." in cid:
                ids.add(cid)
    return ids


def load_incident(path: Path) -> Incident:
    data = yaml.safe_load((path / "incident.yaml").read_text(encoding="utf-8")) or {}
    exp = data.get("expected") or {}
    top = exp.get("top")
    accepted = list(exp.get("accepted") or [])
    if top and top not in accepted:
        accepted.insert(0, top)
    return Incident(
        slug=path.name,
        branch_dir=path.parent.name,
        path=path,
        source=str(data.get("source") or ""),
        title=str(data.get("title") or ""),
        words=str(data.get("words") or "").strip(),
        artifacts=[str(a) for a in (data.get("artifacts") or [])],
        cause=str(data.get("cause") or ""),
        outside_cause=data.get("outside_cause"),
        branch=str(exp.get("branch") or ""),
        top=top,
        accepted=accepted,
        raw=data,
    )


def load_corpus(corpus: Path = CORPUS) -> list[Incident]:
    return [load_incident(p.parent) for p in sorted(corpus.glob("*/*/incident.yaml"))]


# ---------------------------------------------------------------- running kb


def kb_command() -> list[str]:
    exe = Path(sys.executable).parent / "kb"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("kb")
    if found:
        return [found]
    return [sys.executable, "-c", "from kb.cli.app import main; main()"]


@dataclass
class Run:
    rc: int
    report: dict[str, Any] | None
    stderr: str
    refused: dict[str, str]  # artifact name -> kb's error line(s)
    used: list[str]  # artifacts kb accepted and was run on
    crashed: bool = False

    @property
    def ranked(self) -> list[str]:
        if not self.report:
            return []
        out: list[str] = []
        for key in ("findings", "hypotheses"):
            for item in self.report.get(key) or []:
                cid = item.get("cause_id")
                if cid and cid not in out:
                    out.append(cid)
        return out

    @property
    def confirmed(self) -> list[str]:
        if not self.report:
            return []
        return [f.get("cause_id") for f in self.report.get("findings") or [] if f.get("cause_id")]

    @property
    def status(self) -> str:
        if self.report:
            return str(self.report.get("status"))
        return "refused" if self.refused else ("crash" if self.crashed else "no-report")

    @property
    def branch(self) -> str | None:
        rep = self.report
        if not rep:
            return None
        branches = rep.get("branches") or []
        if branches:
            b = branches[0]
            return b.get("id") if isinstance(b, dict) else str(b)
        if rep.get("symptom"):
            return str(rep["symptom"])
        ranked = self.ranked
        return ranked[0].split(".")[0] if ranked else None


# "subprocess": a fresh `kb` process per run, exactly as a user runs it (the benchmark's default).
# "inprocess": the same CLI (argument parsing, readers, exit codes) through click's test runner in
# this process, much faster; the regression test uses it. Runs are then serialised (one at a time).
INVOKER = os.environ.get("KB_BENCH_INVOKER", "subprocess")


def _invoke_inprocess(args: list[str]) -> tuple[int, str, str]:
    import traceback

    from typer.testing import CliRunner

    from kb.cli.app import app

    res = CliRunner().invoke(app, args)
    err = res.stderr or ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        tb = "".join(traceback.format_exception(res.exception))
        return 99, res.stdout, err + "\nTraceback (most recent call last):\n" + tb
    return res.exit_code, res.stdout, err


def _invoke(files: list[Path], words: str | None,
            source: str | None = None) -> tuple[int, str, str]:
    args = ["diagnose"]
    for f in files:
        args += ["--input", str(f)]
    if words:
        args += ["--symptom", words]
    if source:  # a case the precedents hold is scored without its own words among them
        args += ["--without-precedent", source]
    args += ["--format", "json"]
    if INVOKER == "inprocess":
        return _invoke_inprocess(args)
    cmd = kb_command() + args
    env = dict(os.environ, KB_NO_CACHE="1", NO_COLOR="1")
    env.pop("KB_LLM_MODEL", None)
    try:
        p = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, env=env
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"timeout after {TIMEOUT_S}s"
    return p.returncode, p.stdout, p.stderr


def _parse(rc: int, out: str, err: str) -> tuple[dict[str, Any] | None, bool]:
    crashed = "Traceback (most recent call last)" in err or rc not in (0, 1, 2, 3)
    if rc in (0, 1, 3):
        try:
            return json.loads(out), crashed
        except json.JSONDecodeError:
            return None, True
    return None, crashed


def said(inc: Incident, mode: str) -> str | None:
    """What the reporter said in a mode: nothing, the first post's words, or the title before them."""
    if mode == "files":
        return None
    if mode == TITLE_MODE and inc.title:
        return f"{inc.title.strip().rstrip('.')}. {inc.words}".strip()
    return inc.words or None


def run_kb(inc: Incident, mode: str) -> Run | None:
    """Run kb on one incident in one mode; None when the mode has nothing to give kb."""
    words = said(inc, mode)
    files = inc.artifact_paths
    if not files and not words:
        return None
    rc, out, err = _invoke(files, words, inc.source)
    report, crashed = _parse(rc, out, err)
    refused: dict[str, str] = {}
    used = [f.name for f in files]
    if rc == 2 and files:
        # Find which artifacts kb refuses, then run on the ones it accepts.
        ok: list[Path] = []
        for f in files:
            rc1, _out1, err1 = _invoke([f], None, inc.source)
            if rc1 == 2:
                refused[f.name] = err1.strip()
            else:
                ok.append(f)
        if not refused:  # refused only together (or the words): record the combined error
            refused["<combined>"] = err.strip()
        used = [f.name for f in ok]
        if ok or words:
            rc, out, err = _invoke(ok, words, inc.source)
            report, crashed2 = _parse(rc, out, err)
            crashed = crashed or crashed2
    return Run(
        rc=rc, report=report, stderr=err.strip(), refused=refused, used=used, crashed=crashed
    )


# ---------------------------------------------------------------- keyword-grep baseline

BRANCH_WORDS: dict[str, tuple[str, ...]] = {
    "gpu_util": ("utilization", "utilisation", "gpu-util", "util", "idle", "dataloader",
                 "num_workers", "slow", "throughput", "利用率"),
    "oom": ("out of memory", "oom", "outofmemoryerror", "tried to allocate", "memory", "显存"),
    "nccl": ("nccl", "all_reduce", "allreduce", "watchdog", "timeout", "collective", "rank",
             "infiniband", "net/ib", "socket", "hang"),
    "numerics": ("nan", "inf", "overflow", "loss scale", "diverge", "fp16", "bf16", "precision",
                 "spike"),
    "inference": ("vllm", "sglang", "tensorrt", "trt-llm", "ttft", "tpot", "tokens/s", "kv cache",
                  "serve", "throughput", "latency", "preempt"),
    "compile": ("torch.compile", "dynamo", "graph break", "recompil", "inductor", "guard",
                "cache_size_limit", "recompile_limit"),
}


def _cause_words(cid: str) -> list[str]:
    name = cid.split(".", 1)[1]
    return [w for w in name.split("_") if len(w) > 2]


def baseline(text: str, cause_ids: set[str]) -> tuple[str | None, list[str]]:
    low = text.lower()
    scores = {b: sum(low.count(w) for w in ws) for b, ws in BRANCH_WORDS.items()}
    branch = max(scores, key=lambda b: scores[b]) if any(scores.values()) else None
    if branch is None:
        return None, []
    ranked = []
    for cid in sorted(c for c in cause_ids if c.startswith(branch + ".")):
        s = sum(low.count(w) for w in _cause_words(cid))
        if s:
            ranked.append((s, cid))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    return branch, [c for _, c in ranked]


def incident_text(inc: Incident, mode: str) -> str:
    parts = []
    for f in inc.artifact_paths:
        try:
            parts.append(f.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    if mode != "files":
        parts.append(said(inc, mode) or "")
    return "\n".join(parts)


# ---------------------------------------------------------------- scoring


@dataclass
class Score:
    n: int = 0
    n_known: int = 0
    n_outside: int = 0
    artifacts: int = 0
    refused: int = 0
    crashed: int = 0
    branch_ok: int = 0
    top1: int = 0
    top3: int = 0
    outside_ok: int = 0
    confident_wrong: int = 0

    def pct(self, a: int, b: int) -> str:
        return f"{a}/{b} ({100.0 * a / b:.0f} %)" if b else "n/a"

    def as_dict(self) -> dict[str, Any]:
        def r(a: int, b: int) -> float | None:
            return round(a / b, 4) if b else None

        return {
            "incidents": self.n, "in_knowledge": self.n_known, "outside": self.n_outside,
            "artifacts": self.artifacts, "refused_artifacts": self.refused,
            "refused_rate": r(self.refused, self.artifacts), "crashed": self.crashed,
            "branch": self.branch_ok, "branch_rate": r(self.branch_ok, self.n),
            "top1": self.top1, "top1_rate": r(self.top1, self.n_known),
            "top3": self.top3, "top3_rate": r(self.top3, self.n_known),
            "outside_ok": self.outside_ok, "outside_ok_rate": r(self.outside_ok, self.n_outside),
            "confident_wrong": self.confident_wrong,
        }


def wrong_confirmed(inc: Incident, run: Run) -> list[str]:
    return [c for c in run.confirmed if c not in inc.accepted]


def evaluate(incidents: list[Incident], jobs: int = 2) -> dict[str, Any]:
    cause_ids = knowledge_cause_ids()
    tasks = [(inc, mode) for inc in incidents for mode in MODES]
    workers = 1 if INVOKER == "inprocess" else max(1, jobs)
    with ThreadPoolExecutor(max_workers=workers) as ex:
        runs = list(ex.map(lambda t: run_kb(*t), tasks))
    by_key = {(t[0].slug, t[1]): r for t, r in zip(tasks, runs)}

    scores = {("kb", m): Score() for m in MODES} | {("grep", m): Score() for m in MODES}
    rows: list[dict[str, Any]] = []
    confident_wrong: list[dict[str, Any]] = []
    refused: dict[tuple[str, str], dict[str, Any]] = {}
    crashes: list[dict[str, Any]] = []
    for inc in incidents:
        row: dict[str, Any] = {"slug": inc.slug, "branch": inc.branch, "cause": inc.cause,
                               "accepted": inc.accepted, "source": inc.source}
        for mode in MODES:
            run = by_key[(inc.slug, mode)]
            # kb
            if run is not None:
                s = scores[("kb", mode)]
                s.n += 1
                s.n_known += 0 if inc.outside else 1
                s.n_outside += 1 if inc.outside else 0
                s.artifacts += len(inc.artifacts)
                s.refused += len([a for a in run.refused if a != "<combined>"])
                s.crashed += 1 if run.crashed else 0
                ranked = run.ranked
                b_ok = run.branch in inc.branches
                s.branch_ok += b_ok
                t1 = t3 = o_ok = False
                if inc.outside:
                    o_ok = not wrong_confirmed(inc, run)
                    s.outside_ok += o_ok
                else:
                    t1 = bool(ranked) and ranked[0] in inc.accepted
                    t3 = any(c in inc.accepted for c in ranked[:3])
                    s.top1 += t1
                    s.top3 += t3
                wrong = wrong_confirmed(inc, run)
                if wrong:
                    s.confident_wrong += 1
                    confident_wrong.append({
                        "slug": inc.slug, "mode": mode, "expected": inc.accepted or ["outside"],
                        "confirmed": run.confirmed, "wrong": wrong, "source": inc.source,
                    })
                for art, msg in run.refused.items():
                    entry = {"slug": inc.slug, "artifact": art, "error": msg}
                    refused.setdefault((inc.slug, art), entry)
                if run.crashed:
                    crashes.append({
                        "slug": inc.slug, "mode": mode, "rc": run.rc, "stderr": run.stderr[-800:],
                    })
                row[f"kb[{mode}]"] = {"status": run.status, "branch": run.branch,
                                      "ranked": ranked[:5],
                                      "confirmed": run.confirmed, "refused": sorted(run.refused),
                                      "branch_ok": b_ok, "top1": t1, "top3": t3,
                                      "outside_ok": o_ok if inc.outside else None, "wrong": wrong}
            # grep baseline
            if mode == "files" and not inc.artifacts:
                continue
            g = scores[("grep", mode)]
            g.n += 1
            g.n_known += 0 if inc.outside else 1
            g.n_outside += 1 if inc.outside else 0
            gb, granked = baseline(incident_text(inc, mode), cause_ids)
            g.branch_ok += gb in inc.branches
            if inc.outside:
                ok = not granked or granked[0] in inc.accepted
                g.outside_ok += ok
                g.confident_wrong += 0 if ok else 1
            else:
                g.top1 += bool(granked) and granked[0] in inc.accepted
                g.top3 += any(c in inc.accepted for c in granked[:3])
                g.confident_wrong += 1 if granked and granked[0] not in inc.accepted else 0
            row[f"grep[{mode}]"] = {"branch": gb, "ranked": granked[:3]}
        rows.append(row)

    return {
        "corpus": {"incidents": len(incidents),
                   "per_branch": {b: sum(1 for i in incidents if i.branch == b) for b in BRANCHES},
                   "outside": sum(1 for i in incidents if i.outside)},
        "scores": {f"{who}[{mode}]": s.as_dict() for (who, mode), s in scores.items()},
        "confident_wrong": confident_wrong,
        "refused": sorted(refused.values(), key=lambda d: (d["slug"], d["artifact"])),
        "crashes": crashes,
        "incidents": rows,
        "_scores": scores,
    }


def table(result: dict[str, Any]) -> str:
    scores: dict[tuple[str, str], Score] = result["_scores"]
    cols = [(w, m) for w in ("kb", "grep") for m in MODES]
    head = ["metric"] + [f"{w} ({m})" for w, m in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def line(name: str, f) -> None:
        lines.append("| " + " | ".join([name] + [f(scores[c], c[0]) for c in cols]) + " |")

    line("incidents run", lambda s, w: str(s.n))
    line("refused inputs", lambda s, w: s.pct(s.refused, s.artifacts) if w == "kb" else "—")
    line("crashes", lambda s, w: str(s.crashed) if w == "kb" else "—")
    line("branch right", lambda s, w: s.pct(s.branch_ok, s.n))
    line("right cause first (top-1)", lambda s, w: s.pct(s.top1, s.n_known))
    line("right cause in top 3", lambda s, w: s.pct(s.top3, s.n_known))
    line("outside: nothing wrong confirmed", lambda s, w: s.pct(s.outside_ok, s.n_outside))
    line("confident-wrong", lambda s, w: str(s.confident_wrong))
    c = result["corpus"]
    per = ", ".join(f"{b} {n}" for b, n in c["per_branch"].items())
    out = [f"Corpus: {c['incidents']} incidents ({per}; {c['outside']} outside the knowledge).", ""]
    out += lines
    out.append("")
    out.append("top-1/top-3 over incidents whose cause is in the knowledge; targets: branch >= 95 %, "
               "top-1 >= 60 %, top-3 >= 80 %, confident-wrong 0. The grep baseline asserts every "
               "cause it names.")
    if result["confident_wrong"]:
        out += ["", "Confident-wrong (kb confirmed a cause the thread does not support):"]
        for cw in result["confident_wrong"]:
            out.append(f"  - {cw['slug']} [{cw['mode']}]: confirmed {cw['wrong']}, "
                       f"expected {cw['expected']}")
    if result["refused"]:
        out += ["", "Refused inputs:"]
        for r in result["refused"]:
            msg = " ".join(r["error"].split())[:200]
            out.append(f"  - {r['slug']}/{r['artifact']}: {msg}")
    if result["crashes"]:
        out += ["", "Crashes:"]
        for c2 in result["crashes"]:
            out.append(f"  - {c2['slug']} [{c2['mode']}] rc={c2['rc']}: {c2['stderr'][-200:]}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per incident")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel kb processes")
    ap.add_argument("--only", action="append", default=[], help="slug (repeatable)")
    ap.add_argument("--corpus", type=Path, default=CORPUS,
                    help="the corpus folder (default tests/incidents; the held-out set is "
                         "tests/heldout)")
    ap.add_argument("--title", action="store_true",
                    help=f"add the mode {TITLE_MODE}: the thread's title said before the words")
    ap.add_argument("--inprocess", action="store_true",
                    help="run the CLI in this process (fast) instead of one `kb` process per run")
    args = ap.parse_args(argv)
    global INVOKER, MODES
    if args.title:
        MODES = (*MODES, TITLE_MODE)
    if args.inprocess:
        INVOKER = "inprocess"
    incidents = load_corpus(args.corpus)
    if args.only:
        incidents = [i for i in incidents if i.slug in args.only]
    result = evaluate(incidents, jobs=args.jobs)
    if args.json:
        result.pop("_scores")
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(table(result))
    if args.verbose:
        print()
        for row in result["incidents"]:
            k = row.get("kb[files+words]") or {}
            kf = row.get("kb[files]") or {}
            print(f"{row['slug']:<44} exp={row['cause']:<34} files:{kf.get('status', '-'):<12} "
                  f"{(kf.get('ranked') or ['-'])[0]:<34} words:{k.get('status', '-'):<12} "
                  f"{(k.get('ranked') or ['-'])[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
