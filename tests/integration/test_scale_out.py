"""Scale-out on the real embedded broker: 4 partitions, workers in one consumer group, a worker added and one
SIGKILLed while 3,000 notes flow. Every input ends in exactly one of deid / quarantine / dlq (at least once),
one patient's notes come out in input order, duplicates are counted and bounded, and a note published twice
carries the same pseudonym and text both times."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import defaultdict
from typing import Any

import pytest
from stream_helpers import LIGHT_STEPS, Outputs, WorkerProc, header, read_outputs, wait_for

from streams.broker import produce
from streams.codec import FORMAT_HEADER, SOURCE_HEADER, RawRecord
from streams.settings import KafkaSettings, TopicSettings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N_NOTES = 3000
PATIENTS = 60
BATCH = 25


def _note(i: int) -> RawRecord:
    patient = i % PATIENTS
    seq = i // PATIENTS
    key = f"MRN{500000 + patient}"
    if i % 97 == 13:  # a few bad inputs: they must end in the DLQ, in order like the rest
        return RawRecord(key.encode(), b'{"id": "broken", "text": ', ((FORMAT_HEADER, b"json"),))
    text = (f"Visit {seq} of patient {patient}. Seen 0{1 + i % 9}/1{i % 10}/2023; BP 128/80. Call 617-555-"
            f"{1000 + i % 9000:04d}. Continue lisinopril 10 mg daily. " * 4)
    body = {"id": f"p{patient}-s{seq}", "text": text, "patient": {"mrn": key}}
    return RawRecord(key.encode(), json.dumps(body).encode(), ((FORMAT_HEADER, b"json"),))


class Publisher(threading.Thread):
    """Publishes the notes in chunks over time, so workers join and die while notes flow. ``gates``: (count, event)
    pairs; before publishing past ``count`` notes it waits (at most ``GATE_S``) for the test to set ``event``, so a
    slow machine (a worker that takes long to start) holds the traffic back instead of letting it run out before
    the worker joins or the kill."""

    GATE_S = 180.0

    def __init__(self, kafka: KafkaSettings, topic: str, records: list[RawRecord], chunk: int, pause_s: float,
                 gates: tuple[tuple[int, threading.Event], ...] = ()):
        super().__init__(daemon=True)
        self.kafka, self.topic, self.records, self.chunk, self.pause_s = kafka, topic, records, chunk, pause_s
        self.gates = gates
        self.placed: list[tuple[int, int, int]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for start in range(0, len(self.records), self.chunk):
                for count, event in self.gates:
                    if start >= count:
                        event.wait(self.GATE_S)
                self.placed += asyncio.run(produce(self.kafka, self.topic, self.records[start:start + self.chunk]))
                time.sleep(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _assigned_counts(worker: WorkerProc) -> list[int]:
    return [int(n) for n in re.findall(r"assigned (\d+) partitions of the input topic", worker.text())]


def _wait_until(cond: Any, timeout_s: float, worker: WorkerProc) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert worker.proc.poll() is None, worker.text()[-3000:]
        assert time.monotonic() < deadline, worker.text()[-3000:]
        time.sleep(0.5)


def test_when_a_worker_joins_and_another_is_killed_mid_stream_then_every_note_comes_out_once_in_order(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    records = [_note(i) for i in range(N_NOTES)]
    env = {"DEID_WORKER__BATCH_SIZE": str(BATCH)}
    a: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)
    b: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)
    # about a minute of traffic; past 1,200 notes it waits for the third worker's partitions, past 2,000 for the kill
    joined, killed = threading.Event(), threading.Event()
    publisher = Publisher(kafka, topics.raw, records, chunk=50, pause_s=1.0, gates=((1200, joined), (2000, killed)))
    publisher.start()

    wait_for(kafka, topics, lambda o: len(o.covered()) >= 300, timeout_s=120, worker=a, poll_s=1.0)
    c: WorkerProc = start_worker(steps=LIGHT_STEPS, **env)  # a worker added mid-stream
    _wait_until(lambda: any(n > 0 for n in _assigned_counts(c)), 90, c)
    joined.set()
    wait_for(kafka, topics, lambda o: len(o.covered()) >= 600, timeout_s=120, worker=c, poll_s=1.0)
    at_kill = len(read_outputs(kafka, topics).covered())
    a.kill9()  # and one killed mid-stream
    killed.set()
    assert at_kill < N_NOTES - 500, "the notes stopped flowing before the kill: slow the publisher down"
    kills_at = len(_assigned_counts(b))
    _wait_until(lambda: len(_assigned_counts(b)) > kills_at, 90, b)  # b and c take over a's partitions
    publisher.join(120)
    assert publisher.error is None and len(publisher.placed) == N_NOTES
    sources = [f"{topics.raw}:{p}:{o}" for p, o, _ in publisher.placed]
    out: Outputs = wait_for(kafka, topics, lambda o: set(sources) <= o.covered(), timeout_s=150, worker=b,
                            poll_s=1.0)
    time.sleep(2.0)  # anything still in flight
    assert b.terminate() == 0 and c.terminate() == 0
    out = read_outputs(kafka, topics)

    # the group really moved partitions: b was assigned at start, when c joined and after a died
    assert len(_assigned_counts(b)) >= 3, _assigned_counts(b)

    # exactly one kind per input (at least once)
    kinds: dict[str, set[str]] = defaultdict(set)
    by_source: dict[str, list[Any]] = defaultdict(list)
    for role in ("deid", "quarantine", "dlq"):
        for r in getattr(out, role):
            src = header(r, SOURCE_HEADER) or ""
            kinds[src].add(role)
            by_source[src].append(r)
    assert set(sources) <= set(kinds), "an input has no output"
    assert all(len(k) == 1 for k in kinds.values()), [s for s, k in kinds.items() if len(k) > 1][:5]
    bad = {sources[i] for i in range(N_NOTES) if i % 97 == 13}
    assert {s for s, k in kinds.items() if k == {"dlq"}} == bad

    # duplicates: counted, bounded. Each worker has at most two batches uncommitted (one awaiting its
    # acknowledgements, one in the pipeline); a rebalance or a kill can only redeliver those. Three workers
    # lost partitions here (a and b when c joined, a when killed).
    duplicates = sum(len(rs) - 1 for rs in by_source.values())
    print(f"scale-out: {N_NOTES} inputs, {duplicates} duplicate outputs, {at_kill} covered at the kill")
    assert duplicates <= 3 * 2 * BATCH, duplicates

    # a note published twice has the same pseudonyms (the record key and the body's) and the same content
    def content(r: Any) -> str:
        body = json.loads(r.value)
        return json.dumps({k: body[k] for k in ("note_pseudonym", "patient_pseudonym", "text", "spans")})

    for src, rs in by_source.items():
        if len(rs) > 1 and kinds[src] == {"deid"}:
            assert len({r.key for r in rs}) == 1 and len({content(r) for r in rs}) == 1, src
            assert json.loads(rs[0].value)["note_pseudonym"] == rs[0].key.decode()

    # one patient's notes come out in input order (first output of each, by the worker's send time)
    first_ts: dict[str, int] = {src: min(r.timestamp for r in rs) for src, rs in by_source.items()}
    for patient in range(PATIENTS):
        mine = [sources[i] for i in range(patient, N_NOTES, PATIENTS)]
        stamps = [first_ts[s] for s in mine]
        assert stamps == sorted(stamps), f"patient {patient}: outputs out of input order"
