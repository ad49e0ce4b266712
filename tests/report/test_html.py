"""The HTML report: one self-contained, escaped file with the table, the path and plots."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import kb
from kb.report.html import line_plot, render
from tests.report._commands import EXAMPLES


class Doc(HTMLParser):
    """Tags, attributes and text of a document, for structural assertions."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, Any]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(1 for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split()))


def parse(html: str) -> Doc:
    d = Doc()
    d.feed(html)
    d.close()
    return d


def test_structure_table_path_and_plots(kn) -> None:
    path = next(p for p in EXAMPLES if p.stem == "nccl.rank_desync_timeout")
    import json

    facts = json.loads(path.read_text())
    rep = kb.diagnose(facts)
    facts.setdefault("gpu", {})["utilization_samples"] = [20, 30, 25, 90, 15]
    facts.setdefault("numerics", {}).update({"loss": [2.0, 1.8, float("inf"), float("nan")],
                                             "first_nonfinite_step": 3})
    html = render(rep, kn, facts)
    d = parse(html)
    assert html.startswith("<!DOCTYPE html>")
    assert d.count("table", "findings") == 1 and d.count("tr") >= 2
    assert d.count("svg", "path-graph") >= 1 and d.count("g", "on-path") >= 2
    assert d.count("polyline", "series") >= 1 and d.count("line", "nonfinite") == 2
    assert d.count("table", "ranks") == 1 and d.count("tr", "outlier") >= 1
    # self-contained: no script, no stylesheet link, no remote image or frame
    assert d.count("script") == 0 and d.count("link") == 0 and d.count("iframe") == 0
    for tag, attrs in d.tags:
        if tag != "a":
            assert not any(str(v).startswith(("http:", "https:", "//")) for k, v in attrs.items()
                           if k in ("src", "href")), (tag, attrs)
    text = "".join(d.text)
    assert "Decision path" in text and "Time series" in text


def test_everything_is_escaped(kn) -> None:
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    rep = kb.diagnose({"symptom": "gpu_util", "gpu": {"utilization_samples": [12, 18, 9, 15]},
                       "disk": {"util_percent_samples": [97, 99, 100]},
        "cpu": {"iowait_percent_samples": [35, 41, 38]}})
    rep = rep.model_copy(update={"warnings": [evil], "symptom": None})
    html = render(rep, kn, {"cpu": {"hot_functions": [evil]}})
    d = parse(html)
    assert d.count("script") == 0 and d.count("img") == 0
    assert evil in "".join(d.text)


def test_plot_marks_first_nonfinite() -> None:
    svg = line_plot("loss", [1.0, 0.9, float("nan"), 0.8], mark_first_nonfinite="first NaN (2)")
    d = parse(svg)
    assert d.count("svg") == 1 and d.count("line", "nonfinite") == 1
    assert "first NaN (2)" in "".join(d.text)
    assert line_plot("empty", [float("nan")]) == ""
