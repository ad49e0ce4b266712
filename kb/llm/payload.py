"""What is sent to the model, and what its answer may use.

The payload holds only the status, the findings (cause id, title, symptom, why, severity,
confidence, evidence, fixes, verification, reference ids), the next checks, the allowed
references (id, title, url), the allowed commands, the table columns and the deterministic
three-sentence conclusion as a draft. Never raw logs, input paths or warnings. The whole
payload then passes one redactor (:func:`kb.llm.redact.redact_payload`): a secret or host
learned anywhere in it (evidence, symptom, draft conclusion...) is removed everywhere; the
knowledge's reference URLs and commands are kept as written.

The messages come from ``prompts/report.<lang>.md``: sections ``<!-- kb:system -->``,
``<!-- kb:user -->`` and ``<!-- kb:retry -->``, with ``{name}`` placeholders filled by
:func:`fill` (only known names; other braces are left alone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kb.engine.conditions import base_path
from kb.words import fmt_value
from kb.engine.errors import KnowledgeError
from kb.engine.knowledge import Knowledge
from kb._data import data_dir
from kb.llm.redact import redact_payload
from kb.report.model import Report

LANG_NAMES = {"en": "English", "zh": "简体中文"}
_SECTION = re.compile(r"^<!-- kb:([a-z_]+) -->[ \t]*$", re.M)
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass
class Grounding:
    """What an answer may contain, derived from the payload that was sent."""

    lang: str
    columns: list[str]
    findings: dict[str, str]  # cause id -> title (in the report's language)
    known_causes: dict[str, str]  # every cause of the knowledge: id -> title
    branches: set[str]
    urls: set[str]
    commands: set[str]
    fact_paths: set[str]
    payload_text: str
    finding_texts: dict[str, str] = field(default_factory=dict)  # cause id -> its payload JSON


@dataclass
class Request:
    """The messages to send, the payload they carry and the grounding to verify against."""

    payload: dict[str, Any]
    messages: list[dict[str, str]]
    grounding: Grounding
    templates: dict[str, str]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


@lru_cache(maxsize=4)
def templates(lang: str) -> dict[str, str]:
    """The prompt sections of ``prompts/report.<lang>.md``."""
    path = data_dir("prompts") / f"report.{lang}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KnowledgeError(str(path), f"cannot read the prompt template ({exc.strerror})") from None
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    missing = [s for s in ("system", "user", "retry") if s not in sections]
    if missing:
        raise KnowledgeError(str(path), f"missing section(s) {', '.join(missing)}",
                             "Mark each with a line '<!-- kb:NAME -->'")
    return sections


def fill(template: str, values: dict[str, str]) -> str:
    """Replace ``{name}`` for the names in ``values``; leave every other brace as it is."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _evidence(e: Any) -> dict[str, Any]:
    return {"fact": e.fact, "condition": e.condition, "value": fmt_value(e.value, e.unit)}


def build_payload(report: Report, kn: Knowledge, *, redact_hosts: bool = False) -> dict[str, Any]:
    """The data the model sees (already redacted)."""
    lang = report.lang
    ref_ids: list[str] = []

    def add_ref(rid: str) -> str:
        if rid not in ref_ids:
            ref_ids.append(rid)
        return rid

    commands: list[str] = []

    def add_cmd(cmd: str) -> str:
        if cmd and cmd not in commands:
            commands.append(cmd)
        return cmd

    keep = tuple(r.url for r in kn.references.values())
    findings = []
    for f in report.findings:
        findings.append({
            "cause_id": f.cause_id,
            "title": f.title,
            "symptom": f.symptom,
            "why": f.why,
            "severity": f.severity,
            "confidence": round(f.confidence, 2),
            "evidence": [_evidence(e) for e in f.evidence],
            "fixes": [{"text": x.text, "command": add_cmd(x.command),
                       "references": [add_ref(r.id) for r in x.references]} for x in f.fixes],
            "verify": [{"text": v.text, "command": add_cmd(v.command), "expect": v.expect}
                       for v in f.verify],
            "references": [add_ref(r.id) for r in f.references],
        })
    checks = []
    for c in report.next_checks[:8]:
        checks.append({"id": c.id, "title": c.title, "command": add_cmd(c.command),
                       "look_for": c.look_for, "separates": list(c.separates)})
        chk = kn.checks.get(c.id)
        for rid in (chk.refs if chk else []):
            if rid in kn.references:
                add_ref(rid)
    for cid in kn.sop.get("health_checks", []) if isinstance(kn.sop, dict) else []:
        if cid in kn.checks:
            add_cmd(kn.checks[cid].command)
    refs = [{"id": r.id, "title": r.title, "url": r.url}
            for r in (kn.references[i] for i in ref_ids)]
    status_text = kn.report_text.get("status", {}).get(report.status, {}).get(lang, report.status)
    payload = {
        "lang": lang,
        "status": report.status,
        "status_text": status_text,
        "symptom": report.symptom or None,
        "columns": list(kn.report_text["columns"][lang]),
        "findings": findings,
        "next_checks": checks,
        "references": refs,
        "allowed_commands": commands,
        "draft_conclusion": list(report.conclusion),
    }
    # one redactor over everything that is sent (issue 17): nothing escapes by being in a field
    # nobody thought of; the knowledge's own URLs and commands are kept exactly
    return redact_payload(payload, hosts=redact_hosts, keep=keep + tuple(commands))


def grounding(payload: dict[str, Any], kn: Knowledge) -> Grounding:
    """What an answer to ``payload`` may contain."""
    lang = payload["lang"]
    refs = {r["id"]: r for r in payload["references"]}
    facts: set[str] = set()
    finding_texts: dict[str, str] = {}
    for f in payload["findings"]:
        for e in f["evidence"]:
            facts.update((e["fact"], base_path(e["fact"])))
        cause = kn.causes.get(f["cause_id"])
        for v in (cause.verify if cause else []):
            facts.update((v.expect.fact, base_path(v.expect.fact)))
        mine = [refs[r] for r in f["references"] if r in refs]
        mine += [refs[r] for x in f["fixes"] for r in x["references"] if r in refs]
        finding_texts[f["cause_id"]] = _dumps(f) + "\n" + _dumps(mine)
    for c in payload["next_checks"]:
        chk = kn.checks.get(c["id"])
        facts.update(chk.produces if chk else [])
    return Grounding(
        lang=lang,
        columns=list(payload["columns"]),
        findings={f["cause_id"]: f["title"] for f in payload["findings"]},
        known_causes={cid: c.title.get(lang) for cid, c in kn.causes.items()},
        branches=set(kn.branches),
        urls={r["url"] for r in payload["references"]},
        commands=set(payload["allowed_commands"]),
        fact_paths={p for p in facts if p},
        payload_text=_dumps(payload),
        finding_texts=finding_texts,
    )


def build_request(report: Report, kn: Knowledge, *, redact_hosts: bool = False) -> Request:
    """The first-turn messages for ``report``, from the language's prompt template."""
    payload = build_payload(report, kn, redact_hosts=redact_hosts)
    tpl = templates(report.lang)
    text = _dumps(payload)
    # a fence longer than any backtick run inside the data, so no value can close it early
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    values = {
        "lang_name": LANG_NAMES[report.lang],
        "columns": " | ".join(payload["columns"]),
        "payload": text,
        "fence": "`" * max(3, longest + 1),
    }
    messages = [
        {"role": "system", "content": fill(tpl["system"], values)},
        {"role": "user", "content": fill(tpl["user"], values)},
    ]
    return Request(payload=payload, messages=messages, grounding=grounding(payload, kn),
                   templates=tpl)


def retry_message(req: Request, violations: list[str]) -> dict[str, str]:
    """The follow-up that lists what was wrong with the previous answer."""
    listed = "\n".join(f"- {v}" for v in violations[:20])
    return {"role": "user", "content": fill(req.templates["retry"], {"violations": listed})}
