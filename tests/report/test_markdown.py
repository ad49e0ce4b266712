"""The Markdown report: escaped text, well-formed tables, commands verbatim and runnable."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt

import kb
from kb.report.markdown import esc, render
from tests.report._commands import (
    EXAMPLES, bash_ok, known_commands, load_example, python_ok,
)


def _tokens(md: str) -> list[Any]:
    return MarkdownIt("commonmark").enable("table").parse(md)


def table_rows(md: str) -> list[list[str]]:
    rows: list[list[str]] = []
    cur: list[str] | None = None
    for t in _tokens(md):
        if t.type == "tr_open":
            cur = []
        elif t.type == "inline" and cur is not None:
            cur.append(t.content)
        elif t.type == "tr_close" and cur is not None:
            rows.append(cur)
            cur = None
    return rows


def commands_of(md: str) -> list[str]:
    """Code spans of the table cells holding fixes and verifications, and every fenced block."""
    out: list[str] = []
    in_table = False
    col = 0
    for t in _tokens(md):
        if t.type == "table_open":
            in_table = True
        elif t.type == "table_close":
            in_table = False
        elif t.type == "tr_open":
            col = 0
        elif t.type in ("td_open", "th_open"):
            col += 1
        elif t.type == "fence":
            out.append(t.content)
        elif t.type == "inline" and in_table and col in (4, 5):
            out += [c.content for c in t.children or [] if c.type == "code_inline"]
    return out


#: knowledge commands that are neither a shell line nor Python (a knowledge issue, reported)
UNPARSEABLE: set[str] = set()


def _unparseable(kn) -> set[str]:
    return {c for c in known_commands(kn) if not bash_ok(c) and python_ok(c) is None}


@pytest.fixture(scope="module", autouse=True)
def _collect_unparseable(kn):
    UNPARSEABLE.update(_unparseable(kn))


def test_knowledge_commands_that_do_not_parse(kn) -> None:
    # kept small and visible: each one should become two commands or a Python one-liner
    assert len(_unparseable(kn)) <= 8, sorted(_unparseable(kn))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_printed_command_is_verbatim_and_parses(kn, path) -> None:
    rep = kb.diagnose(str(path))
    md = render(rep, kn)
    known = known_commands(kn)
    rows = table_rows(md)
    assert rows and all(len(r) == 6 for r in rows), rows
    cmds = commands_of(md)
    assert cmds
    for c in cmds:
        assert c.strip() in known, c  # printed exactly as the knowledge holds it
        # and it parses as a shell line or Python (the few knowledge commands that mix both
        # are listed by test_knowledge_commands_that_do_not_parse)
        if c.strip() not in UNPARSEABLE:
            assert bash_ok(c) or python_ok(c) is not None, c


def test_multi_line_command_goes_below_the_table(kn) -> None:
    rep = kb.diagnose({"symptom": "numerics", "numerics": {
        "dtype": "fp16", "loss": [2.4, 2.1, 1.9], "nonfinite_count": 8, "first_nonfinite_step": 340,
        "nan_source": "loss", "master_weights_fp32": False}})
    assert any(len(f.fixes) and f.cause_id == "numerics.fp16_overflow" for f in rep.findings), rep.status
    md = render(rep, kn)
    fences = [t.content for t in _tokens(md) if t.type == "fence" and t.info == "python"]
    assert any("GradScaler" in f and f.count("\n") >= 3 for f in fences)
    for row in table_rows(md):
        assert "\n" not in "".join(row)


USER_TEXT = "a|b *bold* _em_ `tick` <script>alert(1)</script> [x](http://evil) &amp; __init__"


def test_user_text_is_escaped_and_the_table_stays_whole(kn) -> None:
    facts = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15]},
             "disk": {"util_percent_samples": [20, 30, 25]},
             "cpu": {"hot_functions": [USER_TEXT, "collate_fn"]}}
    rep = kb.diagnose(facts)
    rep = rep.model_copy(update={"warnings": [USER_TEXT]})
    md = render(rep, kn)
    rows = table_rows(md)
    assert all(len(r) == 6 for r in rows)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<script>" not in html and "<em>" not in html and 'href="http://evil"' not in html
    assert "&lt;script&gt;" in html
    # the warning reads back as the text the user gave
    tokens = _tokens(md)
    texts = ["".join(c.content for c in t.children or [] if c.type == "text")
             for t in tokens if t.type == "inline"]
    assert any(USER_TEXT in x for x in texts)


def test_esc_keeps_identifiers_readable() -> None:
    assert esc("num_workers=0") == "num_workers=0"
    assert esc("_private") == "\\_private"
    assert esc("a | b") == "a \\| b"
    assert esc("line\nbreak") == "line break"


def test_missing_facts_have_names_not_internal_ids(kn) -> None:
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15]}})
    md = render(rep, kn)
    hyp = md.split("### ")[2] if "### " in md else md
    assert "decision." not in md.split("### Next checks")[0].split("### Possible causes")[-1]
    assert "`dataloader.num_workers`" in md  # a fact the user can supply keeps its path
    assert "DataLoader num_workers" in md
    del hyp


def test_healthy_lists_what_was_checked(kn) -> None:
    facts = {"gpu": {"utilization_samples": [95, 97, 96]}}
    rep = kb.diagnose(facts)
    assert rep.status == "healthy"
    assert "GPU utilisation" in rep.conclusion[1] and "96%" in rep.conclusion[1]
    assert "0 known causes" not in " ".join(rep.conclusion)
    zh = kb.diagnose(facts, lang="zh")
    assert "GPU 利用率" in zh.conclusion[1]


def test_llm_phrasing_keeps_every_section(kn) -> None:
    from tests.llm._support import DATALOADER_FACTS, good_answer

    rep = kb.diagnose({**DATALOADER_FACTS, "dataloader": {}})
    plain = render(rep, kn)
    answer = good_answer(rep, kn).replace("The main problem", "Mainly, the problem")
    phrased = render(rep.model_copy(update={"markdown": answer}), kn)
    for heading in ("### Ruled out", "### Next checks", "**Status:**"):
        if heading in plain:
            assert heading in phrased
    assert "Mainly, the problem" in phrased
    assert phrased.count("| Symptom |") == 1
