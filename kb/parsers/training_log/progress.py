"""A progress bar on stderr for large inputs read on a terminal; silent otherwise.

Scanning a multi-GB log takes seconds; a bar says it is moving. Shown when ``progress`` is True,
or when it is None, the input is over :data:`THRESHOLD` bytes and stderr is a terminal (never in
pipes, CI logs or tests). ``rich`` (a dependency of typer) draws it, imported only when shown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

THRESHOLD = 50 * 1000 * 1000  # bytes


def wanted(total: int | None, progress: bool | None) -> bool:
    """Whether to show a bar for an input of ``total`` bytes."""
    if progress is not None:
        return progress
    return total is not None and total > THRESHOLD and sys.stderr.isatty()


@contextmanager
def progress_bar(label: str, total: int | None, progress: bool | None) -> Iterator[Callable[[int], None] | None]:
    """Yield an ``advance(nbytes)`` callable, or None when no bar is shown."""
    if not wanted(total, progress):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"scanning {label}", total=total)
        yield lambda n: bar.advance(task, n)
