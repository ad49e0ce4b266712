"""Training / serving logs: CUDA OOM messages (every PyTorch era), c10d/NCCL watchdog and gloo
timeouts, ``NCCL_DEBUG`` lines, loss / grad-norm / learning-rate values (HF Trainer, Lightning,
DeepSpeed, Megatron, plain prints), loss-scaler overflows (apex, DeepSpeed, fairseq, Megatron),
anomaly-mode messages, plus the torch.compile and vLLM stats lines that end up in the same logs.

Which lines are looked at is defined by :data:`TRIGGERS` (:mod:`.triggers`). Two readers give the
same facts (tests hold them equal on every fixture and on generated logs):

* :func:`parse`, the reference: line by line, every candidate line fed to ``LogScanner.feed``;
* :func:`parse_stream` / :func:`parse_path`, the block reader (:mod:`.blockscan`): candidate
  lines found with C-speed searches, metric lines of the common trainer formats taken a block at
  a time (:mod:`.formats`). ``.gz`` files are decompressed as a stream. Inputs over 8 MB are
  read, with no Python code per line (``pip install kb[fast]``), by the fixed-width engine
  (:mod:`.fixed`, pyarrow) when the input is a regular file: memory-mapped, runs of lines of one
  template checked and cut a region at a time; else (and for regions of lines of many shapes) by
  the columnar engine (:mod:`.columnar`, polars): whole regions as columns of lines.

Metric values are kept as bounded series (:mod:`.series`): the facts lists hold every value up to
``MAX_SAMPLES``, else a selection that keeps the start, the end, the extremes and the samples
around the first non-finite value; ``ParseResult.meta["series"]`` has the exact figures.

Not seen by design (no trigger): lines whose only signal is lower-case ``nccl``/``gloo``,
an all-caps ``LOSS``, a grad norm on a line without ``loss``, and Dynamo lines without
``Graph``/``Recompiling``/``Unsupported``/``Explanation:`` (the ``torch_compile`` parser reads
compile logs fully, but categorises graph breaks from the same lines, so both agree).
"""

from __future__ import annotations

import gzip
import io
import os
from collections import deque
from collections.abc import Iterable
from typing import Any, BinaryIO

from kb.parsers.base import ParseResult
from kb.parsers.training_log import columnar, fixed
from kb.parsers.training_log.blockscan import BLOCK_SIZE, LOOKBACK, BlockScan
from kb.parsers.training_log.progress import progress_bar
from kb.parsers.training_log.scanner import NAME, LogScanner
from kb.parsers.training_log.triggers import TRIGGERS, is_candidate

__all__ = [
    "BLOCK_SIZE", "NAME", "TRIGGERS", "LogScanner", "is_candidate", "parse", "parse_path", "parse_stream", "sniff",
]

_GZIP_MAGIC = b"\x1f\x8b"


def sniff(head: str) -> bool:
    """Any training-log signal this parser knows in the head of the text."""
    low = head.lower()
    return any(k in low for k in (
        "out of memory", "nccl", "watchdog", "'loss':", "grad_norm", "lm loss", "loss scale",
        "overflow", "error detected in", "processgroup", "iteration", "avg prompt throughput",
        "loss:", "loss=", "gloo", "traceback (most recent call last)", "oom when allocating",
    ))


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Scan a log given as lines: the reference definition (every candidate line is fed)."""
    scanner = LogScanner(source)
    it = iter(lines)
    prev: deque[str] = deque(maxlen=LOOKBACK)
    line = next(it, None)
    while line is not None:
        nxt = next(it, None)
        if is_candidate(line):
            scanner.before = lambda p=tuple(prev): list(p)
            scanner.after = lambda n=nxt: n or ""
            scanner.feed(line)
        prev.append(line)
        line = nxt
    return scanner.finish()


def parse_stream(
    stream: BinaryIO, source: str, block_size: int = BLOCK_SIZE, *, total: int | None = None,
    progress: bool | None = None, engine: str | None = None, observer: Any = None,
) -> ParseResult:
    """Scan a binary stream in blocks; same facts as :func:`parse` (see the module docstring).

    ``total`` (bytes, found from the stream's file when not given) sizes the progress bar on
    stderr; ``progress`` None shows it only for large inputs on a terminal (see :mod:`.progress`).
    ``engine``: None picks, for inputs over 8 MB, the fixed-width engine (pyarrow, a regular file)
    when pyarrow is installed, else the columnar engine (polars) when polars is; "python" never
    uses either, "arrow" and "polars" use that engine for the whole input (tests; "arrow" reads a
    stream that is not a file into memory first). ``meta["engine"]`` says which one read at least
    one region ("arrow", "polars" or "python").

    ``observer`` (``look(bytes)``, ``wrap(stream)``; :class:`kb.readers.incident.Tap`) sees every
    line but the metric runs the fixed-width engine takes in bulk, so the incident reader's
    signatures and stated facts cost nothing on metric lines; with the other engines it wraps
    the stream and sees every byte.
    """
    scanner = LogScanner(source)
    if total is None:
        total = _size_of(stream)
    large = total is not None and total > columnar.THRESHOLD
    start = fixed.mappable(stream) if engine == "arrow" or (engine is None and large and fixed.available()) else None
    if engine == "arrow" or start is not None:
        fscan = fixed.FixedScan(scanner, columnar_ok=columnar.available(), observer=observer)
        with progress_bar(source, total, progress) as advance:
            fscan.progress = advance
            if start is not None:
                fscan.run_stream(stream, start, block_size)
            else:
                data = fixed.read_all(observer.wrap(stream) if observer is not None else stream,
                                      block_size)
                fscan.observer = None  # it saw every byte as they were read
                fscan.run_data(data, 0, len(data))
        res = scanner.finish()
        res.meta["engine"] = fscan.engine
        return res
    if observer is not None:
        stream = observer.wrap(stream)
    if engine == "polars" or (engine is None and columnar.available() and (total is None or large)):
        forced = engine == "polars"
        known = total is not None  # a large file: the engine from the start; a pipe: once 8 MB went by
        scan: BlockScan = columnar.ColumnarScan(scanner, threshold=0 if forced or known else columnar.THRESHOLD,
                                                min_region=0 if forced else 64 * 1024)
        if not forced:
            block_size = max(block_size, columnar.BLOCK)
    else:
        scan = BlockScan(scanner)
    with progress_bar(source, total, progress) as advance:
        scan.progress = advance
        scan.run(stream, block_size)
    res = scanner.finish()
    res.meta["engine"] = "polars" if getattr(scan, "used", False) else "python"
    return res


def parse_path(path: str, source: str | None = None, *, progress: bool | None = None,
               engine: str | None = None) -> ParseResult:
    """Scan a log file with the block reader; a gzip file (by its magic bytes) is streamed."""
    with open(path, "rb") as fh:
        if fh.read(2) == _GZIP_MAGIC:
            with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                return parse_stream(gz, source or path, total=_gzip_size(fh), progress=progress,  # type: ignore[arg-type]
                                    engine=engine)
        fh.seek(0)
        return parse_stream(fh, source or path, progress=progress, engine=engine)


def _size_of(stream: BinaryIO) -> int | None:
    """The size of the regular file behind a stream (or its ``size_hint``), else None (pipes)."""
    hint = getattr(stream, "size_hint", None)
    if isinstance(hint, int):
        return hint
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return st.st_size if st.st_size > 0 else None


def _gzip_size(fh: BinaryIO) -> int | None:
    """The uncompressed size a gzip file records in its last 4 bytes (mod 4 GiB), for the bar."""
    try:
        fh.seek(-4, os.SEEK_END)
        size = int.from_bytes(fh.read(4), "little")
        fh.seek(0)
    except OSError:
        return None
    return size or None
