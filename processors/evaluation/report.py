"""The evaluation report: ``report.json`` content and a self-contained ``report.html`` (matplotlib PNGs
embedded as base64; no external files, scripts or fonts).

The JSON holds per-label token/entity metrics with 95% bootstrap intervals (resampling notes), the mean
clinical-information-retention metrics, the share of medical terms destroyed, the recall proxy per note
against true recall with Pearson and Spearman correlations, and the judge panel when one ran.
"""

from __future__ import annotations

import base64
import html
import io
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from processors.evaluation.scoring import LabelCounts
from processors.metrics.step import pearson, spearman

#: Per-note fields summarised as means in ``cir`` / ``recall_proxy``.
CIR_FIELDS = ("jsc", "nsdcg", "cire", "medical_term_retention", "number_retention")
PROXY_FIELDS = ("lr", "lrdi", "lrqi", "alid", "lr_gold")


def _percentile(ordered: Sequence[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def label_bootstrap(per_note: Sequence[Mapping[str, LabelCounts]], n: int = 100, seed: int = 0,
                    alpha: float = 0.05) -> dict[str, dict[str, tuple[float, float] | None]]:
    """Percentile bootstrap intervals per label (resampling notes, as ``evaluation.bootstrap_ci``) for
    token recall, precision, F1 and entity recall."""
    if not 0 < alpha < 1 or n < 1:
        raise ValueError("need 0 < alpha < 1 and n >= 1")
    labels = sorted({label for counts in per_note for label in counts})
    samples: dict[str, dict[str, list[float]]] = {
        lab: {"recall": [], "precision": [], "f1": [], "entity_recall": []} for lab in labels}
    rng = random.Random(seed)
    size = len(per_note)
    if size:
        for _ in range(n):
            totals = {lab: LabelCounts() for lab in labels}
            for _k in range(size):
                for lab, c in per_note[rng.randrange(size)].items():
                    totals[lab].add(c)
            for lab, c in totals.items():
                for key, value in (("recall", c.recall), ("precision", c.precision), ("f1", c.f1),
                                   ("entity_recall", c.entity_recall)):
                    if value is not None:
                        samples[lab][key].append(value)
    out: dict[str, dict[str, tuple[float, float] | None]] = {}
    for lab, by_metric in samples.items():
        out[lab] = {}
        for key, values in by_metric.items():
            values.sort()
            out[lab][key] = (_percentile(values, alpha / 2), _percentile(values, 1 - alpha / 2)) if values else None
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def correlation(rows: Sequence[Mapping[str, Any]], x: str, y: str, scale_x: float = 1.0) -> dict[str, Any]:
    """Pearson and Spearman of ``x`` against ``y`` over the rows where both are defined."""
    pairs = [(r[x] * scale_x, r[y]) for r in rows if r.get(x) is not None and r.get(y) is not None]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    return {"x": x, "y": y, "n": len(pairs), "pearson": pearson(xs, ys), "spearman": spearman(xs, ys),
            "mean_abs_diff": (sum(abs(a - b) for a, b in pairs) / len(pairs)) if pairs else None}


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means of the per-note recall proxy and CIR metrics, corpus-level medical-term destruction, and the
    recall proxy against true recall."""
    terms = sum(r.get("medical_terms") or 0 for r in rows)
    destroyed = sum(r.get("medical_terms_destroyed") or 0 for r in rows)
    wrongly = sum(r.get("medical_terms_destroyed_wrongly") or 0 for r in rows)
    return {
        "recall_proxy": {f"mean_{f}": _mean([r.get(f) for r in rows]) for f in PROXY_FIELDS}
        | {"notes_with_leak": sum(1 for r in rows if r.get("leak"))},
        "cir": {f"mean_{f}": _mean([r.get(f) for r in rows]) for f in CIR_FIELDS},
        "medical_terms": {
            "terms": terms, "destroyed": destroyed, "destroyed_outside_gold": wrongly,
            "share_destroyed": destroyed / terms if terms else None,
            "share_destroyed_outside_gold": wrongly / terms if terms else None,
        },
        "proxy_vs_true_recall": {
            "token_recall": correlation(rows, "lr", "token_recall", 0.01),
            "entity_recall": correlation(rows, "lr", "entity_recall", 0.01),
            "gold_string_recall": correlation(rows, "lr", "lr_gold", 1.0),
            # the string-based recall over GOLD entities (LR with perfect knowledge of the identifiers)
            # against true recall: separates what the proxy does not know from what LSI mis-measures
            "gold_string_vs_token_recall": correlation(rows, "lr_gold", "token_recall", 0.01),
        },
    }


# ------------------------------------------------------------------------------------------ plots

def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plot_label_recall(rep: Mapping[str, Any]) -> str:
    """Per-label token and entity recall with 95% CI error bars."""
    from matplotlib.figure import Figure

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
    from matplotlib.figure import Figure

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
    from matplotlib.figure import Figure

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


# ------------------------------------------------------------------------------------------ HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}img{max-width:100%}
.note{color:#666;font-size:.85em}
"""


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return html.escape(str(x))


def _ci(ci: Any) -> str:
    return "–" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(rep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole report as one HTML string (images inline)."""
    ci = rep.get("bootstrap", {}).get("ci95", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>deidstream eval: "
             f"{html.escape(str(rep.get('gold')))}</title><style>{_CSS}</style></head><body>",
             f"<h1>deidstream evaluation: {html.escape(str(rep.get('gold')))}</h1>",
             f"<p class='note'>{rep.get('notes')} notes, {rep.get('tokens')} tokens; labels: "
             f"{html.escape(str(rep.get('labels')))}; source: {html.escape(str(rep.get('predictions', 'pipeline')))}"
             f"; bootstrap: {rep.get('bootstrap', {}).get('resamples')} resamples over notes.</p>",
             "<h2>Overall</h2>",
             _table(["metric", "value", "95% CI"], [
                 ["token precision", _fmt(rep.get("precision")), _ci(ci.get("precision"))],
                 ["token recall (generous)", _fmt(rep.get("recall")), _ci(ci.get("recall"))],
                 ["token F1", _fmt(rep.get("f1")), _ci(ci.get("f1"))],
                 ["entity recall (conservative)", _fmt(rep.get("entity_recall")), _ci(ci.get("entity_recall"))],
             ]),
             "<h2>Per label</h2>"]
    lci = rep.get("per_label_ci95", {})
    parts.append(_table(
        ["label", "gold tokens", "recall", "recall CI", "precision", "precision CI", "F1", "entities",
         "entity recall", "entity recall CI"],
        [[html.escape(lab), str(c["gold_tokens"]), _fmt(c["recall"]), _ci((lci.get(lab) or {}).get("recall")),
          _fmt(c["precision"]), _ci((lci.get(lab) or {}).get("precision")), _fmt(c["f1"]), str(c["entities"]),
          _fmt(c["entity_recall"]), _ci((lci.get(lab) or {}).get("entity_recall"))]
         for lab, c in rep["per_label"].items()]))
    if rep.get("per_label"):
        parts.append(f"<img alt='recall per label' src='data:image/png;base64,{plot_label_recall(rep)}'>")

    summary = rep.get("summary")
    if summary:
        cir, proxy, med = summary["cir"], summary["recall_proxy"], summary["medical_terms"]
        parts.append("<h2>Clinical information retention (means over notes)</h2>")
        parts.append(_table(["metric", "mean"], [[html.escape(k[5:]), _fmt(v)] for k, v in cir.items()]))
        parts.append("<p class='note'>JSC and NSDCG in percent (concept classifier unless configured); CIRE, "
                     "retentions as shares.</p>")
        parts.append(_table(["medical terms", "destroyed", "share destroyed", "destroyed outside gold",
                             "share outside gold"],
                            [[str(med["terms"]), str(med["destroyed"]), _fmt(med["share_destroyed"]),
                              str(med["destroyed_outside_gold"]), _fmt(med["share_destroyed_outside_gold"])]]))
        parts.append("<h2>Recall proxy (no gold) against true recall</h2>")
        parts.append(_table(["metric", "mean"], [[html.escape(k), _fmt(v)] for k, v in proxy.items()]))
        corr_rows = [[html.escape(c["x"]), html.escape(c["y"]), str(c["n"]), _fmt(c["pearson"]), _fmt(c["spearman"]),
                      _fmt(c["mean_abs_diff"])] for c in summary["proxy_vs_true_recall"].values()]
        parts.append(_table(["per note", "against", "notes", "Pearson", "Spearman", "mean |diff|"], corr_rows))
        parts.append("<p class='note'>lr: recall proxy LR@t (no gold); lr_gold: the same string measure over the "
                     "gold entities; token_recall / entity_recall: true recall from gold.</p>")
        corr = summary["proxy_vs_true_recall"]["token_recall"]
        parts.append(f"<img alt='proxy vs recall' src='data:image/png;base64,{plot_proxy_vs_recall(rows, corr)}'>")
        parts.append("<h2>Distributions per note</h2>")
        parts.append(f"<img alt='distributions' src='data:image/png;base64,{plot_distributions(rows)}'>")

    panel = rep.get("judges")
    if panel:
        parts.append("<h2>Judge panel</h2>")
        parts.append(f"<p class='note'>judges: {html.escape(', '.join(panel['judges']))}; a verdict needs more "
                     f"than {panel['threshold']:.2f} of the votes.</p>")
        parts.append(_table(["TP", "FN", "FP", "TP (not in gold)", "discarded", "precision", "recall"],
                            [[str(panel["tp"]), str(panel["fn"]), str(panel["fp"]), str(panel["tp_pred"]),
                              str(panel["discarded"]), _fmt(panel["precision"]), _fmt(panel["recall"])]]))
        parts.append(_table(["judge", "agreement with majority"],
                            [[html.escape(k), _fmt(v)] for k, v in panel["agreement_with_majority"].items()]))

    meta = {k: rep.get(k) for k in ("versions", "notes_per_s", "config_hash", "mode") if rep.get(k) is not None}
    if meta:
        parts.append("<h2>Run</h2><pre>" + html.escape(json.dumps(meta, indent=2)) + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_reports(rep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], out_dir: Path, *,
                  html_report: bool = True) -> list[Path]:
    """Write ``report.json`` (and ``report.html``) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "report.json"]
    paths[0].write_text(json.dumps(rep, indent=2) + "\n", encoding="utf-8")
    if html_report:
        paths.append(out_dir / "report.html")
        paths[1].write_text(render_html(rep, rows), encoding="utf-8")
    return paths
