"""torch.compile / TorchDynamo logs: ``TORCH_LOGS=graph_breaks,recompiles`` (2023 logger form,
2.3+ glog form, 2.7+ structured graph breaks), the cache/recompile-limit warning and
``torch._dynamo.explain()`` output (2.1+ and the pre-2.1 string).

Graph breaks are counted by category (``GRAPH_BREAK_CATEGORIES``) from their reason text;
recompilations by the kind of their first guard failure (shape, dtype, other; the source
comment after ``#`` is not part of the guard).

Each graph break is counted once, however many lines its record has:

* a structured record (``Graph break in user code at ...``) is one break. When its reason is
  the generic ``Encountered graph break when attempting to trace <OPCODE>: ...`` (2.9+), the
  category comes from that reason together with the record's ``Explanation:`` line (e.g.
  "Dynamo does not know how to trace builtin operator `print`");
* the warning block of 2.9+ (``Graph break from `Tensor.item()`, consider setting:`` and its
  ``Graph break: from user code at:``) announces the break that the structured record of the
  same frame (compile id ``[0/0]``) then describes: the two are one break. Without
  ``TORCH_LOGS=graph_breaks`` the warning block alone is counted.

Only lines that the training-log scanner also feeds (its ``compile`` trigger literals) decide
a category, so a mixed log read by ``training_log`` counts the same breaks the same way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from kb.parsers.base import ParseResult, strip_ansi, trim

NAME = "torch_compile"

GRAPH_BREAK_CATEGORIES: tuple[str, ...] = (
    "print", "host_sync", "control_flow", "shape_control_flow", "unsupported", "other",
)
RECOMPILE_CATEGORIES: tuple[str, ...] = ("shape", "dtype", "float", "other")

# (category, pattern on the lower-cased reason); the first match wins
_BREAK_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("print", re.compile(r"\bprint\b|\blogging\b|\blogger\b|builtinvariable\(print\)")),
    # int() / float() of a tensor (torch<=2.1 prints "call_function BuiltinVariable(int)
    # [TensorVariable()] {}", dynamo's generic unimplemented() in variables/builtin.py): the value
    # is pulled to the host like .item(); bool() of a tensor decides a Python branch on it
    ("control_flow", re.compile(r"builtinvariable\(bool\) \[tensorvariable")),
    ("host_sync", re.compile(
        r"\.item\(\)|tensor\.item|\bitem\b|tolist|\.cpu\(\)|\bcpu\b|\.numpy\(\)|\bnumpy\b"
        r"|data[- ]dependent output|_local_scalar_dense|dynamic shape operator"
        r"|builtinvariable\((?:int|float|complex)\) \[tensorvariable"
    )),
    ("shape_control_flow", re.compile(r"\.shape\b|\bshape\b|size\(\)|\.size\b|symnode|symbolic|symint|sym_size")),
    ("control_flow", re.compile(
        r"data[- ]dependent (?:jump|branch|control)|generic_jump|\bjump\b|try/except|try_except|setup_finally"
        r"|context manager|branching|pop_jump|if statement|control flow"
    )),
    ("other", re.compile(r"graph_break\(\)|graph_break in skip_files|user-inserted|call_function graph_break")),
    ("unsupported", re.compile(
        r"unsupported|not supported|marked as skipped|skip_files|skipfiles|call_function|call_method"
        r"|does not know how|not implemented|cannot trace|inline"
    )),
)

_STRUCTURED = re.compile(r"Graph break(?: \([^)]*\))? in user code at")
#: the 2.9+ wrapper reason; the real one is in the record's Explanation line
_GENERIC_REASON = re.compile(r"^Encountered graph break when attempting to trace\b")
_EXPLANATION = re.compile(r"^\s*Explanation: (.*)")
#: the warning that opens a 2.9+ warning block, e.g. "Graph break from `Tensor.item()`, consider setting:"
_WARN_BREAK = re.compile(r"Graph break from `([^`]+)`")
_OLD_BREAK = re.compile(r"Graph break:(.*?)(?:\s*from user code at:?\s*$|\s*$)")
_BREAK_REASON = re.compile(r"Graph Break Reason: (.*)")
_UNSUPPORTED_EXC = re.compile(r"torch\._dynamo\.exc\.(?:Unsupported|UserError): (.*)")
_RECOMPILE = re.compile(r"Recompiling function (\S+) in")
#: the compile id just before the recompiles logger's tag, wherever the line starts (a paste
#: may cut or prefix the glog header): "... guards.py:2813] [0/4] [__recompiles] Recompiling"
_RECOMPILE_CID = re.compile(r"\[(\d+/\d+(?:_\d+)?)\] \[__recompiles(?:_verbose)?\]")
#: SkipFunctionVariable's reason for a C/pybind function (torch 2.3-2.6), also warned once as a
#: UserWarning from torch/_dynamo/variables/functions.py: "Graph break due to unsupported builtin
#: flash_attn_2_cuda.PyCapsule.fwd. This function is either a Python builtin ..."
_BUILTIN_BREAK = re.compile(r"Graph break due to unsupported (?:Python )?builtin (\S+?)\.?(?:\s|$)")
#: torch 2.0-2.1 explain() lists its breaks as GraphCompileReason(reason='...', user_stack=[...])
_COMPILE_REASON = re.compile(r"GraphCompileReason\(reason=(['\"])(.*?)\1")
_GUARD = re.compile(r"^\s*- (?:\d+/\d+: )?(.+)$")
_GUARD_COMMENT = re.compile(r"\s+#\s.*$")
#: TORCH_LOGS=recompiles_verbose lists the failures per cached entry: "guard 0 failures:"
_VERBOSE_ENTRY = re.compile(r"^\s*guard \d+ failures?:\s*$")
#: its first entry: one recompile, however many entries follow
_FIRST_VERBOSE_ENTRY = re.compile(r"^\s*guard 0 failures?:\s*$")
_TUPLE_GUARD = re.compile(r"triggered by the following guard failure\S*: (.*)")
_LIMIT = re.compile(
    r"hit config\.(cache_size_limit|recompile_limit|accumulated_\w+) \((\d+)\)|hit recompilation cache limit"
    r"|FailOnRecompileLimitHit: "
)
_FULLGRAPH_LIMIT = re.compile(r"recompile_limit reached with (?:fullgraph|one_graph)=True"
                              r"|FailOnRecompileLimitHit: Hard failure due to fullgraph=True")
_EXPLAIN_COUNT = re.compile(r"^\s*Graph Break Count: (\d+)")
_EXPLAIN_REASON = re.compile(r"^\s+Reason: (.*)")
_OLD_EXPLAIN = re.compile(r"Dynamo produced (\d+) graphs,? ?with (\d+) graph break")
_OLD_EXPLAIN_ITEM = re.compile(r"^\s*\d+\. (.+)")
# glog (2.3+) and logger (2.0-2.2) prefixes, plus the frame/compile id and artifact tags
_PREFIX = re.compile(
    r"^(?:\[[^\]]*\] )?(?:\[rank\d+\]:)?(?:[VIWEDF]\d{4} [\d:.]+ \d+ \S+:\d+\] "
    r"|\[[\d\- :,.]+\] torch\._dynamo\.[\w.]+?: \[\w+\] )?(?:\[(?P<cid>\d+/\d+(?:_\d+)?)\] )?(?:\[__\w+\] ?)?"
)


def categorize_break(reason: str) -> str:
    """Category of one graph-break reason text (see ``GRAPH_BREAK_CATEGORIES``)."""
    text = reason.lower()
    for category, pattern in _BREAK_RULES:
        if pattern.search(text):
            return category
    return "other"


#: an equality guard on a float literal: "L['y'] == 1.5", "___stack0 == 1.8622114658355713"
_FLOAT_GUARD = re.compile(r"==\s*-?(?:\d+\.\d*|\.\d+)(?:e[-+]?\d+)?\s*$")


def categorize_guard(guard: str) -> str:
    """Kind of one recompilation guard failure: shape, dtype, float or other.

    A float value guard (``L['y'] == 1.5``, ``___stack0 == 1.86`` from a specialised
    ``.item()``) is float: Dynamo specialises Python floats, so every new value recompiles
    again, unlike an int or a size that automatic dynamic shapes makes dynamic after the first.
    The source comment Dynamo appends after ``#`` is ignored.
    """
    text = _GUARD_COMMENT.sub("", guard).lower().rstrip()
    if "dtype mismatch" in text or "dtype" in text:
        return "dtype"
    if re.search(r"size mismatch|stride mismatch|\.size\(|\bshape\b|sizes\(\)", text):
        return "shape"
    if _FLOAT_GUARD.search(text):
        return "float"
    return "other"


class CompileScanner:
    """Line-by-line state machine; also used by the training-log parser for mixed logs."""

    def __init__(self) -> None:
        self.breaks: Counter[str] = Counter()
        self.pending_reason: str | None = None  # reason of the break being read ("" = unknown yet)
        self.awaiting_explanation = False  # its reason is the generic wrapper: the Explanation decides
        self.warned: tuple[str | None, str] | None = None  # (compile id, text) of a warning-block break
        self.explain_count: int | None = None
        self.in_explain = False
        self.in_old_explain = False
        self.recompiles = 0
        self.recompile_reasons: Counter[str] = Counter()
        #: frame id -> (highest compile attempt seen in a "[frame/attempt]" id, its last reason)
        self.attempts: dict[str, list[Any]] = {}
        self.pending_recompile = False
        self.cache_limit_hit = False
        self.fullgraph = False
        self.seen = False
        self.builtins: set[str] = set()  # builtins already counted (warned and raised: once)

    def _close_break(self) -> None:
        if self.pending_reason is not None:
            self.breaks[categorize_break(self.pending_reason)] += 1
            self.pending_reason = None
            self.awaiting_explanation = False

    def _close_warned(self) -> None:
        """Count a warning-block break that no structured record described."""
        if self.warned is not None:
            self.breaks[categorize_break(self.warned[1])] += 1
            self.warned = None

    def _open_break(self, cid: str | None) -> None:
        """A structured record starts: it absorbs a warning block of the same frame."""
        self._close_break()
        reason = ""
        if self.warned is not None:
            if self.warned[0] == cid:
                reason = self.warned[1]
                self.warned = None
            else:
                self._close_warned()
        self.pending_reason = reason
        self.seen = True

    def _close_recompile(self) -> None:
        if self.pending_recompile:
            self.recompile_reasons["other"] += 1
            self.pending_recompile = False

    def feed(self, raw: str) -> None:
        """Consume one line."""
        text = strip_ansi(raw).rstrip("\r\n")
        pm = _PREFIX.match(text)
        cid = pm.group("cid") if pm else None
        line = text[pm.end():] if pm else text
        if self.pending_recompile:
            m = _GUARD.match(line)
            if m:
                kind = categorize_guard(m.group(1))
                self.recompile_reasons[kind] += 1
                self.pending_recompile = False
                frame = getattr(self, "_last_frame", None)
                if frame in self.attempts:
                    self.attempts[frame][1] = kind
                return
            if "triggered by the following guard failure" in line or _VERBOSE_ENTRY.match(line):
                return
            self._close_recompile()
        if _STRUCTURED.search(line):
            self._open_break(cid)
            return
        m = _BREAK_REASON.search(line)
        if m and self.pending_reason is not None:
            reason = m.group(1).strip()
            self.pending_reason = f"{self.pending_reason} {reason}".strip()
            if _GENERIC_REASON.match(reason):
                self.awaiting_explanation = True
            else:
                self._close_break()
            return
        if self.awaiting_explanation:
            m = _EXPLANATION.match(line)
            if m:
                self.pending_reason = f"{self.pending_reason} {m.group(1)}"
                self._close_break()
                return
        m = _WARN_BREAK.search(line)
        if m:
            self._close_break()
            self._close_warned()
            self.warned = (cid, m.group(1))
            self.seen = True
            return
        m = _OLD_BREAK.search(line)
        if m and "Graph break:" in line:
            reason = m.group(1).strip()
            if not reason and self.warned is not None and self.warned[0] == cid:
                return  # the "from user code at:" line of the warning block
            self._close_break()
            self._close_warned()
            self.seen = True
            self.pending_reason = reason
            if self.pending_reason:
                self._close_break()
            return
        m = _BUILTIN_BREAK.search(line)
        if m:
            self.seen = True
            if m.group(1) not in self.builtins:
                self.builtins.add(m.group(1))
                if self.pending_reason == "":
                    self.pending_reason = line
                    self._close_break()
                else:
                    self.breaks[categorize_break(line)] += 1
            return
        m = _UNSUPPORTED_EXC.search(line)
        if m:
            # inside a record it is that break's reason; alone (fullgraph=True, or the
            # exception a paste ends with) it is one break of its own
            self.seen = True
            if self.pending_reason == "":
                self.pending_reason = m.group(1)
                self._close_break()
            else:
                self.breaks[categorize_break(m.group(1))] += 1
            return
        reasons = [r for _, r in _COMPILE_REASON.findall(line)]
        if reasons:
            self.seen = True
            for r in reasons:
                self.breaks[categorize_break(r)] += 1
            return
        m = _RECOMPILE.search(line)
        # a paste cut to the guard lines still shows a recompile: "triggered by the following
        # guard failure(s)" or recompiles_verbose's first "guard 0 failures:" with no header
        if m or "triggered by the following guard failure" in line or _FIRST_VERBOSE_ENTRY.match(line):
            self.seen = True
            self.recompiles += 1
            g = _TUPLE_GUARD.search(line)
            kind = None
            if g:
                kind = categorize_guard(g.group(1))
                self.recompile_reasons[kind] += 1
            else:
                self.pending_recompile = True
            if not cid:
                mc = _RECOMPILE_CID.search(line)
                cid = mc.group(1) if mc else None
            if cid and "/" in cid:
                # dynamo numbers a frame's compiles "[frame/attempt]": "[5/3]" is the third
                # recompile of frame 5 even when the log kept only this one message
                frame, attempt = cid.split("/", 1)
                n = int(attempt.split("_", 1)[0])
                cur = self.attempts.setdefault(frame, [0, kind, 0])
                cur[0] = max(cur[0], n)
                cur[2] += 1  # recompiles of this frame the log printed
                self._last_frame = frame
            return
        if _FULLGRAPH_LIMIT.search(line):
            self.seen = self.cache_limit_hit = self.fullgraph = True
            return
        if _LIMIT.search(line):
            self.seen = self.cache_limit_hit = True
            return
        m = _EXPLAIN_COUNT.match(line)
        if m:
            self.seen = True
            self.explain_count = (self.explain_count or 0) + int(m.group(1))
            return
        if line.strip() == "Break Reasons:":
            self.in_explain = True
            return
        if self.in_explain:
            m = _EXPLAIN_REASON.match(line)
            if m:
                self.breaks[categorize_break(m.group(1))] += 1
                return
            if line and not line.startswith(" "):
                self.in_explain = False
            return
        m = _OLD_EXPLAIN.search(line)
        if m:
            self.seen = True
            self.explain_count = (self.explain_count or 0) + int(m.group(2))
            self.in_old_explain = True
            return
        if self.in_old_explain:
            m = _OLD_EXPLAIN_ITEM.match(line)
            if m:
                self.breaks[categorize_break(m.group(1))] += 1

    def finish(self, facts: dict[str, Any]) -> None:
        """Write ``compile.*`` facts for what was seen."""
        self._close_break()
        self._close_warned()
        self._close_recompile()
        if not self.seen and not self.breaks:
            return
        comp = facts.setdefault("compile", {})
        counted = sum(self.breaks.values())
        total = max(counted, self.explain_count or 0)
        if total > counted:
            self.breaks["other"] += total - counted
        comp["graph_breaks"] = total
        if self.breaks:
            comp["graph_break_reasons"] = {k: self.breaks[k] for k in GRAPH_BREAK_CATEGORIES if self.breaks[k]}
        # recompiles the log numbered but did not print: counted, with the frame's last reason
        for attempt, kind, printed in self.attempts.values():
            unseen = attempt - printed  # "[f/n]" means n recompiles of frame f happened
            if unseen > 0:
                self.recompiles += unseen
                self.recompile_reasons[kind or "other"] += unseen
        comp["recompiles"] = self.recompiles
        if self.recompile_reasons:
            comp["recompile_reasons"] = {
                k: self.recompile_reasons[k] for k in RECOMPILE_CATEGORIES if self.recompile_reasons[k]
            }
        if self.cache_limit_hit:
            comp["cache_limit_hit"] = True
        if self.fullgraph:
            comp["fullgraph"] = True


def sniff(head: str) -> bool:
    """Dynamo log artifacts, limit warnings or explain() output."""
    return bool(re.search(
        r"\[__(graph_breaks|recompiles)\]|torch\._dynamo[. ]|_dynamo[\\/]|Graph break|Recompiling function|"
        r"^Graph Break Count: \d+|Dynamo produced \d+ graphs|GraphCompileReason\(reason=",
        head, re.M,
    ))


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Count graph breaks and recompilations with their reasons."""
    res = ParseResult(format=NAME, source=source)
    scanner = CompileScanner()
    for line in lines:
        scanner.feed(line)
    scanner.finish(res.facts)
    if not res.facts:
        res.notes.append(f"{source}: no graph break, recompilation or limit message found")
    res.facts = trim(res.facts)
    return res
