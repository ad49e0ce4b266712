"""Configuration files (DeepSpeed JSON, Accelerate and LLaMA-Factory YAML) pasted alone or among
other output: their settings become facts through the launch-flag table, their words are no
prose (a config's "bf16" names no NaN), and text that only looks like ``name: value`` lines (a
log's levels, an exception, lscpu / cpuinfo fields, a one-line JSON record, a JSON of losses)
is no config. Fixtures are the projects' own files (tests/fixtures/formats/SOURCES.md)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kb
from kb.inputs import load_inputs
from kb.inputs_blob import Blob
from kb.parsers import config_file
from kb.readers import incident
from kb.readers.regions import find_regions
from tests.parsers._fixtures import FIXTURES

# DeepSpeed's documented keys (https://www.deepspeed.ai/docs/config-json/), as a user writes them
DS_BF16_Z2 = """{
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 4,
  "gradient_clipping": 1.0,
  "bf16": { "enabled": true },
  "zero_optimization": {
    "stage": 2,
    "offload_optimizer": { "device": "cpu", "pin_memory": false }
  }
}
"""
# `accelerate config` writes default_config.yaml with these keys
ACCELERATE_DS = """compute_environment: LOCAL_MACHINE
deepspeed_config:
  gradient_accumulation_steps: 1
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: false
  zero_stage: 2
distributed_type: DEEPSPEED
mixed_precision: fp16
num_machines: 1
num_processes: 8
"""


def _facts(text: str) -> dict[str, Any]:
    return incident.parse(io.StringIO(text), "paste").facts


@pytest.mark.parametrize(("name", "want", "absent"), [
    # "auto" is the HF integration's placeholder: no value stated
    ("config_ds_z3_offload.json", {"training.zero_stage": 3, "training.optimizer_offload": True},
     ["numerics.dtype", "numerics.grad_clip", "dataloader.pin_memory"]),
    ("config_llamafactory_full_sft.yaml",
     {"training.micro_batch_size": 1, "training.gradient_accumulation_steps": 2, "training.seq_len": 2048,
      "numerics.dtype": "bf16", "training.model_params_billion": 8.0}, []),
    ("config_accelerate_multi_node.yaml", {"distributed.nnodes": 2}, []),
])
def test_shipped_configs(name: str, want: dict[str, Any], absent: list[str]) -> None:
    bundle = load_inputs([str(FIXTURES / name)])
    for path, value in want.items():
        group, key = path.split(".")
        assert bundle.facts[group][key] == value, path
    for path in absent:
        group, key = path.split(".")
        assert key not in bundle.facts.get(group, {}), path
    assert not "".join(bundle.prose).strip()  # the settings and their comments are no prose


@pytest.mark.parametrize(("text", "want"), [
    (DS_BF16_Z2, {"training.micro_batch_size": 2, "training.gradient_accumulation_steps": 4,
                  "numerics.grad_clip": 1.0, "numerics.dtype": "bf16", "training.zero_stage": 2,
                  "training.optimizer_offload": True}),
    # Accelerate's "none" keeps the optimizer state on the GPU
    (ACCELERATE_DS, {"training.zero_stage": 2, "training.optimizer_offload": False,
                     "numerics.dtype": "fp16", "distributed.nnodes": 1}),
])
def test_config_settings(text: str, want: dict[str, Any]) -> None:
    facts = _facts(text)
    for path, value in want.items():
        group, key = path.split(".")
        assert facts[group][key] == value, path


def test_offload_pin_memory_is_not_the_dataloaders() -> None:
    # offload_optimizer.pin_memory pins the offloaded optimizer state
    assert "pin_memory" not in _facts(DS_BF16_Z2).get("dataloader", {})


@pytest.mark.parametrize("text", [
    # a JSON-lines log record is one line; a JSON of losses is a metrics log
    '{"loss": 2.31, "learning_rate": 5e-05, "epoch": 0.1}\n',
    '{\n  "log_history": [{"loss": 2.3}],\n  "global_step": 10\n}\n',
    '{\n  "train_loss": 1.25,\n  "train_runtime": 312.4\n}\n',
    # a log's levels and an exception
    "INFO: Started server process\nWARNING: batch_size: 32 is large\nERROR: boom\nRuntimeError: x\n",
    # cpuinfo / lscpu fields: "model" is the CPU's
    "arch: X86_64\nbits: 64\ncount: 8\nmodel: 63\nfamily: 6\n",
    # two settings are too few to tell a config from prose
    "batch_size: 32\nnum_workers: 4\n",
])
def test_no_config(text: str) -> None:
    assert [r for r in find_regions(io.StringIO(text).readlines()) if r.fmt == config_file.NAME] == []


def test_losses_beside_a_config_are_still_read() -> None:
    facts = _facts(DS_BF16_Z2 + "\n{'loss': nan, 'learning_rate': 1e-05, 'epoch': 0.5}\n")
    assert facts["training"]["zero_stage"] == 2
    assert facts["numerics"]["loss"]


def test_config_among_other_output() -> None:
    trace = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n\n")
    lines = io.StringIO(trace + DS_BF16_Z2 + "\n$ nvidia-smi\n").readlines()
    regions = [r for r in find_regions(lines) if r.fmt == config_file.NAME]
    assert len(regions) == 1 and lines[regions[0].start].startswith("{")
    facts = incident.parse(lines, "paste").facts
    assert facts["oom"]["occurred"] is True and facts["training"]["zero_stage"] == 2


def test_a_config_alone_names_no_branch() -> None:
    # the config's "bf16" and "offload" are settings: nothing here says what went wrong
    rep = kb.diagnose(inputs=[Blob("ds_config.json", DS_BF16_Z2.encode())])
    assert rep.branches == []


def test_many_settings_lines_are_bounded() -> None:
    # a text made of "name: value" lines: a few configs are read, the rest is log (one pass)
    lines = ("batch_size: 32\nnum_workers: 4\nepoch: 1\nINFO: step done\n" * 5000).splitlines()
    found = [r for r in find_regions(lines) if r.fmt == config_file.NAME]
    assert len(found) == config_file.MAX_CONFIGS


def test_yaml_aliases_are_bounded() -> None:
    nest = "\n".join(f"l{k}: &l{k} {{" + ", ".join(f"k{j}: *l{k - 1}" for j in range(9)) + "}"
                     for k in range(1, 12))
    text = "batch_size: 4\nnum_workers: 2\nl0: &l0 {x: 1}\n" + nest + "\n"
    assert _facts(text)["dataloader"] == {"batch_size": 4, "num_workers": 2}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([
    "{", "}", '  "bf16": {"enabled": true},', '  "zero_optimization": {', '    "stage": 3', "},",
    "batch_size: 8", "deepspeed_config:", "  zero_stage: 3", "  - item", "# comment", "",
    "mixed_precision: bf16", "RuntimeError: x", "loss: nan", "a: 2023-13-45", "b: &x {c: *x}",
    "num_machines: 2", "  offload_optimizer_device: cpu", "key: [1, {2", "text without colon",
]), max_size=40))
def test_find_is_total(lines: list[str]) -> None:
    spans = config_file.find(lines)
    ends = [0]
    for a, b in spans:
        assert ends[-1] <= a < b <= len(lines)
        ends.append(b)
    for a, b in spans:
        config_file.parse(lines[a:b], "prop")


def test_an_unclosed_object_is_passed_over_once() -> None:
    # a JSON cut off by a paste's end: no config, and no other config is sought inside it
    lines = ["{"] + [f'  "k{i}": {{"x": {i}}},' for i in range(3 * config_file.MAX_LINES)]
    assert config_file.block_end(lines, 0) == (config_file.MAX_LINES, False)
    assert config_file.find(lines) == []
