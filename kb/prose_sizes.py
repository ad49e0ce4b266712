"""Sizes and counts that people state in prose: how many nodes and GPUs, how big the model is,
how many bits a weight takes, whether every parameter trains, how much memory one GPU has ("two
nodes with 8 A100s", "Llama-2-70B in 4-bit on a 24GB 4090"). A size is read only when the text
states exactly one; a count, when it states several, is the largest: a comparison ("one node is
faster than two nodes") is about the larger setup, the one in trouble."""

from __future__ import annotations

import re

from kb.gpu_models import PRODUCT

_COUNT_WORDS = {"one": 1, "single": 1, "two": 2, "both": 2, "three": 3, "four": 4,
                "five": 5, "six": 6, "eight": 8, "sixteen": 16, "dual": 2}
_ZH_COUNT = {"单": 1, "一": 1, "两": 2, "双": 2, "二": 2, "三": 3, "四": 4, "八": 8}

# "2 nodes", "two machines", "1 node", "single-node", "4-node cluster", "两台机器", "双机", "单机"
_NODES = re.compile(
    r"(?<![0-9A-Za-z_.])(?P<n>\d{1,4}|one|two|three|four|five|six|eight|sixteen|single|dual|both)"
    # ("2 GPU nodes" are two nodes; "an 8-GPU node" is one node of eight GPUs)
    r"[\s-]*(?:physical\s+|gpu\s+(?=nodes|machines)|compute\s+|worker\s+)?(?:nodes?|machines?)(?![\w-])", re.I)
# (not a product's number: "8卡A800服务器" is one server of eight A800s)
_NODES_ZH = re.compile(r"(?<![0-9A-Za-z_.])(?P<n>\d{1,4}|[单一两双二三四八])\s*(?:台|个)?\s*(?:机器|节点|服务器)|"
                       r"(?P<m>[单双])机")


#: what a job is measured against, just before it ("8x slower than on a single node", "vs.
#: vLLM", "compared to TGI", "比单机慢"): the yardstick's size or engine, not the job's
_AGAINST = re.compile(r"(?:\b(?P<than>than)\s+(?:on\s+|with\s+|using\s+|in\s+)?|\bvs\.?\s*|\bversus\s+|"
                      r"\bcompared\s+(?:to|with)\s+|\bunlike\s+|\brelative\s+to\s+|(?P<bi>比|相比|对比|相较于?))"
                      r"\s*(?:a\s+|the\s+|an\s+)?$", re.I)
#: the job said to do better than what follows "than" ("faster than two nodes"): what follows is
#: the troubled side, not the yardstick
_BETTER = re.compile(r"(?i)(?<![a-z])(?:faster|quicker|better|higher\s+throughput|less\s+time)(?![a-z])[^.!?\n]{0,60}$")
_WORSE_ZH = re.compile(r"^[^。.;；!?！？\n]{0,12}?(?:慢|差|低|久|长)")


def yardstick(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is what the job is measured against ("slower than vLLM", "vs
    a single node", "比单机慢") rather than the job itself ("faster than two nodes" puts the two
    nodes on the troubled side)."""
    m = _AGAINST.search(text[max(0, start - 32):start])
    if m is None:
        return False
    if m.group("than"):
        return not _BETTER.search(text[max(0, start - 32 - 80):max(0, start - 32) + m.start()])
    if m.group("bi"):
        return bool(_WORSE_ZH.search(text[end:end + 16]))
    return True


def _largest(text: str, patterns: tuple[re.Pattern[str], ...], skip_yardstick: bool = False) -> int | None:
    """The largest count the patterns find (group ``n``, or ``m`` for a Chinese one-letter
    count), or None; a count said as the yardstick of a comparison is skipped when
    ``skip_yardstick``."""
    seen: list[int] = []
    for rx in patterns:
        for m in rx.finditer(text):
            if skip_yardstick and yardstick(text, m.start(), m.end()):
                continue
            raw = (m.group("n") or m.groupdict().get("m") or "").lower()
            n = int(raw) if raw.isdigit() else _COUNT_WORDS.get(raw, _ZH_COUNT.get(raw, 0))
            if 1 <= n <= 4096:
                seen.append(n)
    return max(seen) if seen else None


def nodes(text: str) -> int | None:
    """The number of nodes the text says the job runs on, or None. One node said beside several
    without a number ("any multi-node job dies at bootstrap; single-node is unaffected") is no
    count: the trouble is on the several (``_MULTI_NODE``, below)."""
    n = _largest(text, (_NODES, _NODES_ZH), skip_yardstick=True)
    if n == 1 and _MULTI_NODE.search(text):
        return None
    return n


# "8 GPUs", "2x RTX 4090", "two 4090s", "4090 24GB * 6", "8*80G GPUs", "3 A6000", "4张卡"
# (a counted product: the table's way of writing one, or a bare model number: "8 1080s", "3 A6000")
_GPU_NAME = r"(?:(?:nvidia|geforce|tesla)\s+)?(?:" + PRODUCT + r"|[a-z]?\d{4}(?:\s*ti)?)s?"
_GPUS = (
    # not a model number after its family ("RTX 4090 GPUs" is no count of 4090)
    re.compile(r"(?<![0-9A-Za-z_.])(?<!rtx\s)(?<!gtx\s)(?<!rtx)(?<!gtx)(?<!titan\s)(?<!quadro\s)"
               # nor a GeForce number before "GPU" ("NVIDIA 3090 GPU", "my 2080 card")
               r"(?![1-9]0[5-9]0(?:\s*ti)?\s*(?:gpus?|cards?)(?![0-9A-Za-z_]))"
               r"(?P<n>\d{1,4}|one|two|three|four|five|six|eight|sixteen|dual|"
               r"single)(?!\d)(?!(?<=\d\d\d)[x×]\d)\s*(?:[x×*]\s*)?"
               # an image size ("512x512") is no count of a product named "x512"
               r"(?:\d{1,3}\s?g(?:b|ib)?\s+)?(?![x×]\d)(?:" + _GPU_NAME
               + r"(?:\s+gpus?)?|gpus?|cards?)(?![0-9A-Za-z_])", re.I),
    re.compile(r"(?<![0-9A-Za-z_])(?!\d{3,4}[x×]\d{3,4}(?!\d))" + _GPU_NAME
               + r"(?:\s+\d{1,3}\s?g(?:b|ib)?)?\s*[x×*]\s*(?P<n>\d{1,4})(?![0-9A-Za-z_.])", re.I),
)
# (not an ordinal: "第一张显卡显存会爆" is the first card of several, not a job on one)
_GPUS_ZH = re.compile(r"(?<![第\d])(?<!第\s)(?P<n>\d{1,4}|[单一两双二三四八])\s*(?:张|块)\s*(?:[\w\s]{0,12}?(?:卡|显卡|gpu)|"
                      + _GPU_NAME + r")|(?<!第)(?<!第\s)(?P<m>[单双两二三四八]|(?<![\d.])\d{1,2})卡", re.I)


#: several GPUs said without a number ("multi 3090 cards", "multiple GPUs", "multi-GPU", "多卡")
_MULTI = re.compile(r"(?<![0-9A-Za-z_])(?:multi(?:ple)?|several|many)[\s-]*(?:[\w-]+\s+)?(?:gpus?|cards?)"
                    r"(?![0-9A-Za-z_])|多卡|多张卡|多块卡|多个\s*gpu|多\s*gpu", re.I)


def gpu_count(text: str) -> int | None:
    """How many GPUs the text says the job uses, or None. One GPU said beside several without a
    number ("works on a single card, OOM on multi 3090 cards") is no count: the trouble is on the
    several."""
    n = _largest(text, (*_GPUS, _GPUS_ZH))
    if n == 1 and _MULTI.search(text):
        return None
    return n


# "70b", "Llama-2-7B", "Qwen2.5-14B-Instruct", "1.5B", "70 billion parameters"; not "8x7B" (a
# mixture of experts, whose total is not the product) nor "80GB"
_PARAMS = re.compile(
    r"(?<![0-9A-Za-z_.])(?P<v>\d{1,4}(?:\.\d{1,2})?)\s?"
    r"(?:b(?![0-9A-Za-z_])|billion(?:\s+param\w*)?(?![0-9A-Za-z_]))",
    re.I)


def params_billion(text: str) -> float | None:
    """The model size in billions of parameters the text names, when it names exactly one."""
    vals = {float(m.group("v")) for m in _PARAMS.finditer(text)}
    vals = {v for v in vals if 0.1 <= v <= 2000}
    return vals.pop() if len(vals) == 1 else None


_BITS = [(4, re.compile(r"(?<![0-9A-Za-z_])(?:4[\s-]?bits?|int4|w4a16|q4(?:_\w+)?|nf4|gptq|awq|"
                        r"bnb[\s-]?4bit|load_in_4bit)(?![0-9A-Za-z_])", re.I)),
         (8, re.compile(r"(?<![0-9A-Za-z_])(?:8[\s-]?bits?|int8|w8a8|fp8|load_in_8bit|q8(?:_\w+)?)(?![0-9A-Za-z_])", re.I)),
         # llama.cpp's GGUF k-quants name their nominal bits: Q5_K_M, Q6_K, Q3_K_S, Q2_K
         *((b, re.compile(rf"(?<![0-9A-Za-z_])(?:{b}[\s-]?bits?|q{b}(?:_\w+)?)(?![0-9A-Za-z_])", re.I))
           for b in (2, 3, 5, 6)),
         (32, re.compile(r"(?<![0-9A-Za-z_])(?:fp32|float32|full[\s-]precision)(?![0-9A-Za-z_])", re.I))]


def weight_bits(text: str) -> int | None:
    """Bits per stored weight, when the text names exactly one storage format."""
    found = [bits for bits, rx in _BITS if rx.search(text)]
    return found[0] if len(found) == 1 else None


# a memory size next to a word for the GPU: "8*80G GPUs", "A100 80GB", "24GB VRAM", "显存 24G",
# "a 16 GB card"; host RAM, disks and files are not GPUs
_GPU_WORD = (r"(?:gpus?|vram|cards?|graphics|显存|显卡|a100|h100|h800|a800|h200|a6000|l40s?|"
             r"v100|rtx\s*\d{4}|\d{4}\s*ti|[2-5]0[5-9]0s?)")
# (a whole number: "1.531250GB memory on GPU 0" is no card of 250 GB)
_MEM = r"(?<![0-9.,])(?P<v>\d{1,3})\s?(?:gb|gib|g)(?![0-9A-Za-z_])"
_GPU_MEM = [re.compile(_MEM + r"(?:\s*(?:of\s+)?(?:hbm\d?e?|gddr\d\w?|memory))?[\s-]*(?:\w+\s+)?"
                       + _GPU_WORD + r"(?![0-9A-Za-z_])", re.I),
            # ("显存为22G", "显存是 24GB": the Chinese copula between the word and the size)
            re.compile(r"(?:(?<![0-9A-Za-z_])" + _GPU_WORD + r"|显存|显卡)[\s(:,-]*(?:\w+\s+){0,2}?(?:with\s+)?"
                       r"(?:为|是|有|共|大小为|大小是)?\s*" + _MEM,
                       re.I)]
_HOST = re.compile(r"(?<![v\w])ram|host|cpu|disk|ssd|file|swap|内存", re.I)


def _gpu_memory_hits(text: str) -> list[re.Match[str]]:
    return [m for rx in _GPU_MEM for m in rx.finditer(text) if not _HOST.search(m.group(0))]


# the host's memory listed as a key and its size, as environment listings give it ("RAM : 64G",
# "Memory: 128 GB", "内存：64G"); not a sentence about it ("16G内存很快就占满了")
_HOST_RAM_LISTED = re.compile(r"(?i)(?<![\w-])(?:ram|system\s+memory|host\s+memory|memory|内存)\s*[:：=]\s*"
                              r"\d+(?:\.\d+)?\s*(?:gb|gib|g|tb|tib|t)(?![0-9A-Za-z_])")


def setup_spans(text: str) -> list[tuple[int, int]]:
    """Where the text states the setup's sizes ("two nodes", "48GB of VRAM", "8 GPUs", "RAM:
    64G"): facts, whose words ("vram", "nodes", "ram") say nothing about what went wrong."""
    spans = [m.span() for m in _NODES.finditer(text)]
    spans += [m.span() for m in _HOST_RAM_LISTED.finditer(text)]
    spans += [m.span() for m in _NODES_ZH.finditer(text)]
    spans += [m.span() for m in _gpu_memory_hits(text)]
    spans += [m.span() for rx in (*_GPUS, _GPUS_ZH) for m in rx.finditer(text)]
    return spans


def gpu_memory_gib(text: str) -> int | None:
    """One GPU's memory in GiB as the text states it next to a GPU word, when it states one."""
    vals = {v for m in _gpu_memory_hits(text) if 2 <= (v := int(m.group("v"))) <= 288}
    return vals.pop() if len(vals) == 1 else None


# "full fine-tuning", "full-parameter", "pre-training", "train from scratch", "全参微调"; LoRA,
# QLoRA, PEFT and adapters train a few parameters only
_FULL = re.compile(r"full[\s-]*(?:param\w*|fine[\s-]*tun\w*|finetun\w*|ft)\b|pre-?train\w*|"
                   r"from\s+scratch|全参|全量微调|全量训练|预训练", re.I)
_ADAPTER = re.compile(r"(?<![a-z])(?:q?lora|peft|adapters?|p-tuning|prefix[\s-]tuning)(?![a-z])",
                      re.I)


def full_parameter(text: str) -> bool | None:
    """True when the text says every parameter trains, False when it trains adapters (LoRA),
    None when it does not say (or says both)."""
    full, adapter = bool(_FULL.search(text)), bool(_ADAPTER.search(text))
    return None if full == adapter else full


# "works on a single node", "single-node is unaffected", "I have successfully run it on a single
# card", "单卡可以": one unit of the setup said to work, in one sentence
_ONE_UNIT = (r"(?:(?:a|one|the|1)\s+)?(?:single|one|1|individual)[\s-]*(?P<unit>node|machine|host|server|gpu|card|device)s?"
             r"(?![\w-])|(?P<zh>单机|单卡|一张卡|一台机器)")
_WORKS = (r"(?:works?|worked|working|fine|ok|okay|unaffected|successfully|succeeds?|succeeded|"
          r"no (?:problem|issue|error)s?|without (?:any )?(?:problem|issue|error)s?|"
          r"(?:does|did) ?n[o']?t happen|可以|正常|没问题|没有问题)")
_WORKS_ALONE = (re.compile(r"(?i)(?:" + _ONE_UNIT + r")[^.。;；!?\n,，]{0,60}?(?<![A-Za-z0-9_-])" + _WORKS
                           + r"(?![A-Za-z0-9_-])"),
                re.compile(r"(?i)(?<![A-Za-z0-9_-])" + _WORKS + r"(?![A-Za-z0-9_-])[^.。;；!?\n,，]{0,60}?(?:"
                           + _ONE_UNIT + r")"))
_MULTI_NODE = re.compile(r"(?i)(?<![0-9A-Za-z_])(?:multi(?:ple)?|several|many)[\s-]*(?:nodes?|machines?|hosts?)"
                         r"(?![0-9A-Za-z_])|multinode|across (?:\w+\s+)?(?:nodes|machines|hosts)|多机|多节点|跨节点|跨机")


def works_alone(text: str) -> set[str]:
    """The units ("gpu", "node") the text says the job works on alone while it runs on several
    of them ("fine on a single node, hangs across 2 nodes"; "works with a single GPU, OOM on 4"):
    what fails is what the several add (the network between nodes, the extra ranks on GPU 0)."""
    kinds: set[str] = set()
    for rx in _WORKS_ALONE:
        for m in rx.finditer(text):
            unit, zh = (m.group("unit") or "").lower(), m.group("zh") or ""
            if unit:
                kinds.add("node" if unit in ("node", "machine", "host", "server") else "gpu")
            elif zh:
                kinds.add("node" if "机" in zh else "gpu")
    out: set[str] = set()
    if "node" in kinds and ((nodes(text) or 0) >= 2 or _MULTI_NODE.search(text)):
        out.add("node")
    if "gpu" in kinds and ((gpu_count(text) or 0) >= 2 or _MULTI.search(text)):
        out.add("gpu")
    return out


# "multi-node training needs much more step time than single node training", "2 nodes are
# slower than 1 node", "多机训练比单机还慢": several nodes said slower than one
_SLOWER_THAN_ONE_NODE = (
    re.compile(r"(?i)(?<![a-z])(?:slower|longer|more\s+(?:[\w-]+\s+){0,2}?time|worse\s+(?:throughput|performance)|"
               r"lower\s+throughput|less\s+throughput)(?![a-z])[^.!?\n。]{0,80}?(?<![a-z])than\s+(?:on\s+|with\s+|using\s+)?"
               r"(?:a\s+|one\s+|the\s+)?(?:single|one|1)[\s-]*(?:node|machine|host|server)s?(?![\w-])"),
    re.compile(r"(?:多机|多节点|跨机|跨节点|[2-8二两三四八]机|[2-8二两三四八]个节点|[2-8二两三四八]台机器)[^。.;；!?！？\n]{0,20}?比"
               r"(?:单机|单节点|一台机器|一个节点)[^。.;；!?！？\n]{0,10}?(?:慢|差|低)"),
)


def slower_across_nodes(text: str) -> bool:
    """Whether the text says the job on several nodes is slower than on one: what the several
    add is the network between them."""
    if not any(rx.search(text) for rx in _SLOWER_THAN_ONE_NODE):
        return False
    return (nodes(text) or 0) >= 2 or bool(_MULTI_NODE.search(text))


# "it takes around 400 seconds", "1 epoch almost takes half an hour", "training time: 20
# minutes", "用时16s", "耗时 5 分钟": how long something took, stated as a number
_UNIT = r"(?:ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?)"
_HOW_LONG = (
    re.compile(r"(?<![\w-])(?:takes?|took|taking|spends?|spent|costs?|lasts?|lasted)\s+(?:(?:about|around|"
               r"almost|nearly|over|more\s+than|up\s+to|roughly|approximately|~)\s*)?(?:\d+(?:[.,]\d+)?"
               r"(?:\s*-\s*\d+(?:[.,]\d+)?)?\s*" + _UNIT + r"|half\s+an?\s+(?:hour|day)|an?\s+(?:hour|day))"
               r"(?![\w-])", re.I),
    # (a loop's time, not a generation's or a response's: those are a server's, and their own
    # words name serving)
    re.compile(r"(?<![\w-])(?:training|processing|run(?:ning)?|epoch|step)\s+"
               r"times?\s*(?:is|was|:|=|of)?\s*(?:about|around|~)?\s*\d+(?:[.,]\d+)?\s*" + _UNIT + r"(?![\w-])",
               re.I),
    # "the training went on for 12 hours", "it has been running for 3 days"
    re.compile(r"(?<![\w-])(?:went\s+on|ran|run(?:ning)?|trained|training|been\s+running)\s+for\s+"
               r"(?:about|around|almost|nearly|over|more\s+than|~)?\s*\d+(?:[.,]\d+)?\s*"
               r"(?:h|hrs?|hours?|days?)(?![\w-])", re.I),
    re.compile(r"(?:用时|耗时|花了|需要|要跑|跑了|运行了)\s*(?:为|是|了)?\s*(?:大约|约|将近|超过)?\s*\d+(?:\.\d+)?\s*"
               r"(?:秒|分钟|分|小时|天|s|min|h)(?![A-Za-z])"),
)


def how_long_stated(text: str) -> bool:
    """Whether the text states how long something took ("it takes around 400 seconds", "用时16s"):
    a time reported in a problem report is a time found too long."""
    return any(rx.search(text) for rx in _HOW_LONG)
