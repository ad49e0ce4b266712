"""CUDA/HIP/XPU/MPS out-of-memory lines: every PyTorch era's message, sizes in MiB, and whether
the OOM happened in ``backward()`` (a backward frame in the lines just before it)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from kb.parsers.base import get_fact, set_fact, strip_ansi

if TYPE_CHECKING:
    from kb.parsers.training_log.scanner import LogScanner

_SIZE = r"(\d+(?:\.\d+)?) (bytes|B|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1 / 2**20, "B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_OOM_NEW = re.compile(
    r"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate " + _SIZE + r"\. GPU \d+ has a total capac(?:i)?ty of "
    + _SIZE + r" of which " + _SIZE + r" is free\."
)
_OOM_NEW_ALLOC = re.compile(
    r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, (?:with " + _SIZE
    + r" allocated in private pools \(e\.g\., CUDA Graphs\), )?and " + _SIZE + r" is reserved by PyTorch but unallocated"
)
#: torch>=2.1 counts the whole process: "Including non-PyTorch memory, this process has X memory
#: in use" (c10/cuda/CUDACachingAllocator.cpp, reportProcessMemoryInfo)
_OOM_THIS_PROCESS = re.compile(r"this process has " + _SIZE + r" memory in use")
#: what the CUDA context and the libraries' workspaces of one process take outside PyTorch's
#: allocator, at most, on current GPUs: the older message does not count it
CONTEXT_ALLOWANCE_MIB = 1024.0
_OOM_OLD = re.compile(
    r"(?:CUDA|HIP) out of memory\. Tried to allocate " + _SIZE + r" \(GPU \d+; " + _SIZE + r" total capacity; "
    + _SIZE + r" already allocated; " + _SIZE + r" free; " + _SIZE + r" (cached|reserved in total by PyTorch)\)"
)
#: the sizes-free wordings; TensorFlow's "OOM when allocating tensor with shape"
#: (tensorflow/core/framework/op_kernel.cc; "... tensor of shape" where a tensor is copied to the
#: device, common_runtime/gpu/gpu_util.cc and constant_op.cc) and TF 1.x's BFC allocator failure "Ran out of memory
#: trying to allocate X. See logs for memory state." (common_runtime/bfc_allocator.cc; its
#: "... The caller indicates that this is not a failure" warning is none); XLA/JAX's
#: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes" (older XLA: "Resource
#: exhausted: Out of memory ..."); TF 2.x's BFC failure "Allocator (GPU_0_bfc) ran out of memory
#: trying to allocate 73.50MiB (rounded to 77070336)requested by op Mul" (the "(rounded to N)"
#: is only in the failure, not in the "not a failure" warning)
_OOM_BARE = re.compile(
    r"CUDA error: out of memory|cuda runtime error \(2\) : out of memory|(?:CUBLAS|CUDNN)_STATUS_ALLOC_FAILED"
    # the other CUDA libraries' own "memory allocation failed" statuses, as their headers name
    # them (curand.h CURAND_STATUS_ALLOCATION_FAILED = 102, cusolver_common.h / cusparse.h
    # *_STATUS_ALLOC_FAILED = 3, cufft.h CUFFT_ALLOC_FAILED = 2): CuPy and PyTorch print the name
    r"|(?:CUSOLVER|CUSPARSE)_STATUS_ALLOC_FAILED|CURAND_STATUS_ALLOCATION_FAILED|CUFFT_ALLOC_FAILED"
    r"|Cuda failure 'out of memory'|(?:CUDA|HIP|XPU) out of memory|MPS backend out of memory"
    r"|OOM when allocating tensor (?:with|of) shape|[Rr]an out of memory trying to allocate .*See logs for memory state"
    r"|ran out of memory trying to allocate \S+ \(rounded to \d+\)"
    r"|(?:RESOURCE_EXHAUSTED|Resource exhausted): Out of memory (?:while trying to allocate|allocating)"
    # the runtime's own call failing with cudaErrorMemoryAllocation: ggml-cuda.cu
    # ("allocating 590.07 MiB on device 0: cudaMalloc failed: out of memory"), MXNet's pooled
    # storage manager ("cudaMalloc failed: out of memory"), TensorRT-LLM's cudaUtils.h check
    # ("CUDA runtime error in ::cudaMallocAsync(ptr, n, ...): out of memory"); cudaMallocHost
    # (pinned host memory) is not the device's
    r"|cudaMalloc(?:Async|Managed|Pitch|3D)?(?:\(.{0,160}?\))?(?: failed)?: out of memory"
    # tiny-cuda-nn's CUDA_CHECK_THROW (include/tiny-cuda-nn/common.h: "<call> failed with error "
    # + cudaGetErrorString), as GPUMemory::resize (gpu_memory.h) rethrows it: "Could not allocate
    # memory: ... cudaMalloc(&rawptr, n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory"
    r"|cudaMalloc(?:Async|Managed|Pitch|3D)?\(.{0,160}?\) failed with error out of memory"
    # the driver API's own code (cuda.h), as TensorFlow's stream executor, cudarc/candle and
    # Numba print it: "DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")"
    r"|CUDA_ERROR_OUT_OF_MEMORY"
    # the runtime API's code for it (cuda_runtime_api.h: cudaErrorMemoryAllocation = 2, "out of
    # memory"), as XLA's stream executor prints it: "There was an error before creating cudnn
    # handle (2): cudaErrorMemoryAllocation : out of memory"
    r"|cudaErrorMemoryAllocation\b"
    # a training loop that caught a RuntimeError whose text holds "out of memory" (the CUDA
    # allocator's) and goes on: fairseq's trainer.py ("| WARNING: ran out of memory, skipping
    # batch"; later "| WARNING: ran out of memory with exception: ..."), ParlAI's torch_agent.py
    # ("... skipping batch. if this happens frequently, decrease batchsize ..."), Boltz's
    # model.py; the batch is skipped, so the run may go on
    r"|WARNING: ran out of memory(?:, skipping batch| with exception)"
    # PaddlePaddle's allocators (paddle/fluid/memory/allocation/cuda_allocator.cc and the
    # virtual-memory / managed allocators beside it): "Out of memory error on GPU 0. Cannot
    # allocate 1.531250GB memory on GPU 0, [N memory has been allocated and] available memory
    # is only 416.625000MB."
    r"|Out of memory error on GPU \d+\. Cannot allocate"
    # a notebook's traceback header (IPython's ultratb: the exception's class name, padding,
    # "Traceback (most recent call last)"): torch.cuda.OutOfMemoryError names a device OOM
    # even when the paste stops before the message line
    r"|(?:^|\s)(?:torch\.(?:cuda\.)?)?OutOfMemoryError {2,}Traceback \(most recent call last\)"
)
#: PaddlePaddle's sizes (string::HumanReadableSize: 1024-based B/KB/MB/GB/TB, six decimals)
_PADDLE_SIZES = re.compile(
    r"Out of memory error on GPU \d+\. Cannot allocate ([\d.]+) ?(B|KB|MB|GB|TB) memory on GPU "
    r"\d+,(?: [\d.]+ ?(?:B|KB|MB|GB|TB) memory has been allocated and)? available memory is only"
    r"(?: ([\d.]+) ?(B|KB|MB|GB|TB)\b)?")
_PADDLE_UNITS = {"B": "B", "KB": "KiB", "MB": "MiB", "GB": "GiB", "TB": "TiB"}
#: TF's BFC allocator memory dump ("bfc_allocator.cc:678] Chunk at 0x1306930000 of size 589824"):
#: DumpMemoryLog runs only after an allocation failed, so its lines mean an OOM happened even
#: when the failure line itself was not pasted
_BFC_DUMP = re.compile(r"bfc_allocator\.cc:\d+\] (?:Chunk|Free) at [0-9a-fA-Fx]+ of size \d+")
_BACKWARD_FRAME = re.compile(r"\bin backward\s*$|\.backward\(")


def _mib(num: str, unit: str) -> float:
    return round(float(num) * _UNITS[unit], 3)


#: TensorFlow 1.x describing a device as it opens it, before it allocates anything
#: (tensorflow/core/common_runtime/gpu/gpu_device.cc: "Found device 0 with properties: ...
#: totalMemory: 15.90GiB freeMemory: 3.12GiB"): memory already in use was held by others
_TF_DEVICE = re.compile(r"totalMemory:\s*([\d.]+)\s*(GiB|MiB)\s+freeMemory:\s*([\d.]+)\s*(GiB|MiB)")


def _tf_device(sc: LogScanner, line: str) -> None:
    """The first device TensorFlow opens: its capacity, and what others held before this job."""
    m = _TF_DEVICE.search(line)
    if not m or get_fact(sc.facts, "oom.total_capacity_mib") is not None:
        return
    total, free = _mib(m.group(1), m.group(2)), _mib(m.group(3), m.group(4))
    set_fact(sc.facts, "oom.total_capacity_mib", total)
    held = round(total - free - CONTEXT_ALLOWANCE_MIB, 3)  # less its own context at most
    if held > 0:
        set_fact(sc.facts, "oom.held_elsewhere_mib", held)


def oom(sc: LogScanner, line: str) -> None:
    """An OOM line: count it; the first one gives the sizes, the step and the phase."""
    if "freeMemory" in line:
        _tf_device(sc, line)
        return
    m_new = _OOM_NEW.search(line)
    m_old = None if m_new else _OOM_OLD.search(line)
    if not (m_new or m_old or _OOM_BARE.search(line)):
        if _BFC_DUMP.search(line):
            set_fact(sc.facts, "oom.occurred", True)
        return
    sc.oom_count += 1
    set_fact(sc.facts, "oom.occurred", True)
    set_fact(sc.facts, "oom.count", sc.oom_count, overwrite=True)
    if sc.oom_count > 1:
        return  # sizes of the first OOM; later ones are usually retries or other ranks
    if sc.step is not None:
        set_fact(sc.facts, "oom.at_step", sc.step)
    if any(_BACKWARD_FRAME.search(strip_ansi(x).rstrip("\r\n")) for x in sc.before()):
        set_fact(sc.facts, "oom.phase", "backward")
    for path, value in _size_facts(line, m_new, m_old).items():
        # the OOM message's own numbers win over a device description read before it
        set_fact(sc.facts, path, value, overwrite=True)


def sized_oom_facts(text: str) -> dict[str, float | str]:
    """The sizes (``oom.*`` fact paths) of the first sized OOM message in ``text`` (either
    PyTorch wording, with "Tried to allocate"), or {} when it holds none: the numbers a user
    quotes from the message are the message's own."""
    for line in text.splitlines():
        m_new = _OOM_NEW.search(line)
        m_old = None if m_new else _OOM_OLD.search(line)
        if m_new or m_old:
            return _size_facts(line, m_new, m_old)
    return {}


#: the sizes-free wordings people also write as prose ("I get CUDA out of memory", "no CUDA out
#: of memory error"): as the user's words they say no more than the branch's own words do
_PROSE_OOM = re.compile(r"(?i)(?:CUDA|HIP|XPU|MPS backend) out of memory")


def quoted_oom_messages(text: str) -> list[re.Match[str]]:
    """The device OOM messages ``text`` quotes in a tool's own wording (TensorFlow's "OOM when
    allocating tensor with shape", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
    ...; :data:`_OOM_BARE`), not in words a person writes as prose."""
    return [m for m in _OOM_BARE.finditer(text) if not _PROSE_OOM.fullmatch(m.group(0))]


def quoted_oom_sizes(message: re.Match[str]) -> dict[str, float | str]:
    """The sizes (``oom.*`` fact paths) that the line of a quoted device OOM message (a match of
    :func:`quoted_oom_messages`) states: TensorFlow's shape, Paddle's sizes; {} for the others."""
    text = message.string
    start = text.rfind("\n", 0, message.start()) + 1
    end = text.find("\n", message.end())
    return _size_facts(text[start:end if end >= 0 else len(text)], None, None)


#: TensorFlow's "OOM when allocating tensor with shape[64,372,32,32] and type float" (op_kernel.cc;
#: "of shape [32000,768]" where a tensor is copied to the device): the request is the shape's
#: element count times the dtype's size
_TF_SHAPE = re.compile(r"OOM when allocating tensor (?:with|of) shape ?\[([\d,\s]{1,200})\] and type (\w+)")
_TF_DTYPE_BYTES = {"float": 4, "half": 2, "double": 8, "bfloat16": 2, "int32": 4, "int64": 8, "int16": 2,
                   "uint16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}


def _tf_request_mib(line: str) -> float | None:
    m = _TF_SHAPE.search(line)
    if not m or m.group(2) not in _TF_DTYPE_BYTES:
        return None
    dims = [int(d) for d in m.group(1).replace(" ", "").split(",") if d]
    return round(math.prod(dims) * _TF_DTYPE_BYTES[m.group(2)] / 2**20, 3) if dims else None


def _size_facts(line: str, m_new: re.Match[str] | None, m_old: re.Match[str] | None
                ) -> dict[str, float | str]:
    """The sizes a sized OOM message states, by fact path (empty for a sizes-free one), and
    which wording stated them (its fragmentation hint differs by era)."""
    sizes: dict[str, float] = {}
    if not (m_new or m_old) and (req := _tf_request_mib(line)) is not None:
        sizes["tried"] = req
    if not (m_new or m_old) and (pd := _PADDLE_SIZES.search(line)):
        sizes["tried"] = _mib(pd.group(1), _PADDLE_UNITS[pd.group(2)])
        if pd.group(3):  # the free size may be wrapped onto the next line of a paste
            sizes["free"] = _mib(pd.group(3), _PADDLE_UNITS[pd.group(4)])
    if m_new:
        g = m_new.groups()
        sizes = {"tried": _mib(g[0], g[1]), "total": _mib(g[2], g[3]), "free": _mib(g[4], g[5])}
        a = _OOM_NEW_ALLOC.search(line)
        if a:
            ga = a.groups()
            sizes["alloc"] = _mib(ga[0], ga[1])
            sizes["unalloc"] = _mib(ga[4], ga[5])
            sizes["reserved"] = round(sizes["alloc"] + sizes["unalloc"], 3)
        p = _OOM_THIS_PROCESS.search(line)
        if p:
            # the device's used memory less this whole process: other processes' share
            sizes["elsewhere"] = sizes["total"] - sizes["free"] - _mib(*p.groups())
        elif "reserved" in sizes:
            # no "this process" (NVML gives host PIDs in a container, so the job is one of the
            # "Process N" entries, or NVML is missing): as in the older wording, used memory not
            # in PyTorch's pool, less this process's own context at most
            sizes["elsewhere"] = (sizes["total"] - sizes["free"] - sizes["reserved"]
                                  - CONTEXT_ALLOWANCE_MIB)
    elif m_old:
        g = m_old.groups()
        sizes = {
            "tried": _mib(g[0], g[1]), "total": _mib(g[2], g[3]), "alloc": _mib(g[4], g[5]),
            "free": _mib(g[6], g[7]),
        }
        if g[10] == "cached":
            # 1.0-1.4 printed cached-but-unallocated here (it is below "already allocated")
            sizes["unalloc"] = _mib(g[8], g[9])
            sizes["reserved"] = round(sizes["alloc"] + sizes["unalloc"], 3)
        else:
            sizes["reserved"] = _mib(g[8], g[9])
            if sizes["reserved"] >= sizes["alloc"]:
                sizes["unalloc"] = round(sizes["reserved"] - sizes["alloc"], 3)
        # used memory not in PyTorch's pool, less this process's own context at most
        sizes["elsewhere"] = (sizes["total"] - sizes["free"] - sizes["reserved"]
                              - CONTEXT_ALLOWANCE_MIB)
    if "elsewhere" in sizes:
        sizes["elsewhere"] = round(max(0.0, sizes["elsewhere"]), 3)
    out: dict[str, float | str] = {}
    if m_new:
        out["oom.wording"] = "reserved_but_unallocated"
    elif m_old:
        out["oom.wording"] = "cached" if m_old.group(11) == "cached" else "reserved_in_total"
    for key, path in (
        ("tried", "tried_to_allocate_mib"), ("total", "total_capacity_mib"), ("free", "free_mib"),
        ("alloc", "allocated_mib"), ("reserved", "reserved_mib"), ("unalloc", "reserved_unallocated_mib"),
        ("elsewhere", "held_elsewhere_mib"),
    ):
        if key in sizes:
            out[f"oom.{path}"] = sizes[key]
    if sizes.get("total", 0) > 0 and "unalloc" in sizes:
        frac = min(sizes["unalloc"] / sizes["total"], 1.0)
        out["oom.reserved_unallocated_fraction"] = round(frac, 6)
    return out
