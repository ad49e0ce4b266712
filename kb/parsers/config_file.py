"""Configuration files pasted whole: a DeepSpeed ``ds_config.json``, an Accelerate or
LLaMA-Factory YAML, a serving engine's YAML config.

    {                                            compute_environment: LOCAL_MACHINE
      "bf16": {"enabled": true},                 deepspeed_config:
      "zero_optimization": {                       offload_optimizer_device: cpu
        "stage": 2,                                zero_stage: 3
        "offload_optimizer": {"device": "cpu"}   mixed_precision: bf16
      },                                         num_machines: 2
      "gradient_clipping": 1.0
    }

Each setting becomes a ``(name, value)`` pair and goes through the same table as a launch
command's flags (:mod:`kb.readers.args`): ``bf16.enabled`` is ``--bf16``,
``zero_optimization.stage`` is ``zero_stage``. A config states the set-up, never the symptom:
its words ("bf16", "offload") are kept out of the text that may name a branch.

DeepSpeed's keys: https://www.deepspeed.ai/docs/config-json/ ; Accelerate's:
https://huggingface.co/docs/accelerate/package_reference/cli#accelerate-config ; LLaMA-Factory's
are HF TrainingArguments.

It is never detected by ``sniff``: the incident reader finds a config among other output
(:mod:`kb.readers.regions`, :func:`block_end`) and hands its lines here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from kb.parsers.base import ParseResult, strip_ansi

NAME = "config"

#: lines one config may span, and configs read in one input (a paste holds a few; the rest of
#: a text made of "name: value" lines is read as log)
MAX_LINES = 2000
MAX_CONFIGS = 16
#: keys visited in one config, and how deep its mappings are followed
MAX_SETTINGS = 2000
MAX_DEPTH = 8
#: a YAML mapping's key at the start of a line ("zero_stage: 3", "deepspeed_config:")
_YAML_KEY = re.compile(r"^([A-Za-z_][\w.-]{0,60}):(?:\s|$)")
#: a line inside a YAML block: an indented key, a list item, a comment
_YAML_LINE = re.compile(r"^(?:\s+[A-Za-z_\"'][\w.\"' -]{0,60}:(?:\s|$)|\s*-\s+\S|\s*#)")
#: a YAML key that is a log's level or an exception's name ("INFO:", "RuntimeError:"), not a
#: setting
_NOT_SETTING = re.compile(r"(?:Error|Exception|Warning|INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL)$")
#: keys that name a run's measured values: a JSON of them is a metrics log, read as a log
_METRIC_KEY = re.compile(r"(?:^|_)(?:loss|losses|log_history|grad_norm)$")
#: settings whose children mean something of their own (DeepSpeed's offload_optimizer.pin_memory
#: pins the offloaded state, not the DataLoader's batches): a child is named "parent.child"
_OWN_CHILDREN = frozenset({"offload_optimizer", "offload_param", "optimizer", "scheduler", "aio",
                           "params", "kv_cache_config", "scheduler_config"})
#: a nested setting read as one name: (parent key, child key) -> name
_NESTED = {
    ("zero_optimization", "stage"): "zero_stage",
    ("offload_optimizer", "device"): "offload_optimizer_device",
}


def sniff(head: str) -> bool:  # noqa: ARG001 - found inside a paste, never a whole input's format
    """Never: :mod:`kb.readers.regions` finds configs inside pasted text."""
    return False


def may_start(line: str) -> bool:
    """Whether a YAML config may start at ``line`` (a key at its start)."""
    return bool(_YAML_KEY.match(line))


def _load(text: str, json_like: bool) -> dict[str, Any] | None:
    """The mapping a config's text holds, or None when it is not one."""
    try:
        data = json.loads(text.rstrip().rstrip(","))
    except (ValueError, RecursionError):
        if json_like:
            return None
        import yaml

        try:
            # libyaml's loader where PyYAML was built with it (the pure-Python one is slow)
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
        except Exception:  # noqa: BLE001 - YAMLError, and ValueError from a date like 2023-13-45
            return None
    return data if isinstance(data, dict) else None


def pairs(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(name, value as written)`` for every scalar setting; a nested ``enabled`` takes its
    parent's name (DeepSpeed's ``"bf16": {"enabled": true}`` is ``bf16 = true``). At most
    :data:`MAX_SETTINGS` keys are visited, at most :data:`MAX_DEPTH` deep: YAML aliases may
    repeat one mapping many times."""
    out: list[tuple[str, str | None]] = []
    _walk(data, "", 0, out, [MAX_SETTINGS])
    return out


def _walk(data: dict[str, Any], parent: str, depth: int, out: list[tuple[str, str | None]],
          budget: list[int]) -> None:
    from kb.readers.args import norm

    for key, value in data.items():
        budget[0] -= 1
        if budget[0] < 0:
            return
        name = norm(str(key))
        if isinstance(value, dict):
            if depth < MAX_DEPTH:
                _walk(value, name, depth + 1, out, budget)
            continue
        if isinstance(value, (list, tuple)):
            continue
        text = "null" if value is None else ("true" if value is True else "false" if value is False
                                             else str(value))
        if name == "enabled" and parent:
            name = parent
        elif (parent, name) in _NESTED:
            name = _NESTED[parent, name]
        elif parent in _OWN_CHILDREN:
            name = f"{parent}.{name}"
        out.append((name, text))


def block_end(lines: list[str], i: int) -> tuple[int, bool]:
    """``(end, is a config)`` for the lines from ``i``: a JSON object over several lines, or a
    YAML mapping of three settings or more, one of which the facts read. ``end`` bounds the
    lines looked at even when they are no config (the caller starts no other config inside
    them: one pass). A one-line JSON object is a log record, and a JSON of losses a metrics
    log: neither is a config."""
    first = lines[i].strip()
    if first.startswith("{"):
        depth, end = 0, None
        for j in range(i, min(len(lines), i + MAX_LINES)):
            # braces inside quoted strings are rare in configs; a miscount only fails the parse
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                end = j + 1
                break
        if end is None:  # not closed within MAX_LINES: no config, and none starts inside
            return min(len(lines), i + MAX_LINES), False
        if end - i < 3:
            return end, False
        data = _load("\n".join(lines[i:end]), json_like=True)
        ok = data is not None and len(data) >= 2 and not any(
            _METRIC_KEY.search(k) for k in [*map(str, data), *(k for k, _ in pairs(data))])
        return end, ok
    m = _YAML_KEY.match(lines[i])
    if not m or _NOT_SETTING.search(m.group(1)):
        return i + 1, False
    end, keys, blanks = i + 1, 1, 0
    names = {m.group(1)}
    j = i + 1
    while j < len(lines) and j - i < MAX_LINES:
        s = lines[j]
        if not s.strip():
            blanks += 1
            if blanks > 1:
                break
        else:
            top = _YAML_KEY.match(s)
            if top and not _NOT_SETTING.search(top.group(1)):
                keys += 1
                names.add(top.group(1))
            elif _YAML_LINE.match(s):
                names.add(s.split(":", 1)[0].strip().strip("\"'"))
            else:
                break
            blanks, end = 0, j + 1
        j += 1
    # parsed only when a key the facts read is there (a log's "Name: value" lines are not)
    if keys < 3 or not _known([(n, None) for n in names]):
        return end, False
    data = _load("\n".join(lines[i:end]), json_like=False)
    return end, data is not None and _known(pairs(data))


def lead(lines: list[str], i: int, floor: int = 0) -> int:
    """The start of the config found at line ``i`` with the comment lines right above it
    (a template's "# We need to specify the number of machines"), not above ``floor``."""
    while i > floor and lines[i - 1].lstrip().startswith("#"):
        i -= 1
    return i


def find(lines: list[str], limit: int = MAX_CONFIGS) -> list[tuple[int, int]]:
    """The configs in ``lines`` as ``(start, end)`` line spans, at most ``limit`` (the
    incident reader finds them among other output with :mod:`kb.readers.regions`; a log
    reader's input is looked at here)."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(lines) and len(out) < limit:
        s = lines[i]
        if s.lstrip().startswith("{") or may_start(s):
            end, ok = block_end(lines, i)
            if ok:
                out.append((lead(lines, i, out[-1][1] if out else 0), end))
            i = max(end, i + 1)
        else:
            i += 1
    return out


def _known(found: list[tuple[str, str | None]]) -> bool:
    """Whether a setting of these is one the facts read (a YAML of other keys may be a log's
    ``Name: value`` lines)."""
    from kb.readers.args import ANY, SERVE, TRAIN, norm

    # (a model's name is no such setting: lscpu's and cpuinfo's "model: 63" is the CPU's)
    return any((n := norm(k)) in ANY or n in SERVE or n in TRAIN for k, _ in found)


def parse(lines: Iterable[str], source: str) -> ParseResult:
    """Facts from one config's settings (a training or a serving config, told by its keys)."""
    from kb.readers.args import read_pairs

    res = ParseResult(format=NAME, source=source)
    text = "\n".join(strip_ansi(x).rstrip("\r\n") for x in lines)
    data = _load(text, json_like=text.lstrip().startswith("{"))
    if data is None:
        res.notes.append(f"{source}: not a JSON or YAML mapping")
        return res
    read_pairs(res.facts, pairs(data))
    return res
