"""Check a model's answer against what was sent. An answer is shown only with no violations.

Rules (each broken one is reported as a line):

- exactly one Markdown table, with the report's columns of the language (``report.yaml``);
- each row names exactly one finding of the engine (its cause id or its exact title), each
  finding has exactly one row, and no row names a cause the engine did not find;
- every URL anywhere in the answer is one of the references that were sent;
- every inline-code span and code block is a command that was sent (fix, verify, next-check or
  health-check command), a fact path or a finding's cause id; no shell command that was not
  sent appears in plain text either (``rm -rf``, ``sudo``, ``curl ... | sh``...);
- every number in the text appears in what was sent (in a row: in that finding's part);
- anywhere in the text (prose, table, headings; outside the commands that were sent): no
  command phrase (``pip install``, ``export NAME=...``, ``curl``, a redirection into a file,
  ``authorized_keys``...), environment assignment, host name, IP address, scheme-relative
  link (``//host/x``) or cause id that does not appear in what was sent; no raw HTML (the
  accepted answer is Markdown rendered with HTML disabled); no "the real cause is ..."
  claim that the data does not make;
- after the table only the conclusion (headings and paragraphs), exactly three sentences (en
  split on ``. ! ?``, zh on ``。！？``).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Iterable

from markdown_it import MarkdownIt
from markdown_it.token import Token

from kb.engine.knowledge import Knowledge
from kb.llm.payload import Grounding, build_payload, grounding
from kb.report.model import Report

_NUM = re.compile(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?")
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s<>\"'`]+|(?<![\w/.@])www\.[^\s<>\"'`]+")
_TRAILING = ".,;:!?)]}*_>'\"。，；：！？）"
_PLACEHOLDER_CELLS = {"", "—", "-", "–", "n/a", "na", "none", "无"}
_EN_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?:\s+|$)")
_ZH_SENTENCE_END = re.compile(r"[。！？]+")
# shell commands that must never be suggested unless the knowledge itself holds them
_DANGEROUS = re.compile(
    r"(?i)(\brm\s+-[a-z]*[rf]|\brm\s+--(?:recursive|force)|\bsudo\b|\bmkfs(?:\.\w+)?\b|\bdd\s+if="
    r"|\bchmod\s+(?:-R\s+)?[0-7]{3,4}\b|\bchown\s+-R\b|\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z)?sh\b"
    r"|:\(\)\s*\{|\bshutdown\b|\breboot\b|\bhalt\b|\bkill\s+-9\b|\bpkill\b|\bkillall\b"
    r"|>\s*/dev/(?:sd|nvme|mem)|\bformat\s+[a-z]:|\bdel\s+/[fsq]\b)")


# a command verb with what follows it on the line (the phrase must appear in what was sent)
_COMMAND_PHRASE = re.compile(
    r"(?i)(?<![\w\-./])(?:export|setx|unset|pip3?|python3?\s+-m\s+pip|uv\s+pip|conda|mamba|"
    r"apt(?:-get)?|yum|dnf|brew|curl|wget|ssh|scp|rsync|docker|kubectl|helm|git|npm|npx|"
    r"eval|exec|nc|ncat|bash|zsh|sh|powershell|iex|invoke-webrequest|chmod|chown|sudo|su|"
    r"systemctl|crontab|echo|printf|tee|mv|cp|ln|rm)\s+[\w\-./~$\"'=:@+][^\s|;&<>`]*"
    r"(?:[ \t]+[^\s|;&<>`]+){0,3}")
# NAME=value of an environment variable (``NCCL_IB_DISABLE=1``)
_ENV_ASSIGN = re.compile(r"(?<![\w.\-])[A-Z][A-Z0-9_]{2,}=[^\s`'\"|;&<>]+")
_REDIRECT = re.compile(r"(?<![<>=\-])>>?[ \t]*(?:~|/|\./|\$HOME)[\w./~\-]*")
_SENSITIVE = re.compile(r"(?i)authorized_keys|\.ssh/|\.bashrc|\.profile|/etc/(?:passwd|shadow|sudoers)"
                        r"|\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|base64\s+-d")
_HTML = re.compile(r"(?i)<(?:/?[a-z][a-z0-9\-]*(?=[\s/>])[^<>]{0,2000}>?|!--|!\[CDATA\[|\?[a-z])")
_LINE_BREAK = re.compile(r"(?i)<br\s*/?>")
_HOSTNAME = re.compile(
    r"(?<![\w\-.@])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,20}"
    r"(?:com|net|org|io|ai|dev|app|cloud|sh|xyz|me|co|info|biz|ru|cn|tk|top|site|online|"
    r"example|internal|local|lan|corp|cluster|svc|test|onion)(?![\w\-]|\.[A-Za-z0-9])", re.I)
_SCHEMELESS = re.compile(r"(?<![:\w/])//[A-Za-z0-9\-._~%]+")
_IPV4_ANY = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_SHORT_HOST = re.compile(r"(?<![\w\-./])[a-z][a-z0-9]{0,30}(?:-[a-z0-9]{1,30}){0,4}-node-?\d{1,6}(?![\w\-])"
                         r"|(?<![\w\-./])(?:node|host|gpu|worker)-?\d{1,6}(?![\w\-])", re.I)
_CAUSE_CLAIM = re.compile(
    r"(?i)\b(?:real|actual|true|underlying|hidden)\s+(?:root\s+)?(?:cause|culprit|problem)\b"
    r"|真正的?原因|根本原因其实|实际原因")
_CAUSE_ID = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)(?![\w]|\.[a-z])")


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _norm_cmd(text: str) -> str:
    return " ".join(text.replace("\\|", "|").split())


def _norm_num(text: str) -> str:
    try:
        d = Decimal(text)
    except InvalidOperation:
        return text
    if d == d.to_integral_value():
        return str(d.to_integral_value())
    return format(d.normalize(), "f")


def numbers(text: str) -> set[str]:
    """The numbers written in ``text`` (normalized: ``14.50`` and ``14.5`` are the same)."""
    return {_norm_num(m.group(0)) for m in _NUM.finditer(text)}


def _plain(tok: Token, code: str | None = None) -> str:
    """The text of an inline token: code spans as ``code`` (their content when None)."""
    out: list[str] = []
    for c in tok.children or []:
        if c.type == "text":
            out.append(c.content)
        elif c.type == "code_inline":
            out.append(c.content if code is None else code)
        elif c.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif c.type == "image":
            out.append(c.content)
    return "".join(out)


def _texts(tok: Token) -> list[str]:
    """The plain-text children of an inline token (not code, not link targets)."""
    out = []
    for c in tok.children or []:
        if c.type == "text":
            out.append(c.content)
        elif c.type == "image":
            out.append(c.content)
    return out


def _inlines(tokens: Iterable[Token]) -> list[Token]:
    return [t for t in tokens if t.type == "inline"]


class _Checker:
    def __init__(self, answer: str, g: Grounding):
        self.answer = answer
        self.g = g
        self.violations: list[str] = []
        self.payload_numbers = numbers(g.payload_text)
        self.commands = {_norm_cmd(c) for c in g.commands}
        self.finding_ids = set(g.findings)
        md = _md()
        self.urls = set(g.urls) | {md.normalizeLink(u) for u in g.urls}
        # the answer without the commands that were sent (they may hold URLs, pipes, kill...)
        rest = _norm_cmd(answer)
        for cmd in sorted(self.commands, key=len, reverse=True):
            rest = rest.replace(cmd, " ")
        self.rest = rest
        # every string that was sent, whitespace-normalised: what prose may quote
        try:
            sent = json.loads(g.payload_text)
        except ValueError:
            sent = g.payload_text
        self.sent_text = _norm_cmd(" ".join(_strings(sent)))
        self.sent_lower = self.sent_text.casefold()

    def _grounded(self, text: str) -> bool:
        """``text`` (whitespace-normalised) appears in what was sent."""
        t = _norm_cmd(text).rstrip(_TRAILING)
        return bool(t) and t.casefold() in self.sent_lower

    def add(self, text: str) -> None:
        if text not in self.violations:
            self.violations.append(text)

    # -- the pieces --------------------------------------------------------------------------
    def run(self) -> list[str]:
        if not self.answer or not self.answer.strip():
            return ["the answer is empty"]
        tokens = _md().parse(self.answer)
        self.check_urls(tokens)
        self.check_code(tokens)
        self.check_prose_commands()
        self.check_html()
        self.check_hosts()
        self.check_prose_causes()
        starts = [i for i, t in enumerate(tokens) if t.type == "table_open"]
        if len(starts) != 1:
            self.add(f"expected exactly one table with the columns "
                     f"{' | '.join(self.g.columns)}, found {len(starts)}")
            self.check_numbers(_inlines(tokens), self.payload_numbers, "the text")
            return self.violations
        start = starts[0]
        end = next(i for i in range(start, len(tokens)) if tokens[i].type == "table_close")
        self.check_numbers(_inlines(tokens[:start]), self.payload_numbers, "the text before the table")
        self.check_table(tokens[start:end + 1])
        self.check_conclusion(tokens[end + 1:])
        return self.violations

    def check_urls(self, tokens: list[Token]) -> None:
        hrefs: list[str] = []
        for t in tokens:
            for c in [t, *(t.children or [])]:
                if c.type == "link_open":
                    hrefs.append(str(c.attrs.get("href", "")))
                elif c.type == "image":
                    hrefs.append(str(c.attrs.get("src", "")))
        for href in hrefs:
            if href and href not in self.urls:
                self.add(f"URL {href} is not one of the references sent")
        for m in _URL.finditer(self.rest):
            if not self._url_ok(m.group(0)):
                self.add(f"URL {m.group(0).rstrip(_TRAILING)} is not one of the references sent")

    def _url_ok(self, url: str) -> bool:
        cand = url
        while cand:
            if cand in self.urls:
                return True
            if cand[-1] not in _TRAILING:
                return False
            cand = cand[:-1]
        return False

    def _code_ok(self, text: str) -> bool:
        s = _norm_cmd(text)
        return (s in self.commands or s in self.g.fact_paths or s in self.finding_ids)

    def check_code(self, tokens: list[Token]) -> None:
        for t in tokens:
            if t.type in ("fence", "code_block"):
                body = t.content.strip()
                lines = [ln for ln in body.splitlines() if ln.strip()]
                if not (self._code_ok(body) or (lines and all(self._code_ok(ln) for ln in lines))):
                    self.add(f"code block {_short(body)!r} is not a command that was sent")
            for c in t.children or []:
                if c.type == "code_inline" and not self._code_ok(c.content):
                    self.add(f"`{_short(c.content)}` is not an allowed command, fact path or "
                             "cause id")

    def check_prose_commands(self) -> None:
        for m in _DANGEROUS.finditer(self.rest):
            self.add(f"the answer suggests a command that was not sent ({m.group(0).strip()!r})")
        for rx in (_COMMAND_PHRASE, _ENV_ASSIGN, _REDIRECT, _SENSITIVE):
            for m in rx.finditer(self.rest):
                if not self._grounded(m.group(0)):
                    self.add("the answer suggests a command that was not sent "
                             f"({_short(m.group(0).strip())!r})")

    def check_html(self) -> None:
        """Raw HTML anywhere outside code (markdown-it would pass it through if enabled)."""
        for m in _HTML.finditer(_without_code(self.answer)):
            if _LINE_BREAK.fullmatch(m.group(0)):
                continue  # the deterministic table itself separates lines in a cell with <br>
            self.add(f"raw HTML is not allowed ({_short(m.group(0))!r})")

    def check_hosts(self) -> None:
        """Host names, IPs and ``//host`` links that the data sent does not contain."""
        text = _URL.sub(" ", self.rest)  # full URLs are judged by check_urls
        for rx, what in ((_SCHEMELESS, "link"), (_HOSTNAME, "host name"),
                         (_IPV4_ANY, "IP address"), (_SHORT_HOST, "host name")):
            for m in rx.finditer(text):
                if not self._grounded(m.group(0)):
                    self.add(f"{what} {m.group(0)} does not appear in the data sent")

    def check_prose_causes(self) -> None:
        """Cause ids of causes the engine did not find, and claims of another cause."""
        for m in _CAUSE_ID.finditer(self.rest):
            cid = m.group(0)
            if m.group(1) not in self.g.branches or cid in self.finding_ids:
                continue
            if cid in self.g.known_causes and cid not in self.sent_text:
                self.add(f"the answer names {cid} ({self.g.known_causes[cid]}), a cause the "
                         "engine did not find")
        for m in _CAUSE_CLAIM.finditer(self.rest):
            if not self._grounded(m.group(0)):
                self.add(f"the answer claims a cause of its own ({m.group(0)!r})")

    def check_numbers(self, inlines: list[Token], allowed: set[str], where: str) -> None:
        for tok in inlines:
            for text in _texts(tok):
                text = _URL.sub(" ", text)
                for n in sorted(numbers(text) - allowed, key=lambda x: (len(x), x)):
                    self.add(f"number {n} in {where} does not appear in the data sent")

    # -- the table ---------------------------------------------------------------------------
    def check_table(self, tokens: list[Token]) -> None:
        rows: list[list[Token]] = []
        header: list[Token] = []
        in_head = False
        current: list[Token] = []
        for t in tokens:
            if t.type == "thead_open":
                in_head = True
            elif t.type == "thead_close":
                in_head = False
            elif t.type == "tr_open":
                current = []
            elif t.type == "tr_close":
                if in_head:
                    header = current
                else:
                    rows.append(current)
            elif t.type == "inline":
                current.append(t)
        got = [_plain(h).strip().strip("*_ ").strip() for h in header]
        want = self.g.columns
        if [x.casefold() for x in got] != [x.casefold() for x in want]:
            self.add(f"table columns are {' | '.join(got) or '(none)'}; expected {' | '.join(want)}")
        seen: dict[str, int] = {}
        for n, cells in enumerate(rows, 1):
            self.check_row(n, cells, seen)
        for cid, title in self.g.findings.items():
            if cid not in seen:
                self.add(f"finding {cid} ({title}) has no row in the table")

    def check_row(self, n: int, cells: list[Token], seen: dict[str, int]) -> None:
        texts = [_plain(c).strip() for c in cells]
        if all(x.strip("*_ ").casefold() in _PLACEHOLDER_CELLS for x in texts):
            if self.g.findings:
                self.add(f"row {n} is empty but the engine made findings")
            self.check_numbers(cells, self.payload_numbers, f"row {n}")
            return
        row_text = " | ".join(texts)
        named: set[str] = set()
        for cid in self.g.known_causes:
            if re.search(r"(?<![A-Za-z0-9_.])" + re.escape(cid) + r"(?![A-Za-z0-9_])", row_text):
                named.add(cid)
        by_title = {cid for cid, title in self.g.known_causes.items()
                    if title and title in row_text and cid not in named}
        # a title that is only part of a longer title this row names does not count
        titles = {self.g.known_causes[c] for c in named | by_title}
        by_title = {cid for cid in by_title
                    if not any(self.g.known_causes[cid] in t and self.g.known_causes[cid] != t
                               for t in titles)}
        named |= by_title
        for cid in sorted(named - self.finding_ids):
            self.add(f"row {n} names {cid} ({self.g.known_causes[cid]}), a cause the engine "
                     "did not find")
        found = named & self.finding_ids
        if len(texts) > 1:
            for m in re.finditer(r"\b([a-z_]+)\.([a-z0-9_]+)\b", texts[1]):
                cid = m.group(0)
                if (m.group(1) in self.g.branches and cid not in self.g.known_causes
                        and cid not in self.g.fact_paths):
                    self.add(f"row {n} names an unknown cause {cid}")
        allowed = self.payload_numbers
        if not found:
            self.add(f"row {n} names no cause the engine found (give its cause_id or exact title)")
        elif len(found) > 1:
            self.add(f"row {n} names more than one finding ({', '.join(sorted(found))})")
        else:
            cid = next(iter(found))
            if cid in seen:
                self.add(f"rows {seen[cid]} and {n} both describe {cid}")
            else:
                seen[cid] = n
            allowed = numbers(self.g.finding_texts.get(cid, self.g.payload_text))
        self.check_numbers(cells, allowed, f"row {n}")

    # -- after the table ---------------------------------------------------------------------
    def check_conclusion(self, tokens: list[Token]) -> None:
        heading_inlines: set[int] = set()
        for i, t in enumerate(tokens):
            if t.level != 0 or t.type.endswith("_close") or t.type in (
                    "paragraph_open", "inline", "hr"):
                continue
            if t.type == "heading_open":
                if i + 1 < len(tokens):
                    heading_inlines.add(id(tokens[i + 1]))
                continue
            self.add("only the conclusion may follow the table "
                     f"(found {t.type.removesuffix('_open')})")
        self.check_numbers(_inlines(tokens), self.payload_numbers, "the conclusion")
        paragraphs = [t for t in tokens
                      if t.type == "inline" and t.level == 1 and id(t) not in heading_inlines]
        text = " ".join(_plain(p, code="CODE") for p in paragraphs).strip()
        if not text:
            self.add("no conclusion after the table (three sentences expected)")
            return
        count = len(sentences(text, self.g.lang))
        if count != 3:
            self.add(f"the conclusion has {count} sentence(s); exactly 3 expected")


def sentences(text: str, lang: str) -> list[str]:
    """Split a conclusion into sentences (en on ``. ! ?``, zh on ``。！？``)."""
    rx = _ZH_SENTENCE_END if lang == "zh" else _EN_SENTENCE_END
    parts = rx.split(text.strip())
    return [p.strip() for p in parts if re.search(r"\w", p)]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


_CODE = re.compile(r"(`+)(?:(?!\1).)*?\1|^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\2[ \t]*$|\Z)",
                   re.S | re.M)


def _without_code(text: str) -> str:
    """``text`` without code spans and fences (whose content is judged as commands)."""
    return _CODE.sub(" ", text)


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def check(answer: str, g: Grounding) -> list[str]:
    """The violations of ``answer`` against the grounding of what was sent (empty: accepted)."""
    return _Checker(answer, g).run()


def verify(answer: str, report: Report, kn: Knowledge, *, redact_hosts: bool = False,
           payload: dict[str, Any] | None = None) -> list[str]:
    """The violations of ``answer`` as a phrasing of ``report`` (an empty list: accepted)."""
    if payload is None:
        payload = build_payload(report, kn, redact_hosts=redact_hosts)
    return check(answer, grounding(payload, kn))
