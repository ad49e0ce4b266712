"""`kb export skill` and `kb export agents-snippet`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from kb.engine.errors import KbError
from kb.exports import skill

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_agents_md import check_markdown, kb_all  # noqa: E402


def front_matter(text: str) -> dict:
    m = re.match(r"---\n(.*?)\n---\n", text, flags=re.S)
    assert m, "SKILL.md must start with YAML front matter"
    return yaml.safe_load(m.group(1))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_skill_folder(kn, tmp_path, lang):
    written = skill.write(kn, tmp_path / "s", lang=lang)
    assert sorted(p.relative_to(tmp_path / "s").as_posix() for p in written) == sorted(skill.FILES)
    text = (tmp_path / "s" / "SKILL.md").read_text(encoding="utf-8")
    meta = front_matter(text)
    assert meta["name"] == "gpu-triage"
    assert 20 < len(meta["description"]) < 1024
    assert len(re.findall(r"[.。](\s|$)", meta["description"])) <= 2
    for target in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (tmp_path / "s" / target).is_file(), target
    for cmd in ("kb diagnose --facts", "--format json", "kb diagnose --input", "kb explain",
                "kb mcp"):
        assert cmd in text
    for rule in kn.sop["hard_rules"]:
        assert rule["text"][lang] in text
    causes = (tmp_path / "s" / "references" / "causes.md").read_text(encoding="utf-8")
    for cid, c in kn.causes.items():
        # a fix of several lines is printed one span per line (see test_agents_md)
        lines = [" ".join(ln.split()) for ln in c.fixes[0].command.splitlines() if ln.strip()]
        assert f"`{cid}`" in causes and all(ln in causes for ln in lines)
    checks = (tmp_path / "s" / "references" / "checks.md").read_text(encoding="utf-8")
    assert all(f"`{cid}`" in checks for cid in kn.checks)


def test_never_overwrites_without_force(kn, tmp_path):
    target = tmp_path / "s"
    target.mkdir()
    (target / "mine.txt").write_text("keep")
    with pytest.raises(KbError):
        skill.write(kn, target)
    skill.write(kn, target, force=True)
    assert (target / "mine.txt").read_text() == "keep" and (target / "SKILL.md").is_file()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_snippet(kn, lang):
    text = skill.snippet(kn, lang)
    check_markdown(text, kn)
    assert "`kb diagnose --facts facts.json --format json`" in text and "`kb mcp`" in text
    assert len(text.splitlines()) < 20


def test_cli_skill_and_snippet(kn, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "SKILL.md").write_text("mine")
    r, again, snip = kb_all([["export", "skill", "-o", str(tmp_path / "gpu-triage")],
                             ["export", "skill", "-o", str(busy)],
                             ["export", "agents-snippet"]])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "gpu-triage" / "references" / "sources.md").is_file()
    assert again.returncode == 2 and "--force" in again.stderr
    assert (busy / "SKILL.md").read_text() == "mine"
    assert snip.returncode == 0 and snip.stdout == skill.snippet(kn, "en")
