"""The faust app and its agent: a thin loop that takes micro-batches (``stream.noack_take``), runs each
through ``streams.worker.process_batch`` (pipeline in a worker thread), and commits the input offsets only
after every output of the batch is acknowledged by the broker (at-least-once). Batch N's outputs are
acknowledged and committed while batch N+1 is processed (at most one batch waits for acks).

- Offsets are committed by the agent, not by faust's ack tracking: the input topic is declared with
  ``acks=False``. Faust acks (and would commit) messages it skips around a rebalance (events of an older
  consumer generation) even though no agent saw them; with its tracking off for the input topic, those
  records are simply fetched again from the last committed offset.
- SIGTERM: faust cancels the agent; the batch in hand is shielded, finished, sent and committed first.
- Outputs that cannot be acknowledged within ``worker.send_timeout_s``: the process exits with code 75
  without committing them, so the batch is redelivered after the restart (never dropped).
- faust hard-codes the consumer's ``fetch_max_wait_ms`` (1500 ms); Tansu answers a fetch only when that
  expires, so it is replaced by ``worker.fetch_max_wait_ms``.
- Health (``streams.health``): faust's web server, with its built-in pages off, serves ``/livez`` and
  ``/readyz`` on ``health.host:health.port``; a timer samples consumer lag per partition for the
  ``deid.consumer.lag`` gauge; another probes the bootstrap servers and exits with code 69 once none has
  accepted a connection for ``worker.broker_timeout_s`` (the Kafka clients would retry forever).
- Topics: before joining the group the worker waits up to ``worker.topics_wait_s`` for its five configured topics
  to exist and exits with code 78 naming those that do not (``check_topics``): faust would read a mistyped input
  topic that a broker creating topics on first use makes for it, and idle there, ready, for ever.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable
from typing import Any

from processors.pipeline import Pipeline
from processors.runtime import freeze_loaded, pin_threads, threads_per_process
from schemas.models import NoteIn
from streams import telemetry
from streams.broker import ssl_context
from streams.codec import InRecord, normalize_headers
from streams.health import BrokerWatch, Health, LagTracker
from streams.settings import KafkaSettings, Settings
from streams.worker import BatchProcessor, DeliveryError, OutRecord, finish_batch, process_batch

logger = logging.getLogger(__name__)

#: Exit code when outputs could not be delivered (EX_TEMPFAIL: a supervisor should restart the worker).
EXIT_DELIVERY_FAILED = 75
#: Exit code when no Kafka bootstrap server accepted a connection for worker.broker_timeout_s (EX_UNAVAILABLE).
EXIT_BROKER_UNAVAILABLE = 69
#: Exit code when a configured topic does not exist after worker.topics_wait_s (EX_CONFIG).
EXIT_TOPICS_MISSING = 78


async def _finish_uncancelled(job: asyncio.Future[Any], n_records: int) -> bool:
    """Wait for ``job`` even if this task is cancelled meanwhile (SIGTERM finishes the batch in hand).
    Returns True when a cancellation arrived (the caller re-raises it once the work is done)."""
    cancelled = False
    while not job.done():
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:
            if not cancelled and n_records:
                logger.info("stopping: finishing the batch in hand (%d records)", n_records)
            cancelled = True
    return cancelled


def _exit_on_failure(job: asyncio.Future[Any]) -> None:
    """A batch whose outputs could not be acknowledged (or whose handling failed) must not be committed:
    exit at once, so the records are redelivered after the restart."""
    exc = job.exception()
    if exc is None:
        return
    if isinstance(exc, DeliveryError):
        logger.critical("outputs not acknowledged (%s); exiting without committing the batch", exc)
    else:
        logger.critical("batch handling failed (%s); exiting without committing it", type(exc).__name__)
    telemetry.shutdown()
    os._exit(EXIT_DELIVERY_FAILED)


def _faust_credentials(kafka: KafkaSettings) -> Any:
    import faust

    if kafka.security_protocol == "PLAINTEXT":
        return None
    ssl_ctx = ssl_context(kafka) if kafka.security_protocol in ("SSL", "SASL_SSL") else None
    if kafka.security_protocol == "SSL":
        return faust.SSLCredentials(ssl_ctx)
    return faust.SASLCredentials(
        username=kafka.sasl_username,
        password=kafka.sasl_password.get_secret_value() if kafka.sasl_password else None,
        ssl_context=ssl_ctx, mechanism=kafka.sasl_mechanism)


def record_from_event(event: Any) -> InRecord:
    msg = event.message
    ts = getattr(msg, "timestamp", None)
    return InRecord(topic=msg.topic, partition=msg.partition, offset=msg.offset, key=msg.key, value=msg.value,
                    headers=normalize_headers(msg.headers), timestamp_ms=int(ts * 1000) if ts else None)


class FaustSender:
    """Sends OutRecords through the app's producer to the topic of their role."""

    def __init__(self, topics: dict[str, Any]) -> None:
        self.topics = topics

    async def send(self, out: OutRecord) -> Awaitable[Any]:
        # force: publish now; faust would otherwise "attach" the record to the current event and publish
        # it only when faust commits that event's offset
        fut: Awaitable[Any] = await self.topics[out.role].send(key=out.key, value=out.value,
                                                               headers=list(out.headers), force=True)
        return fut


async def commit_offsets(app: Any, records: list[InRecord], lag: LagTracker | None = None) -> None:
    """Commit ``offset + 1`` of the last record of each partition (records are in partition order).
    A failed commit (e.g. the partition moved in a rebalance) only means the batch is redelivered."""
    from faust.types import TP

    offsets: dict[Any, int] = {}
    for r in records:
        tp = TP(r.topic, r.partition)
        offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
    try:
        ok = await app.consumer._commit(offsets)  # noqa: SLF001 - faust's commit without its ack tracking
    except Exception as exc:  # noqa: BLE001
        logger.warning("offset commit failed (%s); the batch will be redelivered", type(exc).__name__)
        return
    logger.debug("committed %s", {f"{tp.topic}:{tp.partition}": o for tp, o in offsets.items()})
    if not ok:
        logger.warning("offset commit not accepted (rebalance?); the batch will be redelivered")
    elif lag is not None:
        lag.committed({(tp.topic, tp.partition): o for tp, o in offsets.items()})


async def _group_committed(app: Any, tps: list[Any]) -> dict[Any, int]:
    """The group's committed offsets of ``tps`` (through faust's consumer thread, which owns the aiokafka
    consumer); a partition the group never committed counts from its earliest offset."""
    out: dict[Any, int] = {}
    try:
        thread = app.consumer._thread  # noqa: SLF001 - faust exposes no committed() of its own
        consumer = thread._ensure_consumer()  # noqa: SLF001
        for tp in tps:
            offset = await thread.call_thread(consumer.committed, tp)
            if offset is not None and offset >= 0:
                out[tp] = int(offset)
    except Exception as exc:  # noqa: BLE001 - lag is telemetry: never break the worker
        logger.debug("committed offsets unavailable (%s)", type(exc).__name__)
    missing = [tp for tp in tps if tp not in out]
    if missing:
        out.update({tp: int(o) for tp, o in (await app.consumer.earliest_offsets(*missing)).items()})
    return out


async def sample_lag(app: Any, topic: str, lag: LagTracker) -> None:
    """End offset minus committed offset for each partition of ``topic`` this worker owns."""
    tps = sorted((tp for tp in app.consumer.assignment() if tp.topic == topic), key=lambda tp: tp.partition)
    if not tps:
        lag.update({}, {})
        return
    ends = await app.consumer.highwaters(*tps)
    unknown = [tp for tp in tps if lag.committed_offset((tp.topic, tp.partition)) is None]
    if unknown:
        lag.committed({(tp.topic, tp.partition): o for tp, o in (await _group_committed(app, unknown)).items()})
    committed = {(tp.topic, tp.partition): lag.committed_offset((tp.topic, tp.partition)) or 0 for tp in tps}
    lag.update({(tp.topic, tp.partition): int(ends[tp]) for tp in tps if ends.get(tp) is not None}, committed)


_FETCH_WAIT_MS: list[int] = []


def _patch_fetch_wait(ms: int) -> None:
    """faust hard-codes ``fetch_max_wait_ms=1500`` for its consumer; use ``worker.fetch_max_wait_ms``."""
    from faust.transport.drivers import aiokafka as driver

    _FETCH_WAIT_MS[:] = [ms]
    original = driver.AIOKafkaConsumerThread._create_worker_consumer
    if getattr(original, "_deid_patched", False):
        return

    def create(self: Any, transport: Any) -> Any:
        consumer = original(self, transport)
        consumer._fetch_max_wait_ms = _FETCH_WAIT_MS[0]  # read when the consumer starts its fetcher
        return consumer

    create._deid_patched = True  # type: ignore[attr-defined]
    driver.AIOKafkaConsumerThread._create_worker_consumer = create  # type: ignore[method-assign]


def create_app(settings: Settings, processor: BatchProcessor, health: Health | None = None) -> Any:
    """The faust app with one agent reading ``topics.raw``, and the health pages when enabled."""
    import faust

    _patch_fetch_wait(settings.worker.fetch_max_wait_ms)

    kafka, w, topics, h = settings.kafka, settings.worker, settings.topics, settings.health
    if health is None:
        health = Health(stuck_after_s=h.stuck_after_s)
        health.models_loaded = True  # the processor exists: its models are loaded
    lag = LagTracker()
    app = faust.App(
        w.group_id,
        broker=[f"kafka://{s}" for s in kafka.servers()],
        broker_credentials=_faust_credentials(kafka),
        broker_client_id=kafka.client_id,
        key_serializer="raw",
        value_serializer="raw",
        autodiscover=False,
        store="memory://",
        # faust makes "<group>-data" in its working directory by default; tables are in memory here, so a
        # private temp directory (a read-only root filesystem leaves /tmp as the writable place)
        datadir=tempfile.mkdtemp(prefix="deidstream-faust-"),
        producer_acks=-1 if kafka.acks == "all" else int(kafka.acks),
        producer_max_request_size=kafka.max_request_bytes,
        producer_request_timeout=kafka.request_timeout_s,
        consumer_max_fetch_size=kafka.max_request_bytes,
        consumer_auto_offset_reset=w.auto_offset_reset,
        broker_session_timeout=w.session_timeout_s,
        broker_heartbeat_interval=w.heartbeat_interval_s,
        broker_rebalance_timeout=w.rebalance_timeout_s,
        broker_request_timeout=max(kafka.request_timeout_s, w.session_timeout_s + 5.0),
        stream_wait_empty=False,
        topic_replication_factor=topics.replication_factor,
        topic_partitions=topics.partitions,
        table_standby_replicas=0,
        # faust's web server serves only our health pages: its stats/graph/router/table pages are off
        web_enabled=h.enabled,
        web_bind=h.host,
        web_host=h.host,
        web_port=h.port,
        web_stats_enabled=False,
        web_graph_enabled=False,
        web_router_enabled=False,
        web_tables_enabled=False,
        web_metrics_enabled=False,
    )
    raw_topic = app.topic(topics.raw, key_serializer="raw", value_serializer="raw", acks=False)
    sender = FaustSender({role: app.topic(getattr(topics, role), key_serializer="raw", value_serializer="raw")
                          for role in ("deid", "metrics", "quarantine", "dlq")})

    async def deliver_and_commit(result: Any, records: list[InRecord], previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await previous  # commits stay in batch order
        await finish_batch(result, sender, send_timeout_s=w.send_timeout_s)
        await commit_offsets(app, records, lag)

    async def deid_agent(stream: Any) -> None:
        # Batch N's outputs are acknowledged and its offsets committed while batch N+1 is processed; at most
        # one batch waits for acknowledgements, so a crash can only redeliver (never skip) records.
        pending: asyncio.Task[None] | None = None
        cancelled = False
        try:
            async for events in stream.noack_take(w.batch_size, within=w.batch_max_wait_s):
                records = [record_from_event(e) for e in events]
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("batch %s", [f"{r.partition}:{r.offset}" for r in records])
                health.batch_started()
                job = asyncio.ensure_future(process_batch(processor, records, progress=health.batch_started))
                job.add_done_callback(lambda _job: health.batch_finished())
                cancelled = await _finish_uncancelled(job, len(records)) or cancelled
                _exit_on_failure(job)
                previous = pending
                pending = asyncio.ensure_future(deliver_and_commit(job.result(), records, previous))
                if previous is not None:  # bound: wait for N-1 before taking N+1
                    cancelled = await _finish_uncancelled(previous, 0) or cancelled
                    _exit_on_failure(previous)
                if cancelled:
                    raise asyncio.CancelledError()
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            health.stopping = True
            if pending is not None:
                if cancelled and not pending.done():
                    logger.info("stopping: waiting for the last batch's outputs to be acknowledged")
                await _finish_uncancelled(pending, 0)
                _exit_on_failure(pending)

    app.agent(raw_topic, name="deidstream.deid", concurrency=1)(deid_agent)
    _add_health(app, settings, health, lag)
    return app


def _add_health(app: Any, settings: Settings, health: Health, lag: LagTracker) -> None:
    """Probe pages, assignment tracking and the lag sampler."""
    raw = settings.topics.raw

    async def on_assigned(sender: Any, assigned: Any, **kwargs: Any) -> None:
        health.assigned((tp.topic, tp.partition) for tp in assigned if tp.topic == raw)
        logger.info("assigned %d partitions of the input topic",
                    sum(1 for tp in assigned if tp.topic == raw))

    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        lag.revoked((tp.topic, tp.partition) for tp in revoked)

    app.on_partitions_assigned.connect(on_assigned)
    app.on_partitions_revoked.connect(on_revoked)

    async def lag_timer() -> None:
        try:
            await sample_lag(app, raw, lag)
        except Exception as exc:  # noqa: BLE001 - telemetry never breaks processing
            logger.debug("lag sample failed (%s)", type(exc).__name__)

    app.timer(settings.health.lag_interval_s, name="deidstream.lag")(lag_timer)

    watch = BrokerWatch(settings.kafka.servers(), timeout_s=settings.worker.broker_timeout_s)

    async def broker_timer() -> None:
        down_s = watch.observe(await watch.reachable())
        health.broker_reachable = down_s == 0.0
        if down_s:
            logger.warning("no Kafka bootstrap server reachable for %.0f s (exit after %.0f s)", down_s,
                           watch.timeout_s)
        if watch.expired(down_s):
            # the Kafka clients would retry forever; a supervisor restarts the worker, and the uncommitted
            # batch is redelivered then. os._exit: a clean faust shutdown would wait on the dead brokers.
            logger.critical("Kafka unreachable: no bootstrap server (%s) accepted a connection for %.0f s "
                            "(worker.broker_timeout_s); exiting with code %d", ",".join(watch.servers), down_s,
                            EXIT_BROKER_UNAVAILABLE)
            telemetry.shutdown()
            os._exit(EXIT_BROKER_UNAVAILABLE)

    app.timer(min(5.0, max(settings.worker.broker_timeout_s / 4, 0.5)), name="deidstream.broker")(broker_timer)
    telemetry.observe_consumer_lag(lag.snapshot, group=settings.worker.group_id)

    if not settings.health.enabled:
        return

    async def livez(self: Any, request: Any) -> Any:
        ok, body = health.liveness()
        return self.json(body, status=200 if ok else 503)

    async def readyz(self: Any, request: Any) -> Any:
        ok, body = health.readiness()
        body["lag"] = sum(lag.snapshot().values())
        return self.json(body, status=200 if ok else 503)

    app.page("/livez", name="livez")(livez)
    app.page("/readyz", name="readyz")(readyz)


def build_processor(settings: Settings, *, warm_up: bool = True) -> BatchProcessor:
    """Build the pipeline once for this process (models and vocabularies load here, not per note)."""
    pipeline = Pipeline.from_config(settings.pipeline_config(), secret=settings.secret,
                                    cache_dir=settings.cache_dir)
    processor = BatchProcessor(pipeline, max_note_bytes=settings.worker.max_note_bytes,
                               dlq_max_payload_bytes=settings.worker.dlq_max_payload_bytes,
                               note_timeout_s=settings.worker.note_timeout_s or None)
    if warm_up:  # vocabularies built at first use load now, before the group join
        pipeline.run([NoteIn(note_id="warm-up", text="Seen on 01/02/2020 by Dr. Example at 555-0100.")])
        freeze_loaded()  # the loaded models and vocabularies: out of the garbage collector's full walks
    return processor


#: Libraries that log record keys and values at DEBUG: never below INFO, whatever the log level.
PAYLOAD_LOGGERS = ("aiokafka", "faust", "mode", "kafka")


def clamp_payload_loggers(level: str | int) -> None:
    numeric = level if isinstance(level, int) else logging.getLevelName(str(level).upper())
    floor = max(numeric if isinstance(numeric, int) else logging.INFO, logging.INFO)
    for name in PAYLOAD_LOGGERS:
        logging.getLogger(name).setLevel(floor)


def check_topics(settings: Settings) -> None:
    """Wait up to ``worker.topics_wait_s`` for the configured topics; exit with code 78 naming those still missing.
    A cluster no listing reached in that time is left to the broker watch (exit 69 after
    ``worker.broker_timeout_s``); 0 skips the check."""
    from streams.broker import wait_for_topics

    wait_s = settings.worker.topics_wait_s
    if not wait_s:
        return
    missing = asyncio.run(wait_for_topics(settings.kafka, settings.topics.all(), wait_s=wait_s))
    if missing is None:
        logger.warning("topics not checked: no bootstrap server of %s answered within %.0f s "
                       "(worker.topics_wait_s)", settings.kafka.bootstrap_servers, wait_s)
    elif missing:
        logger.critical("no topic %s on %s after %.0f s (worker.topics_wait_s): a typo in DEID_TOPICS__*? "
                        "`deidstream create-topics` makes the configured ones; exiting with code %d",
                        ", ".join(missing), settings.kafka.bootstrap_servers, wait_s, EXIT_TOPICS_MISSING)
        telemetry.shutdown()
        sys.exit(EXIT_TOPICS_MISSING)


def run_worker(settings: Settings) -> None:
    """Run the worker until SIGTERM/SIGINT (blocks; raises SystemExit like faust's Worker)."""
    import faust

    # SIGTERM while the pipeline loads: nothing is in hand yet, so stop cleanly (faust's Worker installs
    # its own handlers once it runs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # one process per container: its threads are the container's cores (or worker.threads), set before
    # the pipeline imports torch
    pin_threads(threads_per_process(1, settings.worker.threads or None))
    health = Health(stuck_after_s=settings.health.stuck_after_s)
    processor = build_processor(settings)
    # after the pipeline is built: the resource names its version, model and config hash
    telemetry.setup(settings.telemetry, resource=telemetry.resource_attributes(processor.versions))
    health.models_loaded = True
    check_topics(settings)
    app = create_app(settings, processor, health)
    logger.info("worker: group %s reading %s, steps %s, config %s", settings.worker.group_id, settings.topics.raw,
                ",".join(processor.pipeline.step_names), processor.versions.config_hash)
    if settings.health.enabled:
        logger.info("health: http://%s:%d/livez and /readyz", settings.health.host, settings.health.port)
    worker = faust.Worker(app, loglevel=settings.log_level, quiet=True, redirect_stdouts=False)
    clamp_payload_loggers(settings.log_level)
    try:
        worker.execute_from_commandline()
    finally:
        telemetry.shutdown()
