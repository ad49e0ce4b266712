"""Knowledge files: their schema (pydantic) and the loader that discovers and validates them.

Layout of a knowledge directory (``graphs/``)::

    branches/<branch>.yaml      one decision graph per symptom branch
    <branch>/<cause>.yaml       one cause per file; its id is ``<branch>.<cause>``
    checks/<name>.yaml          commands that produce facts (the SOP's tools), any number of files
    thresholds/<name>.yaml      every number a condition compares against, with its source
    references.yaml             the reference index (groups and entries)
    sop.yaml                    the agent SOP: triggers, steps, hard rules, output contract
    report.yaml                 report wording (conclusion sentences, headings)
    observed.yaml               how often each cause was behind a real incident (optional)
    precedents.yaml             past cases' words and established causes (optional)

The loader globs these paths (no registry), validates every file with the models below and
reports every problem with its file and entry. It knows nothing about the rule engine.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from .errors import KnowledgeError
from .schema import FactSchema, build_model


Op = Literal["<", "<=", ">", ">=", "==", "!=", "in", "exists", "missing", "contains"]
Severity = Literal["fix_now", "tune", "investigate", "watch"]
SEVERITY_ORDER: dict[str, int] = {"fix_now": 0, "tune": 1, "investigate": 2, "watch": 3}
#: a cause's ``prevalence`` as so many incidents of prior belief, added to how many real
#: incidents it was observed behind (``observed.yaml``): the expert's word counts for a few
#: cases, and a cause seen in none keeps a prior above zero
PREVALENCE_PSEUDO: dict[str, float] = {"very_common": 4.0, "common": 2.0, "occasional": 1.0,
                                       "rare": 0.5}
NodeKind = Literal["start", "question", "problem", "optimisable", "fixed", "tool"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Text(_Model):
    """A text in both product languages."""

    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)

    def get(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


class WordList(_Model):
    en: list[str] = Field(default_factory=list)
    zh: list[str] = Field(default_factory=list)


class Condition(_Model):
    """One declarative test on a fact: ``fact op value``.

    ``value`` may name a threshold as ``"$<threshold id>"``, or another fact as
    ``"@<fact path>"`` (compared after multiplying it by ``scale``). ``text`` overrides the
    generated human wording.
    """

    fact: str = Field(pattern=r"^[a-z_][a-z0-9_]*(\.[A-Za-z0-9_]+)*$")
    op: Op
    value: Any = None
    scale: float = 1.0
    text: Text | None = None
    #: a reading of one moment (``free``, an nvidia-smi table) that may have been taken at
    #: another moment than the failure: as support it counts when it holds and says nothing
    #: when it does not
    snapshot: bool = False
    #: a circumstance that makes the cause likelier where it holds and says nothing where it
    #: does not (GeForce cards have no PCIe peer-to-peer; P2P also breaks on data-centre cards
    #: behind ACS or an IOMMU): as support it counts when it holds, never against
    risk: bool = False
    #: a condition that lets the cause happen without saying it does (fp16 lets GEMMs miss the
    #: Tensor Core tiles; it does not say they do): required on the path, but holding it is no
    #: evidence for the cause over its siblings
    enabling: bool = False

    @property
    def other_fact(self) -> str | None:
        """The fact compared against, for ``value: "@path"``."""
        v = self.value
        return v[1:] if isinstance(v, str) and v.startswith("@") else None

    @model_validator(mode="after")
    def _value_matches_op(self) -> "Condition":
        if self.op in ("exists", "missing"):
            if self.value is not None:
                raise ValueError(f"op '{self.op}' takes no value")
        elif self.value is None:
            raise ValueError(f"op '{self.op}' needs a value")
        if self.op == "in" and not isinstance(self.value, list):
            raise ValueError("op 'in' needs a list value")
        if self.scale != 1.0 and self.other_fact is None:
            raise ValueError("'scale' applies only to a value of the form '@<fact path>'")
        return self


class AnyOf(_Model):
    """Holds when at least one of its conditions holds. ``open_if_false``: when none holds the
    step stays open (unknown) rather than failing: the evidence is not enough to decide it
    either way, so a cause past it is neither confirmed nor ruled out on it. A single condition
    is an ``any`` only so: required to confirm, and its failure says nothing against the cause
    (fp16 overflows often show after some hundred steps, and a NaN at step 60 is no sign that
    it did not)."""

    any: list[Condition] = Field(min_length=1)
    open_if_false: bool = False

    @model_validator(mode="after")
    def _one_only_when_open(self) -> "AnyOf":
        if len(self.any) < 2 and not self.open_if_false:
            raise ValueError("an 'any' of one condition is that condition: write it plainly "
                             "(or give it open_if_false: true)")
        return self


Clause = Union[Condition, AnyOf]


class Fix(_Model):
    """One remedy: words, the exact command or setting, and the references that back it."""

    text: Text
    command: str = Field(min_length=1)
    refs: list[str] = Field(min_length=1)
    #: the facts that show this fix is already in place (all hold): it is not proposed again
    applied_if: list[Clause] = Field(default_factory=list)
    #: the setup the command is written for, as a check's ``when``: a fix one of whose conditions
    #: fails on what is known is not proposed (a vLLM flag for a llama-server job); one left
    #: unknown keeps it, unless ``when_known`` (a command for a setup that must be stated)
    when: list[Condition] = Field(default_factory=list)
    when_known: bool = False


class Verification(_Model):
    """What to measure after the fix, and the change that shows it worked."""

    text: Text
    command: str = Field(min_length=1)
    expect: Condition
    #: the setup the command is written for, as a fix's (vLLM's /metrics is no llama-server's)
    when: list[Condition] = Field(default_factory=list)
    when_known: bool = False


class Examples(_Model):
    fire: list[dict[str, Any]] = Field(min_length=1)
    no_fire: list[dict[str, Any]] = Field(min_length=1)


class Attach(_Model):
    """Where a cause hangs in its branch's decision graph: under a node, on one of its answers.

    The edge ``node -> cause`` holds when the answer holds (the ``when`` of the branch's edges or
    answers with that name at that node, if any) and the cause's own conditions hold.
    """

    node: str
    answer: str | None = None
    label: Text | None = None


class Signature(_Model):
    """A message a tool prints that points to this cause, and the code that prints it."""

    pattern: str = Field(min_length=3, description="Python regex, matched case-sensitively per line")
    meaning: Text
    source: str = Field(pattern=r"^https://", description="the code or document that prints it")
    versions: str | None = None
    #: facts a reader may state when the message is seen (flattened paths -> values)
    sets: dict[str, Any] = Field(default_factory=dict)
    #: a message that speaks against this cause (a line of a job that does run on its GPU
    #: beside one saying "falling back to CPU"): it states its ``sets`` facts only; it is no
    #: evidence for the cause and names no branch
    counter: bool = False

    @model_validator(mode="after")
    def _compiles(self, info: ValidationInfo) -> "Signature":
        import re

        if info.context and info.context.get("cached"):
            return self  # compiled when the cache was written; matching compiles it again
        if self.counter and not self.sets:
            raise ValueError("a counter signature states facts: give it sets")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        return self


class Cause(_Model):
    """A root cause: where it hangs in the decision graph, the conditions of the edge into it
    (what confirms it), what to do, how to verify, what backs it."""

    id: str = Field(pattern=r"^[a-z_]+\.[a-z0-9_]+$")
    branch: str
    title: Text
    symptom: Text
    why: Text
    severity: Severity
    seed: str = Field(description="seed section it comes from, or 'beyond-seed'")
    priority: int = 0
    #: how often this cause is behind its branch's symptom in practice: among hypotheses with
    #: equal evidence, the common ones come first (a prior, never evidence)
    prevalence: Literal["very_common", "common", "occasional", "rare"] = "occasional"
    under: list[Attach] = Field(min_length=1)
    conditions: list[Clause] = Field(default_factory=list)
    supporting: list[Clause] = Field(default_factory=list)
    signatures: list[Signature] = Field(default_factory=list)
    #: where this cause's messages are evidence: a tool may print them as plain state in other
    #: settings too (NCCL logs its IB/socket choice on one node as well); a message counts, and
    #: opens the branch, only while every clause here holds on the known facts
    signature_context: list[Clause] = Field(default_factory=list)
    #: the user's own words that name this cause (en/zh), beyond its branch's vocabulary
    words: WordList = Field(default_factory=lambda: WordList())
    #: what this cause sets off downstream: cause ids or ``branch:<id>`` (an OOM on one rank
    #: shows up as a collective timeout on the others), so a report names both in causal order
    leads_to: list[str] = Field(default_factory=list)
    fixes: list[Fix] = Field(min_length=1)
    verify: list[Verification] = Field(min_length=1)
    references: list[str] = Field(min_length=1)
    examples: Examples

    @model_validator(mode="after")
    def _branch_prefix(self) -> "Cause":
        if self.id.split(".")[0] != self.branch:
            raise ValueError(f"id '{self.id}' does not start with its branch '{self.branch}'")
        return self


class Node(_Model):
    """A node of a branch's decision graph."""

    id: str
    kind: NodeKind
    label: Text
    check: str | None = None


class Edge(_Model):
    """A decision-graph edge. Edges out of a question carry ``answer`` and ``when``."""

    source: str = Field(alias="from")
    target: str = Field(alias="to")
    label: Text | None = None
    answer: str | None = None
    when: list[Clause] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Answer(_Model):
    """An answer of a question that leads to causes only (their files name it in ``under``)."""

    node: str
    answer: str
    label: Text | None = None
    when: list[Clause] = Field(min_length=1)


class Said(_Model):
    """Words with which users answer one of the graph's questions themselves ("it times out",
    "only rank 0 runs the evaluation"). They rank the causes under that answer; they never
    confirm one and never decide a step."""

    node: str
    answer: str
    words: WordList
    #: words that say the text means another answer after all ("hangs at initialization" is
    #: no hang inside a collective of the running job)
    unless: WordList = Field(default_factory=WordList)
    #: words of which one must occur too, where the question presumes a kind of job ("where did
    #: it fail: in evaluation" asks about a training run's phases; a job that only predicts has
    #: no other phase to fail in)
    only_with: WordList = Field(default_factory=WordList)


class Yield(_Model):
    """A branch's words read as another branch's in a text about that other kind of job: the
    text names one of ``when_words`` (what the job is), or ``when_setup`` and the inputs' setup
    places the job there, and none of ``unless_words`` (what would make it this branch's kind
    of job after all)."""

    to: str
    when_words: WordList = Field(default_factory=WordList)
    unless_words: WordList = Field(default_factory=WordList)
    #: also when the job's setup, as the inputs state it, places it in ``to`` (all of that
    #: branch's ``context`` holds: a serving engine's launch command), whatever the words
    when_setup: bool = False


class BranchGraph(_Model):
    """One symptom branch: its vocabulary, entry conditions and decision graph."""

    id: str
    title: Text
    symptom: Text
    seed: str
    overview_kind: NodeKind = "problem"
    words: WordList
    #: words that name this branch only when no other branch's words occur ("slow" is about a
    #: slow training loop unless the text also names compile, serving or a collective)
    weak_words: WordList = Field(default_factory=WordList)
    entry: list[Condition] = Field(default_factory=list)
    #: facts that say the job is this branch's kind of job, not that anything is wrong (a
    #: serving engine's launch command): when the user's words name only another branch's weak
    #: words ("it is very slow"), they are about this branch
    context: list[Condition] = Field(default_factory=list)
    #: facts under which the user's words cannot be about this branch (a job on one GPU of one
    #: node has no collective to hang in): when all hold, its words name nothing
    words_void_when: list[Clause] = Field(default_factory=list)
    #: the kinds of job its words are about when the text names another kind ("GPU utilization is
    #: low" said of running Llama-3-8B under ollama, with no training named, is about serving);
    #: the first that holds wins. One mapping is read as a list of one
    yields: list[Yield] = Field(default_factory=list)
    first_tools: list[str] = Field(min_length=1)
    nodes: list[Node] = Field(min_length=1)
    edges: list[Edge] = Field(min_length=1)
    answers: list[Answer] = Field(default_factory=list)
    said: list[Said] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _one_yield(cls, data: Any) -> Any:
        """A single ``yields`` mapping is a list of one."""
        if isinstance(data, dict) and isinstance(data.get("yields"), dict):
            data = {**data, "yields": [data["yields"]]}
        return data

    @property
    def root(self) -> str:
        return next(n.id for n in self.nodes if n.kind == "start")


class Check(_Model):
    """A command that produces facts: one of the SOP's tools."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    title: Text
    command: str = Field(min_length=1)
    look_for: Text
    produces: list[str] = Field(min_length=1)
    cost: int = Field(ge=1, le=10, description="1 = seconds and harmless; 10 = a rerun")
    health_check: bool = False
    branches: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    #: the setup the command is written for: a check one of whose conditions fails on what is
    #: known is not suggested (a vLLM command for an Ollama server); one left unknown keeps it,
    #: unless ``when_known`` (a command for a setup that must be stated)
    when: list[Condition] = Field(default_factory=list)
    when_known: bool = False


class Threshold(_Model):
    """A number used by conditions, with its unit and where it comes from."""

    id: str
    value: float
    unit: str = ""
    source: str
    text: Text


class RefGroup(_Model):
    id: str
    title: Text


class Reference(_Model):
    """An authoritative page a fix cites."""

    id: str
    group: str
    title: str
    url: str = Field(pattern=r"^https://")
    seed: bool = False
    about: Text
    verified: bool = True
    confirmed_by: str | None = None
    note: str | None = None


class References(_Model):
    groups: list[RefGroup] = Field(min_length=1)
    references: list[Reference] = Field(min_length=1)


class GraphIndex(_Model):
    """What a diagnosis asks of the decision graph, answered by networkx when the knowledge
    is loaded (:func:`engine.steps.compute_index`) and cached with it, so that a diagnosis
    runs without importing a graph library."""

    #: every node in a topological order of the decision graph
    order: list[str]
    #: node -> its incoming steps as (parent node, step id)
    into: dict[str, list[tuple[str, str]]]
    #: node -> its ancestors and itself
    ancestors: dict[str, list[str]]
    #: node -> the length of the shortest path from its branch's root
    depth: dict[str, int]
    #: node -> its branch
    branch: dict[str, str]


class Observed(_Model):
    """How often each cause was behind a real incident of its branch: counted over a corpus of
    public incidents with an established cause (``observed.yaml``, written by a script from
    the corpus, never by hand). A prior for ranking only; never evidence."""

    #: where the counts come from (the corpus folders) and how they were made
    source: str
    #: incidents of each branch in the corpus
    incidents: dict[str, int]
    #: incidents in which the cause was an accepted answer (causes never seen are left out)
    accepted: dict[str, int]
    #: cause -> another cause (after it in sort order) -> incidents in which both were accepted
    together: dict[str, dict[str, int]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _counts(self) -> "Observed":
        counts = {**self.incidents, **self.accepted,
                  **{f"{a} + {b}": n for a, row in self.together.items() for b, n in row.items()}}
        bad = [k for k, v in counts.items() if v < 0]
        if bad:
            raise ValueError(f"negative counts: {', '.join(bad)}")
        over = [f"{a} + {b}" for a, row in self.together.items() for b, n in row.items()
                if n > min(self.accepted.get(a, n), self.accepted.get(b, n))]
        if over:
            raise ValueError(f"counted together more often than alone: {', '.join(over)}")
        return self


class Precedent(_Model):
    """A past case whose cause was established (``precedents.yaml``, written by a script from
    a corpus of public incidents, never by hand): its words weigh hypotheses by likeness,
    never as evidence."""

    #: where the case was reported (a public thread): a plain http(s) URL
    source: str = Field(pattern=r"^https?://[^\s<>\"'`]+$")
    branch: str
    #: the causes accepted as its answer (none: its cause was outside the knowledge)
    accepted: list[str] = Field(default_factory=list)
    #: what the reporter said, before the cause was known
    words: str = Field(min_length=1)


class Knowledge(_Model):
    """The whole validated knowledge base. Built by :func:`load`, never by hand."""

    root: str
    digest: str
    branches: dict[str, BranchGraph]
    causes: dict[str, Cause]
    checks: dict[str, Check]
    thresholds: dict[str, Threshold]
    references: dict[str, Reference]
    ref_groups: dict[str, RefGroup]
    sop: dict[str, Any]
    report_text: dict[str, Any]
    fact_schema: FactSchema
    #: the decision graph's queries, filled by :func:`load` (None: computed on first use)
    index: GraphIndex | None = None
    #: the causes' descriptions as TF-IDF (:func:`engine.resemblance.describe_causes`), filled
    #: by :func:`load` and cached with it as one JSON text: validating a string is free, and
    #: only a diagnosis with text parses it (None: computed on first use)
    descriptions: str | None = None
    #: how often each cause was behind a real incident (None: no observed.yaml)
    observed: Observed | None = None
    #: past cases' words as TF-IDF (:func:`engine.precedents.index_precedents`), built by
    #: :func:`load` from ``precedents.yaml`` and cached as one JSON text, parsed only by a
    #: diagnosis with text (None: no precedents)
    precedents: str | None = None

    def prior(self) -> dict[str, float]:
        """Each cause's share of its branch's incidents, the prior that orders hypotheses of
        equal evidence: its ``prevalence`` as a few incidents of belief plus the incidents it
        was observed behind, over the same sum for its whole branch."""
        seen = self.observed.accepted if self.observed else {}
        mass = {cid: seen.get(cid, 0) + PREVALENCE_PSEUDO[c.prevalence]
                for cid, c in self.causes.items()}
        total: dict[str, float] = {}
        for cid, m in mass.items():
            total[self.causes[cid].branch] = total.get(self.causes[cid].branch, 0.0) + m
        return {cid: m / total[self.causes[cid].branch] for cid, m in mass.items()}

    def overlap(self) -> dict[tuple[str, str], float]:
        """(a, b) -> the share of a's prior mass (its incidents plus its ``prevalence``) in which
        b was accepted too: how little a adds to a list that already holds b."""
        if not self.observed:
            return {}
        seen = self.observed.accepted
        out: dict[tuple[str, str], float] = {}
        for a, row in self.observed.together.items():
            for b, n in row.items():
                if a in self.causes and b in self.causes:
                    for x, y in ((a, b), (b, a)):
                        mass = seen.get(x, 0) + PREVALENCE_PSEUDO[self.causes[x].prevalence]
                        out[(x, y)] = n / mass
        return out

    def facts_model(self, groups: Any = None) -> type[BaseModel]:
        """The input model the fact schema describes (built once per knowledge). ``groups``
        (names) gives the smaller model of only those groups, for validating a document that
        holds no other: same values and errors, a fraction of the build time."""
        sel = None if groups is None else frozenset(groups) & set(self.fact_schema.groups)
        if sel is not None and len(sel) == len(self.fact_schema.groups):
            sel = None
        key = (self.digest + self.root, sel)
        model = _FACT_MODELS.get(key)
        if model is None:
            model = _FACT_MODELS[key] = build_model(self.fact_schema, tuple(self.branches),
                                                    groups=sel)
        return model

    def threshold_value(self, name: str, overrides: dict[str, float] | None = None) -> float:
        if overrides and name in overrides:
            return overrides[name]
        return self.thresholds[name].value


_FACT_MODELS: dict[tuple[str, frozenset[str] | None], type[BaseModel]] = {}


def _read_yaml(path: Path) -> Any:
    import yaml  # only when the files are read: a warm start reads the JSON cache

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster
    try:
        with path.open("rb") as fh:
            return yaml.load(fh, Loader=loader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise KnowledgeError(where, f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except OSError as exc:
        raise KnowledgeError(str(path), f"cannot read ({exc.strerror})") from None


def _errors(place: str, exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        out.append(f"{place}{(' ' + loc) if loc else ''}: {err['msg']}")
    return out


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.yaml") if not p.name.startswith("."))


def _code_digest() -> str:
    """The engine's own source: a cache written by other code is never read back."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for p in sorted(here.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _digest(root: Path) -> str:
    """The knowledge's content (names and bytes of every file), not its timestamps. Walked
    with ``os.walk`` and plain paths: it runs on every start, and pathlib's glob costs
    milliseconds of it."""
    h = hashlib.sha256()
    base = str(root)
    names: list[str] = []
    for d, dirs, files in os.walk(base):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        names += [os.path.join(d, f) for f in files if f.endswith(".yaml") and not f.startswith(".")]
    for p in sorted(names):
        with open(p, "rb") as fh:
            h.update(os.path.relpath(p, base).encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()[:20]


#: how many cached knowledge versions to keep (each is one JSON file of ~1.2 MB)
CACHE_KEEP = 8


def cache_dir() -> Path | None:
    """Where the validated knowledge is cached: ``$KB_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/kb`` (``~/.cache/kb``); None when ``KB_NO_CACHE`` is set."""
    if os.environ.get("KB_NO_CACHE"):
        return None
    base = os.environ.get("KB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kb")
    return Path(base)


def _cache_path(digest: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / f"knowledge-{_code_digest()}-{digest}.json"


def _write_cache(cache: Path, kn: "Knowledge") -> None:
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(kn.model_dump_json(), encoding="utf-8")
        os.replace(tmp, cache)  # atomic: a reader sees the old file or the whole new one
        old = sorted(cache.parent.glob("knowledge-*.json"), key=lambda p: p.stat().st_mtime)
        for stale in old[:-CACHE_KEEP]:
            stale.unlink(missing_ok=True)
    except OSError:  # a read-only home is fine: we just do not cache
        pass


def load(root: str | os.PathLike[str], *, use_cache: bool = True) -> Knowledge:
    """Load and validate every knowledge file under ``root``.

    Raises :class:`KnowledgeError` listing every problem (file and entry) at once. The
    validated knowledge is cached as JSON (data, never pickle), keyed by the engine's source
    and the knowledge files' content, because parsing and validating YAML is most of a cold
    start; the cached JSON is validated again by the same models when read.
    """
    root = Path(root)
    if not root.is_dir():
        raise KnowledgeError(str(root), "knowledge directory not found")
    digest = _digest(root)
    cache = _cache_path(digest) if use_cache else None
    if cache is not None and cache.is_file():
        try:
            kn = Knowledge.model_validate_json(cache.read_bytes(), context={"cached": True})
            if kn.root == str(root):
                return kn
        except (OSError, ValueError):  # a damaged or foreign cache is rebuilt
            pass
    kn, cases = _load_uncached(root, digest)
    from .steps import compute_index  # networkx: only when the knowledge is (re)built

    from .precedents import index_precedents
    from .resemblance import describe_causes

    kn = kn.model_copy(update={
        "index": compute_index(kn), "descriptions": describe_causes(kn),
        "precedents": index_precedents((c.source, c.branch, c.accepted, c.words) for c in cases)
        if cases else None})
    if cache is not None:
        _write_cache(cache, kn)
    return kn


def _load_uncached(root: Path, digest: str) -> tuple[Knowledge, list[Precedent]]:
    problems: list[str] = []

    def model(cls: type[BaseModel], data: Any, place: str) -> Any:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems.extend(_errors(place, exc))
            return None

    branches: dict[str, BranchGraph] = {}
    for path in sorted((root / "branches").glob("*.yaml")):
        b = model(BranchGraph, _read_yaml(path), str(path))
        if b is None:
            continue
        if b.id != path.stem:
            problems.append(f"{path} id: '{b.id}' must equal the file name '{path.stem}'")
        branches[b.id] = b

    causes: dict[str, Cause] = {}
    seen_at: dict[str, Path] = {}
    for path in _files(root):
        rel = path.relative_to(root)
        if len(rel.parts) != 2 or rel.parts[0] not in branches or path.name == "facts.yaml":
            continue
        c = model(Cause, _read_yaml(path), str(path))
        if c is None:
            continue
        expected = f"{rel.parts[0]}.{path.stem}"
        if c.id != expected:
            problems.append(f"{path} id: '{c.id}' must equal its path '{expected}'")
        if c.id in seen_at:
            problems.append(f"{path} id: duplicate cause id '{c.id}' (also in {seen_at[c.id]})")
        seen_at[c.id] = path
        causes[c.id] = c

    def keyed(paths: list[Path], cls: type[BaseModel], key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        where: dict[str, Path] = {}
        if not paths:
            problems.append(f"{root}: no file holds '{key}'")
        for path in paths:
            data = _read_yaml(path)
            if not isinstance(data, dict) or not isinstance(data.get(key), list):
                problems.append(f"{path}: expected a mapping with a list '{key}'")
                continue
            for i, entry in enumerate(data[key]):
                label = entry.get("id", i) if isinstance(entry, dict) else i
                m = model(cls, entry, f"{path} {key}[{label}]")
                if m is None:
                    continue
                if m.id in out:
                    problems.append(f"{path} {key}[{label}]: duplicate id '{m.id}' "
                                    f"(also in {where[m.id]})")
                out[m.id] = m
                where[m.id] = path
        return out

    checks = keyed(sorted((root / "checks").glob("*.yaml")), Check, "checks")
    thresholds = keyed(sorted((root / "thresholds").glob("*.yaml")), Threshold, "thresholds")
    refs_file = [root / "references.yaml"] if (root / "references.yaml").exists() else []
    ref_groups = keyed(refs_file, RefGroup, "groups")
    references = keyed(refs_file, Reference, "references")
    sop = _read_yaml(root / "sop.yaml") if (root / "sop.yaml").exists() else None
    report_text = _read_yaml(root / "report.yaml") if (root / "report.yaml").exists() else None
    if not isinstance(sop, dict):
        problems.append(f"{root / 'sop.yaml'}: expected a mapping")
        sop = {}
    facts_file = root / "facts.yaml"
    fact_schema = model(FactSchema, _read_yaml(facts_file), str(facts_file)) if \
        facts_file.exists() else None
    if fact_schema is None and not facts_file.exists():
        problems.append(f"{facts_file}: the fact schema is missing")
    elif fact_schema is not None:
        problems.extend(f"{facts_file} {p}" for p in fact_schema.problems())
    if not isinstance(report_text, dict):
        problems.append(f"{root / 'report.yaml'}: expected a mapping")
        report_text = {}
    observed_file = root / "observed.yaml"
    observed = model(Observed, _read_yaml(observed_file), str(observed_file)) if \
        observed_file.exists() else None
    if observed is not None:
        problems.extend(f"{observed_file} accepted: unknown cause '{cid}'"
                        for cid in observed.accepted if cid not in causes)
        problems.extend(f"{observed_file} incidents: unknown branch '{b}'"
                        for b in observed.incidents if b not in branches)
        problems.extend(f"{observed_file} together: unknown cause '{cid}'"
                        for cid in sorted({a for a in observed.together} |
                                          {b for row in observed.together.values() for b in row})
                        if cid not in causes)
    cases: list[Precedent] = []
    cases_file = root / "precedents.yaml"
    if cases_file.exists():
        data = _read_yaml(cases_file)
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
            problems.append(f"{cases_file}: expected a mapping with a list 'cases'")
        else:
            sources: set[str] = set()
            for i, entry in enumerate(data["cases"]):
                case = model(Precedent, entry, f"{cases_file} cases[{i}]")
                if case is None:
                    continue
                where = f"{cases_file} cases[{i}]"
                if case.source in sources:
                    problems.append(f"{where}: duplicate source '{case.source}'")
                sources.add(case.source)
                if case.branch not in branches:
                    problems.append(f"{where} branch: unknown branch '{case.branch}'")
                problems.extend(f"{where} accepted: unknown cause '{cid}'"
                                for cid in case.accepted if cid not in causes)
                cases.append(case)
    order = (sop.get("classify") or {}).get("branches") or []
    rank = {b: i for i, b in enumerate(order)}
    branches = dict(sorted(branches.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))
    if problems:
        raise KnowledgeError(str(root), f"{len(problems)} problem(s) in the knowledge files",
                             problems=problems)
    return Knowledge(
        root=str(root), digest=digest, branches=branches, causes=dict(sorted(causes.items())),
        checks=checks, thresholds=thresholds, references=references, ref_groups=ref_groups,
        sop=sop, report_text=report_text, fact_schema=fact_schema, observed=observed,
    ), cases


def iter_conditions(clauses: list[Clause]) -> list[Condition]:
    """Flatten clauses (conditions and any-of groups) into their conditions."""
    out: list[Condition] = []
    for cl in clauses:
        out.extend(cl.any if isinstance(cl, AnyOf) else [cl])
    return out
