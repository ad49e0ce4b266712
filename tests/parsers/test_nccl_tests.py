"""nccl-tests output: ranks, hosts and the best bus bandwidth, in the layouts nccl-tests' common.cu
prints ("#  Rank %2d Group %2d Pid %6d on %10s device %2d [...] %s", a header naming the columns,
a row per size)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kb
from kb.parsers import detect_format, nccl_tests
from kb.readers.regions import find_regions

# two GPUs of one host, the header without a root column (nccl-tests 2.17)
ONE_HOST = """\
# nccl-tests version 2.17.8
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  11155 on gpuserver2 device  0 [0000:02:00] Tesla V100-PCIE-16GB
#  Rank  1 Group  0 Pid  11155 on gpuserver2 device  1 [0000:03:00] Tesla V100-PCIE-16GB
#
#       size         count    type   redop     time   algbw   busbw  #wrong
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)
           8             2   float     sum    10.09    0.00    0.00       0
       65536         16384   float     sum    29.63    2.21    2.21       0
     1048576        262144   float     sum   165.33    6.34    6.34       0
   134217728      33554432   float     sum  18927.2    7.09    7.09       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 2.97489
"""

# four ranks on two hosts (mpirun -np 2 -pernode ... -g 2), the run failing before the table
TWO_HOSTS = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 3740409 on fengyun416 device  0 [0x01] NVIDIA RTX A6000
#  Rank  1 Group  0 Pid 3740409 on fengyun416 device  1 [0x07] NVIDIA RTX A6000
#  Rank  2 Group  0 Pid 3164639 on    fengyun device  0 [0x01] NVIDIA RTX A6000
#  Rank  3 Group  0 Pid 3164639 on    fengyun device  1 [0x05] NVIDIA RTX A6000
fengyun: Test NCCL failure common.cu:959 'internal error'
"""

# the host names left out of the paste: ranks of one process (one Pid) are on one host; the
# out-of-place and in-place columns both carry a busbw
NO_HOST_NAMES = """\
# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4349 on        device  0 [0x01] NVIDIA A100 80GB PCIe
#  Rank  1 Group  0 Pid   4349 on        device  1 [0x23] NVIDIA A100 80GB PCIe
#  Rank  2 Group  0 Pid   4349 on        device  2 [0x41] NVIDIA A100 80GB PCIe
#  Rank  3 Group  0 Pid   4349 on        device  3 [0x61] NVIDIA A100 80GB PCIe
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    33554432       8388608     float     sum      -1   6301.2    5.33    7.99      0   6290.5    5.33    8.00      0
   134217728      33554432     float     sum      -1    25112    5.34    8.02      0    25196    5.33    7.99      0
"""


@pytest.mark.parametrize(("text", "facts"), [
    (ONE_HOST, {"distributed": {"world_size": 2, "nnodes": 1, "bus_bandwidth_gbps": 7.09},
                "gpu": {"name": "Tesla V100-PCIE-16GB"}}),
    # with its failure line the file is read by the incident reader: the log line says NCCL
    (TWO_HOSTS, {"distributed": {"world_size": 4, "nnodes": 2, "backend": "nccl"},
                 "gpu": {"name": "NVIDIA RTX A6000"}}),
    (NO_HOST_NAMES, {"distributed": {"world_size": 4, "nnodes": 1, "bus_bandwidth_gbps": 8.02},
                     "gpu": {"name": "NVIDIA A100 80GB PCIe"}}),
])
def test_ranks_hosts_and_best_bus_bandwidth(text: str, facts: dict) -> None:
    assert detect_format(text) == "nccl_tests"
    assert nccl_tests.parse(text.splitlines(), "t").facts == facts


def test_small_messages_and_the_average_are_no_bandwidth() -> None:
    # rows under 1 MiB measure latency; the closing average mixes every size
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
            "           8             2     float     sum      -1    37.59    0.00    0.00      0\n"
            "      524288        131072     float     sum      -1    60.12    8.72   15.26      0\n"
            "# Avg bus bandwidth    : 5.37916\n")
    assert "bus_bandwidth_gbps" not in nccl_tests.parse(text.splitlines(), "t").facts.get("distributed", {})


def test_a_damaged_row_is_no_row() -> None:
    # a "size" too long to be one (a paste run together) is skipped, not read and not raised on
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
            + "9" * 5000 + "  2  float  sum  -1  1.0  1.0  99.0  0\n")
    assert nccl_tests.parse_output(text.splitlines(), "t").facts == {}
    line = "#  Rank " + "1" * 5000 + " Group  0 Pid  11155 on gpuserver2 device  0 [0x02] Tesla V100"
    assert nccl_tests.parse_output([line], "t").facts == {}


def test_processes_of_unnamed_hosts_tell_no_node_count() -> None:
    # one process per GPU with the names left out: they may be on one host or on several
    text = ("#  Rank  0 Group  0 Pid  47689 on        device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
            "#  Rank  1 Group  0 Pid  40144 on        device  0 [0x07] NVIDIA A100-SXM4-80GB\n")
    assert nccl_tests.parse(text.splitlines(), "t").facts["distributed"] == {"world_size": 2}


def test_nccl_info_lines_inside_stay_log() -> None:
    # NCCL_DEBUG=INFO puts NCCL's own lines between the device lines and the table: they end the
    # region (the log scanner reads them), and the table is a region of its own
    head, table = NO_HOST_NAMES.split("#\n#   ", 1)
    lines = (head + "node:4349:4349 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n#   "
             + table).splitlines()
    regions = [r for r in find_regions(lines) if r.fmt == "nccl_tests"]
    assert len(regions) == 2
    assert not any("NCCL INFO" in x for r in regions for x in lines[r.start:r.end])


def test_one_host_rules_out_the_fabric_between_nodes() -> None:
    # the paste shows every rank on one host: the bandwidth between nodes cannot be the cause
    rep = kb.diagnose(inputs=[NO_HOST_NAMES], symptom="nccl bandwidth is much lower than expected")
    assert "nccl.cross_node_bandwidth" not in [h.cause_id for h in rep.hypotheses]
    assert "nccl.cross_node_bandwidth" in [r.cause_id for r in rep.ruled_out]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ONE_HOST.splitlines() + TWO_HOSTS.splitlines()), max_size=30))
def test_any_mix_of_its_lines_parses_to_valid_facts(lines: list[str]) -> None:
    from kb.facts import Facts

    Facts.model_validate(nccl_tests.parse(lines, "p").facts)
