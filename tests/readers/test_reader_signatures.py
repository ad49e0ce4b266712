"""Message signatures: required literals, matching against the knowledge, `sets` facts."""

from __future__ import annotations

import re

import pytest

import kb
from kb.readers.signatures import Matcher, Signature, apply, compile_signatures, literals_of, required_literal


@pytest.mark.parametrize(("pattern", "literal"), [
    (r"CUDA out of memory\. Tried to allocate .* is reserved by PyTorch but unallocated", " is reserved by PyTorch but unallocated"),
    (r"NCCL INFO Bootstrap ?: Using \[?0?\]? ?(lo|docker\d*):", "NCCL INFO Bootstrap"),
    (r"via NET/IB/\d+/GDRDMA", "via NET/IB/"),
    (r"abcd+e", "abcd"),
    (r"abcde?f", "abcd"),
    (r"x{2,3}yyyy", "yyyy"),
    (r"[abc]+\d", ""),
])
def test_required_literal(pattern: str, literal: str) -> None:
    assert required_literal(pattern) == literal


def test_alternatives_and_flags() -> None:
    assert literals_of(r"(Out of memory|Memory cgroup out of memory): Killed process \d+") == (": Killed process ",)
    assert literals_of(r"alpha one|beta two") == ("alpha one", "beta two")
    assert literals_of(r"ab|beta two") == ()  # one alternative without a usable literal
    assert literals_of(r"(?i)cuda error") == ()


def test_every_knowledge_literal_is_in_what_its_pattern_matches() -> None:
    # the literal is taken from the pattern; a match must contain it, or the fast path would
    # miss messages the regex accepts. Checked on the pattern with its regex syntax replaced by
    # a sample of what it accepts, where that is simple to build.
    for sig in compile_signatures(kb.load_knowledge()):
        for lit in sig.literals:
            assert lit and lit in re.sub(r"\\(.)", r"\1", sig.regex.pattern), (sig.cause, lit)


def test_knowledge_signatures_match_real_messages() -> None:
    # verbatim messages (tests/fixtures/formats, sources in SOURCES.md)
    text = "\n".join([
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacty "
        "of 23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, this process has 20.81 GiB memory in "
        "use. Of the allocated memory 12.09 GiB is allocated by PyTorch, and 4.84 GiB is reserved by PyTorch but "
        "unallocated.",
        "10-90-43-152:120890:121560 [0] NCCL INFO Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA",
    ])
    m = Matcher()
    m.scan(text)
    causes = [h.cause for h in m.found()]
    assert "oom.allocator_reserved_unallocated" in causes and "nccl.gdr_disabled" in causes
    facts: dict = {}
    notes: list[str] = []
    apply(facts, m.found(), notes, "t")
    assert facts["oom"]["occurred"] is True and facts["distributed"]["gdr_enabled"] is True
    assert any("message of nccl.gdr_disabled" in n for n in notes)


def test_stated_fact_wins_over_signature_sets() -> None:
    sig = Signature("x.y", re.compile("boom"), ("boom",), {"distributed.gdr_enabled": True})
    m = Matcher([sig])
    m.scan("a\nboom here\n")
    facts = {"distributed": {"gdr_enabled": False}}
    notes: list[str] = []
    apply(facts, m.found(), notes, "t")
    assert facts == {"distributed": {"gdr_enabled": False}, "signatures": ["x.y"]}
    assert any("kept the text's value" in n for n in notes)


def test_literal_free_patterns_still_match() -> None:
    sig = Signature("a.b", re.compile(r"\d+ errs"), (), {})
    m = Matcher([sig])
    m.scan("x\n12 errs\n")
    assert [h.line for h in m.found()] == ["12 errs"]


@pytest.mark.parametrize(("message", "fires"), [
    # PyTorch >= 2.1 (c10/cuda/CUDACachingAllocator.cpp, reportProcessMemoryInfo): its own PID
    # is "this process", every other PID "Process N"
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
     "23.65 GiB of which 120.00 MiB is free. Process 4242 has 14.80 GiB memory in use. Including non-PyTorch "
     "memory, this process has 8.70 GiB memory in use. Of the allocated memory 8.10 GiB is allocated by PyTorch",
     True),
    # in a container NVML gives host PIDs: the job itself is "Process N" and no "this process"
    # appears (vllm-project/vllm#1949): not another process
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacty of "
     "23.64 GiB of which 1.42 GiB is free. Process 2722 has 22.22 GiB memory in use. Of the allocated memory "
     "21.5 GiB is allocated by PyTorch", False),
    # only this process listed
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of "
     "23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, this process has 20.81 GiB memory in use.",
     False),
])
def test_other_process_needs_this_process_listed_too(message: str, fires: bool) -> None:
    m = Matcher()
    m.scan(message)
    assert ("oom.other_process_on_gpu" in [h.cause for h in m.found()]) is fires


def _scan(text: str) -> tuple[list[str], dict]:
    """The causes whose signatures ``text`` holds, and the facts their ``sets`` state."""
    m = Matcher()
    m.scan(text)
    facts: dict = {}
    apply(facts, m.found(), [], "t")
    return [h.cause for h in m.found()], facts


@pytest.mark.parametrize(("message", "fires"), [
    # NumPy's warnings as NumPy 2.4 prints them for np.log(0) and np.sqrt(-1)
    ("<string>:4: RuntimeWarning: divide by zero encountered in log", True),
    ("<string>:4: RuntimeWarning: invalid value encountered in sqrt", True),
    # near-misses: a division, an overflow in exp, a cast name no log or sqrt at zero
    ("<string>:4: RuntimeWarning: divide by zero encountered in divide", False),
    ("<string>:4: RuntimeWarning: overflow encountered in exp", False),
    ("<string>:4: RuntimeWarning: invalid value encountered in cast", False),
])
def test_numpy_log_or_sqrt_at_zero(message: str, fires: bool) -> None:
    causes, _ = _scan(message)
    assert ("numerics.log_sqrt_at_zero" in causes) is fires


def test_ollama_serving_one_request_at_a_time() -> None:
    # ollama server/sched.go: the scheduler clamps numParallel to 1 for the listed architectures
    line = ('time=2026-03-05T06:40:37.818-05:00 level=WARN source=sched.go:450 msg="model architecture '
            'does not currently support parallel requests" architecture=qwen35moe')
    causes, facts = _scan(line)
    assert "inference.max_num_seqs_limit" in causes
    assert facts["inference"]["max_num_seqs"] == 1 and facts["inference"]["engine"] == "ollama"
    # near-miss: the server's start-up line that lists OLLAMA_NUM_PARALLEL among its settings
    causes, _ = _scan('level=INFO source=routes.go:1235 msg="server config" env="map[OLLAMA_NUM_PARALLEL:2]"')
    assert "inference.max_num_seqs_limit" not in causes


@pytest.mark.parametrize(("message", "cause", "fact"), [
    # torch/csrc/DataLoader.cpp, THPModule_errorIfAnyWorkerFails (the main process's side of a
    # worker's SIGBUS)
    ("RuntimeError: DataLoader worker (pid 572) is killed by signal: Bus error. It is possible that "
     "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
     "gpu_util.dev_shm_too_small", ("dataloader", "worker_bus_error")),
    # the same file, the worker's own handler
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "gpu_util.dev_shm_too_small", ("dataloader", "worker_bus_error")),
    # PaddlePaddle paddle/fluid/imperative/data_loader.cc: the worker's SIGBUS handler and the
    # main process's error for it
    ("ERROR: Unexpected BUS error encountered in DataLoader worker. This might be caused by insufficient shared "
     "memory (shm), please check whether use_shared_memory is set and storage space in /dev/shm is enough",
     "gpu_util.dev_shm_too_small", ("dataloader", "worker_bus_error")),
    ("FatalError: DataLoader process (pid 1234) exited is killed by signal: Bus error.\n  It may be caused by "
     "insufficient shared storage space. This problem usually occurs when using docker as a development "
     "environment.", "gpu_util.dev_shm_too_small", ("dataloader", "worker_bus_error")),
    # cudaErrorECCUncorrectable's text (CUDA runtime API), as PyTorch raises it
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered",
     "gpu_util.gpu_hardware_errors", ("gpu", "ecc_uncorrectable")),
    # libstdc++'s terminate handler after operator new failed (an MXNet Jupyter kernel)
    ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc",
     "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    # numpy/_core/_exceptions.py, _ArrayMemoryError
    ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array with shape "
     "(500000, 1000) and data type float64", "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    # c10/core/impl/alloc_cpu.cpp: a host allocation that failed
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: "
     "you tried to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)",
     "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    # the Windows path of c10/core/CPUAllocator.cpp (torch<1.6), and a paste that lost the space
    ("RuntimeError: [enforce fail at ..\\c10\\core\\CPUAllocator.cpp:72] data. DefaultCPUAllocator: not enough "
     "memory: you tried to allocate 602112 bytes. Buy new RAM!", "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    ("RuntimeError: [enforce fail at CPUAllocator.cpp:64]. DefaultCPUAllocator: can't allocate memory:you tried "
     "to allocate 664833940224 bytes. Error code 12 (Cannot allocate memory)",
     "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    # c10/core/CPUAllocator.cpp of torch 1.0-1.1: CAFFE_ENFORCE_EQ on posix_memalign, ENOMEM
    ("RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, nbytes) == 0. "
     "12 vs 0", "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    # Python's MemoryError ending a traceback (the host refused np.empty), bare and in NumPy < 1.17's words
    ("    self.screens = np.empty((self.size, 84, 84), dtype = np.uint8)\nMemoryError",
     "oom.host_ram_oom", ("oom", "host_alloc_failed")),
    ("MemoryError: Unable to allocate array with shape (1000000, 84, 84) and data type uint8",
     "oom.host_ram_oom", ("oom", "host_alloc_failed")),
])
def test_worker_and_hardware_messages(message: str, cause: str, fact: tuple[str, str]) -> None:
    causes, facts = _scan(message)
    assert cause in causes
    assert facts[fact[0]][fact[1]] is True


@pytest.mark.parametrize("message", [
    # a worker killed by another signal is no shared-memory problem (DataLoader.cpp adds the
    # shm sentence for SIGBUS only)
    "RuntimeError: DataLoader worker (pid 4021) is killed by signal: Killed.",
    "RuntimeError: DataLoader worker (pid(s) 1234) exited unexpectedly",
    # Paddle's worker killed by another signal
    "ERROR: Unexpected segmentation fault encountered in DataLoader workers.",
    # a correctable ECC count is no failure
    "Volatile ECC Errors: Single Bit Device Memory: 3",
])
def test_worker_and_hardware_near_misses(message: str) -> None:
    causes, facts = _scan(message)
    assert not {"gpu_util.dev_shm_too_small", "gpu_util.gpu_hardware_errors"} & set(causes)


def test_a_bad_alignment_is_no_lack_of_host_memory() -> None:
    # posix_memalign's EINVAL (22) in torch 1.0-1.1's enforce is a bad alignment, not ENOMEM
    causes, facts = _scan("RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, "
                          "gAlignment, nbytes) == 0. 22 vs 0")
    assert "oom.host_ram_oom" not in causes and "host_alloc_failed" not in facts.get("oom", {})


@pytest.mark.parametrize("message", [
    # torch/distributed/elastic/multiprocessing/errors/__init__.py (ProcessFailure)
    "  traceback : Signal 9 (SIGKILL) received by PID 12345",
    # deepspeed/launcher/launch.py, sigkill_handler
    "[2023-11-28 10:00:34,590] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
    "'train.py', '--local_rank=0'] exits with return code = -9",
    # bash running a script reports a child's death by signal with its line (jobs.c)
    "2020-11-24 20:22:28.106 /bin/bash: line 27: 318 Killed sh start.sh",
    "./run.sh: line 9:  4567 Killed                  python train.py --bs 64",
    # zsh's job report in lower case (Src/jobs.c, sig_msg "killed"): background (the line
    # pasted in tests/heldout/oom/o375-cmp-txt2img-killed-host-ram) and foreground
    "[1]    52429 killed     python scripts/txt2img.py --prompt  --plms",
    "zsh: killed     python3 train.py --epochs 10",
])
def test_a_sigkilled_rank_is_evidence_of_host_oom_not_proof(message: str) -> None:
    causes, facts = _scan(message)
    assert "oom.host_ram_oom" in causes
    assert "host_oom_killed" not in facts.get("oom", {})  # a scheduler kills with SIGKILL too
    rep = kb.diagnose(inputs=[message + "\n"])
    assert not rep.findings and rep.hypotheses[0].cause_id == "oom.host_ram_oom"


@pytest.mark.parametrize("message", [
    # near-misses: another signal, another exit code
    "  traceback : Signal 15 (SIGTERM) received by PID 12345",
    "[ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', 'train.py'] exits with return code = 1",
    "./run.sh: line 9:  4567 Terminated              python train.py",
    "./run.sh: line 9:  4567 Segmentation fault      (core dumped) python train.py",
    # zsh's other signals, and "killed" in a sentence
    "zsh: terminated  python3 train.py",
    "[1]  + 52429 done       python train.py",
    "the process was killed by the scheduler after 4 hours",
    # a GPU library's own out-of-memory class is no host allocation, nor is code that names it
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,024 bytes (allocated so far: 0 bytes).",
    "pycuda._driver.MemoryError: cuMemAlloc failed: out of memory",
    "    except MemoryError:",
])
def test_other_signals_and_exit_codes_are_no_host_oom(message: str) -> None:
    causes, facts = _scan(message)
    assert "oom.host_ram_oom" not in causes


@pytest.mark.parametrize(("message", "sets"), [
    # NCCL src/os/linux.cc (src/misc/shmutils.cc before 2.27), ncclOsShmOpen's fail path
    ("node1:2145:2301 [1] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-pZafXL "
     "(size 9637888), error: No space left on device (28)", True),
    # older wording without the errno: evidence, but no proof that /dev/shm is full
    ("node1:2145:2301 [1] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-HNdBqY "
     "(size 9637888)", False),
])
def test_nccls_shared_memory_segment_failure(message: str, sets: bool) -> None:
    causes, facts = _scan(message)
    assert "nccl.shm_too_small" in causes
    assert (facts.get("distributed", {}).get("shm_error") is True) is sets


def test_a_segment_refused_for_permission_is_no_full_dev_shm() -> None:
    # near-miss: the errno names a permission, not space
    causes, facts = _scan("NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 4096), "
           "error: Permission denied (13)")
    assert "shm_error" not in facts.get("distributed", {})


def test_a_missing_verbs_provider_is_evidence_of_the_socket_fallback() -> None:
    # rdma-core libibverbs/init.c: the HCA is there, its provider library is not
    causes, facts = _scan("libibverbs: Warning: no userspace device-specific driver found for "
           "/sys/class/infiniband_verbs/uverbs0")
    assert "nccl.ib_fallback_tcp" in causes


def test_unwrapped_joins_only_continued_sentences() -> None:
    from kb.readers.signatures import unwrapped

    assert unwrapped("killed by signal: Bus\nerror. It is") == "killed by signal: Bus error. It is"
    assert unwrapped("Resource exhausted: Out \nof memory") == "Resource exhausted: Out of memory"
    # a new line that starts a new record stays a new line
    assert unwrapped("step 1\nStep 2\n[rank0] x\n\nloss") == "step 1\nStep 2\n[rank0] x\n\nloss"
    # a re-spaced paste reads with single spaces; leading indentation stays
    assert unwrapped("Function  'SqrtBackward'  returned nan") == "Function 'SqrtBackward' returned nan"
    assert unwrapped("    - 1/0: x") == "    - 1/0: x"


def test_a_quoted_message_with_doubled_spaces_still_counts() -> None:
    # xuelunshen/rfnet issue 4: the message in the reporter's words, re-spaced by the page
    rep = kb.diagnose({"symptom_text": "problems like this:\nRuntimeError :  Function  'SqrtBackward'  "
                                       "returned nan values in its 0th output."})
    assert rep.hypotheses[0].cause_id == "numerics.log_sqrt_at_zero"


def test_a_hard_wrapped_message_still_matches() -> None:
    # the DataLoader message as pasted from a narrow terminal (fastai/fastai issue thread): the
    # line breaks fall inside the message
    text = ("RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus\n"
            "error. It is possible that dataloader's workers are out of shared\n"
            "memory. Please try to raise your shared memory limit.\n")
    rep = kb.diagnose(inputs=[text])
    assert [f.cause_id for f in rep.findings] == ["gpu_util.dev_shm_too_small"]


@pytest.mark.parametrize("message", [
    # vllm<0.10 start-up check, as printed and as a reporter retyped it (QwenLM/Qwen3 issue thread)
    "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
    "stored in KV cache (7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
    "ValueError : the model's max seq len (32768) is larger than the maxinum number of tokens that can be "
    "stored in KV cache, Try increasing 'gpu_memory_utilization'",
])
def test_the_kv_cache_start_up_check(message: str) -> None:
    causes, _ = _scan(message)
    assert "oom.kv_cache_max_model_len" in causes


@pytest.mark.parametrize(("message", "fires"), [
    # torch/csrc/distributed/c10d/socket.cpp: the TCPStore client's connect warning
    ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:255.255.0.0]:29500 "
     "(errno: 110 - Connection timed out).", True),
    ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node1]:29500 "
     "(errno: 111 - Connection refused).", True),
    # near-miss: printed while rank 0 is still starting on localhost, the job then runs
    ("[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:18630 "
     "(errno: 99 - Cannot assign requested address).", False),
])
def test_the_tcpstore_connect_warning(message: str, fires: bool) -> None:
    causes, facts = _scan(message)
    assert ("nccl.connect_refused" in causes) is fires
    assert "connect_failed" not in facts.get("distributed", {})  # evidence, never proof


@pytest.mark.parametrize(("text", "proof"), [
    # OpenShift / Kubernetes pod status after a kernel OOM kill
    ("    State:          Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n", True),
    # the shell's report of a SIGKILLed foreground job: evidence only
    ("Epoch 3: 41%|####      | 410/1000\nKilled\n", False),
    # bash's job table for a background job that got SIGKILL (jobs.c: job number, status, command)
    ("Epoch 3: 41%|####      | 410/1000\n[1]+  Killed                  nohup python3 train.py\n", False),
])
def test_killed_jobs(text: str, proof: bool) -> None:
    causes, facts = _scan(text)
    assert "oom.host_ram_oom" in causes
    assert (facts.get("oom", {}).get("host_oom_killed") is True) is proof


@pytest.mark.parametrize(("text", "fires"), [
    # Ray's memory monitor, as ray.get raises it (docs: ray-core/scheduling/ray-oom-prevention)
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
     "Memory on the node (IP: 10.0.62.231, ID: e5d9) where the task (task ID: 4353, name=load, "
     "pid=11362, memory used=1.25GB) was running was 32.53GB / 33.28GB (0.977449), which exceeds "
     "the memory usage threshold of 0.95.", True),
    # the same monitor ending an actor
    ("(raylet) Actor was killed due to the node running low on memory.", True),
    # a CUDA OOM raised inside a Ray task is the GPU's, not the node's RAM
    ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::train() torch.OutOfMemoryError: CUDA out "
     "of memory. Tried to allocate 2.00 GiB", False),
])
def test_rays_memory_monitor(text: str, fires: bool) -> None:
    causes, facts = _scan(text)
    assert (facts.get("oom", {}).get("host_oom_killed") is True) is fires
    assert ("oom.host_ram_oom" in causes) is fires


@pytest.mark.parametrize(("text", "fires"), [
    # vLLM's ModelConfig._verify_quantization, as a v0.5.4 server logged it
    ("WARNING 08-09 13:57:44 config.py:254] gptq quantization is not fully optimized yet. The speed can be "
     "slower than non-quantized models.", True),
    # SGLang prints the same words for its own slow methods
    ("[2025-09-28 17:07:09 TP0] mxfp4 quantization is not fully optimized yet. The speed can be slower than "
     "non-quantized models.", True),
    # vLLM's gptq_marlin.py: an explicit --quantization gptq forced the slow kernel
    ("INFO 09-24 15:46:11 gptq_marlin.py:112] Detected that the model can run with gptq_marlin, however you "
     "specified quantization=gptq explicitly, so forcing gptq. Use quantization=gptq_marlin for faster inference",
     True),
    # bitsandbytes Linear4bit.forward: 4-bit layers computing in the float32 default
    ("UserWarning: Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32 "
     "(default). This will lead to slow inference or training speed.", True),
    # near-misses: vLLM converting the checkpoint to the fast kernel itself, and a plain FP8 server
    ("INFO 09-24 15:46:11 gptq_marlin.py:108] The model is convertible to gptq_marlin during runtime. Using "
     "gptq_marlin kernel.", False),
    ("INFO 05-01 10:00:00 fp8.py:52] Detected fp8 checkpoint. Please note that the format is experimental.",
     False),
    # AutoGPTQ's qlinear_cuda.py at import, as a LangChain app logged it: the kernels did not load
    ("INFO    - Loading gptq quantized models...\nWARNING - CUDA extension not installed.", True),
    # near-misses: another project's extension, and an error that names the CUDA extension only
    ("Warning: mlp_cuda extension not installed. Run: python setup.py install", False),
    ("RuntimeError: CUDA extension not available", False),
])
def test_slow_quantized_kernels(text: str, fires: bool) -> None:
    causes, facts = _scan(text)
    assert (facts.get("inference", {}).get("quant_kernel_slow") is True) is fires
    assert ("inference.quant_kernel_slow" in causes) is fires


def test_data_parallels_gather_warning() -> None:
    # torch/nn/parallel/_functions.py Gather.forward, as HF Trainer on two visible GPUs prints it
    causes, facts = _scan("/opt/conda/lib/python3.6/site-packages/torch/nn/parallel/_functions.py:58: UserWarning: "
                          "Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                          "unsqueeze and return a vector.")
    assert "gpu_util.dataparallel_single_process" in causes
    assert facts["distributed"]["single_process_multi_gpu"] is True
    # near-miss: DDP's own messages name no DataParallel
    causes, _ = _scan("[rank0]: Reducer buckets have been rebuilt in this iteration.")
    assert "gpu_util.dataparallel_single_process" not in causes


@pytest.mark.parametrize(("text", "fires"), [
    # accelerate/state.py's __repr__, as print(accelerator.state) shows it after a plain python start
    ("Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda\n", True),
    # Python 3.11+ formats the str enum with its class name
    ("Distributed environment: DistributedType.NO\nNum processes: 1\n", True),
    # near-misses: a launched job (MULTI_GPU), and the same words in a sentence of another kind
    ("Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 4\nProcess index: 0\n", False),
    ("Distributed environment: DistributedType.MULTI_GPU  Backend: nccl\nNum processes: 8\n", False),
])
def test_accelerates_state_without_a_launch(text: str, fires: bool) -> None:
    causes, facts = _scan(text)
    assert ("gpu_util.single_process_launch" in causes) is fires
    assert (facts.get("distributed", {}).get("world_size") == 1) is fires


def test_killed_inside_a_sentence_is_not_the_shells_report() -> None:
    causes, _ = _scan("INFO worker Killed process group cleanly after shutdown\n")
    assert "oom.host_ram_oom" not in causes
    # a job that ended with another status in bash's table is no SIGKILL
    causes, _ = _scan("[2]-  Terminated              nohup python3 train.py\n[1]+  Done  python eval.py\n")
    assert "oom.host_ram_oom" not in causes


@pytest.mark.parametrize(("link_layer", "counts"), [
    ("Ethernet", True),     # RoCE: a GID the peer cannot route to is the usual reason
    (None, True),           # link layer not known: still evidence
    ("InfiniBand", False),  # near-miss: on IB the same error is a link or fabric fault
])
def test_older_completion_error_counts_for_the_gid_only_on_roce(link_layer: str | None, counts: bool) -> None:
    # nccl<2.19 net_ib.cc: "NET/IB : Got completion with error %d, opcode %d, len %d, vendor err %d"
    text = "node1:1234:1300 [0] NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129\n"
    if link_layer:
        text += f"\t\t\tlink_layer:\t\t{link_layer}\n"
    rep = kb.diagnose(inputs=[text])
    hyps = {h.cause_id: h for h in rep.hypotheses}
    assert hyps["nccl.roce_gid_index"].signature is counts if "nccl.roce_gid_index" in hyps else not counts


@pytest.mark.parametrize(("message", "cause"), [
    # jax/_src/core.py, concretization_function_error (jax >= 0.4.14)
    ("jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].",
     "compile.python_control_flow"),
    # older jax: the same case as a ConcretizationTypeError
    ("jax._src.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
     "expected: Traced<ShapedArray(bool[])>with<DynamicJaxprTrace(level=0/1)>\nThe problem arose with the "
     "`bool` function.", "compile.python_control_flow"),
    # jax/_src/pjit.py, explain_tracing_cache_miss (jax_explain_cache_misses=True)
    ("WARNING:jax._src.pjit:TRACING CACHE MISS at loop.py:12 (step) because:\n  never seen function:\n"
     "    <lambda> id=140 defined at loop.py:12\n  but seen another function defined on the same line; "
     "maybe the function is\n  being re-defined repeatedly, preventing caching?",
     "compile.recompile_other_guard"),
])
def test_jax_tracing_messages(message: str, cause: str) -> None:
    causes, _ = _scan(message)
    assert cause in causes


@pytest.mark.parametrize("message", [
    # another conversion of a tracer (int(), not bool()) is no Python branch
    "jax.errors.TracerIntegerConversionError: The __index__() method was called on traced array with shape int32[]",
    # a first cache miss names a function never seen, not one re-created
    "TRACING CACHE MISS at loop.py:12 (step) because:\n  never seen function:\n    step id=140 defined at loop.py:3",
])
def test_jax_tracing_near_misses(message: str) -> None:
    causes, _ = _scan(message)
    assert not {"compile.python_control_flow", "compile.recompile_other_guard"} & set(causes)


def test_a_gpu_pools_bad_alloc_is_no_host_oom() -> None:
    # RAPIDS RMM's device-memory error carries the name std::bad_alloc too, followed by its reason
    causes, facts = _scan("MemoryError: std::bad_alloc: out_of_memory: CUDA error at: "
                          "rmm/mr/device/cuda_memory_resource.hpp:70: cudaErrorMemoryAllocation out of memory")
    assert "oom.host_ram_oom" not in causes and "host_alloc_failed" not in facts.get("oom", {})


def test_lightning_tensor_core_notice_states_matmul_precision_highest() -> None:
    # lightning/fabric/accelerators/cuda.py, _check_cuda_matmul_precision: printed only on compute
    # capability >= 8 while torch.get_float32_matmul_precision() == "highest"
    causes, facts = _scan(
        "You are using a CUDA device ('NVIDIA GeForce RTX 3060') that has Tensor Cores. To properly utilize them, "
        "you should set `torch.set_float32_matmul_precision('medium' | 'high')` which will trade-off precision for "
        "performance. For more details, read https://pytorch.org/docs/stable/generated/"
        "torch.set_float32_matmul_precision.html#torch.set_float32_matmul_precision")
    assert "gpu_util.tf32_disabled" in causes
    assert facts["training"]["float32_matmul_precision"] == "highest"
    # near-miss: code that already sets the precision quotes the call, not the notice
    causes, _ = _scan("torch.set_float32_matmul_precision('high')  # use Tensor Cores")
    assert "gpu_util.tf32_disabled" not in causes


@pytest.mark.parametrize(("message", "cause", "fires"), [
    # nccl src/misc/shmutils.cc (src/os/linux.cc from 2.27): the WARN prefix cut off a paste
    ("Error while creating shared memory segment /dev/shm/nccl-pZafXL (size 7340384)", "nccl.shm_too_small", True),
    ("host:123:456 [0] NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-Ab12 (size 9637888)",
     "nccl.shm_too_small", True),
    # near-miss: another program's segment
    ("Error while creating shared memory segment /dev/shm/mylib-12 (size 4096)", "nccl.shm_too_small", False),
    # torch.distributed.elastic's failure summary and DeepSpeed's launcher for a rank killed by SIGBUS
    ("  exitcode  : -7 (pid: 10)\n  error_file: <N/A>\n  traceback : Signal 7 (SIGBUS) received by PID 10",
     "nccl.shm_too_small", True),
    ("[launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'main.py'] exits with return code = -7",
     "nccl.shm_too_small", True),
    # near-miss: another signal (SIGKILL, the OOM killer's)
    ("  exitcode  : -9 (pid: 10)\n  traceback : Signal 9 (SIGKILL) received by PID 10", "nccl.shm_too_small", False),
    # JAX 0.1-0.2 jax/abstract_arrays.py, concretization_err_msg
    ("TypeError: Abstract value passed to `bool`, which requires a concrete value. The function to be "
     "transformed can't be traced at the required level of abstraction.", "compile.python_control_flow", True),
    # near-miss: an int needed (a shape or a range), not a Python condition
    ("TypeError: Abstract value passed to `int`, which requires a concrete value.", "compile.python_control_flow", False),
])
def test_messages_of_older_releases_and_cut_prefixes(message: str, cause: str, fires: bool) -> None:
    causes, _ = _scan(message)
    assert (cause in causes) is fires


@pytest.mark.parametrize(("message", "fires"), [
    # apex/fp16_utils/fp16_optimizer.py, and NVIDIA/tacotron2's copy without the new scale
    ("OVERFLOW! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0", True),
    ("OVERFLOW! Skipping step. Attempted loss scale: 4294967296", True),
    # near-misses: DeepSpeed's own wording is its own signature; a word "overflow" is none
    ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
     False),
    ("the attention scores overflow in fp16", False),
])
def test_apex_fp16_optimizer_overflow(message: str, fires: bool) -> None:
    causes, facts = _scan(message)
    apex = fires and "numerics.grad_scaler_skipping" in causes
    assert apex is fires
    assert (facts.get("numerics", {}).get("dtype") == "fp16") is fires


def test_horovods_stall_inspector_names_ranks_out_of_step() -> None:
    # horovod/common/stall_inspector.cc, as a rank logs it
    causes, _ = _scan(
        "[2021-03-01 10:00:00.000000: W /tmp/pip-req-build/horovod/common/stall_inspector.cc:107] "
        "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
        "waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are "
        "trying to submit different tensors or that only subset of ranks is submitting tensors, which will "
        "cause deadlock.\nMissing ranks:\n0: [allreduce.loss]\n")
    assert "nccl.rank_desync_timeout" in causes
    # near-miss: the stall check's own setting named in a config dump is no stall
    causes, _ = _scan("HOROVOD_STALL_CHECK_TIME_SECONDS=120\nHOROVOD_STALL_SHUTDOWN_TIME_SECONDS=0\n")
    assert "nccl.rank_desync_timeout" not in causes


@pytest.mark.parametrize(("line", "cause"), [
    # PyTorch/XLA's metrics analysis (tests/fixtures/formats/torch_xla_debug.txt, its docs' own
    # example; both transfer metric names, before and after the PJRT runtime)
    ("pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a "
     "GitHub issue with the above op lowering requests.", "compile.unsupported_op_break"),
    ("pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps", "compile.dynamic_shapes"),
    ("pt-xla-profiler: TransferFromServerTime too frequent: 11 counts during 11 steps", "compile.host_sync"),
    ("pt-xla-profiler: TransferFromDeviceTime too frequent: 12 counts during 12 steps", "compile.host_sync"),
    # near-misses: its other findings name none of these causes
    ("pt-xla-profiler: CompileTime too slow: longest instance took 05m12s. Please open a GitHub issue "
     "with the graph dump for our team to optimize.", None),
    ("pt-xla-profiler: ExecuteTime too slow: longest instance took 45s.", None),
])
def test_pytorch_xla_metrics_analysis(line: str, cause: str | None) -> None:
    m = Matcher()
    m.scan(line)
    assert [h.cause for h in m.found()] == ([cause] if cause else [])


def test_pytorch_xla_debug_output_is_a_compile_problem(tmp_path) -> None:
    from pathlib import Path

    fixture = Path(__file__).parent.parent / "fixtures" / "formats" / "torch_xla_debug.txt"
    rep = kb.diagnose(inputs=[str(fixture)])
    assert rep.branches[:1] == ["compile"]
    found = {h.cause_id for h in rep.hypotheses[:3]}
    assert {"compile.unsupported_op_break", "compile.dynamic_shapes", "compile.host_sync"} <= found


@pytest.mark.parametrize(("line", "fires"), [
    # NCCL's bootstrap when no interface matches NCCL_SOCKET_IFNAME (src/bootstrap.cc), as NCCL
    # prints it and as a JAX error quotes it
    ("node1:123:123 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found", True),
    ("invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'", True),
    # near-miss: the interface it did find
    ("node1:123:123 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", False),
    # Gloo's enforce when GLOO_SOCKET_IFNAME (or the host name) has no address here
    # (gloo/transport/tcp/device.cc), for an interface and for a host name
    ("RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
     "nullptr. Unable to find address for: ib0", True),
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:222] rp != nullptr. "
     "Unable to find address for: node-17", True),
    # near-miss: another program's lookup failure in the same words
    ("Unable to find address for: www.example.com", False),
])
def test_no_socket_interface_is_a_wrong_ifname(line: str, fires: bool) -> None:
    m = Matcher()
    m.scan(line)
    assert ("nccl.socket_ifname_wrong" in [h.cause for h in m.found()]) is fires


@pytest.mark.parametrize(("line", "fires"), [
    # Lightning's num_workers check, in its 1.x and current wordings
    ("pytorch_lightning/utilities/distributed.py:37: UserWarning: The dataloader, val dataloader 0, does not "
     "have many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument`", True),
    ("lightning/pytorch/trainer/connectors/data_connector.py:424: The 'train_dataloader' does not have many "
     "workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument` to "
     "`num_workers=31` in the `DataLoader` to improve performance.", True),
    # near-miss: another Lightning notice about the loaders
    ("The number of training batches (4) is smaller than the logging interval Trainer(log_every_n_steps=50).", False),
])
def test_lightnings_few_workers_warning(line: str, fires: bool) -> None:
    m = Matcher()
    m.scan(line)
    assert ("gpu_util.dataloader_workers" in [h.cause for h in m.found()]) is fires


@pytest.mark.parametrize(("text", "fires"), [
    # icefall's scan_pessimistic_batches_for_oom (egs/*/ASR/*/train.py): the batch lhotse's
    # find_pessimistic_batches chose for its longest single utterance ran out of memory
    ("2024-12-19 16:58:57,481 ERROR [train.py:1345] Your GPU ran out of memory with the current "
     "max_duration setting. We recommend decreasing max_duration and trying again.\n"
     "Failing criterion: single_longest_cut (=162.26) ...", True),
    ("Failing criterion: single_longest_supervision (=95.3) ...", True),
    # near-misses: the batch was too large as a whole, by total duration or by count
    ("Failing criterion: largest_batch_cuts_duration (=1200.0) ...", False),
    ("Failing criterion: max_num_cuts (=512) ...", False),
])
def test_icefalls_longest_utterance_scan(text: str, fires: bool) -> None:
    causes, _ = _scan(text)
    assert ("oom.long_input_at_step" in causes) is fires


@pytest.mark.parametrize(("text", "dtype"), [
    # stable-diffusion-webui modules/devices.py test_for_nans: the precision sentence is added
    # only when the VAE / UNet runs in half (not --no-half-vae / --no-half)
    ("modules.devices.NansException: A tensor with all NaNs was produced in VAE. This could be because "
     "there's not enough precision to represent the picture. Try adding --no-half-vae commandline "
     "argument to fix this. Use --disable-nan-check commandline argument to disable this check.", "fp16"),
    ("NansException: A tensor with all NaNs was produced in Unet. This could be either because there's "
     "not enough precision to represent the picture, or because your video card does not support half "
     "type.", "fp16"),
    # modules/processing.py (Automatically revert VAE to 32-bit floats), the line after the first
    ("A tensor with all NaNs was produced in VAE.\nWeb UI will now convert VAE into 32-bit float and "
     "retry.\nTo disable this behavior, disable the 'Automatically revert VAE to 32-bit floats' setting.",
     "fp16"),
    # kohya-ss/sd-scripts: NaN in what the VAE encoder made of the training images
    ("NaN found in latents, replacing with zeros", None),
    ("RuntimeError: NaN detected in latents: /data/train/10_sks/img_0042.png", None),
])
def test_stable_diffusion_nan_checks(text: str, dtype: str | None) -> None:
    causes, facts = _scan(text)
    assert "numerics.fp16_overflow" in causes
    assert facts["numerics"]["nan_source"] == "activation"
    assert facts["numerics"].get("dtype") == dtype


@pytest.mark.parametrize("text", [
    # the same check under --no-half-vae says nothing of precision: no half VAE to blame
    "A tensor with all NaNs was produced in VAE. Use --disable-nan-check commandline argument to "
    "disable this check.",
    "A tensor with all NaNs was produced. Use --disable-nan-check commandline argument to disable this check.",
])
def test_stable_diffusion_nan_check_near_misses(text: str) -> None:
    causes, _ = _scan(text)
    assert "numerics.fp16_overflow" not in causes


# the framework's own lines saying the job runs on the CPU, as public logs quote them
# (TensorFlow gpu_device.cc, JAX xla_bridge.py, PyTorch c10/cuda/CUDAFunctions.cpp, Lightning
# trainer/setup.py), and lines of a job that does run on the GPU
@pytest.mark.parametrize(("line", "on_cpu"), [
    ("2020-03-09 14:02:19.249951: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1592] Cannot dlopen "
     "some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if "
     "you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to "
     "download and setup the required libraries for your platform.\nSkipping registering GPU devices...", True),
    ("WARNING:jax._src.lib.xla_bridge:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 "
     "and rerun for more info.)", True),
    ("An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling "
     "back to cpu.", True),
    ("/usr/local/lib/python3.8/dist-packages/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: "
     "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
     "from http://www.nvidia.com/Download/index.aspx (Triggered internally at  "
     "/pytorch/c10/cuda/CUDAFunctions.cpp:100.)", True),
    ("torch/cuda/__init__.py:129: UserWarning: CUDA initialization: The NVIDIA driver on your system is too "
     "old (found version 11040). Please update your GPU driver by downloading and installing a new version "
     "from the URL: http://www.nvidia.com/Download/index.aspx", True),
    # cudaGetDeviceCount failed: PyTorch counts no device
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
     "functions before calling NumCudaDevices() that might have already set an error? Error 804: forward "
     "compatibility was attempted on non supported HW", True),
    ("GPU available: True (cuda), used: False", True),
    ("GPU available: False, used: False", True),
    ("lightning/pytorch/trainer/setup.py:177: GPU available but not used. You can set it by doing "
     "`Trainer(accelerator='gpu')`.", True),
    # openai-whisper's transcribe() with its model on the CPU (whisper/transcribe.py)
    ("/usr/local/lib/python3.10/site-packages/whisper/transcribe.py:114: UserWarning: FP16 is not "
     "supported on CPU; using FP32 instead\n  warnings.warn(\"FP16 is not supported on CPU; using FP32 "
     "instead\")", True),
    ("whisper/transcribe.py:126: UserWarning: Performing inference on CPU when CUDA is available\n"
     "  warnings.warn(\"Performing inference on CPU when CUDA is available\")", True),
    # ColabFold's device check (colabfold/batch.py), as colabfold_batch logs it
    ("2024-01-18 10:21:07,553 WARNING: no GPU detected, will be using CPU", True),
    # near-misses: the job is on the GPU
    ("2024-01-18 10:21:07,553 Running on GPU", False),
    ("GPU available: True (cuda), used: True", False),
    ("GPU available: True, used: True", False),
    ("2021-08-06 21:37:14.147021: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device "
     "/job:localhost/replica:0/task:0/device:GPU:0 with 9630 MB memory", False),
    # a CUDA call's error that is no statement about the devices
    ("RuntimeError: CUDA error: an illegal memory access was encountered", False),
])
def test_the_framework_saying_it_runs_on_the_cpu(line: str, on_cpu: bool) -> None:
    assert _stated(line).get("training", {}).get("runs_on_cpu", False) is on_cpu


# lines of a job that does run on its GPU (TensorFlow gpu_device.cc, Lightning trainer/setup.py,
# nvprof's summary as the CUDA profiler guide shows it): they state GPU work and are no message
# of the CPU cause; nvprof's summary of a process that ran no kernel states nothing
@pytest.mark.parametrize(("line", "gpu"), [
    ("2018-05-02 10:11:12.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1053] Created "
     "TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 10765 MB memory) -> physical "
     "GPU (device: 0, name: GeForce GTX 1080 Ti, pci bus id: 0000:01:00.0, compute capability: 6.1)", True),
    ("2021-08-06 21:37:14.147021: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device "
     "/job:localhost/replica:0/task:0/device:GPU:0 with 9630 MB memory:  -> device: 0, name: Tesla T4", True),
    ("GPU available: True (cuda), used: True", True),
    ("GPU available: True, used: True", True),
    ("==70253== Profiling result:\n            Type  Time(%)      Time     Calls       Avg       Min       "
     "Max  Name\n GPU activities:   62.58%  3.1040us         2  1.5520us  1.3440us  1.7600us  [CUDA memcpy HtoD]",
     True),
    # near-misses: nvprof found no kernel, the job is on the CPU, the device is the CPU
    ("==28574== Profiling result:\nNo kernels were profiled.\n\n==28574== API calls:\nTime(%)      Time     "
     "Calls       Avg       Min       Max  Name", False),
    ("GPU available: True (cuda), used: False", False),
    ("I tensorflow/core/common_runtime/direct_session.cc] Device mapping: no known devices.", False),
])
def test_a_line_of_gpu_work_states_it_and_names_no_cause(line: str, gpu: bool) -> None:
    facts = _stated(line)
    assert facts.get("training", {}).get("gpu_work_seen", False) is gpu
    if gpu:
        assert "gpu_util.no_gpu_in_use" not in facts.get("signatures", [])


def _stated(line: str) -> dict:
    """The facts the knowledge's signatures state for one line."""
    m = Matcher()
    m.scan(line)
    facts: dict = {}
    apply(facts, m.found(), [], "t")
    return facts


# a CUDA library that could not create its handle, as TensorFlow/XLA print it (stream_executor
# cuda_dnn.cc, cuda_blas.cc), and PyTorch's own message (ATen/cuda/CublasHandlePool.cpp)
@pytest.mark.parametrize(("line", "failed"), [
    ("2020-05-01 10:00:05.456: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn "
     "handle: CUDNN_STATUS_INTERNAL_ERROR", True),
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED",
     True),
    ("E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_blas.cc:232] failed to create cublas handle: "
     "CUBLAS_STATUS_NOT_INITIALIZED", True),
    # near-misses: cuDNN not initialised is a driver or version question, a failing GEMM is no
    # handle creation, and PyTorch (which keeps no pool up front) failing to create one is a
    # plain out-of-memory
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED",
     False),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
     "&alpha, a, lda, b, ldb, &beta, c, ldc)`", False),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", False),
])
def test_a_cuda_library_without_its_handle(line: str, failed: bool) -> None:
    assert _stated(line).get("oom", {}).get("library_handle_failed", False) is failed


# PCIe peer-to-peer blocked by the platform: pciutils' lspci ACS control line (ls-ecaps.c), the
# kernel's IOMMU fault lines (drivers/iommu/amd/iommu.c, drivers/iommu/intel/dmar.c), CUDA's
# simpleP2P check and nccl-tests' result check (src/common.cu)
@pytest.mark.parametrize(("line", "fact"), [
    ("\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-",
     "acs_enabled"),
    ("[  262.094625] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 "
     "address=0x64a7f000 flags=0x0000]", "iommu_faults"),
    ("AMD-Vi: Event logged [IO_PAGE_FAULT device=0a:00.0 domain=0x001d address=0x000000000637c000 "
     "flags=0x0000]", "iommu_faults"),
    ("[ 1031.5] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0xfbe00000 [fault reason "
     "0x06] PTE Read access is not set", "iommu_faults"),
    ("DMAR: [DMA Write] Request device [04:00.0] fault addr 7f000 [fault reason 05] PTE Write access is not set",
     "iommu_faults"),
    ("Verification error @ element 1: val = 0.000000, ref = 4.000000", "p2p_check_failed"),
    ("# Out of bounds values : 48 FAILED", "p2p_check_failed"),
])
def test_platform_blocking_peer_to_peer(line: str, fact: str) -> None:
    assert _stated(line).get("distributed", {}).get(fact) is True


@pytest.mark.parametrize("line", [
    # near-misses: ACS off, only ACS capability listed, a clean nccl-tests run, an IOMMU that is
    # merely on (no fault), a device-side GPU page fault of the AMD GPU driver
    "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-",
    "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+",
    "# Out of bounds values : 0 OK",
    "[    0.512] AMD-Vi: Interrupt remapping enabled",
    "[    0.498] DMAR: IOMMU enabled",
    "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:158 vmid:0 pasid:0)",
])
def test_platform_peer_to_peer_near_misses(line: str) -> None:
    assert not any(_stated(line).get("distributed", {}).get(f)
                   for f in ("acs_enabled", "iommu_faults", "p2p_check_failed"))


@pytest.mark.parametrize(("line", "fires"), [
    # FastChat's and LLaVA's preprocess, which masks the whole sample before printing it
    ("WARNING: tokenization mismatch: 385 vs. 399. (ignored)", True),
    ("WARNING: tokenization mismatch: 207 vs. 221.  (ignored)", True),
    # near-miss: a tokenizer's own notice about its vocabulary
    ("You are using the default legacy behaviour of the <class 'transformers.models.llama.tokenization_llama.LlamaTokenizer'>", False),
])
def test_a_masked_sample_is_a_zero_token_loss_message(line: str, fires: bool) -> None:
    m = Matcher()
    m.scan(line)
    assert ("numerics.zero_token_loss" in [h.cause for h in m.found()]) is fires

