"""Replay a range of ``notes.raw`` through the CURRENT pipeline into a versioned topic, and compare two
output topics note by note.

A replay into ``T`` writes clean notes to ``T``, metrics to ``T.metrics``, quarantined notes to
``T.quarantine`` and dead letters to ``T.dlq``, with its own consumer group (``deidstream-replay-T`` by
default): it commits as it goes, so an interrupted replay resumes where it stopped. Pseudonyms are HMAC
derived, so the same note has the same pseudonym in every replay made with the same secret: ``compare``
joins on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from streams.broker import (
    consumer_kwargs,
    create_topics,
    producer_kwargs,
    read_topic,
    require_topics,
    start_client,
)
from streams.codec import InRecord, normalize_headers
from streams.settings import Settings
from streams.worker import BatchProcessor, OutRecord, run_batch

logger = logging.getLogger(__name__)


def replay_topics(output_topic: str) -> dict[str, str]:
    """Topic of each output role for a replay into ``output_topic``."""
    return {"deid": output_topic, "metrics": f"{output_topic}.metrics",
            "quarantine": f"{output_topic}.quarantine", "dlq": f"{output_topic}.dlq"}


class AioSender:
    """Sends OutRecords with an aiokafka producer to the topic of their role."""

    def __init__(self, producer: Any, topics: Mapping[str, str]) -> None:
        self.producer = producer
        self.topics = dict(topics)

    async def send(self, out: OutRecord) -> Awaitable[Any]:
        fut: Awaitable[Any] = await self.producer.send(self.topics[out.role], out.value, key=out.key,
                                                       headers=list(out.headers))
        return fut


@dataclass
class ReplaySummary:
    input_topic: str
    output_topic: str
    group_id: str
    ranges: dict[int, tuple[int, int]]
    records: int = 0
    deid: int = 0
    quarantine: int = 0
    dlq: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"input_topic": self.input_topic, "output_topic": self.output_topic, "group_id": self.group_id,
                "ranges": {str(p): list(r) for p, r in self.ranges.items()}, "records": self.records,
                "deid": self.deid, "quarantine": self.quarantine, "dlq": self.dlq,
                "seconds": round(self.seconds, 3)}


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


async def _offsets_at(consumer: Any, tps: list[Any], when: datetime, default: Mapping[Any, int]) -> dict[Any, int]:
    found = await consumer.offsets_for_times({tp: _ms(when) for tp in tps})
    return {tp: (found[tp].offset if found.get(tp) is not None else default[tp]) for tp in tps}


async def replay(
    settings: Settings, *, output_topic: str, from_offset: int | None = None, from_time: datetime | None = None,
    to_offset: int | None = None, to_time: datetime | None = None, input_topic: str | None = None,
    group_id: str | None = None, processor: BatchProcessor | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> ReplaySummary:
    """Re-run the pipeline over ``[from, to]`` of every partition of ``input_topic`` (default notes.raw).

    ``from_offset``/``to_offset`` apply to every partition (``to_offset`` inclusive); ``from_time``/``to_time``
    select by record timestamp (``to_time`` exclusive). Without bounds: from the beginning to the end
    offsets at start time."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    from streams.app import build_processor

    if from_offset is not None and from_time is not None:
        raise ValueError("give --from-offset or --from-time, not both")
    if to_offset is not None and to_time is not None:
        raise ValueError("give --to-offset or --to-time, not both")
    source = input_topic or settings.topics.raw
    if output_topic in settings.topics.all() or output_topic == source:
        raise ValueError("replay output must be a new (versioned) topic, not one of the live topics")
    group = group_id or f"deidstream-replay-{output_topic}"
    # before the models load and the output topics are made: a mistyped input topic changes nothing
    await require_topics(settings.kafka, [source])
    proc = processor if processor is not None else await asyncio.to_thread(build_processor, settings)
    roles = replay_topics(output_topic)
    await create_topics(settings.kafka, list(roles.values()), partitions=settings.topics.partitions,
                        replication_factor=settings.topics.replication_factor)
    t0 = time.perf_counter()
    consumer = AIOKafkaConsumer(**consumer_kwargs(settings.kafka), group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    producer = AIOKafkaProducer(**producer_kwargs(settings.kafka))
    await start_client(consumer)
    try:
        await start_client(producer)
    except BaseException:
        await consumer.stop()
        raise
    try:
        parts = consumer.partitions_for_topic(source)
        if not parts:
            await consumer._client.force_metadata_update()  # noqa: SLF001
            parts = consumer.partitions_for_topic(source) or set()
        tps = [TopicPartition(source, p) for p in sorted(parts)]
        if not tps:
            raise ValueError("input topic has no partitions (does it exist?)")
        consumer.assign(tps)
        begin = await consumer.beginning_offsets(tps)
        end = await consumer.end_offsets(tps)
        if from_time is not None:
            start = await _offsets_at(consumer, tps, from_time, end)
        else:
            start = {tp: max(begin[tp], from_offset or 0) for tp in tps}
        # ``limit``: exclusive upper bound from --to (None: up to the end). ``reach``: the position at which a
        # partition is finished. Tansu reports the end offset as its last batch's base offset + 1 while a fetch
        # returns that whole batch, so on reaching ``reach`` the records already fetched are drained too.
        limit: dict[Any, int | None] = {tp: None for tp in tps}
        if to_time is not None:
            found = await consumer.offsets_for_times({tp: _ms(to_time) for tp in tps})
            limit = {tp: (found[tp].offset if found.get(tp) is not None else None) for tp in tps}
        elif to_offset is not None:
            limit = {tp: to_offset + 1 for tp in tps}
        reach = {tp: end[tp] if limit[tp] is None else min(end[tp], limit[tp]) for tp in tps}
        for tp in tps:
            committed = await consumer.committed(tp)
            if committed is not None and start[tp] < committed < reach[tp]:
                logger.info("replay: resuming partition %d at committed offset %d", tp.partition, committed)
                start[tp] = committed
        summary = ReplaySummary(source, output_topic, group, {tp.partition: (start[tp], reach[tp]) for tp in tps})
        active = [tp for tp in tps if start[tp] < reach[tp]]
        for tp in tps:
            consumer.seek(tp, start[tp])
        sender = AioSender(producer, roles)

        async def handle(batch: Mapping[Any, list[Any]]) -> None:
            records: list[InRecord] = []
            commit: dict[Any, Any] = {}
            for tp, recs in batch.items():
                for r in recs:
                    bound = limit[tp]
                    if bound is not None and r.offset >= bound:
                        continue
                    records.append(InRecord(r.topic, r.partition, r.offset, r.key, r.value,
                                            normalize_headers(r.headers), r.timestamp))
                    commit[tp] = OffsetAndMetadata(r.offset + 1, "")
            if not records:
                return
            result = await run_batch(proc, records, sender, send_timeout_s=settings.worker.send_timeout_s)
            await consumer.commit(commit)
            summary.records += len(records)
            summary.deid += result.count("deid")
            summary.quarantine += result.count("quarantine")
            summary.dlq += result.count("dlq")
            if on_batch is not None:
                on_batch(len(records))

        size = settings.worker.batch_size
        while active:
            await handle(await consumer.getmany(*active, timeout_ms=1000, max_records=size))
            reached = [tp for tp in active if await consumer.position(tp) >= reach[tp]]
            if reached:
                for _ in range(1000):  # bounded drain of what the fetcher already holds
                    extra = await consumer.getmany(*reached, timeout_ms=0, max_records=size)
                    if not extra:
                        break
                    await handle(extra)
                active = [tp for tp in active if tp not in reached]
        summary.seconds = time.perf_counter() - t0
        return summary
    finally:
        await producer.stop()
        await consumer.stop()


# -- compare ---------------------------------------------------------------------------------------------------


def metrics_topic_for(settings: Settings, topic: str) -> str:
    return settings.topics.metrics if topic == settings.topics.deid else f"{topic}.metrics"


def _by_pseudonym(records: list[Any]) -> dict[str, dict[str, Any]]:
    """Last record per note pseudonym (at-least-once delivery may repeat a note)."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        try:
            data = orjson.loads(r.value)
        except (TypeError, ValueError):
            continue
        if isinstance(data, dict) and data.get("note_pseudonym"):
            out[str(data["note_pseudonym"])] = data
    return out


#: top-level payload fields that are no metric; timings and versions differ on every run at any depth
_NOT_COMPARED = frozenset({"spans", "note_pseudonym", "patient_pseudonym", "leak_findings"})
_NEVER_COMPARED = frozenset({"versions", "stage_ms", "total_ms"})


def _flat_numbers(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number of a metrics payload by dotted path (``metrics.risk.score``, ``metrics.retention.words``),
    booleans as 0/1; new NoteMetrics fields are compared without a change here."""
    out: dict[str, float] = {}
    for k, v in data.items():
        if (not prefix and k in _NOT_COMPARED) or k in _NEVER_COMPARED:
            continue
        name = f"{prefix}{k}"
        if isinstance(v, bool):
            out[name] = float(v)
        elif isinstance(v, int | float):
            out[name] = float(v)
        elif isinstance(v, Mapping):
            out.update(_flat_numbers(v, name + "."))
    return out


@dataclass
class NoteDiff:
    note_pseudonym: str
    text_changed: bool
    spans_added: list[list[Any]] = field(default_factory=list)
    spans_removed: list[list[Any]] = field(default_factory=list)
    metrics_changed: dict[str, list[float | None]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.text_changed or bool(self.spans_added or self.spans_removed or self.metrics_changed)


@dataclass
class CompareReport:
    topic_a: str
    topic_b: str
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    same: int = 0
    diffs: list[NoteDiff] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"topic_a": self.topic_a, "topic_b": self.topic_b, "only_a": self.only_a, "only_b": self.only_b,
                "same": self.same, "changed": len(self.diffs),
                "diffs": [{"note_pseudonym": d.note_pseudonym, "text_changed": d.text_changed,
                           "spans_added": d.spans_added, "spans_removed": d.spans_removed,
                           "metrics_changed": d.metrics_changed} for d in self.diffs]}


def _span_keys(deid: Mapping[str, Any], metrics: Mapping[str, Any] | None) -> set[tuple[Any, ...]]:
    if metrics is not None and isinstance(metrics.get("spans"), list):
        return {tuple(s[:3]) for s in metrics["spans"]}  # original offsets: [start, end, label]
    return {(s.get("start"), s.get("end"), s.get("label")) for s in deid.get("spans", [])}


def compare_outputs(
    topic_a: str, deid_a: Mapping[str, dict[str, Any]], metrics_a: Mapping[str, dict[str, Any]],
    topic_b: str, deid_b: Mapping[str, dict[str, Any]], metrics_b: Mapping[str, dict[str, Any]],
) -> CompareReport:
    """Per-note differences between two output topics (joined on the note pseudonym)."""
    report = CompareReport(topic_a, topic_b, only_a=sorted(set(deid_a) - set(deid_b)),
                           only_b=sorted(set(deid_b) - set(deid_a)))
    for key in sorted(set(deid_a) & set(deid_b)):
        a, b = deid_a[key], deid_b[key]
        ma, mb = metrics_a.get(key), metrics_b.get(key)
        sa, sb = _span_keys(a, ma), _span_keys(b, mb)
        diff = NoteDiff(key, text_changed=a.get("text") != b.get("text"),
                        spans_added=[list(s) for s in sorted(sb - sa, key=str)],
                        spans_removed=[list(s) for s in sorted(sa - sb, key=str)])
        if ma is not None and mb is not None:
            fa, fb = _flat_numbers(ma), _flat_numbers(mb)
            for name in sorted(set(fa) | set(fb)):
                if fa.get(name) != fb.get(name):
                    diff.metrics_changed[name] = [fa.get(name), fb.get(name)]
        if diff.changed:
            report.diffs.append(diff)
        else:
            report.same += 1
    return report


async def compare_topics(settings: Settings, topic_a: str, topic_b: str, *, metrics_a: str | None = None,
                         metrics_b: str | None = None, timeout_s: float = 60.0) -> CompareReport:
    kafka = settings.kafka
    await require_topics(kafka, [topic_a, topic_b])  # an empty comparison would read as "nothing changed"
    ra, rb, rma, rmb = await asyncio.gather(
        read_topic(kafka, topic_a, timeout_s=timeout_s), read_topic(kafka, topic_b, timeout_s=timeout_s),
        read_topic(kafka, metrics_a or metrics_topic_for(settings, topic_a), timeout_s=timeout_s),
        read_topic(kafka, metrics_b or metrics_topic_for(settings, topic_b), timeout_s=timeout_s))
    return compare_outputs(topic_a, _by_pseudonym(ra), _by_pseudonym(rma), topic_b, _by_pseudonym(rb),
                           _by_pseudonym(rmb))
