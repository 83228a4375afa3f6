"""`semproxy eval --report DIR`: one self-contained HTML page plus its charts as PNG files.

Charts need matplotlib (the optional `report` extra). Without it the page
still has every table and says how to get the charts. The PNGs are written
beside the page and also inlined into it, so the page can be mailed alone.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import numpy as np

from semproxy.quality.evaluate import FIGURES, Evaluation
from semproxy.quality.rate import MeanRate, Rate


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def score_groups(ev: Evaluation) -> dict[str, tuple[list[float], list[float]]]:
    """Per instance, the winning scores of prompts it ranked first: (right, wrong)."""
    groups: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in ev.names}
    for expected, decision in zip(ev.expected, ev.decisions, strict=True):
        if decision.ranking:
            top, score = decision.ranking[0]
            groups[top][0 if expected == top else 1].append(score)
    return groups


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _charts(ev: Evaluation) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    groups = score_groups(ev)
    cols = 4
    rows = -(-len(groups) // cols)
    fig = Figure(figsize=(4 * cols, 2.6 * rows), layout="constrained")
    for i, (name, (right, wrong)) in enumerate(groups.items()):
        ax = fig.add_subplot(rows, cols, i + 1)
        bins = np.linspace(min([*right, *wrong, 0.0]), max([*right, *wrong, 1.0]), 30).tolist()
        ax.hist(right, bins=bins, alpha=0.6, label="right", color="tab:green")
        ax.hist(wrong, bins=bins, alpha=0.6, label="wrong", color="tab:red")
        ax.axvline(ev.thresholds[name], color="black", linestyle="--", label="threshold")
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7)
    fig.suptitle("Top score of prompts each instance ranked first")
    charts = {"scores.png": _png(fig)}
    c = ev.confusion()
    counts = np.asarray(c.counts, dtype=float)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    fig = Figure(figsize=(1 + 0.6 * len(c.labels), 0.6 * len(c.labels) + 1))
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(c.labels)), c.labels, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(c.labels)), c.labels, fontsize=8)
    ax.set_xlabel("picked")
    ax.set_ylabel("expected")
    for (r, col), n in np.ndenumerate(counts):
        if n:
            ax.text(col, r, str(int(n)), ha="center", va="center", fontsize=7,
                    color="white" if share[r, col] > 0.5 else "black")
    charts["confusion.png"] = _png(fig)
    return charts


def _table(head: list[str], rows: list[list[Any]]) -> str:
    cells = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _rate_row(label: str, rate: Rate | MeanRate) -> list[Any]:
    """A figure as the CLI prints it: value, count and 95% interval."""
    low, high = rate.interval or (None, None)
    count = f"{rate.successes}/{rate.n}" if isinstance(rate, Rate) else f"{rate.n} prompts"
    interval = "n/a" if low is None or high is None else \
        f"{100 * low:.1f}-{100 * high:.1f}%"
    return [label, _pct(rate.value), count, interval]


def render_html(ev: Evaluation, charts: dict[str, bytes]) -> str:
    s = ev.summary()
    c = ev.confusion()
    rates = c.rates()
    blank = ["", ""]
    overview = _table(["figure", "value", "count", "95% interval"], [
        ["prompts", s["prompts"], *blank],
        *(_rate_row(label, rates[key]) for key, label in FIGURES),
        _rate_row("top-1, thresholds ignored (in-scope)", ev.top1_rate()),
        ["decisions per second", f"{s['decisions_per_second'] or 0:,.0f}", *blank],
    ] + [[f"fallback: {r}", _pct(v), *blank] for r, v in s["fallback_rate"].items()])
    warnings = "".join(f"<p>warning: {html.escape(w)}</p>" for w in s["warnings"])
    per = _table(["instance", "threshold", "precision", "recall", "support"], [
        [n, f"{ev.thresholds[n]:.4f}" if n in ev.thresholds else "catchall",
         _pct(r["precision"]), _pct(r["recall"]), r["support"]]
        for n, r in s["instances"].items()])
    matrix = _table(["expected \\ picked", *c.labels],
                    [[n, *row] for n, row in zip(c.labels, c.counts.tolist(), strict=True)])
    if charts:
        images = "".join(
            f'<img alt="{name}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
            for name, png in charts.items())
    else:
        images = ("<p>Charts need matplotlib: <code>python -m pip install 'semproxy[report]'"
                  "</code> with the Python that runs semproxy.</p>")
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>semproxy eval: {html.escape(ev.route)}</title><style>
body{{font-family:sans-serif;margin:2em;max-width:80em}} table{{border-collapse:collapse;
margin:1em 0}} td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}
img{{max-width:100%;display:block;margin:1em 0}}</style></head><body>
<h1>Routing quality: route {html.escape(ev.route)}</h1>
<h2>Overview</h2>{overview}{warnings}<h2>Per instance</h2>{per}
<h2>Confusion matrix</h2><p>Rows: expected; columns: picked; the catchall is last.</p>
{matrix}<h2>Charts</h2>{images}</body></html>
"""


def write_report(ev: Evaluation, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        charts = _charts(ev)
    except ImportError:
        charts = {}
    for name, png in charts.items():
        (out_dir / name).write_bytes(png)
    page = out_dir / "index.html"
    page.write_text(render_html(ev, charts), encoding="utf-8")
    return page
