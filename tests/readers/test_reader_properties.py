"""Properties of the incident reader: it never raises on arbitrary text, its result always
validates, it is bounded on hostile input, and block-wise scanning (Tap) finds the same
signatures as reading the whole text."""

from __future__ import annotations

import io
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.facts import Facts
from kb.parsers.base import ParseResult
from kb.readers import incident
from kb.readers.signatures import Matcher
from tests.parsers._fixtures import FIXTURES

SAMPLES = sorted(p.read_text(encoding="utf-8") for p in FIXTURES.iterdir() if p.suffix != ".md")
#: pieces a paste is made of, so that random mixes hit the region and line readers
PIECES = [
    "torchrun --nnodes 2 --nproc_per_node=8 train.py --bf16 --dataloader_num_workers 4 \\\n",
    "vllm serve m --gpu-memory-utilization 0.9 --enforce-eager\n",
    "export PYTORCH_ALLOC_CONF=expandable_segments:True\n",
    "Namespace(max_num_seqs=256, enable_prefix_caching=False)\n",
    "GPU models and configuration: \nGPU 0: NVIDIA H100\n",
    "TrainingArguments(\nbf16=True,\n", "+-----+\n| NVIDIA-SMI 550 |\n", "avg-cpu:  %user\n",
    "Thread 0x7F (active): \"MainThread\"\n    f (a.py:1)\n", "# HELP vllm:x y\n",
    "============ Serving Benchmark Result ============\n", "CUDA out of memory. Tried to allocate ",
    # configs: a DeepSpeed JSON's lines and an Accelerate YAML's
    "{\n", '  "zero_optimization": {"stage": 3},\n', "}\n", "mixed_precision: bf16\n",
    "deepspeed_config:\n  zero_stage: 3\n", "num_machines: 2\n",
]
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(text: str) -> ParseResult:
    res = incident.parse(io.StringIO(text), "prop")
    Facts.model_validate(res.facts)
    return res


@_SETTINGS
@given(st.text(max_size=2000))
def test_random_text(text: str) -> None:
    _read(text)


@_SETTINGS
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=40), max_size=30))
def test_random_mixes_of_paste_pieces(parts: list[str]) -> None:
    _read("".join(parts))


@_SETTINGS
@given(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=4), st.data())
def test_concatenated_and_cut_tool_outputs(samples: list[str], data: st.DataObject) -> None:
    text = "\nsome words in between\n".join(samples)
    cut = data.draw(st.integers(0, len(text)))
    _read(text[:cut])


@_SETTINGS
@given(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=3), st.integers(1, 4096))
def test_tap_blocks_find_what_the_whole_text_finds(samples: list[str], block: int) -> None:
    text = "\n".join(samples)
    whole = Matcher()
    whole.scan(text)
    parts = Matcher()
    start = 0
    while start < len(text):  # complete lines per block, as Tap hands them over
        end = text.find("\n", start + block)
        end = len(text) if end < 0 else end + 1
        parts.scan(text[start:end])
        start = end
    assert [h.cause for h in parts.found()] == [h.cause for h in whole.found()]


def test_hostile_input_is_bounded() -> None:
    # long lines full of a signature's literal that never match, plus literal-free noise:
    # the scan must stay linear (MAX_HITS, windowed matching), not backtrack per position
    line = ("CUDA out of memory. Tried to allocate " * 1500)[:60_000] + "\n"
    text = line * 40 + ("x" * 60_000 + "\n") * 40 + "torchrun " + "--a " * 5000 + "\n"
    t0 = time.perf_counter()
    _read(text)
    assert time.perf_counter() - t0 < 20


@given(st.text(alphabet=st.sampled_from("aZ( \t\n.:"), max_size=200))
@settings(max_examples=300, deadline=None)
def test_unwrapping_only_turns_line_breaks_into_spaces(text: str) -> None:
    from kb.readers.signatures import unwrapped

    out = unwrapped(text)
    # the same words in the same order, never more text, never a new line break
    assert out.split() == text.split()
    assert len(out) <= len(text) and out.count("\n") <= text.count("\n")
    # a blank line (a paragraph's end) is never joined across
    assert out.count("\n\n") == text.count("\n\n")
