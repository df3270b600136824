"""The evaluation report: the ``report.json`` content and a self-contained ``report.html`` (rendered from
``templates/report.html.j2``, matplotlib PNGs embedded as base64; no external files, scripts or fonts).

The JSON holds per-label token/entity metrics with 95% bootstrap intervals (resampling notes), the mean
clinical-information-retention metrics, the share of medical terms destroyed, the recall proxy per note
against true recall with Pearson and Spearman correlations, the no-gold estimates against their gold truth
(number and word retention against the non-identifier tokens kept; the residual-risk score against the
missed identifiers, with its AUROC), and the judge panel when one ran.

``report.html`` needs the ``report`` extra (matplotlib, jinja2): ``pip install 'deidstream[report]'``;
the JSON does not.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from processors.evaluation import stats
from processors.evaluation.scoring import LABEL_FIELDS, LabelCounts, label_metrics
from schemas.errors import ConfigError

if TYPE_CHECKING:
    import jinja2

#: Per-note fields summarised as means in ``cir`` / ``recall_proxy``.
CIR_FIELDS = ("jsc", "nsdcg", "cire", "medical_term_retention", "number_retention", "word_retention")
PROXY_FIELDS = ("lr", "lrdi", "lrqi", "alid", "lr_gold")
#: What ``report.html`` needs beyond the core dependencies.
REPORT_EXTRA_HINT = "pip install 'deidstream[report]'"


def label_bootstrap(per_note: Sequence[Mapping[str, LabelCounts]], n: int = 100, seed: int = 0,
                    alpha: float = 0.05) -> dict[str, dict[str, tuple[float, float] | None]]:
    """Percentile bootstrap intervals per label (resampling notes, as ``scoring.bootstrap_ci``, all labels
    over the same resamples) for token recall, precision, F1 and entity recall."""
    labels = sorted({label for counts in per_note for label in counts})
    counts = np.zeros((len(per_note), len(labels), len(LABEL_FIELDS)), dtype=np.int64)
    for i, note in enumerate(per_note):
        for j, label in enumerate(labels):
            c = note.get(label)
            if c is not None:
                counts[i, j] = [getattr(c, f) for f in LABEL_FIELDS]
    intervals = stats.bootstrap_ci(counts, label_metrics, n=n, seed=seed, alpha=alpha)
    return {label: {key: per_label[j] for key, per_label in intervals.items()} for j, label in enumerate(labels)}


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def correlation(rows: Sequence[Mapping[str, Any]], x: str, y: str, scale_x: float = 1.0) -> dict[str, Any]:
    """Pearson and Spearman of ``x`` against ``y`` over the rows where both are defined."""
    pairs = [(r[x] * scale_x, r[y]) for r in rows if r.get(x) is not None and r.get(y) is not None]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    return {"x": x, "y": y, "n": len(pairs), "pearson": stats.pearson(xs, ys),
            "spearman": stats.spearman(xs, ys),
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
        # the metrics' number / word retention (no gold) against the gold truth: non-identifier tokens kept
        "retention_vs_truth": {
            "number_retention": estimate_vs_truth(rows, "number_retention", "number_retention_true"),
            "word_retention": estimate_vs_truth(rows, "word_retention", "word_retention_true"),
        },
        # the residual-risk score (no gold) against the gold identifiers the output did not fully remove
        "risk_vs_truth": risk_vs_truth(rows),
    }


def estimate_vs_truth(rows: Sequence[Mapping[str, Any]], estimate: str, truth: str) -> dict[str, Any]:
    """A per-note estimate against its gold truth: correlations and mean |difference| over the notes where
    both are defined, and both means over those same notes."""
    both = [r for r in rows if r.get(estimate) is not None and r.get(truth) is not None]
    return correlation(both, estimate, truth) | {"mean_estimate": _mean([r[estimate] for r in both]),
                                                 "mean_truth": _mean([r[truth] for r in both])}


def risk_vs_truth(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The residual-risk score against the missed gold identifiers per note: expected vs missed count
    (Spearman, means), and how well the score ranks the notes with a missed identifier (AUROC); the share of
    such notes the ``risky`` gate flags and the share of notes it flags."""
    both = [r for r in rows if r.get("risk_score") is not None and r.get("missed_entities") is not None]
    positive = [r["missed_entities"] > 0 for r in both]
    flagged = [bool(r.get("risky")) for r in both]
    n_pos = sum(positive)
    return {
        "expected_vs_missed": estimate_vs_truth(both, "risk_expected", "missed_entities"),
        "notes": len(both), "notes_with_missed": n_pos,
        "auroc": stats.auroc([r["risk_score"] for r in both], positive),
        "risky_share": sum(flagged) / len(both) if both else None,
        "missed_notes_flagged": (sum(f for f, p in zip(flagged, positive, strict=True) if p) / n_pos
                                 if n_pos else None),
    }


# ------------------------------------------------------------------------------------------ HTML

def _fmt(x: Any, digits: int = 3) -> str:
    """A table cell: floats to ``digits`` decimals, None as a dash, booleans as yes/no."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _ci(ci: Any) -> str:
    return "–" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _report_libraries() -> tuple[ModuleType, ModuleType]:
    """jinja2 and the plots module (matplotlib), or a ConfigError that says how to install them."""
    try:
        import jinja2
        import matplotlib  # noqa: F401  (checked here so the hint names it; plots imports from it)

        from processors.evaluation import plots
    except ImportError as exc:
        raise ConfigError(f"report.html needs matplotlib and jinja2 ({exc.name or exc} is not installed): "
                          f"{REPORT_EXTRA_HINT}, or pass --no-html") from None
    return jinja2, plots


@functools.cache
def _environment() -> jinja2.Environment:
    """The template environment; autoescaping on for ``*.html.j2`` (``select_autoescape()``'s defaults match
    only names ending in .html, .htm or .xml)."""
    j2, _ = _report_libraries()
    env: jinja2.Environment = j2.Environment(loader=j2.PackageLoader("processors.evaluation"),
                                            autoescape=j2.select_autoescape(("html", "html.j2")),
                                            undefined=j2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _fmt
    env.filters["ci"] = _ci
    return env


def render_html(rep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole report as one HTML string (images inline)."""
    _, plots = _report_libraries()
    summary = rep.get("summary")
    figures = {
        "label_recall": plots.plot_label_recall(rep) if rep.get("per_label") else None,
        "proxy_vs_recall": (plots.plot_proxy_vs_recall(rows, summary["proxy_vs_true_recall"]["token_recall"])
                            if summary else None),
        "distributions": plots.plot_distributions(rows) if summary else None,
        "estimates_vs_truth": (plots.plot_estimates_vs_truth(rows, summary)
                               if summary and "risk_vs_truth" in summary else None),
    }
    meta = {k: rep.get(k) for k in ("versions", "notes_per_s", "config_hash", "mode") if rep.get(k) is not None}
    page: str = _environment().get_template("report.html.j2").render(
        rep=rep, figures=figures, run=json.dumps(meta, indent=2) if meta else None)
    return page


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
