"""Versions, GPU models and driver from environment reports.

Read: ``python -m torch.utils.collect_env`` (key lines of ``env_info_fmt`` in
https://github.com/pytorch/pytorch/blob/main/torch/utils/collect_env.py: ``PyTorch version:``,
``CUDA used to build PyTorch:``, ``CUDA runtime version:``, ``GPU models and configuration:``
followed by ``GPU N: <name>`` lines, ``Nvidia driver version:``, ``[pip3] pkg==ver`` /
``[conda] pkg ver`` lines), vLLM's extended copy (``vLLM Version: X``,
https://github.com/vllm-project/vllm/blob/main/vllm/collect_env.py), and the ``- key: value``
lists of ``transformers env`` / ``diffusers-cli env`` / ``accelerate env``
(https://github.com/huggingface/transformers/blob/main/src/transformers/commands/env.py), and
Lightning's bug-report environment (``requirements/collect_env_details.py`` in
https://github.com/Lightning-AI/pytorch-lightning: ``* CUDA:`` with a ``- GPU:`` list of device
names one level deeper, ``- available:``, ``- version:``; ``- torch: 2.0.1`` package lines).
"""

from __future__ import annotations

import re
from typing import Any

from kb.parsers.base import set_fact

#: packages whose version kb keeps (``software.packages``), by the name pip or conda prints
PACKAGES: dict[str, str] = {
    "torch": "torch", "pytorch": "torch", "triton": "triton", "vllm": "vllm", "sglang": "sglang",
    "transformers": "transformers", "accelerate": "accelerate", "deepspeed": "deepspeed",
    "lightning": "lightning", "pytorch-lightning": "lightning", "flash-attn": "flash-attn",
    "flash_attn": "flash-attn", "xformers": "xformers", "megatron-core": "megatron-core",
    "tensorrt-llm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm", "apex": "apex", "peft": "peft",
    "trl": "trl", "bitsandbytes": "bitsandbytes", "nvidia-nccl-cu11": "nccl",
    "nvidia-nccl-cu12": "nccl", "nvidia-nccl-cu13": "nccl", "nccl": "nccl", "diffusers": "diffusers",
}
_UNKNOWN = frozenset({"", "N/A", "None", "Could not collect", "No CUDA", "False"})
_KEY = re.compile(
    r"^\s*(PyTorch version|CUDA used to build PyTorch|CUDA runtime version|Nvidia driver version|"
    r"GPU models and configuration|Python version|OS|vLLM Version|Is CUDA available)\s*:\s*(.*?)\s*$"
)
_GPU = re.compile(r"^\s*GPU (\d+): (.+?)\s*(?:\(UUID: [^)]*\))?\s*$")
_PIP = re.compile(r"^\s*\[(?:pip\d?|conda)\]\s+([A-Za-z0-9_.-]+)(?:==|\s+)([0-9][\w.+-]*)")
#: ``pip list`` rows (``name   version``) and ``pip freeze`` lines, for the packages kept only
_PIP_LIST = re.compile(r"^\s*([A-Za-z0-9_.-]+)(?:\s{2,}|==)([0-9][\w.+-]*)\s*$")
#: `- PyTorch version (GPU?): 2.1.2+cu121 (True)`, "- `transformers` version: 4.36.2"
_HF = re.compile(r"^\s*-\s+(?:🤗\s*)?`?([A-Za-z][\w -]*?)`?\s+version(?: \(GPU\?\))?:\s*([0-9][\w.+-]*)")
_HF_GPU = re.compile(r"^\s*-\s+GPU type:\s*(.+?)\s*$")
#: Lightning's nested print: "- GPU:" alone on its line opens the list of device names, each a
#: "- <name>" indented deeper; "- torch:             2.0.1" a package
_LT_GPU_HEAD = re.compile(r"^([ \t]*)-\s+GPU:\s*$")
_LT_ITEM = re.compile(r"^([ \t]*)-\s+([^:\s][^:]*?)\s*$")
_LT_PKG = re.compile(r"^\s*-\s+([A-Za-z0-9_.-]+):\s+([0-9][\w.+-]*)\s*$")
#: a hand-written environment list, as issue templates ask for it ("GPU: GTX 1660 Ti 6GB",
#: "- GPU:  Quadro RTX 6000", "Graphics card: RTX 3090", "显卡：4090"): the value counts when it
#: names a product of the GPU table (not "GPU: 0", "GPU: yes")
_PLAIN_GPU = re.compile(r"^\s*(?:[-*•]\s*)?(?:GPUs?(?:\s+(?:model|type|name)s?)?|Graphics\s+card|Video\s+card|显卡)"
                        r"\s*[:：]\s*(\S.*?)\s*$", re.I)


class EnvReport:
    """Feeds lines one at a time; keeps the state of a ``GPU N:`` list."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts = facts
        self.gpus: list[str] = []
        self.in_gpus = False
        #: the indent of Lightning's "- GPU:" while its list is being read
        self.lt_indent: int | None = None
        #: products named on hand-written "GPU: ..." lines, each once
        self.named: list[str] = []

    def feed(self, line: str) -> bool:
        """Read one line; True when it was part of an environment report."""
        if self.in_gpus:
            m = _GPU.match(line)
            if m:
                self.gpus.append(m.group(2))
                return True
            self.in_gpus = False
        if self.lt_indent is not None:
            m = _LT_ITEM.match(line)
            if m and len(m.group(1).expandtabs(8)) > self.lt_indent:
                if m.group(2) not in _UNKNOWN:
                    self.gpus.append(m.group(2))
                return True
            self.lt_indent = None
        m = _LT_GPU_HEAD.match(line)
        if m:
            self.lt_indent = len(m.group(1).expandtabs(8))
            return True
        m = _KEY.match(line)
        if m:
            self._key(m.group(1), m.group(2))
            return True
        m = _PIP.match(line)
        if m:
            self._package(m.group(1), m.group(2))
            return True
        m = _PIP_LIST.match(line)
        if m and m.group(1).lower() in PACKAGES:
            self._package(m.group(1), m.group(2))
            return True
        m = _HF.match(line)
        if m:
            name = m.group(1).strip().lower().replace(" ", "-")
            if name == "pytorch":
                set_fact(self.facts, "software.torch_version", m.group(2))
            self._package(name.replace("🤗-", ""), m.group(2))
            return True
        m = _HF_GPU.match(line)
        if m and m.group(1) not in _UNKNOWN:
            set_fact(self.facts, "gpu.name", m.group(1))
            return True
        m = _PLAIN_GPU.match(line)
        if m:
            from kb.gpu_models import named_in

            names = named_in(m.group(1))
            for n in names:
                if n.upper() not in (k.upper() for k in self.named):
                    self.named.append(n)
            if names:
                return True
        m = _LT_PKG.match(line)
        if m and m.group(1).lower() in PACKAGES:
            if PACKAGES[m.group(1).lower()] == "torch":
                set_fact(self.facts, "software.torch_version", m.group(2))
            self._package(m.group(1), m.group(2))
            return True
        return False

    def _key(self, key: str, value: str) -> None:
        if key == "GPU models and configuration":
            self.in_gpus = True
            m = _GPU.match(value)
            if m:
                self.gpus.append(m.group(2))
            return
        if value in _UNKNOWN or value.startswith("Could not collect"):
            return
        if key == "PyTorch version":
            set_fact(self.facts, "software.torch_version", value.split()[0])
            self._package("torch", value.split()[0])
        elif key == "CUDA used to build PyTorch":
            set_fact(self.facts, "software.torch_cuda_version", value.split()[0])
        elif key == "CUDA runtime version":
            set_fact(self.facts, "software.cuda_runtime_version", value.split()[0])
        elif key == "Nvidia driver version":
            set_fact(self.facts, "gpu.driver_version", value.split()[0])
        elif key == "Python version":
            set_fact(self.facts, "software.python_version", value.split()[0])
        elif key == "OS":
            set_fact(self.facts, "software.os", value[:100])
            low = value.lower()
            if "windows" in low:
                set_fact(self.facts, "software.windows", True)
            elif any(w in low for w in ("linux", "ubuntu", "debian", "centos", "red hat", "rocky", "macos",
                                        "mac os", "darwin")):
                set_fact(self.facts, "software.windows", False)
        elif key == "vLLM Version":
            self._package("vllm", value.split()[0])

    def _package(self, name: str, version: str) -> None:
        key = PACKAGES.get(name.lower())
        if key is None:
            return
        pkgs = self.facts.setdefault("software", {}).setdefault("packages", {})
        pkgs.setdefault(key, version[:40])

    def finish(self) -> None:
        """GPU name and count from the ``GPU N:`` list; else the one product the hand-written
        ``GPU:`` lines name (several, as in a table of machines tried, name none)."""
        if self.gpus:
            set_fact(self.facts, "gpu.name", self.gpus[0])
            set_fact(self.facts, "gpu.count", len(self.gpus))
        elif len(self.named) == 1:
            set_fact(self.facts, "gpu.name", self.named[0])
