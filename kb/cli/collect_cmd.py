"""``kb collect``: sample this machine's health checks into a facts JSON file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kb.engine.errors import InputError, KbError


def collect(
    output: Annotated[Path, typer.Option("--output", "-o", help="write the facts JSON here")],
    log: Annotated[
        Optional[list[Path]],
        typer.Option("--log", help="training/serving log to scan (repeatable)", exists=True, dir_okay=False),
    ] = None,
    pid: Annotated[Optional[int], typer.Option("--pid", help="training process to dump with py-spy")] = None,
    metrics_url: Annotated[
        Optional[str], typer.Option("--metrics-url", help="vLLM/SGLang /metrics URL, e.g. http://localhost:8000/metrics")
    ] = None,
    seconds: Annotated[
        int, typer.Option("--seconds", min=1, max=600, help="how long to sample GPU and disk (1-600)")
    ] = 5,
    force: Annotated[bool, typer.Option("--force", help="overwrite --output if it exists")] = False,
) -> None:
    """Run nvidia-smi, nvidia-smi dmon, iostat, ps (and py-spy, /metrics, log scans) and write facts.

    Missing tools are recorded under "tools" in the output, never fatal. Exit codes: 0 written,
    2 bad input (e.g. the output file exists without --force).
    """
    from kb.collect import collect as run_collect
    from kb.collect import commands

    try:
        if output.exists() and not force:
            raise InputError(str(output), "file exists, not overwritten", "Pass --force to replace it")
        logs = [str(p) for p in (log or [])]
        steps = len(commands(pid, seconds)) + (1 if metrics_url else 0) + len(logs)
        with typer.progressbar(length=steps, label="collecting", file=sys.stderr) as bar:

            def progress(message: str) -> None:
                bar.label = f"collecting: {message}"
                bar.update(1)

            facts = run_collect(logs, pid, metrics_url, seconds, progress)
        from kb.cli.common import dumps_json
        from kb.safe_write import atomic_write_text

        # no bare NaN in the JSON; written atomically, never over a file unless --force
        atomic_write_text(output, dumps_json(facts) + "\n", force=force)
    except KbError as err:
        typer.echo(f"kb: error: {err.line()}", err=True)
        raise typer.Exit(err.exit_code) from None
    missing = sorted(k for k, v in facts.get("tools", {}).items() if v.get("status") != "ok")
    if missing:
        typer.echo(f"kb: not collected: {', '.join(missing)} (see \"tools\" in the output)", err=True)
    typer.echo(f"kb: facts written to {output}", err=True)
