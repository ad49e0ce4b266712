"""Every flag the knowledge passes to vLLM, SGLang, torchrun / torchfrtrace, nsys, nccl-tests or
TensorRT-LLM exists in that tool's ``--help`` of a recent release (issue #14, point 4).

The help texts are fixtures under ``tests/knowledge/fixtures/help/``: ``<name>.txt`` is the text,
``<name>.yaml`` names the tool, the release and where the text came from (README.md there says how
to regenerate them). Each shell command of the knowledge (the same list ``test_commands.py``
checks) is split into simple commands at ``;``, ``&&``, ``||``, ``|`` and ``&``; in each, every
invocation of a known entry point is found (``NCCL_DEBUG=INFO timeout 600 torchrun ...``,
``python -m sglang.launch_server``, ``vllm serve <model>``, ``nsys profile ... python train.py``,
``mpirun ... ./build/all_reduce_perf``) and its options are read up to the end of the simple
command, a redirection, or (torchrun, nsys) the launched program. One test per (command, tool):
each option must be one of the fixture's, and a value given to an option whose help lists its
choices (``{a,b}`` or ``['a', 'b']``) must be one of them.

An entry point of these tools without a fixture (``vllm bench latency``, ``nsys stats``,
``trtllm-bench``, ...) fails too, so a new command cannot skip the check; so does
``benchmarks/benchmark_serving.py``, a stub in current vLLM, outside the commands ``LEGACY`` keeps
for older vLLM on purpose.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.knowledge.test_commands import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
HELP_DIR = Path(__file__).resolve().parent / "fixtures" / "help"
GRAPHS = ROOT / "graphs"

#: commands kept on purpose for a release older than the fixture's, and the fixture that checks them
LEGACY = {
    # title: "Load test with benchmarks/benchmark_serving.py (older vLLM)"; the script's parser moved
    # unchanged into `vllm bench serve`, whose help checks its flags
    "check benchmark_serving": "vllm_bench_serve",
}

_FLAG = re.compile(r"-{1,2}[A-Za-z0-9][\w.+-]*")
_NCCL_PERF = re.compile(
    r"(all_reduce|all_gather|broadcast|reduce_scatter|reduce|alltoall|alltoallv|scatter|gather"
    r"|sendrecv|hypercube)_perf(_mpi)?"
)
_PYTHON = re.compile(r"python(3(\.\d+)?)?")
_MODULES = {
    "torch.distributed.run": "torchrun",
    "sglang.launch_server": "sglang_launch_server",
    "sglang.bench_serving": "sglang_bench_serving",
}
#: modules of these projects that are entry points: without a fixture they fail
_MODULE_PREFIXES = ("vllm.", "sglang.", "torch.distributed.launch", "tensorrt_llm.")
_NSYS_SUBCOMMANDS = {"analyze", "cancel", "export", "launch", "nvprof", "recipe", "sessions", "shutdown",
                     "start", "stats", "status", "stop"}
#: entry points known by their name alone -> fixture
_PROGRAMS = {"torchrun": "torchrun", "torchfrtrace": "torchfrtrace", "trtllm-serve": "trtllm_serve",
             "trtllm-build": "trtllm_build"}
#: entry points with no fixture yet: they fail, naming themselves
_UNFIXTURED = ("trtllm-bench", "trtllm-eval", "trtllm-llmapi-launch")


# --------------------------------------------------------------------------- the fixtures


@dataclass
class Fixture:
    name: str
    meta: dict
    #: option name -> whether it takes a value
    takes: dict[str, bool] = field(default_factory=dict)
    #: option name -> the values its help lists
    choices: dict[str, set[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.meta['tool']} ({self.meta['version']})"

    def canonical(self, flag: str) -> str:
        """The option name as the tool's parser sees it."""
        if self.meta.get("dotted_keys") and flag.startswith("--") and "." in flag:
            flag = flag.split(".", 1)[0]  # --compilation-config.mode -> --compilation-config
        if self.meta.get("normalize_underscores") and flag.startswith("--"):
            flag = "--" + flag[2:].replace("_", "-")
        if self.meta.get("dotted_keys") and re.fullmatch(r"-O\d?", flag):
            flag = "--optimization-level"  # vLLM's -O3 / -O 3
        return flag


def parse_help(text: str) -> tuple[dict[str, bool], dict[str, set[str]]]:
    """Options (and their listed choices) of a ``--help`` text: every line that starts, after at
    most 8 columns and an optional ``[``, with ``-``; the names before two spaces or ``]``."""
    takes: dict[str, bool] = {}
    choices: dict[str, set[str]] = {}
    for raw in text.expandtabs(8).splitlines():
        indent = len(raw) - len(raw.lstrip(" "))
        s = raw.strip()
        bracketed = s.startswith("[")  # usage form: [-t,--nthreads <num threads>]
        if bracketed:
            s = s[1:]
        if indent > 8 or not s.startswith("-"):
            continue
        sig = re.split(r"\s{2,}|\]" if bracketed else r"\s{2,}", s, maxsplit=1)[0]
        names, metas = [], []
        for part in re.split(r",\s*(?=-)", sig):
            name, _, meta = part.strip().partition(" ")
            if _FLAG.fullmatch(name):
                names.append(name)
                metas.append(meta.strip())
        # the names of one line are one option: a metavar on any of them means all take a value
        listed = next((c for c in map(_choices, metas) if c), set())
        for name in names:
            takes[name] = any(metas)
            if listed:
                choices[name] = listed
    return takes, choices


def _choices(meta: str) -> set[str]:
    if re.fullmatch(r"\{[^{}\s]+\}", meta):
        return set(meta[1:-1].split(","))
    if meta.startswith("[") and meta.endswith("]"):
        try:
            val = ast.literal_eval(meta)
        except (ValueError, SyntaxError):
            return set()
        if isinstance(val, list) and all(isinstance(v, str) for v in val):
            return set(val)
    return set()


def _load_fixtures() -> dict[str, Fixture]:
    out = {}
    for meta_path in sorted(HELP_DIR.glob("*.yaml")):
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        takes, choices = parse_help(meta_path.with_suffix(".txt").read_text(encoding="utf-8"))
        out[meta_path.stem] = Fixture(meta_path.stem, meta, takes, choices)
    return out


FIXTURES = _load_fixtures()


# --------------------------------------------------------------------------- the commands


def _tokens(cmd: str) -> list[str] | None:
    """Shell words of a command line, operators and redirections as their own tokens; None when
    it is not shell (Python source the knowledge also prints)."""
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    try:
        return list(lex)
    except ValueError:
        return None


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in tokens:
        if t and set(t) <= set(";&|") and not set(t) & set("<>"):
            out.append([])
        else:
            out[-1].append(t)
    return [c for c in out if c]


def _is_redirect(tok: str) -> bool:
    return bool(tok) and set(tok) <= set("<>&") and bool(set(tok) & set("<>"))


@dataclass
class Invocation:
    tool: str  # a fixture name, or what was found when no fixture fits
    args: list[str]
    note: str = ""


def invocations(cmd: str, where: str = "") -> list[Invocation]:
    """Every invocation of a vLLM / SGLang / torch.distributed / nsys / nccl-tests entry point."""
    tokens = _tokens(cmd)
    if tokens is None:
        return []
    found: list[Invocation] = []
    for sc in _simple_commands(tokens):
        for i, tok in enumerate(sc):
            base = tok.rsplit("/", 1)[-1]
            nxt = sc[i + 1] if i + 1 < len(sc) else ""
            rest = sc[i + 1:]
            head = i == 0 or all(re.fullmatch(r"[A-Za-z_]\w*=.*", t) for t in sc[:i])
            if base == "trtllm-serve" and nxt == "serve":
                found.append(Invocation("trtllm_serve", sc[i + 2:]))
            elif base in _PROGRAMS:
                found.append(Invocation(_PROGRAMS[base], rest))
            elif _NCCL_PERF.fullmatch(base):
                found.append(Invocation("nccl_tests", rest))
            elif base in _UNFIXTURED:
                found.append(Invocation(base, rest))
            elif base == "vllm" and nxt == "serve":
                found.append(Invocation("vllm_serve", sc[i + 2:]))
            elif base == "vllm" and nxt == "bench":
                sub = sc[i + 2] if i + 2 < len(sc) else ""
                found.append(Invocation("vllm_bench_serve" if sub == "serve" else f"vllm bench {sub}",
                                        sc[i + 3:]))
            elif base == "vllm" and head:
                found.append(Invocation(f"vllm {nxt}", sc[i + 2:]))
            elif base == "sglang" and nxt == "serve":
                found.append(Invocation("sglang_launch_server", sc[i + 2:]))
            elif base == "sglang" and head:
                found.append(Invocation(f"sglang {nxt}", sc[i + 2:]))
            elif base == "nsys" and nxt == "profile":
                found.append(Invocation("nsys_profile", sc[i + 2:]))
            elif base == "nsys" and (head or nxt in _NSYS_SUBCOMMANDS):
                found.append(Invocation(f"nsys {nxt}", sc[i + 2:]))
            elif _PYTHON.fullmatch(base) and nxt == "-m" and i + 2 < len(sc):
                mod = sc[i + 2]
                if mod in _MODULES:
                    found.append(Invocation(_MODULES[mod], sc[i + 3:]))
                elif mod.startswith(_MODULE_PREFIXES):
                    found.append(Invocation(f"python -m {mod}", sc[i + 3:]))
            elif _PYTHON.fullmatch(base) and nxt.endswith("benchmark_serving.py"):
                legacy = LEGACY.get(where)
                found.append(Invocation(legacy or nxt, sc[i + 2:],
                                        "legacy script, checked against `vllm bench serve`" if legacy else
                                        "removed in current vLLM: benchmarks/benchmark_serving.py is a stub "
                                        "that exits 1; use `vllm bench serve` (same flags)"))
    return found


def flags(inv: Invocation, fx: Fixture) -> list[tuple[str, str | None]]:
    """``(option as written, value or None)`` of one invocation, in order."""
    out: list[tuple[str, str | None]] = []
    args, i = inv.args, 0
    while i < len(args):
        tok = args[i]
        if _is_redirect(tok) or tok == "--":
            break
        if tok.startswith("-") and len(tok) > 1 and not re.fullmatch(r"-[\d.]+", tok):
            name, eq, value = tok.partition("=")
            known = fx.takes.get(fx.canonical(name))
            nxt = args[i + 1] if i + 1 < len(args) else None
            if eq:
                out.append((name, value))
                i += 1
            elif (known or known is None) and nxt is not None and not nxt.startswith("-") \
                    and not _is_redirect(nxt):
                # a known option that takes a value, or an unknown one: the next word is its value
                out.append((name, nxt))
                i += 2
            else:
                out.append((name, None))
                i += 1
        elif fx.meta.get("stops_at_positional"):
            break  # the launched script / application and its own arguments
        else:
            i += 1
    return out


def _source(where: str) -> str:
    """The graphs file that holds a command, for the failure message."""
    kind, _, rest = where.partition(" ")
    if kind == "check":
        name = rest.split(" ", 1)[0]
        for p in sorted(GRAPHS.rglob("*.yaml")):
            if re.search(rf"^\s*- id: {re.escape(name)}\s*$", p.read_text(encoding="utf-8"), re.M):
                return str(p.relative_to(ROOT))
        return "graphs/?"
    path = GRAPHS / (kind.replace(".", "/") + ".yaml")
    return str(path.relative_to(ROOT)) if path.exists() else f"graphs/? ({kind})"


CASES = [(w, c, inv) for w, c in COMMANDS for inv in invocations(c, w)]


def problems(inv: Invocation) -> tuple[list[str], int]:
    """What is wrong with one invocation, and how many options were checked."""
    fx = FIXTURES.get(inv.tool)
    if fx is None:
        return [f"no --help fixture for `{inv.tool}`" + (f" ({inv.note})" if inv.note else "")], 0
    bad = []
    got = flags(inv, fx)
    for name, value in got:
        canon = fx.canonical(name)
        if canon not in fx.takes:
            bad.append(f"{name}: not an option of {fx.label}")
        elif value is not None and canon in fx.choices and "$" not in value \
                and value not in fx.choices[canon]:
            bad.append(f"{name} {value}: not one of its choices in {fx.label}")
    return bad, len(got)


@pytest.mark.parametrize(
    "where,cmd,inv", CASES, ids=[f"{w}:{inv.tool}" for w, _, inv in CASES])
def test_flags_exist_in_help(where: str, cmd: str, inv: Invocation) -> None:
    bad, _ = problems(inv)
    assert not bad, f"{_source(where)}: {where}: {cmd}\n  " + "\n  ".join(bad)


# --------------------------------------------------------------------------- the check checks


def test_fixtures_name_tool_version_source() -> None:
    assert set(FIXTURES) >= {"torchrun", "vllm_serve", "vllm_bench_serve", "sglang_launch_server",
                             "nsys_profile", "nccl_tests"}
    for name, fx in FIXTURES.items():
        for key in ("tool", "version", "source"):
            assert fx.meta.get(key), f"{name}.yaml: no {key}"
        assert len(fx.takes) >= 8, f"{name}.txt: only {len(fx.takes)} options read"


def test_fixtures_read_as_expected() -> None:
    tr, vs, sg, ns, nc = (FIXTURES[n] for n in
                          ("torchrun", "vllm_serve", "sglang_launch_server", "nsys_profile", "nccl_tests"))
    assert tr.takes["--nproc_per_node"] and tr.takes["--nproc-per-node"] and not tr.takes["--standalone"]
    assert vs.takes["--max-model-len"] and not vs.takes["--enforce-eager"] and "--no-enforce-eager" in vs.takes
    assert "fp8" in vs.choices["--kv-cache-dtype"]
    assert "fp8" in sg.choices["--quantization"] and sg.takes["--tp-size"]
    assert ns.takes["-o"] and ns.takes["--trace"] and ns.takes["-t"] and "--delay" in ns.takes
    assert {"-b", "-e", "-f", "-g", "--minbytes", "--stepfactor"} <= set(nc.takes)


def test_the_knowledge_is_checked() -> None:
    tools = {inv.tool for _, _, inv in CASES}
    assert {"torchrun", "vllm_serve", "vllm_bench_serve", "sglang_launch_server", "nsys_profile",
            "nccl_tests"} <= tools
    checked = sum(problems(inv)[1] for _, _, inv in CASES)
    assert len(CASES) >= 40 and checked >= 100, (len(CASES), checked)


def _bad(cmd: str, where: str = "") -> list[str]:
    invs = invocations(cmd, where)
    assert invs, f"no invocation found in {cmd}"
    return [p for inv in invs for p in problems(inv)[0]]


@pytest.mark.parametrize("cmd,flag", [
    ("vllm serve my-model --speculative-model small --num-speculative-tokens 5", "--speculative-model"),
    ("NCCL_DEBUG=INFO timeout 600 torchrun --nprocs 8 train.py 2>&1 | rg x", "--nprocs"),
    ("python -m torch.distributed.run --nproc-per-node 8 --master_address h train.py", "--master_address"),
    ("python -m sglang.launch_server --model-path m --max-num-seqs 64", "--max-num-seqs"),
    ("nsys profile --trace=cuda --delay-seconds 5 -o x python train.py", "--delay-seconds"),
    ("mpirun -np 8 -N 8 ./build/all_reduce_perf -b 8 -e 8G -q 1", "-q"),
    ("vllm bench serve --model m --num-requests 10", "--num-requests"),
])
def test_a_made_up_flag_fails(cmd: str, flag: str) -> None:
    bad = _bad(cmd)
    assert any(p.startswith(f"{flag}:") for p in bad), bad


def test_a_choice_outside_the_help_fails() -> None:
    assert _bad("python -m sglang.launch_server --model-path m --quantization fp7")
    assert not _bad("python -m sglang.launch_server --model-path m --quantization fp8")
    assert _bad("vllm serve m --kv-cache-dtype fp9")


def test_an_entry_point_without_fixture_or_a_removed_script_fails() -> None:
    assert _bad("vllm bench latency --model m")[0].startswith("no --help fixture")
    assert _bad("trtllm-bench --model m throughput")[0].startswith("no --help fixture")
    assert _bad("nsys stats --report cuda_gpu_kern_sum r.nsys-rep")[0].startswith("no --help fixture")
    assert _bad("python -m vllm.entrypoints.openai.api_server --model m")[0].startswith("no --help fixture")
    removed = _bad("python benchmarks/benchmark_serving.py --backend vllm --model m --profile")
    assert "stub" in removed[0]
    assert not _bad("python benchmarks/benchmark_serving.py --backend vllm --model m --profile",
                    "check benchmark_serving")


def test_only_the_tools_options_are_read() -> None:
    inv, = invocations("NCCL_DEBUG=INFO timeout 900 torchrun --nnodes=$NNODES --nproc_per_node 8 "
                       "train.py --max-steps 50 2>&1 | tee log; rg x log")
    assert [f for f, _ in flags(inv, FIXTURES["torchrun"])] == ["--nnodes", "--nproc_per_node"]
    nsys, tr = invocations("nsys profile -o r --trace=cuda,nvtx --delay 60 torchrun --standalone t.py -x")
    assert [f for f, _ in flags(nsys, FIXTURES["nsys_profile"])] == ["-o", "--trace", "--delay"]
    assert [f for f, _ in flags(tr, FIXTURES["torchrun"])] == ["--standalone"]
    srv, = invocations("vllm serve $MODEL --max_model_len 32768 -O3 --compilation-config.mode 3  # no --foo")
    assert not problems(srv)[0] and problems(srv)[1] == 3
    assert invocations("vllm bench serve --backend vllm --model m")[0].tool == "vllm_bench_serve"
    assert len(invocations("vllm bench serve --backend vllm --model m")) == 1  # `--backend vllm` is a value
    assert invocations('ps -eo args | rg "vllm serve|vllm.entrypoints"') == []
