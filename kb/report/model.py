"""The report: the output boundary. A stable, documented JSON shape (``schema_version``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Out):
    """A fact with its value and unit, and the condition it satisfied (or failed)."""

    fact: str
    value: Any = None
    unit: str = ""
    condition: str
    holds: bool | None = None


class Ref(_Out):
    id: str
    title: str
    url: str


class FixOut(_Out):
    text: str
    command: str
    references: list[Ref]


class VerifyOut(_Out):
    text: str
    command: str
    expect: str
    fact: str
    op: str
    value: Any = None


class Finding(_Out):
    """A confirmed cause: grounded in evidence, with fixes, verification and references."""

    cause_id: str
    branch: str
    title: str
    symptom: str
    why: str
    confidence: float = Field(ge=0, le=1)
    severity: Literal["fix_now", "tune", "investigate", "watch"]
    evidence: list[Evidence]
    rules: list[str]
    #: node ids from the branch's root to the cause: a path of ``kb export json``
    path: list[str] = Field(default_factory=list)
    #: other findings this cause sets off (they come after it: causal order)
    leads_to: list[str] = Field(default_factory=list)
    fixes: list[FixOut]
    verify: list[VerifyOut]
    references: list[Ref]


class Hypothesis(_Out):
    """A possible cause: nothing excludes it, some facts are missing."""

    cause_id: str
    #: node ids from the branch's root to the cause, the fewest unknown steps first
    path: list[str] = Field(default_factory=list)
    branch: str
    title: str
    confidence: float = Field(ge=0, le=1)
    holding: list[Evidence]
    missing: list[str]
    #: what ranks it (see README "How hypotheses are ranked"): the evidence score, one of its
    #: messages seen in the inputs, the user's words naming it, and the answers (node=answer)
    #: the user's words give on the way to it
    evidence: float = 0.0
    signature: bool = False
    mentioned: bool = False
    said: list[str] = Field(default_factory=list)
    #: how much the user's words read like the cause's own description (TF-IDF cosine, 0
    #: below noise); breaks ties of evidence, never confirms
    resemblance: float = 0.0
    #: the vote of the past incidents nearest the words that had this cause (0..1); breaks
    #: ties of evidence, never confirms
    precedent: float = 0.0
    #: how well the past incidents of this cause account for the words (naive Bayes
    #: log-likelihood relative to the best cause in play: 0 or below); breaks ties of
    #: evidence, never confirms
    reading: float = 0.0
    #: the branch of the first cause when this one would be its consequence (one rank's OOM,
    #: then the others waiting in a collective): ranked right after it
    follows: str | None = None


class RuledOut(_Out):
    """A cause of a branch in play that the facts exclude, and the facts that exclude it."""

    cause_id: str
    branch: str
    title: str
    because: list[Evidence]


class NextCheck(_Out):
    """A command to run next, what to look for, what it gives, which causes it separates."""

    id: str
    title: str
    command: str
    look_for: str
    produces: list[str]
    separates: list[str]
    health_check: bool = False


class LlmInfo(_Out):
    """What the optional LLM layer did (absent when it was not used)."""

    model: str
    used: bool
    verified: bool
    attempts: int = 0
    fallback_reason: str | None = None
    violations: list[str] = Field(default_factory=list)
    cached: bool = False
    #: with a dry run: the request that would have been sent (the library prints nothing)
    request_text: str | None = None


class PastIncident(_Out):
    """A public incident whose cause was established and whose words read like the user's."""

    source: str
    branch: str
    causes: list[str]
    #: TF-IDF cosine of its words with the user's (0..1)
    similarity: float = Field(ge=0, le=1)


class Report(_Out):
    """The answer of :func:`kb.diagnose`. Text fields are in the report's language."""

    schema_version: int = SCHEMA_VERSION
    kb_version: str
    lang: Literal["en", "zh"]
    status: Literal["confirmed", "hypotheses", "inconclusive", "healthy"]
    symptom: str | None = None
    branches: list[str]
    #: why each branch is in play: the rules that put it there, or the user's matched words
    branch_reasons: dict[str, list[str]] = Field(default_factory=dict)
    findings: list[Finding]
    hypotheses: list[Hypothesis]
    ruled_out: list[RuledOut]
    next_checks: list[NextCheck]
    question: str | None = None
    conclusion: list[str] = Field(min_length=3, max_length=3)
    warnings: list[str] = Field(default_factory=list)
    inputs: dict[str, str] = Field(default_factory=dict)
    #: past incidents that read like this one and had a cause shown here, closest first
    past_incidents: list[PastIncident] = Field(default_factory=list)
    markdown: str | None = Field(None, description="the LLM-phrased Markdown, when verified")
    llm: LlmInfo | None = None
