"""`kb mcp` as a subprocess, driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FACTS = {"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15, 22, 11]},
         "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}}
OOM_LOG = (
    "Traceback (most recent call last):\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.08 GiB memory in use. Of the allocated memory 60.10 GiB is allocated by PyTorch, and "
    "17.22 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")


def cli_json(*args: str, stdin: str | None = None) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "kb", *args, "--format", "json"], input=stdin,
                         capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "KB_NO_CACHE": "1"})
    return json.loads(out.stdout)


async def _session_run(fn):
    params = StdioServerParameters(command=sys.executable, args=["-m", "kb", "mcp"], cwd=str(ROOT),
                                   env={**os.environ, "KB_NO_CACHE": "1"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            session.kb_server_info = info.serverInfo  # type: ignore[attr-defined]
            return await fn(session)


def run(fn):
    return asyncio.run(asyncio.wait_for(_session_run(fn), timeout=120))


def payload(result) -> Any:
    assert not result.isError, result.content
    if result.structuredContent is not None:
        sc = result.structuredContent
        return sc.get("result", sc) if isinstance(sc, dict) and set(sc) == {"result"} else sc
    return json.loads(result.content[0].text)


def test_server_reports_kb_version() -> None:
    import kb

    async def go(s):
        return s.kb_server_info

    info = run(go)
    assert info.version == kb.__version__ and info.name


def test_tools_listed_with_descriptions() -> None:
    async def go(s):
        return await s.list_tools()

    tools = {t.name: t for t in run(go).tools}
    assert {"diagnose", "next_checks", "explain_cause", "list_causes", "search_references",
            "parse_artifact"} <= set(tools)
    assert "5 MB" in tools["diagnose"].description  # bounds are stated


def test_every_tool_good_and_bad_input(tmp_path: Path) -> None:
    async def go(s):
        out = {}
        out["diag"] = await s.call_tool("diagnose", {"facts": FACTS})
        out["diag_zh"] = await s.call_tool("diagnose", {"facts": FACTS, "lang": "zh"})
        out["diag_bad"] = await s.call_tool("diagnose", {"facts": {"gpu": {"utilization_samples": [140]}}})
        out["diag_art"] = await s.call_tool("diagnose", {"artifacts": [{"name": "train.log", "text": OOM_LOG}]})
        out["next"] = await s.call_tool("next_checks", {"facts": {"symptom": "gpu_util"}})
        out["next_bad"] = await s.call_tool("next_checks", {"facts": {"symptom": "slow"}})
        out["explain"] = await s.call_tool("explain_cause", {"cause_id": "gpu_util.cpu_bound"})
        out["explain_bad"] = await s.call_tool("explain_cause", {"cause_id": "gpu_util.cpu_bond"})
        out["causes"] = await s.call_tool("list_causes", {"branch": "gpu_util"})
        out["causes_bad"] = await s.call_tool("list_causes", {"branch": "gpu"})
        out["refs"] = await s.call_tool("search_references", {"query": "dataloader"})
        out["refs_bad"] = await s.call_tool("search_references", {"group": "nope"})
        out["parse"] = await s.call_tool("parse_artifact", {"text": OOM_LOG, "name": "train.log"})
        # readable text is never refused (issue 13): it says it found no fact; binary is refused
        out["parse_plain"] = await s.call_tool("parse_artifact", {"text": "hello world\n", "name": "x.txt"})
        out["parse_bad"] = await s.call_tool("parse_artifact", {"text": "a\x00b" * 10, "name": "x.bin"})
        out["resources"] = await s.list_resource_templates()
        out["prompts"] = await s.list_prompts()
        return out

    out = run(go)
    diag = payload(out["diag"])
    cli = cli_json("diagnose", "--facts", "-", stdin=json.dumps(FACTS))
    assert diag["findings"] == cli["findings"] and diag["status"] == cli["status"]
    assert payload(out["diag_zh"])["lang"] == "zh"
    assert out["diag_bad"].isError and "$.gpu.utilization_samples[0]" in out["diag_bad"].content[0].text
    art = payload(out["diag_art"])
    assert art["findings"] and art["findings"][0]["branch"] == "oom"
    assert payload(out["next"])["next_checks"]
    assert out["next_bad"].isError
    assert payload(out["explain"])["cause_id"] == "gpu_util.cpu_bound"
    assert out["explain_bad"].isError and "gpu_util.cpu_bound" in out["explain_bad"].content[0].text
    assert all(c["branch"] == "gpu_util" for c in payload(out["causes"]))
    assert out["causes_bad"].isError and "unknown branch" in out["causes_bad"].content[0].text
    assert any("data" in r["url"] for r in payload(out["refs"]))
    assert out["refs_bad"].isError
    parsed = payload(out["parse"])
    assert parsed["facts"]["oom"]["occurred"] is True
    assert out["parse_bad"].isError
    plain = json.loads(out["parse_plain"].content[0].text)
    assert not out["parse_plain"].isError and plain["facts"] == {} and plain["notes"]
    assert any("sop" in t.uriTemplate for t in out["resources"].resourceTemplates)
    assert any(p.name == "triage" for p in out["prompts"].prompts)
