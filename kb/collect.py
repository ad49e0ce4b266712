"""``kb collect``: run the SOP's health-check commands on this machine and return partial facts.

Every command runs without a shell and with a timeout. A tool that is missing, fails or times
out is recorded under ``tools.<name>`` (status missing / failed / timeout, with a detail) and
collection goes on: this works on a machine without a GPU or without sysstat. The ``runner``
seam (``subprocess.run``'s signature) lets tests replay recorded outputs.
"""

from __future__ import annotations

import io
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from engine.errors import InputError
from kb.inputs import merge_partial, validate
from kb.parsers import iostat, nvidia_smi, nvidia_smi_dmon, ps, py_spy, training_log, vllm_metrics
from kb.parsers.base import ParseResult

Runner = Callable[..., Any]

QUICK_TIMEOUT_S = 15
#: the metrics endpoint is read up to this size
MAX_METRICS_BYTES = 32 * 1024 * 1024
_ENV_PREFIXES = ("NCCL_", "PYTORCH_", "TORCH_", "CUDA_", "CUBLAS_", "OMP_", "VLLM_")


def commands(pid: int | None, seconds: int) -> list[tuple[str, list[str], int, Callable[..., ParseResult]]]:
    """``(tool name, argv, timeout_s, parser)`` for every command ``collect`` runs."""
    cmds: list[tuple[str, list[str], int, Callable[..., ParseResult]]] = [
        ("nvidia-smi", [
            "nvidia-smi", "--query-gpu=" + ",".join(nvidia_smi.DEFAULT_QUERY), "--format=csv,noheader,nounits",
        ], QUICK_TIMEOUT_S, nvidia_smi.parse),
        ("nvidia-smi-dmon", ["nvidia-smi", "dmon", "-s", "u", "-c", str(seconds)], seconds + QUICK_TIMEOUT_S,
         nvidia_smi_dmon.parse),
        # the first iostat report covers the time since boot and is dropped: ask for one more
        ("iostat", ["iostat", "-xm", "1", str(max(3, seconds + 1))], seconds + 1 + QUICK_TIMEOUT_S, iostat.parse),
        ("ps", ["ps", "-eo", "pid,pcpu,pmem,cmd", "ww"], QUICK_TIMEOUT_S, ps.parse),
    ]
    if pid is not None:
        cmds.append(("py-spy", ["py-spy", "dump", "--pid", str(pid)], QUICK_TIMEOUT_S * 2, py_spy.parse))
    return cmds


def _detail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return (lines[0] if lines else "")[:300]


def collect(
    logs: Sequence[str],
    pid: int | None,
    metrics_url: str | None,
    seconds: int,
    progress: Callable[[str], None] | None = None,
    runner: Runner = subprocess.run,
) -> dict[str, Any]:
    """Run the health checks and scan ``logs``; return a partial Facts dict that validates.

    Raises InputError only for unusable options (``seconds`` outside 1..600, a metrics URL
    that is not http(s)); every tool problem is recorded under ``tools`` instead.
    """
    if not 1 <= seconds <= 600:
        raise InputError("--seconds", f"out of range ({seconds})", "Allowed: 1 to 600")
    if metrics_url is not None and not metrics_url.startswith(("http://", "https://")):
        raise InputError("--metrics-url", f"not an http(s) URL ({metrics_url})", "Give e.g. http://localhost:8000/metrics")
    say = progress or (lambda _msg: None)
    facts: dict[str, Any] = {}
    tools: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    conflicts: list[str] = []

    def add(result: ParseResult, name: str) -> None:
        merge_partial(facts, result.facts, name, origins, conflicts)

    for name, argv, timeout, parse in commands(pid, seconds):
        say(name)
        status = _run(runner, argv, timeout)
        tools[name] = status.pop("_status")
        out = status.get("stdout")
        if tools[name]["status"] == "ok" and out:
            add(parse(io.StringIO(out), name), name)
    if metrics_url:
        say("metrics")
        tools["metrics"] = _fetch_metrics(metrics_url, facts, add)
    for path in logs:
        say(f"log {path}")
        key = f"log:{path}"
        try:
            add(training_log.parse_path(path), path)
            tools[key] = {"status": "ok"}
        except OSError as exc:
            tools[key] = {"status": "failed", "detail": f"{path}: {exc.strerror or exc}"}
    if pid is not None:
        env = _process_env(pid)
        if env:
            facts.setdefault("env", {}).update({k: v for k, v in env.items() if k not in facts.get("env", {})})
    cores = os.cpu_count()
    if cores:
        facts.setdefault("cpu", {}).setdefault("cores", cores)
    facts["tools"] = tools
    validate(facts, "kb collect")
    return facts


def _run(runner: Runner, argv: list[str], timeout: int) -> dict[str, Any]:
    try:
        proc = runner(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return {"_status": {"status": "missing", "detail": f"{argv[0]} not found on PATH"}}
    except subprocess.TimeoutExpired:
        return {"_status": {"status": "timeout", "detail": f"no result after {timeout} s"}}
    except OSError as exc:
        return {"_status": {"status": "failed", "detail": f"{argv[0]}: {exc.strerror or exc}"}}
    if proc.returncode != 0:
        detail = _detail(proc.stderr) or _detail(proc.stdout) or f"exit status {proc.returncode}"
        return {"_status": {"status": "failed", "detail": f"exit status {proc.returncode}: {detail}"[:300]}}
    stdout = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else (proc.stdout or "")
    return {"_status": {"status": "ok"}, "stdout": stdout}


def _fetch_metrics(url: str, facts: dict[str, Any], add: Callable[[ParseResult, str], None]) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=QUICK_TIMEOUT_S) as resp:  # noqa: S310 - scheme checked
            body = resp.read(MAX_METRICS_BYTES).decode("utf-8", "replace")
    except TimeoutError:
        return {"status": "timeout", "detail": f"{url}: no answer after {QUICK_TIMEOUT_S} s"}
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            return {"status": "timeout", "detail": f"{url}: no answer after {QUICK_TIMEOUT_S} s"}
        return {"status": "failed", "detail": f"{url}: {exc.reason}"[:300]}
    except (OSError, ValueError) as exc:
        return {"status": "failed", "detail": f"{url}: {exc}"[:300]}
    add(vllm_metrics.parse(io.StringIO(body), url), url)
    return {"status": "ok"}


def _process_env(pid: int) -> dict[str, str]:
    """NCCL_/PYTORCH_/... variables of the target process (Linux; empty when unreadable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and key.startswith(_ENV_PREFIXES):
            env[key] = value
    return env
