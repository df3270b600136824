"""streams.telemetry with the OpenTelemetry SDK's in-memory span exporter and metric reader, around the
worker's batch step (no broker): a span per batch and per processor, a note span whose parent is the input's
``traceparent`` and whose context the output headers carry, counts and latencies as metrics, no note text in
any attribute, and telemetry failures that never break processing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from processors.pipeline import Pipeline, PipelineConfig
from streams import telemetry
from streams.codec import InRecord
from streams.settings import TelemetrySettings
from streams.worker import BatchProcessor, BatchResult, OutRecord, finish_batch

STEPS = ("ensemble", "transform", "leakcheck")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"

NOTE = {"id": "tel-note-4471", "text": "Seen today; no complaints. Continue lisinopril.",
        "patient": {"mrn": "MRN-7730021", "names": [{"given": "Wilhelmina", "family": "Quackenbush"}]}}
LEAKY = {"id": "tel-note-4472", "text": "Wilhelmina Quackenbush (MRN-7730021) called from 919-555-0142.",
         "patient": {"mrn": "MRN-7730021", "names": [{"given": "Wilhelmina", "family": "Quackenbush"}],
                     "phones": ["919-555-0142"]}}
#: What no span or metric attribute may contain: note text, names, MRN, phone, note ids, record keys.
IDENTIFIERS = ("Wilhelmina", "Quackenbush", "MRN-7730021", "7730021", "919-555-0142", "tel-note-4471",
               "tel-note-4472", "lisinopril", "complaints")


def rec(body: dict[str, Any] | bytes, offset: int, traceparent: str | None = TRACEPARENT) -> InRecord:
    value = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = (("traceparent", traceparent.encode()),) if traceparent else ()
    return InRecord("notes.raw", 1, offset, b"MRN-7730021", value, headers, 1_700_000_000_000)


RECORDS = [rec(NOTE, 10), rec(LEAKY, 11), rec(b'{"id": "tel-note-4473", "text": "Wilhelmina', 12)]
KINDS = ["deid", "quarantine", "dlq"]


class _Acked:
    """A sender whose every record is acknowledged at once."""

    def __init__(self) -> None:
        self.sent: list[OutRecord] = []

    async def send(self, out: OutRecord) -> Any:
        self.sent.append(out)
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


@pytest.fixture(scope="module")
def processor() -> BatchProcessor:
    return BatchProcessor(Pipeline.from_config(PipelineConfig(steps=STEPS)), max_note_bytes=4096)


@pytest.fixture
def otel() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry.setup(TelemetrySettings(), span_exporter=exporter, metric_reader=reader)
    try:
        yield exporter, reader
    finally:
        telemetry.shutdown(timeout_s=2.0)


def run_batch(processor: BatchProcessor, records: Sequence[InRecord] = RECORDS) -> BatchResult:
    """The worker's two halves: process the batch, then deliver it (which ends the note spans)."""
    result = processor.process(records)
    asyncio.run(finish_batch(result, _Acked(), send_timeout_s=5.0))
    return result


def by_name(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def header(out: OutRecord, name: str) -> str | None:
    return next((v.decode() for k, v in out.headers if k == name), None)


# --- traces -------------------------------------------------------------------------------------------------


def test_when_a_batch_is_processed_then_one_batch_span_and_one_span_per_processor(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, _ = otel
    run_batch(processor)
    (batch,) = by_name(exporter, "process notes.raw")  # the messaging conventions' batch span
    assert batch.attributes is not None and batch.attributes["messaging.batch.message_count"] == 3
    assert batch.attributes["messaging.operation.type"] == "process" and batch.attributes["messaging.system"] == "kafka"
    steps = [s for s in exporter.get_finished_spans() if s.name.startswith("deid.step.")]
    assert [s.name for s in steps] == [f"deid.step.{name}" for name in STEPS]
    for s in steps:
        assert s.parent is not None and s.parent.span_id == batch.context.span_id
        assert s.attributes is not None and s.attributes["deid.notes"] == 2  # the undecodable record never runs
    assert len(by_name(exporter, "deid.note")) == 3


def test_when_the_input_has_a_traceparent_then_the_note_span_continues_it_and_outputs_carry_it(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, _ = otel
    result = run_batch(processor)
    notes = by_name(exporter, "deid.note")
    (batch,) = by_name(exporter, "process notes.raw")
    assert {f"{link.context.trace_id:032x}" for link in batch.links} == {TRACE_ID}
    for oc in result.outcomes:
        span = next(s for s in notes if s.context.span_id == oc.span.get_span_context().span_id)
        assert f"{span.context.trace_id:032x}" == TRACE_ID
        assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID
        assert [link.context.span_id for link in span.links] == [batch.context.span_id]
        expected = f"00-{TRACE_ID}-{span.context.span_id:016x}-01"
        for out in oc.outputs:  # deid, quarantine, metrics and dlq records alike
            assert header(out, "traceparent") == expected, out.role
            assert sum(1 for k, _ in out.headers if k == "traceparent") == 1  # the input's is not passed on
    assert [oc.kind for oc in result.outcomes] == KINDS


def test_when_the_input_has_no_traceparent_then_a_new_trace_starts(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, _ = otel
    result = run_batch(processor, [rec(NOTE, 20, traceparent=None)])
    (note,) = by_name(exporter, "deid.note")
    assert note.parent is None and f"{note.context.trace_id:032x}" != TRACE_ID
    traceparent = header(result.outcomes[0].outputs[0], "traceparent")
    assert traceparent is not None
    assert traceparent.startswith(f"00-{note.context.trace_id:032x}-{note.context.span_id:016x}-")


def test_when_telemetry_is_off_then_the_input_trace_context_passes_through(processor: BatchProcessor) -> None:
    telemetry.shutdown()
    result = run_batch(processor, [rec(NOTE, 30)])
    assert [oc.kind for oc in result.outcomes] == ["deid"]
    assert header(result.outcomes[0].outputs[0], "traceparent") == TRACEPARENT


def _span_texts(exporter: InMemorySpanExporter) -> list[str]:
    texts = []
    for s in exporter.get_finished_spans():
        texts.append(s.name)
        texts.extend(f"{k}={v}" for k, v in (s.attributes or {}).items())
        for e in s.events:
            texts.append(e.name)
            texts.extend(f"{k}={v}" for k, v in (e.attributes or {}).items())
        if s.status.description:
            texts.append(s.status.description)
    return texts


def _metric_texts(reader: InMemoryMetricReader) -> list[str]:
    texts = []
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                texts.append(m.name)
                for point in m.data.data_points:
                    texts.extend(f"{k}={v}" for k, v in (point.attributes or {}).items())
    return texts


def test_when_notes_are_traced_then_no_span_or_metric_attribute_holds_note_text(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = otel
    run_batch(processor)
    spans, metrics = _span_texts(exporter), _metric_texts(reader)
    assert any("deid.spans_out=" in t for t in spans) and any("deid.step=" in t for t in metrics)  # something to scan
    for text in spans + metrics:
        for ident in IDENTIFIERS:
            assert ident not in text, (ident, text)


def test_when_a_batch_is_delivered_then_outcomes_and_durations_are_measured(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    _, reader = otel
    run_batch(processor)
    data = reader.get_metrics_data()
    assert data is not None
    points = {m.name: list(m.data.data_points) for rm in data.resource_metrics for sm in rm.scope_metrics
              for m in sm.metrics}
    assert {p.attributes["outcome"]: p.value for p in points["deid.notes"]} == {"deid": 1, "quarantine": 1, "dlq": 1}
    (dlq,) = points["deid.dlq"]
    assert dlq.attributes == {"code": "E102"} and dlq.value == 1
    assert sorted(p.attributes["deid.step"] for p in points["deid.step.duration"]) == sorted(STEPS)
    assert sum(p.count for p in points["deid.batch.duration"]) == 1
    assert sum(p.count for p in points["deid.note.latency"]) == 3


# --- telemetry failures never break processing -----------------------------------------------------------------


class _BrokenExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise RuntimeError("collector down")


class _BrokenTracer:
    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer broken")


class _BrokenSpan:
    """A span whose every method fails."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"span.{name} broken")


class _BrokenInstruments:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"instrument {name} broken")


def _break_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    telemetry.setup(TelemetrySettings(), span_exporter=_BrokenExporter(), metric_reader=InMemoryMetricReader())


def _break_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "tracer", lambda: _BrokenTracer())


def _break_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "start_span", lambda *a, **k: _BrokenSpan())


def _break_instruments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_instruments", _BrokenInstruments())


def _break_propagator(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def extract(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("extract broken")

        def inject(self, *a: Any, **k: Any) -> Any:
            raise RuntimeError("inject broken")

    monkeypatch.setattr(telemetry, "_PROPAGATOR", Broken())


def _break_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.sdk import resources

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("resource broken")

    monkeypatch.setattr(resources.Resource, "create", boom)
    telemetry.setup(TelemetrySettings(exporter="console"))


BREAKAGES = [
    ("exporter_raises", _break_exporter),
    ("tracer_raises", _break_tracer),
    ("span_methods_raise", _break_spans),
    ("metric_instruments_raise", _break_instruments),
    ("propagator_raises", _break_propagator),
    ("setup_raises", _break_setup),
]


@pytest.mark.parametrize("brk", [b[1] for b in BREAKAGES], ids=[b[0] for b in BREAKAGES])
def test_when_telemetry_fails_then_every_record_is_still_routed_and_delivered(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, brk: Any,
) -> None:
    brk(monkeypatch)
    caplog.set_level(logging.WARNING)
    sender = _Acked()
    result = processor.process(RECORDS)
    asyncio.run(finish_batch(result, sender, send_timeout_s=5.0))
    assert [oc.kind for oc in result.outcomes] == KINDS
    assert [o.role for o in sender.sent] == ["deid", "metrics", "quarantine", "metrics", "dlq"]
    for ident in IDENTIFIERS:
        assert ident not in caplog.text


@pytest.mark.parametrize(
    "headers",
    [None, (), (("traceparent", b"not-a-traceparent"),), (("traceparent", b"\xff\xfe"),),
     {"TraceParent": TRACEPARENT}, (("traceparent", None),)],
    ids=["none", "empty", "malformed", "undecodable", "mapping_any_case", "null_value"],
)
def test_when_trace_headers_are_odd_then_extract_context_returns_a_context(headers: Any) -> None:
    ctx = telemetry.extract_context(headers)
    assert ctx is not None
    link = telemetry.link_to(ctx)
    if isinstance(headers, dict):
        assert link is not None and f"{link.context.trace_id:032x}" == TRACE_ID
    else:
        assert link is None
    assert telemetry.trace_headers(None) == []


def test_when_the_llm_step_runs_then_its_outcomes_are_counted_by_status_and_reason_without_text(
    otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    from openai_test_server import OpenAITestServer, Reply, user_text

    def backend(body: dict[str, Any]) -> Reply:  # the leaky note's request fails, the other one answers
        if "called from" in user_text(body):
            return Reply(status=500)
        return Reply(json.dumps({"identifiers": [{"type": "NAME", "text": "Wilhelmina"}]}))

    exporter, reader = otel
    with OpenAITestServer(backend) as srv:
        cfg = PipelineConfig(steps=("llm", *STEPS), options={"llm": {
            "url": srv.url, "model": "m", "mode": "always", "max_retries": 0}})
        result = run_batch(BatchProcessor(Pipeline.from_config(cfg), max_note_bytes=4096))
    assert [oc.llm for oc in result.outcomes] == [("ok", None), ("failed", "server_error"), None]
    data = reader.get_metrics_data()
    assert data is not None
    points = {m.name: list(m.data.data_points) for rm in data.resource_metrics for sm in rm.scope_metrics
              for m in sm.metrics}
    assert {(p.attributes["outcome"], p.attributes["reason"]): p.value for p in points["deid.llm.notes"]} == {
        ("ok", "none"): 1, ("failed", "server_error"): 1}
    assert sorted(str((s.attributes or {}).get("deid.llm")) for s in by_name(exporter, "deid.note")) == [
        "None", "failed:server_error", "ok"]
    for text in _span_texts(exporter) + _metric_texts(reader):
        for ident in IDENTIFIERS:
            assert ident not in text, (ident, text)


# --- conventions, resource, per-step counts, the file commands (issue 28) ------------------------------------------


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {m.name: list(m.data.data_points) for rm in data.resource_metrics for sm in rm.scope_metrics
            for m in sm.metrics}


def test_when_telemetry_is_set_up_with_versions_then_the_resource_names_version_model_and_config_hash(
    processor: BatchProcessor,
) -> None:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry.setup(TelemetrySettings(), span_exporter=exporter, metric_reader=reader,
                    resource=telemetry.resource_attributes(processor.versions))
    try:
        run_batch(processor)
        (batch,) = by_name(exporter, "process notes.raw")
        res = dict(batch.resource.attributes)
    finally:
        telemetry.shutdown(timeout_s=2.0)
    assert res["service.version"] == processor.versions.pipeline
    assert res["deid.config.hash"] == processor.versions.config_hash
    assert res["deid.model.id"] == "none"  # no model step here: named, not left out


def test_when_a_note_is_dead_lettered_then_its_span_status_is_error_with_the_code(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, _ = otel
    run_batch(processor)
    statuses = sorted((s.status.status_code.name, s.status.description) for s in by_name(exporter, "deid.note"))
    assert statuses == [("ERROR", "E102"), ("UNSET", None), ("UNSET", None)]


def test_when_steps_run_then_spans_are_counted_by_label_and_drops_are_each_steps_own(
    processor: BatchProcessor, otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    from processors.pipeline import Note
    from schemas.models import NoteIn, Span

    _, reader = otel
    kept = Span(start=0, end=4, label="NAME", score=0.9, source="regex")
    gone = Span(start=5, end=9, label="DATE", score=0.2, source="regex")

    class _Dropper:
        name = "dropper"

        def process_batch(self, notes: Sequence[Note]) -> list[Note]:
            return [dataclasses.replace(n, spans=(kept,), dropped=(*n.dropped, gone)) for n in notes]

    class _Keeper:
        name = "keeper"

        def process_batch(self, notes: Sequence[Note]) -> list[Note]:
            return list(notes)  # drops nothing: the dropper's drop stays in the notes but is not counted again

    pipeline = telemetry.traced(Pipeline([_Dropper(), _Keeper()]))
    pipeline.run([NoteIn(id="n1", text="Anna 3/14"), NoteIn(id="n2", text="Anna 3/14")])
    points = _points(reader)
    spans = {(p.attributes["deid.step"], p.attributes["deid.label"]): p.value for p in points["deid.spans"]}
    assert spans == {("dropper", "NAME"): 2, ("keeper", "NAME"): 2}
    assert {p.attributes["deid.step"]: p.value for p in points["deid.dropped"]} == {"dropper": 2}
    (h,) = [p for p in points["deid.step.duration"] if p.attributes["deid.step"] == "dropper"]
    assert h.count == 1 and 0 <= h.sum < 5  # seconds, one record per batch call


def test_when_detect_runs_with_the_console_exporter_then_it_emits_spans_and_metrics_without_phi(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    from streams.cli import app

    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"id": "tel-note-4471", "text": "Wilhelmina Quackenbush, MRN-7730021, called "
                                 "919-555-0142 on 03/04/2021."}) + "\n")
    sink = tmp_path / "otel.jsonl"
    monkeypatch.setenv("DEID_TELEMETRY__EXPORTER", "console")
    monkeypatch.setenv("DEID_TELEMETRY__CONSOLE_PATH", str(sink))
    res = CliRunner().invoke(app, ["detect", str(notes), "-o", str(tmp_path / "out.jsonl"), "--steps",
                                   "regex,ensemble"])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in sink.read_text().splitlines() if x.strip()]
    spans = [x for x in lines if "name" in x and "context" in x]
    names = {s["name"] for s in spans}
    assert {"deidstream detect", "deid.step.regex", "deid.step.ensemble"} <= names
    (cmd,) = [s for s in spans if s["name"] == "deidstream detect"]
    assert cmd["resource"]["attributes"]["service.version"] and cmd["resource"]["attributes"]["deid.config.hash"]
    metrics = [x for x in lines if "resource_metrics" in x]
    text = json.dumps(metrics)
    assert '"deid.spans"' in text and '"deid.step.duration"' in text and '"unit": "s"' in text
    for ident in IDENTIFIERS[:5] + ("03/04/2021",):
        assert ident not in sink.read_text(), ident
