"""The problem in the user's own words: which symptom branches it names (:func:`classify`) and
which facts it states in passing (:func:`extract`): a step number, a dtype, a serving engine.

Extracted facts are weak evidence. :func:`merge_under` puts them UNDER the facts the user gave
explicitly (or that parsers read from artifacts): those win, and a disagreement becomes a
warning. Only values a :class:`~kb.facts.Facts` field can hold are extracted.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from dataclasses import dataclass, field
from collections.abc import Collection, Iterable
from typing import Any

from kb.engine.knowledge import Knowledge
from kb.factpath import set_fact


def _norm(text: str) -> str:
    """Lower case, ``-``/``_`` as spaces, whitespace collapsed: "GPU-Util" reads as "gpu util",
    ``num_workers`` as "num workers"."""
    return " ".join(re.sub(r"[-_]", " ", text.lower()).split())


#: a lower-case prefix joined to a capitalised word, as C APIs name things: "ncclSystemError",
#: "cudaErrorMemoryAllocation" (not "vLLM", "NaN", "OutOfMemoryError")
_PREFIX_JOIN = re.compile(r"(?<![A-Za-z])([a-z]{3,})(?=[A-Z][a-z])")
_JOINED = re.compile(r"(?<![A-Za-z])[a-z]{3,}[A-Z][a-z]\w*")
#: a CamelCase class name, as Python APIs name things ("Float8DynamicActivationFloat8WeightConfig",
#: "GradScaler"): also read word by word ("float8 dynamic activation ...")
_CAMEL = re.compile(r"(?<![A-Za-z0-9_])[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){1,8}(?![A-Za-z0-9_])")
_CAMEL_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


#: a rate's unit written against its number in the user's words ("runs at 4.3fps", "12tok/s"):
#: read apart, so the unit is a whole word (not in a log, where every tqdm bar prints "1.2s/it")
_UNIT_GLUED = re.compile(r"(?i)(\d)(fps|it/s|s/it|tok/s|tokens?/s(?:ec(?:ond)?)?|t/s|samples/s|img/s)"
                         r"(?![a-z0-9])")


#: a library built ("I compiled the GPU version", "compiled from source with CUDA", a CMake
#: option "Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON", TensorFlow's start-up line "This
#: TensorFlow binary ... was not compiled to use: AVX2 FMA" from cpu_feature_guard.cc): the
#: build, not a graph compiler
_BUILD_COMPILE = re.compile(r"(?i)\bnot\s+compiled\s+to\s+use\b"
                            r"|\bcompil(?:e|es|ed|ing)\s+(?:\w+\s+){0,3}?(?:from\s+(?:the\s+)?source"
                            r"|(?:the\s+|a\s+)?(?:gpu|cuda)\s+version|with\s+(?:cuda|gpu)(?:\s+support)?"
                            r"|with\s+-D[A-Z][A-Z0-9_]*)\b")


#: of several GPUs given, one said to do the work ("it only uses one GPU", "the script only use
#: one GPU", "only 1 GPU is being utilized", "it will use single gpu only", "only one gpu working
#: while requesting 4", "the other gpus clearly don't get to run", "does not distribute to other
#: gpus"): it reads "only uses one gpu" (:func:`_one_gpu_only`); not the setup ("I only use one
#: GPU", "we only run on one GPU")
_ONE_GPU_ONLY = re.compile(
    r"(?i)(?<!\bi\s)(?<!\bwe\s)(?<!\bi'm\s)(?<!\bam\s)(?<!\bare\s)\bonly\s+"
    r"(?:uses?|using|utili[sz](?:es|e|ing)|runs?\s+on|running\s+on)\s+(?:one|1|a\s+single)\s+gpu\b"
    r"|\b(?:uses|runs\s+on)\s+only\s+(?:one|1|a\s+single)\s+gpu\b"
    r"|\b(?:uses?|using|runs?\s+on|running\s+on)\s+(?:a\s+)?single\s+gpu\s+only\b"
    r"|\bonly\s+(?:one|1|a\s+single)\s+(?:of\s+the\s+)?gpus?\s+(?:is\s+|are\s+|was\s+|gets?\s+)?(?:being\s+)?"
    r"(?:used|utili[sz]ed|busy|working|running)\b"
    r"|\bother\s+gpus\s+(?:\w+\s+){0,2}?(?:are|stay|sit|remain|were)\s+(?:\w+\s+)?(?:idle|unused|not\s+used)\b"
    r"|\bother\s+gpus\s+(?:\w+\s+)?(?:don't|do\s+not|never|didn't|did\s+not)\s+(?:get\s+to\s+)?(?:run|work|get\s+used)\b"
    r"|\b(?:not|n't)\s+distribute\w*\s+to\s+(?:the\s+)?other\s+gpus\b")


def _one_gpu_only(m: re.Match[str]) -> str:
    # "only one GPU is busy at a time" is DataParallel's turn-taking: its words stay as written
    return m.group(0) if _AT_A_TIME.match(m.string, m.end()) else " only uses one gpu "


_AT_A_TIME = re.compile(r"(?i)\s+at\s+a\s+time\b")


#: k-fold cross-validation: a way of splitting the data, not the validation phase
_CROSS_VALIDATION = re.compile(r"(?i)\bcross[\s_-]*validat\w*")


#: "PCIe" inside a GPU's product name ("Tesla P100-PCIE-16GB", "NVIDIA H100 PCIe", "A100 80GB
#: PCIe"): the card's form factor, not a word about the PCIe link
_PCIE_MODEL = re.compile(r"(?i)\b([a-z]{0,2}\d{2,4}[a-z]*(?:[- ]\d+\s?gb)?)[- ]pcie\b")


#: a small share of the GPU in use, said in a sentence: "utilises only 5% of NVIDIA 3090 GPU",
#: "uses just 20 % of the GPUs" (not "of the CPU"), "GPU偶尔最高能到30%"; it also reads "low
#: utilization", as does a utilization said to be low with no other resource named
_GPU_SHARE = re.compile(r"(?i)\b(?:utili[sz](?:e|es|ed|ing)|uses?|used|using)\s+(?:only|just)\s+"
                        r"\d{1,2}(?:\.\d+)?\s?%\s+of\s+(?:the\s+|my\s+|our\s+|a\s+)?"
                        r"(?:[\w-]+\s+){0,3}?gpus?\b"
                        # the GPU as the subject: "the GPU (RTX 2080) is only being used approx
                        # 30%", "my GPU is only used at 20%", "GPU only runs at 15%"
                        r"|\bgpus?\b(?:\s*\([^)\n]{0,40}\))?\s+(?:is\s+|are\s+|was\s+|were\s+)?(?:only|just)\s+"
                        r"(?:being\s+)?(?:used|utili[sz]ed|running|runs|at|loaded)\s+(?:at\s+|to\s+)?"
                        r"(?:about\s+|approx\.?\s+|approximately\s+|around\s+|~\s*)?\d{1,2}(?:\.\d+)?\s?%"
                        # in Chinese, the GPU's own share capped below half ("GPU偶尔最高能到30%",
                        # "gpu只有20%"), not its memory's ("GPU显存只用了30%")
                        r"|(?<![a-z])gpu(?:(?!显存|内存)[^，,。；;！!？?\n\d%]){0,8}?"
                        r"(?:只有|只|才|最高|最多|不到|小于|低于|仅有|仅|能到)\s*[1-4]?\d(?:\.\d+)?\s?%"
                        # "the utilization is lower than expected" with no resource named: in a
                        # report about a job on a GPU that is the GPU's (not "CPU utilization is
                        # low", a memory's, a cache's or a link's)
                        r"|(?<!cpu\s)(?<!cpu-)(?<!memory\s)(?<!mem\s)(?<!disk\s)(?<!core\s)(?<!power\s)"
                        r"(?<!network\s)(?<!ram\s)(?<!gpu\s)(?<!gpu-)(?<!bandwidth\s)(?<!cache\s)"
                        r"(?<!link\s)(?<!pcie\s)(?<![\w-])"
                        r"utili[sz]ation(?:\s+rate)?\s+(?:is|was|remains|stays|seems|looks|are|were)\s+"
                        r"(?:very\s+|quite\s+|really\s+|only\s+|so\s+|pretty\s+|extremely\s+|relatively\s+|"
                        r"still\s+|always\s+)?(?:low|lower|poor)\b"
                        # a share under half said before the word ("a 10% utilization in
                        # nvidia-smi", "0% GPU utilization"), not of the CPU, its cores or memory
                        r"|(?<![\w.])(?:[0-9]|[1-4][0-9])(?:\.\d+)?\s?%\s+(?:gpu[- ])?(?:utili[sz]ation|util)\b"
                        r"(?!\s+(?:of|on)\s+(?:the\s+|my\s+|all\s+)?(?:cpus?|cores?|memory|disk|ram)\b)")
#: every core of the host counted out ("95% on all 36 available cores", "all 64 CPU threads at
#: 100%"): it also reads "all cores", the knowledge's word for thread pools that take every core
_ALL_N_CORES = re.compile(r"(?i)\ball\s+(?:the\s+|of\s+the\s+|my\s+)?\d{1,4}\s+(?:available\s+|logical\s+|"
                          r"physical\s+)?(?:cpu\s+)?(?:cores|threads)\b")
#: the host CPU said to be idle or little used ("CPU utilization was not very high", "very low
#: utilization on my CPUs", "a lot of CPU idle", "CPU 利用率很低"): it reads "cpu idle", so the
#: CPU words in it ("cpu utilization") do not name a CPU-bound loop
_CPU_IDLE = re.compile(
    r"(?i)\b(?:cpus?|cores|processors?)(?:\s+(?:usage|utili[sz]ation|load|utili[sz]ation rate))?"
    r"\s+(?:is|was|are|were|stays?|remains?|seems?(?:\s+to\s+be)?|looks?)\s+(?:still\s+|also\s+|mostly\s+)?"
    r"(?:very\s+|rather\s+|quite\s+|pretty\s+|extremely\s+|super\s+|really\s+)?"
    r"(?:low|idle|not\s+(?:very\s+|that\s+|so\s+)?high|not\s+(?:fully\s+)?(?:used|utili[sz]ed|busy|saturated))\b"
    r"|\b(?:very\s+|extremely\s+|super\s+)?low\s+(?:cpu\s+(?:usage|utili[sz]ation|load)|utili[sz]ation\s+(?:on|of)\s+(?:my|the|all)\s+cpus?)\b"
    r"|\b(?:lots?\s+of|much|plenty\s+of)\s+cpu\s+idle\b"
    r"|cpu\s*(?:利用率|占用率?|使用率)\s*(?:很|也|比较|都|一直)?\s*(?:低|不高)")
#: the card's memory said to be full while the job runs ("GPU memory is almost full", "VRAM is fully
#: loaded", "Memory-Usage is full", "显存一直占满"): frameworks reserve the card up front, so a full
#: card is no out-of-memory symptom; it reads "card full", a word of no branch
_MEMORY_FULL = re.compile(
    r"(?i)\b(?:gpu\s+memory|vram|memory[- ]usage)(?:\s+(?:usage|use))?[^.,;:!?\n]{0,20}?"
    r"(?:\bfully\s+[a-z]+\b|\b(?:is|was|were|are|gets?|got|stays?)\s+(?:almost\s+|nearly\s+|completely\s+|always\s+)?"
    r"(?:full|maxed(?:\s+out)?)\b)"
    # or the card's memory said to be high while the job runs, no failure named ("the GPU memory
    # usage is very high", "uses about 20GB of memory, which seems high"): held, as a pool holds it
    r"|\b(?:(?:gpu|cuda|video)\s+memory|vram)(?:\s+(?:usage|use|consumption))?"
    r"\s+(?:is|was|seems?|looks?)\s+(?:(?:very|quite|so|too|extremely|really|rather|pretty)\s+)?(?:high|huge)\b"
    r"|\b(?:uses?|consumes?|takes?(?:\s+up)?|occup(?:y|ies))\s+(?:about\s+|around\s+|almost\s+|nearly\s+|over\s+)?"
    r"\d+(?:\.\d+)?\s*(?:g|gb|gib)\s+of\s+(?:(?:gpu|cuda|video)\s+)?(?:memory|vram)\b[^.;!?\n]{0,30}?"
    r"\b(?:seems?|looks?|is)\s+(?:(?:very|quite|so|too|rather|pretty)\s+)?high\b"
    r"|(?:显存|(?:GPU|gpu|显卡)\s?的?\s?内存)[^，。,.;；\n]{0,8}?(?<!没)(?<!未)(?<!不)(?:占满|满了|打满|用满)")
#: "out of memory" typed in a hurry: a word run together or a letter dropped ("outof Memory",
#: "out o memory", "ot of memory"); not "out of my memory", not "lot of memory"
_OOM_TYPO = re.compile(r"(?i)(?<![a-z])(?:outof|out\s+o|ot\s+of)\s*memory\b")
#: the card's memory said to overflow with words between ("32g显存直接溢出了"): 显存溢出, an OOM, not
#: a numeric overflow (溢出 alone is one)
_VRAM_OVERFLOW = re.compile(r"显存[^，。,.;；!?！？\s]{0,6}?溢出"
                            # or later in the sentence, nothing numeric named between ("显存应该是
                            # 有空余的，但是不到1个epoch溢出中断训练"; not "显存够，但是loss溢出")
                            r"|显存(?:(?!loss|Loss|LOSS|梯度|数值|nan|NaN|inf|fp16|FP16|半精度|精度|权重)"
                            r"[^。.;；!?！？\n]){0,30}?溢出")
#: host memory said to fill up or leak with words between ("16G内存很快就占满了", "内存一直在涨"):
#: RAM (内存), not the card's memory (显存), which a framework fills on purpose; it reads 内存占满
_HOST_RAM_FULL = re.compile(r"(?<!GPU)(?<!gpu)(?<!GPU的)(?<!gpu的)(?<!显卡)(?<!显卡的)内存[^。.;；!?！？\n，,]{0,10}?"
                            r"(?:占满|满了|耗尽|爆了|泄漏|泄露|一直涨|一直在涨|一直增加|持续增加|持续增长|越来越大|越来越多)")
#: the loss said to fall to zero with words between ("loss先在2左右上下波动，然后突然变成0", "when
#: training loss some step is 0", "loss becomes 0", "loss value is zero", "0.0 loss"), or logged
#: as zero ("{'loss': 0.0, ...", "loss=0"): it reads "loss becomes zero" (not "loss is 0.5",
#: "loss: 0.0123")
_LOSS_ZERO = re.compile(r"(?i)\bloss(?:[^。.;；!?！？\n]){0,30}?(?:(?:变成|变为|降到|降为|掉到|一直为|一直是|始终为|始终是|全为|全是|都是|等于)"
                        r"\s*0(?![.\d%])|归零)"
                        r"|(?:\bloss\b(?:[^.;!?\n]){0,30}?\b(?:is|was|are|were|of|becomes?|became|goes\s+to|went\s+to"
                        r"|turns?\s+to|turned\s+to|drops?\s+to|dropped\s+to|falls?\s+to|fell\s+to)\s+"
                        r"|\bloss\b['\"]?\s*[=:]\s*)(?:0(?:\.0+)?(?![.\d%e])|zero\b(?!-))"
                        r"|(?<![\d.])0(?:\.0+)?\s+loss\b")
#: the loss climbing with words between ("losses start significantly increasing", "the loss then
#: slowly goes up"): it reads "loss increase", the branch's words for it; not "the loss does not
#: increase", "stops growing", "loss of throughput increases", "the performance loss seems to
#: increase" (a loss of speed, of accuracy or of packets is no training loss)
_LOSS_CLIMB = re.compile(r"(?i)(?<!performance )(?<!throughput )(?<!speed )(?<!accuracy )(?<!packet )"
                         r"\bloss(?:es)?\s+(?:(?!(?:not|never|no|stops?|stopped|of|but|and|while|when|than)\b)"
                         r"[a-z]+\s+){1,3}?(?:increas\w*|ris(?:es|ing)|rose|climb\w*|grow(?:s|ing)?|grew"
                         r"|go(?:es|ing)?\s+up|went\s+up)\b")
#: a loss that does not fall ("the loss doesn't decrease", "loss keeps unchanged", "loss曲线没怎么下降"):
#: it reads "loss not decreasing", training that does not learn (the numerics branch's 不收敛)
_LOSS_FLAT = re.compile(r"(?i)\bloss(?:es)?\s+(?:(?:curve|value)s?\s+)?(?:(?:(?:is|are|was|were|has|have|had|does|did|do"
                        r"|keeps?|kept|stays?|stayed|remains?|remained)\s+)?(?:not|never|barely|hardly)\s+"
                        r"|(?:is|are|was|were|has|have|had|does|did|do)n['’]t\s+)"
                        r"(?:decreas\w*|go(?:es|ing)?\s+down|dropp?\w*|improv\w*|chang\w*|mov\w*|fall\w*)\b"
                        r"|\bloss(?:es)?\s+(?:(?:is|are|was|were|keeps?|kept|stays?|stayed|remains?|remained|gets?|got)\s+)?"
                        r"(?:unchanged|stuck|flat|constant|the\s+same|plateau\w*)\b"
                        r"|loss[^。，,.;；!?！？\n]{0,6}?(?:不|没怎么|没有|没)(?:下降|降|变化|变(?![成为]))")
#: the card's memory a job takes, said as a size ("it occupies 44 gb of memory", "each consumed
#: 11G memory", "the gpu memory only uses 50GB"): how much memory is used, the memory branch's
#: weak "memory occupied" (the memory named beside the size is the same memory, not a second word)
_MEMORY_TAKEN = re.compile(r"(?i)(?:\b(?:(?:gpu|cuda|video)[\s-]?)?(?:memory|mem|vram|ram)\s+(?:(?:is|was|only|just|already|still)\s+){0,2})?"
                           r"\b(?:occup(?:y|ies|ying|ied)|uses?|using|used|takes?|taking|took|eats?|eating"
                           r"|consum(?:es|ing|ed|e))\s+(?:about\s+|around\s+|up\s+to\s+|over\s+|more\s+than\s+"
                           r"|almost\s+|nearly\s+|~\s*)?\d+(?:\.\d+)?\s?(?:g|gb|gib|m|mb|mib)\b"
                           # the memory named after the size is the same memory, not a second word
                           r"(?:\s+(?:of\s+)?(?:the\s+)?(?:gpu\s+|cuda\s+|video\s+)?(?:memory|vram|ram)\b)?")
#: a size in bytes' units after a number ("44 gb", "11G"): the lines _MEMORY_TAKEN may match (its
#: leading optional noun makes it slow to try at every place of a long artifact's prose)
_SIZE = re.compile(r"(?i)\d\s?(?:g|gb|gib|m|mb|mib)\b")


def _memory_taken(text: str) -> str:
    """``text`` with each memory size a job takes read as "memory occupied" (:data:`_MEMORY_TAKEN`),
    tried only on the lines that hold a size."""
    if not _SIZE.search(text):
        return text
    return "\n".join(_MEMORY_TAKEN.sub(" memory occupied ", ln) if _SIZE.search(ln) else ln
                     for ln in text.split("\n"))


#: the card's memory taken as a module is imported ("Upon importing nemos ... the GPU has 18Gb of
#: memory used", "when importing craftax functions my GPU memory immediately fills up"): it reads
#: "memory taken at import"; not an import that fails ("error when importing torch")
_IMPORT_MEMORY = re.compile(r"(?i)\b(?:upon|when|after|on|by|just|simply)\s+import(?:ing)?\b[^.;!?\n]{0,80}?"
                            r"(?:\bgpu\b|\bvram\b|memory|显存|\d\s*gi?b\b)")
#: NaN in the gradients said in so many words ("NaN gradients", "the gradients will become NaN",
#: "nan when backward"), not of the grad norm (a loss that overflowed makes every grad norm NaN):
#: it reads "nan gradients", the words of a backward that meets log/sqrt/pow at zero
_NAN_GRAD = re.compile(r"(?i)\b(?:nan|inf)s?\s+(?:(?:weight|valued?|values?|in|the|its|of)\s+){0,2}(?:gradients?|grads?)\b"
                       r"(?![\s_-]*norm)|\b(?:gradients?|grads?)\b(?![\s_-]*norm)(?:\s+(?!(?:but|and|not|no)\b)[a-z]+)"
                       r"{0,3}?\s+(?:nan|inf)\b|\bnan\s+(?:when|in|during)\s+(?:the\s+)?backward")
#: several cards compared with one, with words between ("多卡推理速度比单卡推理速度慢十倍",
#: "双卡训练比单卡还要慢"): it reads "多卡更慢", a word of the causes that split one job over
#: cards (DataParallel in training, a small model split for serving)
_MULTI_SLOWER = re.compile(r"(?:多卡|多张卡|多块卡|多个卡|多gpu|多个gpu|多张gpu|双卡|两张卡|[2-8二两三四八]卡)"
                           r"[^。.;；!?！？\n，,]{0,20}?比(?:单卡|单张卡|一张卡|单gpu|单个gpu|一个gpu|一张gpu)"
                           r"[^。.;；!?！？\n，,]{0,16}?慢", re.I)
#: the loss said in Chinese to be high with words between ("swift的loss和梯度都很高", "loss比之前高很多"):
#: it reads "loss很高", as "loss很高" said straight does
_LOSS_HIGH_ZH = re.compile(r"(?i)(?<![a-z])loss(?![a-z])[^，。,.；;！？!?\n]{0,8}?"
                           r"(?:很高|偏高|太高|非常高|特别高|好高|高很多|高了很多|更高)")
#: a throughput of images or frames per second written in Chinese ("1000+图片/Sec", "30帧/秒",
#: "每秒20张"): it reads "images/s", the loop's rate as the English words give it
_IMAGES_PER_S_ZH = re.compile(r"(?i)(?:图片|图像|张|帧)\s*/\s*(?:s|sec|秒)(?![a-z])|(?:图片|图像|帧)每秒|每秒\s*\d+\s*(?:张|帧)")
#: the device question of Hugging Face's environment report ("- Flax version (CPU?/GPU?/TPU?):
#: not installed"): a template's placeholder, which names no device in use
_ENV_TEMPLATE_DEVICES = re.compile(r"\((?:CPU\?/)?GPU\?(?:/TPU\?)?\)")
#: how long an epoch or step takes, said in a sentence ("4 hours an epoch", "16 hours for one
#: epoch", "each epoch takes ~1h"): a complaint about training speed; it also reads "time per
#: iteration"
_EPOCH_TIME = re.compile(
    r"(?i)\b(?:\d+(?:\.\d+)?|a few|several|many|an?)\s*(?:hours?|hrs?|h|minutes?|mins?|days?)\s+"
    r"(?:(?:for|per|in|to (?:run|finish|complete|train))\s+)?(?:an?|each|one|every|the|a single|one single|single)?\s*"
    r"(?:epoch|iteration)s?\b"
    r"|\b(?:epoch|iteration)s?\s+(?:takes?|took|lasts?|last|costs?)\s+(?:about\s+|around\s+|almost\s+|over\s+|"
    r"more than\s+|~\s*)?\d+(?:\.\d+)?\s*(?:hours?|hrs?|h|minutes?|mins?|min|days?)\b")
#: the training said to be slowed down, with a possessive between ("severely slowing down my
#: overall training"): it also reads "slowed down training"
_SLOWING_TRAINING = re.compile(r"(?i)\bslow(?:s|ed|ing)?\s+down\s+(?:my|our|the|his|her|their|your)\s+"
                               r"(?:\w+\s+)?(?:training|train)\b")
#: the host's CPU or RAM said to take what the card's memory cannot hold ("dGPU with CPU overflow",
#: "it overflows into system RAM"): a spill of memory, not a numeric overflow
_SPILL = re.compile(r"(?i)\b(?:cpu|system\s+ram|system\s+memory|shared\s+memory|host\s+memory|ram)\s+overflow\b"
                    r"|\boverflow(?:s|ed|ing)?\s+(?:in)?to\s+(?:the\s+)?(?:cpu|system\s+ram|system\s+memory"
                    r"|shared\s+(?:gpu\s+)?memory|host\s+memory|ram)\b")
#: a GPU's RAM is its memory ("exceed GPU RAM", "a single GPU's ram"): it reads "vram", not the
#: host's "ram"; so do "video memory" and "display memory"
_GPU_RAM = re.compile(r"(?i)\b(?:gpus?|video|graphics(?:\s+card)?)(?:'s)?\s+ram\b"
                      # 显存 as English gives it: "video memory", and machine translation's
                      # "display memory"
                      r"|\b(?:video|display)\s+memory\b")
#: the card's memory said to run out (after _norm_text: "GPU RAM" reads "vram"), and the
#: host's ("RAM" alone, a killed process, 内存 not of the GPU): which memory ran out
_DEVICE_MEMORY = re.compile(
    r"cuda out of memory|out of cuda memory|cuda oom|outofmemoryerror|cuda error: out of memory|"
    r"out of (?:gpu memory|vram|video memory|gpu ram)|"
    # the card's memory, then its running out a few words on ("the 40GB GPU memory runs out")
    r"\b(?:gpu memory|gpu's memory|vram|video memory|device memory)\b(?! utilization)"
    r"(?:\W+\w+){0,4}?\W+(?:runs? out|ran out|running out|is full|was full|exceed\w*|exhausted|"
    r"not enough|insufficient|overflow\w*|is not enough)|"
    r"(?:not enough|insufficient) (?:gpu memory|vram|video memory)|"
    # or the card's memory named as what fills up ("VRAM usage keeps growing", "显存占用特别高")
    r"\b(?:gpu memory|vram|video memory) (?:usage|use|consumption)\b|"
    r"显存\w{0,2}?(?:不足|不够|溢出|爆|满|占满|耗尽)|显存(?:占用|使用|用量)|爆显存|"
    r"gpu ?内存(?:不足|不够|溢出|爆|满)|gpu ?(?:已满|满了)")
#: the OOM killer's work, said: the host's memory ran out
_KILLED = r"\bkill(?:ed)?\b|\boom killer\b|\bsigkill\b"
_HOST_MEMORY = re.compile(r"\bram\b|\bcpu memory\b|\bhost memory\b|\bsystem memory\b|"
                          + _KILLED + r"|(?<!gpu)(?<!gpu )内存")
#: the host's memory said to run out (not merely named, as "32GB RAM" names the machine's): the
#: OOM killer's work, or RAM / CPU / host / system memory running out, full, growing or named as
#: what is used ("the ram usage is 25gb"), 内存 in the same state
_HOST_NAMES = r"(?:ram|cpu memory|host memory|system memory)"
_HOST_MEMORY_OUT = re.compile(
    _KILLED + r"|\bout of " + _HOST_NAMES + r"\b|(?:not enough|insufficient) " + _HOST_NAMES
    + r"|\b" + _HOST_NAMES + r" (?:usage|use|consumption)\b"
    + r"|\b" + _HOST_NAMES + r"\b(?:\W+\w+){0,6}?\W+(?:runs? out|ran out|running out|is full|was full|"
    r"fills? up|filled up|exceed\w*|exhausted|not enough|insufficient|grow\w*|increas\w*|ris(?:es|ing))"
    # 内存占满 and its kin are already read into the text (_HOST_RAM_FULL)
    r"|(?<!gpu)(?<!gpu )内存\w{0,2}?(?:不足|不够|溢出|满)|爆内存")
#: a focus adverb inside a phrase ("the model runs only on CPU", "it is just in fp16"): the
#: phrase also reads without it ("runs on cpu"), as the vocabulary writes it
_FOCUS = re.compile(r"(?i)\b([a-z]+)\s+(?:only|just|entirely|solely|exclusively|completely)\s+"
                    r"((?:on|in|to|with|from|at)\s+(?:the\s+|a\s+|my\s+)?[\w.-]+)")
#: "keeps on increasing", "kept on growing": the phrase also reads without its "on" ("keeps
#: increasing"), as the vocabulary writes it
_KEEPS_ON = re.compile(r"(?i)\b(keeps?|kept|keeping)\s+on\s+([a-z]+ing)\b")
#: the end of a comparison with another setup ("8x slower than on a single node")
_THAN = re.compile(r"(?i)\bthan\s+(?:on\s+|with\s+|using\s+)?(?:a\s+|the\s+)?$")
#: "every 1000 steps", "every 500 iterations": a period, which the vocabulary writes "every n steps"
_EVERY_N = re.compile(r"(?i)\bevery\s+\d[\d,]*k?\s*(?:steps?|iterations?|iters?|batches)\b")
#: "stuck" said of the reporter, not the job ("I got stuck for a while because ...")
_PERSON_STUCK = re.compile(r"(?i)\b(?:(?:i|we)(?:'m|'ve been|'re| am| was| were| got| get| have been| had been| are)?"
                           r"|(?:anyone|anybody|someone|somebody|you)\s+(?:got|get|gets|was|were|is|are|been))"
                           r"\s+(?:really\s+|completely\s+)?stuck\b"
                           r"|\bstuck\s+(?:in|on|with)\s+(?:the|this|that|an?|same)\s+(?:issue|problem|error|bug)")


#: a serving concurrency that stops at exactly 100 ("cannot get it to exceed 100", "seems to
#: default to 100", "TTFT degrades when concurrency > 100"): the default connection-pool size of
#: the common Python HTTP clients (aiohttp's TCPConnector limit=100, httpx's max_connections=100),
#: not a server setting. It reads "capped at 100 concurrent requests"
_CONCURRENCY_WORD = r"(?:concurren\w*|running|requests?|reqs|connections?|in[- ]flight|parallel\w*)"
_AT_100 = (r"\b100\b(?!\s*%|\.\d|\s*(?:ms|s|sec|seconds?|tokens?|tok|gb|gib|mb|steps?|w|x|examples?|prompts?)\b"
           r"|[^.;!?\n]{0,20}?(?:per\s+(?:second|sec|minute)|/\s?s\b|\brps\b|\bqps\b))")
_CAP_100 = re.compile(
    r"(?i)\b" + _CONCURRENCY_WORD + r"\b[^.;!?\n]{0,60}?\b(?:cap(?:ped|s)?|stuck|limit(?:ed|s)?|max(?:imum|ed)?|plateau(?:s|ed)?"
    r"|never\s+(?:more\s+than|above|exceeds?|over|beyond)|exceed|defaults?\s+to|default\s+of|at\s+most"
    r"|no\s+more\s+than|stays?\s+at|tops?\s+out\s+at)\b[^.;!?\n]{0,20}?" + _AT_100
    + r"|\b(?:cap(?:ped)?|stuck|limit(?:ed)?|max(?:imum)?|never\s+(?:more\s+than|above|exceeds?)|exceed|defaults?\s+to|at\s+most"
    r"|tops?\s+out\s+at)\b[^.;!?\n]{0,20}?" + _AT_100 + r"[^.;!?\n]{0,30}?\b" + _CONCURRENCY_WORD + r"\b"
    + r"|\b(?:concurrency|concurrent\s+requests|running\s+requests|connections)\s*(?:>|>=|above|over|beyond|exceeds?)\s*"
    + _AT_100)


#: a distributed job said to hang while it starts ("init_process_group hanging",
#: "jax.distributed.initialize() hangs", "stuck at rendezvous", "初始化卡住"): before any
#: collective of the training runs, so no rank can be out of step in one; NCCL's networking
#: troubleshooting names interfaces that cannot reach the other nodes ("fail during the init
#: functions or even hang") and closed ports. It also reads "hangs at initialization"
_INIT_WORD = (r"(?:init_process_group|init\s+process\s+group|(?:distributed|dist|jax|hvd|horovod|deepspeed)\."
              r"(?:initiali[sz]e|init(?:_distributed)?)\(?\)?|initiali[sz](?:e|es|ed|ing|ation)|\binit\b|rendezvous|rdzv"
              r"|start-?up|bootstrap)")
_HANG_WORD = (r"(?:\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|\bfreez(?:e|es|ing)\b|\bfrozen\b|\bdeadlock(?:s|ed)?\b"
              r"|\btim(?:es|ed)\s+out\b|\btimeout\b|never\s+(?:returns|finishes|completes|proceeds))")
_INIT_HINT = re.compile(r"(?i)init|rendezvous|rdzv|start|bootstrap|初始化|启动")
#: between the two: one clause, no turn to a later moment ("init is fine but it hangs at
#: epoch 3", "then it hangs at the allreduce")
_SAME_MOMENT = r"(?:(?!\bbut\b|\bthen\b|\bafter\b|\blater\b|\bepoch|\bstep|\biteration)[^.,;:!?\n]){0,40}?"
_INIT_HANG = re.compile(r"(?i)" + _INIT_WORD + _SAME_MOMENT + _HANG_WORD
                        + r"|" + _HANG_WORD + r"[^.;:!?\n]{0,12}?\b(?:at|during|in|on|while|before)\b"
                        + _SAME_MOMENT + _INIT_WORD
                        + r"|(?:初始化|启动)[^，。,.;；\n]{0,10}?(?:卡住|卡死|挂住|hang|超时)|无法启动|启动不了")


#: a product name of three or more hyphen-joined parts, one with a digit ("deepseek-vl2-small",
#: "llama-2-7b-chat"): the words inside it are its name, not the user's ("small model"). Its
#: parts are ASCII: Chinese glues words to a name with no space ("qwen3.5-27B训练时长是qwen3-32b"),
#: and those words are the user's
_HYPHEN_NAME = re.compile(r"(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*\d)[A-Za-z][A-Za-z0-9_.]*"
                          r"(?:-[A-Za-z0-9_.]+){2,}(?![A-Za-z0-9_-])")

#: a C/C++ source location, as glog-style lines start ("W tensorflow/compiler/jit/
#: mark_for_compilation_pass.cc:1412]"): where a message was printed from, not what it says (a
#: Python traceback's path is kept: the subsystem it failed in is evidence). Bounded parts: a
#: long token costs linear time
_SOURCE_PATH = re.compile(r"(?<!\S)[^\s/]{0,200}(?:/[^\s/]{1,200}){1,40}\.(?:cc|cpp|cxx|c|h|hpp|cu|cuh)"
                          r"(?::\d+)?(?![^\s\]:,;)])")


@lru_cache(maxsize=64)  # one diagnosis reads the same text for its branches, causes and yields
def _norm_text(text: str) -> str:
    """:func:`_norm` of a text, followed by its joined API names taken apart ("ncclSystemError"
    also reads "nccl systemerror"): the whole name still matches as written. A GPU product
    name's "PCIe", a person being "stuck", a library compiled from source, k-fold
    cross-validation and C/C++ source locations are left out; a stated period also reads
    "every n steps", a small share of the GPU in use "low utilization" (in place of its words), a
    CPU said to be idle "cpu idle", a card's memory said to be full "card full", an epoch's
    duration "time per iteration", a concurrency stopping at 100 "capped at 100 concurrent
    requests", a hang while the job starts "hangs at initialization", host RAM filling up
    "内存占满", the loss falling to zero "loss becomes zero", the loss climbing with words between
    "loss increase", a loss that does not fall "loss not decreasing", the card's memory said as
    the size a job takes "memory occupied", the card's memory taken as a module is imported
    "memory taken at import", NaN
    in the gradients "nan gradients", several cards slower than one "多卡更慢", every core
    counted out "all cores", a phrase with a focus adverb inside it also without it, "keeps on
    growing" also "keeps growing", results said to differ from a reference "wrong results"; a
    GPU's RAM reads "vram"."""
    text = _SOURCE_PATH.sub(" ", _PERSON_STUCK.sub(" ", _PCIE_MODEL.sub(r"\1", text)))
    text = _CROSS_VALIDATION.sub("crossfold", _BUILD_COMPILE.sub(" built ", text))
    text = _MEMORY_FULL.sub(" card full ", _CPU_IDLE.sub(" cpu idle ", _ENV_TEMPLATE_DEVICES.sub(" ", text)))
    text = _GPU_RAM.sub("vram", _VRAM_OVERFLOW.sub("显存溢出", text))
    if "rint" in text or "ogging" in text:
        text = _DIAGNOSTIC_OUTPUT.sub(" shows ", text)
    if "emory" in text or "EMORY" in text:
        text = _OOM_TYPO.sub("out of memory", text)
    if "verflow" in text:
        text = _SPILL.sub(" spills into system ram ", text)
    text = _memory_taken(text)
    # the share reads "low utilization" in place of its words: "偶尔" (now and then) in
    # "GPU偶尔最高能到30%" says how often the GPU peaks, not an OOM at random steps
    text = _GPU_SHARE.sub(" gpu ; low utilization ; ", text)
    if "gpu" in text.lower():
        text = _ONE_GPU_ONLY.sub(_one_gpu_only, text)
    low = _norm(text)
    parts = [_PREFIX_JOIN.sub(r"\1 ", m.group(0)) for m in _JOINED.finditer(text)]
    parts += [_CAMEL_SPLIT.sub(" ", m.group(0)) for m in _CAMEL.finditer(text)]
    if "100" in text and _CAP_100.search(text):
        parts.append("capped at 100 concurrent requests")
    if _INIT_HINT.search(text) and _INIT_HANG.search(text):  # the cheap test first
        parts.append("hangs at initialization")
    if "内存" in text and _HOST_RAM_FULL.search(text):
        parts.append("内存占满")
    if _LOSS_ZERO.search(text):
        parts.append("loss becomes zero")
    tl = text.lower()  # cheap substring tests before each regex
    if "loss" in tl and _LOSS_CLIMB.search(text):
        parts.append("loss increase")
    if "loss" in tl and _LOSS_FLAT.search(text):
        parts.append("loss not decreasing")
    if "mport" in text and _IMPORT_MEMORY.search(text):
        parts.append("memory taken at import")
    if ("grad" in tl or "backward" in tl) and _NAN_GRAD.search(text):
        parts.append("nan gradients")
    if "比" in text and _MULTI_SLOWER.search(text):
        parts.append("多卡更慢")
    if "高" in text and "loss" in tl and _LOSS_HIGH_ZH.search(text):
        parts.append("loss很高")
    if ("张" in text or "帧" in text or "图" in text) and _IMAGES_PER_S_ZH.search(text):
        parts.append("images/s")
    if _EVERY_N.search(text):
        parts.append("every n steps")
    if ("esult" in text or "utput" in text or "结果" in text) and _RESULT_MISMATCH.search(text):
        parts.append("wrong results")
    if "ll " in text and _ALL_N_CORES.search(text):  # "all 36 cores", "All 64 threads"
        parts.append("all cores")
    if _EPOCH_TIME.search(text):
        parts.append("time per iteration")
    if _SLOWING_TRAINING.search(text):
        parts.append("slowed down training")
    parts += [f"{m.group(1)} {m.group(2)}" for m in _FOCUS.finditer(text)]
    if "keep" in tl or "kept" in tl:
        parts += [f"{m.group(1)} {m.group(2)}" for m in _KEEPS_ON.finditer(text)]
    return low + " \n " + _norm(" ; ".join(parts)) if parts else low


@lru_cache(maxsize=4096)  # every branch's and cause's words, on every diagnosis with text
def _ascii_word(w: str) -> re.Pattern[str]:
    w = _norm(w)
    # whole words only, at the ends that are letters or digits (".item()" may follow "tensor")
    left = r"(?<![a-z0-9])" if w[:1].isalnum() else ""
    right = r"(?![a-z0-9])" if w[-1:].isalnum() else ""
    body = re.escape(w)
    if len(w) == 3 and w.isalpha():
        body = f"{body}s?"  # "nans", "ooms", "gpus"
    elif len(w) > 3 and w[-1:].isalpha():
        # the word's inflections: "hang" hears "hangs", "hanging"; "overheat" "overheating";
        # "diverge" "diverging" (two-letter words stay exact, three-letter ones take a plural)
        body = (f"(?:{body}(?:s|es|ed|d|ing)?|{re.escape(w[:-1])}ing)" if w.endswith("e")
                else f"{body}(?:s|es|ed|ing)?")
    return re.compile(left + body + right)


@lru_cache(maxsize=4096)
def _stem(w: str) -> str:
    """What any inflection of ``w`` holds as a plain substring (see :func:`_ascii_word`)."""
    n = _norm(w)
    return n[:-1] if len(n) > 3 else n


#: a remedy tried that did not help: what it changed is not the cause ("lowering the learning
#: rate to 1e-5 didn't help", "减小学习率也不行", "even with a lower learning rate")
_DID_NOT_HELP = (r"(?<![a-z])(?:(?:did ?n[o']?t|did't|does ?n[o']?t|do ?n[o']?t|won'?t|will not)"
                 r" (?:help|work|fix|solve|change anything)"
                 # "tried a smaller batch size but still get this error", "to no avail", "in vain"
                 r"|but (?:it |i |we )?still (?:get|gets|got|getting|has|have|had|fail|fails|failed|"
                 r"crash|crashes|crashed|occur|occurs|occurred|happen|happens|happened|see|saw|"
                 r"the same|run out|runs out|ran out)"
                 r"|(?:to|with) no avail|no luck|without success|with no success|in vain)(?![a-z])")
_ZH_NO_USE = r"(?:也|都)(?:不行|没用|没有用|无效|不起作用|没效果|没有效果)"
_EVEN_WITH_LESS = r"(?<![a-z])even (?:with|after|at) (?:an? |the )?(?:lower|smaller|reduced|tiny)"
#: "I did not test with torch.compile", "haven't tried fp16 yet": a thing said not to be in use
_NOT_USED = (r"(?<![a-z])(?:did ?n[o']?t|have ?n[o']?t|has ?n[o']?t|never|not yet) (?:use|used|test|tested|try|tried|"
             r"enable|enabled|turn on|turned on)(?: it)?(?: with| on)?")
#: a word said not to be the problem: "no OOM", "without errors", "never hangs", "没有 OOM" before
#: it, or "GPU memory looks normal", "is fine" after it ("not" is left alone: "not enough
#: memory" is the problem)
_NEG_BEFORE = re.compile(r"(?:(?<![a-z0-9])(?:no|without|never)\s+|没有\s*|没\s*|" + _NOT_USED + r"\s+"
                         # "it has enough VRAM", "plenty of memory": the card is big enough
                         # ("not enough VRAM" is the problem, and stays one)
                         r"|(?<!not )(?<!n't )(?<!no )(?<![a-z])(?:enough|plenty\s+of|sufficient)\s+)$")
_NEG_AFTER = re.compile(r"^\s*(?:looks?|seems?|is|are|was|were|stays?|remains?)\s+"
                        r"(?:normal|fine|ok|okay|good|stable|healthy)(?![a-z])"
                        # "bf16 works fine", "with BF16 and FP32, everything is OK": the settings
                        # compared that work are not the problem
                        r"|^\s*(?:works?|worked|runs?|ran)\s+(?:fine|ok|okay|normally|well)(?![a-z])"
                        r"|^(?:\s*(?:and|or|/|,)\s*[\w.+-]+){0,2}\s*,?\s*(?:everything|all)\s+"
                        r"(?:is|was|are|were|works?|worked|runs?|ran|goes|went)\s+"
                        r"(?:fine|ok|okay|normal|normally|good|well)(?![a-z])"
                        # the same in Chinese: "显存正常", "内存都还正常", "显存够用"
                        r"|^\s*(?:都|也)?(?:还是|还|很|挺)?(?:正常|没问题|没有问题|够用)")
#: a remedy tried that did not help, around a word: "even with a smaller batch size", "lowering
#: the learning rate didn't help", "改了 max_split_size_mb 也不行". What it changed is not the
#: cause, but it is what one tries for the problem at hand: it still names the branch
_REMEDY_BEFORE = re.compile(_EVEN_WITH_LESS + r"\s+$")
_REMEDY_AFTER = re.compile(r"^[^.,;:!?\n]{0,30}?" + _DID_NOT_HELP + r"|^[^。；，,\n]{0,12}?" + _ZH_NO_USE)


#: a whole clause that says a remedy was tried and failed: read for no cause's likeness
_FAILED_REMEDY = re.compile(
    r"[^.,;:!?\n。；，]{0,80}?" + _DID_NOT_HELP
    + r"|[^。；，,.\n]{0,20}?" + _ZH_NO_USE
    + r"|" + _EVEN_WITH_LESS + r"(?: [a-z_-]+){1,2}",
    re.IGNORECASE)


#: a setting said to have made the job work ("I confirmed that the model works by setting the
#: variable NCCL_P2P_DISABLE=1", "solved it by setting export NCCL_P2P_DISABLE=1"): the
#: settings after it are the fixed job's, not the failing job's, so none is read as its state
_WORKED_BY = re.compile(
    r"(?i)\b(?:works?|worked|working|fixed|solved|resolved|helps|helped)\b[^.;!?\n]{0,40}?"
    r"\b(?:by|after)\s+(?:setting|exporting|adding|passing)\b(?:[^.;!?\n]|\.(?!\s|$))*")
#: what such a clause sets: an environment variable, a flag or a key=value
_SETTING = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|(?<!\w)--[a-z][\w-]*|\w=\S")


def _without_worked_settings(text: str) -> str:
    """``text`` less the clauses that say a setting made the job work (:data:`_WORKED_BY`)."""
    return _WORKED_BY.sub(lambda m: " " if _SETTING.search(m.group(0)) else m.group(0), text)


def without_failed_remedies(text: str) -> str:
    """``text`` less the clauses that say a remedy was tried and did not help ("lowering the
    learning rate didn't help"): what they name is not the problem, so it must not make the
    text read like that cause's description."""
    return _FAILED_REMEDY.sub(" ", text)


def remedies_tried(text: str, kn: Knowledge) -> set[str]:
    """The causes whose remedy ``text`` says was tried and did not help: for each such clause,
    the cause whose description it reads most like ("lowering the learning rate did not help":
    a learning rate too high), when it reads like one at all."""
    from kb.engine.diagnosis import MIN_RESEMBLANCE
    from kb.engine.resemblance import for_knowledge

    like = for_knowledge(kn)
    out: set[str] = set()
    for m in _FAILED_REMEDY.finditer(text):
        scores = like.scores(m.group(0), kn.causes)
        best = max(scores, key=lambda c: (scores[c], c), default=None)
        if best is not None and scores[best] >= MIN_RESEMBLANCE:
            out.add(best)
    return out


def _negated(low: str, a: int, b: int, remedies: bool = True) -> bool:
    """Whether the word at ``low[a:b]`` is said not to be the problem; with ``remedies`` also
    when it is a remedy said to have failed."""
    if _NEG_BEFORE.search(low[max(0, a - 28):a]) or _NEG_AFTER.match(low[b:b + 60]):
        return True
    return remedies and bool(_REMEDY_BEFORE.search(low[max(0, a - 28):a])
                             or _REMEDY_AFTER.match(low[b:b + 60]))


#: verbs that take 小/大 into one word: 减小, 缩小, 调小, 变小, 加大, 增大, 调大, 变大, 放大, 扩大
_ZH_SIZE_VERB = frozenset("减缩调变加增放扩")


def _zh_verb(low: str, i: int, word: str) -> bool:
    """Whether a Chinese word starting with 小/大 at ``low[i]`` is the tail of a verb ("减小
    batch size" is to reduce the batch, not "a small batch")."""
    return word[:1] in ("小", "大") and i > 0 and low[i - 1] in _ZH_SIZE_VERB


def _spans(low: str, vocab: Any, remedies: bool = True) -> list[tuple[str, int, int]]:
    """The words of ``vocab`` (en and zh) in ``low``, a text already through :func:`_norm`, with
    where each first occurs, not negated (``remedies``: nor a remedy said to have failed); one
    place in the text counts once ("diverge" and "diverged" both hear "diverged")."""
    found: list[tuple[str, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for w in list(vocab.en) + list(vocab.zh):
        wl = w.lower()
        if wl.isascii():
            # a plain substring test first (C speed): most words are absent; the regex then
            # checks word edges and inflections ("diverg" is in "diverging")
            if _stem(w) not in low:
                continue
            m = next((x for x in _ascii_word(w).finditer(low)
                      if not _negated(low, *x.span(), remedies)), None)
            if m and m.span() not in seen:
                seen.add(m.span())
                found.append((w, *m.span()))
        else:
            i = low.find(wl)
            while i >= 0 and (_negated(low, i, i + len(wl), remedies) or _zh_verb(low, i, wl)):
                i = low.find(wl, i + 1)
            if i >= 0:
                found.append((w, i, i + len(wl)))
    return found


def _longest(hits: dict[str, list[tuple[str, int, int]]]) -> dict[str, list[tuple[str, int, int]]]:
    """``hits`` less every word that lies inside a longer word of another branch's key at the
    same place: "accumulate_grad_batches" names gradient accumulation, its "accumulate" names
    no OOM cause. Keys are cause ids or "node=answer"; both start with their branch."""
    def branch(key: str) -> str:
        return key.split(".", 1)[0]

    spans = [(a, b, branch(k)) for k, found in hits.items() for _, a, b in found]
    out: dict[str, list[tuple[str, int, int]]] = {}
    for k, found in hits.items():
        # within one branch a cause's word and an answer's word agree; across branches the
        # longer word is the one meant
        kept = [(w, a, b) for w, a, b in found
                if not any(other != branch(k) and a2 <= a and b <= b2 and b2 - a2 > b - a
                           for a2, b2, other in spans)]
        if kept:
            out[k] = kept
    return out


def classify(text: str, kn: Knowledge) -> dict[str, list[str]]:
    """``{branch: [matched words]}`` for every branch whose vocabulary (en or zh) occurs in
    ``text``, best match first."""
    low = _norm_text(text)
    # a remedy said to have failed names the problem it was tried for
    strong = {b.id: f for b in kn.branches.values() if (f := _spans(low, b.words, remedies=False))}
    weak = {b.id: f for b in kn.branches.values()
            if (f := _spans(low, b.weak_words, remedies=False))}
    found = {b: strong.get(b, []) + weak.get(b, []) for b in kn.branches if b in strong or b in weak}
    # "slow" inside another branch's "generation is slow" names only that branch, and inside
    # its own branch's "very slow" it is the same word, not a second one
    hits = {b: [w for w, a, e in f if not any(a2 <= a and e <= e2 and e2 - a2 > e - a
                                               for _, a2, e2 in f)]
            for b, f in _longest(found).items()}
    named_strongly = {b for b, f in hits.items() if set(f) - {w for w, _, _ in weak.get(b, [])}}
    if named_strongly:
        # a weak word names its branch only when no other branch is named
        hits = {b: f for b, f in hits.items() if b in named_strongly}
    return dict(sorted(hits.items(), key=lambda kv: -len(kv[1])))


def text_branches(text: str, kn: Knowledge) -> dict[str, list[str]]:
    """The branches an artifact's free text names most: those with the most distinct words of
    their vocabulary (a log that says "NaN" and "loss scale" is about numerics). A weak
    reason, for when no fact and no word of the user's puts a branch in play."""
    # the yields read an artifact as they read the user's words: "tok/s" in a training log's
    # step lines is the training's throughput
    hits, _ = _yielded(classify(text, kn), text, kn)
    best = max((len(w) for w in hits.values()), default=0)
    return {b: w for b, w in hits.items() if len(w) == best}


def quoted_messages(text: str, kn: Knowledge) -> list[str]:
    """Causes whose message signatures occur in ``text`` (the user quoting what a tool
    printed, e.g. "Unsupported: inline in skipfiles: Logger.info"); a message that speaks
    against its cause (a counter signature) points to none."""
    from kb.readers.signatures import Matcher, signatures_for

    m = Matcher(signatures_for(kn))
    m.scan(text, unwrap=True)
    return list(dict.fromkeys(h.cause for h in m.found() if not h.counter))


def named(text: str, kn: Knowledge, remedies: bool = True
          ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``({cause id: words}, {"node=answer": words})``: the causes the text names with their own
    words, and the answers to the graph's questions it gives (the branch files' ``said``). A
    word inside a longer word of another cause or answer at the same place counts for the
    longer one only. Ranking evidence, never a decided step or a confirmed cause."""
    low = _norm_text(text)
    causes = {c.id: f for c in kn.causes.values() if (f := _spans(low, c.words, remedies))}
    said = {f"{w.node}={w.answer}": f for b in kn.branches.values() for w in b.said
            if (f := _spans(low, w.words)) and not _spans(low, w.unless)
            and (not (w.only_with.en or w.only_with.zh) or _spans(low, w.only_with))}
    # a cause id ("oom.fragmentation") and an answer ("oom.where=eval") never collide
    kept = {k: [w for w, _, _ in v] for k, v in _longest({**causes, **said}).items()}
    return ({k: v for k, v in kept.items() if k in causes},
            {k: v for k, v in kept.items() if k in said})


def name_causes(text: str, kn: Knowledge) -> dict[str, list[str]]:
    """``{cause id: [matched words]}`` for every cause whose own words (en or zh) occur in
    ``text`` (see :func:`named`)."""
    return named(text, kn)[0]


def answers_said(text: str, kn: Knowledge) -> dict[str, list[str]]:
    """``{"node=answer": [matched words]}`` for every answer of a branch's question that the
    user's words give (see :func:`named`)."""
    return named(text, kn)[1]


# -- extraction ---------------------------------------------------------------------------

_NUM = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?\s*[kK]?)"
#: "after ~300 steps", "300 steps in", "step 1200", "step=1,200", "at iteration 5k",
#: "第 300 步", "300 步", "第300个step", "第 300 次迭代"
_STEP_PATTERNS = (
    re.compile(r"(?<![a-z0-9_])(?:global[_ ])?(?:step|iter|iteration)s?\s*(?:[=:#]\s*|no\.?\s*)?~?\s*"
               + _NUM + r"(?![\d.])", re.I),
    re.compile(r"(?<![\d.,])~?\s*" + _NUM + r"\s*(?:steps?|iters?|iterations?)(?![a-z])", re.I),
    re.compile(r"第\s*~?\s*" + _NUM + r"\s*(?:个\s*)?(?:步|step|steps|次迭代|轮迭代|iter)", re.I),
    re.compile(r"(?<![\d.,第])约?\s*" + _NUM + r"\s*步"),
)

#: dtype words -> the NumericsFacts.dtype value (ASCII words match whole words only)
_DTYPES: dict[str, tuple[str, ...]] = {
    "fp16": ("fp16", "float16", "half precision", "torch.half", "half-precision", "半精度", "--fp16"),
    "bf16": ("bf16", "bfloat16", "torch.bfloat16", "--bf16"),
    "fp32": ("fp32", "float32", "full precision", "single precision", "单精度", "全精度"),
    # "tf32" is not read: in words it names the question ("is TF32 off?", "allow_tf32 = True
    # made it faster"), not the dtype the job runs in
    "fp8": ("fp8", "float8", "e4m3", "e5m2"),
}
#: FP8 as the last part of a checkpoint's name ("GLM-4-32B-0414-FP8", "Llama-3.1-8B-Instruct-FP8-
#: Dynamic"): the format its weights are stored in, not the dtype the job computes in (an FP8
#: checkpoint runs its other layers, and its activations outside the FP8 GEMMs, in bf16 or fp16)
_CHECKPOINT_FP8 = re.compile(r"(?i)(?<=[a-z0-9])-(?:fp8|float8)(?![a-z0-9])")
#: serving engines -> the InferenceFacts.engine value
_ENGINES: dict[str, tuple[str, ...]] = {
    # an engine's own flags name it too: vLLM's engine args (vllm/engine/arg_utils.py) and
    # SGLang's server args (sglang/srt/server_args.py) that the other does not have
    "vllm": ("vllm", "gpu-memory-utilization", "gpu_memory_utilization", "enforce-eager",
             "enforce_eager", "max-num-seqs", "max_num_seqs", "max-num-batched-tokens",
             "max_num_batched_tokens"),
    "sglang": ("sglang", "mem-fraction-static", "mem_fraction_static", "max-running-requests",
               "max_running_requests", "cuda-graph-max-bs", "cuda_graph_max_bs",
               "disable-radix-cache", "disable_radix_cache", "chunked-prefill-size",
               "chunked_prefill_size"),
    "tensorrt-llm": ("tensorrt-llm", "tensorrt_llm", "trt-llm", "trtllm", "tensorrt llm"),
    "tgi": ("text-generation-inference", "tgi"),
    "lmdeploy": ("lmdeploy",),
    # the local runners (their launch commands set the same values: kb.readers.args)
    "ollama": ("ollama",),
    "llama.cpp": ("llama.cpp", "llama-server", "llamacpp", "llama-cpp", "llama_cpp"),
}
#: training frameworks: recognised (shown as evidence) but no Facts field holds them
_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "deepspeed": ("deepspeed",),
    "megatron": ("megatron", "megatron-lm", "megatron-core"),
    "fsdp": ("fsdp",),
}
_NONFINITE_WORDS = re.compile(r"(?<![a-z])(nan|inf|infinity|non-finite|nonfinite)s?(?![a-z])|溢出|无穷",
                              re.I)
#: where a step number goes, by the branch the text is classified into
STEP_FACT: dict[str, str] = {"oom": "oom.at_step", "numerics": "numerics.first_nonfinite_step"}


@dataclass
class Mentions:
    """What the text says in passing, before it is mapped onto facts."""

    steps: list[int] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    engines: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    #: GPU products named ("RTX 4090", "A100"): what their name tells is in graphs/gpus.yaml
    gpus: list[str] = field(default_factory=list)
    #: the words that matched, in the text's own spelling ("~300 steps", "fp16", "vLLM")
    words: list[str] = field(default_factory=list)


def _to_int(raw: str) -> int | None:
    s = raw.strip().replace(",", "").replace(" ", "")
    mult = 1
    if s[-1:] in ("k", "K"):
        mult, s = 1000, s[:-1]
    try:
        v = float(s) * mult
    except ValueError:
        return None
    return int(v) if v == int(v) and v >= 0 else None


def _vocab_hits(text: str, vocab: dict[str, tuple[str, ...]], words: list[str]) -> list[str]:
    low = text.lower()
    found: list[str] = []
    for value, spellings in vocab.items():
        for sp in spellings:
            if sp.isascii():
                m = re.search(r"(?<![a-z0-9])" + re.escape(sp) + r"(?![a-z0-9])", low)
            else:
                i = low.find(sp)
                m = None if i < 0 else re.compile(re.escape(sp)).search(low, i)
            if m:
                if value not in found:
                    found.append(value)
                words.append(text[m.start():m.end()])
                break
    return found


def _compared_only(text: str, spellings: tuple[str, ...], others: Iterable[str] = ()) -> bool:
    """Whether every place ``text`` names one of ``spellings`` is the yardstick of a comparison
    ("slower than vLLM", "throughput vs vLLM", "比 vllm 慢"). "A vs B" of two names of
    ``others`` compares them both: neither is the yardstick."""
    from kb.prose_sizes import yardstick

    low = text.lower()
    places = [m.span() for sp in spellings
              for m in re.finditer(r"(?<![a-z0-9])" + re.escape(sp) + r"(?![a-z0-9])", low)]
    if not places:
        return False
    for i, j in places:
        if not yardstick(low, i, j):
            return False
        vs = re.search(r"(?:\bvs\.?|\bversus)\s*$", low[max(0, i - 12):i])
        if vs and any(re.search(r"(?<![a-z0-9])" + re.escape(o) + r"(?![a-z0-9])\W{0,3}$",
                                low[max(0, i - 40):max(0, i - 12) + vs.start()]) for o in others):
            return False
    return True


#: a warmup's length beside a step count ("1600步的warmup step", "warmup_steps=500", "500 warm-up
#: steps", "预热 500 步")
_WARMUP = re.compile(r"(?i)warm[-_ ]?up|预热")


def mentions(text: str) -> Mentions:
    """Step numbers, dtypes, engines, frameworks and GPU products mentioned in ``text``."""
    out = Mentions()
    spans: list[tuple[int, int]] = []
    for pat in _STEP_PATTERNS:
        for m in pat.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in spans):
                continue  # already read by an earlier pattern
            n = _to_int(m.group(1))
            if n is None:
                continue
            spans.append((m.start(), m.end()))
            if _WARMUP.search(text[max(0, m.start() - 16):m.end() + 16]):
                continue  # "1600 warmup steps": how long the warmup lasts, not when it failed
            if n not in out.steps:
                out.steps.append(n)
            out.words.append(m.group(0).strip())
    out.dtypes = _vocab_hits(_CHECKPOINT_FP8.sub(lambda m: " " * len(m.group(0)), text),
                             _DTYPES, out.words)
    out.engines = [e for e in _vocab_hits(text, _ENGINES, out.words)
                   if not _compared_only(text, _ENGINES[e],
                                         [sp for o, sps in _ENGINES.items() if o != e for sp in sps])]
    out.frameworks = _vocab_hits(text, _FRAMEWORKS, out.words)
    from kb.gpu_models import named_in

    out.gpus = named_in(text)
    out.words.extend(out.gpus)
    return out


#: the OOM said to come after the run got going ("after several hundred iterations", "after a
#: few epochs", "in the middle of training", "训着训着", "运行一段时间后"): not at start-up, where
#: a model too large for the card, another process or ranks sharing one GPU would end it first
_LATER_IN_RUN = re.compile(
    r"(?i)\bafter\s+(?:a\s+few|a\s+couple(?:\s+of)?|several|some|many|few|\d[\d,.]*\s*k?)\s+"
    r"(?:(?:hundreds?|thousands?|dozens?)\s+(?:\(or\s+\w+\)\s+)?(?:of\s+)?)?"
    r"(?:iterations?|iters?|steps?|epochs?|batch(?:es)?)\b"
    r"|\bin\s+the\s+middle\s+of\s+(?:the\s+)?training\b|\bmid[- ]training\b"
    r"|训着训着|(?:训练|运行|跑)了?(?:一段时间|一会儿?|几个\s*epoch)|训练中途")

#: the OOM said to come as the run resumes from a checkpoint ("when loading from checkpoint",
#: "OOM on resume", "resuming training from a checkpoint", 断点续训): oom.on_resume, what the
#: resume check would establish (the same run from scratch is the one that fitted)
_ON_RESUME = re.compile(
    r"(?i)\b(?:when|on|after|while|upon)\s+(?:resum\w*"
    r"|(?:re)?load\w*\s+(?:from\s+)?(?:the\s+|a\s+|an\s+|my\s+)?(?:existing\s+|saved\s+|last\s+|previous\s+)?"
    r"(?:checkpoint|ckpt)s?)\b"
    r"|\bresum(?:e|es|ed|ing)\s+(?:the\s+|my\s+)?(?:training\s+|run\s+)?from\s+(?:a\s+|the\s+|my\s+)?"
    r"(?:saved\s+|last\s+|previous\s+)?(?:checkpoint|ckpt)"
    # the resume flag passed ("when I want to train the model with `--resume_ckpt`"), and an
    # attempt to resume ("when attempting to resume training", "I tried to resume")
    r"|\b(?:when|on|after|while|upon)\s+(?:\S+\s+){0,6}?(?:with|using|adding|add|setting|set|passing|pass)\s+"
    r"[`'\"]?--?resume\w*"
    r"|\b(?:attempt(?:s|ed|ing)?|try|tries|tried|trying)\s+to\s+resume\b"
    r"|恢复训练|续训")  # 续训 also in 断点续训

#: a tool's diagnostic output ("JAX also prints out this", "I printed out the engine profiles",
#: "verbose logging of the inference session", "jax's compile logging"): what the user looked at,
#: not a print or logging call inside the compiled code (compile.print_in_forward)
_DIAGNOSTIC_OUTPUT = re.compile(
    r"(?i)\bprint(?:s|ed|ing)?\s+out\b"
    r"|\b(?:verbose|debug|detailed|compile|compilation|compiler|info[- ]level)\s+logging\b")

#: the card a problem is said to happen on only ("this only happens on GTX1660ti devices", "it
#: occurs only with my 3090"): the one of several named that the job ran on
_ONLY_VERB = r"(?:happens?|occurs?|appears?|fails?|crashes|breaks|shows\s+up)"
_ONLY_ON = re.compile(rf"(?i)(?:\bonly\s+{_ONLY_VERB}|\b{_ONLY_VERB}\s+only)\s+(?:on|with)\s+"
                      r"(?P<card>[^.,;:\n]{2,40})")

#: finite results said to come out wrong or to differ from a reference ("the results from RTX 3090
#: were totally different", "output mismatch", "jax einsum has different results between CPU and
#: GPU", "can't get correct results on 3090"): numerics.reference_mismatch; not a difference "in
#: speed" or "of memory", which is another question
_NOT_OF_SPEED = r"(?!\s+(?:in\s+|of\s+)?(?:speed|time|timing|performance|latency|throughput|memory))"
_RESULT_MISMATCH = re.compile(
    r"(?i)\b(?:different|wrong|incorrect|inaccurate|inconsistent)\s+(?:results?|outputs?)\b"
    r"|\b(?:results?|outputs?)\s+(?:are\s+|were\s+|is\s+|was\s+)?(?:totally\s+|completely\s+|quite\s+|very\s+)?"
    r"(?:different|wrong|incorrect|inconsistent|mismatch(?:es|ed)?)\b" + _NOT_OF_SPEED +
    r"|\b(?:differs?|different)\s+(?:from|between)\s+(?:the\s+)?(?:cpu|gpu|numpy|tpu)\b"
    r"|\b(?:can't|cannot|can not|doesn't|does not|didn't|did not|don't|not)\s+(?:get|give|return|produce)?\s*"
    r"(?:the\s+)?correct\s+results?\b"
    r"|\b(?:results?|outputs?)\b[^.;!?\n]{0,80}?\b(?:totally|completely)\s+different\b" + _NOT_OF_SPEED +
    r"|结果不一致|结果不同|结果错误|结果不对")

#: the user's machine said to run Windows ("Windows 11", "win10", "on Windows", "WSL2" (CUDA in
#: WSL goes through the Windows driver), "windows系统"); not a window of time or a sliding window
_WINDOWS_SAID = re.compile(r"(?i)(?<![A-Za-z0-9_-])(?:windows\s*(?:7|8|10|11|server|pc|machine|laptop|desktop"
                           r"|系统|上|下|电脑)|win\s?(?:7|10|11)|(?:on|under|using)\s+windows|wsl2?)(?![A-Za-z0-9_-])")


def _set(facts: dict[str, Any], path: str, value: Any) -> None:
    set_fact(facts, path, value, overwrite=True)


def extract(text: str, kn: Knowledge | None = None, branch: str | None = None) -> dict[str, Any]:
    """A partial facts document (nested, as in a facts JSON) stated by ``text``.

    A value goes in only when the text names exactly one (``fp16 vs bf16`` gives no dtype). A
    step number needs a branch to know its meaning: ``branch``, else the best branch that
    :func:`classify` finds with ``kn``; it becomes ``oom.at_step`` or
    ``numerics.first_nonfinite_step`` and is dropped for other branches.
    """
    if not text:
        return {}
    m = mentions(text)
    facts: dict[str, Any] = {}
    if len(m.dtypes) == 1:
        _set(facts, "numerics.dtype", m.dtypes[0])
    if len(m.engines) == 1:
        _set(facts, "inference.engine", m.engines[0])
    if len(m.gpus) == 1:
        _set(facts, "gpu.name", m.gpus[0])
    elif len(m.gpus) > 1:
        # several cards compared ("only happens on GTX1660ti devices; on a K80 / RTX2070
        # everything works fine"): the one the problem is said to happen on only is the job's
        from kb.gpu_models import named_in

        only = {n.upper() for t in _ONLY_ON.finditer(text) for n in named_in(t.group("card"))}
        card = next((n for n in m.gpus if n.upper() in only), None) if len(only) == 1 else None
        if card is not None:
            _set(facts, "gpu.name", card)
    from kb import prose_sizes

    for path, value in (("distributed.nnodes", prose_sizes.nodes(text)),
                        # "only one GPU running" counts the cards at work, not those the machine has
                        ("gpu.count", prose_sizes.gpu_count(_ONE_GPU_ONLY.sub(" ", text))),
                        ("training.model_params_billion", prose_sizes.params_billion(text)),
                        ("training.weight_bits", prose_sizes.weight_bits(text)),
                        ("training.full_parameter", prose_sizes.full_parameter(text)),
                        ("gpu.memory_total_mib", None if (gib := prose_sizes.gpu_memory_gib(text))
                         is None else gib * 1024)):
        if value is not None:
            _set(facts, path, value)
    if branch is None and kn is not None:
        hits = classify(text, kn)
        branch = next(iter(hits), None)
    # launch commands, flags and environment settings quoted in the words ("vllm serve ...
    # --enforce-eager", "export NCCL_P2P_DISABLE=1"): the same line reader as for artifacts
    from kb.readers.lines import LineFacts

    lf = LineFacts()
    for line in _without_worked_settings(text).splitlines():
        lf.feed(line)
    for path, value in _leaves(lf.finish()).items():
        if path.startswith("env."):
            continue  # the settings' meaning is kept; the raw variable is an artifact's
        if path == "dataloader.num_workers":
            continue  # words weigh worker counts against each other ("fine with num_workers=0")
        _set(facts, path, value)
    # a sized OOM message quoted in the words ("CUDA out of memory. Tried to allocate ...")
    # states its sizes as in a log: the numbers are the message's own, not a paraphrase
    from kb.parsers.training_log.oom import quoted_oom_messages, quoted_oom_sizes, sized_oom_facts

    sized = sized_oom_facts(text)
    # or a device OOM message in a tool's own wording ("ResourceExhaustedError: OOM when
    # allocating tensor with shape[64,372,32,32] and type float", "CUDA error: out of memory"),
    # not said not to happen ("no CUDA error: out of memory since")
    quoted = None if sized else next(
        (q for q in quoted_oom_messages(text)
         if not _NEG_BEFORE.search(text[max(0, q.start() - 28):q.start()].lower())), None)
    if quoted is not None:
        sized = quoted_oom_sizes(quoted)
    if sized or quoted is not None:
        _set(facts, "oom.occurred", True)
        for path, value in sized.items():
            _set(facts, path, value)
    if _WINDOWS_SAID.search(text):
        # the machine named as Windows (its driver may spill a full card into shared memory)
        _set(facts, "software.windows", True)
    low = _norm_text(text)
    if "card full" in low:
        # the card said to be full while the job runs (_norm_text reads it "card full"): a
        # framework's pool shows so
        _set(facts, "oom.card_said_full", True)
    device = bool(_DEVICE_MEMORY.search(low))
    if device and not _HOST_MEMORY.search(low):
        # which memory ran out, said: the card's, with no word of the host's
        _set(facts, "oom.device_memory_said", True)
    elif not device and _HOST_MEMORY_OUT.search(low):
        # or the host's ("the memory (no cuda memory) keeps increasing and the program is
        # killed"), with no word of the card's running out
        _set(facts, "oom.device_memory_said", False)
    if branch == "numerics" and _RESULT_MISMATCH.search(text) and not _NONFINITE_WORDS.search(text):
        # the numbers come out finite but wrong against a reference: what the reduced-precision
        # question asks (a NaN named in the text is the other way through the graph)
        _set(facts, "numerics.reference_mismatch", True)
    if branch == "oom" and _ON_RESUME.search(text):
        _set(facts, "oom.on_resume", True)
    if branch == "oom" and not m.steps and _LATER_IN_RUN.search(text):
        # as a step number below, without the number: the OOM came in the training loop
        _set(facts, "oom.phase", "loop")
    if len(m.steps) == 1 and branch in STEP_FACT and (
            branch != "numerics" or _NONFINITE_WORDS.search(text)):
        # a step in a numerics text is the first non-finite one only when NaN/Inf is named
        # ("loss at step 2000 is 6 % higher" is no NaN)
        _set(facts, STEP_FACT[branch], m.steps[0])
    return facts


def _leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def merge_under(explicit: dict[str, Any], extracted: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Put ``extracted`` facts under ``explicit`` ones: a missing fact is added, a differing
    one is kept as the user gave it and reported in the returned warnings."""
    import copy

    out = copy.deepcopy(explicit)
    warnings: list[str] = []
    known = _leaves(explicit)
    for path, value in _leaves(extracted).items():
        have = known.get(path)
        if have in (None, [], {}):
            _set(out, path, value)
        elif have != value:
            warnings.append(f"symptom text: says {path} = {value}, but the facts say {have}; "
                            f"using the facts")
    return out, warnings


def evidence_line(text: str, branches: dict[str, list[str]], extracted: dict[str, Any]) -> str | None:
    """One line showing which words of the text put which branch in play and which facts it
    gave, e.g. ``symptom text: numerics <- 'nan', 'loss'; numerics.dtype = fp16``."""
    parts = [f"{b} <- " + ", ".join(f"'{w}'" for w in words) for b, words in branches.items()]
    parts += [f"{p} = {v}" for p, v in _leaves(extracted).items()]
    return ("symptom text: " + "; ".join(parts)) if parts else None


def _branches_meeting(flat: dict[str, Any], kn: Knowledge) -> tuple[set[str], list[str]]:
    """``(entered, in context)`` on the artifacts' facts (flattened): the branches one of whose
    entry conditions holds, and those all of whose ``context`` conditions hold (a serving
    engine's launch command: the job is a serving job, whatever its symptom)."""
    from kb.engine.conditions import evaluate

    def holds(c: Any) -> bool:
        return evaluate(c, flat, kn) is True

    branches = list(kn.branches.values())
    return ({b.id for b in branches if any(holds(c) for c in b.entry)},
            [b.id for b in branches if b.context and all(holds(c) for c in b.context)])


#: a model's hub id with its size ("OpenAssistant/pythia-12b-sft-v8", "Qwen/Qwen2.5-7B-Instruct"):
#: what the model was trained with ("sft", "lora") is its name, not the user's job
_MODEL_ID = re.compile(r"(?<![\w/.-])[\w.-]+/[\w.-]*?\d+(?:\.\d+)?[bBmM](?![A-Za-z])[\w.-]*")
#: a model's training told as its past ("the trained model", "I trained my data", "when the
#: train process finished", "训练好的模型"): where the model came from, not the job that is slow
_TRAINED_BEFORE = re.compile(
    r"\b(?:(?:i|we|i've|we've|i have|we have|i had|we had)\s+(?:already\s+|successfully\s+)?trained"
    r"|trained\s+(?:(?:my|our|the|a|an)\s+)?(?:own\s+|custom\s+)?(?:model|models|weights|checkpoint|checkpoints|network|detector|data|dataset)"
    r"|model\s+(?:that\s+)?(?:i|we)\s+(?:have\s+)?trained"
    r"|(?:finished|completed)\s+(?:the\s+|my\s+)?train(?:ing)?(?:\s+process)?"
    r"|(?:when|after)\s+(?:the\s+|my\s+)?train(?:ing)?\s+(?:process\s+)?(?:is\s+|was\s+)?(?:finished|done|completed))\b"
    r"|训练好的|训练完", re.I)


def _yielded(branches: dict[str, list[str]], text: str, kn: Knowledge,
             in_context: Collection[str] = ()) -> tuple[dict[str, list[str]], str | None]:
    """``branches`` with each branch whose ``yields`` holds on ``text`` (or, for a yield
    ``when_setup``, on the setup: ``in_context``, the branches the inputs' setup places the
    job in) read as the branch it yields to, and a note saying so (None when none moved)."""
    low = _norm_text(text)
    job: str | None = None  # the text without model names, read only when a yield could hold
    notes: list[str] = []
    for b in list(branches):
        for y in kn.branches[b].yields:
            named = [w for w, _, _ in _spans(low, y.when_words)]
            setup = y.when_setup and y.to in in_context
            if not (named or setup):
                continue
            if job is None:
                job = _norm_text(_TRAINED_BEFORE.sub(" ", _MODEL_ID.sub(" ", text)))
            if not _spans(job, y.unless_words):
                break
        else:
            continue
        words = branches.pop(b)
        branches[y.to] = branches.get(y.to, []) + [w for w in words if w not in branches.get(y.to, [])]
        about = (f"the text is about {', '.join(repr(w) for w in named)}" if named else
                 "the job's setup places it there "
                 f"({', '.join(c.fact for c in kn.branches[y.to].context)})")
        notes.append(f"symptom text: {', '.join(repr(w) for w in words)} read as {y.to}: {about} "
                     f"and the text names no {b} job")
    return dict(sorted(branches.items(), key=lambda kv: -len(kv[1]))), "; ".join(notes) or None


def _weak_only(branches: dict[str, list[str]], kn: Knowledge) -> bool:
    """Whether every word that named a branch is one of its weak words ("slow")."""
    return bool(branches) and all(
        set(words) <= {*kn.branches[b].weak_words.en, *kn.branches[b].weak_words.zh}
        for b, words in branches.items())


def apply_text(facts: Any, kn: Knowledge) -> tuple[Any, dict[str, list[str]], list[str]]:
    """For :func:`kb.diagnose`: ``(facts with the text's facts merged under them, {branch:
    matched words}, warning lines)``. The branches are only those the text names; the caller
    uses them when the facts state no symptom. The warnings show the matched words and the
    extracted facts (the evidence taken from the text) and every disagreement."""
    from kb.engine.conditions import flatten
    from kb.facts import model_for

    text = facts.symptom_text or ""
    # the setup's sizes ("48GB of VRAM", "two nodes") are facts (extract reads them); their
    # words name no branch or cause
    from kb.prose_sizes import how_long_stated, setup_spans, slower_across_nodes, works_alone

    plain = text
    # a setup's size inside the phrase that is the symptom stays: "多卡推理比单卡慢" (both cards'
    # counts are the comparison, as "than" is in English), "only one GPU is busy at a time" (the
    # count is what is wrong), "32g显存直接溢出了" and "4090的24G显存都跑满了" (the card's memory
    # is what overflows or fills; the words are read as such by _norm_text)
    one_used = [m.span() for m in _ONE_GPU_ONLY.finditer(text)]
    symptom = one_used + [m.span() for rx in (_VRAM_OVERFLOW, _MEMORY_FULL) for m in rx.finditer(text)]
    if "比" in text:
        symptom += [m.span() for m in _MULTI_SLOWER.finditer(text)]
    for a, b in setup_spans(text):
        if _THAN.search(text[max(0, a - 24):a]) or any(c < b and a < e for c, e in symptom):
            continue  # "slower than on a single node": a comparison of setups is the symptom
        plain = plain[:a] + " " * (b - a) + plain[b:]
    # a setting said to have made it work names its remedy, not the failing job's state
    plain = _without_worked_settings(plain)
    plain = _UNIT_GLUED.sub(r"\1 \2", plain)
    # a product name's parts are no words of the user's ("deepseek-vl2-small model"); the
    # yields still read the whole text (a model's family places a job in serving)
    plain = _HYPHEN_NAME.sub(" ", plain)
    alone = works_alone(text) if text else set()
    # (what several nodes add is the network between them, a collective's branch; what several
    # GPUs add may be memory on GPU 0, a collective or a DDP check)
    compared_alone = {"works on one gpu only"} if "gpu" in alone else set()
    if alone:
        # "fine on a single node, hangs across two": the setup compared is the symptom; it reads
        # as the knowledge's words for it ("works on one node only")
        plain += " \n " + " ; ".join(f"works on one {u} only" for u in sorted(alone))
    if text and slower_across_nodes(text):
        # "multi-node training takes n times longer than single-node": the comparison is the
        # symptom, and what several nodes add is the network between them
        plain += " \n slower across nodes than on one"
    if text and how_long_stated(text):
        # "it takes around 400 seconds": a duration reported is one found too long, slowness
        # in its weakest words (it names a branch only when nothing else does)
        plain += " \n takes too long"
    branches = classify(plain, kn) if text else {}
    stated = flatten(facts.model_dump(mode="python", exclude_defaults=True))
    entered, in_context = _branches_meeting(stated, kn)
    yield_note: str | None = None
    if branches:
        # (a rate glued to its number, "1500token/second", is read as the words classify read)
        branches, yield_note = _yielded(branches, _UNIT_GLUED.sub(r"\1 \2", text), kn, in_context)
    context_note: str | None = None
    if _weak_only(branches, kn):
        # "it is very slow" beside a serving engine's launch command is about serving
        ctx = [b for b in in_context if b not in branches]
        if len(ctx) == 1:
            words = [w for ws in branches.values() for w in ws]
            why = ", ".join(c.fact for c in kn.branches[ctx[0]].context)
            context_note = (f"symptom text: {', '.join(repr(w) for w in words)} read as {ctx[0]}: "
                            f"the job's setup places it there ({why})")
            branches = {ctx[0]: words}
    extracted = extract(text, branch=facts.symptom or next(iter(branches), None))
    if facts.symptom is None:
        # words cannot be about a branch the stated setup rules out ("it hangs" on one GPU)
        known = {**flatten(extracted), **stated}
        from kb.engine.conditions import words_void

        branches = {b: w for b, w in branches.items() if not words_void(b, known, kn)}
    # the branches the text or the artifacts name: a cause's words count within them only
    # (".item()" names a compile cause, but not in a text about slow training), unless they
    # name none
    named_by = set(branches) | entered | ({facts.symptom} if facts.symptom else set())
    named_causes, said = named(plain, kn) if text else ({}, {})
    # a remedy said to have failed is no evidence of its cause, but it names the branch it was
    # tried for ("max_split_size_mb 也不行"); the words are read again only when one is said
    failed = bool(text) and _FAILED_REMEDY.search(plain) is not None
    naming = named(plain, kn, remedies=False)[0] if failed else named_causes
    if named_by:
        named_causes = {c: w for c, w in named_causes.items() if kn.causes[c].branch in named_by}
        naming = {c: w for c, w in naming.items() if kn.causes[c].branch in named_by}
    tried = sorted(set(naming) - set(named_causes) | (remedies_tried(plain, kn) if failed
                                                        else set()))
    if tried:
        # their remedy was tried and did not help: no likeness weighs them up
        extracted = {**extracted, "tried": tried}
    if named_causes:
        # a cause once per distinct word of its own (two words name it more surely than one)
        extracted = {**extracted, "mentions": sorted(c for c, w in named_causes.items()
                                                     for _ in range(min(2, len(w))))}
    if naming:
        # words that name a cause name its branch too; not the GPUs compared ("works on one gpu
        # only"), which name no one branch
        for cid, words in naming.items():
            words = [w for w in words if w not in compared_alone]
            if not words:
                continue
            b = kn.causes[cid].branch
            branches.setdefault(b, [])
            branches[b] += [w for w in words if w not in branches[b]]
        branches = dict(sorted(branches.items(), key=lambda kv: -len(kv[1])))
    # a question's answer counts in a branch the text is about (its own vocabulary, the
    # artifacts, the symptom), not one reached only through a cause's word ("checkpoint")
    about = named_by or set(branches)
    said = {k: w for k, w in said.items() if k.split(".", 1)[0] in about}
    if "oom.where=eval" in said and extracted.get("oom", {}).get("phase") == "loop":
        # "after a few epochs, in validation": later in time but in the evaluation (the branch's
        # own words for it), which the loop would rule out
        rest = {k: v for k, v in extracted["oom"].items() if k != "phase"}
        extracted = {k: v for k, v in extracted.items() if k != "oom"} | ({"oom": rest} if rest else {})
    if said:
        extracted = {**extracted, "said": sorted(said)}
    quoted = quoted_messages(text, kn) if text else []
    if quoted:
        # a tool's message quoted in the user's words is evidence of its cause (ranking and
        # the branch), but the facts it would state come only from an artifact
        have = list(facts.signatures or [])
        extracted = {**extracted, "signatures": have + [c for c in quoted if c not in have]}
    warnings: list[str] = []
    applied: dict[str, Any] = {}
    if extracted:
        explicit = facts.model_dump(mode="python", exclude_defaults=True)
        had = _leaves(explicit)
        applied = {p: v for p, v in _leaves(extracted).items() if had.get(p) in (None, [], {})}
        data, warnings = merge_under(explicit, extracted)
        facts = model_for(data, kn).model_validate(data)
    nan_note = None
    after_log = _loss_nan_after_log(facts, text) if text else None
    if after_log is not None:
        facts, nan_note = after_log
    shown = branches if facts.symptom is None else {}
    line = evidence_line(text, shown, applied)
    notes = [n for n in (context_note, yield_note, line, nan_note) if n]
    return facts, branches, notes + warnings


#: the words say the loss itself went non-finite ("after the first step, the loss_rcnn_bbox values
#: are Nan", "the loss turns to NAN", "nan loss", "loss变为nan")
_LOSS_NONFINITE = re.compile(
    r"(?i)(?<![a-z])loss(?:es|_\w+)?(?![a-z])"
    # (within the sentence, a decimal point aside, and no other metric named in between)
    r"(?:(?!grad|norm|acc|reward|metric|perplex|score)(?:[^.;；。\n]|\.(?=\d))){0,60}?"
    r"(?<![a-z])(?:nan|inf|infinity)s?(?![a-z])"
    r"|(?<![a-z])(?:nan|inf)s?\s+loss(?:es)?(?![a-z])")


def _loss_nan_after_log(facts: Any, text: str) -> tuple[Any, str] | None:
    """A pasted log's losses, all finite, beside words that say the loss went NaN: the excerpt
    ends before the failure the user reports (a log pasted up to the last good lines). The
    losses logged say nothing of how the run ended, so the NaN said is added after them; read
    alone they would rule out every cause whose loss ends non-finite. None when nothing changes."""
    num = getattr(facts, "numerics", None)
    loss = getattr(num, "loss", None) if num is not None else None
    if not loss or not isinstance(loss, list) or getattr(num, "nonfinite_count", None):
        return None
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in loss):
        return None
    low = text.lower()  # the cheap test before the regex
    if ("nan" not in low and "inf" not in low) or not _LOSS_NONFINITE.search(text):
        return None
    data = facts.model_dump(mode="python", exclude_defaults=True)
    data["numerics"]["loss"] = [*loss, math.nan]
    note = ("symptom text: the loss went NaN/Inf after the pasted log's last loss "
            f"({len(loss)} finite values logged)")
    return type(facts).model_validate(data), note
