"""The complete agent SOP as Markdown (for AGENTS.md), generated from the knowledge.

Sections: when to use (triggers and each branch's vocabulary), the steps, the health checks,
each branch (entry, first tools, decision points with their thresholds and commands, a table of
causes), the hard rules, the output contract and the reference index. One language per run.
"""

from __future__ import annotations

from typing import Iterable

from kb.engine.knowledge import Check, Knowledge
from kb.engine.steps import decision_graph
from kb.exports import refs as refs_mod
from kb.exports.text import (Wording, causes_of, cell, check_lang, code, graph_order, link,
                             select_branches)

_RULE_MARK = {"forbid": "❌", "require": "✅"}
#: links per cause row: the cause's own references first; the index below has them all
MAX_LINKS = 3


def check_command(chk: Check, *, table: bool = False) -> str:
    """A check's command, preceded by its environment settings when it has any."""
    env = " ".join(code(f"{k}={v}", table=table) for k, v in sorted(chk.env.items())
                   if f"{k}={v}" not in chk.command)
    return f"{env} {code(chk.command, table=table)}".strip()


def _step_texts(kn: Knowledge, lang: str) -> list[str]:
    return [s["text"][lang] for s in kn.sop.get("steps", [])]


def render(kn: Knowledge, lang: str = "en", branches: Iterable[str] | None = None) -> str:
    """The SOP in ``lang``; ``branches`` limits the branch sections (and the reference index
    to what the chosen branches and the health checks cite)."""
    check_lang(lang)
    chosen = select_branches(kn, branches)
    full = not list(branches or [])
    w = Wording(kn, lang)
    t = w.t
    sop = kn.sop
    out: list[str] = []
    add = out.append

    add(f"# {sop.get('title', {}).get(lang, 'SOP')}")
    add("")
    if sop.get("environment"):
        add(f"_{sop['environment'][lang]}_")
        add("")

    # ------------------------------------------------------------ when to use
    add(f"## {t('when')}")
    add("")
    triggers = sop.get("triggers", {}).get(lang) or []
    if triggers:
        add(f"{t('when_intro')} " + t("sep").join(f"**{x}**" for x in triggers) + t("period"))
        add("")
    add(f"| {t('branch')} | {t('symptom')} | {t('words')} |")
    add("|---|---|---|")
    for bid in chosen:
        b = kn.branches[bid]
        words = t("sep").join(getattr(b.words, lang))
        add(f"| **{cell(b.title.get(lang))}** ({code(bid, table=True)}) | "
            f"{cell(b.symptom.get(lang))} | {cell(words)} |")
    add("")

    # ------------------------------------------------------------ steps and health checks
    add(f"## {t('steps')}")
    add("")
    for i, text in enumerate(_step_texts(kn, lang), 1):
        add(f"{i}. {text}")
    add("")
    health = [kn.checks[c] for c in sop.get("health_checks", []) if c in kn.checks]
    if health:
        add(f"### {t('health')}")
        add("")
        add(f"| {t('check')} | {t('command')} | {t('look_for')} |")
        add("|---|---|---|")
        for chk in health:
            add(f"| {cell(chk.title.get(lang))} | {check_command(chk, table=True)} | "
                f"{cell(chk.look_for.get(lang))} |")
        add("")

    # ------------------------------------------------------------ branches
    cited: set[str] = {r for chk in health for r in chk.refs}
    add(f"## {t('branches')}")
    add("")
    for bid in chosen:
        out.extend(_branch(kn, w, bid, cited))

    # ------------------------------------------------------------ hard rules and contract
    rules = sop.get("hard_rules", [])
    if rules:
        add(f"## {t('rules')}")
        add("")
        for i, r in enumerate(rules, 1):
            mark = _RULE_MARK.get(r.get("kind", ""), "")
            add(f"{i}. {mark} {r['text'][lang]}".replace("  ", " "))
        add("")
    add(f"## {t('contract')}")
    add("")
    add(t("contract_intro"))
    add("")
    cols = kn.report_text.get("columns", {}).get(lang) or []
    if cols:
        add("| " + " | ".join(cell(c) for c in cols) + " |")
        add("|" + "|".join(["---"] * len(cols)) + "|")
        add("")
    sentences = kn.report_text.get("conclusion", {}).get("confirmed", {}).get(lang) or []
    for i, s in enumerate(sentences, 1):
        add(f"{i}. {s.replace('{others}', '')}")
    if sentences:
        add("")
    add(t("contract_links"))
    add("")
    if sop.get("closing"):
        add(f"> {sop['closing'][lang]}")
        add("")

    # ------------------------------------------------------------ reference index
    add(f"## {t('index')}")
    add("")
    refs = refs_mod.select(kn, ids=None if full else cited)
    out.append(refs_mod.markdown(kn, refs, lang, level=3).rstrip("\n"))
    return "\n".join(out).rstrip("\n") + "\n"


def _branch(kn: Knowledge, w: Wording, bid: str, cited: set[str]) -> list[str]:
    lang, t = w.lang, w.t
    b = kn.branches[bid]
    out = [f"### {b.title.get(lang)} ({code(bid)})", ""]
    out.append(f"**{t('symptom')}{t('colon')}** {b.symptom.get(lang)}")
    out.append("")
    if b.entry:
        out.append(f"**{t('entry')}{t('colon')}** " + t("or").join(w.condition(c) for c in b.entry))
        out.append("")
    tools = []
    shown: set[str] = set()  # a command is written out once per branch, then named by title
    for tid in b.first_tools:
        chk = kn.checks.get(tid)
        if chk is not None:
            tools.append(check_command(chk))
            shown.add(chk.id)
            cited.update(chk.refs)
    if tools:
        out.append(f"**{t('first_tools')}{t('colon')}** " + "; ".join(tools))
        out.append("")

    # decision points, in graph order: questions with their answers, tools as one line
    own = {n.id: n for n in b.nodes}
    dg = decision_graph(kn)
    lines: list[str] = []
    for nid in graph_order(b):
        n = own.get(nid)
        if n is None or (n.kind != "question" and not n.check):
            continue
        chk = kn.checks.get(n.check or "")
        if chk is not None:
            cited.update(chk.refs)
        how = ""
        if chk is not None:
            how = f" — {chk.title.get(lang)}" if chk.id in shown else f" — {check_command(chk)}"
            shown.add(chk.id)
        if n.kind != "question":
            lines.append(f"- {n.label.get(lang)}{how}")
            continue
        lines.append(f"- **{n.label.get(lang)}**{how}")
        # the steps that run (engine.steps): the branch's own and those into causes
        for _u, target_id, st in sorted(dg.out_edges(nid, data="step"), key=lambda e: e[2].id):
            answer = st.label.get(lang) if st.label is not None else (st.answer or "")
            cond = f" ({w.clauses(st.clauses)})" if st.clauses else ""
            target = w.node_label(target_id)
            if target_id in kn.causes:
                target = f"**{target}** ({code(target_id)})"
            lines.append(f"  - {answer}{cond} → {target}")
    if lines:
        out += [f"**{t('decisions')}{t('colon')}**", ""] + lines + [""]

    causes = causes_of(kn, bid)
    if causes:
        out.append(f"| {t('symptom')} | {t('cause')} | {t('fix')} | {t('verify')} | {t('refs')} |")
        out.append("|---|---|---|---|---|")
        for cid in causes:
            c = kn.causes[cid]
            # a blank line between fixes where one has several lines: where each one ends
            sep = "<br><br>" if any("\n" in f.command.strip() for f in c.fixes) else "<br>"
            fixes = sep.join(code(f.command, table=True) for f in c.fixes)
            verify = "<br>".join(f"{code(v.command, table=True)} → {cell(w.condition(v.expect))}"
                                 for v in c.verify)
            ids: list[str] = []
            for r in list(c.references) + [r for f in c.fixes for r in f.refs]:
                if r in kn.references and r not in ids:
                    ids.append(r)
            ids = ids[:MAX_LINKS]
            cited.update(ids)
            links = ", ".join(cell(link(kn.references[r].title, kn.references[r].url))
                              for r in ids)
            out.append(f"| {cell(c.symptom.get(lang))} | **{cell(c.title.get(lang))}** "
                       f"({code(cid, table=True)}) | {fixes} | {verify} | {links} |")
        out.append("")
    return out


def size(text: str) -> dict[str, int]:
    """Bytes, lines and an approximate token count (about 4 bytes of English per token; one
    token per CJK character)."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
    other = len(text) - cjk
    return {"bytes": len(text.encode("utf-8")), "lines": text.count("\n"),
            "approx_tokens": round(other / 4 + cjk)}
