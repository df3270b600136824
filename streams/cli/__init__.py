"""The ``deidstream`` command line.

Engine commands (no Kafka): detect, deid, eval, synth, bench, schemas export, dictionaries build.
Kafka commands (worker, broker, produce, consume, demo, replay, compare, config show) are added by
``streams.cli.kafka.register``.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.errors import ConfigError, DeidError
from schemas.models import NoteIn, Span
from schemas.readers import InputFailure, iter_inputs
from streams.settings import Settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Streaming de-identification of clinical notes.")
schemas_app = typer.Typer(no_args_is_help=True, help="Topic contracts.")
dict_app = typer.Typer(no_args_is_help=True, help="Institution dictionaries.")
app.add_typer(schemas_app, name="schemas")
app.add_typer(dict_app, name="dictionaries")

err = Console(stderr=True)
logger = logging.getLogger("streams.cli")

#: Exit code when some inputs failed (each reported on stderr) but the run completed.
EXIT_SOME_FAILED = 3
#: Steps that write output; ``detect`` stops before them.
OUTPUT_STEPS = {"transform", "leakcheck", "metrics"}

Mode = Literal["tag", "surrogate", "dateshift"]


def span_record(span: Span) -> dict[str, Any]:
    return {
        "start": span.start, "end": span.end, "label": str(span.label), "subtype": span.subtype,
        "score": round(span.score, 4), "source": span.source,
    }


def note_record(note: Note, *, with_text: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {"note_id": note.note_id, "spans": [span_record(s) for s in note.spans]}
    if with_text:
        rec["text"] = note.output
        rec["leak"] = bool(note.leak)
        if note.metrics is not None:
            m = note.metrics
            rec["metrics"] = m.model_dump(mode="json") if hasattr(m, "model_dump") else m
    return rec


def load_settings(config: Path | None, mode: str | None = None) -> Settings:
    if config is not None:
        os.environ["DEID_CONFIG_FILE"] = str(config)
    settings = Settings()
    if mode is not None:
        settings = settings.model_copy(update={"transform": settings.transform.model_copy(update={"mode": mode})})
    return settings


def pipeline_config_for(settings: Settings, *, detect_only: bool, steps: str | None = None) -> PipelineConfig:
    cfg = settings.pipeline_config()
    chosen = tuple(s.strip() for s in steps.split(",") if s.strip()) if steps else cfg.steps
    if detect_only:
        chosen = tuple(s for s in chosen if s not in OUTPUT_STEPS)
    return cfg.model_copy(update={"steps": chosen})


def build_pipeline(settings: Settings, cfg: PipelineConfig) -> Pipeline:
    return Pipeline.from_config(cfg, secret=settings.secret, cache_dir=settings.cache_dir)


# -- worker processes: each builds the pipeline once -----------------------------------------------------

_WORKER_PIPELINE: Pipeline | None = None


def _init_worker(settings_json: str, cfg_json: str) -> None:
    global _WORKER_PIPELINE
    settings = Settings.model_validate_json(settings_json)
    _WORKER_PIPELINE = build_pipeline(settings, PipelineConfig.model_validate_json(cfg_json))


def _run_in_worker(batch: list[NoteIn]) -> list[Note]:
    assert _WORKER_PIPELINE is not None
    return _WORKER_PIPELINE.run(batch)


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def run_notes(
    settings: Settings, cfg: PipelineConfig, notes: Sequence[NoteIn], *, batch_size: int, workers: int
) -> Iterator[list[Note]]:
    """Yield processed batches in input order, in this process or in ``workers`` processes."""
    if workers <= 1:
        pipeline = build_pipeline(settings, cfg)
        for batch in batched(notes, batch_size):
            yield pipeline.run(batch)
        return
    ctx = mp.get_context("fork")
    secret_settings = settings.model_dump(mode="json")
    secret_settings["secret"] = settings.secret.get_secret_value()
    with ctx.Pool(workers, initializer=_init_worker,
                  initargs=(json.dumps(secret_settings), cfg.model_dump_json())) as pool:
        yield from pool.imap(_run_in_worker, batched(notes, batch_size))


def _process_command(
    input_path: Path, output: Path, *, with_text: bool, mode: str | None, config: Path | None,
    steps: str | None, batch_size: int, workers: int,
) -> int:
    settings = load_settings(config, mode)
    cfg = pipeline_config_for(settings, detect_only=not with_text, steps=steps)
    items = list(iter_inputs(input_path))
    notes = [i for i in items if isinstance(i, NoteIn)]
    failures: list[InputFailure] = [i for i in items if isinstance(i, InputFailure)]
    for f in failures:
        err.print(f"[yellow]skipped[/] {f.where}: [{f.code}] {f.reason}", markup=True, highlight=False)
    try:
        batches = run_notes(settings, cfg, notes, batch_size=batch_size, workers=workers)
        output.parent.mkdir(parents=True, exist_ok=True)
        failed_notes = 0
        with output.open("w", encoding="utf-8") as out, Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=False, disable=not notes,
        ) as progress:
            task = progress.add_task("detect" if not with_text else "deid", total=len(notes))
            done = 0
            for batch in batches:
                for note in batch:
                    done += 1
                    if note.error is not None:
                        failed_notes += 1
                        err.print(f"[yellow]failed[/] note #{done}: [{note.error.code}] {note.error.reason}",
                                  markup=True, highlight=False)
                        continue
                    out.write(json.dumps(note_record(note, with_text=with_text), ensure_ascii=False) + "\n")
                progress.advance(task, len(batch))
    except DeidError as exc:
        err.print(f"[red]error[/] {exc}", markup=True, highlight=False)
        return 1
    total_failed = len(failures) + failed_notes
    err.print(f"{len(notes) - failed_notes} notes written to {output}; {total_failed} inputs failed",
              highlight=False)
    return EXIT_SOME_FAILED if total_failed else 0


InputArg = Annotated[Path, typer.Argument(help="JSONL file (one note per line), .hl7 file, or a folder of them")]
OutputOpt = Annotated[Path, typer.Option("-o", "--output", help="output JSONL")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML settings file (same fields as DEID_*)")]
StepsOpt = Annotated[str | None, typer.Option("--steps", help="comma-separated processor steps (default: settings)")]
BatchOpt = Annotated[int, typer.Option("--batch-size", min=1, help="notes per pipeline call")]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="worker processes")]


@app.command()
def detect(
    input_path: InputArg, output: OutputOpt, config: ConfigOpt = None, steps: StepsOpt = None,
    batch_size: BatchOpt = 64, workers: WorkersOpt = 1,
) -> None:
    """Find identifiers: writes {"note_id", "spans": [...]} per note; offsets into the original text."""
    raise typer.Exit(_process_command(input_path, output, with_text=False, mode=None, config=config, steps=steps,
                                      batch_size=batch_size, workers=workers))


@app.command()
def deid(
    input_path: InputArg, output: OutputOpt,
    mode: Annotated[str | None, typer.Option("--mode", help="tag | surrogate | dateshift (default: settings)")] = None,
    config: ConfigOpt = None, steps: StepsOpt = None, batch_size: BatchOpt = 64, workers: WorkersOpt = 1,
) -> None:
    """De-identify: writes {"note_id", "spans", "text", "leak", ...} per note."""
    if mode is not None and mode not in ("tag", "surrogate", "dateshift"):
        err.print("[red]error[/] --mode must be tag, surrogate or dateshift", markup=True)
        raise typer.Exit(2)
    raise typer.Exit(_process_command(input_path, output, with_text=True, mode=mode, config=config, steps=steps,
                                      batch_size=batch_size, workers=workers))


@schemas_app.command("export")
def schemas_export(out_dir: Annotated[Path, typer.Argument(help="folder for the JSON Schemas")]) -> None:
    """Write the topic contracts as JSON Schemas."""
    from schemas.export import export_schemas

    for path in export_schemas(out_dir):
        err.print(f"wrote {path}", highlight=False)


@dict_app.command("build")
def dictionaries_build(
    out: Annotated[Path, typer.Option("--out", help="output folder of the institution dictionary")],
    providers: Annotated[Path | None, typer.Option(help="CSV of providers (name, or first_name,last_name)")] = None,
    clinics: Annotated[Path | None, typer.Option(help="CSV of clinics / departments (name)")] = None,
    abbreviations: Annotated[Path | None, typer.Option(help="CSV of institution abbreviations (name)")] = None,
    locations: Annotated[Path | None, typer.Option(help="CSV of sites / satellite locations (name)")] = None,
    staff: Annotated[Path | None, typer.Option(help="CSV of staff (name, or first_name,last_name)")] = None,
) -> None:
    """Build a hospital's own dictionary folder (manifest + lists, common words removed)."""
    from dictionaries.institution import build_institution_dictionary

    if not any((providers, clinics, abbreviations, locations, staff)):
        err.print("[red]error[/] give at least one list (--providers, --clinics, ...)", markup=True)
        raise typer.Exit(2)
    try:
        path = build_institution_dictionary(out, providers=providers, clinics=clinics, abbreviations=abbreviations,
                                            locations=locations, staff=staff)
    except (DeidError, OSError, ValueError) as exc:
        err.print(f"[red]error[/] {type(exc).__name__}: {exc}", markup=True, highlight=False)
        raise typer.Exit(1) from None
    manifest = json.loads((path / "manifest.json").read_text())
    err.print(f"wrote {path} (version {manifest.get('version')})", highlight=False)


@app.command()
def synth(
    out: Annotated[Path, typer.Option("-o", "--output", help="output JSONL (shared eval format)")],
    n: Annotated[int, typer.Option("--n", min=1, help="number of notes")] = 500,
    seed: Annotated[int, typer.Option(help="random seed")] = 13,
    kinds: Annotated[str | None, typer.Option(help="comma-separated note kinds")] = None,
) -> None:
    """Generate synthetic English clinical notes with exact gold spans."""
    from processors.synthetic.generator import generate, write_jsonl

    records = generate(n, seed, kinds=kinds.split(",") if kinds else None)
    write_jsonl(records, out)
    err.print(f"wrote {len(records)} notes to {out}", highlight=False)


@app.command()
def bench(
    n: Annotated[int, typer.Option("--n", min=10, help="number of notes")] = 2000,
    chars: Annotated[int, typer.Option(help="characters per note")] = 1000,
    steps: StepsOpt = None,
    workers: WorkersOpt = 1,
    batch_size: BatchOpt = 64,
    out: Annotated[Path | None, typer.Option("-o", "--output", help="write the result JSON here")] = None,
    config: ConfigOpt = None,
) -> None:
    """Throughput of the pipeline (no Kafka) on synthetic notes of a fixed length."""
    from streams.cli.bench import bench_pipeline

    settings = load_settings(config)
    cfg = pipeline_config_for(settings, detect_only=steps is None, steps=steps)
    result = bench_pipeline(settings, cfg, n=n, chars=chars, workers=workers, batch_size=batch_size)
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


@app.command()
def samples(
    hl7_dir: Annotated[Path | None, typer.Option("--hl7", help="folder of HL7 v2 messages")] = None,
    n_hl7: Annotated[int, typer.Option(help="HL7 messages to show")] = 6,
    n_synthetic: Annotated[int, typer.Option(help="synthetic notes to add")] = 4,
    mode: Annotated[str | None, typer.Option("--mode", help="tag | surrogate | dateshift")] = None,
    config: ConfigOpt = None,
) -> None:
    """De-identify sample HL7 messages and synthetic notes offline (no broker) and print them."""
    from rich.console import Console as _Console

    from streams.cli.samples import sample_notes, show

    settings = load_settings(config, mode)
    pipeline = build_pipeline(settings, pipeline_config_for(settings, detect_only=False))
    notes = pipeline.run(sample_notes(hl7_dir, n_hl7, n_synthetic))
    show(_Console(), notes)


def _register_optional() -> None:
    """Mount command groups that live in their own modules (Kafka, NER training, evaluation)."""
    import importlib

    for module in ("streams.cli.kafka", "streams.cli.train", "streams.cli.eval"):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            if exc.name != module:
                raise
            continue
        mod.register(app)


_register_optional()


def main() -> None:
    logging.basicConfig(level=os.environ.get("DEID_LOG_LEVEL", "WARNING"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app()
    except ConfigError as exc:
        err.print(f"[red]config error[/] {exc}", markup=True, highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
