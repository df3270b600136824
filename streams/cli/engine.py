"""Engine commands (the pipeline on files, no Kafka): detect, deid, synth, schemas export, dictionaries build."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas.errors import DeidError
from streams.cli._util import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_USAGE,
    BatchOpt,
    ConfigOpt,
    InputArg,
    ModeOpt,
    OutputOpt,
    StepsOpt,
    WorkersOpt,
    command_line,
    err,
    fail,
    load_settings,
    note_record,
    pipeline_config_for,
    provenance,
    run_notes,
    steady_rate,
    write_provenance,
)


def process_inputs(
    input_path: Path, output: Path, *, with_text: bool, mode: str | None, config: Path | None,
    steps: str | None, batch_size: int, workers: int,
) -> int:
    """``detect`` (``with_text`` False: spans only) or ``deid`` over the notes in ``input_path``; the exit
    code. Inputs that are no note and notes the pipeline failed on are reported by place and code."""
    from processors.pipeline import check_config
    from schemas.errors import ConfigError
    from schemas.models import NoteIn
    from schemas.readers import InputFailure, iter_inputs

    # what can fail without the pipeline fails first: exit 2, no model loaded, the output file untouched
    try:
        settings = load_settings(config, mode)
        cfg = pipeline_config_for(settings, detect_only=not with_text, steps=steps)
        check_config(cfg, settings.secret)
    except ConfigError as exc:
        err.print(f"[red]error[/] {exc}", markup=True, highlight=False)
        return EXIT_USAGE
    if not input_path.exists():
        err.print(f"[red]error[/] [E110] input not found: {input_path}", markup=True, highlight=False)
        return EXIT_USAGE
    items = list(iter_inputs(input_path))
    if not items:
        err.print(f"[red]error[/] [E111] no note in {input_path} (empty input); {output} not written",
                  markup=True, highlight=False)
        return EXIT_USAGE
    notes = [i for i in items if isinstance(i, NoteIn)]
    failures: list[InputFailure] = [i for i in items if isinstance(i, InputFailure)]
    for f in failures:
        err.print(f"[yellow]skipped[/] {f.where}: [{f.code}] {f.reason}", markup=True, highlight=False)
    output.parent.mkdir(parents=True, exist_ok=True)
    # written beside the output and renamed over it only when the run completes: a failed or interrupted run
    # leaves an existing output file as it was
    fd, part_name = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".part")
    part = Path(part_name)
    loads: list[dict[str, Any]] = []
    done_at: list[tuple[float, int]] = []
    started = time.monotonic()
    try:
        versions: list[dict[str, Any]] = []
        batches = run_notes(settings, cfg, notes, batch_size=batch_size, workers=workers, versions=versions,
                            command="deid" if with_text else "detect", stats=loads)
        failed_notes = 0
        with os.fdopen(fd, "w", encoding="utf-8") as out, Progress(
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
                done_at.append((time.monotonic(), len(batch)))
        _set_mode_like(part, output)
        os.replace(part, output)
        write_provenance(output, provenance(command_line(), cfg, versions[0] if versions else None))
    except DeidError as exc:
        err.print(f"[red]error[/] {exc}; {output} not written", markup=True, highlight=False)
        return EXIT_FAILED
    finally:
        part.unlink(missing_ok=True)
    report_speed(started, time.monotonic(), done_at, loads)
    total_failed = len(failures) + failed_notes
    err.print(f"{len(notes) - failed_notes} notes written to {output}; {total_failed} inputs failed",
              highlight=False)
    return EXIT_SOME_FAILED if total_failed else EXIT_OK


def _set_mode_like(part: Path, output: Path) -> None:
    """The permissions the output would have had: an existing output's, else the umask's for a new file
    (``mkstemp`` creates its file readable by its owner only)."""
    if output.exists():
        os.chmod(part, output.stat().st_mode & 0o7777)
        return
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(part, 0o666 & ~umask)


def report_speed(started: float, finished: float, done: list[tuple[float, int]], loads: list[dict[str, Any]]) -> None:
    """On stderr: each process's load time and threads, notes/s over the whole run and after the last process
    was ready (the steady rate, model loading left out). ``done``: (time, notes) of each batch as it came back."""
    for s in loads:
        err.print(f"process {s['pid']}: pipeline loaded in {s['load_s']:.1f} s ({s['threads']} threads)",
                  highlight=False)
    n = sum(k for _, k in done)
    total = finished - started
    line = f"{n} notes in {total:.1f} s ({n / total if total > 0 else 0:.1f} notes/s"
    rate = steady_rate(done, loads)
    if rate is not None:
        line += f"; {rate:.1f} notes/s after loading"
    err.print(line + ")", highlight=False)


def detect(
    input_path: InputArg, output: OutputOpt, config: ConfigOpt = None, steps: StepsOpt = None,
    batch_size: BatchOpt = 64, workers: WorkersOpt = 1,
) -> None:
    """Find identifiers: writes {"note_id", "spans": [...]} per note; offsets into the original text."""
    raise typer.Exit(process_inputs(input_path, output, with_text=False, mode=None, config=config, steps=steps,
                                    batch_size=batch_size, workers=workers))


def deid(
    input_path: InputArg, output: OutputOpt,
    mode: ModeOpt = None,
    config: ConfigOpt = None, steps: StepsOpt = None, batch_size: BatchOpt = 64, workers: WorkersOpt = 1,
) -> None:
    """De-identify: writes {"note_id", "spans", "text", "leak", ...} per note."""
    raise typer.Exit(process_inputs(input_path, output, with_text=True, mode=mode, config=config, steps=steps,
                                    batch_size=batch_size, workers=workers))


def synth(
    out: Annotated[Path, typer.Option("-o", "--output", help="output JSONL (shared eval format)")],
    n: Annotated[int, typer.Option("--n", min=1, help="number of notes")] = 500,
    seed: Annotated[int, typer.Option(help="random seed")] = 13,
    kinds: Annotated[str | None, typer.Option(help=(
        "comma-separated note kinds, of: icu_nursing, discharge, progress, radiology, referral, telephone, query, "
        "icu_shift (default: the mix of all but icu_shift)"))] = None,
) -> None:
    """Generate synthetic English clinical notes with exact gold spans."""
    from processors.synthetic.generator import generate, write_jsonl

    records = generate(n, seed, kinds=kinds.split(",") if kinds else None)
    write_jsonl(records, out)
    err.print(f"wrote {len(records)} notes to {out}", highlight=False)


def schemas_export(out_dir: Annotated[Path, typer.Argument(help="folder for the JSON Schemas")]) -> None:
    """Write the topic contracts as JSON Schemas."""
    from schemas.export import export_schemas

    for path in export_schemas(out_dir):
        err.print(f"wrote {path}", highlight=False)


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
        raise typer.Exit(EXIT_USAGE)
    try:
        path = build_institution_dictionary(out, providers=providers, clinics=clinics, abbreviations=abbreviations,
                                            locations=locations, staff=staff)
    except (DeidError, OSError, ValueError) as exc:
        raise fail(exc) from None
    manifest = json.loads((path / "manifest.json").read_text())
    err.print(f"wrote {path} (version {manifest.get('version')})", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the engine commands and the ``schemas`` / ``dictionaries`` groups to the ``deidstream`` app."""
    for fn in (detect, deid, synth):
        app.command(fn.__name__)(fn)
    schemas_app = typer.Typer(no_args_is_help=True, help="Topic contracts.")
    schemas_app.command("export")(schemas_export)
    app.add_typer(schemas_app, name="schemas")
    dict_app = typer.Typer(no_args_is_help=True, help="Institution dictionaries.")
    dict_app.command("build")(dictionaries_build)
    app.add_typer(dict_app, name="dictionaries")
