"""Facts: what a user (or a parser) can state about a training or inference job.

This is the input boundary of the engine. Every group is optional; every field is optional.
Unknown keys are rejected with their JSON path (``extra="forbid"``) so that a typo never
silently drops a fact. Units are part of each field's metadata and end up in the evidence.

Fact paths used by the knowledge files are the dotted field paths of this model
(``gpu.utilization_samples``). Numeric lists additionally expose summaries computed by the
engine: ``<path>.mean``, ``.min``, ``.max``, ``.p50``, ``.p90``, ``.last``, ``.first``,
``.count`` and ``.growth`` (last - first).
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Branch = Literal["gpu_util", "oom", "nccl", "numerics", "inference", "compile"]
BRANCHES: tuple[str, ...] = ("gpu_util", "oom", "nccl", "numerics", "inference", "compile")

Percent = Annotated[float, Field(ge=0, le=100)]
Fraction = Annotated[float, Field(ge=0, le=1)]
NonNeg = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]


def _unit(unit: str, description: str) -> dict:
    return {"json_schema_extra": {"unit": unit}, "description": description}


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)


class GpuFacts(_Group):
    """Accelerator readings: nvidia-smi --query-gpu, nvidia-smi dmon, Nsight Systems."""

    count: Count | None = Field(None, description="number of GPUs seen")
    name: str | None = Field(None, description="GPU product name, e.g. NVIDIA H100 80GB HBM3")
    utilization_samples: list[Percent] = Field(
        default_factory=list, **_unit("%", "GPU (SM) utilisation samples, all GPUs, in time order")
    )
    memory_utilization_samples: list[Percent] = Field(
        default_factory=list, **_unit("%", "memory-controller utilisation samples")
    )
    memory_used_mib: list[NonNeg] = Field(
        default_factory=list, **_unit("MiB", "device memory used samples")
    )
    memory_total_mib: NonNeg | None = Field(None, **_unit("MiB", "device memory per GPU"))
    kernel_busy_fraction: Fraction | None = Field(
        None, **_unit("fraction", "share of wall time with a kernel running (nsys)")
    )
    mean_kernel_duration_us: NonNeg | None = Field(
        None, **_unit("us", "mean kernel duration (nsys)")
    )
    driver_version: str | None = Field(None, description="NVIDIA driver version")
    cuda_version: str | None = Field(None, description="CUDA version reported by the driver")


class DiskFacts(_Group):
    """Storage readings: iostat -x."""

    util_percent_samples: list[Percent] = Field(
        default_factory=list, **_unit("%", "%util of the busiest data device per sample")
    )
    read_mb_s_samples: list[NonNeg] = Field(
        default_factory=list, **_unit("MB/s", "read throughput samples")
    )
    await_ms_samples: list[NonNeg] = Field(
        default_factory=list, **_unit("ms", "r_await samples of the busiest device")
    )
    device: str | None = Field(None, description="busiest device name")


class CpuFacts(_Group):
    """Host CPU readings: ps, top, iostat avg-cpu, py-spy."""

    cores: Count | None = Field(None, description="logical CPU cores")
    process_cpu_percent: list[NonNeg] = Field(
        default_factory=list,
        **_unit("%", "%CPU of training processes (100 = one core busy)"),
    )
    iowait_percent_samples: list[Percent] = Field(
        default_factory=list, **_unit("%", "iowait share of CPU time (iostat avg-cpu)")
    )
    hot_functions: list[str] = Field(
        default_factory=list, description="hottest Python functions (py-spy), hottest first"
    )
    python_processes: Count | None = Field(None, description="python processes running")


class DataLoaderFacts(_Group):
    """torch.utils.data.DataLoader settings and measurements."""

    num_workers: Count | None = Field(None, description="DataLoader num_workers")
    pin_memory: bool | None = Field(None, description="DataLoader pin_memory")
    prefetch_factor: Count | None = Field(None, description="DataLoader prefetch_factor")
    persistent_workers: bool | None = Field(None, description="DataLoader persistent_workers")
    batch_size: Count | None = Field(None, description="DataLoader batch size")
    data_wait_fraction: Fraction | None = Field(
        None, **_unit("fraction", "share of step time spent waiting for the next batch")
    )


class TrainingFacts(_Group):
    """The training loop itself."""

    micro_batch_size: Count | None = Field(None, description="per-GPU micro batch size")
    step_time_ms: list[NonNeg] = Field(default_factory=list, **_unit("ms", "step times"))
    seq_len: Count | None = Field(None, **_unit("tokens", "configured sequence length"))
    gradient_accumulation_steps: Count | None = Field(None, description="accumulation steps")
    activation_checkpointing: bool | None = Field(None, description="activation checkpointing on")
    zero_stage: Annotated[int, Field(ge=0, le=3)] | None = Field(None, description="ZeRO stage")
    optimizer_offload: bool | None = Field(None, description="optimizer state offloaded to CPU")
    cuda_graphs: bool | None = Field(None, description="CUDA graphs used for the step")
    model_params_billion: NonNeg | None = Field(None, **_unit("B", "model parameters"))
    checkpoint_save_seconds: NonNeg | None = Field(
        None, **_unit("s", "time to save one checkpoint")
    )
    checkpoint_on_rank0_only: bool | None = Field(
        None, description="checkpoint written by rank 0 while other ranks wait"
    )


class OomFacts(_Group):
    """CUDA out-of-memory events and memory growth (from the OOM message and memory stats)."""

    occurred: bool | None = Field(None, description="a CUDA OOM happened")
    phase: Literal["startup", "first_step", "loop", "backward", "eval", "optimizer"] | None = Field(
        None, description="where the OOM happened"
    )
    at_step: Count | None = Field(None, description="training step of the OOM")
    count: Count | None = Field(None, description="CUDA OOM messages seen (sizes from the first)")
    steps: list[Count] = Field(default_factory=list, description="OOM steps across runs")
    same_step_every_run: bool | None = Field(
        None, description="the OOM repeats at the same step (same input) in every run"
    )
    tried_to_allocate_mib: NonNeg | None = Field(None, **_unit("MiB", "failed allocation"))
    total_capacity_mib: NonNeg | None = Field(None, **_unit("MiB", "GPU total capacity"))
    free_mib: NonNeg | None = Field(None, **_unit("MiB", "free memory at the OOM"))
    allocated_mib: NonNeg | None = Field(None, **_unit("MiB", "allocated by PyTorch"))
    reserved_mib: NonNeg | None = Field(None, **_unit("MiB", "reserved by PyTorch in total"))
    reserved_unallocated_mib: NonNeg | None = Field(
        None, **_unit("MiB", "reserved by PyTorch but unallocated")
    )
    reserved_unallocated_fraction: Fraction | None = Field(
        None, **_unit("fraction", "reserved-but-unallocated / total capacity")
    )
    memory_growth_mib_per_step: float | None = Field(
        None, **_unit("MiB/step", "steady growth of allocated memory per step")
    )
    input_length_ratio: NonNeg | None = Field(
        None, **_unit("x", "length of the input at the OOM step / median input length")
    )
    expandable_segments: bool | None = Field(
        None, description="PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True"
    )
    in_no_grad: bool | None = Field(None, description="the failing code ran under torch.no_grad()")


class RankState(_Group):
    """Where one rank is, from its py-spy dump or its watchdog message."""

    rank: Count
    collective: str | None = Field(None, description="collective or barrier it waits in")
    seq: Count | None = Field(None, description="collective sequence number")
    frame: str | None = Field(None, description="innermost frame of the main thread")


class DistributedFacts(_Group):
    """torch.distributed / NCCL settings, NCCL_DEBUG output, watchdog messages, bandwidth."""

    world_size: Count | None = Field(None, description="number of ranks")
    nnodes: Count | None = Field(None, description="number of nodes")
    backend: str | None = Field(None, description="nccl, gloo, ...")
    nccl_versions: list[str] = Field(default_factory=list, description="NCCL versions seen")
    transports: list[str] = Field(
        default_factory=list, description="NCCL transports seen: IB, Socket, P2P, SHM, NVLS, ..."
    )
    inter_node_transport: str | None = Field(None, description="transport between nodes")
    intra_node_transport: str | None = Field(None, description="transport inside a node")
    ib_hardware_present: bool | None = Field(None, description="InfiniBand HCAs are present")
    nvlink_present: bool | None = Field(None, description="the GPUs have NVLink")
    p2p_disabled: bool | None = Field(None, description="NCCL_P2P_DISABLE=1 is set")
    init_seconds: NonNeg | None = Field(None, **_unit("s", "time for process-group init"))
    watchdog_timeout: bool | None = Field(None, description="a collective timed out")
    timeout_op: str | None = Field(None, description="op type of the timed-out collective")
    timeout_seq: Count | None = Field(None, description="sequence number of the timed-out op")
    timeout_ms: NonNeg | None = Field(None, **_unit("ms", "collective timeout"))
    elapsed_ms: NonNeg | None = Field(None, **_unit("ms", "time the op ran before timing out"))
    rank_states: list[RankState] = Field(default_factory=list, description="per-rank position")
    outlier_ranks: list[Count] = Field(
        default_factory=list, description="ranks not where the majority is"
    )
    ranks_in_barrier_waiting: Count | None = Field(
        None, description="ranks waiting in a barrier while another rank does I/O"
    )
    scaling_efficiency: Fraction | None = Field(
        None, **_unit("fraction", "throughput(N) / (N x throughput(1))")
    )
    bus_bandwidth_gbps: NonNeg | None = Field(None, **_unit("GB/s", "measured bus bandwidth"))
    expected_bandwidth_gbps: NonNeg | None = Field(
        None, **_unit("GB/s", "bandwidth the fabric should give")
    )
    mixed_tensor_sizes: bool | None = Field(
        None, description="the job mixes very large and very small collectives"
    )
    nccl_algo: str | None = Field(None, description="NCCL_ALGO in use")
    version_mismatch: bool | None = Field(
        None, description="ranks or libraries report different NCCL/CUDA/driver versions"
    )
    errors: list[str] = Field(default_factory=list, description="NCCL/c10d error kinds seen")


class NumericsFacts(_Group):
    """Loss / gradient values and mixed-precision settings."""

    dtype: Literal["fp32", "tf32", "fp16", "bf16", "fp8"] | None = Field(
        None, description="training compute dtype"
    )
    loss: list[float] = Field(default_factory=list, description="loss values in step order")
    grad_norm: list[float] = Field(default_factory=list, description="grad norm values")
    learning_rate: list[NonNeg] = Field(
        default_factory=list, description="learning-rate values in step order"
    )
    first_nonfinite_step: Count | None = Field(None, description="first step with NaN/Inf loss")
    nonfinite_count: Count | None = Field(None, description="NaN/Inf values seen")
    nan_source: Literal[
        "loss", "grad", "attention", "softmax", "embedding", "router", "activation", "output"
    ] | None = Field(None, description="where the first NaN/Inf appears")
    loss_scale: list[NonNeg] = Field(default_factory=list, description="loss-scale values")
    skipped_steps: Count | None = Field(
        None, description="steps skipped by the loss scaler (overflow)"
    )
    consecutive_skipped_steps: Count | None = Field(
        None, description="longest run of consecutive skipped steps"
    )
    master_weights_fp32: bool | None = Field(None, description="fp32 master weights kept")
    loss_gap_vs_fp32: float | None = Field(
        None, **_unit("fraction", "relative loss gap to an fp32 run at the same step")
    )
    seq_len: Count | None = Field(None, **_unit("tokens", "sequence length"))
    attention_impl: str | None = Field(None, description="flash, sdpa, eager, manual")
    padding_idx_set: bool | None = Field(None, description="embedding has padding_idx")
    moe: bool | None = Field(None, description="model has mixture-of-experts layers")
    router_dtype: str | None = Field(None, description="router computation dtype")
    idle_experts: Count | None = Field(None, description="experts that received no tokens")
    grad_clip: NonNeg | None = Field(None, description="max grad norm (None: no clipping)")
    anomaly_op: str | None = Field(None, description="backward op named by anomaly mode")


class InferenceFacts(_Group):
    """LLM serving metrics (vLLM/SGLang /metrics, benchmark output) and server flags."""

    engine: str | None = Field(None, description="vllm, sglang, tensorrt-llm, ...")
    ttft_ms_p50: NonNeg | None = Field(None, **_unit("ms", "time to first token, median"))
    ttft_ms_p99: NonNeg | None = Field(None, **_unit("ms", "time to first token, p99"))
    ttft_target_ms: NonNeg | None = Field(None, **_unit("ms", "TTFT objective"))
    tpot_ms_p50: NonNeg | None = Field(None, **_unit("ms", "time per output token, median"))
    tpot_ms_p99: NonNeg | None = Field(None, **_unit("ms", "time per output token, p99"))
    tpot_target_ms: NonNeg | None = Field(None, **_unit("ms", "TPOT objective"))
    itl_ms_p50: NonNeg | None = Field(None, **_unit("ms", "inter-token latency, median"))
    itl_ms_p99: NonNeg | None = Field(None, **_unit("ms", "inter-token latency, p99"))
    failed_requests: Count | None = Field(None, description="requests that failed in a benchmark")
    request_throughput: NonNeg | None = Field(None, **_unit("req/s", "completed requests/s"))
    request_throughput_target: NonNeg | None = Field(None, **_unit("req/s", "objective"))
    output_tokens_per_s: NonNeg | None = Field(None, **_unit("tok/s", "output throughput"))
    num_running: NonNeg | None = Field(None, description="requests running (batch size)")
    num_waiting: NonNeg | None = Field(None, description="requests waiting in the queue")
    kv_cache_usage: Fraction | None = Field(None, **_unit("fraction", "KV cache usage"))
    preemptions: Count | None = Field(None, description="requests preempted so far")
    prefix_cache_hit_rate: Fraction | None = Field(
        None, **_unit("fraction", "prefix-cache hit rate")
    )
    shared_prefix_fraction: Fraction | None = Field(
        None, **_unit("fraction", "share of prompt tokens in prefixes shared across requests")
    )
    mean_prompt_tokens: NonNeg | None = Field(None, **_unit("tokens", "mean prompt length"))
    mean_output_tokens: NonNeg | None = Field(None, **_unit("tokens", "mean output length"))
    gpu_memory_utilization: Fraction | None = Field(
        None, description="--gpu-memory-utilization"
    )
    max_num_seqs: Count | None = Field(None, description="--max-num-seqs")
    max_num_batched_tokens: Count | None = Field(None, description="--max-num-batched-tokens")
    max_model_len: Count | None = Field(None, description="--max-model-len")
    enable_chunked_prefill: bool | None = Field(None, description="--enable-chunked-prefill")
    enable_prefix_caching: bool | None = Field(None, description="--enable-prefix-caching")
    enforce_eager: bool | None = Field(None, description="--enforce-eager (no CUDA graphs)")
    quantization: str | None = Field(None, description="--quantization")
    speculative: bool | None = Field(None, description="speculative decoding configured")
    tensor_parallel_size: Count | None = Field(None, description="--tensor-parallel-size")
    flash_attention: bool | None = Field(None, description="a flash-attention backend is used")


class CompileFacts(_Group):
    """torch.compile / TorchDynamo logs (TORCH_LOGS=graph_breaks,recompiles)."""

    graph_breaks: Count | None = Field(None, description="graph breaks seen")
    graph_break_reasons: dict[str, Count] = Field(
        default_factory=dict,
        description="graph breaks by category: print, host_sync, control_flow, "
        "shape_control_flow, unsupported, other",
    )
    recompiles: Count | None = Field(None, description="recompilations seen")
    recompile_reasons: dict[str, Count] = Field(
        default_factory=dict, description="recompilations by guard kind: shape, dtype, other"
    )
    cache_limit_hit: bool | None = Field(
        None, description="dynamo cache_size_limit / recompile_limit reached"
    )
    speedup_vs_eager: NonNeg | None = Field(None, **_unit("x", "eager time / compiled time"))
    fullgraph: bool | None = Field(None, description="compiled with fullgraph=True")
    mark_dynamic_used: bool | None = Field(None, description="mark_dynamic / dynamic=True used")


class ToolStatus(_Group):
    """Outcome of one collection command."""

    status: Literal["ok", "missing", "failed", "timeout", "skipped"]
    detail: str | None = None


class Facts(BaseModel):
    """Everything known about one job. The input of :func:`kb.diagnose`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: Literal[1] = 1
    symptom: Branch | None = Field(None, description="the symptom branch, if the user knows it")
    symptom_text: str | None = Field(
        None, max_length=2000, description="the problem in the user's own words (en or zh)"
    )
    gpu: GpuFacts = Field(default_factory=GpuFacts)
    disk: DiskFacts = Field(default_factory=DiskFacts)
    cpu: CpuFacts = Field(default_factory=CpuFacts)
    dataloader: DataLoaderFacts = Field(default_factory=DataLoaderFacts)
    training: TrainingFacts = Field(default_factory=TrainingFacts)
    oom: OomFacts = Field(default_factory=OomFacts)
    distributed: DistributedFacts = Field(default_factory=DistributedFacts)
    numerics: NumericsFacts = Field(default_factory=NumericsFacts)
    inference: InferenceFacts = Field(default_factory=InferenceFacts)
    compile: CompileFacts = Field(default_factory=CompileFacts)
    env: dict[str, str] = Field(
        default_factory=dict, description="relevant environment variables (NCCL_*, PYTORCH_*)"
    )
    tools: dict[str, ToolStatus] = Field(
        default_factory=dict, description="collection commands and how they ended"
    )


def _walk_fields(model: type[BaseModel], prefix: str, out: dict[str, str]) -> None:
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        extra = field.json_schema_extra
        if isinstance(extra, dict) and "unit" in extra:
            out[path] = str(extra["unit"])
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            _walk_fields(ann, path + ".", out)


_UNITS: dict[str, str] | None = None


def fact_units() -> dict[str, str]:
    """``{fact path: unit}`` for every field that declares a unit."""
    global _UNITS
    if _UNITS is None:
        _UNITS = {}
        _walk_fields(Facts, "", _UNITS)
    return _UNITS
