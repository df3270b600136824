"""``deidstream bench``: pipeline throughput (no Kafka), notes/s and per-note latency on fixed-length notes;
``deidstream bench-kafka``: the same pipeline through Kafka (embedded broker + worker) against the pipeline
alone. ``fixed_length_notes`` and ``bench_pipeline`` are also used by scripts/bench_ner.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from streams.cli._util import (
    EXIT_FAILED,
    BatchOpt,
    ConfigOpt,
    ResultOpt,
    StepsOpt,
    WorkersOpt,
    err,
    load_settings,
    percentile,
    pipeline_config_for,
    run_notes,
    spawn_worker,
    stop_process,
    worker_env,
    write_result,
)

if TYPE_CHECKING:
    from processors.pipeline import PipelineConfig
    from schemas.models import NoteIn
    from streams.codec import RawRecord
    from streams.settings import Settings


def fixed_length_notes(n: int, chars: int, seed: int = 2024) -> list[NoteIn]:
    """``n`` synthetic notes of about ``chars`` characters (synthetic notes joined/cut at a word boundary), each made
    of synthetic notes of its own: no text repeats. (Until 2026-12-05 a pool of ``n / 4`` notes was used round and
    round, so only about one bench note in seven was new text, and every memo of the pipeline's steps answered the
    others: a figure on notes already seen.)"""
    from processors.synthetic.generator import generate
    from schemas.models import NoteIn

    pool: list[dict[str, Any]] = []
    notes: list[NoteIn] = []
    i = 0
    while len(notes) < n:
        text = ""
        patient = None
        while len(text) < chars:
            if i == len(pool):  # more synthetic notes, of a seed of their own
                pool += generate(max(50, 2 * (n - len(notes))), seed + 7919 * (len(pool) // 50 + 1))
            if not text:
                patient = pool[i].get("patient")
            text += pool[i]["text"] + "\n"
            i += 1
        cut = text.rfind(" ", 0, chars)
        notes.append(NoteIn(note_id=f"bench-{len(notes)}", text=text[: cut if cut > 0 else chars],
                            patient=patient))
    return notes


def bench_pipeline(
    settings: Settings, cfg: PipelineConfig, *, n: int, chars: int, workers: int = 1, batch_size: int = 64
) -> dict[str, Any]:
    from processors.pipeline import PIPELINE_VERSION

    notes = fixed_length_notes(n, chars)
    warm = notes[: min(len(notes), batch_size)]
    list(run_notes(settings, cfg, warm, batch_size=batch_size, workers=1))  # load vocabularies / caches
    t0 = time.perf_counter()
    per_note_ms: list[float] = []
    stage_totals: dict[str, float] = {}
    done = 0
    for batch in run_notes(settings, cfg, notes, batch_size=batch_size, workers=workers):
        done += len(batch)
        for note in batch:
            per_note_ms.append(sum(ms for _, ms in note.stage_ms))
            for stage, ms in note.stage_ms:
                stage_totals[stage] = stage_totals.get(stage, 0.0) + ms
    elapsed = time.perf_counter() - t0
    return {
        "benchmark": "pipeline",
        "steps": list(cfg.steps),
        "notes": done,
        "chars_per_note": round(statistics.mean(len(x.text) for x in notes)),
        "workers": workers,
        "batch_size": batch_size,
        "seconds": round(elapsed, 3),
        "notes_per_s": round(done / elapsed, 1),
        "per_note_ms_mean": round(statistics.mean(per_note_ms), 3) if per_note_ms else None,
        "stage_ms_mean": {k: round(v / max(done, 1), 3) for k, v in stage_totals.items()},
        "cpu_count": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "pipeline_version": PIPELINE_VERSION,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


# -- bench-kafka: the same pipeline through Kafka vs without Kafka ----------------------------------------


class _Collector:
    """Consumes the output topics in the background: source coordinates -> output timestamp (ms)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.seen: dict[str, int] = {}
        #: source -> output records seen (deid, quarantine and dlq together) and the topics they came on
        self.count: dict[str, int] = {}
        self.topics: dict[str, set[str]] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer

        t = self.settings.topics
        from streams.broker import consumer_kwargs, start_client

        self.consumer = AIOKafkaConsumer(t.deid, t.quarantine, t.dlq, **consumer_kwargs(self.settings.kafka),
                                         group_id=None, auto_offset_reset="earliest", enable_auto_commit=False)
        await start_client(self.consumer)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        from streams.codec import SOURCE_HEADER

        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for recs in batch.values():
                for r in recs:
                    src = next((bytes(v).decode() for k, v in r.headers if k == SOURCE_HEADER), None)
                    if src is None:
                        continue
                    if src not in self.seen:
                        self.seen[src] = r.timestamp
                    self.count[src] = self.count.get(src, 0) + 1
                    self.topics.setdefault(src, set()).add(r.topic)

    async def wait_for(self, sources: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while any(s not in self.seen for s in sources):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sum(s not in self.seen for s in sources)} notes not out within {timeout_s}s")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.consumer.stop()


async def _publish_paced(settings: Settings, records: list[RawRecord], rate: float | None) -> list[tuple[str, int]]:
    """Publish at ``rate`` notes/s (None: as fast as possible); returns (source, timestamp ms) per record."""
    from aiokafka import AIOKafkaProducer

    from streams.broker import producer_kwargs, start_client

    producer = await start_client(AIOKafkaProducer(**producer_kwargs(settings.kafka)))
    try:
        futures = []
        t0 = time.monotonic()
        for i, rec in enumerate(records):
            if rate is not None:
                delay = t0 + i / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            futures.append(await producer.send(settings.topics.raw, rec.value, key=rec.key, headers=list(rec.headers)))
        metas = await asyncio.gather(*futures)
        return [(f"{m.topic}:{m.partition}:{m.offset}", m.timestamp) for m in metas]
    finally:
        await producer.stop()


def _latency_stats(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(ms, 0.50), 1), "p95_ms": round(percentile(ms, 0.95), 1),
            "p99_ms": round(percentile(ms, 0.99), 1), "max_ms": round(max(ms), 1)}


async def _max_rate_run(settings: Settings, collector: _Collector, notes: list[RawRecord], warm: list[RawRecord],
                        start_worker: Any, timeout_s: float) -> dict[str, Any]:
    """The backlog run: notes published BEFORE the worker starts; the rate is measured on the output
    timestamps after the first ``len(warm)`` outputs (first batches pay for caches warming up)."""
    placed = await _publish_paced(settings, warm + notes, None)
    start_worker()
    await collector.wait_for([s for s, _ in placed], timeout_s)
    out_ts = sorted(collector.seen[s] for s, _ in placed)
    skip = min(len(warm), len(out_ts) - 2)
    rate = (len(out_ts) - 1 - skip) / max((out_ts[-1] - out_ts[skip]) / 1000.0, 1e-3)
    return {"notes": len(out_ts) - skip, "notes_per_s": round(rate, 1)}


async def _paced_run(settings: Settings, collector: _Collector, notes: list[RawRecord], rate: float, seconds: float,
                     timeout_s: float) -> dict[str, Any]:
    n = max(20, int(rate * seconds))
    batch = [notes[i % len(notes)] for i in range(n)]
    placed = await _publish_paced(settings, batch, rate)
    await collector.wait_for([s for s, _ in placed], timeout_s)
    lat = [float(collector.seen[s] - ts) for s, ts in placed]
    span_s = (max(collector.seen[s] for s, _ in placed) - min(ts for _, ts in placed)) / 1000.0
    return {"offered_per_s": round(rate, 1), "notes": n, "achieved_per_s": round(n / max(span_s, 1e-3), 1),
            **_latency_stats(lat)}


async def _kafka_runs(settings: Settings, notes: list[RawRecord], warm: list[RawRecord], start_worker: Any,
                      paced_s: float, timeout_s: float) -> dict[str, Any]:
    collector = _Collector(settings)
    await collector.start()
    try:
        out: dict[str, Any] = {"max_rate": await _max_rate_run(settings, collector, notes, warm, start_worker,
                                                               timeout_s)}
        for share in (0.5, 1.0):
            out[f"load_{int(share * 100)}pct"] = await _paced_run(
                settings, collector, notes, out["max_rate"]["notes_per_s"] * share, paced_s, timeout_s)
        return out
    finally:
        await collector.stop()


@dataclass
class _Stage:
    """Workers of one run against the embedded broker (:func:`_embedded_stage`)."""

    settings: Settings
    env: dict[str, str]
    log: IO[bytes]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)

    def start_worker(self) -> int:
        """Start one more worker process; its pid."""
        self.procs.append(spawn_worker(self.env, self.log))
        return self.procs[-1].pid


@contextlib.contextmanager
def _embedded_stage(settings: Settings, steps: list[str], *, batch_size: int, group_id: str, log_level: str,
                    prefix: str, log_dir: Path | None, log_name: str) -> Iterator[_Stage]:
    """The embedded broker with the settings' topics and the environment of a worker running ``steps``; on
    exit every worker started is stopped (exit codes in ``exit_codes``), then the broker."""
    from streams.broker import EmbeddedBroker, create_topics

    with tempfile.TemporaryDirectory(prefix=prefix) as tmpdir:
        tmp = Path(tmpdir)
        broker = EmbeddedBroker(log_path=tmp / "broker.log")
        try:
            broker.start()
            kafka = broker.kafka_settings()
            settings = settings.model_copy(update={"kafka": kafka})
            asyncio.run(create_topics(kafka, settings.topics.all(), partitions=settings.topics.partitions))
            env = worker_env(settings, broker.bootstrap, tmp, settings.transform.mode)
            env.update({"DEID_TELEMETRY__EXPORTER": "none", "DEID_WORKER__BATCH_SIZE": str(batch_size),
                        "DEID_WORKER__GROUP_ID": group_id, "DEID_PIPELINE__STEPS": json.dumps(steps),
                        "DEID_LOG_LEVEL": log_level})
            log_path = (log_dir or tmp) / log_name
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with log_path.open("wb") as log:
                stage = _Stage(settings, env, log)
                try:
                    yield stage
                finally:
                    stage.exit_codes = [stop_process(p) for p in stage.procs]
        finally:
            broker.stop()


def run_kafka_bench(console: Console, *, n: int = 1000, chars: int = 1000, batch_size: int = 64,
                    paced_s: float = 10.0, timeout_s: float = 300.0, log_dir: Path | None = None,
                    steps: str | None = None) -> dict[str, Any]:
    """Pipeline without Kafka (in this process) vs the worker through the embedded broker, same notes/steps.
    ``steps``: comma-separated steps for both runs (default: the settings' pipeline)."""
    from streams.codec import FORMAT_HEADER, RawRecord
    from streams.settings import Settings

    settings = Settings()
    cfg = pipeline_config_for(settings, detect_only=False, steps=steps)
    console.print(f"pipeline only: {n} notes of ~{chars} chars, steps {', '.join(cfg.steps)}", highlight=False)
    baseline = bench_pipeline(settings, cfg, n=n, chars=chars, workers=1, batch_size=batch_size)
    notes_in: list[NoteIn] = fixed_length_notes(n, chars)

    def raw(note: NoteIn) -> RawRecord:
        return RawRecord(note.patient_key.encode(), note.model_dump_json().encode(), ((FORMAT_HEADER, b"json"),))

    records = [raw(x) for x in notes_in]
    warm = [raw(x.model_copy(update={"note_id": f"warm-{i}"})) for i, x in enumerate(notes_in[:batch_size])]
    with _embedded_stage(settings, list(cfg.steps), batch_size=batch_size, group_id="deidstream-bench",
                         log_level="DEBUG" if log_dir is not None else "WARNING", prefix="deidstream-bench-",
                         log_dir=log_dir, log_name="bench-worker.log") as stage:
        console.print("kafka: backlog published, worker starting; then paced runs at 50% and 100% of its rate",
                      highlight=False)
        kafka_result = asyncio.run(_kafka_runs(stage.settings, records, warm, stage.start_worker, paced_s, timeout_s))
    # the machine's load drifts: bracket the Kafka runs with two pipeline-only runs and use their mean
    after = bench_pipeline(settings, cfg, n=n, chars=chars, workers=1, batch_size=batch_size)
    pipeline_rate = (baseline["notes_per_s"] + after["notes_per_s"]) / 2
    ratio = kafka_result["max_rate"]["notes_per_s"] / max(pipeline_rate, 1e-9)
    return {"benchmark": "kafka_vs_pipeline", "steps": list(cfg.steps), "chars_per_note": baseline["chars_per_note"],
            "batch_size": batch_size, "pipeline_only": {
                "notes_per_s": round(pipeline_rate, 1), "before_notes_per_s": baseline["notes_per_s"],
                "after_notes_per_s": after["notes_per_s"], "per_note_ms_mean": baseline["per_note_ms_mean"]},
            "kafka": kafka_result, "kafka_over_pipeline": round(ratio, 3), "cpu_count": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d")}


# -- soak: a long run with malformed inputs and a worker kill, RSS over time -------------------------------

#: Malformed inputs of the soak run (each must end in the DLQ with its code).
MALFORMED: tuple[tuple[bytes | None, tuple[tuple[str, bytes], ...], str], ...] = (
    (b'{"id": "bad-json", "text": ', (("deid-format", b"json"),), "E102"),
    (b'{"id": "bad-utf8", "text": "\xff\xfe"}', (("deid-format", b"json"),), "E101"),
    (b"", (), "E120"),
    (b'{"id": "no-text"}', (("deid-format", b"json"),), "E104"),
    (b"MSH|^~\\&|A|B|||20240101||ADT^A01|C1|P|2.5\rPID|1||X1||Doe^Jane", (("deid-format", b"hl7"),), "E210"),
    (b"neither json nor hl7", (), "E123"),
)


def soak_records(n: int, chars: int, bad_every: int = 20) -> tuple[list[RawRecord], list[str | None]]:
    """``n`` records, one in ``bad_every`` malformed (5% by default); the expected DLQ code of each (None:
    a note)."""
    from streams.codec import FORMAT_HEADER, RawRecord

    notes = fixed_length_notes(n, chars)
    records: list[RawRecord] = []
    codes: list[str | None] = []
    for i, note in enumerate(notes):
        if i % bad_every == bad_every // 2:
            value, headers, code = MALFORMED[(i // bad_every) % len(MALFORMED)]
            records.append(RawRecord(note.patient_key.encode(), value or b"", headers))
            codes.append(code)
        else:
            records.append(RawRecord(note.patient_key.encode(), note.model_dump_json().encode(),
                                     ((FORMAT_HEADER, b"json"),)))
            codes.append(None)
    return records, codes


def rss_mb(pid: int) -> float | None:
    """Resident set size of a process (Linux /proc), MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except (OSError, ValueError):
        return None
    return None


#: how often the soak loop counts the notes out (the kill lands at the first check past ``kill_at``)
_SOAK_CHECK_S = 0.1


async def _soak(settings: Settings, records: list[RawRecord], start_worker: Any, kill_worker: Any,
                rate: float | None, kill_at: float, timeout_s: float, console: Console) -> dict[str, Any]:
    collector = _Collector(settings)
    await collector.start()
    try:
        pid = start_worker()
        publish = asyncio.create_task(_publish_paced(settings, records, rate))
        rss: list[dict[str, Any]] = []
        killed: dict[str, Any] | None = None
        deadline = time.monotonic() + timeout_s
        next_sample = 0.0
        while True:
            await asyncio.sleep(_SOAK_CHECK_S)
            done = len(collector.seen)
            if time.monotonic() >= next_sample:  # RSS every 2 s, with the notes out so far
                rss.append({"notes_out": done, "pid": pid, "rss_mib": rss_mb(pid)})
                next_sample = time.monotonic() + 2.0
            if killed is None and done >= kill_at * len(records):
                console.print(f"soak: SIGKILL the worker at {done} notes out, starting another", highlight=False)
                kill_worker()
                killed = {"at_notes_out": done, "pid": pid}
                pid = start_worker()
            if publish.done() and len(collector.seen) >= len(records):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"soak: {len(records) - len(collector.seen)} notes not out within {timeout_s}s")
        placed = publish.result()
        rss.append({"notes_out": len(collector.seen), "pid": pid, "rss_mib": rss_mb(pid)})
        await asyncio.sleep(2.0)  # late duplicates
        return {"placed": placed, "rss": rss, "killed": killed, "seen": dict(collector.seen),
                "count": dict(collector.count), "topics": {k: sorted(v) for k, v in collector.topics.items()}}
    finally:
        await collector.stop()


def _rss_growth(rss: list[dict[str, Any]], warm_notes: int) -> dict[str, Any]:
    """Per worker process: RSS once it started putting notes out ("start"), half-way through its notes,
    after ``warm_notes`` notes of its own, at its end, and the growth from "after warm" to the end."""
    out: dict[str, Any] = {}
    for pid in dict.fromkeys(r["pid"] for r in rss):
        mine = [r for r in rss if r["pid"] == pid and r["rss_mib"] is not None]
        if not mine:
            continue
        base = mine[0]["notes_out"]
        working = [r for r in mine if r["notes_out"] > base] or mine[-1:]
        handled = mine[-1]["notes_out"] - base
        mid = next(r for r in working if r["notes_out"] - base >= handled / 2)
        warm = [r for r in working if r["notes_out"] - base >= warm_notes]
        out[str(pid)] = {
            "notes_handled": handled, "start_mib": working[0]["rss_mib"], "middle_mib": mid["rss_mib"],
            "after_warm_mib": warm[0]["rss_mib"] if warm else None, "end_mib": mine[-1]["rss_mib"],
            "growth_after_warm_mib": round(mine[-1]["rss_mib"] - warm[0]["rss_mib"], 1) if warm else None}
    return out


def run_soak(console: Console, *, n: int, chars: int = 600, batch_size: int = 64, rate: float | None = None,
             kill_at: float = 0.5, steps: str | None = None, timeout_s: float = 3600.0,
             log_dir: Path | None = None) -> dict[str, Any]:
    """``n`` notes (5% malformed) through the embedded broker and a worker, the worker SIGKILLed once
    ``kill_at`` of them are out and another started; counts, rate, latency and the workers' RSS."""
    import signal

    from streams.settings import Settings

    settings = Settings()
    cfg = pipeline_config_for(settings, detect_only=False, steps=steps)
    records, codes = soak_records(n, chars)
    console.print(f"soak: {n} records ({sum(c is not None for c in codes)} malformed) of ~{chars} chars, steps "
                  f"{', '.join(cfg.steps)}, rate {rate or 'max'}/s", highlight=False)
    with _embedded_stage(settings, list(cfg.steps), batch_size=batch_size, group_id="deidstream-soak",
                         log_level="INFO", prefix="deidstream-soak-", log_dir=log_dir,
                         log_name="soak-worker.log") as stage:

        def kill_worker() -> None:
            stage.procs[-1].send_signal(signal.SIGKILL)
            stage.procs[-1].wait(30)

        t0 = time.time()
        run = asyncio.run(_soak(stage.settings, records, stage.start_worker, kill_worker, rate, kill_at, timeout_s,
                                console))
    codes_exit = stage.exit_codes
    placed: list[tuple[str, int]] = run["placed"]
    by_kind = {"deid": 0, "quarantine": 0, "dlq": 0}
    mixed = 0
    wrong_dlq = 0
    for (src, _), code in zip(placed, codes, strict=True):
        kinds = {t.rsplit(".", 1)[-1] for t in run["topics"].get(src, [])}
        if len(kinds) != 1:
            mixed += 1
            continue
        (kind,) = kinds
        by_kind[kind] += 1
        wrong_dlq += (kind == "dlq") != (code is not None)
    lat = [float(run["seen"][s] - ts) for s, ts in placed]
    out_ts = sorted(run["seen"][s] for s, _ in placed)
    span_s = (out_ts[-1] - min(ts for _, ts in placed)) / 1000.0
    duplicates = sum(c - 1 for c in run["count"].values())
    return {
        "benchmark": "soak", "steps": list(cfg.steps), "records_in": len(placed),
        "malformed_in": sum(c is not None for c in codes), "out": by_kind,
        "in_equals_out": len(placed) == sum(by_kind.values()) and mixed == 0,
        "inputs_in_several_topics": mixed, "malformed_not_in_dlq_or_notes_in_dlq": wrong_dlq,
        "duplicate_outputs": duplicates, "batch_size": batch_size, "killed": run["killed"],
        # wall: first input to last output (worker start and the kill included); out: first to last output
        "notes_per_s": {"wall": round(len(placed) / max(span_s, 1e-3), 1),
                        "out": round((len(out_ts) - 1) / max((out_ts[-1] - out_ts[0]) / 1000.0, 1e-3), 1)},
        "offered_per_s": rate,
        "latency_ms": _latency_stats(lat), "rss_samples": run["rss"],
        "rss_by_worker": _rss_growth(run["rss"], warm_notes=2000), "worker_exit_codes": codes_exit,
        "seconds": round(time.time() - t0, 1), "chars_per_note": chars, "cpu_count": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


# -- commands ----------------------------------------------------------------------------------------------


def bench(
    n: Annotated[int, typer.Option("--n", min=10, help="number of notes")] = 2000,
    chars: Annotated[int, typer.Option(help="characters per note")] = 1000,
    steps: StepsOpt = None,
    workers: WorkersOpt = 1,
    batch_size: BatchOpt = 64,
    out: ResultOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Throughput of the pipeline (no Kafka) on synthetic notes of a fixed length."""
    settings = load_settings(config)
    cfg = pipeline_config_for(settings, detect_only=steps is None, steps=steps)
    write_result(bench_pipeline(settings, cfg, n=n, chars=chars, workers=workers, batch_size=batch_size), out)


def bench_kafka(
    n: Annotated[int, typer.Option("--n", min=50, help="notes in the backlog run")] = 1000,
    chars: Annotated[int, typer.Option(help="characters per note")] = 1000,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
    paced: Annotated[float, typer.Option("--paced-seconds", help="length of each paced run")] = 10.0,
    out: ResultOpt = None,
    logs: Annotated[Path | None, typer.Option("--logs", help="keep the worker's DEBUG log in this folder")] = None,
    steps: StepsOpt = None,
    soak: Annotated[int | None, typer.Option(
        "--soak", min=100, help="soak run instead: N notes (5% malformed), the worker SIGKILLed half-way, "
        "counts in = deid + quarantine + dlq, notes/s, p50/p99 latency, worker RSS over time")] = None,
    rate: Annotated[float | None, typer.Option("--rate", min=1, help="soak: notes/s offered (default: as fast "
                                                                     "as possible)")] = None,
) -> None:
    """Throughput and latency through Kafka (embedded broker + worker) vs the pipeline alone; or a soak run."""
    if soak is not None:
        result = run_soak(err, n=soak, chars=chars, batch_size=batch_size, rate=rate, steps=steps, log_dir=logs)
        write_result(result, out)
        if not result["in_equals_out"] or result["malformed_not_in_dlq_or_notes_in_dlq"]:
            raise typer.Exit(EXIT_FAILED)
        return
    write_result(run_kafka_bench(err, n=n, chars=chars, batch_size=batch_size, paced_s=paced, log_dir=logs,
                                 steps=steps), out)


def register(app: typer.Typer) -> None:
    """Add ``bench`` and ``bench-kafka`` to the ``deidstream`` app."""
    app.command("bench")(bench)
    app.command("bench-kafka")(bench_kafka)
