"""kb collect with a fake runner replaying fixture outputs, and once for real on this machine."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kb.engine.errors import InputError
from kb.facts import Facts
from kb.collect import collect
from kb.cli.collect_cmd import collect as collect_cmd
from tests.parsers._fixtures import FIXTURES


def _fake(outputs: dict[str, Any]):
    calls: list[list[str]] = []

    def runner(argv: list[str], **kw: Any) -> SimpleNamespace:
        calls.append(argv)
        assert kw["timeout"] > 0 and kw["check"] is False
        key = argv[1] if argv[0] == "nvidia-smi" and argv[1] == "dmon" else argv[0]
        out = outputs.get(key)
        if isinstance(out, BaseException):
            raise out
        if out is None:
            raise FileNotFoundError(argv[0])
        code, text = out
        return SimpleNamespace(returncode=code, stdout=text if code == 0 else "", stderr="" if code == 0 else text)

    return runner, calls


def test_fake_runner_all_tools(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text((FIXTURES / "oom_2_2.log").read_text())
    runner, calls = _fake({
        "nvidia-smi": (0, "0, NVIDIA H100 80GB HBM3, 97, 41, 75370, 81559, 550.54.15\n"),
        "dmon": (0, (FIXTURES / "dmon_s_u.txt").read_text()),
        "iostat": (0, (FIXTURES / "iostat_sysstat11_6_x.txt").read_text()),
        "ps": (0, "  PID %CPU %MEM CMD\n 4242 350.0 2.0 python train.py --bs 8\n"),
        "py-spy": (0, (FIXTURES / "pyspy_deepspeed_zero3.txt").read_text()),
    })
    seen: list[str] = []
    facts = collect([str(log)], 4242, None, 2, seen.append, runner=runner)
    Facts.model_validate(facts)
    assert facts["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    assert facts["gpu"]["utilization_samples"] == [97.0] + [0.0] * 9
    assert facts["disk"]["device"] == "nvme0n1"
    assert facts["cpu"]["process_cpu_percent"] == [350.0]
    assert facts["distributed"]["rank_states"][0]["collective"] == "all_gather_coalesced"
    assert facts["oom"]["tried_to_allocate_mib"] == 22.0
    assert all(v["status"] == "ok" for v in facts["tools"].values())
    assert ["nvidia-smi", "dmon", "-s", "u", "-c", "2"] == calls[1]
    assert ["py-spy", "dump", "--pid", "4242"] == calls[-1]
    assert seen[:4] == ["nvidia-smi", "nvidia-smi-dmon", "iostat", "ps"]


def test_missing_failed_timeout_are_recorded() -> None:
    runner, _ = _fake({
        "nvidia-smi": (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
        "iostat": subprocess.TimeoutExpired(["iostat"], 5),
        "ps": PermissionError(13, "Permission denied"),
    })
    facts = collect([], None, None, 1, None, runner=runner)
    Facts.model_validate(facts)
    tools = facts["tools"]
    assert tools["nvidia-smi"] == {
        "status": "failed",
        "detail": "exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    }
    assert tools["nvidia-smi-dmon"]["status"] == "missing"
    assert tools["iostat"]["status"] == "timeout"
    assert tools["ps"]["status"] == "failed"


def test_bad_options_raise_input_error() -> None:
    with pytest.raises(InputError, match="--seconds"):
        collect([], None, None, 0)
    with pytest.raises(InputError, match="--metrics-url"):
        collect([], None, "file:///etc/passwd", 1)


def test_metrics_url_unreachable_is_recorded() -> None:
    runner, _ = _fake({})
    facts = collect([], None, "http://127.0.0.1:9/metrics", 1, None, runner=runner)
    assert facts["tools"]["metrics"]["status"] in {"failed", "timeout"}


def test_real_call_on_this_machine(tmp_path) -> None:
    facts = collect([], None, None, 1)
    Facts.model_validate(facts)
    assert set(facts["tools"]) == {"nvidia-smi", "nvidia-smi-dmon", "iostat", "ps"}
    assert facts["tools"]["ps"]["status"] == "ok"


def test_cli_refuses_to_overwrite_and_writes_json(tmp_path) -> None:
    app = typer.Typer()
    app.command("collect")(collect_cmd)
    app.command("other")(lambda: None)
    out = tmp_path / "facts.json"
    out.write_text("keep me")
    res = CliRunner().invoke(app, ["collect", "-o", str(out), "--seconds", "1"])
    assert res.exit_code == 2
    assert "file exists" in res.output and out.read_text() == "keep me"
    res = CliRunner().invoke(app, ["collect", "-o", str(out), "--seconds", "1", "--force"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["tools"]["ps"] == {"status": "ok"}
    assert f"facts written to {out}" in res.output


# -- deadlines, process groups and output caps (issue 17) ------------------------------------
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from http.server import BaseHTTPRequestHandler, HTTPServer  # noqa: E402

from kb.collect import run_in_group  # noqa: E402

# a tool that starts a grandchild (which writes its pid, then sleeps) and then hangs itself
SLOW_TOOL = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "open(sys.argv[1], 'w').write(str(child.pid))\n"
    "print('partial', flush=True)\n"
    "time.sleep(600)\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of an already-killed process counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_group([sys.executable, "-c", SLOW_TOOL, str(pidfile)], timeout=2)
    assert time.monotonic() - start < 10
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the tool's child survived the timeout"


def test_output_is_capped_and_the_tool_stopped() -> None:
    start = time.monotonic()
    res = run_in_group([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                       timeout=30, max_output=1 << 20)
    assert time.monotonic() - start < 10
    assert res.truncated and len(res.stdout) == 1 << 20 and res.returncode == 0


def test_normal_exit_keeps_status_and_output() -> None:
    res = run_in_group([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"], timeout=10)
    assert (res.returncode, res.stdout.strip(), res.truncated) == (3, "hi", False)


def test_total_deadline_bounds_collect(tmp_path) -> None:
    """Every tool hangs; the whole collection still ends by the deadline, every tool timed out."""
    def hanging(argv, **kw):
        return run_in_group([sys.executable, "-c", "import time; time.sleep(600)"], timeout=kw["timeout"])

    start = time.monotonic()
    facts = collect([], None, None, 5, None, runner=hanging, deadline_s=3)
    took = time.monotonic() - start
    assert took < 10, took
    assert {v["status"] for v in facts["tools"].values()} == {"timeout"}
    assert any("total deadline" in v["detail"] for v in facts["tools"].values())


class _Drip(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for _ in range(600):  # one byte every 0.1 s: each read succeeds, the body never ends
                self.wfile.write(b"#")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    def log_message(self, *args) -> None:
        pass


def test_slow_drip_metrics_server_is_cut_by_the_deadline() -> None:
    server = HTTPServer(("127.0.0.1", 0), _Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    runner, _ = _fake({})
    try:
        start = time.monotonic()
        facts = collect([], None, f"http://127.0.0.1:{server.server_port}/metrics", 1, None,
                        runner=runner, deadline_s=3)
        assert time.monotonic() - start < 10
        assert facts["tools"]["metrics"]["status"] == "timeout"
    finally:
        server.shutdown()
