"""``kb collect``: run the SOP's health-check commands on this machine and return partial facts.

Every command runs without a shell, with its own timeout, in its own process group (killed as
a group with ``os.killpg`` on timeout, so nothing it started lingers), with its output read up
to :data:`MAX_TOOL_OUTPUT` bytes; the whole collection, metrics fetch included, has a total
deadline (:func:`default_deadline`). A tool that is missing, fails or times out is recorded
under ``tools.<name>`` (status missing / failed / timeout, with a detail) and collection goes
on: this works on a machine without a GPU or without sysstat. The ``runner`` seam
(``subprocess.run``'s signature) lets tests replay recorded outputs.
"""

from __future__ import annotations

import io
import os
import selectors
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from kb.engine.errors import InputError
from kb.inputs import merge_partial, validate
from kb.parsers import iostat, nvidia_smi, nvidia_smi_dmon, ps, py_spy, training_log, vllm_metrics
from kb.parsers.base import ParseResult

Runner = Callable[..., Any]

QUICK_TIMEOUT_S = 15
#: the metrics endpoint is read up to this size
MAX_METRICS_BYTES = 32 * 1024 * 1024
#: bytes kept of one tool's stdout (and of its stderr); the tool is stopped past that
MAX_TOOL_OUTPUT = 32 * 1024 * 1024
#: after SIGTERM to a timed-out group, how long before SIGKILL
_GRACE_S = 0.5


def default_deadline(seconds: int) -> float:
    """Total seconds ``kb collect`` may take: the sampling twice over plus a minute of slack."""
    return 2.0 * seconds + 60.0


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_in_group(argv: list[str], *, capture_output: bool = True, text: bool = True,
                 timeout: float, check: bool = False,
                 max_output: int = MAX_TOOL_OUTPUT) -> subprocess.CompletedProcess:
    """``subprocess.run`` for tools: a new session (own process group), output capped at
    ``max_output`` bytes per stream, and on timeout the whole group is terminated then killed.

    Raises FileNotFoundError / OSError like ``subprocess.run`` and
    ``subprocess.TimeoutExpired`` on timeout. The result has ``truncated`` set when the output
    was cut (the tool is then stopped: its first ``max_output`` bytes are used).
    """
    del capture_output, check  # always captured, never raising on exit status: the seam's shape
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    pgid = proc.pid  # start_new_session: the child leads a new group with its own pid
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()  # type: ignore[union-attr]
    bufs: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    sizes = dict.fromkeys(bufs, 0)
    truncated = timed_out = False
    end = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        sel.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
    finished = False
    try:
        while sel.get_map():
            left = end - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                room = max_output - sizes[key.fd]
                bufs[key.fd].append(chunk[:room])
                sizes[key.fd] += min(len(chunk), room)
                if len(chunk) > room:
                    truncated = True
            if truncated:
                break
        if not (timed_out or truncated):
            try:  # both pipes closed: the tool is exiting; give it the time that is left
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        finished = True
    finally:
        sel.close()
        if timed_out or truncated or not finished:
            _kill_group(pgid, signal.SIGTERM)
            try:
                proc.wait(timeout=_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        _kill_group(pgid, signal.SIGKILL)  # whatever the tool left behind goes too
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            pass
        for stream in (proc.stdout, proc.stderr):
            stream.close()  # type: ignore[union-attr]
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout)
    out, err = b"".join(bufs[out_fd]), b"".join(bufs[err_fd])
    # a tool stopped for talking too much is judged on what it said, not on our signal
    code = 0 if truncated else (proc.returncode if proc.returncode is not None else -9)
    result: subprocess.CompletedProcess = subprocess.CompletedProcess(
        argv, code, out.decode("utf-8", "replace") if text else out,
        err.decode("utf-8", "replace") if text else err)
    result.truncated = truncated  # type: ignore[attr-defined]
    return result
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
    runner: Runner = run_in_group,
    deadline_s: float | None = None,
) -> dict[str, Any]:
    """Run the health checks and scan ``logs``; return a partial Facts dict that validates.

    Everything together takes at most ``deadline_s`` seconds (default
    :func:`default_deadline`): each command's timeout is cut to the time left, and what no
    longer fits is recorded as ``timeout`` ("total deadline reached").

    Raises InputError only for unusable options (``seconds`` outside 1..600, a metrics URL
    that is not http(s)); every tool problem is recorded under ``tools`` instead.
    """
    if not 1 <= seconds <= 600:
        raise InputError("--seconds", f"out of range ({seconds})", "Allowed: 1 to 600")
    if metrics_url is not None and not metrics_url.startswith(("http://", "https://")):
        raise InputError("--metrics-url", f"not an http(s) URL ({metrics_url})", "Give e.g. http://localhost:8000/metrics")
    say = progress or (lambda _msg: None)
    total = default_deadline(seconds) if deadline_s is None else float(deadline_s)
    end = time.monotonic() + total

    def left() -> float:
        return end - time.monotonic()

    def over(name: str) -> dict[str, Any]:
        return {"status": "timeout", "detail": f"skipped: the total deadline of {total:g} s was reached"}

    facts: dict[str, Any] = {}
    tools: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    conflicts: list[str] = []

    def add(result: ParseResult, name: str) -> None:
        merge_partial(facts, result.facts, name, origins, conflicts)

    for name, argv, timeout, parse in commands(pid, seconds):
        say(name)
        if left() < 1:
            tools[name] = over(name)
            continue
        status = _run(runner, argv, min(timeout, max(1, int(left()))))
        tools[name] = status.pop("_status")
        out = status.get("stdout")
        if tools[name]["status"] == "ok" and out:
            add(parse(io.StringIO(out), name), name)
    if metrics_url:
        say("metrics")
        tools["metrics"] = (_fetch_metrics(metrics_url, facts, add, min(QUICK_TIMEOUT_S, left()))
                            if left() >= 1 else over("metrics"))
    for path in logs:
        say(f"log {path}")
        key = f"log:{path}"
        if left() < 1:
            tools[key] = over(key)
            continue
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
    status: dict[str, Any] = {"status": "ok"}
    if getattr(proc, "truncated", False):
        status["detail"] = f"output cut at {MAX_TOOL_OUTPUT} bytes"
    return {"_status": status, "stdout": stdout}


class _Deadline(Exception):
    pass


def _read_until(resp: Any, limit: int, end: float) -> bytes:
    """The body, at most ``limit`` bytes, by ``end`` (monotonic) at the latest: a server that
    drips one byte per second never ends a plain ``read()``, and each socket read has its
    own timeout, so the total is checked between reads."""
    parts: list[bytes] = []
    size = 0
    read = getattr(resp, "read1", None) or resp.read
    while size < limit:
        if time.monotonic() > end:
            raise _Deadline
        chunk = read(min(1 << 16, limit - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _fetch_metrics(url: str, facts: dict[str, Any], add: Callable[[ParseResult, str], None],
                   budget_s: float = QUICK_TIMEOUT_S) -> dict[str, Any]:
    budget_s = max(1.0, budget_s)
    slow = {"status": "timeout", "detail": f"{url}: no complete answer within {budget_s:g} s"}
    end = time.monotonic() + budget_s
    try:
        with urllib.request.urlopen(url, timeout=budget_s) as resp:  # noqa: S310 - scheme checked
            body = _read_until(resp, MAX_METRICS_BYTES, end).decode("utf-8", "replace")
    except (TimeoutError, _Deadline):
        return slow
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            return slow
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
