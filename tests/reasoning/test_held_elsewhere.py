"""The OOM message's own arithmetic: memory the other processes on the GPU held (total - free -
this process, or - PyTorch's pool - the context in older messages) supports another process or
rank on the card when it exceeds the failed request, and counts against them when it does not."""

from __future__ import annotations

import kb

#: PyTorch 1.x wording: 2.75 GiB in PyTorch's pool, 26 MiB free, of 10.76 GiB: ~7 GiB elsewhere
OLD_ELSEWHERE = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB "
                 "total capacity; 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in "
                 "total by PyTorch)\n")
#: torch>=2.1 wording: this process holds almost all of the card
NEW_OWN = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a "
           "total capacity of 23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, "
           "this process has 20.81 GiB memory in use. Of the allocated memory 12.09 GiB is "
           "allocated by PyTorch, and 4.84 GiB is reserved by PyTorch but unallocated.\n")
#: torch>=2.1 wording, others hold 14 GiB (the "Process N" list left out)
NEW_ELSEWHERE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has "
                 "a total capacity of 31.36 GiB of which 471.69 MiB is free. Including non-PyTorch "
                 "memory, this process has 16.63 GiB memory in use. Of the allocated memory 15.03 "
                 "GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.\n")


def _evidence(rep: kb.Report) -> dict[str, float]:
    return {h.cause_id: h.evidence for h in rep.hypotheses}


def test_memory_held_elsewhere_points_to_another_process() -> None:
    for text in (OLD_ELSEWHERE, NEW_ELSEWHERE):
        rep = kb.diagnose(inputs=[text])
        assert rep.hypotheses[0].cause_id == "oom.other_process_on_gpu", text
        assert not rep.findings  # another job or this job's other ranks: a check decides


def test_memory_this_process_holds_counts_against_another_process() -> None:
    own = _evidence(kb.diagnose(inputs=[NEW_OWN]))
    elsewhere = _evidence(kb.diagnose(inputs=[NEW_ELSEWHERE]))
    assert own["oom.other_process_on_gpu"] < elsewhere["oom.other_process_on_gpu"]
    assert own["oom.other_process_on_gpu"] < 0


#: torch>=2.1 in a container: NVML gives host PIDs, so no entry is "this process" and the job is
#: one of the "Process N" entries. PyTorch's pool is 6.64 GiB of the 13.09 GiB in use: other
#: processes (here pytest-xdist workers on the same card) hold the rest
CONTAINER_ELSEWHERE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.11 GiB. GPU 0 has a total "
    "capacity of 14.74 GiB of which 1.65 GiB is free. Process 19066 has 6.79 GiB memory in use. "
    "Process 19069 has 514.00 MiB memory in use. Process 19060 has 4.93 GiB memory in use. "
    "Process 19063 has 894.00 MiB memory in use. Of the allocated memory 4.50 GiB is allocated "
    "by PyTorch, and 2.14 GiB is reserved by PyTorch but unallocated.\n")
#: near-miss: one "Process N" entry in a container is the job itself, holding the whole card
CONTAINER_OWN = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 147.75 MiB is free. Process 483452 has 78.98 GiB memory in "
    "use. Of the allocated memory 78.17 GiB is allocated by PyTorch, and 13.03 MiB is reserved by "
    "PyTorch but unallocated.\n")


def test_without_this_process_the_pool_and_the_context_are_the_job() -> None:
    rep = kb.diagnose(inputs=[CONTAINER_ELSEWHERE])
    assert rep.hypotheses[0].cause_id == "oom.other_process_on_gpu"
    assert not rep.findings
    own = _evidence(kb.diagnose(inputs=[CONTAINER_OWN]))
    assert own["oom.other_process_on_gpu"] < 0
