"""Fit the residual-risk weights on gold notes, cross-validated by patient group.

    .venv/bin/python scripts/fit_risk_cv.py [--gold ../shared/data/eval/physionet_deid_dev.jsonl]
        [--labels physionet] [--k 5] [--seed 0] [--l2 1.0] [-o scripts/results/risk_cv_physionet.json]

The pipeline (detection steps, transform, leak check, metrics) runs once over every note; each note gives its
residual-risk signals (``NoteMetrics.risk``, ``processors/risk.py``) and its truth, the gold
identifiers the output did not fully remove. In each fold a Poisson regression
(``processors.risk.fit_weights``) is fitted on the other folds' notes only (no patient's notes both
fitted and scored) and scores the held-out notes; the pooled held-out scores give the cross-validated AUROC
for "this note has a missed identifier", the Spearman correlation of expected against missed, and the mean
expected against the mean missed. The fit on all notes is
printed at the end for comparison (the shipped defaults are hand-set priors: see ``RiskWeights``), with the
shipped defaults scored on the same notes.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.evaluation import stats  # noqa: E402
from processors.evaluation.folds import splits  # noqa: E402
from processors.evaluation.gold import load_gold, load_label_map  # noqa: E402
from processors.evaluation.lockbox import design_only  # noqa: E402
from processors.evaluation.scoring import evaluate_note  # noqa: E402
from processors.risk import DEFAULT_WEIGHTS, RiskWeights, fit_weights, risk_expected  # noqa: E402
from streams.cli._util import span_record  # noqa: E402
from streams.cli.eval import run_pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def evaluate_scores(expected: list[float], missed: list[int]) -> dict[str, Any]:
    """AUROC of the expected count for "a missed identifier", Spearman against the missed count, means."""
    import math

    scores = [1.0 - math.exp(-e) for e in expected]
    return {"notes": len(missed), "notes_with_missed": sum(1 for m in missed if m > 0),
            "auroc": stats.auroc(scores, [m > 0 for m in missed]),
            "spearman": stats.spearman(expected, [float(m) for m in missed]),
            "mean_expected": sum(expected) / len(expected) if expected else None,
            "mean_missed": sum(missed) / len(missed) if missed else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", type=Path, default=REPO.parent / "shared/data/eval/physionet_deid_dev.jsonl")
    ap.add_argument("--labels", default="physionet")
    ap.add_argument("--steps", default=None, help="detection steps (default: the settings')")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/risk_cv_physionet.json")
    args = ap.parse_args()

    # the design part only: the lockbox (processors.evaluation.lockbox) fits nothing
    gold = design_only(load_gold(args.gold, load_label_map(args.labels) if args.labels else None))
    notes, _rate = run_pipeline(gold, config=None, steps=args.steps, batch_size=64, workers=1, with_metrics=True)
    signals: list[tuple[float, ...]] = []
    missed: list[int] = []
    for g, n in zip(gold, notes, strict=True):
        preds = [span_record(s) for s in n.spans] if n.error is None else []
        counts = evaluate_note(g, preds)
        missed.append(counts.entities - counts.entities_found)
        r = n.metrics.risk if n.metrics is not None else None
        signals.append(tuple(float(getattr(r, k)) for k in (
            "names", "proper_nouns", "identifier_numbers", "rejected_mass", "ner_mass", "kchars", "detected"))
            if r is not None else (0.0,) * 7)

    held_fit = [0.0] * len(gold)
    held_default = [0.0] * len(gold)
    folds = []
    for i, (fit_idx, score_idx) in enumerate(splits(gold, k=args.k, seed=args.seed)):
        w = fit_weights([signals[j] for j in fit_idx], [missed[j] for j in fit_idx], l2=args.l2)
        for j in score_idx:
            held_fit[j] = risk_expected(signals[j], w)
            held_default[j] = risk_expected(signals[j], DEFAULT_WEIGHTS)
        folds.append({"fold": i, "fit_notes": len(fit_idx), "scored_notes": len(score_idx),
                      "weights": dataclasses.asdict(w),
                      "held_out": evaluate_scores([held_fit[j] for j in score_idx], [missed[j] for j in score_idx])})
    final: RiskWeights = fit_weights(signals, missed, l2=args.l2)
    out = {
        "date": datetime.date.today().isoformat(), "gold": args.gold.name, "labels": args.labels, "k": args.k,
        "seed": args.seed, "l2": args.l2, "steps": args.steps or "default",
        "cross_validated": evaluate_scores(held_fit, missed),
        "shipped_defaults_in_sample": evaluate_scores([risk_expected(s, DEFAULT_WEIGHTS) for s in signals], missed),
        "shipped_defaults": dataclasses.asdict(DEFAULT_WEIGHTS),
        "fit_on_all_notes": dataclasses.asdict(final),
        "folds": folds,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("cross_validated", "shipped_defaults_in_sample", "fit_on_all_notes")},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
