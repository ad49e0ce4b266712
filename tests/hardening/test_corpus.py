"""The bad-input corpus, driven through the CLI as a user runs it.

Every case must end with a documented exit code (0 report, 2 bad input, 3 inconclusive),
within a time bound (subprocess timeout), under an address-space limit (RLIMIT_AS), with a
measured peak RSS under :data:`MAX_RSS_MB`, and without a Python traceback.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 20
ADDRESS_SPACE = 2 * 1024**3
MAX_RSS_MB = 300
ALLOWED = {0, 2, 3}


# The child sets its own limit and reports its own peak: Linux carries the parent's peak RSS
# into a (v)forked child's ru_maxrss across exec, so wait4 would report the size of the pytest
# process that started it. VmHWM in /proc/self/status is the peak of the child's own memory.
LAUNCH = ("import atexit, os, resource, runpy, sys; "
          f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE})); "
          "atexit.register(lambda: open(os.environ['KB_TEST_HWM'], 'w').write(next(("
          "l for l in open('/proc/self/status') if l.startswith('VmHWM')), ''))); "
          "sys.argv = ['kb', *sys.argv[1:]]; runpy.run_module('kb', run_name='__main__')")


def _own_peak_mb(path: Path, fallback_kb: float) -> float:
    try:
        text = path.read_text()
        path.unlink()
    except OSError:
        return fallback_kb / 1024
    parts = text.split()
    return int(parts[1]) / 1024 if len(parts) >= 2 and parts[1].isdigit() else fallback_kb / 1024


def run_kb(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str, float]:
    """``kb`` in a subprocess: (exit code, stdout, stderr, peak RSS in MB)."""
    import tempfile

    hwm = Path(tempfile.mkstemp(prefix="kb-hwm-")[1])
    env = {**os.environ, "KB_NO_CACHE": "1", "PYTHONPATH": str(ROOT), "KB_TEST_HWM": str(hwm)}
    env.pop("KB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *args], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
    chunks: dict[str, bytes] = {}

    def pump(name: str, stream) -> None:  # noqa: ANN001
        chunks[name] = stream.read()

    def feed() -> None:
        try:
            proc.stdin.write(stdin)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            pass  # kb stopped reading at its cap: that is the point

    threads = [threading.Thread(target=pump, args=("out", proc.stdout)),
               threading.Thread(target=pump, args=("err", proc.stderr))]
    if stdin is not None:
        threads.append(threading.Thread(target=feed))
    for t in threads:
        t.start()
    killer = threading.Timer(TIMEOUT_S, proc.kill)
    killer.start()
    # wait4 reports the peak RSS of this child alone (RUSAGE_CHILDREN would mix in earlier ones)
    _, status, usage = os.wait4(proc.pid, 0)
    timed_out = not killer.is_alive()
    killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join()
    if timed_out:
        pytest.fail(f"kb {' '.join(args)[:200]} did not finish within {TIMEOUT_S} s")
    return (proc.returncode, chunks["out"].decode("utf-8", "replace"),
            chunks["err"].decode("utf-8", "replace"), _own_peak_mb(hwm, usage.ru_maxrss))


def w(tmp: Path, name: str, data: bytes | str) -> str:
    p = tmp / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(p)


LOG_LINE = "step 10 | loss: 2.31 | lr 1e-4\n"
VLLM_BENCH = ("============ Serving Benchmark Result ============\nSuccessful requests:  100\n"
              "Failed requests:  {x}\nBenchmark duration (s):  10.0\nMean TTFT (ms):  {x}\n"
              "==================================================\n")


def _dir_with_fifo(tmp: Path) -> str:
    d = tmp / "logs"
    d.mkdir()
    (d / "train.log").write_text(LOG_LINE * 3)
    os.mkfifo(d / "pipe.log")  # no writer: opening it the plain way blocks forever
    os.symlink("/dev/zero", d / "zero.log")
    return str(d)


def _unreadable(tmp: Path) -> str:
    p = Path(w(tmp, "secret.log", LOG_LINE))
    p.chmod(0)
    return str(p)


def _unreadable_dir(tmp: Path) -> str:
    d = tmp / "outer"
    (d / "locked").mkdir(parents=True)
    (d / "locked" / "a.log").write_text(LOG_LINE)
    (d / "ok.log").write_text(LOG_LINE)
    (d / "locked").chmod(0)
    return str(d)


# (case id, builder of the CLI arguments from a tmp dir, stdin bytes or None)
Case = tuple[str, Callable[[Path], list[str]], "bytes | None"]
CASES: list[Case] = [
    ("input empty file", lambda t: ["--input", w(t, "empty.log", b"")], None),
    ("facts empty file", lambda t: ["--facts", w(t, "empty.json", b"")], None),
    ("facts whitespace", lambda t: ["--facts", w(t, "ws.json", b" \n\t\r\n")], None),
    ("input binary garbage", lambda t: ["--input", w(t, "g.bin", os.urandom(200_000))], None),
    ("input high bytes, no NUL", lambda t: ["--input", w(t, "hi.log", bytes(range(128, 256)) * 500)], None),
    ("facts binary garbage", lambda t: ["--facts", w(t, "g.json", os.urandom(50_000))], None),
    ("input invalid UTF-8 log", lambda t: ["--input", w(t, "u.log", b"oom \xff\xfe\n" + LOG_LINE.encode() * 5)], None),
    ("facts invalid UTF-8", lambda t: ["--facts", w(t, "u.json", b'{"symptom_text": "\xff\xfe oom"}')], None),
    ("input CRLF log", lambda t: ["--input", w(t, "crlf.log", LOG_LINE.replace("\n", "\r\n") * 50)], None),
    ("facts CRLF", lambda t: ["--facts", w(t, "crlf.json", '{\r\n "symptom": "oom"\r\n}\r\n')], None),
    ("input NUL after the head", lambda t: ["--input", w(t, "nul.log", LOG_LINE.encode() * 3000 + b"\x00" * 100 + LOG_LINE.encode())], None),
    ("facts NUL bytes", lambda t: ["--facts", w(t, "nul.json", b'{"symptom"\x00: "oom"}')], None),
    ("input one huge line", lambda t: ["--input", w(t, "line.log", b"x" * (80 * 1024**2))], None),
    ("input huge line of loss hits", lambda t: ["--input", w(t, "loss.log", b"loss: 1.5 " * 2_000_000 + b"\n")], None),
    ("input ps with a 70 MB line", lambda t: ["--input-format", "ps", "--input",
                                             w(t, "ps.txt", b"  PID %CPU %MEM CMD\n 1 99.0 1.0 python " + b"a" * (70 * 1024**2) + b"\n")], None),
    ("facts deep JSON nesting 990", lambda t: ["--facts", w(t, "deep.json", '{"symptom_text":' + "[" * 990 + "]" * 990 + "}")], None),
    ("facts deep JSON nesting 100k", lambda t: ["--facts", w(t, "deeper.json", "[" * 100_000)], None),
    ("input deep facts JSON", lambda t: ["--input", w(t, "deep_in.json", '{"gpu": ' + '{"a":' * 5000 + "1" + "}" * 5001)], None),
    ("facts NaN sample", lambda t: ["--facts", w(t, "nan.json", '{"gpu": {"utilization_samples": [12, NaN, 15]}}')], None),
    ("facts Infinity", lambda t: ["--facts", w(t, "inf.json", '{"inference": {"ttft_ms_p50": Infinity}}')], None),
    ("facts 1e400", lambda t: ["--facts", w(t, "big.json", '{"inference": {"ttft_ms_p50": 1e400}}')], None),
    ("facts 5000-digit integer", lambda t: ["--facts", w(t, "digits.json", '{"oom": {"tried_to_allocate_mib": ' + "9" * 5000 + "}}")], None),
    ("facts duplicate keys", lambda t: ["--facts", w(t, "dup.json", '{"symptom": "oom", "symptom": "nccl"}')], None),
    ("facts NaN loss is data", lambda t: ["--facts", w(t, "nanloss.json", '{"symptom": "numerics", "numerics": {"loss": [2.1, NaN]}}')], None),
    ("facts is a directory", lambda t: ["--facts", str(t)], None),
    ("facts /dev/zero", lambda t: ["--facts", "/dev/zero"], None),
    ("input /dev/zero", lambda t: ["--input", "/dev/zero"], None),
    ("input /dev/urandom", lambda t: ["--input", "/dev/urandom"], None),
    ("input directory with FIFO and device link", lambda t: ["--input", _dir_with_fifo(t)], None),
    ("input unreadable file", lambda t: ["--input", _unreadable(t)], None),
    ("input directory with an unreadable folder", lambda t: ["--input", _unreadable_dir(t)], None),
    ("input missing file", lambda t: ["--input", str(t / "nope.log")], None),
    ("input newline in the name", lambda t: ["--input", str(t / "a\nkb: error: forged")], None),
    ("vllm bench inf", lambda t: ["--input", w(t, "bench.txt", VLLM_BENCH.format(x="inf"))], None),
    ("vllm bench nan", lambda t: ["--input", w(t, "bench2.txt", VLLM_BENCH.format(x="nan"))], None),
    ("vllm bench 1e400", lambda t: ["--input", w(t, "bench3.txt", VLLM_BENCH.format(x="1e400"))], None),
    ("vllm metrics +Inf", lambda t: ["--input", w(t, "metrics.txt",
                                                  "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total +Inf\n"
                                                  "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n")], None),
    ("memory stats 400 digits", lambda t: ["--input", w(t, "mem.txt", "|===========|\n| PyTorch CUDA memory summary, device ID 0 |\n"
                                                        "| CUDA OOMs: " + "9" * 400 + " | cudaMalloc retries: " + "9" * 400 + " |\n")], None),
    ("stdin facts 20 MB of {", lambda t: ["--facts", "-"], b"{" * (20 * 1024**2)),
    ("stdin input 20 MB of {", lambda t: ["--input", "-"], b"{" * (20 * 1024**2)),
    ("stdin escape sequences", lambda t: ["--input", "-"], b"\x1b]52;c;ZXZpbA==\x07oom\r\n" + LOG_LINE.encode()),
    ("symptom with escapes", lambda t: ["--symptom", "loss NaN \x1b]52;c;ZXZpbA==\x07 \x1b[2J"], None),
]


@pytest.mark.parametrize("name,build,stdin", CASES, ids=[c[0] for c in CASES])
def test_bad_input_ends_as_documented(tmp_path, name, build, stdin):
    args = ["diagnose", *build(tmp_path)]
    start = time.monotonic()
    code, out, err, rss_mb = run_kb(args, stdin)
    took = time.monotonic() - start
    assert code in ALLOWED, (name, code, err[-2000:])
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert took < TIMEOUT_S
    assert rss_mb < MAX_RSS_MB, f"{name}: peak RSS {rss_mb:.0f} MB"
    if code == 2:  # one line per problem, each saying where
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert lines and all(ln.startswith(("kb: error:", "kb: warning:")) for ln in lines), err
    assert "\x1b]52" not in out and "\x1b[2J" not in out  # no terminal control reaches stdout


def test_corpus_is_big_enough():
    assert len(CASES) >= 40


def test_dir_entries_that_would_block_are_skipped_with_a_note(tmp_path):
    d = _dir_with_fifo(tmp_path)
    code, out, err, _ = run_kb(["diagnose", "--input", d, "--format", "json"])
    assert code in ALLOWED, err
    warnings = json.loads(out)["warnings"]
    assert any("pipe.log" in x and "FIFO" in x for x in warnings), warnings
    assert any("zero.log" in x and "device" in x for x in warnings), warnings
    assert stat.S_ISFIFO(os.stat(Path(d) / "pipe.log").st_mode)
