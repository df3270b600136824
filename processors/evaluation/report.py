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
    """A table cell: floats to ``digits`` decimals, ints with thousands separators, None as a dash, booleans as
    yes/no."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _pct(x: Any) -> str:
    """A value already in percent, one decimal."""
    return "–" if x is None else f"{x:,.1f}"


def _ci(ci: Any) -> str:
    return "–" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


#: CIR metrics that the metrics step reports as shares (0-1): the report shows them in percent like JSC / NSDCG.
_SHARE_FIELDS = frozenset({"cire", "medical_term_retention", "number_retention", "word_retention"})


def _metric_rows(means: Mapping[str, Any], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Readable name, definition and the mean in percent for each of ``keys`` (``mean_<key>`` in ``means``)."""
    from processors.evaluation import glossary

    out = []
    for key in keys:
        v = means.get(f"mean_{key}")
        if v is not None and key in _SHARE_FIELDS:
            v = 100.0 * v
        out.append({"key": key, "name": glossary.name(key), "definition": glossary.definition(key), "value": v})
    return out


def _label_rows(rep: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-label drill-down: gold and predicted tokens, misses and false positives, the metrics with their
    intervals; a label outside the gold's scheme has no recall or precision against it (``in_scheme`` False)."""
    scheme = rep.get("gold_labels")
    cis = rep.get("per_label_ci95") or {}
    rows = []
    for label, c in rep.get("per_label", {}).items():
        gold, found = c.get("gold_tokens"), c.get("gold_tokens_found")
        pred, correct = c.get("pred_tokens"), c.get("pred_tokens_correct")
        rows.append({
            "label": label, "in_scheme": scheme is None or label in scheme, "ci": cis.get(label) or {},
            "gold_tokens": gold, "missed": gold - found if gold is not None and found is not None else None,
            "pred_tokens": pred, "false_positives": pred - correct if pred is not None and correct is not None else None,
            "recall": c.get("recall"), "precision": c.get("precision"), "f1": c.get("f1"),
            "entities": c.get("entities"), "entity_recall": c.get("entity_recall"),
        })
    return rows


#: The provenance table's rows: report key -> what the reader sees.
_PROVENANCE = (("date", "date (UTC)"), ("command", "command"), ("git_commit", "git commit"),
               ("pipeline_version", "deidstream pipeline version"), ("model", "model id"),
               ("llm_model", "LLM model"), ("config_hash", "config hash"), ("profile", "profile (steps)"))


def _provenance_rows(rep: Mapping[str, Any]) -> list[tuple[str, str]]:
    run = rep.get("provenance") or {}
    rows = [(label, _fmt(run.get(key))) for key, label in _PROVENANCE if run.get(key) is not None or key == "model"]
    if rows and run.get("model") is None:  # never null: say why there is none
        rows = [(k, v if k != "model id" else "unknown (the predictions carry no provenance)") for k, v in rows]
    steps = run.get("steps")
    if steps:
        rows.append(("steps", ", ".join(steps)))
    rows.append(("gold file", str(rep.get("gold"))))
    if rep.get("gold_sha256"):
        rows.append(("gold file SHA-256", str(rep["gold_sha256"])))
    if rep.get("predictions"):
        rows.append(("predictions file", str(rep["predictions"])))
    if rep.get("notes_per_s") is not None:
        rows.append(("notes per second (this run)", _fmt(rep["notes_per_s"], 1)))
    ev = rep.get("eval_run") or {}
    if ev.get("command"):
        rows.append(("report made by", str(ev["command"])))
    if ev.get("git_commit"):
        rows.append(("report's git commit", str(ev["git_commit"])))
    return rows


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
    env.filters["pct"] = _pct
    env.filters["ci"] = _ci
    return env


def render_html(rep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole report as one HTML string (images inline). No raw JSON: every block is a table with readable
    names and a definition per metric."""
    from processors.evaluation import glossary

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
    view = {
        "overall": [{"key": k, "name": glossary.name(k), "definition": glossary.definition(k), "value": rep.get(k)}
                    for k in ("precision", "recall", "f1", "entity_recall")],
        "labels": _label_rows(rep),
        "cir": _metric_rows(summary["cir"], CIR_FIELDS) if summary else [],
        "proxy": _metric_rows(summary["recall_proxy"], PROXY_FIELDS) if summary else [],
        "targets": glossary.check_targets(rep),
        "tracking": glossary.tracking_sentences(summary),
        "provenance": _provenance_rows(rep),
        "glossary": glossary,
    }
    page: str = _environment().get_template("report.html.j2").render(rep=rep, figures=figures, view=view)
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
