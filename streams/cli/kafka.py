"""Kafka commands of the ``deidstream`` CLI: worker, broker, produce, consume, replay, compare, config show.
``streams.cli`` mounts them with :func:`register` (``python -m streams.cli worker`` runs the worker). Heavy
imports (faust, aiokafka, the pipeline) happen inside the commands."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from streams.cli._util import (
    EXIT_FAILED,
    EXIT_USAGE,
    ConfigOpt,
    ModeOpt,
    err,
    fail,
    load_settings,
    metrics_summary,
)

if TYPE_CHECKING:
    from streams.settings import Settings


def worker(
    config: ConfigOpt = None,
    mode: ModeOpt = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", min=1, help="notes per micro-batch")] = None,
) -> None:
    """Run the de-identification worker (faust) until SIGTERM / Ctrl-C."""
    from streams.app import run_worker

    settings = load_settings(config, mode)
    if batch_size is not None:
        settings = settings.model_copy(update={"worker": settings.worker.model_copy(update={"batch_size": batch_size})})
    run_worker(settings)


def broker(
    port: Annotated[int, typer.Option("--port", help="listen on 127.0.0.1:PORT")] = 9092,
    create: Annotated[bool, typer.Option("--topics/--no-topics", help="create the configured topics")] = True,
    config: ConfigOpt = None,
) -> None:
    """Run the embedded Tansu broker (memory storage) on 127.0.0.1 until SIGTERM / Ctrl-C."""
    from streams.broker import EmbeddedBroker, create_topics

    settings = load_settings(config)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    b = EmbeddedBroker(port)
    try:
        b.start()
        if create:
            kafka = b.kafka_settings()
            made = asyncio.run(create_topics(kafka, settings.topics.all(), partitions=settings.topics.partitions))
            err.print(f"topics created: {', '.join(made) or '(all existed)'}", highlight=False)
        err.print(f"broker ready on {b.bootstrap} (DEID_KAFKA__BOOTSTRAP_SERVERS={b.bootstrap}); Ctrl-C stops it",
                  highlight=False)
        while not stop.wait(0.5):
            if b.proc is None or b.proc.poll() is not None:
                err.print("[red]broker exited[/]", markup=True)
                raise typer.Exit(EXIT_FAILED)
    finally:
        b.stop()
    err.print("broker stopped", highlight=False)


def create_topics(
    config: ConfigOpt = None,
    partitions: Annotated[int | None, typer.Option("--partitions", min=1,
                                                   help="default: topics.partitions")] = None,
    replication_factor: Annotated[int | None, typer.Option("--replication-factor", min=1,
                                                           help="default: topics.replication_factor")] = None,
) -> None:
    """Create the configured topics (raw, deid, metrics, dlq, quarantine) that do not exist yet on the
    cluster of kafka.bootstrap_servers (the Helm chart's topic Job runs this)."""
    from streams.broker import create_topics as do_create

    settings = load_settings(config)
    t = settings.topics
    try:
        made = asyncio.run(do_create(settings.kafka, t.all(), partitions=partitions or t.partitions,
                                     replication_factor=replication_factor or t.replication_factor))
    except Exception as exc:
        raise fail(exc) from None
    err.print(f"topics created: {', '.join(made) or '(all existed)'}", highlight=False)


def produce(
    path: Annotated[Path, typer.Argument(help="JSONL / JSON note, HL7 file, or a folder of them")],
    topic: Annotated[str | None, typer.Option("--topic", help="default: topics.raw")] = None,
    traceparent: Annotated[bool, typer.Option("--traceparent/--no-traceparent",
                                              help="start a trace per record (W3C header)")] = True,
    config: ConfigOpt = None,
) -> None:
    """Publish notes (keyed by patient when the note names one) to notes.raw."""
    from streams.broker import produce as do_produce
    from streams.broker import require_topics
    from streams.codec import records_from_path

    settings = load_settings(config)
    if not path.exists():
        err.print(f"[red]error[/] [E110] input not found: {path}", markup=True, highlight=False)
        raise typer.Exit(EXIT_USAGE)
    records = records_from_path(path)
    target = topic or settings.topics.raw
    try:
        # a missing topic would be made on first use (Tansu does) with the broker's partitions, not the configured
        asyncio.run(require_topics(settings.kafka, [target]))
        placed = asyncio.run(do_produce(settings.kafka, target, records, traceparent=traceparent))
    except Exception as exc:
        raise fail(exc) from None
    parts = sorted({p for p, _, _ in placed})
    err.print(f"published {len(placed)} records to {target} (partitions {parts})", highlight=False)


def consume(
    topic: Annotated[str, typer.Argument(help="topic to read")],
    max_records: Annotated[int, typer.Option("--max", min=1, help="stop after this many records")] = 100,
    timeout: Annotated[float, typer.Option("--timeout", help="stop after this many idle seconds")] = 5.0,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per line on stdout")] = False,
    config: ConfigOpt = None,
) -> None:
    """Print the records of a topic from the beginning (no consumer group)."""
    settings = load_settings(config)
    try:
        asyncio.run(_consume(settings, topic, max_records, timeout, as_json))
    except Exception as exc:
        raise fail(exc) from None


async def _consume(settings: Settings, topic: str, max_records: int, idle_s: float, as_json: bool) -> None:
    from aiokafka import AIOKafkaConsumer

    from streams.broker import consumer_kwargs, require_topics, start_client

    # subscribing would create it on a broker that makes topics on first use, and print "0 records"
    await require_topics(settings.kafka, [topic])
    out = Console()
    consumer = AIOKafkaConsumer(topic, **consumer_kwargs(settings.kafka), group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await start_client(consumer)
    n = 0
    try:
        while n < max_records:
            batch = await consumer.getmany(timeout_ms=int(idle_s * 1000), max_records=max_records - n)
            if not batch:
                break
            for recs in batch.values():
                for r in recs:
                    n += 1
                    headers = {k: v.decode("utf-8", "replace") for k, v in r.headers}
                    value = r.value.decode("utf-8", "replace") if r.value is not None else None
                    if as_json:
                        try:
                            body: Any = json.loads(value) if value else value
                        except ValueError:
                            body = value
                        print(json.dumps({"partition": r.partition, "offset": r.offset,
                                          "key": r.key.decode("utf-8", "replace") if r.key else None,
                                          "headers": headers, "value": body}, ensure_ascii=False))
                    else:
                        out.rule(f"{topic} p{r.partition} @{r.offset}")
                        out.print(headers, highlight=False)
                        out.print(value, markup=False, highlight=False)
                        line = _metrics_line(value)
                        if line is not None:  # a notes.metrics record: its NoteMetrics in one line
                            out.print(line, markup=False, highlight=False)
    finally:
        await consumer.stop()
    err.print(f"{n} records", highlight=False)


def _metrics_line(value: str | None) -> str | None:
    try:
        data = json.loads(value) if value else None
    except ValueError:
        return None
    return metrics_summary(data) if isinstance(data, dict) else None


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter("use an ISO 8601 time, e.g. 2024-05-01T12:00:00+00:00") from None


def replay(
    output_topic: Annotated[str, typer.Option("--output-topic", help="versioned output topic, e.g. notes.deid.v2")],
    from_offset: Annotated[int | None, typer.Option("--from-offset", min=0)] = None,
    from_time: Annotated[str | None, typer.Option("--from-time", help="ISO 8601")] = None,
    to: Annotated[str | None, typer.Option("--to", help="last offset (inclusive) or an ISO 8601 time")] = None,
    input_topic: Annotated[str | None, typer.Option("--input-topic", help="default: topics.raw")] = None,
    group: Annotated[str | None, typer.Option("--group", help="default: deidstream-replay-<output topic>")] = None,
    config: ConfigOpt = None,
) -> None:
    """Re-run the current pipeline over a range of notes.raw into a versioned topic."""
    from streams.replay import replay as do_replay

    settings = load_settings(config)
    to_offset = int(to) if to is not None and to.isdigit() else None
    to_time = _when(to) if to is not None and to_offset is None else None
    try:
        summary = asyncio.run(do_replay(settings, output_topic=output_topic, from_offset=from_offset,
                                        from_time=_when(from_time), to_offset=to_offset, to_time=to_time,
                                        input_topic=input_topic, group_id=group))
    except Exception as exc:
        raise fail(exc) from None
    print(json.dumps(summary.as_dict(), indent=2))


def compare(
    topic_a: Annotated[str, typer.Argument(help="output topic A (e.g. notes.deid)")],
    topic_b: Annotated[str, typer.Argument(help="output topic B (e.g. notes.deid.v2)")],
    metrics_a: Annotated[str | None, typer.Option("--metrics-a", help="default: A's metrics topic")] = None,
    metrics_b: Annotated[str | None, typer.Option("--metrics-b", help="default: B.metrics")] = None,
    out: Annotated[Path | None, typer.Option("--json", help="write the full report here")] = None,
    rows: Annotated[int, typer.Option("--rows", help="differing notes to list")] = 20,
    config: ConfigOpt = None,
) -> None:
    """Per-note differences in spans and metrics between two output topics."""
    from rich.table import Table

    from streams.replay import compare_topics

    settings = load_settings(config)
    try:
        report = asyncio.run(compare_topics(settings, topic_a, topic_b, metrics_a=metrics_a, metrics_b=metrics_b))
    except Exception as exc:
        raise fail(exc) from None
    console = Console()
    table = Table(title=f"{topic_a} vs {topic_b}")
    for col in ("note", "text", "spans +", "spans -", "metrics changed"):
        table.add_column(col)
    for d in report.diffs[:rows]:
        table.add_row(d.note_pseudonym, "changed" if d.text_changed else "same",
                      " ".join(f"{s[2]}@{s[0]}" for s in d.spans_added[:6]),
                      " ".join(f"{s[2]}@{s[0]}" for s in d.spans_removed[:6]),
                      ", ".join(f"{k}: {v[0]} -> {v[1]}" for k, v in list(d.metrics_changed.items())[:4]))
    console.print(table)
    console.print(f"same: {report.same}  changed: {len(report.diffs)}  only in A: {len(report.only_a)}  "
                  f"only in B: {len(report.only_b)}", highlight=False)
    if out is not None:
        out.write_text(json.dumps(report.as_dict(), indent=2) + "\n")


def config_show(config: ConfigOpt = None) -> None:
    """Print the effective configuration (secrets and URL passwords masked; the built-in secret named as such)."""
    import yaml

    data = load_settings(config).shown()
    print(yaml.safe_dump(data, sort_keys=False), end="")


def register(app: typer.Typer) -> None:
    """Add the Kafka commands to the main ``deidstream`` app."""
    for fn in (worker, broker, produce, consume, replay, compare):
        app.command(fn.__name__)(fn)
    app.command("create-topics")(create_topics)
    config_app = typer.Typer(no_args_is_help=True, help="Effective configuration.")
    config_app.command("show")(config_show)
    app.add_typer(config_app, name="config")
