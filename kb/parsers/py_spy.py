"""``py-spy dump`` stacks (one or many processes/ranks, old and new layouts) and the Python
``faulthandler`` form (``Thread 0x... (most recent call first):``).

For every process the main thread is found (``MainThread``; else faulthandler's current thread;
else the first thread with frames) and turned into a RankState: the collective it waits in and
its innermost frame. The rank is, in order of preference: a ``RANK``/``rank`` local (``--locals``),
the file name (``rank3``, ``dump_rank3.txt``), then the position of the dump (in the file, or,
for one-dump files, in the sorted list of inputs; :mod:`kb.inputs` renumbers those).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kb.parsers import ranks
from kb.parsers.base import ParseResult, strip_ansi, trim

NAME = "py_spy"

_PROCESS = re.compile(r"^(?:Process (\d+): (.*)|Stack dump for (.*))$")
_THREAD = re.compile(r'^Thread (\d+|0x[0-9A-Fa-f]+)(?: \(([a-z+]+)\))?(?:: "(.*)")?\s*$')
_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9A-Fa-f]+) \(most recent call first\):")
_FRAME = re.compile(r"^(?: {4}|\t\s*)(\S.*) \(([^()]*?)(?::(\d+))?\)\s*$")
_FH_FRAME = re.compile(r'^\s+File "(.+)", line (\d+) in (.+?)\s*$')
_LOCAL = re.compile(r"^ {8,}(RANK|rank|global_rank|GLOBAL_RANK): (\d+)\s*$")
_CMD_RANK = re.compile(r"--(?:node_)?rank[= ](\d+)\b|\bRANK=(\d+)")
_MAX_HOT = 20


@dataclass
class _Thread:
    name: str | None
    status: str | None
    current: bool = False
    frames: list[tuple[str, str, int | None]] = field(default_factory=list)


@dataclass
class _Process:
    pid: int | None = None
    cmdline: str = ""
    threads: list[_Thread] = field(default_factory=list)
    rank_local: int | None = None


def sniff(head: str) -> bool:
    """py-spy thread headers with indented frames, or faulthandler thread blocks."""
    head = strip_ansi(head)
    if re.search(r"^(Current thread|Thread) 0x[0-9A-Fa-f]+ \(most recent call first\):", head, re.M):
        return True
    if re.search(r"^Thread (\d+|0x[0-9A-Fa-f]+) \((idle|active|active\+gil|gil)\)(: \".*\")?\s*$", head, re.M):
        return True
    return bool(
        re.search(r'^Thread (\d+|0x[0-9A-Fa-f]+)( \([a-z+]+\))?(: ".*")?\s*\n(    |\t\s*)\S.* \(.*\)', head, re.M)
    )


def _read(lines: Iterable[str]) -> tuple[list[_Process], list[str]]:
    procs: list[_Process] = []
    errors: list[str] = []
    cur: _Process | None = None
    thread: _Thread | None = None
    for raw in lines:
        line = strip_ansi(raw).rstrip("\r\n")
        if not line.strip():
            continue
        m = _PROCESS.match(line)
        if m:
            cur = _Process(pid=int(m.group(1)) if m.group(1) else None, cmdline=m.group(2) or m.group(3) or "")
            procs.append(cur)
            thread = None
            continue
        m = _THREAD.match(line)
        fh = None if m else _FH_THREAD.match(line)
        if m or fh:
            new_main = bool(m) and m.group(3) == "MainThread"
            if (
                cur is None
                or (fh and fh.group(1) == "Thread" and _has_current(cur))
                or (new_main and any(_is_main(t) for t in cur.threads))
            ):
                # dumps concatenated without "Process" headers: a second MainThread (or a
                # faulthandler block after a "Current thread" block) starts the next process
                cur = _Process()
                procs.append(cur)
            if m:
                thread = _Thread(name=m.group(3), status=m.group(2))
            else:
                thread = _Thread(name=None, status=None, current=fh.group(1) == "Current thread")
            cur.threads.append(thread)
            continue
        if thread is None:
            if line.startswith("Error:"):
                errors.append(line.strip())
            continue
        m = _FRAME.match(line)
        if m:
            thread.frames.append((m.group(1).strip(), m.group(2), int(m.group(3)) if m.group(3) else None))
            continue
        m = _FH_FRAME.match(line)
        if m:
            thread.frames.append((m.group(3), _short(m.group(1)), int(m.group(2))))
            continue
        m = _LOCAL.match(line)
        if m and cur is not None and cur.rank_local is None and _is_main(thread):
            cur.rank_local = int(m.group(2))
    return procs, errors


def _has_current(proc: _Process) -> bool:
    return any(t.current for t in proc.threads)


def _short(path: str) -> str:
    """Shorten a faulthandler path like py-spy does (relative to site-packages or the stdlib)."""
    path = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    m = re.search(r"/lib/python\d[\d.]*/(.+)$", path)
    return m.group(1) if m else path


def _is_main(t: _Thread) -> bool:
    return t.name == "MainThread"


def _main_thread(proc: _Process) -> _Thread | None:
    for pick in (_is_main, lambda t: t.current and bool(t.frames), lambda t: bool(t.frames)):
        for t in proc.threads:
            if pick(t) and t.frames:
                return t
    return None


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Rank states, outlier ranks and hot functions from one file of dumps."""
    res = ParseResult(format=NAME, source=source)
    procs, errors = _read(lines)
    res.notes.extend(f"{source}: py-spy reported: {e}" for e in errors[:5])
    states: list[dict] = []
    rank_sources: list[str] = []
    hot: Counter[str] = Counter()
    status: dict[int, str] = {}
    name_rank = ranks.rank_from_name(source)
    for i, proc in enumerate(procs):
        main = _main_thread(proc)
        for t in proc.threads:
            if t.frames and t.status and t.status.startswith("active"):
                func, file, _ = t.frames[0]
                hot[f"{func} ({file})"] += 2 if t is main else 1
        if main is None:
            res.notes.append(f"{source}: dump {i + 1} has no thread with Python frames")
            continue
        cmd_rank = _CMD_RANK.search(proc.cmdline)
        if proc.rank_local is not None:
            rank, how = proc.rank_local, "locals"
        elif name_rank is not None and len(procs) == 1:
            rank, how = name_rank, "name"
        elif cmd_rank:
            rank, how = int(cmd_rank.group(1) or cmd_rank.group(2)), "cmdline"
        else:
            rank, how = i, "order"
        func, file, line = main.frames[0]
        pairs = [(f, p) for f, p, _ in main.frames]
        collective = ranks.collective_of(pairs)
        status.setdefault(rank, ranks.position(pairs))
        states.append({
            "rank": rank,
            "collective": collective,
            "frame": f"{func} ({file}:{line})" if line is not None else f"{func} ({file})",
        })
        rank_sources.append(how)
    res.meta["rank_sources"] = rank_sources
    res.meta["rank_status"] = status
    facts: dict = ranks.checkpoint_wait(status)
    if states:
        rank_states, outliers, notes = ranks.analyse(states)
        facts.setdefault("distributed", {}).update({"rank_states": rank_states, "outlier_ranks": outliers})
        res.notes.extend(notes)
    if hot:
        facts["cpu"] = {"hot_functions": [f for f, _ in hot.most_common(_MAX_HOT)]}
    if not procs:
        res.notes.append(f"{source}: no py-spy or faulthandler thread stacks found")
    res.facts = trim(facts)
    return res
