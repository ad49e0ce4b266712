"""`kb mcp`: the knowledge base as a Model Context Protocol server over stdio.

Tools take and return JSON documents of the same shapes as the CLI (``kb diagnose --format
json``). Inputs are bounded (see the limits in each tool description); every error comes
back as an MCP tool error carrying the same one-line message as the CLI. Needs the optional
extra ``mcp`` (``pip install 'kb[mcp]'``); the SDK is imported only by :func:`build_server`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb.engine.errors import InputError, KbError

MAX_FACTS_BYTES = 1_000_000
MAX_ARTIFACT_BYTES = 5_000_000
MAX_ARTIFACTS = 64
MAX_TOTAL_BYTES = 20_000_000
MAX_TEXT = 2_000


def _check_lang(lang: str) -> str:
    if lang not in ("en", "zh"):
        raise InputError("lang", f"unknown language {lang!r}", "Use en or zh")
    return lang


def _facts_size(facts: dict[str, Any] | None) -> None:
    if facts is not None:
        size = len(json.dumps(facts, default=str))
        if size > MAX_FACTS_BYTES:
            raise InputError("facts", f"too large ({size} bytes > {MAX_FACTS_BYTES})")


def _blobs(artifacts: list[dict[str, str]]) -> list[Any]:
    """MCP artifacts ({name, text}) as in-memory inputs, checked against the MCP size caps."""
    from kb.inputs_blob import Blob

    if len(artifacts) > MAX_ARTIFACTS:
        raise InputError("artifacts", f"too many ({len(artifacts)} > {MAX_ARTIFACTS})")
    total = 0
    out = []
    for i, art in enumerate(artifacts):
        if not isinstance(art, dict) or not isinstance(art.get("text"), str):
            raise InputError(f"artifacts[{i}]", "expected {name, text} with text a string")
        data = art["text"].encode("utf-8", errors="replace")
        total += len(data)
        if len(data) > MAX_ARTIFACT_BYTES:
            raise InputError(f"artifacts[{i}]", f"too large ({len(data)} bytes > {MAX_ARTIFACT_BYTES})")
        if total > MAX_TOTAL_BYTES:
            raise InputError("artifacts", f"too large in total (> {MAX_TOTAL_BYTES} bytes)")
        name = Path(str(art.get("name") or f"artifact{i}.txt")).name or f"artifact{i}.txt"
        out.append(Blob(name, data))
    return out


def run_diagnose(facts: dict[str, Any] | None = None, artifacts: list[dict[str, str]] | None = None,
                 symptom_text: str | None = None, lang: str = "en",
                 overrides: dict[str, float] | None = None) -> dict[str, Any]:
    """Same result as ``kb diagnose --format json`` for the same facts and artifacts."""
    import kb

    _check_lang(lang)
    _facts_size(facts)
    report = kb.diagnose(facts if facts is not None else ({} if not (artifacts or symptom_text)
                                                          else None),
                         inputs=_blobs(artifacts or []),
                         symptom=symptom_text[:MAX_TEXT] if symptom_text else None,
                         lang=lang, overrides=overrides)
    return report.model_dump(mode="json")


def list_causes(branch: str | None = None, lang: str = "en") -> list[dict[str, Any]]:
    """Every cause (optionally of one branch): id, branch, title, severity, symptom."""
    import kb

    _check_lang(lang)
    kn = kb.load_knowledge()
    if branch is not None and branch not in kn.branches:
        raise InputError("branch", f"unknown branch {branch!r}", f"Use one of {', '.join(kn.branches)}")
    return [{"id": c.id, "branch": c.branch, "title": c.title.get(lang),
             "severity": c.severity, "symptom": c.symptom.get(lang)}
            for c in kn.causes.values() if branch is None or c.branch == branch]


def search_references(query: str | None = None, group: str | None = None,
                      lang: str = "en") -> list[dict[str, Any]]:
    """References of the index whose title, about text, URL or group matches ``query``."""
    import kb

    _check_lang(lang)
    kn = kb.load_knowledge()
    if group is not None and group not in kn.ref_groups:
        raise InputError("group", f"unknown group {group!r}",
                         f"Use one of {', '.join(kn.ref_groups)}")
    q = (query or "")[:MAX_TEXT].lower()
    out = []
    for r in kn.references.values():
        if group is not None and r.group != group:
            continue
        hay = " ".join([r.id, r.title, r.url, r.group, r.about.en, r.about.zh]).lower()
        if q and not all(word in hay for word in q.split()):
            continue
        out.append({"id": r.id, "group": r.group, "title": r.title, "url": r.url,
                    "about": r.about.get(lang)})
    return out


def build_server() -> Any:
    """The FastMCP server with kb's tools, resources and prompt."""
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.exceptions import ToolError

    import kb

    server = FastMCP("kb", instructions=(
        "GPU training / LLM inference triage. Call diagnose with facts (see the facts JSON "
        "schema resource) and/or raw artifact texts; follow next_checks when the status is "
        "not confirmed; cite the references returned."))
    server._mcp_server.version = kb.__version__  # server info reports kb's version, not the SDK's

    def guarded(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KbError as err:
            lines = getattr(err, "problems", None) or [err.line()]
            raise ToolError("; ".join(lines[:20])) from None

    @server.tool()
    def diagnose(facts: dict[str, Any] | None = None,
                 artifacts: list[dict[str, str]] | None = None,
                 symptom_text: str | None = None, lang: str = "en",
                 overrides: dict[str, float] | None = None) -> dict[str, Any]:
        """Diagnose a GPU training / inference job. `facts`: a facts document (the JSON
        schema is the resource kb://schema/facts; at most 1 MB). `artifacts`: raw outputs as
        [{"name": "train.log", "text": "..."}] (nvidia-smi, iostat, ps, py-spy dumps, training
        logs, vLLM /metrics, TORCH_LOGS; at most 64 items, 5 MB each, 20 MB in all).
        `symptom_text`: the problem in the user's words (en or zh, 2000 chars). `lang`: en|zh.
        `overrides`: threshold id -> number. Returns the report: status, findings (cause_id,
        evidence, fixes, verify, references), hypotheses, ruled_out, next_checks, conclusion."""
        return guarded(run_diagnose, facts, artifacts, symptom_text, lang, overrides)

    @server.tool()
    def next_checks(facts: dict[str, Any] | None = None, lang: str = "en") -> dict[str, Any]:
        """The commands to run next for these facts (at most 1 MB), best first: command,
        what to look for, the facts it produces, the causes it separates; plus the status and
        the open hypotheses with their missing facts."""
        rep = guarded(run_diagnose, facts, None, None, lang, None)
        return {"status": rep["status"], "question": rep["question"],
                "next_checks": rep["next_checks"], "hypotheses": rep["hypotheses"]}

    @server.tool()
    def explain_cause(cause_id: str, lang: str = "en") -> dict[str, Any]:
        """Explain one cause id (e.g. oom.fragmentation): the path from the symptom through
        the decision graph, its conditions in words, fixes, verification and references."""
        from kb.explain import explain

        def run() -> dict[str, Any]:
            _check_lang(lang)
            return explain(cause_id[:200], kb.load_knowledge(), lang).model_dump(mode="json")

        return guarded(run)

    @server.tool(name="list_causes")
    def list_causes_tool(branch: str | None = None, lang: str = "en") -> list[dict[str, Any]]:
        """All cause ids with title, severity and symptom; optionally of one branch
        (gpu_util, oom, nccl, numerics, inference, compile)."""
        return guarded(list_causes, branch, lang)

    @server.tool(name="search_references")
    def search_references_tool(query: str | None = None, group: str | None = None,
                               lang: str = "en") -> list[dict[str, Any]]:
        """Search the reference index (authoritative docs backing every fix) by words in
        title / description / URL (query at most 2000 chars), optionally within one group."""
        return guarded(search_references, query, group, lang)

    @server.tool()
    def parse_artifact(text: str, name: str = "artifact.txt",
                       input_format: str | None = None) -> dict[str, Any]:
        """Parse one raw artifact text (at most 5 MB) into facts; the format is detected
        from the content unless `input_format` is given. Returns format, facts and notes."""
        def run() -> dict[str, Any]:
            from kb.inputs import load_inputs

            bundle = load_inputs(_blobs([{"name": name, "text": text}]), input_format)
            return {"formats": bundle.sources, "facts": bundle.facts, "notes": bundle.notes,
                    "conflicts": bundle.conflicts}

        return guarded(run)

    @server.resource("kb://sop/{lang}", mime_type="text/markdown")
    def sop(lang: str) -> str:
        """The agent triage SOP (AGENTS.md text) generated from the knowledge base."""
        from kb.exports.agents_md import render as render_agents_md

        return render_agents_md(kb.load_knowledge(), _check_lang(lang))

    @server.resource("kb://schema/facts", mime_type="application/json")
    def facts_schema() -> str:
        """The JSON Schema of a facts document."""
        return json.dumps(kb.Facts.model_json_schema())

    @server.prompt()
    def triage(problem: str, lang: str = "en") -> str:
        """Start a triage with the SOP: the agent classifies, runs health checks, calls
        diagnose and reports the table plus three sentences."""
        from kb.exports.agents_md import render as render_agents_md

        sop_text = render_agents_md(kb.load_knowledge(), _check_lang(lang))
        return f"{sop_text}\n\n---\nProblem reported by the user:\n{problem[:MAX_TEXT]}\n"

    return server


def serve() -> None:
    """Run the server over stdio until the client closes it."""
    build_server().run("stdio")
