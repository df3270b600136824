"""Helpers shared by the ``deidstream`` command modules (spaCy's ``cli/_util.py`` is the model).

The command modules (``engine``, ``kafka``, ``demo``, ``bench``, ``eval``, ``train``) import from here and
never from each other; this module imports no command module. What lives here:

- the one settings loader (:func:`load_settings`) and the pipeline helpers (:func:`pipeline_config_for`,
  :func:`build_pipeline`, :func:`run_notes` with its worker processes, :func:`batched`);
- the output records (:func:`span_record`, :func:`note_record`);
- the option types several commands share, the ``err`` console and the exit codes;
- what the Kafka demo and the Kafka benchmark both need: the worker subprocess (:func:`worker_env`,
  :func:`spawn_worker`, :func:`stop_process`) and :func:`percentile`.

``deidstream --help`` imports every command module, hence this one: heavy modules (the pipeline, the
settings and what they pull in) are imported inside the functions.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console

if TYPE_CHECKING:
    from pydantic import ValidationError

    from processors.pipeline import Note, Pipeline, PipelineConfig
    from schemas.models import NoteIn, Span
    from streams.settings import Settings

#: Diagnostics, progress and errors go to stderr; stdout carries results (JSON) only.
err = Console(stderr=True)
logger = logging.getLogger("streams.cli")

#: Exit codes of every command.
EXIT_OK = 0
#: The command failed (an error is printed on stderr).
EXIT_FAILED = 1
#: Wrong or missing arguments (typer uses 2 for its own usage errors too).
EXIT_USAGE = 2
#: Some inputs failed (each reported on stderr) but the run completed.
EXIT_SOME_FAILED = 3

#: Steps that write output (in pipeline order); ``detect`` stops before them, ``eval`` appends them.
OUTPUT_STEPS: tuple[str, ...] = ("transform", "leakcheck", "metrics")

#: The repository root (worker subprocesses run from here).
REPO = Path(__file__).resolve().parents[2]

# -- option types shared by several commands -------------------------------------------------------------

InputArg = Annotated[Path, typer.Argument(help="JSONL file (one note per line), .hl7 file, or a folder of them")]
OutputOpt = Annotated[Path, typer.Option("-o", "--output", help="output JSONL")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML settings file (same fields as DEID_*)")]
StepsOpt = Annotated[str | None, typer.Option("--steps", help="comma-separated processor steps (default: settings)")]
BatchOpt = Annotated[int, typer.Option("--batch-size", min=1, help="notes per pipeline call")]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="worker processes")]
ResultOpt = Annotated[Path | None, typer.Option("-o", "--output", help="write the result JSON here")]
#: The transform modes (``processors.transform.step.Mode``): help lists them, typer rejects others (exit 2).
ModeChoice = Literal["tag", "surrogate", "dateshift"]
ModeOpt = Annotated[ModeChoice | None, typer.Option("--mode", help="transform mode (default: settings)")]


def hide_flag_types() -> None:
    """No type label on flags in the help. Typer's rich help (0.2x) prints ``<bool>`` beside every flag, ``--help``
    included, since its option panel asks each option for its type; its plain help skips flags, which take no
    value. Flags (and counters) answer no type here, so both helps agree."""
    from typer.core import TyperOption

    show = getattr(TyperOption, "display_type_rich", None)
    if show is None or getattr(show, "_deid_flags_hidden", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        result: str | None = show(self, ctx)
        return result

    display_type_rich._deid_flags_hidden = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def fail(exc: BaseException) -> typer.Exit:
    """Print ``error <Type>: <message>`` on stderr (the type once where the message starts with it, as aiokafka's
    do); the Exit to raise. Only for coded (PHI-free) errors and errors of our own making: the message is printed."""
    text, kind = str(exc), type(exc).__name__
    err.print(f"[red]error[/] {text if text.startswith(kind) else f'{kind}: {text}'}", markup=True, highlight=False)
    return typer.Exit(EXIT_FAILED)


def write_result(result: dict[str, Any], out: Path | None) -> None:
    """A benchmark's result: JSON on stdout, and into ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


# -- settings and pipeline ---------------------------------------------------------------------------------


def load_settings(config: Path | None, mode: str | None = None) -> Settings:
    """The effective settings: ``DEID_*`` environment, ``config`` (a YAML file, also for worker
    subprocesses through ``DEID_CONFIG_FILE``), then ``mode`` over ``transform.mode`` when given."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from schemas.errors import ConfigError
    from streams.settings import Settings

    if config is not None:
        os.environ["DEID_CONFIG_FILE"] = str(config)
    where = f"{'the config file ' + str(config) + ' or ' if config else ''}DEID_* environment"
    try:
        settings = Settings()
    except ValidationError as exc:
        raise ConfigError(f"invalid settings ({where}): {settings_errors(exc)}") from None
    except SettingsError as exc:  # a value that is no JSON where a field wants it ("error parsing value for field
        # "pipeline" from source "EnvSettingsSource""): the field and the source, not the value
        raise ConfigError(f"invalid settings ({where}): {exc}") from None
    if mode is not None:
        settings = settings.model_copy(update={"transform": settings.transform.model_copy(update={"mode": mode})})
    return settings


def settings_errors(exc: ValidationError, limit: int = 5) -> str:
    """A settings validation error as field paths and pydantic's messages (``validation_summary``), never the values
    given: a settings value may be a secret."""
    from schemas.errors import validation_summary

    more = exc.error_count() - limit
    return validation_summary(exc, limit, messages=True) + (f"; and {more} more" if more > 0 else "")


def pipeline_config_for(settings: Settings, *, detect_only: bool, steps: str | None = None) -> PipelineConfig:
    cfg = settings.pipeline_config()
    chosen = tuple(s.strip() for s in steps.split(",") if s.strip()) if steps else cfg.steps
    if detect_only:
        chosen = tuple(s for s in chosen if s not in OUTPUT_STEPS)
    return cfg.model_copy(update={"steps": chosen})


def build_pipeline(settings: Settings, cfg: PipelineConfig) -> Pipeline:
    from processors.pipeline import Pipeline

    return Pipeline.from_config(cfg, secret=settings.secret, cache_dir=settings.cache_dir)


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


# -- worker processes: each pins its threads, then builds the pipeline once -------------------------------

_WORKER_PIPELINE: Pipeline | None = None
#: this worker's load report, handed back with its first batch (then None)
_WORKER_STATS: dict[str, Any] | None = None
#: what the initializer raised: re-raised by the first task (a Pool whose initializer raises restarts
#: its workers forever instead of failing)
_WORKER_ERROR: BaseException | None = None
#: set by the parent when it stops early: every task not yet started returns at once, so the pool can be
#: closed and joined instead of terminated (``Pool.terminate`` kills a worker that may hold the result
#: queue's lock mid-write, and the pool's task thread then waits on that lock forever)
_WORKER_ABORT: Any = None


def _init_worker(settings_json: str, cfg_json: str, threads: int, abort: Any = None) -> None:
    global _WORKER_PIPELINE, _WORKER_STATS, _WORKER_ERROR, _WORKER_ABORT
    from processors.runtime import pin_threads

    _WORKER_ABORT = abort
    pin_threads(threads)  # before torch is imported in this process: OpenMP/MKL read the environment once
    started = time.monotonic()
    try:
        from processors.pipeline import PipelineConfig
        from streams.settings import Settings

        settings = Settings.model_validate_json(settings_json)
        _WORKER_PIPELINE = build_pipeline(settings, PipelineConfig.model_validate_json(cfg_json))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent with the first task
        _WORKER_ERROR = exc
        return
    _WORKER_STATS = {"pid": os.getpid(), "threads": threads, "load_s": round(time.monotonic() - started, 3),
                     "ready_at": time.monotonic()}


def _run_in_worker(batch: list[NoteIn]) -> tuple[list[Note], dict[str, Any] | None]:
    global _WORKER_STATS
    if _WORKER_ABORT is not None and _WORKER_ABORT.is_set():
        return [], None  # the parent stopped reading: nobody will see this batch
    if _WORKER_ERROR is not None:
        raise _WORKER_ERROR
    assert _WORKER_PIPELINE is not None
    stats, _WORKER_STATS = _WORKER_STATS, None
    done = _WORKER_PIPELINE.run(batch)
    if stats is not None:  # the first batch loaded what loads at first use: out of the collector's walks from now on
        from processors.runtime import freeze_loaded

        freeze_loaded()
    return done, stats


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _worker_versions(_: object = None) -> dict[str, Any]:
    if _WORKER_ERROR is not None:
        raise _WORKER_ERROR
    assert _WORKER_PIPELINE is not None
    return _WORKER_PIPELINE.versions().model_dump(mode="json")


def _start_method() -> str:
    """``fork`` while this process has not imported torch (the children import it after pinning their
    threads, and initialise CUDA themselves); ``spawn`` once it has (a forked copy of torch's thread pools
    or of an initialised CUDA context is not safe)."""
    return "spawn" if "torch" in sys.modules else "fork"


def run_notes(
    settings: Settings, cfg: PipelineConfig, notes: Sequence[NoteIn], *, batch_size: int, workers: int,
    versions: list[dict[str, Any]] | None = None, command: str = "run", stats: list[dict[str, Any]] | None = None,
) -> Iterator[list[Note]]:
    """Yield processed batches in input order, in this process or in ``workers`` processes.

    Each worker process pins its numeric libraries to ``settings.worker.threads`` threads (0: the usable
    cores shared among the workers, see :mod:`processors.runtime`) before it imports torch, then builds the
    pipeline once; the workers load at the same time. Batches of ``batch_size`` notes are the units of
    work, handed out in order and returned in order, so the output equals one process's. ``stats``, when
    given, receives one dict per process: ``pid``, ``threads``, ``load_s`` (building the pipeline) and
    ``ready_at`` (``time.monotonic()`` when it was built). ``versions``: a list the pipeline's versions (model
    id, dictionaries, config hash) are appended to once it is built. In one process without a telemetry exporter
    the batches go through ``Pipeline.run_stream`` (the NER of the next batch started while this batch's later
    steps run; the same output). With a telemetry exporter set and one
    worker, each batch is a span ``deidstream <command>`` with the step spans under it, and the step metrics and
    ``deid.notes`` (outcome ``<command>`` or ``failed``) are exported; with ``workers`` > 1 nothing is (the worker
    processes run no exporter)."""
    from processors.runtime import freeze_loaded, pin_threads, threads_per_process

    configured = settings.worker.threads or None
    if workers <= 1:
        if configured:
            pin_threads(configured)
        started = time.monotonic()
        pipeline = build_pipeline(settings, cfg)
        if stats is not None:
            stats.append({"pid": os.getpid(), "threads": threads_per_process(1, configured),
                          "load_s": round(time.monotonic() - started, 3), "ready_at": time.monotonic()})
        if versions is not None:
            versions.append(pipeline.versions().model_dump(mode="json"))
        if settings.telemetry.exporter == "none":
            # the NER of the next batch starts while this batch's later steps run (Pipeline.run_stream)
            for k, done in enumerate(pipeline.run_stream(batched(notes, batch_size))):
                if k == 0:  # what loads at first use is loaded now: out of the collector's walks from now on
                    freeze_loaded()
                yield done
            return
        # telemetry configured: a span per batch named after the command, the step spans and metrics under it
        from streams import telemetry

        telemetry.setup(settings.telemetry, resource=telemetry.resource_attributes(pipeline.versions()))
        traced = telemetry.traced(pipeline)
        try:
            for k, batch in enumerate(batched(notes, batch_size)):
                with telemetry.command_span(command, {"deid.notes": len(batch)}) as span:
                    out = traced.run(batch)
                    failed = sum(1 for n in out if n.error is not None)
                    if span is not None and failed:
                        telemetry.mark_error(span, "E_NOTES_FAILED")
                if k == 0:
                    freeze_loaded()
                for n in out:
                    telemetry.count_outcome("failed" if n.error is not None else command)
                yield out
        finally:
            telemetry.shutdown()
        return
    threads = threads_per_process(workers, configured)
    ctx = mp.get_context(_start_method())
    secret_settings = settings.model_dump(mode="json")
    secret_settings["secret"] = settings.secret.get_secret_value()
    abort = ctx.Event()
    pool = ctx.Pool(workers, initializer=_init_worker,
                    initargs=(json.dumps(secret_settings), cfg.model_dump_json(), threads, abort))
    interrupted = False
    try:
        if versions is not None:
            versions.append(pool.apply(_worker_versions))
        for done, report in pool.imap(_run_in_worker, batched(notes, batch_size)):
            if report is not None and stats is not None:
                stats.append(report)
            yield done
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        # a worker's error, or the caller stopped early: the tasks left return at once, and the workers exit
        # when the queue is empty. Only Ctrl-C terminates them (it reached the workers too).
        abort.set()
        if interrupted:
            pool.terminate()
        else:
            pool.close()
        pool.join()


def steady_rate(done: Sequence[tuple[float, int]], loads: Sequence[dict[str, Any]]) -> float | None:
    """Notes/s once every process was ready: the notes of the batches that came back after the last
    ``ready_at`` over the time from it to the last batch (``done``: (``time.monotonic()``, notes) per
    batch). None when no batch came back after it."""
    if not loads or not done:
        return None
    ready = max(s["ready_at"] for s in loads)
    after = [(t, k) for t, k in done if t > ready]
    span = done[-1][0] - ready
    return sum(k for _, k in after) / span if after and span > 0 else None


# -- provenance: which run made a file -------------------------------------------------------------------

#: ``detect`` / ``deid`` write ``OUTPUT.run.json`` beside their output; ``eval --pred`` reads it.
RUN_SUFFIX = ".run.json"


def git_commit() -> str | None:
    """The commit of the checkout the code runs from (None outside a git checkout or without git)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def profile_of(steps: Sequence[str]) -> str:
    """The steps as a profile name, as the results files name them: ``default`` for the shipped steps
    (output steps aside), else the steps joined with ``-``."""
    from processors.pipeline import DEFAULT_STEPS

    detection = [s for s in steps if s not in OUTPUT_STEPS]
    shipped = [s for s in DEFAULT_STEPS if s not in OUTPUT_STEPS]
    return "default" if detection == shipped else "-".join(detection)


def provenance(command: str, cfg: PipelineConfig, versions: dict[str, Any] | None) -> dict[str, Any]:
    """Which run made an output: UTC date, command line (URL passwords masked), git commit, pipeline version,
    model id (never null: ``none (...)`` when no step runs a model), config hash and profile."""
    import datetime

    from processors.pipeline import PIPELINE_VERSION, mask_url

    v = versions or {}
    model = v.get("model") or f"none (no model step among {','.join(cfg.steps)})"
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": mask_url(command),
        "git_commit": git_commit() or "unknown (not run from a git checkout)",
        "pipeline_version": v.get("pipeline") or PIPELINE_VERSION,
        "model": model,
        "llm_model": v.get("llm_model"),
        "config_hash": v.get("config_hash") or cfg.config_hash(),
        "profile": profile_of(cfg.steps),
        "steps": list(cfg.steps),
        "dictionaries": v.get("dictionaries") or {},
    }


def command_line() -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in ["deidstream", *sys.argv[1:]])


def write_provenance(output: Path, prov: dict[str, Any]) -> Path:
    path = output.with_name(output.name + RUN_SUFFIX)
    path.write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
    return path


def read_provenance(output: Path) -> dict[str, Any] | None:
    """The ``OUTPUT.run.json`` beside ``output``, or None when there is none (or it is not JSON)."""
    path = output.with_name(output.name + RUN_SUFFIX)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- the stream on one machine (demo, bench-kafka): a worker subprocess ------------------------------------


def worker_env(settings: Settings, bootstrap: str, tmp: Path, mode: str) -> dict[str, str]:
    """Environment of a ``deidstream worker`` subprocess against the embedded broker at ``bootstrap``
    (short group timeouts, console span exporter into ``tmp/otel.jsonl``)."""
    env = dict(os.environ)
    env.update({
        "DEID_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
        "DEID_WORKER__GROUP_ID": "deidstream-demo",
        "DEID_WORKER__SESSION_TIMEOUT_S": "10",
        "DEID_WORKER__HEARTBEAT_INTERVAL_S": "1",
        "DEID_WORKER__REBALANCE_TIMEOUT_S": "10",
        "DEID_TRANSFORM__MODE": mode,
        "DEID_TELEMETRY__EXPORTER": "console",
        "DEID_TELEMETRY__CONSOLE_PATH": str(tmp / "otel.jsonl"),
        "DEID_TELEMETRY__METRICS_INTERVAL_S": "5",
        "DEID_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(health_env())
    return env


def health_env() -> dict[str, str]:
    """The health server of a local worker subprocess on a free 127.0.0.1 port (several may run at once)."""
    from streams.broker import free_port

    return {"DEID_HEALTH__HOST": "127.0.0.1", "DEID_HEALTH__PORT": str(free_port())}


def spawn_worker(env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``python -m streams.cli worker`` in its own session, stdout and stderr into ``log``."""
    return subprocess.Popen([sys.executable, "-m", "streams.cli", "worker"], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop_process(proc: subprocess.Popen[bytes], grace_s: float = 20.0) -> int:
    """SIGTERM, wait ``grace_s``, then SIGKILL. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return int(proc.returncode)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank, 0 <= q <= 1); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def metrics_summary(payload: dict[str, Any]) -> str | None:
    """One line of a ``notes.metrics`` record's NoteMetrics (numbers only, no text): retention of numbers and
    words with what was lost and what was removed for a reason, the residual risk, and the recall proxy.
    None when the record carries no NoteMetrics (the metrics step did not run)."""
    m = payload.get("metrics") if isinstance(payload.get("metrics"), dict) else None
    if m is None:
        return None

    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    parts = [f"metrics v{m.get('metrics_version', '?')}"]
    r = m.get("retention")
    if r:
        parts.append(f"numbers {f(r.get('number_retention'))} (kept {r.get('numbers_kept')}, lost "
                     f"{r.get('numbers_lost')}, removed for a reason {r.get('numbers_removed')})")
        parts.append(f"words {f(r.get('word_retention'))} (lost {r.get('words_lost')}, clinical "
                     f"{r.get('words_lost_clinical')}, removed for a reason {r.get('words_removed')})")
    k = m.get("risk")
    if k:
        parts.append(f"risk {f(k.get('score'))} (expected {f(k.get('expected'))} missed"
                     f"{', RISKY' if k.get('risky') else ''})")
    p = m.get("recall")
    if p:
        parts.append(f"recall proxy LR {f(p.get('lr'))} of {p.get('known')} known")
    llm = m.get("llm")
    if llm:
        parts.append(f"llm {llm.get('status')}{':' + llm['reason'] if llm.get('reason') else ''} (gate "
                     f"{f(llm.get('gate_score'))}, {llm.get('spans')} spans)")
    return "; ".join(parts)
