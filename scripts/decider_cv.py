"""The decision stage on the PhysioNet dev notes: out-of-fold NER spans, training, the lockbox (issue 25).

    # 1. after scripts/ner_cv.py train (fold models of the design patients in .gpu/packs, variant d): each design
    #    note's NER spans from the fold model that never saw its patient, kept in the repository (offsets, labels and
    #    scores only; no note text), so the decision stage retrains in seconds without retraining the NER
    .venv/bin/python scripts/decider_cv.py oof --packs .gpu/packs --variant d [--thresholds 0.08,0.03]
    # 2. train the shipped decision models (with and without the NER step) and write the design-CV report
    .venv/bin/python scripts/decider_cv.py train
    # 3. score every set: design CV (nested), the lockbox (aggregates only), synthetic, presidio_synth_v2, MEDDOCAN
    .venv/bin/python scripts/decider_cv.py measure [-o scripts/results/decider_quality.json]
    # 4. the ablation table of the hard rules that remain (recovery's edges and medical terms)
    .venv/bin/python scripts/decider_cv.py ablate
    # 5. the fold models against the shipped NER on new text (the lockbox in aggregate), through the shipped decision
    #    model: does the decision stage meet the NER it was trained on? (scripts/ner_cv.py train's packs)
    .venv/bin/python scripts/decider_cv.py fold-ners [--packs .gpu/packs --variant d --folds 0,1,2,3,4]
    # 6. the NER alone on the design notes from out-of-fold files (other recipes, seeds, soups), and their union
    .venv/bin/python scripts/decider_cv.py oof-score FILE [FILE ...] [--union] [-o scripts/results/ner_seed_draws.json]
    # 7. the default pipeline as it runs on the design notes, a decision model trained without each fold's patients:
    #    pooled P / R and the residual-risk AUROC (the lockbox has too few notes with a miss to rank)
    .venv/bin/python scripts/decider_cv.py risk-cv [-o scripts/results/decider_risk_cv.json]
    # 8. the fold models' word-piece label probabilities of the design notes (no text; the ner_probs trial of
    #    decider_trials.py), compared with the kept spans, and the spans decoded from the same probabilities
    .venv/bin/python scripts/decider_cv.py oof-probs [--packs .gpu/packs --variant d] [--out F] [--spans-out G]

The lockbox (``processors.evaluation.lockbox``) is never trained on and only scored in aggregate: this script
prints and writes precision, recall and token counts per label for it, nothing per note.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared/data/eval"
DEV = DATA / "physionet_deid_dev.jsonl"
OOF = REPO / "scripts/data/ner_oof_physionet_design.jsonl.gz"
RESULTS = REPO / "scripts/results"
K = 5
#: the synthetic notes the decision stage trains on (other seeds than the NER's 1001 / 1003 and the eval set's 9001)
SYNTHETIC_TRAIN = (600, 7001)
SYNTHETIC_SHIFT_TRAIN = (300, 7003)
SYNTHETIC_EVAL = (500, 9001)


def _span_dict(s: Any) -> dict[str, Any]:
    return {"start": s.start, "end": s.end, "label": str(s.label), "subtype": s.subtype, "score": round(s.score, 5),
            "source": s.source}


#: another NER's files for an experiment (``--oof`` / ``--ner-model`` of train and measure); None: the shipped ones.
#: ``fp32`` (``--fp32``): the NER model unquantized, the cpu-fp32 / gpu-fp16 profiles' path, with its own
#: out-of-fold spans (``OOF_FP32``)
#: ``routes``: the languages whose notes the NER and decide steps serve with their own models (the pipeline policy's
#: ``language_routes``): none here but in ``measure``, which scores the shipped pipeline (a decision model is trained
#: on, and a trial compares, the candidates of one NER model)
OVERRIDE: dict[str, Any] = {"oof": None, "ner_model": None, "fp32": False, "other_oof": [], "routes": ()}
OOF_FP32 = REPO / "scripts/data/ner_oof_physionet_design_fp32.jsonl.gz"


def read_oof(path: Path | None = None, *, partial_ok: bool = False
             ) -> tuple[dict[str, Any], dict[str, dict[str, list[dict[str, Any]]]]]:
    """(header, note id -> NER threshold -> NER spans) of the out-of-fold file. A file of some folds only (``oof
    --folds``) is refused unless ``partial_ok``: the decision stage needs every design note's spans."""
    path = path or OVERRIDE["oof"] or (OOF_FP32 if OVERRIDE["fp32"] else OOF)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        if header.get("folds_written") is not None and not partial_ok:
            raise SystemExit(f"{Path(path).name} holds the spans of folds {header['folds_written']} only "
                             "(oof --folds); this needs every design note's")
        spans = {}
        for line in fh:
            rec = json.loads(line)
            spans[rec["id"]] = rec["spans"]
    return header, spans


def design_gold() -> list[Any]:
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import design_only

    return design_only(load_gold(DEV, load_label_map("physionet")))


def lockbox_gold() -> list[Any]:
    from processors.evaluation.gold import load_gold, load_label_map
    from processors.evaluation.lockbox import split

    return split(load_gold(DEV, load_label_map("physionet")))[1]


def _oof_fold(job: tuple[int, str, str, list[Any], list[float], int, bool, bool, str],
              ) -> dict[str, dict[str, Any]]:
    """One fold: its held-out notes' NER spans from the fold's model (CPU, int8: the shipped runtime's path; with
    ``quantize`` off, float32: the ``cpu-fp32`` profile's path, the stand-in for ``gpu-fp16``; or the job's dtype,
    e.g. bfloat16, which a CPU with AMX runs on its matrix units).
    ``keep_all``: keep spans of function words only too (the NER step drops them; that test needs wordfreq, which
    the GPU machine lacks: ``oof-filter`` drops them here afterwards)."""
    k, packs, variant, notes, thresholds, threads, keep_all, quantize, dtype = job
    import torch
    from ner_cv import unpack

    from processors.ner.step import load_model, predict

    torch.set_num_threads(threads)
    models = REPO / ".gpu/models"
    model_dir = unpack(Path(packs) / f"{variant}fold{k}.tar", models / f"{variant}fold{k}")
    model = load_model(str(model_dir.resolve()), "cpu", quantize, dtype)
    pieces = predict(model, [g.text for g in notes], batch_size=32, max_length=512, overlap=64)
    rows = {g.id: {"id": g.id, "fold": k, "spans": fold_spans(g.text, p, model.index, thresholds, keep_all)}
            for g, p in zip(notes, pieces, strict=True)}
    print(json.dumps({"fold": k, "notes": len(notes)}), flush=True)
    return rows


def fold_spans(text: str, pieces: Any, index: Any, thresholds: Sequence[float], keep_all: bool = False,
               ) -> dict[str, list[dict[str, Any]]]:
    """A note's NER spans decoded from its pieces' probabilities at each threshold, as the out-of-fold files keep
    them (spans of function words only dropped as the NER step drops them, unless ``keep_all``)."""
    from processors.ner.step import decode_spans, only_function_words

    return {str(t): [_span_dict(s) for s in decode_spans(text, pieces.offsets, pieces.probs, index,
                                                         token_threshold=t, min_score=t)
                     if keep_all or not only_function_words(text[s.start:s.end])] for t in thresholds}


def oof(args: argparse.Namespace) -> int:
    """Each design note's NER spans from its fold's model, at each threshold asked for."""
    from processors.evaluation.folds import group_folds
    from processors.evaluation.gold import load_gold

    # --notes: the design notes already in our labels (scripts/ner_cv.py prepare's .gpu/physionet.jsonl), where
    # ../shared is not at hand (the GPU machine); same notes, same order, same folds as design_gold()
    gold = load_gold(args.notes) if args.notes else design_gold()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    folds = group_folds(gold, K, 0)
    wanted = sorted({int(k) for k in args.folds.split(",")})
    if not set(wanted) <= set(range(K)):
        raise SystemExit(f"--folds: each between 0 and {K - 1}")
    # the fold models' numeric path: int8 (the shipped runtime's), float32 (--fp32) or another dtype (--dtype)
    quantize, dtype = not (args.fp32 or args.dtype), args.dtype or "auto"
    numeric_path = (f"cpu {args.dtype} (no profile)" if args.dtype else
                    "cpu float32 (profile cpu-fp32)" if args.fp32 else "cpu dynamic int8 (profile cpu-int8)")
    jobs = [(k, args.packs, args.variant, [gold[i] for i in held], thresholds, max(1, args.threads), args.no_filter,
             quantize, dtype) for k, held in enumerate(folds) if k in wanted]
    rows: dict[str, dict[str, Any]] = {}
    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            for part in pool.map(_oof_fold, jobs):
                rows.update(part)
    else:
        for job in jobs:
            rows.update(_oof_fold(job))
    out = Path(args.out) if args.out else OOF
    out.parent.mkdir(parents=True, exist_ok=True)
    header = {"what": "NER spans of each note from the fold model trained without its patient"
                      + (f" ({args.notes})" if args.notes else " (the PhysioNet dev design notes)"),
              "folds": K, "fold_seed": 0, "thresholds": thresholds, "packs_variant": args.variant,
              "recipe": args.recipe, "torch": __import__("torch").__version__, "function_words_dropped": not args.no_filter,
              "numeric_path": numeric_path}
    if len(wanted) < K:
        header["folds_written"] = wanted  # a probe of some folds' models: oof-score reads it, training refuses it
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(json.dumps(header) + "\n")
        for g in gold:
            if g.id in rows:
                fh.write(json.dumps(rows[g.id]) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


#: the out-of-fold NER probabilities of the design notes (``oof-probs``): per note, the word pieces whose entity
#: probability reaches ``PROB_FLOOR``, with each label's probability (B + I over its classes) in units of 1 / PROB_UNIT.
#: From the shipped recipe retrained on 2026-12-05, which is another draw than the kept spans' (``OOF``; the model
#: card says why): its own spans, decoded from the same probabilities, are ``ner_oof_physionet_design_redraw.jsonl.gz``
OOF_PROBS = REPO / "scripts/data/ner_probs_physionet_design_redraw.jsonl.gz"
PROB_FLOOR = 0.001
PROB_UNIT = 10_000


def piece_masses(offsets: Any, probs: Any, index: Any) -> tuple[tuple[str, ...], list[list[int]]]:
    """(the model's labels in index order, [start, end, each label's probability x PROB_UNIT] of every piece whose
    entity probability, 1 - P(O), reaches PROB_FLOOR). No text: offsets and numbers only."""
    import numpy as np

    from processors.ner.step import _label_ids, parse_class

    label_of = _label_ids(index)
    firsts = sorted(set(label_of.tolist()))
    labels = tuple(str(parse_class(index.classes[c])[0]) for c in firsts)
    p_class = probs[:, list(index.begin)] + probs[:, list(index.inside)]
    mass = np.zeros((len(probs), len(firsts)), dtype=np.float64)
    for j, c in enumerate(firsts):
        mass[:, j] = p_class[:, label_of == c].sum(axis=1)
    entity = 1.0 - probs[:, index.outside]
    keep = np.flatnonzero((entity >= PROB_FLOOR) & (offsets[:, 1] > offsets[:, 0]))
    rows = [[int(offsets[i, 0]), int(offsets[i, 1]), *(int(round(v * PROB_UNIT)) for v in mass[i])] for i in keep]
    return labels, rows


def _probs_fold(job: tuple[int, str, str, list[Any], int, dict[str, dict[str, list[dict[str, Any]]]], list[float]],
                ) -> dict[str, Any]:
    """One fold's held-out notes: their pieces' label probabilities from the fold's model (int8 CPU, as ``oof``), and
    whether the spans decoded from them are the kept out-of-fold file's (the same model, reproduced)."""
    k, packs, variant, notes, threads, kept, thresholds = job
    import torch
    from ner_cv import unpack

    from processors.ner.step import load_model, predict

    torch.set_num_threads(threads)
    model_dir = unpack(Path(packs) / f"{variant}fold{k}.tar", REPO / ".gpu/models" / f"{variant}fold{k}")
    model = load_model(str(model_dir.resolve()), "cpu", True, "auto")
    pieces = predict(model, [g.text for g in notes], batch_size=32, max_length=512, overlap=64)
    rows: dict[str, Any] = {}
    same = differ = 0
    labels: tuple[str, ...] = ()
    for g, p in zip(notes, pieces, strict=True):
        labels, masses = piece_masses(p.offsets, p.probs, model.index)
        spans = fold_spans(g.text, p, model.index, thresholds)
        rows[g.id] = {"id": g.id, "fold": k, "pieces": masses, "spans": spans}
        for t, want in kept[g.id].items():
            if str(float(t)) not in spans:
                continue
            if spans[str(float(t))] == want:
                same += 1
            else:
                differ += 1
    print(json.dumps({"fold": k, "notes": len(notes), "kept_spans_same": same, "differ": differ}), flush=True)
    return {"rows": rows, "labels": labels, "same": same, "differ": differ}


def oof_probs(args: argparse.Namespace) -> int:
    """Each design note's word pieces' label probabilities from its fold's model (``OOF_PROBS``), compared with the
    kept out-of-fold spans (``--kept``: the packs that made them give the same spans at every stored threshold; a
    retraining of the recipe need not: on 2026-12-05's packages it was another draw). ``--spans-out``: the
    spans decoded from the same probabilities, as ``oof`` writes them (the draw's own out-of-fold file)."""
    from processors.evaluation.folds import group_folds

    gold = design_gold()
    folds = group_folds(gold, K, 0)
    header_kept, kept = read_oof(Path(args.kept))
    thresholds = [float(t) for t in header_kept["thresholds"]]
    jobs = [(k, args.packs, args.variant, [gold[i] for i in held], max(1, args.threads),
             {gold[i].id: kept[gold[i].id] for i in held}, thresholds) for k, held in enumerate(folds)]
    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            parts = pool.map(_probs_fold, jobs)
    else:
        parts = [_probs_fold(job) for job in jobs]
    same, differ = sum(p["same"] for p in parts), sum(p["differ"] for p in parts)
    rows = {k: v for p in parts for k, v in p["rows"].items()}
    header = {"what": "NER word-piece label probabilities of each PhysioNet dev design note from the fold model "
                      "trained without its patient (pieces whose entity probability reaches the floor; no text)",
              "folds": K, "fold_seed": 0, "packs_variant": args.variant, "recipe": args.recipe,
              "labels": list(parts[0]["labels"]), "floor": PROB_FLOOR, "unit": PROB_UNIT,
              "torch": __import__("torch").__version__, "numeric_path": "cpu dynamic int8 (profile cpu-int8)",
              "kept_spans_file": _rel(Path(args.kept)).as_posix(),
              "kept_spans_reproduced": {"note_thresholds_same": same, "differ": differ}}
    out = Path(args.out) if args.out else OOF_PROBS
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(json.dumps(header) + "\n")
        for g in gold:
            r = rows[g.id]
            fh.write(json.dumps({"id": r["id"], "fold": r["fold"], "pieces": r["pieces"]}, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes); kept spans reproduced at {same} note-thresholds, {differ} differ")
    if args.spans_out:
        spans_out = Path(args.spans_out)
        spans_header = {"what": "NER spans of each PhysioNet dev design note from the fold model trained without its "
                                "patient", "folds": K, "fold_seed": 0, "thresholds": thresholds,
                        "packs_variant": args.variant, "recipe": args.recipe, "torch": header["torch"],
                        "function_words_dropped": True, "numeric_path": header["numeric_path"],
                        "probabilities": _rel(out).as_posix()}
        with gzip.open(spans_out, "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(json.dumps(spans_header) + "\n")
            for g in gold:
                r = rows[g.id]
                fh.write(json.dumps({"id": r["id"], "fold": r["fold"], "spans": r["spans"]}) + "\n")
        print(f"wrote {spans_out} ({spans_out.stat().st_size} bytes)")
    return 0


def read_probs(path: Path | None = None) -> tuple[dict[str, Any], dict[str, list[list[int]]]]:
    """(header, note id -> pieces) of an ``oof-probs`` file."""
    with gzip.open(path or OOF_PROBS, "rt", encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        return header, {r["id"]: r["pieces"] for r in map(json.loads, fh)}


def shipped_probs(gold: Sequence[Any], name: str) -> tuple[tuple[str, ...], dict[str, list[list[int]]]]:
    """The shipped NER model's (or ``--ner-model``'s) piece label probabilities on ``gold`` (as ``oof-probs`` writes
    them), int8 CPU, cached in .gpu/ner_cache by the model's hash (git-ignored)."""
    from processors.ner.step import DEFAULT_MODEL_DIR, load_model, model_id, predict

    model_dir = Path(OVERRIDE["ner_model"] or DEFAULT_MODEL_DIR)
    path = REPO / ".gpu/ner_cache" / f"{name}-{model_id(model_dir).rsplit('-', 1)[1]}-probs.jsonl.gz"
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            labels = tuple(json.loads(fh.readline())["labels"])
            cached = {r["id"]: r["pieces"] for r in map(json.loads, fh)}
        if all(g.id in cached for g in gold):
            return labels, {g.id: cached[g.id] for g in gold}
    model = load_model(str(model_dir.resolve()), "cpu", True, "auto")
    pieces = predict(model, [g.text for g in gold], batch_size=32, max_length=512, overlap=64)
    out: dict[str, list[list[int]]] = {}
    labels = ()
    for g, p in zip(gold, pieces, strict=True):
        labels, out[g.id] = piece_masses(p.offsets, p.probs, model.index)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"labels": list(labels)}) + "\n")
        for k, v in out.items():
            fh.write(json.dumps({"id": k, "pieces": v}, separators=(",", ":")) + "\n")
    return labels, out


def oof_filter(args: argparse.Namespace) -> int:
    """Drop the spans of function words only from an out-of-fold file written with ``oof --no-filter``."""
    from processors.ner.step import only_function_words

    text = {g.id: g.text for g in design_gold()}
    with gzip.open(args.input, "rt", encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        rows = [json.loads(line) for line in fh]
    header["function_words_dropped"] = True
    with gzip.open(args.out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(json.dumps(header) + "\n")
        for r in rows:
            t = text[r["id"]]
            r["spans"] = {k: [s for s in v if not only_function_words(t[s["start"]:s["end"]])] for k, v in r["spans"].items()}
            fh.write(json.dumps(r) + "\n")
    print(f"wrote {args.out}")
    return 0


def oof_score(args: argparse.Namespace) -> int:
    """The NER alone on the design notes, from out-of-fold files: token P / R / fp / fn per file and threshold, and
    with ``--union`` the spans of all the files together (what running every one of those NERs would give)."""
    from processors.evaluation.scoring import evaluate
    from schemas.models import Span

    files = [Path(f) for f in args.files]
    read = {f: read_oof(f, partial_ok=True) for f in files}
    # a file of some folds only (oof --folds): every file is scored on the notes they all hold
    common = set.intersection(*(set(rows) for _, rows in read.values()))
    gold = [g for g in design_gold() if g.id in common]
    thresholds = [t for t in args.thresholds.split(",") if all(t in {str(x) for x in h["thresholds"]}
                                                                for h, _ in read.values())]
    if not thresholds:
        raise SystemExit(f"no threshold of {args.thresholds} is in every file")

    def counts(spans: Mapping[str, Sequence[dict[str, Any]]]) -> dict[str, Any]:
        r = evaluate(gold, {g.id: [Span.model_validate(x) for x in spans[g.id]] for g in gold})
        return {"precision": None if r.precision is None else round(r.precision, 4),  # None: nothing found
                "recall": None if r.recall is None else round(r.recall, 4), "fp": r.fp, "fn": r.fn}

    out: dict[str, Any] = {"what": "the NER alone on the PhysioNet design notes, out of fold (token counts)",
                           "date": time.strftime("%Y-%m-%d"), "command": " ".join(["scripts/decider_cv.py", *sys.argv[1:]]),
                           "notes": len(gold), "files": {}}
    for f, (header, rows) in read.items():
        out["files"][str(f)] = {"recipe": header.get("recipe"), "packs_variant": header.get("packs_variant"),
                                **{t: counts({i: rows[i][t] for i in common}) for t in thresholds}}
        print(json.dumps({"file": f.name, **{t: out["files"][str(f)][t] for t in thresholds}}), flush=True)
    if args.union and len(files) > 1:
        union: dict[str, Any] = {}
        for t in thresholds:
            merged: dict[str, list[dict[str, Any]]] = {}
            for _, rows in read.values():
                for i, spans in rows.items():
                    if i not in common:
                        continue
                    seen = merged.setdefault(i, [])
                    seen.extend(x for x in spans[t] if x not in seen)
            union[t] = counts(merged)
        out["union"] = union
        print(json.dumps({"union": union}), flush=True)
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def oof_mean(args: argparse.Namespace) -> int:
    """A mean-score ensemble of several NERs' out-of-fold files at one threshold (what running every one of them
    and averaging would give, span-wise): each span of any file scored by the mean over the files of the best
    same-label span overlapping it (0 where a file has none); from the highest score down, spans that overlap a
    kept one are left out; spans under the threshold are dropped."""
    t = str(args.threshold)
    files = [Path(f) for f in args.files]
    draws = [read_oof(f)[1] for f in files]
    header = {"what": "mean-score ensemble of NER out-of-fold files", "files": [str(f) for f in files],
              "thresholds": [args.threshold], "command": " ".join(["scripts/decider_cv.py", *sys.argv[1:]])}
    kept = 0
    with gzip.open(args.out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(json.dumps(header) + "\n")
        for note_id in draws[0]:
            per_draw = [d[note_id][t] for d in draws]

            def mean_score(s: Mapping[str, Any], per_draw: list[Any] = per_draw) -> float:
                return sum(max((x["score"] for x in spans if x["label"] == s["label"]
                                and x["start"] < s["end"] and s["start"] < x["end"]), default=0.0)
                           for spans in per_draw) / len(per_draw)

            candidates: dict[tuple[int, int, str], dict[str, Any]] = {}
            for spans in per_draw:
                for s in spans:
                    key = (s["start"], s["end"], s["label"])
                    if key not in candidates:
                        candidates[key] = {**s, "score": round(mean_score(s), 5)}
            chosen: list[dict[str, Any]] = []
            for s in sorted(candidates.values(), key=lambda s: (-s["score"], s["start"])):
                if s["score"] >= args.threshold and not any(c["start"] < s["end"] and s["start"] < c["end"]
                                                            for c in chosen):
                    chosen.append(s)
            kept += len(chosen)
            fh.write(json.dumps({"id": note_id, "spans": {t: sorted(chosen, key=lambda s: s["start"])}}) + "\n")
    print(json.dumps({"out": str(args.out), "spans": kept}))
    return 0


def stored_at(threshold: float, oof: tuple[dict[str, Any], dict[str, dict[str, list[dict[str, Any]]]]] | None = None
              ) -> dict[str, list[dict[str, Any]]]:
    """The design notes' out-of-fold spans at ``threshold`` (``oof``: the file as :func:`read_oof` read it, if the
    caller has it)."""
    header, rows = oof or read_oof()
    key = str(threshold)
    if key not in {str(t) for t in header["thresholds"]}:
        raise SystemExit(f"{OOF.name} has no spans at NER threshold {threshold} (has {header['thresholds']})")
    return {i: r[key] for i, r in rows.items()}


def ner_options(threshold: float) -> dict[str, Any]:
    extra: dict[str, Any] = {"model_dir": str(OVERRIDE["ner_model"])} if OVERRIDE["ner_model"] else {}
    if OVERRIDE["fp32"]:
        extra["quantize"] = False
    return {"token_threshold": threshold, "min_score": threshold, **extra}


def training_corpora(weight: float = 20.0) -> list[Any]:
    """PhysioNet design notes (choose the threshold; their rows weigh ``weight``: 1,738 candidates against some 41,000
    of the other two), synthetic and MEDDOCAN train notes (rows only: general and foreign-language text; without them
    presidio_synth_v2 recall fell to 0.90 and MEDDOCAN dev's to 0.84, with them the real notes' precision fell by about
    0.04, design CV: README, Quality)."""
    from processors.evaluation.gold import gold_from_records, load_gold, load_label_map
    from processors.synthetic.generator import generate
    from processors.training.decider import Corpus

    synthetic = gold_from_records(generate(*SYNTHETIC_TRAIN) + generate(*SYNTHETIC_SHIFT_TRAIN, kinds=["icu_shift"]))
    meddocan = load_gold(DATA / "meddocan_train.jsonl", load_label_map("meddocan"))
    return [Corpus("physionet_design", design_gold(), True, weight), Corpus("synthetic", synthetic, False),
            Corpus("meddocan_train", meddocan, False)]


def shipped_ner(gold: Sequence[Any], threshold: float, name: str, quantize: bool | None = None,
                ) -> dict[str, list[dict[str, Any]]]:
    """The shipped NER model's spans on ``gold`` (note id -> spans), cached in .gpu/ner_cache by the model's hash,
    the threshold and the numeric path (git-ignored; remade in a minute or two). ``quantize`` off: float32, the
    cpu-fp32 profile's path (default: off under ``--fp32``). Notes the cache lacks are added to it, so two sets of
    one name (the training corpus "synthetic" and the eval set "synthetic") share the file instead of each
    rebuilding it over the other's."""
    if quantize is None:
        quantize = not OVERRIDE["fp32"]
    from processors.ner.step import DEFAULT_MODEL_DIR, ROUTE_MODEL_DIRS, model_id

    model_dir = OVERRIDE["ner_model"] or DEFAULT_MODEL_DIR
    def key(folder: Path) -> str:  # the weights' sha256 (12 hex) and the model's edge threshold, if any
        edge = ner_edge(folder)
        return model_id(folder).rsplit("-", 1)[1] + ("" if edge is None else f"e{edge}")

    digest = key(Path(model_dir)) + "".join(f"+{k}-{key(ROUTE_MODEL_DIRS[k])}" for k in OVERRIDE["routes"])
    path = REPO / ".gpu/ner_cache" / f"{name}-{digest}-{threshold}{'' if quantize else '-fp32'}.jsonl.gz"
    cached: dict[str, list[dict[str, Any]]] = {}
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            cached = {r["id"]: r["spans"] for r in map(json.loads, fh)}
    missing = [g for g in gold if g.id not in cached]
    if missing:
        cached.update(ner_spans([(g.id, g.to_note_in()) for g in missing],
                                {**ner_options(threshold), "quantize": quantize}, routes=OVERRIDE["routes"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for k, v in cached.items():
                fh.write(json.dumps({"id": k, "spans": v}) + "\n")
    return {g.id: cached[g.id] for g in gold}


def ner_spans(notes: Sequence[tuple[str, Any]], options: Mapping[str, Any], batch: int = 64,
              routes: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """The NER step's spans (``options``: the step's; ``routes``: the languages routed to their own models) on
    ``notes`` (id, NoteIn), in batches of ``batch`` notes: id -> spans as dicts. Shared by the CPU cache above and the
    GPU run (``scripts/gpu_spans.py``)."""
    from processors.pipeline import BuildContext, Note, SharedPolicy, build_processor

    ner = build_processor("ner", dict(options), BuildContext(policy=SharedPolicy(language_routes=tuple(routes))))
    out: dict[str, list[dict[str, Any]]] = {}
    for i in range(0, len(notes), batch):
        chunk = notes[i:i + batch]
        for (key, _), n in zip(chunk, ner.process_batch([Note(input=note) for _, note in chunk]), strict=True):
            out[key] = [_span_dict(s) for s in n.spans]
    return out


def read_gpu_file(path: Path, threshold: float) -> dict[str, dict[str, dict[str, list[dict[str, Any]]]]]:
    """The GPU run's file (``scripts/gpu_spans.py``): dtype -> set -> note id -> spans of the shipped NER at
    ``threshold``. Refuses a file of another model or threshold."""
    from processors.ner.step import DEFAULT_MODEL_DIR, model_id

    out: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        header = json.loads(next(fh))
        if header.get("model_id") != model_id(DEFAULT_MODEL_DIR) or float(header.get("threshold", -1)) != threshold:
            raise SystemExit(f"{path}: spans of another NER model or threshold (file: {header.get('threshold')}, "
                             f"asked: {threshold}); run scripts/gpu_spans.py on a GPU again")
        for r in map(json.loads, fh):
            out.setdefault(r["dtype"], {}).setdefault(r["set"], {})[r["id"]] = r["spans"]
    return out


def gpu_dtype(gpu: Mapping[str, Any], dtype: str, path: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The spans in ``dtype`` of the GPU run's file ``path`` (``gpu``: :func:`read_gpu_file`): set -> note id ->
    spans."""
    if dtype not in gpu:
        raise SystemExit(f"{path}: no spans in {dtype}")
    return dict(gpu[dtype])


def span_agreement(golds: Mapping[str, Sequence[Any]], gpu: Mapping[str, Any], threshold: float, path: Path,
                   ) -> dict[str, dict[str, int]]:
    """How many of the NER's spans (start, end, label) two numeric paths share, over every eval set: the GPU run's
    float16 and float32 (``gpu``: :func:`read_gpu_file`) against the CPU's float32 and int8 (counts only)."""
    paths = {"gpu-fp16": gpu_dtype(gpu, "float16", path), "gpu-fp32": gpu_dtype(gpu, "float32", path),
             "cpu-fp32": {k: shipped_ner(g, threshold, k, False) for k, g in golds.items()},
             "cpu-int8": {k: shipped_ner(g, threshold, k, True) for k, g in golds.items()}}

    def spans(path: str, name: str, note_id: str) -> set[tuple[int, int, str]]:
        return {(x["start"], x["end"], x["label"]) for x in paths[path][name][note_id]}

    out: dict[str, dict[str, int]] = {}
    for a, b in (("gpu-fp16", "gpu-fp32"), ("gpu-fp16", "cpu-fp32"), ("gpu-fp32", "cpu-fp32"),
                 ("gpu-fp16", "cpu-int8"), ("cpu-fp32", "cpu-int8")):
        row = {"identical": 0, a: 0, b: 0}
        for name, gold in golds.items():
            for g in gold:
                x, y = spans(a, name, g.id), spans(b, name, g.id)
                row["identical"] += len(x & y)
                row[a] += len(x)
                row[b] += len(y)
        out[f"{a} vs {b}"] = row
    return out


def ner_edge(model_dir: Path | str | None = None) -> float | None:
    """The NER model's ``edge_threshold`` (``processors.ner.step.split_edges``; default: ``--ner-model`` or the
    shipped model), or None."""
    from processors.ner.step import DEFAULT_MODEL_DIR, edge_threshold

    return edge_threshold(Path(model_dir or OVERRIDE["ner_model"] or DEFAULT_MODEL_DIR))


def policy_routes(arg: str | None, experiment: bool) -> tuple[str, ...]:
    """The languages routed to their own models: ``--routes`` (comma-separated, '' for none), else none for an
    experiment (another decision model or NER serves every note), else the pipeline policy's."""
    from processors.pipeline import SharedPolicy

    names = arg if arg is not None else "" if experiment else ",".join(SharedPolicy().language_routes)
    return tuple(x for x in names.split(",") if x)


def edge_split(rows: Mapping[str, Mapping[str, list[dict[str, Any]]]], threshold: float, edge: float | None,
               texts: Mapping[str, str], header: Mapping[str, Any], name: str) -> dict[str, list[dict[str, Any]]]:
    """Out-of-fold spans at ``threshold`` as the NER step puts them out for a model with ``edge`` (its spans at both
    thresholds, ``edge_candidates``): note id -> spans, for the ids of ``texts``."""
    from processors.ner.step import edge_candidates
    from schemas.models import Span

    if edge is None:
        return {i: rows[i][str(threshold)] for i in texts}
    if str(edge) not in {str(t) for t in header["thresholds"]}:
        raise SystemExit(f"{name}: no spans at the NER model's edge threshold {edge} (has {header['thresholds']})")
    return {i: [_span_dict(x) for x in edge_candidates(
        text, [Span(**d) for d in rows[i][str(threshold)]], [Span(**d) for d in rows[i][str(edge)]],
        bool(header.get("function_words_dropped", True)))] for i, text in texts.items()}


def stored_for(corpora: Sequence[Any], threshold: float) -> dict[str, list[dict[str, Any]]]:
    """NER spans for every training note: out of fold for the PhysioNet design notes, the shipped model's (or
    ``--ner-model``'s) else, but out of fold too for a corpus that an ``--other-oof`` file covers (one the NER was
    trained on, e.g. MEDDOCAN train with ``ner_cv.py train --meddocan-repeats``: the all-notes model's spans on its
    own training notes would teach the decision model an overconfident NER). Out-of-fold spans are split at the NER
    model's edge threshold where it names one (``edge_split``), as the NER step splits its own."""
    edge = ner_edge()
    if edge is None:
        stored = stored_at(threshold)
    else:  # the file read once: the spans at the candidate threshold, then split at the edge threshold
        header, rows = oof = read_oof()
        stored = stored_at(threshold, oof)
        design = {g.id: g.text for c in corpora if c.name.startswith("physionet") for g in c.gold if g.id in rows}
        stored.update(edge_split(rows, threshold, edge, design, header, "the design notes' out-of-fold file"))
    others = [read_oof(Path(f)) for f in OVERRIDE["other_oof"]]
    used = [False] * len(others)
    for c in corpora:
        if c.name.startswith("physionet"):
            continue
        ids = {g.id for g in c.gold}
        cover = [k for k, (_, rows) in enumerate(others) if ids <= set(rows)]
        if not cover:
            stored.update(shipped_ner(c.gold, threshold, c.name))
            continue
        header, rows = others[cover[0]]
        if str(threshold) not in {str(t) for t in header["thresholds"]}:
            raise SystemExit(f"{OVERRIDE['other_oof'][cover[0]]}: no spans at NER threshold {threshold}")
        stored.update(edge_split(rows, threshold, edge, {g.id: g.text for g in c.gold}, header,
                                 OVERRIDE["other_oof"][cover[0]]))
        used[cover[0]] = True
    unused = [str(f) for f, u in zip(OVERRIDE["other_oof"], used, strict=True) if not u]
    if unused:
        raise SystemExit(f"--other-oof {', '.join(unused)}: covers no training corpus's notes")
    return stored


def _rel(path: Path) -> Path:
    path = path.resolve()
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def train(args: argparse.Namespace) -> int:
    from processors.decide.model import DEFAULT_MODEL, NO_NER_MODEL
    from processors.spans import NER_CANDIDATE_THRESHOLD
    from processors.training.decider import train_decider

    threshold = args.ner_threshold if args.ner_threshold is not None else NER_CANDIDATE_THRESHOLD
    corpora = [c for c in training_corpora(args.weight) if c.name in args.corpora.split(",")]
    stored = stored_for(corpora, threshold) if args.which != "no_ner" else None
    report: dict[str, Any] = {"ner_threshold": threshold, "fp32": OVERRIDE["fp32"]}
    oof_path = Path(OVERRIDE["oof"] or (OOF_FP32 if OVERRIDE["fp32"] else OOF)).resolve()
    for name, out, steps in (("with_ner", Path(args.out or DEFAULT_MODEL), ("regex", "ner", "dictionary", "recovery")),
                             ("no_ner", Path(args.out_no_ner or NO_NER_MODEL), ("regex", "dictionary", "recovery"))):
        if args.which and name != args.which:
            continue
        t0 = time.perf_counter()
        edge = ner_edge() if "ner" in steps else None
        meta = {"model_id": f"{args.model_id or 'decider-' + name.replace('_', '-')}-{time.strftime('%Y%m%d')}",
                "command": " ".join(["scripts/decider_cv.py", *sys.argv[1:]]),
                "data": [{"name": c.name, "notes": len(c.gold), "chooses_threshold": c.choose} for c in corpora],
                "ner_threshold": threshold if "ner" in steps else None,
                "ner_spans": f"{_rel(oof_path)} (out-of-fold) for the PhysioNet design notes; "
                             + "".join(f"{_rel(Path(p))} (out-of-fold) for its notes; " for p in OVERRIDE["other_oof"])
                             + (f"{_rel(Path(OVERRIDE['ner_model']))} for the others" if OVERRIDE["ner_model"]
                                else "the shipped model for the others")
                             + (" (NER unquantized: float32)" if OVERRIDE["fp32"] else "")
                             + ("" if edge is None else f"; each split at the NER model's edge threshold {edge}")}
        rep = train_decider(corpora, out, stored_ner=stored, steps=steps, options={"ner": ner_options(threshold)},
                            target_recall=args.target_recall, rounds=args.rounds, meta=meta,
                            params=json.loads(args.params) if args.params else None)
        rep["seconds"] = round(time.perf_counter() - t0, 1)
        report[name] = rep
        print(json.dumps({name: [{c["name"]: {"nested": c["nested"], "oof": c["out_of_fold"]}}
                                 for c in rep["corpora"]]}, indent=1), flush=True)
    Path(args.report).write_text(json.dumps(report, indent=2) + "\n")
    return 0


# -- measuring ---------------------------------------------------------------------------------------------


def run(gold: Sequence[Any], steps: Sequence[str], options: Mapping[str, Any],
        stored_ner: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Spans per note id after the pipeline ``steps`` (NER spans from ``stored_ner`` where given)."""
    from processors.training.decider import run_steps

    notes = run_steps(gold, steps, options=options, stored_ner=stored_ner, language_routes=OVERRIDE["routes"])
    return {g.id: (n.spans if n.error is None else ()) for g, n in zip(gold, notes, strict=True)}


def aggregate(gold: Sequence[Any], preds: Mapping[str, Any]) -> dict[str, Any]:
    """Aggregates only (the lockbox's rule): token P / R / F1, tp / fp / fn, per-label recall and precision."""
    from processors.evaluation.scoring import evaluate

    r = evaluate(gold, preds).to_dict()
    out = {k: (round(r[k], 4) if isinstance(r[k], float) else r[k]) for k in
           ("notes", "precision", "recall", "f1", "entity_recall", "tp", "fp", "fn")}
    out["content_changed"] = {k: r["content_changed"][k] for k in ("number_tokens", "numbers_changed", "word_tokens",
                                                                     "words_changed")}
    out["per_label"] = {lab: {"gold_tokens": c["gold_tokens"], "recall": c["recall"] and round(c["recall"], 4),
                              "pred_tokens": c["pred_tokens"], "precision": c["precision"] and round(c["precision"], 4)}
                        for lab, c in r["per_label"].items()}
    return out


def eval_golds() -> dict[str, list[Any]]:
    """The sets every figure is reported on (none trained on): name -> gold."""
    from processors.evaluation.gold import gold_from_records, load_gold, load_label_map
    from processors.evaluation.lockbox import split
    from processors.synthetic.generator import generate

    med_design, med_box = split(load_gold(DATA / "meddocan_dev.jsonl", load_label_map("meddocan")))
    return {"physionet_lockbox": lockbox_gold(),
            "synthetic": gold_from_records(generate(*SYNTHETIC_EVAL)),
            "presidio_synth_v2": load_gold(DATA / "presidio_synth_v2.jsonl", load_label_map("presidio")),
            "meddocan_dev_design": med_design, "meddocan_dev_lockbox": med_box}


def eval_sets(threshold: float, quantize: bool | None = None, *, golds: Mapping[str, list[Any]] | None = None,
              gpu: Mapping[str, Mapping[str, Any]] | None = None,
              ) -> dict[str, tuple[list[Any], dict[str, list[dict[str, Any]]]]]:
    """:func:`eval_golds` (or ``golds``) with the shipped NER's spans: name -> (gold, spans); ``quantize`` off: on the
    CPU's float32 path; ``gpu``: the GPU run's spans of one dtype instead (set -> note id -> spans)."""
    golds = golds if golds is not None else eval_golds()
    if gpu is not None:
        missing = [k for k, g in golds.items() if any(x.id not in gpu.get(k, {}) for x in g)]
        if missing:
            raise SystemExit(f"the GPU run's file: notes of {missing} have no spans; pack and run again")
        return {k: (g, dict(gpu[k])) for k, g in golds.items()}
    return {k: (g, shipped_ner(g, threshold, k, quantize)) for k, g in golds.items()}


DETECT = ("regex", "ner", "dictionary", "recovery")
FULL = (*DETECT, "decide", "ensemble")
NO_NER = ("regex", "dictionary", "recovery", "decide", "ensemble")


def risk_auroc(gold: Sequence[Any], stored: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """AUROC of the residual-risk score for notes with a missed identifier (an entity not wholly removed), the
    default pipeline with metrics: an aggregate (notes, notes with a miss, AUROC)."""
    from sklearn.metrics import roc_auc_score

    from processors.evaluation.scoring import evaluate
    from processors.training.decider import run_steps

    notes = run_steps(gold, (*FULL, "transform", "leakcheck", "metrics"), options=options, stored_ner=stored,
                      language_routes=OVERRIDE["routes"])
    result = evaluate(gold, {g.id: n.spans for g, n in zip(gold, notes, strict=True)})
    missed = [c.entities - c.entities_found > 0 for c in result.per_note]
    score = [n.metrics.risk.score for n in notes]
    auc = roc_auc_score(missed, score) if 0 < sum(missed) < len(missed) else None
    return {"notes": len(gold), "notes_with_a_miss": sum(missed), "auroc": auc and round(float(auc), 4)}


def risk_cv(args: argparse.Namespace) -> int:
    """The default pipeline on the design notes as it runs, cross-validated: for each of the five folds of design
    patients a decision model trained (``train_decider``, the shipped configuration: its own nested threshold and
    calibration) without them, then the pipeline with that model and the out-of-fold NER spans over the fold's notes.
    Pooled over the folds: token P / R and the residual-risk AUROC for notes with a missed identifier, the issue's
    figure, with ~10x the lockbox's notes with a miss (2 of its 174)."""
    import tempfile

    from sklearn.metrics import roc_auc_score

    from processors.evaluation.folds import group_folds
    from processors.evaluation.scoring import evaluate
    from processors.spans import NER_CANDIDATE_THRESHOLD
    from processors.training.decider import Corpus, run_steps, train_decider

    threshold = NER_CANDIDATE_THRESHOLD
    corpora = training_corpora(20.0)
    design = corpora[0].gold
    stored = stored_for(corpora, threshold)
    options: dict[str, Any] = {"ner": ner_options(threshold)}
    t0 = time.perf_counter()
    missed: list[bool] = []
    scores: list[float] = []
    preds: dict[str, Any] = {}
    folds = []
    for f, idx in enumerate(group_folds(design, K, 0)):
        held = {design[i].id for i in idx}
        train_gold = [g for g in design if g.id not in held]
        fold_gold = [g for g in design if g.id in held]
        with tempfile.TemporaryDirectory() as tmp:
            rep = train_decider([Corpus("physionet_design", train_gold, True, 20.0), *corpora[1:]], Path(tmp),
                                stored_ner=stored, options=options, params={"seed": args.seed})
            notes = run_steps(fold_gold, (*FULL, "transform", "leakcheck", "metrics"),
                              options={**options, "decide": {"model_dir": tmp}}, stored_ner=stored,
                              language_routes=OVERRIDE["routes"])
        fold_preds = {g.id: (n.spans if n.error is None else ()) for g, n in zip(fold_gold, notes, strict=True)}
        preds.update(fold_preds)
        result = evaluate(fold_gold, fold_preds)
        miss = [c.entities - c.entities_found > 0 for c in result.per_note]
        missed += miss
        scores += [n.metrics.risk.score for n in notes]
        folds.append({"fold": f, "notes": len(fold_gold), "notes_with_a_miss": sum(miss),
                      "threshold_raw": rep["threshold_raw"],
                      **{k: v for k, v in aggregate(fold_gold, fold_preds).items() if k in ("precision", "recall",
                                                                                          "tp", "fp", "fn")}})
        print(json.dumps(folds[-1]), flush=True)
    pooled = aggregate(design, preds)
    auc = roc_auc_score(missed, scores) if 0 < sum(missed) < len(missed) else None
    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(["scripts/decider_cv.py", *sys.argv[1:]]),
           "ner_threshold": threshold, "seed": args.seed, "seconds": round(time.perf_counter() - t0),
           "pooled": {**{k: pooled[k] for k in ("notes", "precision", "recall", "tp", "fp", "fn")},
                      "per_label": pooled["per_label"]},
           "residual_risk": {"notes": len(missed), "notes_with_a_miss": sum(missed),
                             "auroc": auc and round(float(auc), 4)},
           "folds": folds}
    print(json.dumps({k: out[k] for k in ("pooled", "residual_risk")}), flush=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def measure(args: argparse.Namespace) -> int:
    from processors.spans import NER_CANDIDATE_THRESHOLD

    threshold = args.ner_threshold if args.ner_threshold is not None else NER_CANDIDATE_THRESHOLD
    options: dict[str, Any] = {"ner": ner_options(threshold)}
    if args.decider:
        options["decide"] = {"model_dir": str(args.decider)}
    # the shipped pipeline routes the policy's languages to their own models; an experiment's decision model (or
    # another NER's spans) serves every note unless --routes names some
    OVERRIDE["routes"] = policy_routes(args.routes, bool(args.decider or OVERRIDE["ner_model"] or OVERRIDE["oof"]))
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "ner_threshold": threshold, "sets": {},
                           "decider": str(args.decider) if args.decider else "shipped",
                           "language_routes": list(OVERRIDE["routes"])}
    cv = json.loads((Path(args.cv_report) if args.cv_report else RESULTS / "decider_cv.json").read_text())
    out["design_cv"] = {name: next(c for c in cv[name]["corpora"] if c["name"] == "physionet_design")
                        for name in ("with_ner", "no_ner") if name in cv}
    golds = eval_golds()
    gpu16 = None
    if args.gpu_spans:
        gpu = read_gpu_file(args.gpu_spans, threshold)
        gpu16 = gpu_dtype(gpu, "float16", args.gpu_spans)
        out["numeric_path"] = "gpu float16 (profile gpu-fp16): the NER spans of the GPU run, scripts/gpu_spans.py"
        out["gpu_spans"] = str(args.gpu_spans)
        out["span_agreement"] = span_agreement(golds, gpu, threshold, args.gpu_spans)
        print(json.dumps({"span_agreement": out["span_agreement"]}), flush=True)
    for name, (gold, stored) in eval_sets(threshold, golds=golds, gpu=gpu16).items():
        t0 = time.perf_counter()
        row: dict[str, Any] = {
            "candidates": aggregate(gold, run(gold, DETECT, options, stored)),
            "default": aggregate(gold, run(gold, FULL, options, stored)),
            # the shipped no-NER model (an experiment's --decider is a with-NER model)
            "no_ner": aggregate(gold, run(gold, NO_NER, {k: v for k, v in options.items() if k != "decide"}, stored)),
        }
        if name.startswith("physionet"):
            decide = options.get("decide", {})
            row["weekdays_kept"] = aggregate(gold, run(gold, FULL, {**options, "decide": {**decide, "weekdays": False}},
                                                       stored))
            row["states_countries_kept"] = aggregate(gold, run(gold, FULL, {**options, "decide": {
                **decide, "states_countries": False}}, stored))
            row["institution_type_words_cut"] = aggregate(
                gold, run(gold, FULL, {**options, "recovery": {"institution_type_words": False}}, stored))
            row["residual_risk"] = risk_auroc(gold, stored, options)
        # the three policies together the PhysioNet annotators' way (weekdays and states kept, the type word after
        # an institution's name cut): what the conventions cost each set, not a configuration that was fitted
        row["corpus_convention"] = aggregate(gold, run(gold, FULL, {
            **options, "decide": {**options.get("decide", {}), "weekdays": False, "states_countries": False},
            "recovery": {"institution_type_words": False}}, stored))
        row["seconds"] = round(time.perf_counter() - t0, 1)
        out["sets"][name] = row
        print(json.dumps({name: {k: (v["precision"], v["recall"], v["fp"], v["fn"]) for k, v in row.items()
                                 if isinstance(v, dict) and "precision" in v}}), flush=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def profile(args: argparse.Namespace) -> int:
    """A detector profile's decision threshold (issue 26): the profile's out-of-fold NER spans of the design notes
    (``oof --fp32``) scored by fold models trained as the shipped one is, nested CV, recall first; with ``--measure``
    every set is scored on the profile's numeric path with today's threshold and with the fitted one (the lockbox in
    aggregate only)."""
    from processors.decide.model import DEFAULT_MODEL, load
    from processors.spans import NER_CANDIDATE_THRESHOLD
    from processors.training.decider import profile_threshold

    threshold = args.ner_threshold if args.ner_threshold is not None else NER_CANDIDATE_THRESHOLD
    corpora = training_corpora(args.weight)
    stored = stored_for(corpora, threshold)
    header, rows = read_oof(Path(args.profile_oof))
    if str(threshold) not in {str(t) for t in header["thresholds"]}:
        raise SystemExit(f"{args.profile_oof} has no spans at NER threshold {threshold} (has {header['thresholds']})")
    shipped = load(DEFAULT_MODEL)
    t0 = time.perf_counter()
    rep = profile_threshold(corpora, {i: r[str(threshold)] for i, r in rows.items()}, shipped.calibration,
                            stored_ner=stored, options={"ner": ner_options(threshold)},
                            target_recall=args.target_recall)
    rep["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps({"design_cv": {k: rep[k] for k in ("decide_threshold", "nested", "out_of_fold")}}), flush=True)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "profile": args.name, "ner_threshold": threshold,
                           "profile_oof": args.profile_oof,
                           "oof_numeric_path": header.get("numeric_path"), "decider": shipped.model_id,
                           "decider_threshold": shipped.threshold, "design_cv": rep, "sets": {}}
    if args.measure:
        options: dict[str, Any] = {"ner": {**ner_options(threshold), "quantize": False}}
        fitted = {**options, "decide": {"threshold": rep["decide_threshold"]}}
        for name, (gold, spans) in eval_sets(threshold, quantize=False).items():
            row = {"candidates": aggregate(gold, run(gold, DETECT, options, spans)),
                   "today_threshold": aggregate(gold, run(gold, FULL, options, spans)),
                   "fitted_threshold": aggregate(gold, run(gold, FULL, fitted, spans))}
            out["sets"][name] = row
            print(json.dumps({name: {k: (v["precision"], v["recall"], v["fp"], v["fn"]) for k, v in row.items()}}),
                  flush=True)
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0


#: the hard rules that remain (recovery's options), each switched off in turn by ``ablate``
HARD_RULES = ("use_terms", "use_syntax", "use_name_edges", "use_ward_numbers", "use_date_edges", "use_phone_edges",
              "use_place_edges", "use_line_breaks", "use_field_labels", "use_lone_particles",
              "use_person_nouns")


def score_stats(gold: Sequence[Any], stored: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """The NER's scores on its spans that overlap a gold identifier and on the others: count, mean, quantiles and the
    share at or above 0.5 (aggregates only: usable on the lockbox)."""
    import numpy as np

    found: dict[str, list[float]] = {"identifier": [], "other": []}
    for g in gold:
        gs = [(x.start, x.end) for x in g.spans]
        for s in stored.get(g.id, ()):
            hit = any(a < s["end"] and s["start"] < b for a, b in gs)
            found["identifier" if hit else "other"].append(float(s["score"]))
    out: dict[str, Any] = {}
    for key, xs in found.items():
        a = np.asarray(xs)
        out[key] = {"spans": len(xs)} if not xs else {
            "spans": len(xs), "mean": round(float(a.mean()), 4),
            **{f"q{int(q * 100)}": round(float(np.quantile(a, q)), 4) for q in (0.1, 0.25, 0.5)},
            "share_at_0.5": round(float((a >= 0.5).mean()), 4)}
    return out


def _lite(a: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: a[k] for k in ("precision", "recall", "tp", "fp", "fn")},
            "recall_by_label": {lab: c["recall"] for lab, c in a["per_label"].items() if c["gold_tokens"]}}


def fold_ners(args: argparse.Namespace) -> int:
    """Does the decision stage meet the same NER on new text as in its training? It trains on the fold models' out-of-
    fold spans of the design notes, and runs behind the NER trained on all of them. Each fold model (``scripts/
    ner_cv.py train``'s packs) and the shipped model score the sets no model saw (the lockbox in aggregate) through
    the shipped decision model (or ``--decider``'s): the NER's score distributions on identifiers and on other spans,
    the candidates' and the default pipeline's precision and recall. Each fold model's spans on its own held-out
    design fold are compared with the kept out-of-fold file too (the packs reproduce it, or were trained otherwise).
    The output is written after each model, and a later run adds the models it lacks."""
    from ner_cv import unpack

    from processors.evaluation.folds import group_folds
    from processors.spans import NER_CANDIDATE_THRESHOLD as threshold

    golds = {k: v for k, v in eval_golds().items() if k in args.sets.split(",")}
    design = design_gold()
    folds = group_folds(design, K, 0)
    _, kept = read_oof(OOF)
    key = str(threshold)
    packs = Path(args.packs).resolve()
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "ner_threshold": threshold,
                           "packs": str(packs.relative_to(REPO) if packs.is_relative_to(REPO) else packs),
                           "variant": args.variant, "decider": str(args.decider) if args.decider else "shipped",
                           "models": {}}
    out["design_oof_kept"] = score_stats(design, {g.id: kept[g.id][key] for g in design})
    earlier = json.loads(Path(args.output).read_text()) if Path(args.output).is_file() else {}
    if earlier and not args.again:
        if any(earlier.get(x) != out[x] for x in ("ner_threshold", "variant", "decider")):
            raise SystemExit(f"{args.output}: scored with other settings (NER threshold, packs, decision model); "
                             "give another -o, or --again to replace it")
        # runs add up: the models an earlier run of the same settings scored stay, with their sets
        out["models"] = {m: r for m, r in earlier.get("models", {}).items() if all(s in r for s in golds)}
    models: list[tuple[str, Path | None]] = [] if "shipped" in out["models"] else [("shipped", None)]
    for k in (int(x) for x in args.folds.split(",") if x and f"fold{x}" not in out["models"]):
        models.append((f"fold{k}", unpack(Path(args.packs) / f"{args.variant}fold{k}.tar",
                                          REPO / ".gpu/models" / f"{args.variant}fold{k}")))
    for name, model_dir in models:
        OVERRIDE["ner_model"] = model_dir
        row: dict[str, Any] = {}
        if model_dir is not None:
            k = int(name.removeprefix("fold"))
            held = [design[i] for i in folds[k]]
            fresh = shipped_ner(held, threshold, f"design-{name}")

            def spans(rows: Sequence[Mapping[str, Any]]) -> set[tuple[int, int, str, float]]:
                return {(s["start"], s["end"], s["label"], round(float(s["score"]), 5)) for s in rows}

            same = sum(len(spans(fresh[g.id]) & spans(kept[g.id][key])) for g in held)
            row["design_fold"] = {"notes": len(held), "spans": sum(len(fresh[g.id]) for g in held),
                                  "kept_spans": sum(len(kept[g.id][key]) for g in held), "identical_to_kept": same,
                                  "ner_scores": score_stats(held, fresh)}
        options: dict[str, Any] = {"ner": ner_options(threshold)}
        if args.decider:
            options["decide"] = {"model_dir": str(args.decider)}
        for set_name, gold in golds.items():
            stored = shipped_ner(gold, threshold, set_name)
            row[set_name] = {"ner_scores": score_stats(gold, stored),
                             "candidates": _lite(aggregate(gold, run(gold, DETECT, options, stored))),
                             "default": _lite(aggregate(gold, run(gold, FULL, options, stored)))}
        out["models"][name] = row
        Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
        print(json.dumps({name: {k: (v["default"]["precision"], v["default"]["recall"], v["default"]["fn"],
                                     v["ner_scores"]["identifier"].get("mean"))
                                 for k, v in row.items() if "default" in v}}), flush=True)
    OVERRIDE["ner_model"] = None
    return 0


def ablation_table(rows: Mapping[str, Any]) -> dict[str, Any]:
    """Per rule and set, the identifier tokens the rule loses and the false-positive tokens it removes: the run
    without the rule against ``rows["all_on"]`` (each run: set -> its fp and fn counts)."""
    base = rows["all_on"]
    return {rule: {name: {"identifier_tokens_lost": base[name]["fn"] - row[name]["fn"],
                          "false_positive_tokens_removed": row[name]["fp"] - base[name]["fp"]}
                   for name in base if isinstance(base[name], dict)}
            for rule, row in rows.items() if rule != "all_on"}


def mean_table(tables: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of several :func:`ablation_table` results (one per seed), cell by cell."""
    first = tables[0]
    return {rule: {name: {k: round(sum(t[rule][name][k] for t in tables) / len(tables), 2)
                          for k in ("identifier_tokens_lost", "false_positive_tokens_removed")}
                   for name in first[rule]}
            for rule in first}


def ablate(args: argparse.Namespace) -> int:
    """Each remaining hard rule off in turn, every set scored: the identifier tokens each rule loses and the
    false-positive tokens it removes (without the rule minus with it). By default the decision model is retrained
    without the rule (so design CV is nested; a retraining moves the threshold, which blurs single rules); with
    ``--direct`` the shipped model stays and only the rule is switched off (no design CV: the model saw those notes).
    ``--seeds 13,1,2,3`` retrains with each LightGBM seed and reports the means over them beside each seed's table
    (one seed's retraining moves nested design fn by 2-3 tokens: scripts/results/QUALITY_HISTORY.md, "How much of that is the seed")."""
    import tempfile

    from processors.spans import NER_CANDIDATE_THRESHOLD
    from processors.training.decider import train_decider

    threshold = args.ner_threshold if args.ner_threshold is not None else NER_CANDIDATE_THRESHOLD
    if args.direct:  # the shipped pipeline, routes and all (a retrained model, or another NER's, serves every note)
        OVERRIDE["routes"] = policy_routes(args.routes, bool(OVERRIDE["ner_model"] or OVERRIDE["oof"]))
    corpora = [] if args.direct else training_corpora()
    stored = {} if args.direct else stored_for(corpora, threshold)
    sets = eval_sets(threshold)
    rules = [r for r in args.rules.split(",") if r] if args.rules else list(HARD_RULES)
    seeds: list[int | None] = [int(x) for x in args.seeds.split(",")] if args.seeds and not args.direct else [None]
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            rows: dict[str, Any] = {}
            for rule in ["all_on", *rules]:
                t0 = time.perf_counter()
                recovery = {} if rule == "all_on" else {rule: False}
                options = {"ner": ner_options(threshold), "recovery": recovery}
                row: dict[str, Any] = {}
                if args.direct:  # the shipped decision model, the rule off at run time only
                    full: dict[str, Any] = options
                else:
                    model = Path(tmp) / f"{rule}-{seed}"
                    rep = train_decider(corpora, model, stored_ner=stored, steps=DETECT, options=options,
                                        target_recall=args.target_recall,
                                        params=None if seed is None else {"seed": seed})
                    for c in rep["corpora"]:  # nested CV of the threshold's notes and of MEDDOCAN train's rows
                        if c["name"] in ("physionet_design", "meddocan_train"):
                            row[f"{c['name']}_cv"] = {k: c["nested"][k] for k in ("precision", "recall", "tp", "fp",
                                                                                  "fn")}
                    full = {**options, "decide": {"model_dir": str(model)}}
                for name, (gold, ner) in sets.items():
                    agg = aggregate(gold, run(gold, FULL, full, ner))
                    row[name] = {k: agg[k] for k in ("precision", "recall", "tp", "fp", "fn")}
                row["seconds"] = round(time.perf_counter() - t0, 1)
                rows[rule] = row
                print(json.dumps({"seed": seed, rule: {k: (v["fp"], v["fn"]) for k, v in row.items()
                                                       if isinstance(v, dict)}}), flush=True)
            runs["shipped" if seed is None else f"seed_{seed}"] = rows

    tables = {key: ablation_table(rows) for key, rows in runs.items()}
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "ner_threshold": threshold,
        "language_routes": list(OVERRIDE["routes"]),
        "protocol": ("the shipped decision model; the rule off at run time" if args.direct else
                     "the decision model retrained without the rule (design CV nested)"
                     + (f", LightGBM seeds {args.seeds}" if args.seeds else ""))}
    if len(tables) == 1:
        (key, rows), = runs.items()
        out.update(runs=rows, ablation=tables[key])
    else:
        out.update(runs=runs, ablation_per_seed=tables, ablation=mean_table(list(tables.values())))
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def main() -> int:
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "WARNING"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("oof")
    o.add_argument("--packs", default=str(REPO / ".gpu/packs"))
    o.add_argument("--variant", default="d")
    o.add_argument("--thresholds", default="0.08,0.03")
    o.add_argument("--notes", default=None, help="the design notes in our labels (default: from ../shared)")
    o.add_argument("--out", default=None, help=f"default: {OOF.relative_to(REPO)}")
    o.add_argument("--jobs", type=int, default=1, help="folds run in parallel processes")
    o.add_argument("--no-filter", action="store_true", help="keep spans of function words only (then oof-filter)")
    path = o.add_mutually_exclusive_group()
    path.add_argument("--fp32", action="store_true", help="the fold models unquantized (the cpu-fp32 profile's path)")
    path.add_argument("--dtype", choices=("bfloat16",), default=None,
                   help="the fold models unquantized in this dtype (bfloat16: the matrix units of a CPU with AMX)")
    op = sub.add_parser("oof-probs", help="the design notes' word-piece label probabilities from the fold models")
    op.add_argument("--packs", default=str(REPO / ".gpu/packs"))
    op.add_argument("--variant", default="d")
    op.add_argument("--kept", default=str(OOF), help="out-of-fold spans to compare with (the counts go into the header)")
    op.add_argument("--out", default=None, help=f"default: {OOF_PROBS.relative_to(REPO)}")
    op.add_argument("--spans-out", default=None, help="also the spans decoded from the same probabilities (oof's format)")
    op.add_argument("--jobs", type=int, default=1, help="folds run in parallel processes")
    op.add_argument("--threads", type=int, default=2, help="torch threads per process")
    op.add_argument("--recipe", default="scripts/ner_cv.py train --steps 400 --lr 1e-4 --repeat 3 --variant d "
                    "--threads 2 (stage-2 base, seed 13), CPU int8 inference")
    f = sub.add_parser("oof-filter")
    f.add_argument("input")
    f.add_argument("out")
    o.add_argument("--threads", type=int, default=2, help="torch threads per process")
    o.add_argument("--folds", default=",".join(str(k) for k in range(K)),
                   help="only these folds' models (a probe: oof-score reads the file, the decision stage refuses it)")
    o.add_argument("--recipe", default="scripts/ner_cv.py train --steps 400 --lr 1e-4 --repeat 3 (stage-2 base), "
                   "CPU int8 inference", help="how the packs were trained (written into the header)")
    sc = sub.add_parser("oof-score", help="the NER alone on the design notes from out-of-fold files")
    sc.add_argument("files", nargs="+")
    sc.add_argument("--thresholds", default="0.08,0.03,0.005")
    sc.add_argument("--union", action="store_true", help="also the spans of all the files together")
    sc.add_argument("-o", "--output", default=None)
    om = sub.add_parser("oof-mean", help="a mean-score ensemble of several NERs' out-of-fold files")
    om.add_argument("files", nargs="+")
    om.add_argument("--threshold", type=float, default=0.005)
    om.add_argument("--out", required=True)
    t = sub.add_parser("train")
    t.add_argument("--ner-threshold", type=float, default=None)
    t.add_argument("--target-recall", type=float, default=0.975)
    t.add_argument("--out", default=None)
    t.add_argument("--out-no-ner", default=None)
    t.add_argument("--model-id", default=None, help="the model id's name before the date (default: decider-with-ner / "
                   "decider-no-ner; the Spanish route's: decider-es)")
    t.add_argument("--weight", type=float, default=20.0, help="weight of the PhysioNet design notes' rows")
    t.add_argument("--rounds", type=int, default=500)
    t.add_argument("--which", choices=["with_ner", "no_ner"], default=None, help="train only this model")
    t.add_argument("--corpora", default="physionet_design,synthetic,meddocan_train", help="training corpora")
    t.add_argument("--params", default=None, help="LightGBM settings over the defaults (JSON)")
    t.add_argument("--report", default=str(RESULTS / "decider_cv.json"))
    m = sub.add_parser("measure")
    m.add_argument("--ner-threshold", type=float, default=None)
    m.add_argument("-o", "--output", default=str(RESULTS / "decider_quality.json"))
    m.add_argument("--decider", type=Path, default=None, help="another decision model folder (an experiment)")
    m.add_argument("--routes", default=None, help="languages routed to their own models, comma-separated ('' for "
                   "none; default: the pipeline policy's, or none with --decider, --ner-model or --oof)")
    m.add_argument("--cv-report", default=None, help="its design-CV report (train --report; default: the shipped)")
    m.add_argument("--gpu-spans", type=Path, default=None,
                   help="score the gpu-fp16 profile: the NER spans of the GPU run (scripts/gpu_spans.py's file)")
    pr = sub.add_parser("profile")
    pr.add_argument("--profile-oof", required=True, help="the profile's out-of-fold spans (oof --fp32 --out ...)")
    pr.add_argument("--name", default="cpu-fp32")
    pr.add_argument("--ner-threshold", type=float, default=None)
    pr.add_argument("--target-recall", type=float, default=0.975)
    pr.add_argument("--weight", type=float, default=20.0)
    pr.add_argument("--measure", action="store_true", help="score every set on the profile's path (lockbox: aggregates)")
    pr.add_argument("-o", "--output", default=str(RESULTS / "profile_thresholds.json"))
    fn = sub.add_parser("fold-ners")
    fn.add_argument("--packs", default=str(REPO / ".gpu/packs"))
    fn.add_argument("--variant", default="d")
    fn.add_argument("--folds", default="0,1,2,3,4")
    fn.add_argument("--sets", default="physionet_lockbox,presidio_synth_v2,meddocan_dev_design,meddocan_dev_lockbox")
    fn.add_argument("-o", "--output", default=str(RESULTS / "ner_fold_models_new_text.json"))
    fn.add_argument("--decider", type=Path, default=None, help="another decision model folder (an experiment)")
    fn.add_argument("--again", action="store_true", help="score every model again (default: add to the output's)")
    rc = sub.add_parser("risk-cv", help="the default pipeline on the design notes, a decision model per fold")
    rc.add_argument("--seed", type=int, default=13, help="LightGBM seed (the shipped model's: 13)")
    rc.add_argument("-o", "--output", default=str(RESULTS / "decider_risk_cv.json"))
    a = sub.add_parser("ablate")
    a.add_argument("--ner-threshold", type=float, default=None)
    a.add_argument("--target-recall", type=float, default=0.975)
    a.add_argument("--rules", default=None, help="comma-separated recovery options (default: every hard rule)")
    a.add_argument("--direct", action="store_true", help="keep the shipped decision model (no retraining)")
    a.add_argument("--seeds", default=None, help="comma-separated LightGBM seeds to retrain with (means reported)")
    a.add_argument("-o", "--output", default=str(RESULTS / "decider_ablation.json"))
    a.add_argument("--routes", default=None, help="with --direct: languages routed to their own models, "
                   "comma-separated ('' for none; default: the pipeline policy's, as measure)")
    for p in (t, m, a):
        p.add_argument("--fp32", action="store_true",
                       help="the NER unquantized (the cpu-fp32 / gpu-fp16 path) and its out-of-fold spans")
        p.add_argument("--oof", type=Path, default=None, help="another NER's out-of-fold file (an experiment)")
        p.add_argument("--ner-model", type=Path, default=None, help="that NER's model on all design notes")
        p.add_argument("--other-oof", type=Path, action="append", default=[],
                       help="out-of-fold NER spans of another training corpus's notes (oof --notes FILE), for a NER "
                       "trained on that corpus too (repeatable)")
    args = ap.parse_args()
    OVERRIDE.update(oof=getattr(args, "oof", None), ner_model=getattr(args, "ner_model", None),
                    fp32=getattr(args, "fp32", False), other_oof=getattr(args, "other_oof", []))
    return {"oof": oof, "oof-filter": oof_filter, "train": train, "measure": measure, "ablate": ablate,
            "profile": profile, "fold-ners": fold_ners, "oof-score": oof_score, "oof-mean": oof_mean,
            "risk-cv": risk_cv, "oof-probs": oof_probs}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
