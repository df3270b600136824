"""What the evaluation report says about its numbers: a readable name and a one-line definition per metric, the
quality targets of the README's Quality section, and when a no-gold estimate does not track the truth.

Pure data and small functions (no jinja2, no matplotlib); ``report.py`` renders them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    definition: str


#: key in report.json -> readable name and one-line definition (DESIGN.md §5 and §6).
METRICS: dict[str, Metric] = {
    "precision": Metric("Token precision",
                        "Of the word tokens the pipeline marked, the share that gold marks as an identifier."),
    "recall": Metric("Token recall (generous)",
                     "Of the gold identifier tokens, the share that any predicted span overlaps (even partly)."),
    "f1": Metric("Token F1", "Harmonic mean of token precision and token recall."),
    "entity_recall": Metric("Entity recall (conservative)",
                            "Of the gold identifier entities, the share whose every token is covered."),
    "lr": Metric("Recall proxy LR@t (no gold)",
                 "Share of the identifiers known without gold (message fields, dictionary hits, removed spans) whose "
                 "best fuzzy match in the output is below t = 0.85, i.e. that are gone; higher is better."),
    "lrdi": Metric("LRDI@t, direct identifiers (no gold)",
                   "100 when every known direct identifier (name, phone, ID, e-mail, SSN, MRN) is gone from the output "
                   "(best match below t), else 0; averaged over notes."),
    "lrqi": Metric("LRQI@t, quasi-identifiers (no gold)",
                   "LR@t over the known quasi-identifiers only (location, date, age over 89, institution, URL)."),
    "alid": Metric("ALID (no gold)",
                   "100 x (1 - mean best Levenshtein ratio of each known identifier in the output): how far, on "
                   "average, the identifiers are from surviving verbatim; higher is better."),
    "lr_gold": Metric("LR@t over gold identifiers",
                      "The same string measure as LR@t, over the gold identifiers instead of the known ones: what the "
                      "proxy would say if it knew every identifier."),
    "jsc": Metric("JSC@0.05 (concept overlap)",
                  "Jaccard overlap of the clinical concepts (ICD-10 chapters, drug classes) scoring above 0.05 before "
                  "and after de-identification; 100 = the same concepts."),
    "nsdcg": Metric("NSDCG@K (concept ranking)",
                    "Normalised softmax-discounted cumulative gain: how well the de-identified note keeps the "
                    "original's ranking of clinical concepts; 100 = the same ranking."),
    "cire": Metric("CIRE (clinical chunks unchanged)",
                   "Share of 20-token chunks whose change touches no medical term, number, negation or age "
                   "(deterministic judge); 100 = no clinically relevant change."),
    "medical_term_retention": Metric("Medical-term retention",
                                     "Share of the original's medical-dictionary terms still present in the output."),
    "number_retention": Metric("Number retention (no gold)",
                               "Numbers kept / (kept + lost); a changed number counts as lost unless its span has "
                               "identifier evidence of its own."),
    "word_retention": Metric("Word retention (no gold)",
                             "The same for non-number words: words kept / (kept + lost)."),
    "risk_score": Metric("Residual risk (no gold)",
                         "A score of how likely the note still holds an identifier (names, proper nouns, identifier "
                         "numbers and rejected candidates left in the output); ranks notes for review, not a "
                         "probability."),
    "risk_expected": Metric("Residual risk: expected missed identifiers",
                            "The residual-risk model's expected count of identifiers left in the note."),
}


def name(key: str) -> str:
    """The readable name of a report key (the key itself, underscores as spaces, when it has none)."""
    m = METRICS.get(key)
    return m.name if m is not None else key.replace("_", " ")


def definition(key: str) -> str:
    m = METRICS.get(key)
    return m.definition if m is not None else ""


@dataclass(frozen=True, slots=True)
class Target:
    """One quality target of the README (section Quality): ``value(rep)`` against ``op`` ``threshold``."""

    key: str
    what: str
    op: str  # ">=" or "<="
    threshold: float
    source: str


#: The README's quality targets (Quality: held-out targets; Per-note metrics: retention and risk, issue 14).
TARGETS: tuple[Target, ...] = (
    Target("recall", "token recall (generous)", ">=", 0.97, "held-out target (README, Quality)"),
    Target("precision", "token precision", ">=", 0.85, "held-out target (README, Quality)"),
    Target("number_retention_gap", "number retention: |mean estimate - mean truth|", "<=", 0.03,
           "issue 14 (README, Per-note metrics)"),
    Target("number_retention_spearman", "number retention: Spearman per note", ">=", 0.6,
           "issue 14 (README, Per-note metrics)"),
    Target("word_retention_gap", "word retention: |mean estimate - mean truth|", "<=", 0.03,
           "issue 14 (README, Per-note metrics)"),
    Target("word_retention_spearman", "word retention: Spearman per note", ">=", 0.6,
           "issue 14 (README, Per-note metrics)"),
    Target("risk_auroc", "residual risk: AUROC for a note with a missed identifier", ">=", 0.75,
           "issue 14 (README, Per-note metrics)"),
)


def _target_values(rep: Mapping[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {"recall": rep.get("recall"), "precision": rep.get("precision")}
    summary = rep.get("summary") or {}
    ret = summary.get("retention_vs_truth") or {}
    for what in ("number_retention", "word_retention"):
        c = ret.get(what) or {}
        est, truth = c.get("mean_estimate"), c.get("mean_truth")
        out[f"{what}_gap"] = abs(est - truth) if est is not None and truth is not None else None
        out[f"{what}_spearman"] = c.get("spearman")
    out["risk_auroc"] = (summary.get("risk_vs_truth") or {}).get("auroc")
    return out


def check_targets(rep: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per target: the measured value and ``pass`` / ``fail`` / ``n/a`` (not measured in this run)."""
    values = _target_values(rep)
    rows = []
    for t in TARGETS:
        v = values.get(t.key)
        status = "n/a" if v is None else ("pass" if (v >= t.threshold if t.op == ">=" else v <= t.threshold)
                                          else "fail")
        rows.append({"key": t.key, "what": t.what, "target": f"{t.op} {t.threshold:g}", "value": v,
                     "status": status, "source": t.source})
    return rows


#: Below this |correlation| per note, a no-gold estimate is said not to track its truth.
TRACKS_MIN = 0.3


def tracking_sentences(summary: Mapping[str, Any] | None) -> list[str]:
    """Plain sentences for each no-gold estimate whose per-note correlation with its gold truth is weak (or could
    not be computed), so a reader does not take it as a measurement of that note."""
    if not summary:
        return []
    checks: list[tuple[str, str, Mapping[str, Any] | None, str]] = [
        ("The recall proxy LR@t", "true token recall", (summary.get("proxy_vs_true_recall") or {}).get("token_recall"),
         "pearson"),
        ("Number retention", "the numbers the output truly kept",
         (summary.get("retention_vs_truth") or {}).get("number_retention"), "spearman"),
        ("Word retention", "the words the output truly kept",
         (summary.get("retention_vs_truth") or {}).get("word_retention"), "spearman"),
        ("The residual-risk expected count", "the identifiers truly missed",
         (summary.get("risk_vs_truth") or {}).get("expected_vs_missed"), "spearman"),
    ]
    out = []
    for what, truth, corr, kind in checks:
        if not corr:
            continue
        r, n = corr.get(kind), corr.get("n", 0)
        label = "Pearson r" if kind == "pearson" else "Spearman rho"
        if r is None:
            out.append(f"{what} could not be compared with {truth} on these notes ({n} notes; no variation to "
                       f"correlate): do not read it as a measurement of a note.")
        elif abs(r) < TRACKS_MIN:
            out.append(f"{what} does not track {truth} on these notes ({label} {r:.2f} per note over {n} notes): "
                       f"do not read a note's value as its truth; use it as a coarse alarm at most.")
    return out
