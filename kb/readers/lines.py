"""Facts that single lines (or short runs of lines) state, whatever surrounds them: launch commands
with ``\\`` continuations, lines of bare flags, argument dumps (one line, or HF
``TrainingArguments(`` one field per line), environment assignments and environment reports.
Fed line by line, bounded state.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from kb.parsers.base import set_fact, strip_ansi
from kb.readers import args, env
from kb.readers.collect_env import EnvReport

#: a command continued over more lines is joined up to this many characters / lines
MAX_COMMAND_CHARS = 16 * 1024
MAX_COMMAND_LINES = 200
#: a multi-line arguments dump is read up to this many lines
MAX_DUMP_LINES = 400
#: ``TrainingArguments(`` (HF, one ``name=value,`` per line until ``)``)
_DUMP_START = re.compile(r"\b\w*Arguments\(\s*$")
#: an offline engine built in Python: vLLM's and TensorRT-LLM's ``LLM(model=..., tensor_parallel_size=2)``
#: and vLLM's ``EngineArgs(...)``, one line or one keyword per line; its keywords are the
#: serving engine's options
_ENGINE_CALL = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?:LLM|AsyncEngineArgs|EngineArgs)\((.*)$")
_DUMP_FIELD = re.compile(r"^\s*([A-Za-z_]\w{0,60})=(.*?),?\s*$")
#: an RDMA port's link layer: ``ibv_devinfo`` ("link_layer: Ethernet", rdma-core
#: libibverbs/examples/devinfo.c) and ``ibstat`` ("Link layer: InfiniBand", infiniband-diags)
_LINK_LAYER = re.compile(r"^\s*(?:link_layer|Link layer):\s*(Ethernet|InfiniBand)\s*$")
#: whether generation keeps its KV cache: a model config's field (config.json ``"use_cache":
#: false``, YAML ``use_cache: false``) or a call's keyword (``generate(..., use_cache=False)``);
#: transformers' PretrainedConfig / GenerationConfig ``use_cache``
#: the request slots llama-server serves at once: its GET /props answers "total_slots" (its
#: --parallel); Ollama's are its OLLAMA_NUM_PARALLEL (kb.readers.env)
_TOTAL_SLOTS = re.compile(r'"total_slots"\s*:\s*(\d+)\b')
#: llama-server's /completion response: of the prompt's "tokens_evaluated", "tokens_cached"
#: came from the KV cache of an earlier request (tools/server/README.md); a response, or the
#: two fields grepped out of it, gives the prefix cache's share of the latest prompt
_TOKENS_CACHED = re.compile(r'"tokens_cached"\s*:\s*(\d+)\b')
_TOKENS_EVALUATED = re.compile(r'"tokens_evaluated"\s*:\s*(\d+)\b')
#: its "timings": the decode's milliseconds per generated token
_PER_TOKEN_MS = re.compile(r'"predicted_per_token_ms"\s*:\s*(\d+(?:\.\d+)?)')
_USE_CACHE = re.compile(r"""(?:^\s*["']?use_cache["']?\s*:\s*|\buse_cache\s*=\s*)(true|false)\b""", re.I)
#: a DataLoader's worker count as code, a config or a log states it ("num_workers=8",
#: "num_workers: 4", "datamodule.num_workers=0", "dataloader_num_workers = 12"); not another
#: pool's ("preprocessing_num_workers", datasets' map processes)
_NUM_WORKERS = re.compile(r"(?<![\w-])(?:dataloader_)?num_workers\s*(?:=|:)\s*(\d{1,4})(?![\d.])")
#: a DataLoader built in one line of pasted code; without a num_workers keyword (nor **kwargs)
#: it loads in the training process: torch.utils.data.DataLoader's num_workers defaults to 0
_DATA_LOADER_CALL = re.compile(r"(?<![A-Za-z0-9_])DataLoader\((.*)\)")
#: torch.nn.DataParallel wrapping a model in pasted code (not DistributedDataParallel)
_DATA_PARALLEL = re.compile(r"(?<![A-Za-z0-9_])DataParallel\(")
#: XLA's GPU client naming the pool it takes (xla/pjrt/gpu/gpu_helpers.cc; before the openxla
#: split tensorflow/compiler/xla/pjrt/gpu_device.cc): "allocating" when it preallocates,
#: "will use up to" when it grows on demand ("for CollectiveBFCAllocator" is another pool)
_XLA_POOL = re.compile(r"XLA backend (allocating|will use up to) \d+ bytes on device \d+ for BFCAllocator\.")
#: a Windows path in a traceback frame or a prompt ("File \"C:\\Users\\me\\...\\site-packages\\...\"",
#: "D:\\ComfyUI\\python_embeded\\python.exe"): the job runs on Windows
_WINDOWS_PATH = re.compile(r"(?<![\w/])[A-Za-z]:\\(?:Users|Program Files|ProgramData|Windows|[^\\\n\"']{1,80}\\"
                           r"(?:[^\\\n\"']{1,80}\\){0,8}(?:site-packages|python\.exe|python_embeded|Scripts)\b)")
#: the host's load average: procps-ng's uptime and top's first line ("load average: 95.12,
#: 90.33, 85.01", library/uptime.c sprint_uptime; some locales write "0,52, 0,58, 0,59") and
#: BSD/macOS uptime ("load averages: 2.15 2.01 1.96"); the first number is the last minute's
_LOAD_AVERAGE = re.compile(r"\bload averages?:\s*(\d+(?:[.,]\d+)?),?\s+\d+(?:[.,]\d+)?,?\s+\d+(?:[.,]\d+)?")
#: lscpu's count of logical CPUs (util-linux sys-utils/lscpu.c, "CPU(s):"; also inside
#: python -m torch.utils.collect_env's "CPU:" section), not "On-line CPU(s) list:" or "NUMA
#: node0 CPU(s):"
_LSCPU_CPUS = re.compile(r"^\s*CPU\(s\):\s+(\d{1,5})\s*$")
#: a shell prompt or a list marker before a pasted command
_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:[\w.@-]+:[~\w/.-]*[$#]\s+|[$>]\s+|\+\s+|-\s+)?")


def _one_call(args_text: str) -> bool:
    """The arguments of a call closed on its line, passing every argument itself: no
    num_workers, no ``**kwargs`` that could carry one."""
    depth = 0
    for ch in args_text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False  # the call closed before the line's last ")": something follows it
    return depth == 0 and "**" not in args_text


class LineFacts:
    """Accumulates the facts of the lines fed to it into ``facts``."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {}
        self.report = EnvReport(self.facts)
        self.kinds: dict[str, int] = {}
        self._command: list[str] | None = None
        self._dump: list[tuple[str, str | None]] | None = None
        self._dump_lines = 0
        self._dump_serve = False
        #: facts two commands or dumps stated differently
        self._conflicts: set[str] = set()
        self._flags: list[str] = []
        self._link_layers: set[str] = set()
        #: the latest llama-server response's prompt tokens: [cached, evaluated]
        self._prompt_tokens: list[int | None] = [None, None]

    def _count(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def feed(self, raw: str) -> bool:
        """Read one line; True when it is configuration (a launch command, an arguments dump,
        an environment report or assignment): its words set things up, they do not say what
        went wrong."""
        line = strip_ansi(raw).rstrip("\r\n")
        if args.FLAG_LINE.match(line) and self._command is None and self._dump is None:
            if len(self._flags) < MAX_COMMAND_LINES:
                self._flags.append(line)
            return True
        if self._flags:
            self._flags_done()
        if self._command is not None:
            self._continue_command(line)
            return True
        if self._dump is not None:
            self._continue_dump(line)
            return True
        if self.report.feed(line):
            self._count("environment report")
            return True
        ll = _LINK_LAYER.match(line)
        if ll:
            self._link_layers.add(ll.group(1).lower())
            return True
        la = _LOAD_AVERAGE.search(line) if "load average" in line else None
        if la:
            load = float(la.group(1).replace(",", "."))
            have = self.facts.get("cpu", {}).get("load_average")
            if have is None or load > have:  # the busiest snapshot
                set_fact(self.facts, "cpu.load_average", load, overwrite=True)
            self._count("load average")
            return True
        lc = _LSCPU_CPUS.match(line) if "CPU(s):" in line else None
        if lc and int(lc.group(1)) > 0:
            set_fact(self.facts, "cpu.cores", int(lc.group(1)))
            self._count("environment report")
            return True
        body = _PROMPT.sub("", line, count=1)
        if args.LAUNCH.search(body) and not body.lstrip().startswith(("File ", "at ")):
            if body.rstrip().endswith("\\"):
                self._command = [body.rstrip()[:-1]]
                return True
            return self._command_done(body)
        taken = False
        call = _ENGINE_CALL.search(line) if "LLM(" in line or "EngineArgs(" in line else None
        if call:
            rest = call.group(1)
            if rest.strip():
                # keywords on the same line (and more lines up to ")" are not followed)
                if self._merged(lambda f: args.read_engine_call(f, rest)):
                    self._count("engine arguments")
                    return True
            else:
                self._dump, self._dump_lines, self._dump_serve = [], 0, True
                return True
        if args.DUMP.search(line) and self._merged(lambda f: args.read_dump(f, line)):
            self._count("arguments dump")
            taken = True
        elif _DUMP_START.search(line):
            self._dump, self._dump_lines, self._dump_serve = [], 0, False
            taken = True
        if "=" in line and env.read_line(self.facts, line):
            self._count("environment variables")
            taken = True
        if "num_workers" in line:
            nw = _NUM_WORKERS.search(line)
            if nw:
                set_fact(self.facts, "dataloader.num_workers", int(nw.group(1)))
                self._count("data loader")
                taken = True
        elif "DataLoader(" in line and (dl := _DATA_LOADER_CALL.search(line)) and _one_call(dl.group(1)):
            set_fact(self.facts, "dataloader.num_workers", 0)
            self._count("data loader")
            taken = True
        if "DataParallel(" in line and _DATA_PARALLEL.search(line):
            set_fact(self.facts, "distributed.single_process_multi_gpu", True)
            self._count("model setup")
            taken = True
        if ":\\" in line and "windows" not in self.facts.get("software", {}) and _WINDOWS_PATH.search(line):
            set_fact(self.facts, "software.windows", True)
        xp = _XLA_POOL.search(line) if "for BFCAllocator" in line else None
        if xp:
            set_fact(self.facts, "oom.framework_preallocates", xp.group(1) == "allocating")
            self._count("XLA allocator")
            taken = True
        slots = _TOTAL_SLOTS.search(line) if "total_slots" in line else None
        if slots and int(slots.group(1)) > 0:
            set_fact(self.facts, "inference.max_num_seqs", int(slots.group(1)))
            set_fact(self.facts, "inference.engine", "llama.cpp")
            self._count("server properties")
            taken = True
        if "tokens_" in line:
            for k, rx in enumerate((_TOKENS_CACHED, _TOKENS_EVALUATED)):
                m = rx.search(line)
                if m:
                    self._prompt_tokens[k] = int(m.group(1))
                    taken = True
        per_token = _PER_TOKEN_MS.search(line) if "predicted_per_token_ms" in line else None
        if per_token and float(per_token.group(1)) > 0:
            # one answer's decode: its time per output token (the latest answer's)
            set_fact(self.facts, "inference.tpot_ms_p50", round(float(per_token.group(1)), 3), overwrite=True)
            set_fact(self.facts, "inference.engine", "llama.cpp")
            self._count("server responses")
            taken = True
        uc = _USE_CACHE.search(line) if "use_cache" in line else None
        if uc:
            set_fact(self.facts, "inference.use_cache", uc.group(1).lower() == "true")
            self._count("model config")
            taken = True
        return taken

    def _merged(self, read: Callable[[dict[str, Any]], Any]) -> bool:
        """Run one reader of a command, flags or arguments into a fresh dict and merge what it
        states; a fact two of them state differently (a paste comparing ``tensor_parallel_size=1``
        with ``=2``) is dropped at the end: which one ran is not known."""
        got: dict[str, Any] = {}
        ok = bool(read(got))
        for group, values in got.items():
            for key, value in values.items():
                have = self.facts.get(group, {}).get(key)
                if have is None:
                    set_fact(self.facts, f"{group}.{key}", value)
                elif have != value:
                    self._conflicts.add(f"{group}.{key}")
        return ok

    def _continue_command(self, line: str) -> None:
        assert self._command is not None
        s = line.strip()
        more = s.endswith("\\")
        self._command.append(s[:-1] if more else s)
        size = sum(len(p) for p in self._command)
        if more and size < MAX_COMMAND_CHARS and len(self._command) < MAX_COMMAND_LINES:
            return
        self._command_done(" ".join(self._command))

    def _command_done(self, command: str) -> bool:
        self._command = None
        read = self._merged(lambda f: args.read_command(f, command))
        if read:
            self._count("launch command")
        # NCCL_DEBUG=INFO torchrun ...: the environment prefix and docker -e flags
        return env.read_line(self.facts, command) or bool(read)

    def _flags_done(self) -> None:
        lines, self._flags = self._flags, []
        if self._merged(lambda f: args.read_flags(f, lines)):
            self._count("launch flags")

    def _continue_dump(self, line: str) -> None:
        assert self._dump is not None
        self._dump_lines += 1
        m = _DUMP_FIELD.match(line)
        if m:
            self._dump.append((args.norm(m.group(1)), m.group(2)))
        if line.strip().startswith(")") or self._dump_lines >= MAX_DUMP_LINES or (not m and line.strip()):
            self._dump_done()

    def _dump_done(self) -> None:
        pairs, self._dump = self._dump or [], None
        serve = self._dump_serve
        if self._merged(lambda f: args.apply_pairs(f, pairs, serve=serve) + (
                args.engine_of_keys(f, pairs) if serve else 0)):
            self._count("arguments dump")

    def finish(self) -> dict[str, Any]:
        """Close open state and return the facts."""
        if self._command is not None:
            self._command_done(" ".join(self._command))
        if self._dump is not None:
            self._dump_done()
        if self._flags:
            self._flags_done()
        self.report.finish()
        cached, evaluated = self._prompt_tokens
        if cached is not None and evaluated:
            # the latest response: a prompt sent twice is judged by its second answer
            set_fact(self.facts, "inference.prefix_cache_hit_rate", round(min(cached / evaluated, 1.0), 4))
            set_fact(self.facts, "inference.engine", "llama.cpp")
            self._count("server responses")
        if len(self._link_layers) == 1:
            # every RDMA port listed runs one link layer (Ethernet: RoCE); a host with both
            # (IB for the job, Ethernet for storage) says nothing about which one NCCL uses
            set_fact(self.facts, "distributed.ib_link_layer", next(iter(self._link_layers)))
            self._count("RDMA ports")
        for path in self._conflicts:
            group, key = path.split(".", 1)
            self.facts.get(group, {}).pop(key, None)
            if group in self.facts and not self.facts[group]:
                del self.facts[group]
        return self.facts
