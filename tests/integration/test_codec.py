"""Record decoding, routing and telemetry of the batch step, without a broker (no integration marker):
input detection, dead-letter codes and reasons, deid / quarantine / dlq routing, headers, and telemetry
failures that must not break processing."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from processors.pipeline import Pipeline, PipelineConfig
from schemas.errors import ConfigError, InputError
from schemas.models import NoteIn
from streams import telemetry
from streams.codec import (
    FORMAT_HEADER,
    SOURCE_HEADER,
    InRecord,
    decode,
    detect_format,
    json_bytes,
    metrics_payload,
    metrics_value,
    safe_reason,
)
from streams.settings import TelemetrySettings
from streams.worker import BatchProcessor

HL7 = b"MSH|^~\\&|A|B|||20240101||ORU^R01|C1|P|2.5\rPID|1||MRN-9911||Vantongeren^Rosalind\rOBX|1|TX|||Stable."
NOTE = {"id": "codec-1", "text": "Rosalind Vantongeren (MRN-9911) seen 01/02/2024, call 802-555-0199.",
        "patient": {"mrn": "MRN-9911", "names": [{"given": "Rosalind", "family": "Vantongeren"}]}}
IDENTIFIERS = ("Rosalind", "Vantongeren", "MRN-9911", "802-555-0199", "codec-1")


def rec(value: bytes | None, headers: tuple[tuple[str, bytes], ...] = (), offset: int = 7) -> InRecord:
    return InRecord("notes.raw", 2, offset, b"MRN-9911", value, headers, 1_700_000_000_000)


@pytest.mark.parametrize(("payload", "headers", "expected"), [
    (b'{"id": "x", "text": "y"}', (), "json"),
    (b'\xef\xbb\xbf  {"id": "x"}', (), "json"),
    (HL7, (), "hl7"),
    (b"\x0b" + HL7 + b"\x1c\r", (), "hl7"),
    (b"anything", ((FORMAT_HEADER, b"hl7"),), "hl7"),
    (HL7, (("Content-Type", b"application/json; charset=utf-8"),), "json"),
    (b"{}", (("content-type", b"x-application/hl7-v2+er7"),), "hl7"),
], ids=["json", "bom-json", "hl7", "mllp-hl7", "format-header", "content-type-json", "content-type-hl7"])
def test_when_input_is_detected_then_header_wins_else_content(payload: bytes, headers: Any, expected: str) -> None:
    assert detect_format(payload, headers) == expected


@pytest.mark.parametrize(("payload", "code"), [
    (None, "E120"),
    (b"", "E120"),
    (b"x" * 2048, "E121"),
    (b"plain prose about Rosalind", "E123"),
    (b'{"id": "a", "text": "Rosalind', "E102"),
    (b'{"id": "a", "text": "\xe9"}', "E101"),
    (b'{"id": "a"}', "E104"),
    (b'{"id": "a", "text": " \\n "}', "E122"),
    (b"MSH|^~\\&|A|B|||20240101||ADT^A01|C1|P|2.5\rPID|1||MRN-9911||Vantongeren^Rosalind", "E210"),
])
def test_when_input_is_bad_then_decode_raises_a_coded_phi_free_error(payload: bytes | None, code: str) -> None:
    with pytest.raises(InputError) as info:
        decode(rec(payload), max_bytes=1024)
    assert info.value.code == code
    for ident in IDENTIFIERS:
        assert ident not in str(info.value)


def test_when_hl7_has_no_control_id_then_the_record_coordinates_name_the_note() -> None:
    note = decode(rec(HL7.replace(b"|C1|", b"||"), offset=41), max_bytes=1 << 20)
    assert note.note_id == "notes.raw-2-41" and note.source_format == "hl7"


def test_when_an_unexpected_exception_is_dead_lettered_then_its_message_is_dropped() -> None:
    code, etype, reason = safe_reason(KeyError("Rosalind Vantongeren"), "encode")
    assert (code, etype) == ("E420", "KeyError") and "Rosalind" not in reason


@pytest.fixture(scope="module")
def processor() -> BatchProcessor:
    """No detector: a note whose text repeats its patient block leaks, so it is quarantined."""
    return BatchProcessor(Pipeline.from_config(PipelineConfig(steps=("transform", "leakcheck"))), max_note_bytes=4096,
                          dlq_max_payload_bytes=64)


def test_when_a_batch_mixes_clean_leaky_and_bad_records_then_each_is_routed_once(processor: BatchProcessor) -> None:
    clean = json.dumps({"id": "c2", "text": "Stable overnight. Continue current plan."}).encode()
    leaky = json.dumps(NOTE).encode()
    big_bad = b"{" + b"x" * 100  # malformed and over the 64-byte DLQ payload cap
    records = [rec(clean, offset=1), rec(leaky, ((("traceparent", b"00-" + b"a" * 32 + b"-" + b"b" * 16 + b"-01"),)),
                                          offset=2), rec(b'{"id": 1', offset=3), rec(big_bad, offset=4)]
    result = processor.process(records)
    assert [oc.kind for oc in result.outcomes] == ["deid", "quarantine", "dlq", "dlq"]
    roles = [[o.role for o in oc.outputs] for oc in result.outcomes]
    assert roles == [["deid", "metrics"], ["quarantine", "metrics"], ["dlq"], ["dlq"]]

    deid = result.outcomes[0].outputs[0]
    body = json.loads(deid.value)
    assert deid.key == body["note_pseudonym"].encode() and body["text"].startswith("Stable")
    headers = dict(deid.headers)
    assert headers[SOURCE_HEADER] == b"notes.raw:2:1" and headers["deid-config-hash"]
    assert headers["deid-pipeline-version"]

    quarantine = result.outcomes[1].outputs[0]
    assert quarantine.value == leaky and quarantine.key == b"MRN-9911"
    qh = dict(quarantine.headers)
    assert qh["deid-reason"] == b"leak" and "NAME" in {f["label"] for f in json.loads(qh["deid-leak-findings"])}
    metrics = json.loads(result.outcomes[1].outputs[1].value)
    assert metrics["leak"] is True and "text" not in metrics

    small, large = (json.loads(oc.outputs[0].value) for oc in result.outcomes[2:])
    assert small["code"] == "E102" and base64.b64decode(small["payload_b64"]) == b'{"id": 1'
    assert large["payload_b64"] is None and "not copied" in large["reason"] and large["offset"] == 4
    for oc in result.outcomes:
        for out in oc.outputs:
            if out.role in ("metrics", "dlq"):
                for ident in IDENTIFIERS:
                    assert ident.encode() not in out.value


def test_when_metrics_payload_is_built_then_it_holds_counts_and_offsets_not_text(processor: BatchProcessor) -> None:
    (note,) = processor.pipeline.run([decode(rec(json.dumps(NOTE).encode()), max_bytes=4096)])
    payload = json.dumps(metrics_payload(note, processor.versions))
    assert '"stage_ms"' in payload and '"versions"' in payload
    for ident in IDENTIFIERS:
        assert ident not in payload


def test_when_a_metrics_record_is_encoded_with_orjson_then_consumers_read_the_same_json_as_before(
    processor: BatchProcessor,
) -> None:
    (note,) = processor.pipeline.run([decode(rec(json.dumps(NOTE).encode()), max_bytes=4096)])
    value = metrics_value(note, processor.versions)
    assert json.loads(value) == json.loads(json.dumps(metrics_payload(note, processor.versions)))
    assert json.loads(value)["stage_ms"]


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [1.5, None, True, "Zoë – 東京"], "n": {"x": 0.1}},
    {1: "int keys become strings as json writes them", "t": (1, 2)},
    [{"kind": "patient_name", "label": "NAME", "out_start": 3, "out_end": 9}],
], ids=["unicode_and_floats", "non_string_keys", "leak_findings"])
def test_when_json_bytes_encodes_then_the_json_value_is_the_standard_librarys(value: Any) -> None:
    expected = json.loads(json.dumps(value, separators=(",", ":")))
    assert json.loads(json_bytes(value)) == expected
    assert json.loads(json_bytes(value, sort_keys=True)) == expected
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        assert json_bytes(value, sort_keys=True) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                                               ensure_ascii=False).encode()


def test_when_a_note_is_decoded_with_orjson_then_it_equals_the_standard_librarys_reading() -> None:
    raw = json.dumps({**NOTE, "text": "Zoë Quillon seen 3/4 – 東京"}).encode()
    assert decode(rec(raw), max_bytes=4096) == NoteIn.model_validate(json.loads(raw))


def test_when_the_pipeline_has_no_transform_then_the_worker_refuses_to_start() -> None:
    with pytest.raises(ConfigError):
        BatchProcessor(Pipeline.from_config(PipelineConfig(steps=("ensemble",))))


def test_when_the_otlp_collector_is_unreachable_then_processing_goes_on(
    processor: BatchProcessor, caplog: pytest.LogCaptureFixture,
) -> None:
    telemetry.setup(TelemetrySettings(exporter="otlp", otlp_endpoint="http://127.0.0.1:9", metrics_interval_s=0.2))
    try:
        caplog.set_level(logging.WARNING)
        result = processor.process([rec(json.dumps({"id": "t1", "text": "Doing well."}).encode())])
        assert [oc.kind for oc in result.outcomes] == ["deid"]
    finally:
        telemetry.shutdown(timeout_s=1.0)
