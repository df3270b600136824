"""The worker against the real embedded broker: end to end (JSON and HL7), dead letters, quarantine,
kill -9 / SIGTERM without loss, trace propagation, and no identifiers in logs, spans or DLQ reasons."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from stream_helpers import LIGHT_STEPS, Outputs, WorkerProc, committed_offsets, header, read_outputs, wait_for

from streams.broker import EmbeddedBroker, consumer_kwargs, create_topics, produce
from streams.codec import FORMAT_HEADER, SOURCE_HEADER, RawRecord
from streams.settings import KafkaSettings, TopicSettings

pytestmark = pytest.mark.integration

HL7_FIXTURE = Path(__file__).resolve().parents[1] / "data" / "hl7" / "mdm_t02_discharge.hl7"
#: The HL7 fixture's identifiers that its narrative repeats (name, MRN, phone).
HL7_IDENTIFIERS = ("Quillon", "Marisol", "MRN4471902", "555-0143")
JSON_IDENTIFIERS = ("Zebulon", "Quackenbush", "MRN-77341920", "617-555-0142")
JSON_NOTE = {
    "id": "note-zq-1",
    "text": ("Zebulon Quackenbush (MRN-77341920) was seen on 03/14/2024 for follow-up of CHF. "
             "Call 617-555-0142 with questions. Continue furosemide 40 mg daily."),
    "patient": {"mrn": "MRN-77341920", "names": [{"family": "Quackenbush", "given": "Zebulon"}],
                "phones": ["617-555-0142"]},
}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"


def _publish(kafka: KafkaSettings, topic: str, records: list[RawRecord]) -> list[str]:
    placed = asyncio.run(produce(kafka, topic, records))
    return [f"{topic}:{p}:{o}" for p, o, _ in placed]


def _assert_no_identifiers(texts: dict[str, str], identifiers: tuple[str, ...]) -> None:
    for where, text in texts.items():
        for ident in identifiers:
            assert ident not in text, f"identifier found in {where}"


def _spans_by_id(path: Path) -> dict[str, dict[str, Any]]:
    spans: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        data = json.loads(line)
        if "context" in data and "name" in data:
            spans[data["context"]["span_id"].removeprefix("0x")] = data
    return spans


@pytest.mark.slow
def test_when_json_and_hl7_notes_are_published_then_clean_notes_and_metrics_arrive(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any, tmp_path: Path,
) -> None:
    spans_file = tmp_path / "otel.jsonl"
    worker: WorkerProc = start_worker(DEID_TELEMETRY__EXPORTER="console",
                                      DEID_TELEMETRY__CONSOLE_PATH=str(spans_file))
    traceparent = f"00-{TRACE_ID}-{PARENT_SPAN}-01"
    sources = _publish(kafka, topics.raw, [
        RawRecord(b"MRN-77341920", json.dumps(JSON_NOTE).encode(), (("traceparent", traceparent.encode()),)),
        RawRecord(b"MRN4471902", HL7_FIXTURE.read_bytes(), ()),  # no header: detected by content
    ])
    out = wait_for(kafka, topics, lambda o: len(o.deid) >= 2 and len(o.metrics) >= 2, timeout_s=150,
                   worker=worker)
    assert worker.terminate() == 0

    assert out.sources("deid") == set(sources) and not out.dlq and not out.quarantine
    by_source = {header(r, SOURCE_HEADER): r for r in out.deid}
    for src, fmt in zip(sources, ("json", "hl7"), strict=True):
        rec = by_source[src]
        note = json.loads(rec.value)
        assert rec.key.decode() == note["note_pseudonym"]
        assert note["source_format"] == fmt and note["spans"]
        _assert_no_identifiers({"deid text": note["text"]}, JSON_IDENTIFIERS + HL7_IDENTIFIERS)
        for name in ("deid-pipeline-version", "deid-config-hash", "deid-dictionary-versions", "traceparent"):
            assert header(rec, name), name
    metrics = [json.loads(r.value) for r in out.metrics]
    assert all(m["n_spans"] > 0 and "NAME" in m["by_label"] and m["leak"] is False for m in metrics)

    # trace: the output's traceparent continues the input's trace, from a span whose parent is the input's
    out_tp = header(by_source[sources[0]], "traceparent") or ""
    _, out_trace, out_span, _ = out_tp.split("-")
    assert out_trace == TRACE_ID and out_span != PARENT_SPAN
    spans = _spans_by_id(spans_file)
    assert spans[out_span]["parent_id"].removeprefix("0x") == PARENT_SPAN
    assert {f"process {topics.raw}", "deid.note", "deid.step.regex", "deid.step.transform"} <= {s["name"] for s in
                                                                                       spans.values()}
    _assert_no_identifiers({"worker log": worker.text(), "spans": spans_file.read_text()},
                           JSON_IDENTIFIERS + HL7_IDENTIFIERS + ("note-zq-1", "CTRL-20240314-0001"))


#: (input, headers, expected DLQ code). Identifiers in them must not reach reasons or logs.
BAD_INPUTS: list[tuple[str, bytes, tuple[tuple[str, bytes], ...], str]] = [
    ("malformed json", b'{"id": "bad-1", "text": "Zebulon Quackenbush', (), "E102"),
    ("json array", b'[{"id": "bad-2", "text": "Zebulon"}]', ((FORMAT_HEADER, b"json"),), "E103"),
    ("missing text", b'{"id": "bad-3", "patient": {"mrn": "MRN-77341920"}}', (), "E104"),
    ("empty text", b'{"id": "bad-4", "text": "   "}', (), "E122"),
    ("empty value", b"", (), "E120"),
    ("prose", b"Zebulon Quackenbush called 617-555-0142", (), "E123"),
    ("wrong encoding", '{"id": "bad-5", "text": "Zébulon Quackenbush"}'.encode("latin-1"), (), "E101"),
    ("broken hl7", b"MSH|^~^&|X|Y\rPID|1||MRN-77341920||Quackenbush^Zebulon\rOBX|1|TX|||Zebulon Quackenbush",
     (), "E203"),
    ("hl7 without narrative", b"MSH|^~\\&|A|B|||20240101||ADT^A01|C1|P|2.5\rPID|1||MRN-77341920||Quackenbush^Zebulon",
     (), "E210"),
    ("5 MB note", json.dumps({"id": "bad-6", "text": "Zebulon Quackenbush " * 262_144}).encode(), (), "E121"),
]


@pytest.mark.slow
def test_when_inputs_are_bad_then_each_goes_to_the_dlq_with_a_reason_and_the_worker_keeps_going(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    # no detectors: a note with patient identifiers in its text leaks, so it must be quarantined
    worker: WorkerProc = start_worker(steps=["transform", "leakcheck"])
    leaky = RawRecord(b"MRN-77341920", json.dumps(JSON_NOTE).encode(), ())
    clean = RawRecord(None, json.dumps({"id": "ok-1", "text": "Stable. Continue current medications."}).encode(), ())
    records = [RawRecord(b"MRN-77341920", value, hdrs) for _, value, hdrs, _ in BAD_INPUTS] + [leaky, clean]
    sources = _publish(kafka, topics.raw, records)
    out = wait_for(kafka, topics, lambda o: len(o.covered()) >= len(records), timeout_s=150, worker=worker)
    assert worker.proc.poll() is None, "worker died on bad input"
    assert worker.terminate() == 0

    letters = {header(r, SOURCE_HEADER): (r, json.loads(r.value)) for r in out.dlq}
    for (name, value, _, code), src in zip(BAD_INPUTS, sources, strict=False):
        rec, letter = letters[src]
        assert letter["code"] == code, name
        assert f"{letter['topic']}:{letter['partition']}:{letter['offset']}" == src
        assert letter["stage"] == "decode" and letter["reason"]
        assert base64.b64decode(letter["payload_b64"] or "") == value, name
        assert rec.key == b"MRN-77341920"
        _assert_no_identifiers({f"reason of {name}": letter["reason"]}, JSON_IDENTIFIERS + ("bad-",))

    (q,) = out.quarantine
    assert header(q, SOURCE_HEADER) == sources[-2] and q.value == leaky.value
    assert header(q, "deid-reason") == "leak"
    assert {f["label"] for f in json.loads(header(q, "deid-leak-findings") or "[]")} >= {"NAME"}
    assert out.sources("deid") == {sources[-1]}
    leak_flags = sorted(json.loads(r.value)["leak"] for r in out.metrics)
    assert leak_flags == [False, True]
    _assert_no_identifiers({"worker log": worker.text()}, JSON_IDENTIFIERS)


def _bulk_notes(n: int) -> list[RawRecord]:
    notes = []
    for i in range(n):
        mrn = f"MRN{100000 + i % 50}"
        text = (f"Follow-up visit {i}. Seen 0{1 + i % 9}/1{i % 10}/2023 for hypertension; BP 132/84. "
                f"Call 617-555-{1000 + i % 9000:04d} if symptoms recur. Continue lisinopril 10 mg daily. " * 3)
        body = {"id": f"bulk-{i}", "text": text, "patient": {"mrn": mrn}}
        notes.append(RawRecord(mrn.encode(), json.dumps(body).encode(), ((FORMAT_HEADER, b"json"),)))
    return notes


@pytest.mark.slow
def test_when_worker_is_killed_or_stopped_mid_stream_then_every_note_still_comes_out(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    n = 1000
    sources = _publish(kafka, topics.raw, _bulk_notes(n))
    env = {"DEID_WORKER__BATCH_SIZE": "25"}

    first: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)
    wait_for(kafka, topics, lambda o: len(o.covered()) >= 150, timeout_s=150, worker=first, poll_s=0.2)
    first.kill9()

    second: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)
    before = len(read_outputs(kafka, topics).covered())
    wait_for(kafka, topics, lambda o: len(o.covered()) >= min(before + 150, n - 100), timeout_s=150,
             worker=second, poll_s=0.2)
    assert second.terminate(timeout_s=60) == 0  # SIGTERM mid-stream: finishes its batch, exits cleanly
    # at-least-once: every offset below the committed one has an output
    committed = committed_offsets(kafka, topics.raw, second.group)
    covered = read_outputs(kafka, topics).covered()
    for p, upto in committed.items():
        missing = [o for o in range(upto) if f"{topics.raw}:{p}:{o}" not in covered]
        assert not missing, f"partition {p}: offsets committed without output: {missing[:5]}"

    third: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)
    out: Outputs = wait_for(kafka, topics, lambda o: set(sources) <= o.covered(), timeout_s=150, worker=third)
    third.wait_live()  # the second may have left it nothing to do: stop it once it runs, not while it loads
    assert third.terminate() == 0
    assert not out.dlq
    assert len(out.deid) + len(out.quarantine) >= n  # duplicates allowed, loss not


def test_when_embedded_broker_starts_then_topics_headers_and_groups_work_and_it_stops(tmp_path: Path) -> None:
    from aiokafka import AIOKafkaConsumer

    with EmbeddedBroker(log_path=tmp_path / "b.log") as b:
        kafka = b.kafka_settings()
        made = asyncio.run(create_topics(kafka, ["a.raw", "a.out"], partitions=3))
        assert made == ["a.raw", "a.out"]
        assert asyncio.run(create_topics(kafka, ["a.raw"], partitions=3)) == []
        placed = asyncio.run(produce(kafka, "a.raw", [RawRecord(b"k", b"v", (("x-h", b"1"),))]))

        async def consume_one() -> Any:
            c = AIOKafkaConsumer("a.raw", **consumer_kwargs(kafka), group_id="gx", auto_offset_reset="earliest",
                                 enable_auto_commit=False)
            await c.start()
            try:
                got = await c.getmany(timeout_ms=15000)
                await c.commit()
                return [r for rs in got.values() for r in rs]
            finally:
                await c.stop()

        (rec,) = asyncio.run(consume_one())
        assert (rec.partition, rec.offset) == placed[0][:2] and ("x-h", b"1") in rec.headers
        assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", header(rec, "traceparent") or "")
        proc = b.proc
    assert proc is not None and proc.poll() is not None
