"""A skill folder for agents that load skills (``SKILL.md`` + ``references/``), and a short
AGENTS.md snippet that points an agent at ``kb``.

Layout written by :func:`write`::

    <dir>/SKILL.md                 front matter (name, description), how to triage with kb,
                                   the steps and hard rules, links to the files below
    <dir>/references/causes.md     every cause: symptom, conditions, fixes, verification, links
    <dir>/references/checks.md     every check: command, what to look for, facts it gives
    <dir>/references/sources.md    the reference index
"""

from __future__ import annotations

from pathlib import Path

import yaml

from kb.engine.errors import KbError
from kb.safe_write import atomic_write_text
from kb.engine.knowledge import Knowledge
from kb.exports import refs as refs_mod
from kb.exports.agents_md import check_command
from kb.exports.text import Wording, branch_order, causes_of, check_lang, code, link

NAME = "gpu-triage"
FILES = ("SKILL.md", "references/causes.md", "references/checks.md", "references/sources.md")


def description(kn: Knowledge, lang: str = "en") -> str:
    """One or two sentences: what the skill does and when to use it."""
    w = Wording(kn, lang)
    triggers = kn.sop.get("triggers", {}).get(lang) or []
    gap = "" if lang == "zh" else " "
    return (f"{w.t('skill_desc')}{gap}{w.t('skill_when')}{gap}{w.t('sep').join(triggers)}"
            f"{w.t('period')}")


def skill_md(kn: Knowledge, lang: str = "en") -> str:
    w = Wording(kn, lang)
    t = w.t
    front = yaml.safe_dump({"name": NAME, "description": description(kn, lang)},
                           allow_unicode=True, sort_keys=False, width=10_000)
    out = ["---", front.rstrip("\n"), "---", "",
           f"# {kn.sop.get('title', {}).get(lang, NAME)}", "",
           f"## {t('skill_how')}", "",
           t("skill_facts"), "", "```sh", "kb diagnose --facts facts.json --format json", "```", "",
           t("skill_input"), "", "```sh", "kb diagnose --input LOGDIR --format json", "```", "",
           t("skill_explain"), "", "```sh", "kb explain CAUSE", "```", "",
           t("skill_mcp"), "", "```sh", "kb mcp", "```", "",
           t("skill_exit"), "", t("skill_without"), "",
           f"## {t('steps')}", ""]
    out += [f"{i}. {s['text'][lang]}" for i, s in enumerate(kn.sop.get("steps", []), 1)]
    out.append("")
    health = [kn.checks[c] for c in kn.sop.get("health_checks", []) if c in kn.checks]
    if health:
        out += [f"### {t('health')}", ""]
        out += [f"- {check_command(c)} — {c.look_for.get(lang)}" for c in health]
        out.append("")
    out += [f"## {t('branches')}", ""]
    for bid in branch_order(kn):
        b = kn.branches[bid]
        out.append(f"- {code(bid)} — **{b.title.get(lang)}**: {b.symptom.get(lang)}")
    out.append("")
    rules = kn.sop.get("hard_rules", [])
    if rules:
        out += [f"## {t('rules')}", ""]
        out += [f"{i}. {r['text'][lang]}" for i, r in enumerate(rules, 1)]
        out.append("")
    out += [f"## {t('skill_files')}", "",
            f"- [references/causes.md](references/causes.md): {t('skill_causes')}",
            f"- [references/checks.md](references/checks.md): {t('skill_checks')}",
            f"- [references/sources.md](references/sources.md): {t('skill_sources')}", ""]
    return "\n".join(out)


def causes_md(kn: Knowledge, lang: str = "en") -> str:
    w = Wording(kn, lang)
    t = w.t
    sev = kn.report_text.get("severity", {})
    out = [f"# {t('table')}", ""]
    for bid in branch_order(kn):
        cids = causes_of(kn, bid)
        if not cids:
            continue
        out += [f"## {kn.branches[bid].title.get(lang)} ({code(bid)})", ""]
        for cid in cids:
            c = kn.causes[cid]
            out += [f"### {c.title.get(lang)} ({code(cid)})", "",
                    f"- **{t('symptom')}{t('colon')}** {c.symptom.get(lang)}",
                    f"- **{t('why')}{t('colon')}** {c.why.get(lang)}",
                    f"- **{t('severity')}{t('colon')}** {sev.get(c.severity, {}).get(lang, c.severity)}",
                    f"- **{t('conditions')}{t('colon')}** {w.clauses(c.conditions)}"]
            if c.supporting:
                out.append(f"- **{t('supporting')}{t('colon')}** "
                           + "; ".join(w.clause(x) for x in c.supporting))
            out.append(f"- **{t('fix')}{t('colon')}**")
            for f in c.fixes:
                links = ", ".join(link(kn.references[r].title, kn.references[r].url)
                                  for r in f.refs if r in kn.references)
                out.append(f"  - {f.text.get(lang)} {code(f.command)}"
                           + (f" ({links})" if links else ""))
            out.append(f"- **{t('verify')}{t('colon')}**")
            for v in c.verify:
                out.append(f"  - {v.text.get(lang)} {code(v.command)} — {t('expect')}: "
                           f"{w.condition(v.expect)}")
            links = ", ".join(link(kn.references[r].title, kn.references[r].url)
                              for r in c.references if r in kn.references)
            out += [f"- **{t('refs')}{t('colon')}** {links}", ""]
    return "\n".join(out)


def checks_md(kn: Knowledge, lang: str = "en") -> str:
    w = Wording(kn, lang)
    t = w.t
    out = [f"# {t('checks_title')}", ""]
    for cid in sorted(kn.checks):
        c = kn.checks[cid]
        out += [f"## {c.title.get(lang)} ({code(cid)})", "",
                f"- **{t('command')}{t('colon')}** {check_command(c)}",
                f"- **{t('look_for')}{t('colon')}** {c.look_for.get(lang)}",
                f"- **{t('produces')}{t('colon')}** " + ", ".join(code(p) for p in c.produces),
                f"- **{t('cost')}{t('colon')}** {c.cost}"]
        if c.health_check:
            out.append(f"- **{t('health_flag')}{t('colon')}** {t('yes')}")
        if c.branches:
            out.append(f"- **{t('branches')}{t('colon')}** " + ", ".join(code(b) for b in c.branches))
        links = ", ".join(link(kn.references[r].title, kn.references[r].url)
                          for r in c.refs if r in kn.references)
        if links:
            out.append(f"- **{t('refs')}{t('colon')}** {links}")
        out.append("")
    return "\n".join(out)


def files(kn: Knowledge, lang: str = "en") -> dict[str, str]:
    """Relative path -> text of every file of the skill folder."""
    check_lang(lang)
    return {
        "SKILL.md": skill_md(kn, lang),
        "references/causes.md": causes_md(kn, lang),
        "references/checks.md": checks_md(kn, lang),
        "references/sources.md": refs_mod.export_md(kn, lang),
    }


def write(kn: Knowledge, directory: str | Path, *, lang: str = "en",
          force: bool = False) -> list[Path]:
    """Write the skill folder; an existing non-empty folder is left alone unless ``force``."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise KbError(str(root), "exists and is not a folder", "Choose another -o DIR")
    if root.is_dir() and any(root.iterdir()) and not force:
        raise KbError(str(root), "folder exists and is not empty, not overwritten",
                      "Pass --force to replace its skill files")
    written = []
    for rel, text in files(kn, lang).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        # each file atomically: an interrupted export leaves whole files only
        atomic_write_text(p, text if text.endswith("\n") else text + "\n", force=True)
        written.append(p)
    return written


def snippet(kn: Knowledge, lang: str = "en") -> str:
    """A short AGENTS.md section pointing agents at ``kb diagnose --format json`` and ``kb mcp``."""
    w = Wording(kn, lang)
    t = w.t
    triggers = kn.sop.get("triggers", {}).get(lang) or []
    sep = t("sep")
    if lang == "zh":
        intro = f"{t('snippet_intro')}{sep.join(triggers)}{t('snippet_do')}"
    else:
        intro = f"{t('snippet_intro')} {sep.join(triggers)}, {t('snippet_do')}"
    return "\n".join([
        f"## {t('snippet_title')}", "",
        intro,
        "",
        f"- {code('kb diagnose --facts facts.json --format json')}: {t('snippet_json')}",
        f"- {code('kb diagnose --input LOGDIR --format json')}: {t('snippet_input')}",
        f"- {code('kb explain CAUSE')}: {t('snippet_explain')}",
        f"- {code('kb mcp')}: {t('snippet_mcp')}",
        "",
        t("snippet_out"),
        "",
    ])
