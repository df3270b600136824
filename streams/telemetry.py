"""OpenTelemetry for the worker and the file commands: the only module that sets up the SDK.

- Resource: ``service.name``, ``service.version`` (the pipeline version), ``deid.model.id`` and
  ``deid.config.hash`` (see :func:`resource_attributes`).
- Traces (OpenTelemetry messaging conventions): a span per micro-batch named ``process <topic>`` (kind consumer,
  ``messaging.operation.type`` / ``.name`` ``process``, ``messaging.system`` ``kafka``,
  ``messaging.destination.name``, ``messaging.batch.message_count``, linked to the notes' input contexts), a span per
  processor under it (``deid.step.<name>``), and a span per note (``deid.note``) whose parent is the W3C
  ``traceparent`` read from the input headers; the output headers carry the note span's context. A failed batch,
  step or note (dead-lettered) has span status ERROR with the exception type or error code (never a message).
- Metrics: counters ``deid.notes`` (by outcome), ``deid.dlq`` (by code), ``deid.quarantine``, ``deid.spans`` (spans
  each step put out, by ``deid.step`` and ``deid.label``), ``deid.dropped`` (candidates each step itself dropped, by
  ``deid.step``); histograms in seconds: ``deid.step.duration`` (one step over one batch), ``deid.batch.duration``
  and ``deid.note.latency`` (input record timestamp to output acknowledged); observable gauge ``deid.consumer.lag``.

Attributes are counts, labels, step names, codes and Kafka coordinates; never note text, keys or note ids. Every
call here swallows its own failures: telemetry never breaks processing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from processors.pipeline import Note, Pipeline, Processor, url_credentials

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from streams.settings import TelemetrySettings

logger = logging.getLogger(__name__)

INSTRUMENTATION = "deidstream"
_PROPAGATOR = TraceContextTextMapPropagator()
_LOCK = threading.Lock()
_tracer_provider: Any = None
_meter_provider: Any = None
_instruments: _Instruments | None = None
#: Where the consumer-lag gauge reads its values: ``{(topic, partition): lag}`` (set by the worker).
_lag_source: Callable[[], Mapping[tuple[str, int], int]] | None = None
_lag_group = ""
#: At most this many input contexts are linked from one batch span.
MAX_LINKS = 128


def _warn(what: str, exc: BaseException) -> None:
    logger.warning("telemetry: %s failed (%s); continuing without it", what, type(exc).__name__)


# -- setup -------------------------------------------------------------------------------------------------


def resource_attributes(versions: Any) -> dict[str, str]:
    """The resource attributes that name what produced the telemetry: pipeline version, model id (``none`` when no
    step runs a model), config hash, and the LLM model when the LLM pass runs. ``versions``: schemas.Versions."""
    attrs = {"service.version": str(versions.pipeline), "deid.model.id": str(versions.model or "none"),
             "deid.config.hash": str(versions.config_hash)}
    if getattr(versions, "llm_model", None):
        attrs["deid.llm.model"] = str(versions.llm_model)
    return attrs


def setup(
    settings: TelemetrySettings,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    resource: Mapping[str, str] | None = None,
) -> None:
    """Configure tracing and metrics for this process (idempotent: a second call replaces the first).

    ``span_exporter`` / ``metric_reader`` override the configured exporter (tests pass in-memory ones).
    With exporter ``none`` and no override, the no-op API stays in place."""
    global _tracer_provider, _meter_provider, _instruments
    try:
        from opentelemetry.sdk.resources import Resource

        from processors.pipeline import PIPELINE_VERSION

        res = Resource.create({"service.name": settings.service_name, "service.version": PIPELINE_VERSION,
                               **dict(resource or {})})
        exporter = span_exporter if span_exporter is not None else _span_exporter(settings)
        reader = metric_reader if metric_reader is not None else _metric_reader(settings)
        with _LOCK:
            shutdown()
            if exporter is not None:
                from opentelemetry.sdk.trace import TracerProvider
                from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

                tp = TracerProvider(resource=res)
                # in-memory / console exporters: export synchronously so tests and the demo see every span
                simple = span_exporter is not None or settings.exporter == "console"
                tp.add_span_processor(SimpleSpanProcessor(exporter) if simple else BatchSpanProcessor(exporter))
                _tracer_provider = tp
            if reader is not None:
                from opentelemetry.sdk.metrics import MeterProvider

                _meter_provider = MeterProvider(resource=res, metric_readers=[reader])
            _instruments = None
    except Exception as exc:  # noqa: BLE001 - telemetry never breaks the worker
        _warn("setup", exc)


def shutdown(timeout_s: float = 5.0) -> None:
    """Flush and drop the providers set up by :func:`setup`. Waits at most ``timeout_s`` (an unreachable
    OTLP collector must not hold up a worker's exit)."""
    global _tracer_provider, _meter_provider, _instruments
    providers = [p for p in (_tracer_provider, _meter_provider) if p is not None]
    _tracer_provider = None
    _meter_provider = None
    _instruments = None
    if not providers:
        return

    def run() -> None:
        for provider in providers:
            try:
                provider.shutdown()
            except Exception as exc:  # noqa: BLE001
                _warn("shutdown", exc)

    t = threading.Thread(target=run, name="otel-shutdown", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        logger.warning("telemetry: exporters did not flush within %.0fs; some spans/metrics are lost", timeout_s)


def _console_stream(settings: TelemetrySettings) -> Any:
    if settings.console_path is None:
        import sys

        return sys.stdout
    settings.console_path.parent.mkdir(parents=True, exist_ok=True)
    return open(settings.console_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives with the exporter


def _otlp_headers(settings: TelemetrySettings) -> dict[str, str] | None:
    """``otlp_headers`` as a dict, plus ``Authorization: Basic`` when ``otlp_endpoint`` carries a user and
    password (they go in a header so the exporter never holds them in a URL it may log or measure)."""
    headers: dict[str, str] = {}
    if settings.otlp_headers is not None:
        pairs = (p.split("=", 1) for p in settings.otlp_headers.get_secret_value().split(",") if "=" in p)
        headers.update({k.strip(): v.strip() for k, v in pairs})
    _, creds = url_credentials(settings.otlp_endpoint or "")
    if creds is not None and not any(k.lower() == "authorization" for k in headers):
        import base64

        headers["Authorization"] = "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode("ascii")
    return headers or None


def _otlp_endpoint(settings: TelemetrySettings) -> str | None:
    """``otlp_endpoint`` without its userinfo (see :func:`_otlp_headers`)."""
    return url_credentials(settings.otlp_endpoint)[0] if settings.otlp_endpoint else None


def _span_exporter(settings: TelemetrySettings) -> SpanExporter | None:
    if settings.exporter == "none":
        return None
    if settings.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=_console_stream(settings),
                                   formatter=lambda span: span.to_json(indent=None) + os.linesep)
    endpoint = _otlp_endpoint(settings)
    try:
        if settings.otlp_protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

            return GrpcExporter(endpoint=endpoint, headers=_otlp_headers(settings))  # type: ignore[no-any-return]
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        url = f"{endpoint.rstrip('/')}/v1/traces" if endpoint else None
        return OTLPSpanExporter(endpoint=url, headers=_otlp_headers(settings))
    except ImportError:
        logger.warning("telemetry: OTLP exporter for %s is not installed (pip install "
                       "opentelemetry-exporter-otlp-proto-%s); traces are not exported",
                       settings.otlp_protocol, "grpc" if settings.otlp_protocol == "grpc" else "http")
        return None


def _metric_reader(settings: TelemetrySettings) -> MetricReader | None:
    if settings.exporter == "none":
        return None
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    interval_ms = settings.metrics_interval_s * 1000.0
    if settings.exporter == "console":
        out = _console_stream(settings)
        exporter: Any = ConsoleMetricExporter(
            out=out, formatter=lambda m: m.to_json(indent=None) + os.linesep)
        return PeriodicExportingMetricReader(exporter, export_interval_millis=interval_ms)
    try:
        if settings.otlp_protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as Grpc

            exporter = Grpc(endpoint=_otlp_endpoint(settings), headers=_otlp_headers(settings))
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            ep = _otlp_endpoint(settings)
            exporter = OTLPMetricExporter(endpoint=f"{ep.rstrip('/')}/v1/metrics" if ep else None,
                                          headers=_otlp_headers(settings))
    except ImportError:
        return None
    return PeriodicExportingMetricReader(exporter, export_interval_millis=interval_ms)


# -- tracing helpers ----------------------------------------------------------------------------------------


def tracer() -> trace.Tracer:
    """The deidstream tracer (no-op until :func:`setup` installed an exporter)."""
    if _tracer_provider is not None:
        return _tracer_provider.get_tracer(INSTRUMENTATION)  # type: ignore[no-any-return]
    return trace.get_tracer(INSTRUMENTATION)


def _header_map(headers: Iterable[tuple[str, bytes | str | None]] | Mapping[str, Any] | None) -> dict[str, str]:
    items = headers.items() if isinstance(headers, Mapping) else (headers or ())
    out: dict[str, str] = {}
    for k, v in items:
        if v is None:
            continue
        out[str(k).lower()] = v.decode("latin-1") if isinstance(v, bytes | bytearray) else str(v)
    return out


def extract_context(headers: Iterable[tuple[str, bytes | str | None]] | Mapping[str, Any] | None) -> Any:
    """The OTel context carried by W3C ``traceparent``/``tracestate`` headers (empty context if none)."""
    try:
        carrier = {k: v for k, v in _header_map(headers).items() if k in ("traceparent", "tracestate")}
        return _PROPAGATOR.extract(carrier, context=otel_context.Context())
    except Exception as exc:  # noqa: BLE001
        _warn("extract", exc)
        return otel_context.Context()


def trace_headers(span: Any) -> list[tuple[str, bytes]]:
    """``traceparent`` (and ``tracestate``) for an output record, from ``span``'s context."""
    try:
        if span is None or not span.get_span_context().is_valid:
            return []
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        return [(k, v.encode("ascii")) for k, v in sorted(carrier.items())]
    except Exception as exc:  # noqa: BLE001
        _warn("inject", exc)
        return []


def start_span(name: str, *, parent: Any = None, attributes: Mapping[str, Any] | None = None,
               links: Sequence[Any] = (), kind: SpanKind = SpanKind.INTERNAL) -> Any:
    """Start a span (not made current); None if telemetry failed. ``parent`` is an OTel context."""
    try:
        return tracer().start_span(name, context=parent, kind=kind, attributes=dict(attributes or {}),
                                   links=list(links), record_exception=False, set_status_on_exception=False)
    except Exception as exc:  # noqa: BLE001
        _warn("start_span", exc)
        return None


def end_span(span: Any, *, attributes: Mapping[str, Any] | None = None, error: str | None = None) -> None:
    """Set attributes and end. ``error`` is an exception type name or code, never a message."""
    if span is None:
        return
    try:
        if attributes:
            span.set_attributes(dict(attributes))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()
    except Exception as exc:  # noqa: BLE001
        _warn("end_span", exc)


def link_to(ctx: Any) -> Any:
    """A link to the span in an extracted context, or None when it carries none."""
    try:
        sc = trace.get_current_span(ctx).get_span_context()
        return Link(sc) if sc.is_valid else None
    except Exception:  # noqa: BLE001
        return None


@contextmanager
def batch_span(n_records: int, topics: Sequence[str], input_contexts: Sequence[Any]) -> Iterator[Any]:
    """Current span over one micro-batch, ``process <topic>`` by the messaging conventions, linked to (up to
    MAX_LINKS) input contexts."""
    links = [lk for lk in (link_to(c) for c in input_contexts[:MAX_LINKS]) if lk is not None]
    names = sorted(set(topics))
    span = start_span(f"process {names[0]}" if len(names) == 1 else "process", kind=SpanKind.CONSUMER, links=links,
                      attributes={
        "messaging.system": "kafka", "messaging.operation.type": "process", "messaging.operation.name": "process",
        "messaging.batch.message_count": n_records, "messaging.destination.name": ",".join(names),
    })
    t0 = time.perf_counter()
    try:
        with _as_current(span):
            yield span
    finally:
        record_batch_s(time.perf_counter() - t0)


@contextmanager
def command_span(command: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """Current span over a file command's run (``deidstream detect`` / ``deid`` / ``eval``); status ERROR with the
    exception type when it raises."""
    with _as_current(start_span(f"deidstream {command}", attributes=dict(attributes or {}))) as span:
        yield span


@contextmanager
def _as_current(span: Any) -> Iterator[Any]:
    """``span`` (None: telemetry off) current over the body and ended after it, status ERROR with the exception type
    when the body raises; a failure to attach it is warned about, never raised."""
    token = None
    try:
        if span is not None:
            token = otel_context.attach(trace.set_span_in_context(span))
    except Exception as exc:  # noqa: BLE001
        _warn("attach", exc)
    error: str | None = None
    try:
        yield span
    except BaseException as exc:
        error = type(exc).__name__
        raise
    finally:
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception:  # noqa: BLE001
                pass
        end_span(span, error=error)


def mark_error(span: Any, code: str) -> None:
    """Span status ERROR with ``code`` (an error code or exception type, never a message)."""
    if span is None:
        return
    try:
        span.set_status(Status(StatusCode.ERROR, code))
    except Exception as exc:  # noqa: BLE001
        _warn("status", exc)


class TracedProcessor:
    """Wraps a processor: a span per ``process_batch`` call with counts and labels, and the stage
    latency histogram. Exceptions pass through unchanged (the Pipeline isolates the failing note)."""

    def __init__(self, inner: Processor) -> None:
        self.inner = inner
        self.name = inner.name

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        dropped_in = sum(len(n.dropped) for n in notes)
        span = start_span(f"deid.step.{self.name}", attributes={
            "deid.step": self.name, "deid.notes": len(notes),
            "deid.spans_in": sum(len(n.spans) for n in notes),
        })
        t0 = time.perf_counter()
        try:
            out = self.inner.process_batch(notes)
        except BaseException as exc:
            end_span(span, error=type(exc).__name__)
            raise
        seconds = time.perf_counter() - t0
        labels: Counter[str] = Counter()
        dropped = 0
        try:
            labels = Counter(str(s.label) for n in out for s in n.spans)
            # this step's own drops: what it added to the notes' dropped candidates (not the running total)
            dropped = max(0, sum(len(n.dropped) for n in out) - dropped_in)
        except Exception as exc:  # noqa: BLE001
            _warn("step counts", exc)
        if span is not None:
            try:
                attrs: dict[str, Any] = {
                    "deid.spans_out": sum(labels.values()), "deid.dropped": dropped,
                    "deid.errors": sum(1 for n in out if n.error is not None),
                }
                leaks = [n.leak for n in out if n.leak is not None]
                if leaks:
                    attrs["deid.leaks"] = sum(1 for x in leaks if x)
                end_span(span, attributes=attrs)
            except Exception as exc:  # noqa: BLE001
                _warn("step attributes", exc)
        record_step(self.name, seconds, labels, dropped)
        return out


def traced(pipeline: Pipeline) -> Pipeline:
    """The same pipeline with every processor wrapped in :class:`TracedProcessor`."""
    wrapped: list[Processor] = [p if isinstance(p, TracedProcessor) else TracedProcessor(p)
                                for p in pipeline.processors]
    return Pipeline(wrapped, pipeline.config)


# -- metrics ---------------------------------------------------------------------------------------------------


class _Instruments:
    def __init__(self, meter: Any) -> None:
        self.notes = meter.create_counter("deid.notes", unit="{note}", description="notes by outcome")
        self.dlq = meter.create_counter("deid.dlq", unit="{note}", description="dead-lettered inputs by code")
        self.quarantine = meter.create_counter("deid.quarantine", unit="{note}",
                                               description="notes held back by the leak check")
        self.llm = meter.create_counter("deid.llm.notes", unit="{note}",
                                        description="notes by LLM pass outcome (ok, skipped, failed) and reason code")
        self.spans = meter.create_counter("deid.spans", unit="{span}",
                                          description="spans a step put out, by step and label")
        self.dropped = meter.create_counter("deid.dropped", unit="{span}",
                                            description="candidate spans a step itself dropped, by step")
        self.step = meter.create_histogram("deid.step.duration", unit="s",
                                           description="time of one pipeline step over one micro-batch")
        self.batch = meter.create_histogram("deid.batch.duration", unit="s", description="micro-batch time")
        self.latency = meter.create_histogram("deid.note.latency", unit="s",
                                              description="input record timestamp to output acknowledged")
        self.lag = meter.create_observable_gauge(
            "deid.consumer.lag", callbacks=[_observe_lag], unit="{record}",
            description="records of an input partition not yet committed by this worker's group")


def _observe_lag(options: Any) -> Iterable[Any]:
    """Gauge callback (the metric reader's thread): one observation per partition this worker owns."""
    from opentelemetry.metrics import Observation

    source = _lag_source
    if source is None:
        return []
    try:
        return [Observation(lag, {"messaging.destination.name": topic,
                                  "messaging.destination.partition.id": str(partition),
                                  "messaging.consumer.group.name": _lag_group})
                for (topic, partition), lag in sorted(source().items())]
    except Exception as exc:  # noqa: BLE001
        _warn("lag gauge", exc)
        return []


def observe_consumer_lag(source: Callable[[], Mapping[tuple[str, int], int]], *, group: str) -> None:
    """Export ``source()`` (consumer lag by topic partition) as the ``deid.consumer.lag`` gauge."""
    global _lag_source, _lag_group
    _lag_source, _lag_group = source, group
    _inst()  # the gauge exists from now on (its callback reads the source at each export)


def _inst() -> _Instruments | None:
    global _instruments
    if _instruments is None:
        try:
            provider = _meter_provider if _meter_provider is not None else metrics.get_meter_provider()
            _instruments = _Instruments(provider.get_meter(INSTRUMENTATION))
        except Exception as exc:  # noqa: BLE001
            _warn("instruments", exc)
            return None
    return _instruments


def count_outcome(outcome: str, *, code: str | None = None) -> None:
    """Count one note: outcome is ``deid``, ``quarantine`` or ``dlq`` (``code`` for the DLQ)."""
    inst = _inst()
    if inst is None:
        return
    try:
        inst.notes.add(1, {"outcome": outcome})
        if outcome == "dlq":
            inst.dlq.add(1, {"code": code or "unknown"})
        elif outcome == "quarantine":
            inst.quarantine.add(1)
    except Exception as exc:  # noqa: BLE001
        _warn("counter", exc)


def count_llm(outcome: str, *, reason: str | None = None) -> None:
    """Count one note the LLM step saw: ``outcome`` ok / skipped / failed, ``reason`` its code (never text)."""
    inst = _inst()
    if inst is None:
        return
    try:
        inst.llm.add(1, {"outcome": outcome, "reason": reason or "none"})
    except Exception as exc:  # noqa: BLE001
        _warn("counter", exc)


def record_step(step: str, seconds: float, labels: Mapping[str, int], dropped: int) -> None:
    """One step over one batch: its duration, the spans it put out by label, the candidates it dropped."""
    inst = _inst()
    if inst is None:
        return
    try:
        inst.step.record(seconds, {"deid.step": step})
        for label, n in sorted(labels.items()):
            inst.spans.add(n, {"deid.step": step, "deid.label": label})
        if dropped:
            inst.dropped.add(dropped, {"deid.step": step})
    except Exception as exc:  # noqa: BLE001
        _warn("step metrics", exc)


def record_batch_s(seconds: float) -> None:
    inst = _inst()
    if inst is not None:
        try:
            inst.batch.record(seconds)
        except Exception as exc:  # noqa: BLE001
            _warn("histogram", exc)


def record_latency_s(seconds: float) -> None:
    inst = _inst()
    if inst is not None:
        try:
            inst.latency.record(seconds)
        except Exception as exc:  # noqa: BLE001
            _warn("histogram", exc)
