"""Interactive triage, UI-free: ask for the symptom, then for the output of the next check, until
a cause is confirmed (the agent SOP of ``sop.yaml`` as a dialogue).

A :class:`TriageSession` holds the facts gathered so far. :meth:`TriageSession.next_step`
re-diagnoses and returns what to ask next:

* :class:`Question`: which symptom branch (only when no symptom is known and nothing puts a
  branch in play);
* :class:`CheckRequest`: the first next check of the report (command, what to look for) and
  the facts it would settle, as :class:`FactPrompt` (``gpu.utilization_samples.mean (%)?``);
  for a decision node the question's label and its answers in words come along;
* :class:`Done`: a cause is confirmed, or no check is left to ask about.

:meth:`TriageSession.answer` takes one reply: a branch choice, a fact value
(``25``, ``yes``, ``fact.path=value``), a file path, or a command's pasted output (parsed by
:func:`kb.inputs.load_inputs`); a blank reply skips the check. The CLI (``kb triage``) only
prompts and prints.
"""

from __future__ import annotations

import copy
import os
import re
import types
import typing
from typing import Any, Literal, Union

from pydantic import BaseModel, Field

from kb.engine.conditions import SUMMARIES, base_path, flatten
from kb.words import describe
from kb.engine.errors import InputError
from kb.facts import Facts, fact_units
from kb.engine.knowledge import AnyOf, Knowledge, iter_conditions
from kb.engine.steps import decision_graph
from kb.report.model import Report

MAX_STEPS = 50

_YES = {"y", "yes", "true", "1", "on", "是", "是的", "对", "有"}
_NO = {"n", "no", "false", "0", "off", "否", "不", "不是", "没有", "无"}
_ASSIGN = re.compile(r"^\s*([a-z_][a-z0-9_]*(?:\.[A-Za-z0-9_]+)+)\s*=\s*(.*)$")


class Choice(BaseModel):
    id: str
    title: str


class Question(BaseModel):
    """Which symptom is it? ``choices`` are the branches (id and title)."""

    kind: Literal["classify"] = "classify"
    text: str
    choices: list[Choice]


class FactPrompt(BaseModel):
    """One fact a check would settle, asked for directly."""

    fact: str = Field(description="the path the conditions test, e.g. gpu.utilization_samples.mean")
    unit: str = ""
    kind: Literal["number", "numbers", "integer", "bool", "choice", "text", "texts"]
    choices: list[str] = Field(default_factory=list)

    def prompt(self) -> str:
        """``gpu.utilization_samples.mean (%)?``; ``oom.occurred (yes/no)?``."""
        if self.kind == "bool":
            what = "yes/no"
        elif self.kind == "choice":
            what = "/".join(self.choices)
        elif self.kind in ("numbers", "texts"):
            what = (self.unit + ", " if self.unit else "") + "list"
        else:
            what = self.unit
        return f"{self.fact} ({what})?" if what else f"{self.fact}?"


class CheckRequest(BaseModel):
    """Run this command and give its output, a file holding it, or the value of a fact."""

    check_id: str
    title: str
    command: str
    look_for: str
    produces: list[str]
    separates: list[str]
    #: the decision node this check decides, worded, and its answers with their conditions
    question: str | None = None
    answers: list[str] = Field(default_factory=list)
    facts: list[FactPrompt] = Field(default_factory=list)


class Done(BaseModel):
    """The session is over: ``confirmed`` (a cause holds) or ``exhausted`` (nothing left)."""

    reason: Literal["confirmed", "exhausted"]
    report: Report


Step = Union[Question, CheckRequest, Done]


# -- fact types, from the Facts model ----------------------------------------------------------

def _strip(ann: Any) -> Any:
    """``Annotated[X, ...] | None`` -> ``X``."""
    while True:
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            ann = typing.get_args(ann)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if len(args) != 1:
                return ann
            ann = args[0]
        else:
            return ann


def fact_prompt(path: str) -> FactPrompt | None:
    """How to ask for the fact ``path`` (a Facts path, maybe with a summary suffix); None when
    a person cannot state it directly (a list of rank states)."""
    parts = path.split(".")
    model: Any = Facts
    ann: Any = None
    i = 0
    while i < len(parts):
        fields = getattr(model, "model_fields", None)
        if fields is None or parts[i] not in fields:
            return None
        ann = _strip(fields[parts[i]].annotation)
        i += 1
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
            continue
        break
    rest = parts[i:]
    unit = fact_units().get(base_path(path), "")
    origin = typing.get_origin(ann)
    if origin is dict:  # count maps and env: one more key
        if len(rest) != 1:
            return None
        val = _strip(typing.get_args(ann)[1])
        return FactPrompt(fact=path, unit=unit, kind="integer" if val is int else "text")
    if origin is list:
        item = _strip(typing.get_args(ann)[0])
        if isinstance(item, type) and issubclass(item, BaseModel):
            return None
        if item is str:
            return FactPrompt(fact=path, kind="texts") if not rest else None
        if rest and rest[0] in ("count", "nonfinite"):
            return FactPrompt(fact=".".join(parts[:i]), unit=unit, kind="numbers")
        if rest and rest[0] in SUMMARIES:
            return FactPrompt(fact=path, unit=unit, kind="number")
        return FactPrompt(fact=path, unit=unit, kind="numbers") if not rest else None
    if rest:
        return None
    if typing.get_origin(ann) is Literal:
        return FactPrompt(fact=path, kind="choice", choices=[str(a) for a in typing.get_args(ann)])
    if ann is bool:
        return FactPrompt(fact=path, kind="bool")
    if ann is int:
        return FactPrompt(fact=path, unit=unit, kind="integer")
    if ann is float:
        return FactPrompt(fact=path, unit=unit, kind="number")
    return FactPrompt(fact=path, unit=unit, kind="text")


def _number(text: str, unit: str) -> float:
    t = text.strip().replace(",", ".") if text.count(",") == 1 and "." not in text else text.strip()
    for suffix in (unit, "%", "x"):
        if suffix and t.lower().endswith(suffix.lower()):
            t = t[: -len(suffix)].strip()
    return float(t)


def parse_value(prompt: FactPrompt, text: str) -> Any:
    """The typed value of a reply to ``prompt``; ValueError when it does not fit."""
    t = text.strip()
    if prompt.kind == "bool":
        low = t.lower()
        if low in _YES:
            return True
        if low in _NO:
            return False
        raise ValueError("expected yes or no")
    if prompt.kind == "choice":
        for c in prompt.choices:
            if c.lower() == t.lower():
                return c
        raise ValueError(f"expected one of {', '.join(prompt.choices)}")
    if prompt.kind == "integer":
        v = _number(t, prompt.unit)
        if v != int(v):
            raise ValueError("expected a whole number")
        return int(v)
    if prompt.kind == "number":
        items = [x for x in re.split(r"[,\s;]+", t.strip("[]")) if x]
        if len(items) > 1 and base_path(prompt.fact) != prompt.fact:
            # a summary (".mean") may be answered with the samples themselves
            try:
                return [_number(x, prompt.unit) for x in items]
            except ValueError:
                pass  # "25 %": one number with its unit
        return _number(t, prompt.unit)
    if prompt.kind == "numbers":
        items = [x for x in re.split(r"[,\s;]+", t.strip("[]")) if x]
        if not items:
            raise ValueError("expected numbers")
        return [_number(x, prompt.unit) for x in items]
    if prompt.kind == "texts":
        return [x.strip() for x in t.split(",") if x.strip()]
    if not t:
        raise ValueError("expected a value")
    return t


def _set(facts: dict[str, Any], path: str, value: Any) -> None:
    *groups, key = path.split(".")
    node = facts
    for g in groups:
        nxt = node.get(g)
        if not isinstance(nxt, dict):
            nxt = node[g] = {}
        node = nxt
    node[key] = value


def _stored(prompt: FactPrompt, value: Any) -> tuple[str, Any]:
    """Where a prompted value is stored: a summary (``.mean`` = 25) becomes a one-sample list
    with that summary (``[25]``); ``.growth`` = g becomes ``[0, g]``."""
    base = base_path(prompt.fact)
    if base != prompt.fact and prompt.kind == "number":
        if isinstance(value, list):  # the samples themselves
            return base, value
        tail = prompt.fact.rsplit(".", 1)[1]
        return base, ([0.0, value] if tail == "growth" else [value])
    return prompt.fact, value


def _update(dst: dict[str, Any], src: dict[str, Any]) -> list[str]:
    """Deep-update ``dst`` with ``src`` (the newer answer wins); the paths that changed."""
    changed: list[str] = []

    def walk(d: dict[str, Any], s: dict[str, Any], prefix: str) -> None:
        for k, v in s.items():
            if isinstance(v, dict) and v and isinstance(d.get(k, {}), dict):
                walk(d.setdefault(k, {}), v, f"{prefix}{k}.")
            else:
                if d.get(k) != v:
                    changed.append(f"{prefix}{k}")
                d[k] = copy.deepcopy(v)

    walk(dst, src, "")
    return changed


def _branches_in_order(kn: Knowledge) -> list[Any]:
    """Branches in the SOP's order (the order of the classification question)."""
    order = {b: i for i, b in enumerate(kn.branches)}
    return sorted(kn.branches.values(), key=lambda b: (order.get(b.id, len(order)), b.id))


class TriageSession:
    """The state of one triage dialogue: the facts gathered so far and what was asked."""

    def __init__(self, kn: Knowledge | None = None, facts: Facts | dict[str, Any] | None = None,
                 *, lang: str = "en", overrides: dict[str, float] | None = None,
                 max_steps: int = MAX_STEPS) -> None:
        import kb

        self.kn = kn or kb.load_knowledge()
        self.lang = lang
        self.overrides = dict(overrides or {})
        if isinstance(facts, Facts):
            facts = facts.model_dump(mode="python", exclude_defaults=True)
        self.facts: dict[str, Any] = copy.deepcopy(dict(facts or {}))
        self.facts.pop("schema_version", None)
        from kb.facts_io import facts_from_data

        facts_from_data(self.facts)  # InputError, with JSON paths, for facts that do not fit
        self.max_steps = max_steps
        self.steps = 0
        self.done_checks: set[str] = set()  #: checks answered with output or skipped
        self.answered: set[str] = set()  #: facts given directly
        self.classified = False  #: the classification question was answered or skipped
        self.warnings: list[str] = []
        self.log: list[str] = []
        self._pending: Step | None = None

    # -- state ---------------------------------------------------------------------------

    def facts_model(self) -> Facts:
        return Facts.model_validate(self.facts)

    def report(self) -> Report:
        import kb

        from kb.api import Gathered, report_for

        return report_for(Gathered(self.facts_model(), warnings=list(self.warnings)), self.kn,
                          lang=self.lang, overrides=self.overrides)

    def next_step(self) -> Step:
        """Re-diagnose and return what to ask next (also remembered for :meth:`answer`)."""
        rep = self.report()
        step: Step
        if rep.status == "confirmed":
            step = Done(reason="confirmed", report=rep)
        elif self.steps >= self.max_steps:
            step = Done(reason="exhausted", report=rep)
        elif not self.classified and not self.facts.get("symptom") and not rep.branches:
            q = self.kn.sop.get("classify", {}).get("question", {})
            step = Question(text=q.get(self.lang) or q.get("en") or "Which symptom is it?",
                            choices=[Choice(id=b.id, title=b.title.get(self.lang))
                                     for b in _branches_in_order(self.kn)])
        else:
            step = self._check_request(rep) or Done(reason="exhausted", report=rep)
        self._pending = step
        return step

    def _check_request(self, rep: Report) -> CheckRequest | None:
        known = flatten(self.facts)
        for nc in rep.next_checks:
            if nc.id in self.done_checks:
                continue
            req = CheckRequest(check_id=nc.id, title=nc.title, command=nc.command,
                               look_for=nc.look_for, produces=list(nc.produces),
                               separates=list(nc.separates))
            self._fill_prompts(req, rep, known)
            return req
        return None

    def _fill_prompts(self, req: CheckRequest, rep: Report, known: dict[str, Any]) -> None:
        """The facts this check would settle for the open hypotheses, in rank order; for a
        decision node, also its label and answers."""
        units = fact_units()
        nodes = {n.id: (b, n) for b in self.kn.branches.values() for n in b.nodes}

        def produced(fact: str) -> bool:
            base = base_path(fact)
            return any(base == p or base.startswith(p + ".") or p.startswith(base + ".")
                       for p in req.produces)

        seen: set[str] = set()

        def add(fact: str) -> None:
            fp = fact_prompt(fact)
            if fp is None or fp.fact in seen or fp.fact in self.answered:
                return
            if fp.fact in known and fp.kind != "numbers":
                return
            seen.add(fp.fact)
            req.facts.append(fp)

        g = decision_graph(self.kn)
        for h in rep.hypotheses:
            if req.separates and h.cause_id not in req.separates:
                continue
            for m in h.missing:
                if produced(m):
                    add(m)
            if req.question is not None:
                continue
            # the first question on the hypothesis' path that this check decides
            for nid in h.path[:-1]:
                found = nodes.get(nid)
                if found is None:
                    continue
                _branch, node = found
                steps = [d["step"] for _, _, d in g.out_edges(nid, data=True) if d["step"].clauses]
                conds = [c for st in steps for c in iter_conditions(list(st.clauses))]
                own = node.check == req.check_id
                if not steps or all(c.fact in known for c in conds) or not (
                        own or any(produced(c.fact) for c in conds)):
                    continue
                req.question = node.label.get(self.lang)
                said_before: set[str] = set()
                for st in steps:
                    said = st.label.get(self.lang) if st.label else str(st.answer or "")
                    words = "; ".join(describe(c, self.kn, self.lang, units, self.overrides)
                                      for c in iter_conditions(list(st.clauses)))
                    if f"{said}: {words}" not in said_before:
                        said_before.add(f"{said}: {words}")
                        req.answers.append(f"{said}: {words}")
                for c in conds:
                    if c.fact not in known and (own or produced(c.fact)):
                        add(c.fact)
                break

    # -- answers -------------------------------------------------------------------------

    def kind_of(self, reply: str | None) -> Literal["skip", "choice", "assign", "path", "value", "output"]:
        """How :meth:`answer` will read a one-line ``reply`` to the pending step. A CLI reads
        further lines of pasted output only for ``output``."""
        step = self._pending
        t = (reply or "").strip()
        if not t:
            return "skip"
        if isinstance(step, Question):
            return "choice"
        if "\n" in t:
            return "output"
        if _ASSIGN.match(t) and fact_prompt(_ASSIGN.match(t).group(1)) is not None:  # type: ignore[union-attr]
            return "assign"
        if os.path.isfile(os.path.expanduser(t)):
            return "path"
        if isinstance(step, CheckRequest) and step.facts:
            try:
                parse_value(step.facts[0], t)
                return "value"
            except ValueError:
                pass
        return "output"

    def answer(self, reply: str | None) -> str:
        """Apply a reply to the pending step; returns one line saying what changed.

        Raises :class:`InputError` for a reply that cannot be used (the step stays pending).
        """
        step = self._pending if self._pending is not None else self.next_step()
        if isinstance(step, Done):
            raise InputError("triage", "the session is over", "Start a new one")
        kind = self.kind_of(reply)
        text = (reply or "").strip()
        if isinstance(step, Question):
            return self._classify(text)
        assert isinstance(step, CheckRequest)
        if kind == "skip":
            return self.skip()
        if kind == "assign":
            m = _ASSIGN.match(text)
            assert m is not None
            fp = fact_prompt(m.group(1))
            assert fp is not None
            return self.give_value(fp, m.group(2))
        if kind == "path":
            return self.give_file(os.path.expanduser(text))
        if kind == "value":
            return self.give_value(step.facts[0], text)
        return self.give_output(reply or "")

    def _classify(self, text: str) -> str:
        self.steps += 1
        step = self._pending
        assert isinstance(step, Question)
        self._pending = None
        if not text:
            self.classified = True
            self.log.append("symptom: skipped")
            return "symptom: skipped; the health checks come first"
        ids = [c.id for c in step.choices]
        chosen: str | None = None
        if text.isdigit() and 1 <= int(text) <= len(ids):
            chosen = ids[int(text) - 1]
        elif text.lower() in ids:
            chosen = text.lower()
        else:
            for c in step.choices:
                if c.title.lower() == text.lower():
                    chosen = c.id
            if chosen is None:
                from kb.symptom_text import classify

                hits = classify(text, self.kn)
                if hits:
                    chosen = next(iter(hits))
                    self.facts["symptom_text"] = text[:2000]
        if chosen is None:
            self.steps -= 1
            self._pending = step
            raise InputError(f"answer '{text}'", "no symptom branch matches",
                             f"Answer with a number 1-{len(ids)} or one of: {', '.join(ids)}")
        self.facts["symptom"] = chosen
        self.classified = True
        self.log.append(f"symptom: {chosen}")
        return f"symptom: {chosen}"

    def skip(self) -> str:
        """Skip the pending check."""
        step = self._pending
        self.steps += 1
        self._pending = None
        if isinstance(step, CheckRequest):
            self.done_checks.add(step.check_id)
            self.log.append(f"{step.check_id}: skipped")
            return f"{step.check_id}: skipped"
        if isinstance(step, Question):
            self.classified = True
        return "skipped"

    def _apply(self, new: dict[str, Any], place: str) -> list[str]:
        trial = copy.deepcopy(self.facts)
        changed = _update(trial, new)
        try:
            Facts.model_validate(trial)
        except Exception as exc:  # noqa: BLE001 - reported as the user's input problem
            from pydantic import ValidationError

            from kb.facts_io import validation_problems

            if isinstance(exc, ValidationError):
                probs = validation_problems(place, exc)
                raise InputError(place, probs[0].split(": ", 1)[-1], problems=probs) from None
            raise
        self.facts = trial
        return changed

    def give_value(self, prompt: FactPrompt, text: str) -> str:
        """Set one fact from a typed reply (``25``, ``yes``, ``20 25 18``)."""
        try:
            value = parse_value(prompt, text)
        except ValueError as exc:
            raise InputError(f"{prompt.fact}", f"{exc} (got {text.strip()!r})",
                             f"Answer {prompt.prompt()}") from None
        path, stored = _stored(prompt, value)
        new: dict[str, Any] = {}
        _set(new, path, stored)
        self._apply(new, prompt.fact)
        self.steps += 1
        self.answered.add(prompt.fact)
        step = self._pending
        self._pending = None
        if isinstance(step, CheckRequest):
            left = [f for f in step.facts if f.fact != prompt.fact and f.fact not in self.answered]
            if not left:
                self.done_checks.add(step.check_id)
        self.log.append(f"{path} = {stored}")
        return f"{path} = {stored}"

    def give_file(self, path: str) -> str:
        """Parse a file (or directory) of raw artifacts with :func:`kb.inputs.load_inputs`."""
        from kb.inputs import load_inputs

        bundle = load_inputs([path])
        return self._take_bundle(bundle, path)

    def give_output(self, text: str) -> str:
        """Parse a command's pasted output (written to a temporary file first)."""
        from kb.inputs import load_inputs

        if not text.strip():
            return self.skip()
        step = self._pending
        name = f"output of {step.check_id}" if isinstance(step, CheckRequest) else "pasted output"
        from kb.inputs_blob import Blob

        try:
            bundle = load_inputs([Blob(name, text if text.endswith("\n") else text + "\n")])
        except InputError as err:
            hint = "Paste the command's whole output, give a file path"
            if isinstance(step, CheckRequest) and step.facts:
                hint += f", or answer {step.facts[0].prompt()}"
            raise InputError(name, err.problem, hint) from None
        return self._take_bundle(bundle, name)

    def _take_bundle(self, bundle: Any, name: str) -> str:
        changed = self._apply(bundle.facts, name)
        self.warnings += [f"conflict: {c}" for c in bundle.conflicts]
        self.warnings += [n for n in bundle.notes if n not in self.warnings]
        self.steps += 1
        step = self._pending
        self._pending = None
        if isinstance(step, CheckRequest):
            self.done_checks.add(step.check_id)
        fmt = ", ".join(sorted(set(bundle.sources.values()))) or "?"
        line = (f"{name} ({fmt}): " + (", ".join(changed) if changed else "no new facts"))
        self.log.append(line)
        return line

    def saved_facts(self) -> dict[str, Any]:
        """The gathered facts as a facts JSON document."""
        return self.facts_model().model_dump(mode="json", exclude_defaults=True)
