"""Facts from launch commands and argument dumps.

Read: command lines of the programs in :data:`LAUNCHERS` and :data:`MODULES` (one row per
program: ``torchrun``, ``python -m torch.distributed.launch/run``, ``deepspeed``, ``accelerate
launch``, ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``, ``python -m
sglang.launch_server``, ``trtllm-serve``, TGI's launcher or its image in ``docker run``, LMDeploy,
llama.cpp, Ollama, FastChat's workers, ``python x.py --args``) with ``\\`` continuations;
and dumps of parsed arguments: argparse ``Namespace(a=1, ...)``, SGLang's ``ServerArgs(...)``,
vLLM's ``Initializing ... engine (vX) with config: a=1, ...`` and ``non-default args: {'a': 1}``,
HF ``TrainingArguments(`` one ``name=value,`` per line.
Flag names are normalised (``--gpu-memory-utilization`` = ``gpu_memory_utilization``) and mapped
to facts by one table; a flag whose meaning depends on the tool (``max_seq_len``) is read by the
context: a serving engine or a training job.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from kb.parsers.base import set_fact, to_float, to_int

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_NUMERIC = re.compile(r"^-\d")


def _bool(v: str | None) -> bool | None:
    if v is None:
        return True  # a bare flag
    low = v.strip().strip("'\"").lower()
    return True if low in _TRUE else False if low in _FALSE else None


def _count(v: str | None) -> int | None:
    n = to_int(v.strip("'\"")) if v else None
    return n if n is not None and n >= 0 else None


def _fraction(v: str | None) -> float | None:
    x = to_float(v.strip("'\"")) if v else None
    return x if x is not None and 0.0 < x <= 1.0 else None


def _str(v: str | None) -> str | None:
    s = v.strip().strip("'\"") if v else None
    return s[:100] if s and s not in ("None", "null", "auto") else None


def _not(v: str | None) -> bool | None:
    b = _bool(v)
    return None if b is None else not b


def _present(v: str | None) -> bool | None:
    """A speculative-decoding option: configured unless None / empty."""
    s = (v or "").strip().strip("'\"")
    return None if v is None else (s not in ("", "None", "null", "{}", "0"))


def _chunk(v: str | None) -> bool | None:
    """SGLang ``--chunked-prefill-size``: -1 turns chunked prefill off."""
    n = to_int(v.strip("'\"")) if v else None
    return None if n is None else n > 0


def _graphs_off(v: str | None) -> bool | None:
    """TGI ``--cuda-graphs``: the batch sizes to capture; ``0`` captures none (eager)."""
    return True if (v or "").strip().strip("'\"") == "0" else None


def _size_gb(v: str | None) -> float | None:
    """A size in GiB, 0 or more (vLLM ``--cpu-offload-gb``)."""
    x = to_float(v.strip("'\"")) if v else None
    return x if x is not None and x >= 0 else None


def _clip(v: str | None) -> float | None:
    x = to_float(v.strip("'\"")) if v else None
    return x if x is not None and x > 0 else None


def _offloaded(v: str | None) -> bool | None:
    """An offload device: ``cpu`` / ``nvme`` offload, ``none`` keeps the state on the GPU."""
    s = (v or "").strip().strip("'\"").lower()
    return None if not s else s not in ("none", "null", "false", "gpu", "cuda")


def _dtype_of(v: str | None) -> str | None:
    """Lightning ``precision``, accelerate ``mixed_precision``, a ``dtype`` name."""
    s = (v or "").strip().strip("'\"").lower().replace("torch.", "")
    table = {"bf16": "bf16", "bf16-mixed": "bf16", "bf16-true": "bf16", "bfloat16": "bf16",
             "16": "fp16", "16-mixed": "fp16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
             "16-true": "fp16", "fp8": "fp8", "32": "fp32", "32-true": "fp32", "fp32": "fp32",
             "float32": "fp32", "no": "fp32"}
    return table.get(s)


def _flag_dtype(name: str) -> Callable[[str | None], str | None]:
    """``--bf16`` / ``--fp16`` (HF Trainer, DeepSpeed examples): the dtype when on."""
    return lambda v: name if _bool(v) else None


Conv = Callable[[str | None], Any]
#: keys that mean the same in every tool
ANY: dict[str, tuple[str, Conv]] = {
    # vLLM engine args: https://docs.vllm.ai/en/latest/configuration/engine_args.html
    "gpu_memory_utilization": ("inference.gpu_memory_utilization", _fraction),
    "max_num_seqs": ("inference.max_num_seqs", _count),
    "max_num_batched_tokens": ("inference.max_num_batched_tokens", _count),
    "enable_chunked_prefill": ("inference.enable_chunked_prefill", _bool),
    "no_enable_chunked_prefill": ("inference.enable_chunked_prefill", _not),
    "chunked_prefill_enabled": ("inference.enable_chunked_prefill", _bool),  # V0 config dump
    "enable_prefix_caching": ("inference.enable_prefix_caching", _bool),
    "no_enable_prefix_caching": ("inference.enable_prefix_caching", _not),
    "enforce_eager": ("inference.enforce_eager", _bool),
    "tensor_parallel_size": ("inference.tensor_parallel_size", _count),
    "max_model_len": ("inference.max_model_len", _count),
    "cpu_offload_gb": ("inference.cpu_offload_gb", _size_gb),
    "speculative_model": ("inference.speculative", _present),
    "speculative_config": ("inference.speculative", _present),
    "num_speculative_tokens": ("inference.speculative", _present),
    # SGLang server args: https://docs.sglang.ai/advanced_features/server_arguments.html
    "mem_fraction_static": ("inference.gpu_memory_utilization", _fraction),
    "max_running_requests": ("inference.max_num_seqs", _count),
    "chunked_prefill_size": ("inference.enable_chunked_prefill", _chunk),
    "disable_radix_cache": ("inference.enable_prefix_caching", _not),
    "disable_cuda_graph": ("inference.enforce_eager", _bool),
    "disable_decode_cuda_graph": ("inference.enforce_eager", _bool),  # SGLang 0.5.x
    "speculative_algorithm": ("inference.speculative", _present),
    # load generators: vllm bench serve / benchmark_serving.py, SGLang bench_serving
    "max_concurrency": ("inference.client_max_concurrency", _count),
    # launchers: torchrun / deepspeed / accelerate (https://docs.pytorch.org/docs/stable/elastic/run.html)
    "nnodes": ("distributed.nnodes", _count),
    "num_nodes": ("distributed.nnodes", _count),
    "num_machines": ("distributed.nnodes", _count),
    # HF TrainingArguments: https://huggingface.co/docs/transformers/main_classes/trainer
    "dataloader_num_workers": ("dataloader.num_workers", _count),
    "dataloader_pin_memory": ("dataloader.pin_memory", _bool),
    "dataloader_persistent_workers": ("dataloader.persistent_workers", _bool),
    "dataloader_prefetch_factor": ("dataloader.prefetch_factor", _count),
    "per_device_train_batch_size": ("training.micro_batch_size", _count),
    "train_micro_batch_size_per_gpu": ("training.micro_batch_size", _count),
    "micro_batch_size": ("training.micro_batch_size", _count),
    "gradient_accumulation_steps": ("training.gradient_accumulation_steps", _count),
    "gradient_checkpointing": ("training.activation_checkpointing", _bool),
    "activation_checkpointing": ("training.activation_checkpointing", _bool),
    "recompute_activations": ("training.activation_checkpointing", _bool),  # Megatron
    "zero_stage": ("training.zero_stage", _count),
    # DeepSpeed's config (https://www.deepspeed.ai/docs/config-json/): zero_optimization.stage
    # and offload_optimizer.device (kb.parsers.config_file names them so), Accelerate's
    # offload_optimizer_device
    "offload_optimizer_device": ("training.optimizer_offload", _offloaded),
    "gradient_clipping": ("numerics.grad_clip", _clip),
    "bf16": ("numerics.dtype", _flag_dtype("bf16")),
    "fp16": ("numerics.dtype", _flag_dtype("fp16")),
    "mixed_precision": ("numerics.dtype", _dtype_of),
    "max_grad_norm": ("numerics.grad_clip", _clip),
    "clip_grad": ("numerics.grad_clip", _clip),
    "clip_grad_norm": ("numerics.grad_clip", _clip),
    "warmup_steps": ("numerics.warmup_steps", _count),
    "adam_beta2": ("numerics.adam_beta2", _fraction),
    "torch_compile_mode": ("compile.mode", _str),
}
#: keys whose meaning in a serving engine's args
SERVE: dict[str, tuple[str, Conv]] = {
    "tp": ("inference.tensor_parallel_size", _count),
    "tp_size": ("inference.tensor_parallel_size", _count),
    "max_seq_len": ("inference.max_model_len", _count),  # vLLM config dump
    "context_length": ("inference.max_model_len", _count),  # SGLang
    "quantization": ("inference.quantization", _str),
    "dtype": ("numerics.dtype", _dtype_of),  # vLLM/SGLang --dtype: the weights' dtype
    "q": ("inference.quantization", _str),
    # TGI's launcher: https://huggingface.co/docs/text-generation-inference/reference/launcher
    "num_shard": ("inference.tensor_parallel_size", _count),
    "quantize": ("inference.quantization", _str),
    "max_total_tokens": ("inference.max_model_len", _count),
    "cuda_graphs": ("inference.enforce_eager", _graphs_off),
}
#: keys whose meaning in a training script's args
TRAIN: dict[str, tuple[str, Conv]] = {
    "num_workers": ("dataloader.num_workers", _count),
    "workers": ("dataloader.num_workers", _count),
    "pin_memory": ("dataloader.pin_memory", _bool),
    "pin_mem": ("dataloader.pin_memory", _bool),
    "no_pin_mem": ("dataloader.pin_memory", _not),
    "persistent_workers": ("dataloader.persistent_workers", _bool),
    "prefetch_factor": ("dataloader.prefetch_factor", _count),
    "batch_size": ("dataloader.batch_size", _count),
    "bs": ("dataloader.batch_size", _count),  # ParlAI -bs
    "seq_length": ("training.seq_len", _count),
    "max_seq_length": ("training.seq_len", _count),
    "max_seq_len": ("training.seq_len", _count),
    "model_max_length": ("training.seq_len", _count),
    "cutoff_len": ("training.seq_len", _count),  # LLaMA-Factory
    "precision": ("numerics.dtype", _dtype_of),  # Lightning
    "half": ("numerics.dtype", _flag_dtype("fp16")),
}
#: flags that take no value: a following word is a positional argument, not their value
BARE = frozenset(k for k, (_, conv) in {**ANY, **SERVE, **TRAIN}.items()
                 if conv in (_bool, _not) or k in ("bf16", "fp16", "half"))

def _world_torchrun(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    """torchrun's world: --nproc_per_node x --nnodes, one node when --nnodes is not given."""
    per = _count(pairs.get("nproc_per_node"))
    nn_raw = pairs.get("nnodes")
    nodes = _count(nn_raw) if nn_raw is not None else 1  # torchrun's default is one node
    if nodes is not None:
        set_fact(facts, "distributed.nnodes", nodes)
    if per is not None and nodes is not None:
        set_fact(facts, "distributed.world_size", per * nodes)


def _world_deepspeed(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    per, nodes = _count(pairs.get("num_gpus")), _count(pairs.get("num_nodes"))
    if per is not None and nodes is not None:
        set_fact(facts, "distributed.world_size", per * nodes)


def _world_accelerate(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    total = _count(pairs.get("num_processes"))
    if total is not None:
        set_fact(facts, "distributed.world_size", total)


#: llama.cpp's own flags (tools/server/README.md): -m the model file, -np / --parallel the
#: slots served at once, -sm / --split-mode none keeps the model on one GPU, -ngl 0 puts no
#: layer on the GPU
_LLAMA_CPP: dict[str, tuple[str, Conv]] = {
    "parallel": ("inference.max_num_seqs", _count),
    "np": ("inference.max_num_seqs", _count),
}


def _llama_cpp(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    """What llama.cpp's own flags state (see :data:`_LLAMA_CPP`)."""
    for key, (path, conv) in _LLAMA_CPP.items():
        if key in pairs and (value := conv(pairs[key])) is not None:
            set_fact(facts, path, value)
    model_name_facts(facts, pairs.get("m"))  # --model is read with every launch's keys
    split = (pairs.get("sm") or pairs.get("split_mode") or "").strip("'\"").lower()
    if split == "none":
        set_fact(facts, "inference.gpus_per_replica", 1)
    ngl = pairs.get("ngl") or pairs.get("n_gpu_layers") or pairs.get("gpu_layers")
    if ngl is not None and ngl.strip("'\"") == "0":
        set_fact(facts, "inference.gpu_model_share", 0.0)


def _fastchat_vllm(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    """FastChat's vLLM worker (fastchat/serve/vllm_worker.py) sets vLLM's tensor_parallel_size
    to its ``--num-gpus``."""
    n = _count(pairs.get("num_gpus"))
    if n is not None and n > 1:
        set_fact(facts, "inference.tensor_parallel_size", n)


def _fastchat_hf(facts: dict[str, Any], pairs: dict[str, str | None]) -> None:
    """FastChat's Transformers worker (fastchat/serve/model_worker.py) spreads one copy of the
    model's layers over its ``--num-gpus`` (a device map)."""
    n = _count(pairs.get("num_gpus"))
    if n is not None:
        set_fact(facts, "inference.gpus_per_replica", n)


@dataclass(frozen=True)
class Launcher:
    """A program that starts a job, one row per program: how a command line names it, whether
    it serves a model, the engine it runs and what its own flags say."""

    #: the program as written (a regex without groups)
    program: str
    #: a serving engine: its flags are read as the engine's and the model comes first
    serve: bool = False
    #: the ``inference.engine`` it runs (None: the causes written for vLLM apply)
    engine: str | None = None
    #: facts from its own flags, beyond the shared tables
    own: Callable[[dict[str, Any], dict[str, str | None]], None] | None = None


#: launchers named as programs, in the order they are tried. torchrun / deepspeed count only
#: with a flag or a script after them ("a torchrun job hangs" in a sentence is no command, and
#: would state torchrun's default of one node); llama.cpp's binaries only with a flag after
#: them (a path before, .exe on Windows). Aphrodite is a vLLM fork with vLLM's flags: its engine
#: is left unset, so the causes written for vLLM apply
LAUNCHERS: tuple[Launcher, ...] = (
    Launcher(r"torchrun(?=\s+(?:-|\S+\.py\b))", own=_world_torchrun),
    Launcher(r"deepspeed(?=\s+(?:-|\S+\.py\b))", own=_world_deepspeed),
    Launcher(r"accelerate\s+launch", own=_world_accelerate),
    Launcher(r"vllm\s+bench\s+serve"),  # a load generator: its flags are the client's
    Launcher(r"vllm\s+serve", serve=True, engine="vllm"),
    Launcher(r"trtllm-serve", serve=True, engine="tensorrt-llm"),
    Launcher(r"sglang\s+serve", serve=True, engine="sglang"),
    Launcher(r"aphrodite\s+run", serve=True),
    # TGI: its launcher, or its image in a `docker run` (the launcher's flags follow the image)
    Launcher(r"text-generation-launcher|(?:\S*/)?text-generation-inference:\S+", serve=True,
             engine="tgi"),
    Launcher(r"lmdeploy\s+serve\s+api_server|lmdeploy\s+serve\s+gradio|lmdeploy\s+chat",
             serve=True, engine="lmdeploy"),
    Launcher(r"(?:[^\s\"']*[/\\])?llama-(?:server|cli)(?:\.exe)?\"?(?=\s+-)", serve=True,
             engine="llama.cpp", own=_llama_cpp),
    Launcher(r"ollama\s+(?:run|serve)", serve=True, engine="ollama"),
    Launcher(r"llamafactory-cli\s+train"),
    Launcher(r"tune\s+run|tune(?=\s+--n)", own=_world_torchrun),  # torchtune wraps torchrun
)
#: ``python -m <module>``: the module is the launcher (matched at the module name's start)
MODULES: tuple[Launcher, ...] = (
    Launcher(r"torch\.distributed\.(?:launch|run)\b", own=_world_torchrun),
    Launcher(r"vllm\.entrypoints\b", serve=True, engine="vllm"),
    Launcher(r"sglang\.launch_server\b", serve=True, engine="sglang"),
    Launcher(r"aphrodite\.endpoints\b", serve=True),
    Launcher(r"fastchat\.serve\.vllm_worker\b", serve=True, engine="vllm", own=_fastchat_vllm),
    # FastChat's worker on Hugging Face Transformers' generate()
    Launcher(r"fastchat\.serve\.model_worker\b", serve=True, engine="transformers",
             own=_fastchat_hf),
)
_PYTHON = r"python[\d.]*\s+(?:-u\s+)?(?:-m\s+[\w.]+|\S+\.py)"
#: a launch command: the launcher after an optional prompt, env prefix or wrapper
LAUNCH = re.compile(r"(?:^|[\s;&|(`\"])(" + "|".join(
    f"(?P<l{i}>{x.program})" for i, x in enumerate(LAUNCHERS)) + "|" + _PYTHON + r")(?=\s|$)")
_MODULE = re.compile("|".join(f"(?P<m{i}>{x.program})" for i, x in enumerate(MODULES)))
#: an engine's name in an args dump -> the engine
_ENGINE_WORDS = (("sglang", "sglang"), ("trtllm", "tensorrt-llm"), ("vllm", "vllm"),
                 ("text-generation", "tgi"), ("lmdeploy", "lmdeploy"), ("llama-server", "llama.cpp"),
                 ("llama-cli", "llama.cpp"), ("ollama", "ollama"))


def launcher_of(m: re.Match[str]) -> Launcher | None:
    """The launcher a :data:`LAUNCH` match names (None: a plain Python script or module)."""
    for i, x in enumerate(LAUNCHERS):
        if m.group(f"l{i}") is not None:
            return x
    mod = re.search(r"-m\s+([\w.]+)", m.group(1))
    hit = _MODULE.match(mod.group(1)) if mod else None
    return MODULES[int(hit.lastgroup[1:])] if hit and hit.lastgroup else None


def norm(name: str) -> str:
    """``--Gpu-Memory-Utilization`` -> ``gpu_memory_utilization``."""
    return name.lstrip("-").replace("-", "_").lower()


def cli_pairs(tokens: list[str]) -> list[tuple[str, str | None]]:
    """``(flag, value or None)`` for every ``-x`` / ``--name[=value]`` token."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        i += 1
        if not t.startswith("-") or t in ("-", "--") or _NUMERIC.match(t):
            continue
        name, eq, val = t.partition("=")
        key = norm(name)
        if eq:
            out.append((key, val))
            continue
        nxt = tokens[i] if i < len(tokens) else None
        if nxt is None or (nxt.startswith("-") and not _NUMERIC.match(nxt)) or nxt in ("\\", "|", "&&", ";"):
            out.append((key, None))
        elif key in BARE and nxt.lower() not in _TRUE | _FALSE:
            out.append((key, None))
        else:
            out.append((key, nxt))
            i += 1
    return out


def tokens_of(command: str) -> list[str]:
    """Shell words of a command; a plain split when the quoting is broken (a pasted fragment)."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


#: keys whose value names the model ("--model meta-llama/Meta-Llama-3-8B", model_name_or_path=...)
MODEL_KEYS = frozenset({"model", "model_path", "model_name_or_path", "model_id", "model_name",
                        "pretrained_model_name_or_path", "base_model"})


def model_name_facts(facts: dict[str, Any], name: str | None) -> int:
    """The size and storage format a model's name states ("CodeLlama-13b-hf" 13B,
    "Qwen2-72B-Instruct-AWQ" 4-bit); the number of facts set."""
    from kb.prose_sizes import params_billion, weight_bits

    s = (name or "").strip().strip("'\"")
    if not s or len(s) > 300:
        return 0
    n = 0
    for path, value in (("training.model_params_billion", params_billion(s)),
                        ("training.weight_bits", weight_bits(s))):
        if value is not None:
            set_fact(facts, path, value)
            n += 1
    return n


def apply_pairs(facts: dict[str, Any], pairs: list[tuple[str, str | None]], serve: bool) -> int:
    """Set the facts the pairs state (first value wins); the number of facts set."""
    table = {**ANY, **(SERVE if serve else TRAIN)}
    n = 0
    for key, val in pairs:
        if key in MODEL_KEYS:
            n += model_name_facts(facts, val)
            continue
        spec = table.get(key)
        if spec is None:
            continue
        value = spec[1](val)
        if value is not None:
            set_fact(facts, spec[0], value)
            n += 1
    return n


def read_command(facts: dict[str, Any], command: str) -> bool:
    """Facts from one (joined) command line; False when it is not a launch command."""
    m = LAUNCH.search(command)
    if not m:
        return False
    launcher = launcher_of(m)
    serve = launcher is not None and launcher.serve
    if launcher is not None and launcher.engine:
        set_fact(facts, "inference.engine", launcher.engine)
    rest = command[m.start(1):]
    toks = tokens_of(rest)
    words = len(re.sub(r"\s+", " ", m.group(1)).split(" "))
    pairs = cli_pairs(toks[words:] if serve else toks[1:])
    apply_pairs(facts, pairs, serve)
    # `vllm serve <model>`, `lmdeploy serve api_server <model>`, `ollama run <model>`: the
    # model comes first
    if serve and len(toks) > words and not toks[words].startswith("-"):
        model_name_facts(facts, toks[words])
    if launcher is not None and launcher.own is not None:
        launcher.own(facts, dict(pairs))
    return True


#: a line of bare flags, the launch program left out ("--enable-prefix-caching",
#: "--max-num-seqs 1 --enforce-eager"): a pasted excerpt of a launch script or config
FLAG_LINE = re.compile(r"^\s*--[A-Za-z][\w.-]*(?:[= ](?!-)\S+)?(?:\s+--?[A-Za-z][\w.-]*(?:[= ](?!-)\S+)?)*"
                       r"\s*\\?\s*$")


def read_flags(facts: dict[str, Any], lines: list[str]) -> bool:
    """Facts from lines of bare flags (see :func:`read_pairs`); False when none is known."""
    return read_pairs(facts, cli_pairs(tokens_of(" ".join(x.strip().rstrip("\\") for x in lines))))


def read_pairs(facts: dict[str, Any], pairs: list[tuple[str, str | None]]) -> bool:
    """Facts from settings without their program (bare flags, a config file); serving or
    training is told by the settings themselves (one only a serving engine has, or only a
    trainer); False when none is known."""
    keys = {k for k, _ in pairs}
    serve_only, train_only = keys & (SERVE.keys() - TRAIN.keys()), keys & (TRAIN.keys() - SERVE.keys())
    if serve_only and not train_only:
        return apply_pairs(facts, pairs, serve=True) > 0
    if train_only and not serve_only:
        return apply_pairs(facts, pairs, serve=False) > 0
    return apply_pairs(facts, [(k, v) for k, v in pairs if k in ANY], serve=False) > 0


# -- argument dumps -----------------------------------------------------------------------------
#: a one-line dump: argparse Namespace, SGLang ServerArgs, vLLM config / non-default args
DUMP = re.compile(r"Namespace\(|ServerArgs\(|with config: |non-default args: \{|EngineArgs\(|\bargs: ")
_KV = re.compile(r"(?:^|[\s,({])'?([A-Za-z_]\w{0,60})'?\s*[=:]\s*"
                 r"('(?:[^'\\]|\\.){0,300}'|\"(?:[^\"\\]|\\.){0,300}\"|[^,(){}\s]{1,100})")
_SERVE_WORDS = re.compile(r"vllm|sglang|LLM engine|ServerArgs|gpu_memory_utilization|mem_fraction_static")


def dump_pairs(text: str) -> list[tuple[str, str | None]]:
    """``name=value`` / ``'name': value`` pairs of a dump (values as printed)."""
    return [(norm(m.group(1)), m.group(2)) for m in _KV.finditer(text)]


def read_dump(facts: dict[str, Any], line: str) -> bool:
    """Facts from a one-line args dump; False when the line is not one."""
    m = DUMP.search(line)
    if not m:
        return False
    body = line[m.start():]
    serve = bool(_SERVE_WORDS.search(line))
    if serve:
        low = line.lower()
        # the engine by its name, or by the option only it has (vLLM's gpu_memory_utilization,
        # SGLang's mem_fraction_static)
        for word, engine in (("serverargs", "sglang"), ("llm engine", "vllm"), *_ENGINE_WORDS,
                             ("mem_fraction_static", "sglang"), ("gpu_memory_utilization", "vllm")):
            if word in low:
                set_fact(facts, "inference.engine", engine)
                break
    return apply_pairs(facts, dump_pairs(body), serve) > 0


#: options only vLLM's engine takes: an engine call with one of them is vLLM's (TensorRT-LLM's
#: LLM API configures its memory through kv_cache_config instead)
_VLLM_ONLY = frozenset({"gpu_memory_utilization", "enforce_eager", "swap_space", "max_num_seqs"})


def engine_of_keys(facts: dict[str, Any], pairs: list[tuple[str, str | None]]) -> int:
    """``inference.engine = vllm`` when an engine call's keywords hold an option only vLLM has."""
    if any(k in _VLLM_ONLY for k, _ in pairs):
        set_fact(facts, "inference.engine", "vllm")
        return 1
    return 0


def read_engine_call(facts: dict[str, Any], body: str) -> int:
    """Facts from the keywords of a one-line engine call (``LLM(model=..., tensor_parallel_size=2)``)."""
    pairs = dump_pairs(body)
    return apply_pairs(facts, pairs, serve=True) + engine_of_keys(facts, pairs)
