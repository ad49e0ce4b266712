"""The prior from real incidents (``graphs/observed.yaml``): written from the corpora by
``scripts/count_observed.py``, validated on load, and what orders hypotheses of equal evidence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kb
from kb.engine.knowledge import PREVALENCE_PSEUDO, load

ROOT = Path(__file__).resolve().parents[2]


def test_the_counts_are_those_of_the_corpora() -> None:
    # a case added to tests/incidents or tests/heldout changes the prior only through the
    # script: the file must say what the corpora say
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "count_observed.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_the_counts_cover_every_branch_and_name_only_known_causes(kn) -> None:
    obs = kn.observed
    assert obs is not None
    assert set(obs.incidents) == set(kn.branches)
    assert set(obs.accepted) <= set(kn.causes)
    # an incident's accepted causes may be several, but never more than the incidents
    assert all(0 < n <= sum(obs.incidents.values()) for n in obs.accepted.values())


def test_prior_shares_sum_to_one_per_branch(kn) -> None:
    prior = kn.prior()
    for b in kn.branches:
        assert sum(v for c, v in prior.items() if kn.causes[c].branch == b) == pytest.approx(1.0)
    assert all(v > 0 for v in prior.values())  # a cause never seen keeps its belief


def test_without_counts_the_prior_is_the_prevalence(edited_graphs) -> None:
    root = edited_graphs("observed.yaml", "accepted:", "unused_accepted:")
    (root / "observed.yaml").unlink()
    kn = load(root, use_cache=False)
    assert kn.observed is None
    prior = kn.prior()
    for b in kn.branches:
        ids = [c for c in kn.causes if kn.causes[c].branch == b]
        order = sorted(ids, key=lambda c: -prior[c])
        weights = [PREVALENCE_PSEUDO[kn.causes[c].prevalence] for c in order]
        assert weights == sorted(weights, reverse=True), b


def test_more_observed_incidents_rank_a_cause_first(edited_graphs) -> None:
    # two causes of one branch, equal evidence: the one behind more incidents comes first
    # "oom.fragmentation: 7" becomes "oom.fragmentation: 5007"
    root = edited_graphs("observed.yaml", "  oom.fragmentation: ", "  oom.fragmentation: 500")
    kn = load(root, use_cache=False)
    rep = kb.diagnose({"symptom": "oom"}, knowledge=kn)
    assert rep.hypotheses[0].cause_id == "oom.fragmentation"
    assert kb.diagnose({"symptom": "oom"}).hypotheses[0].cause_id != "oom.fragmentation"


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("  oom.fragmentation:", "  oom.no_such_cause: 3\n  oom.fragmentation:",
     "unknown cause 'oom.no_such_cause'"),
    ("  oom: ", "  disk: 3\n  oom: ", "unknown branch 'disk'"),
    ("  oom: ", "  oom: -", "negative counts"),
])
def test_bad_counts_name_the_file(edited_problems, old: str, new: str, problem: str) -> None:
    text = edited_problems("observed.yaml", old, new)
    assert "observed.yaml" in text and problem in text, text


def _row(kn, a: str) -> str:
    """The lines of observed.yaml that count a together with the causes after it."""
    return f"  {a}:\n" + "".join(f"    {c}: {n}\n" for c, n in kn.observed.together[a].items())


def test_a_cause_usually_accepted_beside_the_first_ranks_below_one_that_adds_more(
        kn, edited_graphs) -> None:
    # vague words: the prior orders the hypotheses, and a cause accepted together with the first
    # in nearly all its incidents adds little as the second answer
    base = [h.cause_id for h in kb.diagnose({"symptom": "oom"}).hypotheses]
    assert base[:2] == ["oom.startup_too_large", "oom.host_ram_oom"]
    # host_ram_oom's incidents all counted together with startup_too_large
    row = _row(kn, "oom.host_ram_oom")
    n = kn.observed.together["oom.host_ram_oom"]["oom.startup_too_large"]
    root = edited_graphs("observed.yaml", row, row.replace(
        f"oom.startup_too_large: {n}\n",
        f"oom.startup_too_large: {kn.observed.accepted['oom.host_ram_oom']}\n"))
    order = [h.cause_id for h in
             kb.diagnose({"symptom": "oom"}, knowledge=load(root, use_cache=False)).hypotheses]
    # the first answer is the prior's whatever the pairs say
    assert order[0] == base[0]
    assert order.index("oom.host_ram_oom") > 2, order


def test_without_pairs_the_prior_alone_orders_the_ties(kn, edited_graphs) -> None:
    # activations_optimizer_state is accepted beside startup_too_large in nearly all its
    # incidents: third by the prior alone, out of the first three with the pairs
    together = kn.observed.together["oom.activations_optimizer_state"]["oom.startup_too_large"]
    assert together > 0.9 * kn.observed.accepted["oom.activations_optimizer_state"]
    assert "oom.activations_optimizer_state" not in [
        h.cause_id for h in kb.diagnose({"symptom": "oom"}).hypotheses[:3]]
    root = edited_graphs("observed.yaml", "\ntogether:", "\nunused_together:")
    text = (root / "observed.yaml").read_text(encoding="utf-8")
    (root / "observed.yaml").write_text(text.split("\nunused_together:")[0] + "\n",
                                        encoding="utf-8")
    bare = load(root, use_cache=False)
    assert bare.observed is not None and not bare.observed.together
    order = [h.cause_id for h in kb.diagnose({"symptom": "oom"}, knowledge=bare).hypotheses]
    assert "oom.activations_optimizer_state" in order[:3], order


@pytest.mark.parametrize(("new", "problem"), [
    ("    oom.no_such_cause: 3\n", "together: unknown cause 'oom.no_such_cause'"),
    ("    oom.startup_too_large: 8000\n", "counted together more often than alone"),
])
def test_bad_pairs_name_the_file(kn, edited_problems, new: str, problem: str) -> None:
    row = _row(kn, "oom.activations_optimizer_state")
    text = edited_problems("observed.yaml", row, row + new if "no_such" in new else
                           row.rsplit("    oom.startup_too_large:", 1)[0] + new)
    assert "observed.yaml" in text and problem in text, text
