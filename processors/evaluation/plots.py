"""The report's figures: matplotlib figures rendered to base64 PNG, for embedding in ``report.html``.

Needs the ``report`` extra (``pip install 'deidstream[report]'``); ``processors.evaluation.report``
imports this module behind that hint.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

#: Font sizes (points) of the figures: readable at the report's width without zooming.
FONT = {"title": 12, "label": 11, "tick": 10, "legend": 10}


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _style(ax: Any, title: str | None = None, xlabel: str | None = None, ylabel: str | None = None) -> None:
    if title:
        ax.set_title(title, fontsize=FONT["title"])
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=FONT["label"])
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=FONT["label"])
    ax.tick_params(labelsize=FONT["tick"])


def zoomed(values: Sequence[float], *, top: float = 1.0, floor: float = 0.0) -> tuple[float, float]:
    """Axis limits that show ``values`` and ``top`` with a little room: a recall axis starts just below the lowest
    value instead of at 0, so the differences between 0.95 and 1.0 are visible."""
    lo = min([top, *values])
    room = max(0.1 * (top - lo), 0.01)
    return max(floor, lo - room), top + 0.01


def plot_label_recall(rep: Mapping[str, Any]) -> str:
    """Per-label token and entity recall with 95% CI error bars; the recall axis zoomed to the data."""
    labels = [lab for lab, c in rep["per_label"].items() if c.get("gold_tokens")]
    cis = rep.get("per_label_ci95", {})
    fig = Figure(figsize=(max(6.0, 1.1 * len(labels) + 2), 4.0))
    ax = fig.subplots()
    width = 0.38
    shown: list[float] = []
    for k, (metric, name) in enumerate((("recall", "token recall"), ("entity_recall", "entity recall"))):
        vals = [rep["per_label"][lab].get(metric) or 0.0 for lab in labels]
        lo_err, hi_err = [], []
        for lab, v in zip(labels, vals, strict=True):
            ci = (cis.get(lab) or {}).get(metric)
            lo_err.append(max(0.0, v - ci[0]) if ci else 0.0)
            hi_err.append(max(0.0, ci[1] - v) if ci else 0.0)
            shown.append(ci[0] if ci else v)
        xs = [i + (k - 0.5) * width for i in range(len(labels))]
        ax.bar(xs, vals, width, yerr=[lo_err, hi_err], capsize=3, label=name)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylim(*zoomed(shown))
    _style(ax, "Recall per label (95% bootstrap CI)", ylabel="recall")
    ax.legend(loc="lower right", fontsize=FONT["legend"])
    fig.tight_layout()
    return _png(fig)


#: The histogram panels: per-note key, title, range top.
HISTOGRAMS = (("lr", "LR@t (%)", 100), ("alid", "ALID (%)", 100), ("lr_gold", "LR@t over gold (%)", 100),
              ("jsc", "JSC@0.05 (%)", 100), ("nsdcg", "NSDCG@K (%)", 100), ("cire", "CIRE (share)", 1),
              ("medical_term_retention", "medical-term retention (share)", 1),
              ("number_retention", "number retention (share)", 1))


def plot_distributions(rows: Sequence[Mapping[str, Any]]) -> str:
    """Histograms of the per-note metrics that vary across notes (bins over the data's own range); a metric with
    one value on every note gets a line of text in its panel's place, not an uninformative single bar."""
    fig = Figure(figsize=(13, 6.0))
    axes = fig.subplots(2, 4)
    for ax, (key, title, _top) in zip(axes.flat, HISTOGRAMS, strict=True):
        vals = [r[key] for r in rows if r.get(key) is not None]
        if len({round(v, 6) for v in vals}) < 2:
            ax.axis("off")
            what = "no note has a value" if not vals else f"{vals[0]:g} on all {len(vals)} notes"
            ax.text(0.5, 0.5, f"{title}\n{what}", ha="center", va="center", fontsize=FONT["label"],
                    transform=ax.transAxes)
            continue
        ax.hist(vals, bins=20, range=(min(vals), max(vals)), color="#4C72B0")
        _style(ax, f"{title}, n={len(vals)}", ylabel="notes")
    fig.tight_layout()
    return _png(fig)


def plot_proxy_vs_recall(rows: Sequence[Mapping[str, Any]], corr: Mapping[str, Any]) -> str:
    """Per note: recall proxy LR@t against true token recall; both axes zoomed to the data."""
    pts = [(r["token_recall"], r["lr"] / 100) for r in rows
           if r.get("token_recall") is not None and r.get("lr") is not None]
    fig = Figure(figsize=(5.4, 5.0))
    ax = fig.subplots()
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=16, alpha=0.6)
    lo = min(zoomed([p[0] for p in pts])[0], zoomed([p[1] for p in pts])[0])
    ax.plot([lo, 1], [lo, 1], color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlim(lo, 1.01)
    ax.set_ylim(lo, 1.01)

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    _style(ax, f"Pearson {f(corr.get('pearson'))}, Spearman {f(corr.get('spearman'))} (n={len(pts)})",
           "true token recall (gold)", "recall proxy LR@t / 100 (no gold)")
    fig.tight_layout()
    return _png(fig)


def plot_estimates_vs_truth(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    """Per note, the retention estimates against their gold truth (scatter, axes zoomed to the data), and the
    residual-risk expected count per number of identifiers truly missed (box plots: no jitter)."""
    panels = (
        ("number_retention", "number_retention_true", "number retention",
         summary["retention_vs_truth"]["number_retention"]),
        ("word_retention", "word_retention_true", "word retention", summary["retention_vs_truth"]["word_retention"]),
    )
    fig = Figure(figsize=(14, 4.6))
    axes = fig.subplots(1, 3)
    for ax, (est, truth, title, corr) in zip(axes[:2], panels, strict=True):
        pts = [(r[truth], r[est]) for r in rows if r.get(est) is not None and r.get(truth) is not None]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, alpha=0.5)
        lo = min(zoomed([p[0] for p in pts])[0], zoomed([p[1] for p in pts])[0])
        ax.plot([lo, 1], [lo, 1], color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlim(lo, 1.01)
        ax.set_ylim(lo, 1.01)
        sp = corr.get("spearman")
        _style(ax, f"{title}: Spearman {'n/a' if sp is None else f'{sp:.2f}'}, n={len(pts)}", "truth (gold)",
               "estimate (no gold)")
    ax = axes[2]
    groups: dict[int, list[float]] = {}
    for r in rows:
        if r.get("risk_expected") is not None and r.get("missed_entities") is not None:
            groups.setdefault(min(int(r["missed_entities"]), 3), []).append(float(r["risk_expected"]))
    keys = sorted(groups)
    if keys:
        ax.boxplot([groups[k] for k in keys], positions=list(range(len(keys))), widths=0.5)
        ax.set_xticks(range(len(keys)), [f"{k if k < 3 else '3+'}\n(n={len(groups[k])})" for k in keys])
    sp = summary["risk_vs_truth"]["expected_vs_missed"].get("spearman")
    _style(ax, f"residual risk: Spearman {'n/a' if sp is None else f'{sp:.2f}'}",
           "identifiers truly missed in the note (gold)", "expected missed (no gold)")
    fig.tight_layout()
    return _png(fig)
