"""Replay and compare against the real broker, in process: caplog and an in-memory span exporter see
everything the batch handling logs and traces, so they are scanned for the notes' identifiers."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from paths import DATA
from stream_helpers import header
from typer.testing import CliRunner

import streams.app
from processors.pipeline import Pipeline, PipelineConfig
from streams import telemetry
from streams.broker import missing_topics, produce, read_topic
from streams.cli import app
from streams.cli.kafka import _consume
from streams.codec import SOURCE_HEADER, RawRecord
from streams.replay import compare_topics, replay, replay_topics
from streams.settings import KafkaSettings, Settings, TelemetrySettings, TopicSettings
from streams.worker import BatchProcessor

pytestmark = pytest.mark.integration

PATIENTS = [("Philippa", "Wrenfield", "MRN-55102938", "413-555-0187"),
            ("Osgood", "Trevelyan", "MRN-55102939", "413-555-0123"),
            ("Ines", "Marchbank", "MRN-55102940", "413-555-0166")]
IDENTIFIERS = tuple(x for p in PATIENTS for x in p) + ("replay-note-",)
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def _notes() -> list[RawRecord]:
    out = []
    for i, (given, family, mrn, phone) in enumerate(PATIENTS):
        body = {"id": f"replay-note-{i}", "patient": {"mrn": mrn, "names": [{"given": given, "family": family}]},
                "text": f"{given} {family} ({mrn}) seen 02/0{i + 1}/2024; call {phone}. Continue metformin."}
        tp = f"00-{TRACE_ID}-{i + 1:016x}-01".encode()
        out.append(RawRecord(mrn.encode(), json.dumps(body).encode(), (("traceparent", tp),)))
    out.append(RawRecord(b"MRN-55102938", b'{"id": "replay-note-x", "text": "Philippa Wrenfield', ()))
    return out


@pytest.fixture(scope="module")
def processors() -> dict[str, BatchProcessor]:
    def make(steps: tuple[str, ...]) -> BatchProcessor:
        return BatchProcessor(Pipeline.from_config(PipelineConfig(steps=steps)))

    return {"v1": make(("regex", "dictionary", "ensemble", "transform", "leakcheck", "metrics")),
            "v2": make(("ensemble", "transform", "metrics"))}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    telemetry.setup(TelemetrySettings(), span_exporter=exporter)
    yield exporter
    telemetry.shutdown()


def _attribute_text(exporter: InMemorySpanExporter) -> str:
    parts = []
    for s in exporter.get_finished_spans():
        parts.append(s.name)
        parts.extend(f"{k}={v}" for k, v in (s.attributes or {}).items())
        parts.extend(e.name for e in s.events)
        if s.status.description:
            parts.append(s.status.description)
    return "\n".join(parts)


def test_when_a_range_is_replayed_then_a_versioned_topic_holds_it_and_compare_shows_the_changes(
    kafka: KafkaSettings, topics: TopicSettings, processors: dict[str, BatchProcessor],
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
) -> None:
    placed = asyncio.run(produce(kafka, topics.raw, _notes()))
    settings = Settings(kafka=kafka, topics=topics)
    out_v1, out_v2 = f"{topics.raw}.v1", f"{topics.raw}.v2"
    caplog.set_level(logging.INFO)  # aiokafka and faust log payloads at DEBUG: never run them at DEBUG
    for ours in ("streams", "processors", "schemas"):
        caplog.set_level(logging.DEBUG, logger=ours)
    s1 = asyncio.run(replay(settings, output_topic=out_v1, processor=processors["v1"]))
    s2 = asyncio.run(replay(settings, output_topic=out_v2, processor=processors["v2"]))
    report = asyncio.run(compare_topics(settings, out_v1, out_v2))
    same = asyncio.run(compare_topics(settings, out_v1, out_v1))

    assert (s1.records, s1.deid, s1.dlq, s1.quarantine) == (4, 3, 1, 0)
    assert (s2.records, s2.deid, s2.dlq) == (4, 3, 1)
    assert s1.group_id == f"deidstream-replay-{out_v1}"
    # v2 has no detector: every note changed, all of v1's spans removed, none added
    assert len(report.diffs) == 3 and not report.only_a and not report.only_b and report.same == 0
    assert all(d.spans_removed and not d.spans_added and d.text_changed for d in report.diffs)
    assert all(d.metrics_changed.get("n_spans", [0, 0])[1] == 0 for d in report.diffs)
    # the per-note metrics (NoteMetrics v2) are diffed field by field: the residual risk and the retention
    # counts moved, timings never count as a change
    for d in report.diffs:
        assert d.metrics_changed["metrics.risk.detected"][1] == 0 < d.metrics_changed["metrics.risk.detected"][0]
        assert "metrics.retention.words_removed" in d.metrics_changed
        assert not any("stage_ms" in k or "total_ms" in k for k in d.metrics_changed)
    assert same.same == 3 and not same.diffs

    # `deidstream consume` on a metrics topic shows each note's NoteMetrics in one line, without note text
    capsys.readouterr()
    asyncio.run(_consume(settings, replay_topics(out_v1)["metrics"], 10, 2.0, False))
    shown = capsys.readouterr().out
    assert shown.count("metrics v3; numbers ") == 3 and shown.count("; risk ") == 3 and "removed for a reason" in shown
    assert not any(ident in shown for ident in IDENTIFIERS[:-1])

    deid = asyncio.run(read_topic(kafka, replay_topics(out_v1)["deid"]))
    dlq = asyncio.run(read_topic(kafka, replay_topics(out_v1)["dlq"]))
    for rec in deid:
        text = json.loads(rec.value)["text"]
        for ident in IDENTIFIERS[:-1]:
            assert ident not in text
    (letter,) = [json.loads(r.value) for r in dlq]
    assert letter["code"] == "E102" and header(dlq[0], SOURCE_HEADER) == f"{topics.raw}:{placed[3][0]}:{placed[3][1]}"

    # traces: each output's traceparent continues its input's trace from a note span whose parent is the input
    finished = {format(s.context.span_id, "016x"): s for s in spans.get_finished_spans()}
    index = {f"{topics.raw}:{p}:{o}": i for i, (p, o, _) in enumerate(placed)}
    for rec in deid:
        _, trace_id, span_id, _ = (header(rec, "traceparent") or "---").split("-")
        assert trace_id == TRACE_ID
        note_span = finished[span_id]
        assert note_span.name == "deid.note" and note_span.parent is not None
        assert note_span.parent.span_id == index[header(rec, SOURCE_HEADER) or ""] + 1  # the input's span id
    names = {s.name for s in spans.get_finished_spans()}
    assert {f"process {topics.raw}", "deid.note", "deid.step.regex", "deid.step.transform",
            "deid.step.leakcheck"} <= names

    # no identifier (nor note id) in logs, span attributes or DLQ reasons
    for where, text in {"logs": caplog.text, "spans": _attribute_text(spans), "dlq": letter["reason"]}.items():
        for ident in IDENTIFIERS:
            assert ident not in text, f"identifier in {where}"


def test_when_replay_has_an_upper_offset_then_only_that_range_is_replayed(
    kafka: KafkaSettings, topics: TopicSettings, processors: dict[str, BatchProcessor],
) -> None:
    records = [RawRecord(None, json.dumps({"id": f"r{i}", "text": f"Visit {i}: stable."}).encode(), ())
               for i in range(12)]
    placed = asyncio.run(produce(kafka, topics.raw, records))
    settings = Settings(kafka=kafka, topics=topics)
    summary: Any = asyncio.run(replay(settings, output_topic=f"{topics.raw}.first", from_offset=0, to_offset=1,
                                      processor=processors["v1"]))
    expected = sum(1 for _, offset, _ in placed if offset <= 1)
    assert summary.records == expected and summary.deid == expected
    with pytest.raises(ValueError, match="new .versioned. topic"):
        asyncio.run(replay(settings, output_topic=topics.deid, processor=processors["v1"]))


def test_when_a_topic_does_not_exist_then_replay_compare_and_consume_say_so_and_create_nothing(
    kafka: KafkaSettings, topics: TopicSettings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(kafka=kafka, topics=topics)
    typo = f"{topics.raw}x"
    out = f"{topics.raw}.v9"
    built: list[str] = []

    def must_not_build(*_a: Any) -> BatchProcessor:  # the models load only once the input topic is known to exist
        built.append("processor")
        raise AssertionError("the processor was built")

    monkeypatch.setattr(streams.app, "build_processor", must_not_build)
    with pytest.raises(ValueError, match=f"no topic {typo} on "):
        asyncio.run(replay(settings, output_topic=out, input_topic=typo))
    with pytest.raises(ValueError, match=f"no topic {typo} on "):  # an empty comparison would read as "no change"
        asyncio.run(compare_topics(settings, topics.deid, typo))
    with pytest.raises(ValueError, match=f"no topic {typo} on "):  # subscribing would create it, and print 0 records
        asyncio.run(_consume(settings, typo, 10, 1.0, False))
    # producing would make it with the broker's partitions, not the configured ones
    monkeypatch.setenv("DEID_KAFKA__BOOTSTRAP_SERVERS", kafka.bootstrap_servers)
    res = CliRunner().invoke(app, ["produce", str(DATA / "synthetic_small.jsonl"), "--topic", typo])
    assert res.exit_code == 1 and f"no topic {typo} on " in " ".join(res.stderr.split()), res.stderr
    assert not built
    # nothing was created: not the mistyped topic, not the replay's output topics
    assert asyncio.run(missing_topics(kafka, [typo, *replay_topics(out).values()])) == [
        typo, *replay_topics(out).values()]
    assert asyncio.run(missing_topics(kafka, [topics.raw, topics.deid])) == []
