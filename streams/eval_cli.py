"""`deidstream eval`: score the pipeline (or a predictions file) against gold spans.

Token-level P/R/F1 (a token is PHI if any span overlaps it), entity-level recall (every token covered),
per label, with bootstrap confidence intervals over notes. Writes ``report.json`` into ``--report``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from processors.evaluation import EvalResult, bootstrap_ci, evaluate, load_gold, load_label_map

console = Console(stderr=True)


def predict(gold_notes: list[Any], *, config: Path | None, steps: str | None, batch_size: int,
            workers: int) -> tuple[dict[str, list[dict[str, Any]]], float]:
    """Run the pipeline's detection steps over the gold notes; spans by note id, and notes/s."""
    from streams.cli import load_settings, pipeline_config_for, run_notes, span_record

    settings = load_settings(config)
    cfg = pipeline_config_for(settings, detect_only=True, steps=steps)
    inputs = [g.to_note_in() for g in gold_notes]
    t0 = time.perf_counter()
    preds: dict[str, list[dict[str, Any]]] = {}
    for batch in run_notes(settings, cfg, inputs, batch_size=batch_size, workers=workers):
        for note in batch:
            preds[note.note_id] = [span_record(s) for s in note.spans]
    elapsed = time.perf_counter() - t0
    return preds, len(inputs) / elapsed if elapsed > 0 else 0.0


def read_predictions(path: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                out[str(rec.get("note_id", rec.get("id")))] = rec.get("spans", [])
    return out


def report_dict(result: EvalResult, *, gold: Path, n_boot: int, seed: int, extra: dict[str, Any]) -> dict[str, Any]:
    rep = result.to_dict()
    rep["gold"] = gold.name
    rep["bootstrap"] = {"resamples": n_boot, "seed": seed, "ci95": bootstrap_ci(result.per_note, n=n_boot, seed=seed)}
    rep.update(extra)
    return rep


def print_table(rep: dict[str, Any]) -> None:
    table = Table(title=f"{rep['gold']}: {rep['notes']} notes, {rep['tokens']} tokens")
    for col in ("label", "gold tokens", "recall", "precision", "F1", "entity recall"):
        table.add_column(col, justify="right" if col != "label" else "left")

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for label, c in rep["per_label"].items():
        table.add_row(label, str(c["gold_tokens"]), f(c["recall"]), f(c["precision"]), f(c["f1"]),
                      f(c["entity_recall"]))
    ci = rep["bootstrap"]["ci95"]
    table.add_row("ALL", str(rep["tp"] + rep["fn"]), f(rep["recall"]), f(rep["precision"]), f(rep["f1"]),
                  f(rep["entity_recall"]), style="bold")
    console.print(table)
    if ci.get("recall"):
        console.print(f"95% CI recall {ci['recall'][0]:.3f}-{ci['recall'][1]:.3f}, "
                      f"precision {ci['precision'][0]:.3f}-{ci['precision'][1]:.3f}", highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        gold: Annotated[Path, typer.Option("--gold", help="gold JSONL (shared eval format)")],
        report: Annotated[Path, typer.Option("--report", help="folder for report.json")],
        pred: Annotated[Path | None, typer.Option("--pred", help="predictions JSONL (detect output)")] = None,
        labels: Annotated[str | None, typer.Option("--labels", help="label map: presidio | meddocan | MAP.yaml")] = None,
        config: Annotated[Path | None, typer.Option("--config", help="YAML settings file")] = None,
        steps: Annotated[str | None, typer.Option("--steps", help="comma-separated detection steps")] = None,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="first N gold notes only")] = None,
        bootstrap: Annotated[int, typer.Option("--bootstrap", min=1, help="bootstrap resamples")] = 100,
        seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
        batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
        workers: Annotated[int, typer.Option("--workers", min=1)] = 1,
    ) -> None:
        """Token/entity precision-recall against gold, per label, with bootstrap CIs."""
        label_map = load_label_map(labels) if labels else None
        gold_notes = load_gold(gold, label_map)
        if limit is not None:
            gold_notes = gold_notes[:limit]
        extra: dict[str, Any] = {"labels": labels}
        if pred is not None:
            preds = read_predictions(pred)
            extra["predictions"] = pred.name
        else:
            preds, rate = predict(gold_notes, config=config, steps=steps, batch_size=batch_size, workers=workers)
            extra["notes_per_s"] = round(rate, 1)
        result = evaluate(gold_notes, preds)
        rep = report_dict(result, gold=gold, n_boot=bootstrap, seed=seed, extra=extra)
        report.mkdir(parents=True, exist_ok=True)
        (report / "report.json").write_text(json.dumps(rep, indent=2) + "\n")
        print_table(rep)
        console.print(f"wrote {report / 'report.json'}", highlight=False)
