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

Recovery's ``weak_lower_score`` (a lower-case name / place / organisation only the model found needs evidence
below it) is a threshold too: when recovery is among the steps it runs once per value of ``WEAK_LOWER`` on the
same candidates, and each policy is a pair (ensemble thresholds, weak_lower_score).

The shipped NER model (stage 3) was trained on these notes, so its spans on them are in-sample.
``--fold-models DIR`` (the unpacked fold models of ``scripts/ner_cv.py``: ``DIR/<variant>fold<k>``) runs each
fold's held-out notes through the model trained without that fold's patients: every note's candidates are
then out-of-fold, as the held-out half of the corpus will see the shipped model. (Policy choice on the
fitting folds uses their own out-of-fold spans, from models that did see the scored fold's notes: a small
leak into the choice of a 4-number policy, not into the scored spans.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dictionaries.cache import cache_dir  # noqa: E402
from processors.ensemble import Ensemble, decide  # noqa: E402
from processors.evaluation.folds import splits  # noqa: E402
from processors.evaluation.gold import load_gold, load_label_map  # noqa: E402
from processors.evaluation.scoring import evaluate_note  # noqa: E402
from processors.pipeline import BuildContext, Note, build_processor  # noqa: E402
from processors.recovery import MedicalRecovery  # noqa: E402
from schemas.models import Span  # noqa: E402
from streams.cli._util import span_record  # noqa: E402
from streams.cli.eval import run_pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GRID = {
    "ner": (0.08, 0.15, 0.3, 0.5, 0.7, 0.9),
    "dictionary": (0.5, 0.7, 0.9, 1.01),
    "regex": (0.3, 0.4, 0.5, 0.7),
    "min_votes": (2, 3),
}
#: recovery's ``weak_lower_score`` (0: off), searched with the ensemble grid when recovery is among the steps
WEAK_LOWER = (0.0, 0.3, 0.45, 0.6, 0.75, 0.9)


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
    ap.add_argument("--fold-models", type=Path, default=None,
                    help="unpacked fold models (DIR/<variant>fold<k>): out-of-fold NER spans for every note")
    ap.add_argument("--options", default="{}", help="pipeline options (JSON) for the detection steps, e.g. "
                    "'{\"dictionary\": {\"scores\": {\"caps_name\": 0.45}}}'")
    ap.add_argument("--variant", default="k", help="fold model name prefix (scripts/ner_cv.py --variant)")
    ap.add_argument("-o", "--output", type=Path, default=REPO / "scripts/results/ensemble_cv_physionet.json")
    args = ap.parse_args()

    gold = load_gold(args.gold, load_label_map(args.labels) if args.labels else None, own_labels=not args.labels)
    folds_idx = list(splits(gold, args.k, args.seed))
    base_options = json.loads(args.options)
    if base_options:
        os.environ["DEID_PIPELINE__OPTIONS"] = json.dumps(base_options)
    steps = args.steps.split(",")
    sweep_weak = steps[-1:] == ["recovery"]  # recovery runs here, once per weak_lower_score
    weak_values: tuple[float | None, ...] = WEAK_LOWER if sweep_weak else (None,)
    detect = ",".join(steps[:-1]) if sweep_weak else args.steps
    found: list[Note | None] = [None] * len(gold)
    if args.fold_models is None:
        notes, _ = run_pipeline(gold, config=None, steps=detect, batch_size=64, workers=1, with_metrics=False)
        found = list(notes)
    else:
        for k, (_, held) in enumerate(folds_idx):
            model = args.fold_models / f"{args.variant}fold{k}"
            if not (model / "model.safetensors").is_file():
                raise SystemExit(f"no fold model at {model} (unpack it with scripts/ner_cv.py score)")
            options = {**base_options, "ner": {**base_options.get("ner", {}), "model_dir": str(model)}}
            os.environ["DEID_PIPELINE__OPTIONS"] = json.dumps(options)
            sub, _ = run_pipeline([gold[i] for i in held], config=None, steps=detect, batch_size=64, workers=1,
                                  with_metrics=False)
            for i, n in zip(held, sub, strict=True):
                found[i] = n
        os.environ.pop("DEID_PIPELINE__OPTIONS", None)
    spans_by_weak: dict[float | None, list[tuple[Span, ...]]] = {}
    for weak in weak_values:
        if weak is None:
            spans_by_weak[weak] = [n.spans if n is not None and n.error is None else () for n in found]
            continue
        recovery = build_processor("recovery", {**base_options.get("recovery", {}), "weak_lower_score": weak},
                                   BuildContext(cache_dir=cache_dir()))
        spans_by_weak[weak] = [recovery.process_batch([n])[0].spans if n is not None and n.error is None else ()
                               for n in found]
    defaults = Ensemble.Config()
    default_weak = MedicalRecovery.Config().weak_lower_score if sweep_weak else None

    def weak_key(weak: float | None) -> str:
        return "" if weak is None else f" weak_lower={weak}"

    policies: dict[str, tuple[dict[str, float], int, float | None]] = {}
    for (ner, dic, rx, votes), weak in itertools.product(itertools.product(*GRID.values()), weak_values):
        thresholds = {**defaults.thresholds, "ner": float(ner), "dictionary": float(dic), "regex": float(rx)}
        key = f"ner={ner} dictionary={dic} regex={rx} min_votes={votes}{weak_key(weak)}"
        policies[key] = (thresholds, int(votes), weak)
    default_key = (f"ner={defaults.thresholds['ner']} dictionary={defaults.thresholds['dictionary']} "
                   f"regex={defaults.thresholds['regex']} min_votes={defaults.min_votes}{weak_key(default_weak)}")
    assert default_key in policies, default_key
    table: dict[str, list[tuple[int, int, int]]] = {}
    for key, (thresholds, votes, weak) in policies.items():
        row = []
        for g, cands in zip(gold, spans_by_weak[weak], strict=True):
            kept, _ = decide(cands, thresholds, defaults.default_threshold, votes)
            c = evaluate_note(g, [span_record(x) for x in kept])
            row.append((c.tp, c.fp, c.fn))
        table[key] = row

    folds: list[dict[str, Any]] = []
    held_chosen: list[int] = []
    pooled = {"chosen": [0, 0, 0], "default": [0, 0, 0]}
    for fit, held_out in folds_idx:
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
    # the trade-off over all notes (pooled, no choice made): policies no other beats on both precision and recall
    pooled_all = {key: _score(counts, everything) for key, counts in table.items()}
    pareto = sorted((
        {"policy": key, "precision": s["precision"], "recall": s["recall"], "fp": s["fp"], "fn": s["fn"]}
        for key, s in pooled_all.items()
        if not any((o["precision"] or 0) >= (s["precision"] or 0) and (o["recall"] or 0) >= (s["recall"] or 0)
                   and (o["precision"], o["recall"]) != (s["precision"], s["recall"]) for o in pooled_all.values())),
        key=lambda r: -(r["recall"] or 0.0))
    out = {
        "gold": args.gold.name, "labels": args.labels, "notes": len(gold), "k": args.k, "seed": args.seed,
        "steps_before_ensemble": args.steps, "detection_options": base_options,
        "grid": {**GRID, **({"weak_lower_score": WEAK_LOWER} if sweep_weak else {})},
        "ner_spans": (f"out-of-fold: fold models {args.fold_models.name}/{args.variant}fold<k>"
                      if args.fold_models is not None else "the shipped model"), "default_policy": default_key,
        "rule": "highest precision with recall >= the default policy's on the fitting notes",
        "folds": folds, "cross_validated": cv,
        "pareto_front": pareto,
        "fit_on_all": {"policy": final_key, "in_sample": _score(table[final_key], everything),
                       "default_in_sample": _score(table[default_key], everything)},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    for fold in folds:
        got, ref = fold["held_out"], fold["held_out_default"]
        print(f"fold: {fold['policy']}: held-out P {got['precision']:.3f} R {got['recall']:.3f} "
              f"(default P {ref['precision']:.3f} R {ref['recall']:.3f})")
    for name, s in cv.items():
        print(f"cross-validated {name}: P {s['precision']:.3f} R {s['recall']:.3f} (fp {s['fp']}, fn {s['fn']})")
    print(f"fit on all notes: {final_key}")
    for r in pareto:
        print(f"pareto: {r['policy']}: P {r['precision']:.3f} R {r['recall']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
