"""`kb export agents-md` (and every other Markdown export): structure, links, commands, coverage.

Golden files (tests/golden/) are compared byte for byte. The knowledge is still growing, so they
are regenerated, then reviewed with `git diff tests/golden`, with this one-liner:

    KB_UPDATE_GOLDEN=1 python -m pytest tests/exports -q

(It rewrites agents-md.en.md, agents-md.zh.md, mermaid-overview.{en,zh}.mmd and refs.en.md.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kb.exports import agents_md, refs, skill
from kb.exports.text import branch_order, chrome

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
LANGS = ("en", "zh")


def kb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``kb`` as a user does: ``python -m kb ...``."""
    return kb_all([list(args)], cwd=cwd)[0]


def kb_all(commands: list[list[str]], cwd: Path | None = None) -> list[subprocess.CompletedProcess]:
    """Run several ``kb`` commands at once (start-up dominates; the tests stay fast)."""
    env = {**os.environ, "KB_NO_CACHE": "1"}
    procs = [(args, subprocess.Popen([sys.executable, "-m", "kb", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd or ROOT, env=env))
             for args in commands]
    out = []
    for args, p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(args, p.returncode, stdout, stderr))
    return out


def golden(name: str, text: str) -> None:
    """Compare with tests/golden/<name>; KB_UPDATE_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    if os.environ.get("KB_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} missing: run KB_UPDATE_GOLDEN=1 python -m pytest tests/exports"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from the export; if the knowledge changed on purpose, run "
        f"KB_UPDATE_GOLDEN=1 python -m pytest tests/exports and review git diff tests/golden")


# ---------------------------------------------------------------- Markdown checks, shared

_MD = MarkdownIt("commonmark").enable("table")


def split_row(line: str) -> list[str]:
    """Cells of a GFM table row: split on pipes not escaped by a backslash."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return re.split(r"(?<!\\)\|", body)


def raw_tables(md: str) -> list[list[str]]:
    """Blocks of consecutive lines that start with '|' (outside code fences)."""
    tables: list[list[str]] = []
    cur: list[str] = []
    fence = False
    for line in md.splitlines() + [""]:
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables


def inline_tokens(md: str, kind: str):
    for tok in _MD.parse(md):
        for child in tok.children or []:
            if child.type == kind:
                yield child


def link_urls(md: str) -> list[str]:
    return [t.attrs["href"] for t in inline_tokens(md, "link_open")]


def code_spans(md: str) -> list[str]:
    return [t.content for t in inline_tokens(md, "code_inline")]


def looks_like_command(text: str) -> bool:
    return " " in text or "=" in text or "(" in text


def printed_lines(command: str) -> list[str]:
    """A command as the exports print it: one span per non-blank line, its indentation kept
    and inner runs of spaces folded."""
    return [ln[:len(ln) - len(ln.lstrip())] + " ".join(ln.split())
            for ln in command.splitlines() if ln.strip()]


def known_commands(kn) -> set[str]:
    out: set[str] = set()
    commands = [c.command for c in kn.checks.values()]
    commands += [f.command for c in kn.causes.values() for f in c.fixes]
    commands += [v.command for c in kn.causes.values() for v in c.verify]
    for command in commands:
        out.update(printed_lines(command))
    for c in kn.checks.values():
        out.update(f"{k}={v}" for k, v in c.env.items())
    return out


KB_COMMANDS = {"diagnose", "explain", "mcp", "schema", "validate", "export", "refs"}


def check_markdown(md: str, kn, *, relative_ok: set[str] = frozenset()) -> None:
    """Tables well formed, links known, commands real."""
    tokens = _MD.parse(md)
    tables = raw_tables(md)
    assert sum(t.type == "table_open" for t in tokens) == len(tables), "a table did not parse"
    for table in tables:
        widths = {len(split_row(line)) for line in table}
        assert len(widths) == 1, f"rows with different cell counts: {table[:3]}"
        assert re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", table[1].strip()), table[1]
    urls = {r.url for r in kn.references.values()}
    for href in link_urls(md):
        assert href in urls or href in relative_ok, f"link not in the reference index: {href}"
    allowed = known_commands(kn)
    for span in code_spans(md):
        if not looks_like_command(span):
            continue
        if span.startswith("kb "):
            assert span.split()[1] in KB_COMMANDS, span
            continue
        assert span in allowed, f"inline command is not a knowledge command: {span!r}"


# ---------------------------------------------------------------- agents-md


@pytest.fixture(scope="module")
def docs(kn):
    return {lang: agents_md.render(kn, lang) for lang in LANGS}


@pytest.mark.parametrize("lang", LANGS)
def test_agents_md_markdown_is_sound(kn, docs, lang):
    check_markdown(docs[lang], kn)


@pytest.mark.parametrize("lang", LANGS)
def test_agents_md_covers_the_sop(kn, docs, lang):
    md = docs[lang]
    for step in kn.sop["steps"]:
        assert step["text"][lang] in md
    for rule in kn.sop["hard_rules"]:
        assert rule["text"][lang] in md
    assert len(kn.sop["hard_rules"]) == 6
    for cid in kn.sop["health_checks"]:
        assert kn.checks[cid].command.split()[0] in md
    for bid, b in kn.branches.items():
        assert f"### {b.title.get(lang)} (`{bid}`)" in md
        for word in getattr(b.words, lang):
            assert word in md
    for cid, c in kn.causes.items():
        assert f"`{cid}`" in md and c.title.get(lang) in md
    urls = set(link_urls(md))
    for r in kn.references.values():
        assert r.url in urls, r.id
    for col in kn.report_text["columns"][lang]:
        assert col in md


def test_agents_md_shows_thresholds_and_their_commands(kn, docs):
    """Every question's answers carry their numbers, and the command that decides it."""
    md = docs["en"]
    th = kn.thresholds["gpu_util.idle"]
    assert f"gpu.utilization_samples.mean < {th.value:g}%" in md
    for b in kn.branches.values():
        for n in b.nodes:
            if n.kind == "question" and n.check in kn.checks:
                chk = kn.checks[n.check]
                command = " ".join(chk.command.split())
                assert n.label.en in md and (command in md or chk.title.en in md)


def test_agents_md_commands_keep_their_lines(kn, docs):
    """A fix of several lines reads back, line for line, from its table cell: joined by spaces
    it would not run as printed ("with torch.no_grad(): pred = ..." is one line, not a block)."""
    cells = {}
    for line in docs["en"].splitlines():
        m = re.match(r"\| .* \| \*\*.*\*\* \(`([a-z_]+\.[a-z0-9_]+)`\) \| (.*?) \| (.*) \| .* \|$", line)
        if m:
            cells[m.group(1)] = m.group(2)
    multi = [(cid, f.command) for cid, c in kn.causes.items() for f in c.fixes
             if len(printed_lines(f.command)) > 1]
    assert multi, "no fix of several lines to check"
    for cid, command in multi:
        spans = [t.content for t in inline_tokens(cells[cid].replace("\\|", "|"), "code_inline")]
        lines = printed_lines(command)
        assert any(spans[i:i + len(lines)] == lines for i in range(len(spans))), (cid, spans, lines)
        if cid == "oom.eval_larger_than_train":  # a Python block: its body stays indented
            assert "    pred = sliding_window_inference(image, roi_size=(96, 96, 96), sw_batch_size=1, " \
                   "predictor=model)" in spans


def test_agents_md_text_in_one_language(docs, kn):
    for key in ("when", "steps", "rules", "contract", "index", "decisions"):
        assert f"## {chrome(kn, 'en', key)}" not in docs["zh"]
        assert chrome(kn, "zh", key) not in docs["en"]
    assert not re.search(r"[\u4e00-\u9fff]", docs["en"]), "Chinese text in the English export"


def test_agents_md_branch_filter(kn):
    first = branch_order(kn)[0]
    md = agents_md.render(kn, "en", [first])
    check_markdown(md, kn)
    for bid in kn.branches:
        assert (f"(`{bid}`)\n" in md) == (bid == first)


def test_agents_md_is_deterministic(kn, docs):
    assert agents_md.render(kn, "en") == docs["en"]


@pytest.mark.parametrize("lang", LANGS)
def test_agents_md_golden(docs, lang):
    golden(f"agents-md.{lang}.md", docs[lang])


def test_size_is_measured(docs):
    s = agents_md.size(docs["en"])
    assert s["bytes"] > 0 and s["lines"] > 0 and 0 < s["approx_tokens"] < s["bytes"]


# ---------------------------------------------------------------- the other Markdown exports


@pytest.mark.parametrize("lang", LANGS)
def test_other_markdown_exports_are_sound(kn, lang):
    for rel, text in skill.files(kn, lang).items():
        check_markdown(text, kn, relative_ok=set(skill.FILES))
    check_markdown(skill.snippet(kn, lang), kn)
    check_markdown(refs.export_md(kn, lang), kn)


# ---------------------------------------------------------------- CLI


def test_cli_agents_md(tmp_path, docs):
    out, existing = tmp_path / "AGENTS.md", tmp_path / "existing.md"
    existing.write_text("keep")
    ok, bad, kept = kb_all([["export", "agents-md", "-o", str(out), "--stats"],
                            ["export", "agents-md", "--branch", "nope"],
                            ["export", "agents-md", "-o", str(existing), "--lang", "zh"]])
    assert ok.returncode == 0, ok.stderr
    assert out.read_text(encoding="utf-8") == docs["en"]
    assert "bytes" in ok.stderr and "tokens" in ok.stderr
    assert bad.returncode == 2 and "Known branches" in bad.stderr and not bad.stdout
    assert kept.returncode == 2 and "--force" in kept.stderr
    assert existing.read_text() == "keep"
