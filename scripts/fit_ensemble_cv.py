"""Fit the ensemble policy (per-source thresholds, votes) on gold notes, cross-validated by patient group.

    .venv/bin/python scripts/fit_ensemble_cv.py [--gold ../shared/data/eval/physionet_deid_dev.jsonl]
        [--labels physionet] [--k 5] [--seed 0] [-o scripts/results/ensemble_cv_physionet.json]

The detection steps before the ensemble run once over every note; each candidate policy of the grid is then
applied with the ensemble's own pure functions (``processors.ensemble.decide``) and scored per note. In
each fold the policy is chosen on the other folds' notes only (no patient's notes both fitted and scored):
the highest token precision whose token recall is at least the current default policy's recall on those
same notes ("precision without losing recall"); ties go to the higher recall. The held-out fold is scored
with the chosen policy and with the default; the pooled held-out counts are the cross-validated estimate.
Finally the same rule picks a policy on all notes: the candidate for the shipped defaults, to be checked on
the synthetic and presidio_synth_v2 sets before it ships.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.ensemble import Ensemble, decide  # noqa: E402
from processors.evaluation.folds import splits  # noqa: E402
from processors.evaluation.gold import load_gold, load_label_map  # noqa: E402
from processors.evaluation.scoring import evaluate_note  # noqa: E402
from streams.cli._util import span_record  # noqa: E402
from streams.cli.eval import run_pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GRID = {
    "ner": (0.15, 0.3, 0.5, 0.7, 0.9),
    "dictionary": (0.5, 0.7, 0.9, 1.01),
    "regex": (0.3, 0.5, 0.7),
    "min_votes": (2, 3),
}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _score(counts: list[tuple[int, int, int]], idx: list[int]) -> dict[str, Any]:
    tp = sum(counts[i][0] for i in idx)
    fp = sum(counts[i][1] for i in idx)
    fn = sum(counts[i][2] for i in idx)
    return {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}


def _choose(table: dict[str, list[tuple[int, int, int]]], default: str, idx: list[int]) -> str:
    floor = _score(table[default], idx)["recall"] or 0.0
    best_key, best = default, (-1.0, -1.0)
    for key, counts in table.items():
        s = _score(counts, idx)
        if (s["recall"] or 0.0) + 1e-12 < floor:
            continue
        rank = (s["precision"] or 0.0, s["recall"] or 0.0)
        if rank > best:
            best_key, best = key, rank
    return best_key


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", type=Path, default=REPO.parent / "shared/data/eval/physionet_deid_dev.jsonl")
    ap.add_argument("--labels", default="physionet")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", default="regex,ner,dictionary,recovery", help="the detection steps before the ensemble")
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/ensemble_cv_physionet.json")
    args = ap.parse_args()

    gold = load_gold(args.gold, load_label_map(args.labels) if args.labels else None, own_labels=not args.labels)
    notes, _ = run_pipeline(gold, config=None, steps=args.steps, batch_size=64, workers=1, with_metrics=False)
    spans = [n.spans if n.error is None else () for n in notes]
    defaults = Ensemble.Config()
    policies: dict[str, tuple[dict[str, float], int]] = {}
    for ner, dic, rx, votes in itertools.product(*GRID.values()):
        thresholds = {**defaults.thresholds, "ner": ner, "dictionary": dic, "regex": rx}
        policies[f"ner={ner} dictionary={dic} regex={rx} min_votes={votes}"] = (thresholds, votes)
    default_key = (f"ner={defaults.thresholds['ner']} dictionary={defaults.thresholds['dictionary']} "
                   f"regex={defaults.thresholds['regex']} min_votes={defaults.min_votes}")
    assert default_key in policies, default_key
    table: dict[str, list[tuple[int, int, int]]] = {}
    for key, (thresholds, votes) in policies.items():
        row = []
        for g, s in zip(gold, spans, strict=True):
            kept, _ = decide(s, thresholds, defaults.default_threshold, votes)
            c = evaluate_note(g, [span_record(x) for x in kept])
            row.append((c.tp, c.fp, c.fn))
        table[key] = row

    folds = []
    held_chosen: list[int] = []
    pooled = {"chosen": [0, 0, 0], "default": [0, 0, 0]}
    for fit, held_out in splits(gold, args.k, args.seed):
        key = _choose(table, default_key, fit)
        chosen, default = _score(table[key], held_out), _score(table[default_key], held_out)
        folds.append({"policy": key, "fit_notes": len(fit), "held_out_notes": len(held_out),
                      "held_out": chosen, "held_out_default": default})
        for name, s in (("chosen", chosen), ("default", default)):
            for j, f in enumerate(("tp", "fp", "fn")):
                pooled[name][j] += s[f]
        held_chosen.extend(held_out)
    cv = {name: {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn)}
          for name, (tp, fp, fn) in pooled.items()}
    everything = list(range(len(gold)))
    final_key = _choose(table, default_key, everything)
    out = {
        "gold": args.gold.name, "labels": args.labels, "notes": len(gold), "k": args.k, "seed": args.seed,
        "steps_before_ensemble": args.steps, "grid": GRID, "default_policy": default_key,
        "rule": "highest precision with recall >= the default policy's on the fitting notes",
        "folds": folds, "cross_validated": cv,
        "fit_on_all": {"policy": final_key, "in_sample": _score(table[final_key], everything),
                       "default_in_sample": _score(table[default_key], everything)},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    for f in folds:
        print(f"fold: {f['policy']}: held-out P {f['held_out']['precision']:.3f} R {f['held_out']['recall']:.3f} "
              f"(default P {f['held_out_default']['precision']:.3f} R {f['held_out_default']['recall']:.3f})")
    for name, s in cv.items():
        print(f"cross-validated {name}: P {s['precision']:.3f} R {s['recall']:.3f} (fp {s['fp']}, fn {s['fn']})")
    print(f"fit on all notes: {final_key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
