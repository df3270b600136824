"""Batch handling, independent of the Kafka client: decode -> pipeline (in a worker thread) -> encode ->
send -> wait for the broker's acknowledgements. The faust agent (streams.app) and replay (streams.replay)
both drive a :class:`BatchProcessor` through :func:`run_batch`.

Each input record ends in exactly one of ``deid`` (+ ``metrics``), ``quarantine`` (+ ``metrics``) or
``dlq``. Failures are data: nothing here raises for a bad note. :func:`run_batch` returns only once every
output of the batch is acknowledged, so the caller may then advance the offsets (at-least-once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from processors import budget
from processors.pipeline import Note, NoteError, Pipeline
from schemas.errors import ConfigError, NoteTimeout
from schemas.models import NoteIn
from streams import telemetry
from streams.codec import (
    InRecord,
    dead_letter,
    decode,
    leak_findings_header,
    metrics_value,
    passthrough_headers,
    safe_reason,
    source_header,
    version_headers,
)

logger = logging.getLogger(__name__)

Role = Literal["deid", "metrics", "quarantine", "dlq"]
Kind = Literal["deid", "quarantine", "dlq"]
HeaderList = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class OutRecord:
    """A record to produce; ``role`` names the topic (settings.topics.<role>)."""

    role: Role
    key: bytes | None
    value: bytes
    headers: HeaderList = ()


@dataclass(slots=True)
class Outcome:
    """What became of one input record."""

    record: InRecord
    kind: Kind
    outputs: list[OutRecord]
    code: str | None = None
    note_pseudonym: str | None = None
    span: Any = None
    #: the LLM step's (status, reason) for this note; None without that step
    llm: tuple[str, str | None] | None = None


@dataclass(slots=True)
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def outputs(self) -> list[OutRecord]:
        return [o for oc in self.outcomes for o in oc.outputs]

    def count(self, kind: Kind) -> int:
        return sum(1 for oc in self.outcomes if oc.kind == kind)


class BatchProcessor:
    """Synchronous batch step (safe to run in a worker thread): records in, output records out."""

    def __init__(self, pipeline: Pipeline, *, max_note_bytes: int = 1024 * 1024,
                 dlq_max_payload_bytes: int = 8 * 1024 * 1024, note_timeout_s: float | None = None) -> None:
        if "transform" not in pipeline.step_names:
            raise ConfigError("the worker needs a transform step: without it the raw text would be published")
        if "leakcheck" not in pipeline.step_names:
            logger.warning("no leakcheck step: notes are published without a leak check")
        self.pipeline = telemetry.traced(pipeline)
        self.versions = pipeline.versions()
        self.mode = str(pipeline.config.options.get("transform", {}).get("mode", "tag"))
        self.max_note_bytes = max_note_bytes
        self.dlq_max_payload_bytes = dlq_max_payload_bytes
        #: per-note time budget (None: none); see :meth:`_run_pipeline`
        self.note_timeout_s = note_timeout_s
        self._version_headers = tuple(version_headers(self.versions))

    # -- the batch ------------------------------------------------------------------------------------------

    def process(self, records: Sequence[InRecord], progress: Callable[[], None] | None = None) -> BatchResult:
        """Decode, run the pipeline once over the decodable notes, encode. Never raises for a note.
        ``progress`` is called whenever a note's own time budget starts (liveness counts from there)."""
        contexts = [telemetry.extract_context(r.headers) for r in records]
        with telemetry.batch_span(len(records), [r.topic for r in records], contexts):
            spans = [telemetry.start_span("deid.note", parent=ctx, links=_links(), attributes={
                "messaging.system": "kafka", "messaging.operation.type": "process", "messaging.destination.name": r.topic,
                "messaging.destination.partition.id": str(r.partition), "messaging.kafka.offset": r.offset,
                "deid.bytes": len(r.value or b""),
            }) for r, ctx in zip(records, contexts, strict=True)]
            outcomes: list[Outcome | None] = [None] * len(records)
            inputs: list[NoteIn] = []
            index: list[int] = []
            for i, rec in enumerate(records):
                try:
                    inputs.append(decode(rec, max_bytes=self.max_note_bytes))
                    index.append(i)
                except Exception as exc:  # noqa: BLE001 - every failure becomes a dead letter
                    outcomes[i] = self._dlq(rec, exc, "decode", spans[i])
            notes = self._run_pipeline(inputs, progress)
            for i, note in zip(index, notes, strict=True):
                outcomes[i] = self._encode(records[i], note, spans[i])
        result = BatchResult([oc for oc in outcomes if oc is not None])
        if len(result.outcomes) != len(records):  # cannot happen; never drop silently if it does
            raise RuntimeError("batch lost records")
        return result

    def _run_pipeline(self, inputs: list[NoteIn], progress: Callable[[], None] | None = None) -> list[Note]:
        """The pipeline over the batch; on a failure, or past the time budget, note by note.

        Time budget (``note_timeout_s``): the whole batch first runs under ONE note's budget (a batch of ordinary
        notes takes a small part of it). Past it, each note runs alone under its own budget, and a note that
        runs over it becomes an E422 dead letter while the others go on. A note alone in its batch is not run a
        second time. So a slow note holds its partition for at most about two budgets (more only with several
        slow notes in one batch), and ``progress`` marks the start of each note's own budget for liveness."""
        if not inputs:
            return []
        try:
            with budget.deadline(self.note_timeout_s):
                return self.pipeline.run(inputs)
        except NoteTimeout as exc:
            logger.warning("a batch of %d ran over the time budget of %g s (step %s); running its notes one by "
                           "one", len(inputs), exc.budget_s, exc.stage)
            if len(inputs) == 1:
                return [self._timed_out(inputs[0], exc)]
        except Exception as exc:  # noqa: BLE001 - the Pipeline isolates processor errors; this is a backstop
            logger.error("pipeline failed on a batch of %d (%s); retrying note by note", len(inputs),
                         type(exc).__name__)
        out: list[Note] = []
        for n in inputs:
            if progress is not None:
                progress()
            try:
                with budget.deadline(self.note_timeout_s):
                    (note,) = self.pipeline.run([n])
            except NoteTimeout as exc:
                note = self._timed_out(n, exc)
            except Exception as exc:  # noqa: BLE001
                code, etype, reason = safe_reason(exc, "pipeline")
                note = Note(input=n, error=NoteError(code=code, error_type=etype, stage="pipeline", reason=reason))
            out.append(note)
        return out

    @staticmethod
    def _timed_out(n: NoteIn, exc: NoteTimeout) -> Note:
        return Note(input=n, error=NoteError(code=exc.code, error_type=type(exc).__name__,
                                             stage=exc.stage or "pipeline", reason=exc.reason))

    def _encode(self, rec: InRecord, note: Note, span: Any) -> Outcome:
        if note.error is not None:
            err = note.error
            return self._dead(rec, err.code, err.error_type, err.reason, err.stage, span)
        try:
            from processors.transform.step import build_output

            trace = tuple(telemetry.trace_headers(span))
            meta = self._version_headers + trace + (source_header(rec),)
            pseudonym = (note.note_pseudonym or "").encode() or None
            metrics = OutRecord("metrics", pseudonym,
                                metrics_value(note, self.versions),
                                meta + (("content-type", b"application/json"),))
            if note.leak:
                headers = (tuple(passthrough_headers(rec)) + meta
                           + (("deid-reason", b"leak"), ("deid-leak-findings", leak_findings_header(note))))
                if pseudonym:
                    headers += (("deid-note-pseudonym", pseudonym),)
                outs = [OutRecord("quarantine", rec.key, rec.value or b"", headers), metrics]
                kind: Kind = "quarantine"
            else:
                clean = build_output(note, mode=self.mode, versions=self.versions)
                outs = [OutRecord("deid", clean.note_pseudonym.encode(), clean.model_dump_json().encode(),
                                  meta + (("content-type", b"application/json"),)), metrics]
                kind = "deid"
        except Exception as exc:  # noqa: BLE001
            return self._dlq(rec, exc, "encode", span)
        llm = note.extra.get("llm")  # the llm step's LLMOutcome (status and a reason code; no text)
        status = getattr(llm, "status", None)
        llm_outcome = (str(status), getattr(llm, "reason", None)) if status else None
        if span is not None:
            try:
                attrs: dict[str, str | int | bool] = {"deid.outcome": kind, "deid.spans": len(note.spans),
                                                      "deid.leak": bool(note.leak)}
                if llm_outcome is not None:
                    attrs["deid.llm"] = llm_outcome[0] + (f":{llm_outcome[1]}" if llm_outcome[1] else "")
                span.set_attributes(attrs)
            except Exception:  # noqa: BLE001
                pass
        return Outcome(rec, kind, outs, note_pseudonym=note.note_pseudonym, span=span, llm=llm_outcome)

    def _dlq(self, rec: InRecord, exc: BaseException, stage: str, span: Any) -> Outcome:
        code, etype, reason = safe_reason(exc, stage)
        return self._dead(rec, code, etype, reason, stage, span)

    def _dead(self, rec: InRecord, code: str, etype: str, reason: str, stage: str, span: Any) -> Outcome:
        letter = dead_letter(rec, code=code, error_type=etype, reason=reason, stage=stage,
                             max_payload_bytes=self.dlq_max_payload_bytes)
        logger.warning("dead-lettered %s: %s %s at stage %s", rec.where, code, etype, stage)
        headers = (self._version_headers + tuple(telemetry.trace_headers(span))
                   + (source_header(rec), ("deid-error-code", code.encode()), ("content-type", b"application/json")))
        if span is not None:
            try:
                span.set_attributes({"deid.outcome": "dlq", "deid.error_code": code, "deid.error_type": etype})
            except Exception:  # noqa: BLE001
                pass
            telemetry.mark_error(span, code)
        return Outcome(rec, "dlq", [OutRecord("dlq", rec.key, letter.model_dump_json().encode(), headers)], code=code,
                       span=span)


def _links() -> list[Any]:
    """The note span links to the batch span (the current span in this thread)."""
    from opentelemetry import trace

    try:
        sc = trace.get_current_span().get_span_context()
        return [trace.Link(sc)] if sc.is_valid else []
    except Exception:  # noqa: BLE001
        return []


# -- async side -------------------------------------------------------------------------------------------------


class Sender(Protocol):
    """Enqueue one record; the returned awaitable resolves when the broker acknowledged it."""

    async def send(self, out: OutRecord) -> Awaitable[Any]: ...


class DeliveryError(RuntimeError):
    """Outputs could not be acknowledged within ``send_timeout_s``: the batch must not be committed."""


async def deliver(outputs: Sequence[OutRecord], sender: Sender, *, timeout_s: float) -> None:
    """Send in order and wait for every acknowledgement; resend failures with backoff until ``timeout_s``."""
    pending = list(outputs)
    deadline = time.monotonic() + timeout_s
    delay = 0.2
    while pending:
        futures: list[Any] = []
        for out in pending:
            try:
                futures.append(await sender.send(out))
            except Exception as exc:  # noqa: BLE001 - enqueue failure: retried below
                futures.append(exc)
        results = await asyncio.gather(
            *[f if not isinstance(f, BaseException) else _raise(f) for f in futures], return_exceptions=True)
        failed = [o for o, r in zip(pending, results, strict=True) if isinstance(r, BaseException)]
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("acks %s", [f"{getattr(r, 'topic', r)}:{getattr(r, 'partition', '')}:{getattr(r, 'offset', '')}"
                                     for r in results])
        if not failed:
            return
        kinds = sorted({type(r).__name__ for r in results if isinstance(r, BaseException)})
        if time.monotonic() + delay > deadline:
            raise DeliveryError(f"{len(failed)} outputs not acknowledged ({', '.join(kinds)})")
        logger.warning("%d outputs not acknowledged (%s); retrying in %.1fs", len(failed), ", ".join(kinds), delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)
        pending = failed


async def _raise(exc: BaseException) -> None:
    raise exc


async def finish_batch(result: BatchResult, sender: Sender, *, send_timeout_s: float = 120.0) -> None:
    """Send a processed batch's outputs and wait for every acknowledgement; then count and end its spans."""
    t0 = time.perf_counter()
    await deliver(result.outputs, sender, timeout_s=send_timeout_s)
    now_ms = time.time() * 1000.0
    for oc in result.outcomes:
        telemetry.count_outcome(oc.kind, code=oc.code)
        if oc.llm is not None:
            telemetry.count_llm(oc.llm[0], reason=oc.llm[1])
        if oc.record.timestamp_ms:
            telemetry.record_latency_s(max(0.0, now_ms - oc.record.timestamp_ms) / 1000.0)
        telemetry.end_span(oc.span)
    logger.debug("batch of %d: deid=%d quarantine=%d dlq=%d; delivered in %.0f ms", len(result.outcomes),
                 result.count("deid"), result.count("quarantine"), result.count("dlq"),
                 (time.perf_counter() - t0) * 1000)


async def process_batch(processor: BatchProcessor, records: Sequence[InRecord],
                        progress: Callable[[], None] | None = None) -> BatchResult:
    """The synchronous batch step in a worker thread (never on the event loop)."""
    t0 = time.perf_counter()
    result = await asyncio.to_thread(processor.process, records, progress)
    logger.debug("batch of %d processed in %.0f ms", len(records), (time.perf_counter() - t0) * 1000)
    return result


async def run_batch(processor: BatchProcessor, records: Sequence[InRecord], sender: Sender, *,
                    send_timeout_s: float = 120.0) -> BatchResult:
    """Process a batch in a worker thread, send its outputs, return once all are acknowledged."""
    result = await process_batch(processor, records)
    await finish_batch(result, sender, send_timeout_s=send_timeout_s)
    return result
