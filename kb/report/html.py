"""Render a :class:`Report` as one self-contained HTML file: inline CSS, inline SVG, no script,
no external fetch (an incident ticket wants one file a colleague can open offline).

It holds the six-column table, each finding's decision path drawn on its branch's graph, plots
of the time series present in the facts (GPU utilisation, loss / grad norm with the first
non-finite value marked, memory per sample, step time, disk busy), the per-rank state of a hang,
then the hypotheses, ruled-out causes, next checks, warnings and the conclusion. Every text
goes through :func:`html.escape`; commands sit verbatim in ``<pre><code>``.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from kb.engine.knowledge import Knowledge
from kb.report.markdown import finding_path, settled_by, short_value
from kb.report.model import Finding, Report
from kb.report.wording import chrome, fact_name, label, node_label

#: the series plotted when present in the facts, in this order
SERIES: tuple[str, ...] = (
    "gpu.utilization_samples", "numerics.loss", "numerics.grad_norm", "gpu.memory_used_mib",
    "training.step_time_ms", "disk.util_percent_samples", "numerics.loss_scale",
    "cpu.process_cpu_percent",
)
SEV_COLOR = {"fix_now": "#c62828", "tune": "#ef6c00", "investigate": "#6a1b9a", "watch": "#1565c0"}

CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;
 margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1b1b1b;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}
h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
.status{display:inline-block;padding:.1rem .6rem;border-radius:1rem;color:#fff;font-weight:600}
.s-confirmed{background:#c62828}.s-hypotheses{background:#ef6c00}.s-inconclusive{background:#6a1b9a}
.s-healthy{background:#2e7d32}.meta{color:#555}
table{border-collapse:collapse;width:100%;margin:.6rem 0;font-size:.92rem}
th,td{border:1px solid #ccc;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#f3f3f3}td ul{margin:0;padding-left:1.1rem}
pre{background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;padding:.5rem;overflow-x:auto;
 white-space:pre;margin:.3rem 0}
code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.sev{font-weight:600}.dim{color:#666}.plot{margin:.5rem 0 1rem}
svg text{font:11px system-ui,sans-serif}
.card{border:1px solid #ddd;border-left:6px solid #999;border-radius:4px;padding:.3rem 1rem;margin:1rem 0}
.outlier{background:#fdecea}
"""


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _pre(command: str) -> str:
    return f'<pre><code>{_e(command.strip(chr(10)))}</code></pre>'


def _finite(values: list[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v)]


def line_plot(title: str, values: list[Any], *, unit: str = "", mark_first_nonfinite: str = "",
              width: int = 640, height: int = 170) -> str:
    """An inline SVG line chart of ``values`` (index on x). Non-finite values break the line and
    are drawn as red ticks; the first of them is labelled with ``mark_first_nonfinite``."""
    finite = _finite(values)
    if not finite:
        return ""
    left, right, top, bottom = 52, 12, 22, 26
    pw, ph = width - left - right, height - top - bottom
    lo, hi = min(finite), max(finite)
    if hi == lo:
        hi, lo = hi + 1, lo - 1 if lo > 0 else lo
    n = max(len(values) - 1, 1)

    def x(i: int) -> float:
        return left + pw * i / n

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{_e(title)}">',
        f'<title>{_e(title)}</title>',
        f'<text x="{left}" y="14" font-weight="600">{_e(title)}{(" (" + _e(unit) + ")") if unit else ""}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ddd"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end">{_e(short_value(hi))}</text>',
        f'<text x="{left - 4}" y="{top + ph}" text-anchor="end">{_e(short_value(lo))}</text>',
        f'<text x="{left}" y="{height - 8}">0</text>',
        f'<text x="{left + pw}" y="{height - 8}" text-anchor="end">{len(values) - 1}</text>',
    ]
    runs: list[list[str]] = [[]]
    first_bad: int | None = None
    for i, v in enumerate(values):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if ok:
            runs[-1].append(f"{x(i):.1f},{y(float(v)):.1f}")
        else:
            runs.append([])
            if first_bad is None:
                first_bad = i
            parts.append(f'<line class="nonfinite" x1="{x(i):.1f}" y1="{top}" x2="{x(i):.1f}" '
                         f'y2="{top + ph}" stroke="#c62828" stroke-width="1"/>')
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="#1565c0"/>')
        elif run:
            parts.append(f'<polyline class="series" fill="none" stroke="#1565c0" stroke-width="1.5" '
                         f'points="{" ".join(run)}"/>')
    if first_bad is not None and mark_first_nonfinite:
        parts.append(f'<text x="{min(x(first_bad) + 4, left + pw - 4):.1f}" y="{top + 12}" '
                     f'fill="#c62828" text-anchor="{"end" if first_bad > n * 0.7 else "start"}">'
                     f'{_e(mark_first_nonfinite)}</text>')
    parts.append("</svg>")
    return '<div class="plot">' + "".join(parts) + "</div>"


def branch_graph(kn: Knowledge, branch: str, path: list[str], lang: str) -> str:
    """The branch's decision graph as an inline SVG, layered from its start node, with the
    nodes and edges of ``path`` highlighted."""
    import networkx as nx

    b = kn.branches.get(branch)
    if b is None or not path:
        return ""
    g = nx.DiGraph()
    for node in b.nodes:
        g.add_node(node.id, label=node.label.get(lang))
    for edge in b.edges:
        src, dst = getattr(edge, "source", None), getattr(edge, "target", None)
        if src and dst:
            if dst not in g:
                c = kn.causes.get(dst)
                g.add_node(dst, label=c.title.get(lang) if c else dst)
            g.add_edge(src, dst)
    for n in path:
        if n not in g:
            g.add_node(n, label=node_label(kn, n, lang))
    # only the part of the graph the path runs through: its nodes and their direct successors
    keep = set(path) | {s for n in path if n in g for s in g.successors(n)}
    sub = g.subgraph(keep).copy()
    try:
        layers = [sorted(layer) for layer in nx.topological_generations(sub)]
    except nx.NetworkXUnfeasible:  # a cycle: one node per layer in path order
        layers = [[n] for n in path] + [[n] for n in sorted(keep - set(path))]
    box_w, box_h, gap_x, gap_y = 190, 44, 16, 34
    widest = max(len(layer) for layer in layers)
    width = max(widest * (box_w + gap_x) + gap_x, 400)
    height = len(layers) * (box_h + gap_y) + gap_y
    pos: dict[str, tuple[float, float]] = {}
    for li, layer in enumerate(layers):
        total = len(layer) * box_w + (len(layer) - 1) * gap_x
        x0 = (width - total) / 2
        for i, n in enumerate(layer):
            pos[n] = (x0 + i * (box_w + gap_x), gap_y / 2 + li * (box_h + gap_y))
    on_path = set(zip(path, path[1:]))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="path-graph" role="img" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
             '<defs><marker id="arr" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker></defs>']
    for u, v in sub.edges():
        (x1, y1), (x2, y2) = pos[u], pos[v]
        hot = (u, v) in on_path
        parts.append(f'<line x1="{x1 + box_w / 2:.1f}" y1="{y1 + box_h:.1f}" x2="{x2 + box_w / 2:.1f}" '
                     f'y2="{y2:.1f}" stroke="{"#c62828" if hot else "#bbb"}" '
                     f'stroke-width="{2.5 if hot else 1}" marker-end="url(#arr)"/>')
    for n in sub.nodes():
        x0, y0 = pos[n]
        hot = n in path
        text = str(sub.nodes[n].get("label") or n)
        lines = _wrap(text, 30)[:2]
        parts.append(f'<g class="{"on-path" if hot else "off-path"}"><title>{_e(n)}: {_e(text)}</title>'
                     f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{box_w}" height="{box_h}" rx="6" '
                     f'fill="{"#fdecea" if hot else "#f5f5f5"}" stroke="{"#c62828" if hot else "#bbb"}" '
                     f'stroke-width="{2 if hot else 1}"/>')
        for i, ln in enumerate(lines):
            parts.append(f'<text x="{x0 + box_w / 2:.1f}" y="{y0 + 17 + i * 14:.1f}" '
                         f'text-anchor="middle">{_e(ln)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _wrap(text: str, n: int) -> list[str]:
    words, lines, cur = text.split(), [], ""
    if len(words) <= 1:  # CJK text has no spaces: cut by characters
        return [text[i:i + n // 2 + 2] for i in range(0, len(text), n // 2 + 2)] or [""]
    for w in words:
        if cur and len(cur) + 1 + len(w) > n:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    if len(lines) > 2:
        lines[1] = lines[1][: n - 1] + "…"
    return lines


def decision_path(kn: Knowledge, f: Finding) -> list[str]:
    """The finding's path from its branch root (``path`` when the report carries it, else the
    shortest route from the branch's start node to the cause in its graph)."""
    path = finding_path(f)
    if path:
        return path
    import networkx as nx

    b = kn.branches.get(f.branch)
    if b is None:
        return []
    g = nx.DiGraph()
    for e in b.edges:
        src, dst = getattr(e, "source", None), getattr(e, "target", None)
        if src and dst:
            g.add_edge(src, dst)
    starts = [n.id for n in b.nodes if n.kind == "start"]
    for s in starts:
        if s in g and f.cause_id in g:
            try:
                return list(nx.shortest_path(g, s, f.cause_id))
            except nx.NetworkXNoPath:
                continue
    return []


def _plots(report: Report, kn: Knowledge, facts: Any) -> str:
    if facts is None:
        return ""
    from kb.facts import fact_units

    data = facts.model_dump(mode="python") if hasattr(facts, "model_dump") else dict(facts)
    units = fact_units()
    lang = report.lang
    first = (data.get("numerics") or {}).get("first_nonfinite_step")
    mark = label(kn, "first_nonfinite", lang) + (f" ({first})" if first is not None else "")
    out: list[str] = []
    for path in SERIES:
        group, _, key = path.partition(".")
        values = (data.get(group) or {}).get(key) or []
        if len(values) < 2 and not (values and not _finite(values)):
            continue
        out.append(line_plot(fact_name(kn, path, lang), values, unit=units.get(path, ""),
                             mark_first_nonfinite=mark if path.startswith("numerics.") else ""))
    ranks = (data.get("distributed") or {}).get("rank_states") or []
    if ranks:
        outliers = set((data.get("distributed") or {}).get("outlier_ranks") or [])
        head = "".join(f"<th>{_e(label(kn, k, lang))}</th>" for k in ("rank", "collective", "seq", "frame"))
        rows = "".join(
            f'<tr class="{"outlier" if r.get("rank") in outliers else ""}">'
            + "".join(f"<td>{_e('' if r.get(k) is None else r.get(k))}</td>"
                      for k in ("rank", "collective", "seq", "frame")) + "</tr>"
            for r in ranks)
        out.append(f'<h3>{_e(label(kn, "rank_states", lang))}</h3>'
                   f'<table class="ranks"><tr>{head}</tr>{rows}</table>')
    if not out:
        return ""
    return f'<h2>{_e(label(kn, "plots", lang))}</h2>' + "".join(out)


def render(report: Report, kn: Knowledge, facts: Any = None) -> str:
    """The whole report as one HTML document (UTF-8, no external resource)."""
    lang = report.lang
    rt = kn.report_text

    def t(*keys: str) -> str:
        return chrome(kn, lang, *keys)

    colon = t("punct", "colon")
    h: list[str] = [
        "<!DOCTYPE html>", f'<html lang="{"zh-CN" if lang == "zh" else "en"}">', "<head>",
        '<meta charset="utf-8">', '<meta name="viewport" content="width=device-width,initial-scale=1">',
        # no script, no remote resource: the file stays readable offline and inert
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_e(label(kn, 'title', lang))} — {_e(t('status', report.status))}</title>",
        f"<style>{CSS}</style>", "</head>", "<body>",
        f"<h1>{_e(label(kn, 'title', lang))}</h1>",
        f'<p><span class="status s-{_e(report.status)}">{_e(t("status", report.status))}</span> '
        f'<span class="meta">kb {_e(report.kb_version)}'
        + (f" · {_e(', '.join(report.branches))}" if report.branches else "") + "</span></p>",
    ]
    cols = rt["columns"][lang]
    h.append(f"<h2>{_e(t('headings', 'findings'))}</h2>")
    h.append('<table class="findings"><thead><tr>' + "".join(f"<th>{_e(c)}</th>" for c in cols)
             + "</tr></thead><tbody>")
    for f in report.findings:
        ev = "".join(f"<li>{_e(e.condition)}"
                     f' <span class="dim">({_e(fact_name(kn, e.fact, lang))} = '
                     f'{_e(short_value(e.value, e.unit))})</span></li>'
                     for e in f.evidence[:6])
        fixes = "".join(f"<li>{_e(x.text)}{_pre(x.command)}</li>" for x in f.fixes)
        ver = "".join(f"<li>{_e(v.text)} <span class=\"dim\">({_e(v.expect)})</span>{_pre(v.command)}</li>"
                      for v in f.verify)
        refs = "".join(f'<li><a href="{_e(r.url)}">{_e(r.title)}</a></li>' for r in f.references)
        sev = f'<span class="sev" style="color:{SEV_COLOR.get(f.severity, "#333")}">{_e(t("severity", f.severity))}</span>'
        h.append(f"<tr><td>{_e(f.symptom)}</td><td><strong>{_e(f.title)}</strong><br>"
                 f"<code>{_e(f.cause_id)}</code><br>{sev} · {_e(t('labels', 'confidence'))} "
                 f"{f.confidence:.2f}</td><td><ul>{ev}</ul></td><td><ul>{fixes}</ul></td>"
                 f"<td><ul>{ver}</ul></td><td><ul>{refs}</ul></td></tr>")
    if not report.findings:
        h.append("<tr>" + "<td>—</td>" * len(cols) + "</tr>")
    h.append("</tbody></table>")
    if report.markdown and report.llm is not None:
        h.append(f'<h3>{_e(label(kn, "llm_phrased", lang))} {_e(report.llm.model)}</h3>'
                 f'<pre class="llm">{_e(report.markdown)}</pre>')
    for f in report.findings:
        path = decision_path(kn, f)
        if not path:
            continue
        steps = " → ".join(_e(node_label(kn, n, lang)) if n != f.cause_id else _e(f.title) for n in path)
        h.append(f'<div class="card" style="border-left-color:{SEV_COLOR.get(f.severity, "#999")}">'
                 f'<h3>{_e(label(kn, "path", lang))}{colon}{_e(f.title)}</h3>'
                 f'<p class="path">{steps}</p>{branch_graph(kn, f.branch, path, lang)}</div>')
    h.append(_plots(report, kn, facts))
    if report.question:
        h.append(f"<h2>{_e(t('headings', 'question'))}</h2><p>{_e(report.question)}</p>")
    settles = settled_by(report)
    if report.hypotheses:
        h.append(f"<h2>{_e(t('headings', 'hypotheses'))}</h2><ul>")
        for hy in report.hypotheses:
            miss = t("punct", "list").join(
                f"{_e(fact_name(kn, m, lang))} <code>{_e(m)}</code>" for m in hy.missing)
            by = t("punct", "list").join(_e(x) for x in settles.get(hy.cause_id, []))
            h.append(f"<li><strong>{_e(hy.title)}</strong> <code>{_e(hy.cause_id)}</code>"
                     f"<br>{_e(t('labels', 'missing'))}{colon}{miss or _e(t('labels', 'none'))}"
                     + (f"<br>{_e(label(kn, 'settles', lang))}{colon}{by}" if by else "")
                     + (f"<br>{_e(label(kn, 'follows', lang))} (<code>{_e(hy.follows)}</code>)"
                        if hy.follows else "") + "</li>")
        h.append("</ul>")
    if report.past_incidents:
        h.append(f"<h2>{_e(t('headings', 'past_incidents'))}</h2><ul>")
        for p in report.past_incidents:
            causes = t("punct", "list").join(f"<code>{_e(c)}</code>" for c in p.causes)
            h.append(f'<li><a href="{_e(p.source)}">{_e(p.source)}</a>{colon}{causes}</li>')
        h.append("</ul>")
    if report.ruled_out:
        heading = label(kn, "passed", lang) if report.status == "healthy" else t("headings", "ruled_out")
        h.append(f"<h2>{_e(heading)}</h2><ul>")
        for r in report.ruled_out:
            why = t("punct", "semicolon").join(
                f"{_e(e.condition)} ({_e(fact_name(kn, e.fact, lang))} = "
                f"{_e(short_value(e.value, e.unit))})" for e in r.because)
            h.append(f"<li><strong>{_e(r.title)}</strong> <code>{_e(r.cause_id)}</code>{colon}"
                     f"{_e(t('labels', 'because'))} {why}</li>")
        h.append("</ul>")
    if report.next_checks:
        h.append(f"<h2>{_e(t('headings', 'next_checks'))}</h2><ol>")
        for c in report.next_checks[:8]:
            h.append(f"<li><strong>{_e(c.title)}</strong>{colon}{_e(t('labels', 'look_for'))}"
                     f"{colon}{_e(c.look_for)}{_pre(c.command)}</li>")
        h.append("</ol>")
    if report.warnings:
        h.append(f"<h2>{_e(t('headings', 'warnings'))}</h2><ul>"
                 + "".join(f"<li>{_e(w)}</li>" for w in report.warnings) + "</ul>")
    if report.llm is not None and report.llm.fallback_reason:
        h.append(f"<p class=\"dim\">{_e(label(kn, 'llm_fallback', lang))}{colon}"
                 f"{_e(report.llm.fallback_reason)}</p>")
    h.append(f"<h2>{_e(t('headings', 'conclusion'))}</h2>")
    h.append("".join(f"<p>{_e(s)}</p>" for s in report.conclusion))
    h.append("</body></html>")
    return "\n".join(x for x in h if x)
