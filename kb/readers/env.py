"""Environment variables stated in pasted text, and the facts they imply.

Forms read: ``export NAME=value`` / ``NAME=value`` lines (shell, ``.env`` files, the env dump at
the end of vLLM's ``collect_env``), a systemd unit's ``Environment="NAME=value"``, the Go map
Ollama's server logs at start (``env="map[OLLAMA_NUM_PARALLEL:1 ...]"``),
``NAME=value cmd ...`` prefixes and ``-e NAME=value`` / ``--env NAME=value`` in commands, and
``os.environ["NAME"] = "value"`` in Python.
Only names with a known prefix are kept (never tokens or keys: ``HF_TOKEN`` and friends are not
read), values are cut to :data:`MAX_VALUE` characters.
"""

from __future__ import annotations

import re
from typing import Any

from kb.parsers.base import set_fact

MAX_VALUE = 200
#: variables kb may reason over (see graphs/facts.yaml ``env``); prefixes end with "_"
KEEP_PREFIXES = ("NCCL_", "TORCH_", "PYTORCH_", "CUDA_", "CUBLAS_", "CUDNN_", "VLLM_", "SGLANG_",
                 "NVIDIA_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "UCX_", "FI_", "GLOO_", "XLA_", "OLLAMA_")
KEEP_NAMES = frozenset({"OMP_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
                        "LOCAL_WORLD_SIZE", "NNODES", "NPROC_PER_NODE", "TF_FORCE_GPU_ALLOW_GROWTH"})
#: never kept even under a kept prefix (credentials)
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|CREDENTIAL", re.I)

_NAME = r"[A-Z][A-Z0-9_]{2,80}"
_VALUE = r"(?:\"[^\"\n]{0,400}\"|'[^'\n]{0,400}'|[^\s;&|]{0,400})"
#: a line that is an assignment (optionally exported / a Dockerfile ENV / Windows set)
_LINE = re.compile(rf"^\s*(?:export\s+|set\s+|ENV\s+|declare\s+-x\s+)?({_NAME})=({_VALUE})\s*(?:#.*)?$")
#: a systemd unit's ``Environment="NAME=value"`` line (how the Ollama FAQ sets its server's
#: variables under ``systemctl edit ollama.service``)
_SYSTEMD = re.compile(rf"^\s*Environment\s*=\s*\"?({_NAME})=([^\"\s]{{0,400}})\"?\s*$")
#: the environment Ollama logs when its server starts (server/routes.go: msg="server config"
#: env="map[OLLAMA_NUM_PARALLEL:1 OLLAMA_ORIGINS:[...] ...]"), a Go map's NAME:value pairs
_GO_MAP = re.compile(r'\benv="map\[(.*)\]"')
#: (an empty value, "CUDA_VISIBLE_DEVICES:" or "[]", is a variable left unset: not read)
_GO_PAIR = re.compile(rf"({_NAME}):(\[[^\]]+\]|[^\s\[]\S*)")
#: assignments in a command line: a leading run of them (``A=1 B=2 torchrun ...``) and docker's
#: ``-e A=1`` / ``--env A=1``; an assignment inside prose ("use TORCH_LOGS=x.") is advice, not state
_LEAD = re.compile(rf"^\s*(?:export\s+|env\s+)?((?:{_NAME}={_VALUE}\s+)+)")
_ONE = re.compile(rf"({_NAME})=({_VALUE})")
_DOCKER = re.compile(rf"(?:\s-e\s+|\s--env[= ])({_NAME})=({_VALUE})(?=\s|$)")
#: os.environ["NAME"] = "value" and os.environ.setdefault("NAME", "value")
_PY = re.compile(rf"os\.environ(?:\[\s*['\"]({_NAME})['\"]\s*\]\s*=\s*|\.setdefault\(\s*['\"]({_NAME})['\"]\s*,\s*)"
                 r"(['\"])([^'\"\n]{0,400})\3")


def kept(name: str) -> bool:
    """Whether ``name`` is an environment variable kb records."""
    if _SECRET.search(name):
        return False
    return name in KEEP_NAMES or name.startswith(KEEP_PREFIXES)


def _clean(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    return v[:MAX_VALUE]


def assignments(line: str) -> list[tuple[str, str]]:
    """The kept ``(name, value)`` pairs a line states."""
    out: list[tuple[str, str]] = []
    if "=" not in line:
        return out
    m = _LINE.match(line) or _SYSTEMD.match(line)
    gm = _GO_MAP.search(line) if "map[" in line else None
    if m:
        pairs = [(m.group(1), m.group(2))]
    elif gm:
        pairs = [(mm.group(1), mm.group(2)) for mm in _GO_PAIR.finditer(gm.group(1))]
    else:
        lead = _LEAD.match(line)
        pairs = [(mm.group(1), mm.group(2)) for mm in _ONE.finditer(lead.group(1))] if lead else []
        pairs += [(mm.group(1), mm.group(2)) for mm in _DOCKER.finditer(line)]
        pairs += [(mm.group(1) or mm.group(2), mm.group(4)) for mm in _PY.finditer(line)]
    for name, value in pairs:
        if kept(name):
            out.append((name, _clean(value)))
    return out


def _truthy(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    return None


def apply_env(facts: dict[str, Any], name: str, value: str) -> None:
    """Record ``env.<name>`` (first value wins) and the facts the variable implies."""
    env = facts.setdefault("env", {})
    if name in env:
        return
    env[name] = value
    if name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        # the allocator config: expandable segments are off unless it says True
        # https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf
        low = value.replace(" ", "").lower()
        set_fact(facts, "oom.expandable_segments", "expandable_segments:true" in low)
    elif name == "NCCL_P2P_DISABLE":
        flag = _truthy(value)
        if flag is not None:
            set_fact(facts, "distributed.p2p_disabled", flag)
    elif name == "OMP_NUM_THREADS" and value.strip().isdigit() and int(value) > 0:
        # each process's intra-op (OpenMP) pool; torchrun sets 1 when it is unset
        set_fact(facts, "cpu.omp_threads", int(value))
    elif name == "OLLAMA_NUM_PARALLEL" and value.strip().isdigit() and int(value) > 0:
        # the requests each loaded model serves at once (Ollama FAQ, "How does Ollama handle
        # concurrent requests?"): the server's cap on concurrent sequences
        set_fact(facts, "inference.max_num_seqs", int(value))
        set_fact(facts, "inference.engine", "ollama")
    elif name == "NCCL_ALGO" and value:
        set_fact(facts, "distributed.nccl_algo", value)
    elif name in _POOL_VARS:
        _pool(facts, env)
    elif name == "NCCL_SOCKET_IFNAME" and re.fullmatch(r"[A-Za-z][\w.-]{0,30}", value):
        # one plain interface name (not a prefix list or an ^exclusion)
        set_fact(facts, "distributed.socket_ifname", value)


#: the variables that say whether JAX/XLA or TensorFlow reserves its memory pool up front
#: (https://docs.jax.dev/en/latest/gpu_memory_allocation.html; TensorFlow's
#: TF_FORCE_GPU_ALLOW_GROWTH is memory growth, tf.config.experimental.set_memory_growth)
_POOL_VARS = frozenset({"XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
                        "XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
                        "TF_FORCE_GPU_ALLOW_GROWTH"})


def _pool(facts: dict[str, Any], env: dict[str, str]) -> None:
    """``oom.framework_preallocates`` / ``oom.pool_fraction`` from the pool variables stated so
    far (re-derived on each: one line may turn preallocation off after another set a fraction)."""
    off = (_truthy(env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true")) is False
           or env.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").lower() == "platform"
           or _truthy(env.get("TF_FORCE_GPU_ALLOW_GROWTH", "false")) is True)
    frac = env.get("XLA_CLIENT_MEM_FRACTION") or env.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
    value: float | None = None
    if frac is not None:
        try:
            value = float(frac)
        except ValueError:
            value = None
    if off:
        set_fact(facts, "oom.framework_preallocates", False, overwrite=True)
        facts["oom"].pop("pool_fraction", None)
    elif value is not None and 0 < value <= 1:
        # a fraction above 1 is unified memory spilling to the host, not a pool on the card
        set_fact(facts, "oom.framework_preallocates", True, overwrite=True)
        set_fact(facts, "oom.pool_fraction", value, overwrite=True)
    elif _truthy(env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "")) is True:
        set_fact(facts, "oom.framework_preallocates", True, overwrite=True)


def read_line(facts: dict[str, Any], line: str) -> bool:
    """Apply every assignment of ``line``; True when there was one."""
    pairs = assignments(line)
    for name, value in pairs:
        apply_env(facts, name, value)
    return bool(pairs)
