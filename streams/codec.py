"""Kafka records <-> notes: input detection (JSON NoteIn or raw HL7 v2), decoding, output records and
dead letters. Pure functions; no Kafka client here.

Input format: header ``deid-format`` (``json`` | ``hl7``) or ``content-type`` (``application/json``,
``application/hl7-v2`` / ``x-application/hl7-v2+er7``) when present, else the content: a JSON object
starts with ``{``, an HL7 message with ``MSH`` (BOM, whitespace and MLLP framing allowed).

Error codes added here (``InputError``; reasons name sizes, codes and offsets, never content):

====  ========================================================================================
E120  empty record value (tombstone or zero bytes)
E121  record larger than ``worker.max_note_bytes``
E122  the note's text is empty or whitespace only
E123  neither JSON nor HL7 v2 (by header or content)
E420  the worker could not encode a processed note (``ProcessingError``)
E421  the pipeline failed on a whole batch and on the note alone (``ProcessingError``)
E422  the note ran over the per-note time budget ``worker.note_timeout_s`` (``NoteTimeout``, set by the worker)
====  ========================================================================================

JSON decoding reuses ``schemas.readers.parse_json_note`` (E101-E104) and HL7 ``schemas.hl7.parse_hl7``
(E101, E2xx). JSON is read and written with orjson (``json_bytes``; gain measured by ``scripts/bench_codec.py``).
"""

from __future__ import annotations

import base64
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from processors.pipeline import PIPELINE_VERSION, Note
from schemas.errors import DeidError, InputError
from schemas.models import DeadLetter, NoteIn, Versions

logger = logging.getLogger(__name__)

Format = Literal["json", "hl7"]
Headers = tuple[tuple[str, bytes], ...]

FORMAT_HEADER = "deid-format"
NOTE_ID_HEADER = "deid-note-id"
SOURCE_HEADER = "deid-source"  # "topic:partition:offset" of the input record (lineage, not PHI)
_JSON_TYPES = ("application/json", "application/x-ndjson", "text/json")
_HL7_TYPES = ("application/hl7-v2", "x-application/hl7-v2+er7", "application/edi-hl7", "text/hl7")


@dataclass(frozen=True, slots=True)
class InRecord:
    """One consumed Kafka record (framework-neutral: faust events and aiokafka records map to it)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp_ms: int | None = None

    @property
    def where(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"

    def header(self, name: str) -> bytes | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


def normalize_headers(headers: Iterable[tuple[Any, Any]] | Mapping[Any, Any] | None) -> Headers:
    items = headers.items() if isinstance(headers, Mapping) else (headers or ())
    out: list[tuple[str, bytes]] = []
    for k, v in items:
        key = k.decode("latin-1") if isinstance(k, bytes | bytearray) else str(k)
        if v is None:
            continue
        out.append((key, bytes(v) if isinstance(v, bytes | bytearray) else str(v).encode("utf-8")))
    return tuple(out)


def detect_format(payload: bytes, headers: Headers = ()) -> Format:
    """``json`` or ``hl7`` from the headers, else from the content. Raises InputError E123."""
    hdr = {k.lower(): v.decode("latin-1").strip().lower() for k, v in headers}
    declared = hdr.get(FORMAT_HEADER)
    if declared in ("json", "hl7"):
        return "json" if declared == "json" else "hl7"
    ctype = hdr.get("content-type", "").split(";")[0].strip()
    if ctype in _JSON_TYPES:
        return "json"
    if ctype in _HL7_TYPES:
        return "hl7"
    head = payload[:256].lstrip(b"\xef\xbb\xbf \t\r\n\x0b")
    if head.startswith(b"{"):
        return "json"
    from schemas.hl7 import looks_like_hl7

    if looks_like_hl7(payload):
        return "hl7"
    raise InputError("record is neither a JSON object nor an HL7 v2 message", code="E123")


def decode(record: InRecord, *, max_bytes: int) -> NoteIn:
    """The NoteIn in a record. Raises InputError (or HL7ParseError) with a PHI-free message."""
    payload = record.value
    if not payload:
        raise InputError("empty record value", code="E120")
    if len(payload) > max_bytes:
        raise InputError(f"record of {len(payload)} bytes exceeds max_note_bytes={max_bytes}", code="E121")
    fmt = detect_format(payload, record.headers)
    from schemas.readers import check_note

    if fmt == "json":
        from schemas.readers import parse_json_note

        note = parse_json_note(payload)
    else:
        from schemas.hl7 import parse_hl7

        hint = record.header(NOTE_ID_HEADER)
        fallback = hint.decode("utf-8", "replace") if hint else f"{record.topic}-{record.partition}-{record.offset}"
        note = parse_hl7(payload, note_id=fallback)
    return check_note(note)  # the same checks as a note read from a file


# -- outputs -----------------------------------------------------------------------------------------------


def version_headers(versions: Versions) -> list[tuple[str, bytes]]:
    out = [("deid-pipeline-version", versions.pipeline.encode()),
           ("deid-config-hash", versions.config_hash.encode())]
    if versions.model:
        out.append(("deid-model-id", versions.model.encode()))
    if versions.profile:
        out.append(("deid-profile", versions.profile.encode()))
    if versions.llm_model:
        out.append(("deid-llm-model", versions.llm_model.encode()))
    if versions.llm_prompt:
        out.append(("deid-llm-prompt", versions.llm_prompt.encode()))
    if versions.dictionaries:
        out.append(("deid-dictionary-versions",
                    json_bytes(versions.dictionaries, sort_keys=True)))
    return out


def json_bytes(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON (orjson: the per-message encoder). Same JSON values as ``json.dumps(value,
    separators=(",", ":"))``; non-ASCII text is written as UTF-8 rather than ``\\u`` escapes, non-string keys become
    strings as ``json`` makes them, and a NaN or infinite float becomes ``null`` (``json`` writes ``NaN``, which is
    not JSON)."""
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    return orjson.dumps(value, option=option)


def metrics_value(note: Note, versions: Versions | None = None) -> bytes:
    """The ``notes.metrics`` record value: ``metrics_payload`` as compact JSON."""
    return json_bytes(metrics_payload(note, versions))


def metrics_payload(note: Note, versions: Versions | None = None) -> dict[str, Any]:
    """Per-note metrics for ``notes.metrics`` (counts, leak flag, stage times, versions; no text).

    ``spans`` are ``[start, end, label, source]`` in ORIGINAL offsets so replays can be compared
    span by span. ``metrics`` is the note's ``schemas.metrics.NoteMetrics`` when the metrics step ran."""
    stage_ms = {name: round(ms, 3) for name, ms in note.stage_ms}
    payload: dict[str, Any] = {
        "note_pseudonym": note.note_pseudonym,
        "patient_pseudonym": note.patient_pseudonym,
        "source_format": note.input.source_format,
        "message_type": note.input.message_type,
        "chars": len(note.text),
        "n_spans": len(note.spans),
        "by_label": dict(sorted(Counter(str(s.label) for s in note.spans).items())),
        "by_source": dict(sorted(Counter(s.source for s in note.spans).items())),
        "n_dropped": len(note.dropped),
        "dropped_by_source": dict(sorted(Counter(s.source for s in note.dropped).items())),
        "spans": [[s.start, s.end, str(s.label), s.source] for s in note.spans],
        "leak": note.leak,
        "leak_findings": [{"kind": f.kind, "label": f.label} for f in note.leak_findings],
        "stage_ms": stage_ms,
        "total_ms": round(sum(stage_ms.values()), 3),
        "versions": versions.model_dump(mode="json") if versions is not None else None,
    }
    if note.metrics is not None:
        m = note.metrics
        payload["metrics"] = m.model_dump(mode="json") if hasattr(m, "model_dump") else m
    return payload


def leak_findings_header(note: Note) -> bytes:
    """Offsets (into the output) and labels of the leak findings: where to look, not what."""
    return json_bytes([{"kind": f.kind, "label": f.label, "out_start": f.out_start, "out_end": f.out_end}
                       for f in note.leak_findings])


def safe_reason(exc: BaseException, stage: str) -> tuple[str, str, str]:
    """``(code, error_type, reason)`` for a DLQ record. Coded errors carry PHI-free messages by contract;
    any other exception is reported by type only (its message could hold note text)."""
    if isinstance(exc, DeidError):
        return exc.code, type(exc).__name__, exc.reason
    code = "E421" if stage == "pipeline" else "E420" if stage == "encode" else "E100"
    return code, type(exc).__name__, f"{stage} raised {type(exc).__name__}"


def dead_letter(
    record: InRecord, *, code: str, error_type: str, reason: str, stage: str, max_payload_bytes: int,
) -> DeadLetter:
    payload = record.value or b""
    keep = len(payload) <= max_payload_bytes
    if not keep:
        reason = f"{reason} (raw payload of {len(payload)} bytes not copied; see topic/partition/offset)"
    return DeadLetter(
        code=code, error_type=error_type, reason=reason, topic=record.topic, partition=record.partition,
        offset=record.offset, stage=stage,
        payload_b64=base64.b64encode(payload).decode("ascii") if keep and payload else None,
        pipeline_version=PIPELINE_VERSION,
    )


def source_header(record: InRecord) -> tuple[str, bytes]:
    return (SOURCE_HEADER, record.where.encode())


def passthrough_headers(record: InRecord, drop: Sequence[str] = ("traceparent", "tracestate")) -> list[
        tuple[str, bytes]]:
    """Input headers kept on quarantine records (the trace headers are replaced by ours)."""
    return [(k, v) for k, v in record.headers if k.lower() not in drop]


# -- inputs for notes.raw (produce helper, demo) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RawRecord:
    """A record to publish on ``notes.raw``: the value exactly as read, keyed by patient when known."""

    key: bytes | None
    value: bytes
    headers: Headers = ()


def _patient_key_json(line: bytes) -> bytes | None:
    try:
        data = orjson.loads(line)
        return NoteIn.model_validate(data).patient_key.encode() if isinstance(data, dict) else None
    except Exception:  # noqa: BLE001 - an unparseable line is published as is (the worker dead-letters it)
        return None


def _patient_key_hl7(message: bytes) -> bytes | None:
    from schemas.hl7 import parse_hl7

    try:
        note = parse_hl7(message, note_id="produce")
    except Exception:  # noqa: BLE001
        return None
    key = note.patient.key if note.patient is not None else None
    return key.encode() if key else None


def records_from_path(path: Path) -> list[RawRecord]:
    """One record per note or message that ``schemas.readers.iter_raw`` finds in ``path`` (the CLI's reader:
    a JSONL file one per line, a JSON file one note or an array of notes, an HL7 file one or more messages,
    or a folder of them, recursively, sorted). The value is the item's bytes, unparsed: a malformed note is
    published as is and the worker dead-letters it. Keys: the note's patient key (its note id when it names
    no patient), none for a note that does not parse. HL7 records carry the reader's fallback note id
    (``deid-note-id``: the file stem, ``-n`` for several messages).
    Files that give no record (missing path, an HL7 file without a message) are logged and skipped."""
    from schemas.readers import InputFailure, iter_raw

    out: list[RawRecord] = []
    for item in iter_raw(path):
        if isinstance(item, InputFailure):
            logger.warning("skipped %s ([%s] %s)", item.where, item.code, item.reason)
        elif item.format == "json":
            out.append(RawRecord(_patient_key_json(item.raw), item.raw, ((FORMAT_HEADER, b"json"),)))
        else:
            headers: Headers = ((FORMAT_HEADER, b"hl7"),)
            if item.fallback_id:
                headers += ((NOTE_ID_HEADER, item.fallback_id.encode("utf-8")),)
            out.append(RawRecord(_patient_key_hl7(item.raw), item.raw, headers))
    return out


def new_traceparent() -> str:
    """A fresh W3C traceparent (sampled) for a record that starts a trace."""
    import secrets

    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
