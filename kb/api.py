"""The library API: load the knowledge, diagnose facts, get a worded report."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Union

from kb.engine.diagnosis import Reasoner
from kb.engine.errors import InputError
from kb.engine.knowledge import Knowledge
from kb.loaded import load_knowledge
from kb.facts_io import facts_from_data, load_facts_file
from kb.inputs_blob import Blob
from kb.report.build import ReportBuilder
from kb.report.model import Report

from kb import __version__  # one version, kept in kb/__init__.py

_REASONERS: dict[tuple[str, tuple[tuple[str, float], ...]], Reasoner] = {}


#: how much of the artifacts' prose is compared with the causes' descriptions
PROSE_FOR_RESEMBLANCE = 16384


def check_overrides(kn: Knowledge, overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Validate threshold overrides against the knowledge's threshold ids."""
    out: dict[str, float] = {}
    for k, v in (overrides or {}).items():
        if k not in kn.thresholds:
            close = [t for t in kn.thresholds if k.split(".")[-1] in t or t.split(".")[0] in k]
            hint = f"Known thresholds include: {', '.join(sorted(close or kn.thresholds)[:8])}"
            raise InputError(f"--set {k}", "unknown threshold", hint)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"--set {k}", f"expected a number, got {v!r}")
        out[k] = float(v)
    return out


def reasoner(kn: Knowledge, overrides: Mapping[str, float] | None = None) -> Reasoner:
    """A compiled reasoner for this knowledge and these threshold overrides (cached)."""
    ov = check_overrides(kn, overrides)
    key = (kn.digest + kn.root, tuple(sorted(ov.items())))
    r = _REASONERS.get(key)
    if r is None:
        r = Reasoner(kn, ov)
        _REASONERS[key] = r
    return r


def as_facts(facts: Any) -> Any:
    """Accept a Facts model, a mapping, or a path to a facts JSON file."""
    from pydantic import BaseModel

    if isinstance(facts, BaseModel):
        return facts
    if isinstance(facts, Mapping):
        return facts_from_data(dict(facts))
    return load_facts_file(facts)


Input = Union[str, "os.PathLike[str]", bytes, bytearray, Blob, BinaryIO]


@dataclass
class Gathered:
    """What the inputs say, before reasoning: the validated facts and how they were read."""

    facts: Any
    warnings: list[str] = field(default_factory=list)
    #: input name -> detected format
    sources: dict[str, str] = field(default_factory=dict)
    conflicts: bool = False
    #: the artifacts' free text (bounded), whose words name a branch when nothing else does
    prose: str = ""


def _as_inputs(inputs: Sequence[Input] | Input | None) -> list[Any]:
    """Paths stay paths; a ``str`` that names no file is the text itself (pasted output)."""
    if inputs is None:
        return []
    if isinstance(inputs, (str, bytes, bytearray, Blob, os.PathLike)) or hasattr(inputs, "read"):
        inputs = [inputs]  # one artifact given bare
    elif not isinstance(inputs, Iterable):
        raise TypeError(f"inputs: a path, text, bytes, a stream or a list of them, "
                        f"not {type(inputs).__name__}")
    out: list[Any] = []
    for i, item in enumerate(inputs, 1):  # type: ignore[arg-type]
        if isinstance(item, str) and item != "-" and ("\n" in item or not os.path.exists(item)):
            out.append(Blob(f"<text {i}>", item.encode("utf-8")))
        elif isinstance(item, (bytes, bytearray)):
            out.append(Blob(f"<bytes {i}>", bytes(item)))
        elif hasattr(item, "read") and not isinstance(item, Blob):
            out.append(Blob(getattr(item, "name", None) or f"<stream {i}>", item))
        else:
            out.append(item)
    return out


def gather(facts: Any = None, *, inputs: Sequence[Input] | Input | None = (),
           input_format: str | None = None, symptom: str | None = None) -> Gathered:
    """Explicit facts + parsed artifacts + the user's words -> one validated facts model.

    Explicit facts win over what the artifacts say; a disagreement is kept as a warning.
    """
    got = Gathered(facts=None)
    explicit: dict[str, Any] = {}
    if facts is not None:
        explicit = as_facts(facts).model_dump(mode="json", exclude_defaults=True)
        got.sources[str(facts) if isinstance(facts, (str, os.PathLike)) else "facts"] = "facts"
    data = explicit
    items = _as_inputs(inputs)
    if items:
        # the readers (and their compiled patterns) load only when there are artifacts
        from kb.inputs import load_inputs, merge_facts

        bundle = load_inputs(items, input_format)
        data, merge_conflicts = merge_facts(explicit, bundle.facts)
        conflicts = list(bundle.conflicts) + list(merge_conflicts)
        got.conflicts = bool(conflicts)
        got.warnings += [f"conflict: {c}" for c in conflicts] + list(bundle.notes)
        got.sources.update(bundle.sources)
        got.prose = "\n".join(bundle.prose)
    if symptom:
        data = dict(data)
        data["symptom_text"] = symptom
    got.facts = facts_from_data(data, "facts" if facts is not None else "inputs")
    return got


def diagnose(
    facts: Any = None,
    *,
    inputs: Sequence[Input] | Input | None = (),
    input_format: str | None = None,
    symptom: str | None = None,
    lang: str = "en",
    overrides: Mapping[str, float] | None = None,
    knowledge: Knowledge | None = None,
    llm: Any = None,
    without_precedents: Collection[str] = (),
) -> Report:
    """Diagnose a job and return the worded :class:`Report`; the whole operation.

    ``facts``: a Facts model, a mapping, or a path to a facts JSON file. ``inputs``: raw
    artifacts, each a path (file or directory), the text itself, bytes, a binary stream or a
    :class:`Blob` (name + data); formats are detected (``input_format`` forces one).
    ``symptom``: the problem in the user's words (en or zh). ``overrides`` replaces thresholds
    by id (``{"gpu_util.low": 60}``). ``llm`` (a model name or an ``LlmOptions``) phrases the
    report with a verified LLM answer. ``without_precedents``: sources of past incidents left
    out of the precedents (to score a case the corpus holds). Raises :class:`kb.KbError`
    subclasses; prints nothing.
    """
    if lang not in ("en", "zh"):
        raise InputError("lang", f"unknown language {lang!r}", "Use en or zh")
    if facts is None and not inputs and not symptom:
        raise InputError("diagnose", "nothing to diagnose",
                         "Give facts, inputs (artifacts) or a symptom in words")
    kn = knowledge or load_knowledge()
    g = gather(facts, inputs=inputs, input_format=input_format, symptom=symptom)
    return report_for(g, kn, lang=lang, overrides=overrides, llm=llm,
                      without_precedents=without_precedents)


def _derive(f: Any, kn: Knowledge) -> tuple[Any, list[str]]:
    """Facts that follow from others, where nothing measured them: what the GPU's product name
    tells (graphs/gpus.yaml), whether the model fits on one card (kb.weights), whether the
    serving engine holds a memory pool (kb.memory_pools), how slow a short timing's first
    call was (kb.warmup) and how crowded the host's cores are (kb.cpu_load)."""
    from kb.facts import model_for

    def part(group: str, *names: str) -> dict[str, Any]:
        g = getattr(f, group, None)  # a partial model holds only the groups given
        return {n: v for n in names if g is not None and (v := getattr(g, n, None)) is not None}

    # what could be derived, asked on the few facts it touches (a full dump costs more)
    probe = {"gpu": part("gpu", "name", "compute_capability", "memory_total_mib", "count"),
             "distributed": part("distributed", "nvlink_present", "world_size", "nnodes"),
             "inference": part("inference", "tensor_parallel_size", "tp_all_nvlink", "engine",
                               "gpus_per_replica", "unsplit_weights_fraction",
                               "gpu_memory_utilization"),
             "training": part("training", "model_params_billion", "weight_bits", "full_parameter",
                              "zero_stage", "step_time_ms"),
             "compile": part("compile", "first_call_ratio"),
             "cpu": part("cpu", "cores", "load_average", "omp_threads", "load_per_core",
                         "threads_per_core", "workers_per_core"),
             "dataloader": part("dataloader", "num_workers"),
             "numerics": part("numerics", "dtype"),
             "oom": part("oom", "total_capacity_mib", "weights_fraction", "training_state_fraction",
                         "model_exceeds_card", "framework_preallocates", "pool_fraction")}
    notes: list[str] = []
    if probe["gpu"].get("name"):
        from kb.gpu_models import complete

        notes += complete(probe)
    if probe["training"].get("model_params_billion") is not None:
        from kb.weights import complete as weights

        notes += weights(probe)
    if probe["inference"].get("engine"):
        from kb.memory_pools import complete as pools

        notes += pools(probe)
    if probe["training"].get("step_time_ms"):
        from kb.warmup import complete as warmup

        notes += warmup(probe)
    if probe["cpu"].get("cores"):
        from kb.cpu_load import complete as cpu_load

        notes += cpu_load(probe)
    if not notes:
        return f, []
    data = f.model_dump(mode="python", exclude_defaults=True)
    for group, values in probe.items():
        if values:
            data.setdefault(group, {}).update(values)
    return model_for(data, kn).model_validate(data), [f"derived: {n}" for n in notes]


def report_for(g: Gathered, kn: Knowledge, *, lang: str = "en",
               overrides: Mapping[str, float] | None = None, llm: Any = None,
               without_precedents: Collection[str] = ()) -> Report:
    """Reason over gathered facts and word the report (the second half of :func:`diagnose`)."""
    f = g.facts
    r = reasoner(kn, overrides)
    extra: dict[str, list[str]] = {}
    warn = list(g.warnings)
    if f.symptom_text:  # the user's words give branches and facts UNDER explicit ones
        from kb.symptom_text import apply_text

        f, cls, text_notes = apply_text(f, kn)
        warn += text_notes
        if f.symptom is None:
            extra = {b: [f"symptom_text:{w}" for w in words] for b, words in cls.items()}
    f, derived = _derive(f, kn)
    warn += derived
    fallback = None
    if g.prose and f.symptom is None:
        def fallback() -> dict[str, list[str]]:  # read only when nothing else names a branch
            from kb.symptom_text import text_branches

            return {b: [f"artifact_text:{w}" for w in words]
                    for b, words in text_branches(g.prose, kn).items()}
    # the artifacts' own prose also reads like a cause or not (ties of evidence only); its
    # head is enough and bounds the work
    like_text = None
    if f.symptom_text:
        from kb.symptom_text import without_failed_remedies

        like_text = without_failed_remedies(f.symptom_text)
    d = r.diagnose(f, extra_branches=extra, fallback_branches=fallback,
                   more_text=g.prose[:PROSE_FOR_RESEMBLANCE], like_text=like_text,
                   without_precedents=frozenset(without_precedents))
    for b, why in d.branch_reasons.items():  # say why a branch opened on the text alone
        words = [w.split(":", 1)[1] for w in why if w.startswith("artifact_text:")]
        if words:
            warn.append(f"artifact text: {b} <- " + ", ".join(f"'{w}'" for w in words)
                        + " (no fact or message put a branch in play; hypotheses only)")
        setup = [w.split(":", 1)[1] for w in why if w.startswith("context:")]
        if setup:
            warn.append(f"setup: {b} <- " + ", ".join(setup) + " (the facts say what kind of job "
                        "this is; no fact or message named a problem; hypotheses only)")
        like = [w.split(":", 1)[1] for w in why if w.startswith("resembles:")]
        if like:
            warn.append(f"text: {b} <- reads like '{kn.causes[like[0]].title.get(lang)}' (no word, "
                        "fact or message named a branch; hypotheses only)")
        past = [w.split(":", 1)[1] for w in why if w.startswith("precedents:")]
        if past:
            warn.append(f"text: {b} <- reads like past incidents of this kind ({', '.join(past)}; "
                        "no word, fact, message or cause's description named a branch; "
                        "hypotheses only)")
    rep = ReportBuilder(kn, lang, r.overrides).build(
        d, f, warnings=warn, inputs=dict(g.sources), kb_version=__version__,
        conflicts=g.conflicts)
    if llm is not None:
        from kb.llm import phrase  # imported only when asked for: litellm is slow to import

        rep = phrase(rep, kn, llm)
    return rep
