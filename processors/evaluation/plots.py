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


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plot_label_recall(rep: Mapping[str, Any]) -> str:
    """Per-label token and entity recall with 95% CI error bars."""
    labels = [lab for lab, c in rep["per_label"].items() if c.get("gold_tokens")]
    cis = rep.get("per_label_ci95", {})
    fig = Figure(figsize=(max(5.0, 1.1 * len(labels) + 2), 3.6))
    ax = fig.subplots()
    width = 0.38
    for k, (metric, name) in enumerate((("recall", "token recall"), ("entity_recall", "entity recall"))):
        vals = [rep["per_label"][lab].get(metric) or 0.0 for lab in labels]
        lo_err, hi_err = [], []
        for lab, v in zip(labels, vals, strict=True):
            ci = (cis.get(lab) or {}).get(metric)
            lo_err.append(max(0.0, v - ci[0]) if ci else 0.0)
            hi_err.append(max(0.0, ci[1] - v) if ci else 0.0)
        xs = [i + (k - 0.5) * width for i in range(len(labels))]
        ax.bar(xs, vals, width, yerr=[lo_err, hi_err], capsize=3, label=name)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("recall")
    ax.set_title("Recall per label (95% bootstrap CI)")
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def plot_distributions(rows: Sequence[Mapping[str, Any]]) -> str:
    """Histograms of the per-note metrics."""
    panels = (("lr", "LR@t (%)", 100), ("alid", "ALID", 100), ("lr_gold", "LR over gold (%)", 100),
              ("jsc", "JSC@thb (%)", 100), ("nsdcg", "NSDCG@K (%)", 100), ("cire", "CIRE (share)", 1),
              ("medical_term_retention", "medical-term retention", 1), ("number_retention", "number retention", 1))
    fig = Figure(figsize=(12, 5.2))
    axes = fig.subplots(2, 4)
    for ax, (key, title, top) in zip(axes.flat, panels, strict=True):
        vals = [r[key] for r in rows if r.get(key) is not None]
        ax.hist(vals, bins=20, range=(0, top), color="#4C72B0")
        ax.set_title(f"{title}\nn={len(vals)}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return _png(fig)


def plot_proxy_vs_recall(rows: Sequence[Mapping[str, Any]], corr: Mapping[str, Any]) -> str:
    """Per note: recall proxy LR@t against true token recall."""
    pts = [(r["token_recall"], r["lr"] / 100) for r in rows
           if r.get("token_recall") is not None and r.get("lr") is not None]
    fig = Figure(figsize=(4.8, 4.4))
    ax = fig.subplots()
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, alpha=0.6)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("true token recall (gold)")
    ax.set_ylabel("recall proxy LR@t / 100")

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    ax.set_title(f"Pearson {f(corr.get('pearson'))}, Spearman {f(corr.get('spearman'))} (n={len(pts)})",
                 fontsize=9)
    return _png(fig)


def plot_estimates_vs_truth(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    """Per note, each no-gold estimate against its gold truth: number retention, word retention, and the
    residual-risk expected count against the missed identifiers (jittered: counts are small integers)."""
    panels = (
        ("number_retention", "number_retention_true", "number retention",
         summary["retention_vs_truth"]["number_retention"]),
        ("word_retention", "word_retention_true", "word retention", summary["retention_vs_truth"]["word_retention"]),
        ("risk_expected", "missed_entities", "residual risk: expected vs missed",
         summary["risk_vs_truth"]["expected_vs_missed"]),
    )
    fig = Figure(figsize=(13, 4.2))
    axes = fig.subplots(1, 3)
    for k, (ax, (est, truth, title, corr)) in enumerate(zip(axes, panels, strict=True)):
        pts = [(r[truth], r[est]) for r in rows if r.get(est) is not None and r.get(truth) is not None]
        xs = [p[0] for p in pts]
        if k == 2:  # integer counts: spread the points a little so stacks show
            xs = [x + 0.15 * ((i * 7919) % 11 - 5) / 5 for i, x in enumerate(xs)]
        ax.scatter(xs, [p[1] for p in pts], s=10, alpha=0.5)
        if k < 2:
            lo = min([0.8, *(p[0] for p in pts), *(p[1] for p in pts)]) if pts else 0.0
            ax.plot([lo, 1], [lo, 1], color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel("truth (gold)")
        ax.set_ylabel("estimate (no gold)")
        sp = corr.get("spearman")
        ax.set_title(f"{title}\nSpearman {'n/a' if sp is None else f'{sp:.3f}'}, n={len(pts)}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return _png(fig)
