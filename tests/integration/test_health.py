"""Worker health on the real embedded broker: /readyz only after the group assigned partitions, /livez
503 while a batch runs past health.stuck_after_s (the real NER model on real notes), and the consumer-lag
gauge per partition in the exported metrics."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from stream_helpers import LIGHT_STEPS, WorkerProc, probe, wait_for

from streams.broker import produce
from streams.codec import FORMAT_HEADER, RawRecord
from streams.settings import KafkaSettings, TopicSettings

pytestmark = pytest.mark.integration


def _notes(n: int, chars: int = 1200) -> list[RawRecord]:
    out = []
    for i in range(n):
        body = (f"Patient seen on 03/{1 + i % 28:02d}/2024 by Dr. Halvorsen at Mercy Clinic. BP 128/82, HR 71. "
                f"Call 617-555-{1000 + i:04d}. Continue metoprolol 25 mg BID. ")
        text = (body * (chars // len(body) + 1))[:chars]
        out.append(RawRecord(f"MRN{700 + i % 7}".encode(), json.dumps({"id": f"h-{i}", "text": text}).encode(),
                             ((FORMAT_HEADER, b"json"),)))
    return out


def test_when_worker_starts_then_ready_only_once_partitions_are_assigned(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    worker: WorkerProc = start_worker(steps=LIGHT_STEPS)
    seen: list[tuple[int | None, dict[str, Any]]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status, body = probe(worker.health_port, "/readyz")
        seen.append((status, body))
        if status == 200:
            break
        assert worker.proc.poll() is None, worker.text()[-3000:]
        time.sleep(0.1)
    status, body = seen[-1]
    assert status == 200, seen[-3:]
    assert body["models_loaded"] and body["group_joined"] and body["partitions"] == 4
    # the server answered before the group assigned partitions (Tansu waits ~3 s before the first
    # assignment): readiness was 503 then
    early = [b for s, b in seen if s == 503]
    assert early and not early[0]["group_joined"] and early[0]["models_loaded"]
    live, lbody = probe(worker.health_port, "/livez")
    assert live == 200 and lbody["status"] == "ok"
    # faust's own pages (stats, assignment, graph, router, tables) are off; "/" is its static "OK" page
    for path in ("/assignment/", "/graph/", "/router/", "/table/", "/performance/"):
        assert probe(worker.health_port, path)[0] == 404, path

    asyncio.run(produce(kafka, topics.raw, _notes(3, 200)))
    wait_for(kafka, topics, lambda o: len(o.covered()) >= 3, timeout_s=60, worker=worker)
    assert worker.terminate() == 0


@pytest.mark.slow
def test_when_a_batch_runs_past_the_limit_then_not_live_and_lag_is_exported_per_partition(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any, tmp_path: Path,
) -> None:
    n = 192
    # a backlog before the worker joins, of some seconds' work, so that several lag samples and metrics exports
    # fall within it (48 notes took half a second once the NER got faster, and one export saw the lag or none)
    asyncio.run(produce(kafka, topics.raw, _notes(n)))
    metrics_file = tmp_path / "otel.jsonl"
    worker: WorkerProc = start_worker(
        steps=["regex", "ner", "ensemble", "transform", "leakcheck"],
        DEID_WORKER__BATCH_SIZE="32", DEID_HEALTH__STUCK_AFTER_S="0.1", DEID_HEALTH__LAG_INTERVAL_S="0.2",
        DEID_WORKER__NOTE_TIMEOUT_S="0",  # no time budget: liveness alone sees the long batch
        DEID_TELEMETRY__EXPORTER="console", DEID_TELEMETRY__CONSOLE_PATH=str(metrics_file),
        DEID_TELEMETRY__METRICS_INTERVAL_S="0.3")
    statuses: list[tuple[int | None, str | None]] = []
    deadline = time.monotonic() + 120  # the backlog takes some seconds here: stuck shows before that
    while time.monotonic() < deadline and (503, "stuck") not in statuses:
        status, body = probe(worker.health_port, "/livez")
        statuses.append((status, body.get("status")))
        assert worker.proc.poll() is None, worker.text()[-3000:]
        time.sleep(0.05)
    assert (503, "stuck") in statuses, "a batch of NER over 32 long notes never ran past 0.1 s"
    assert (200, "ok") in statuses  # live between batches / before the first one
    wait_for(kafka, topics, lambda o: len(o.covered()) >= n, timeout_s=120, worker=worker)
    assert probe(worker.health_port, "/livez")[0] == 200  # idle again: live
    time.sleep(2.0)  # a lag sample and a metrics export after the last commit
    assert worker.terminate() == 0

    points: list[tuple[float, str, int]] = []  # (time, partition, lag)
    for line in metrics_file.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        for rm in data.get("resource_metrics", []):
            for sm in rm["scope_metrics"]:
                for m in sm["metrics"]:
                    if m["name"] != "deid.consumer.lag":
                        continue
                    for p in m["data"]["data_points"]:
                        assert p["attributes"]["messaging.destination.name"] == topics.raw
                        assert p["attributes"]["messaging.consumer.group.name"] == worker.group
                        points.append((p["time_unix_nano"], p["attributes"]["messaging.destination.partition.id"],
                                       p["value"]))
    assert {part for _, part, _ in points} == {"0", "1", "2", "3"}
    assert max(v for _, _, v in points) > 0, "the backlog never showed as lag"
    last = {part: v for _, part, v in sorted(points)}
    assert last == {"0": 0, "1": 0, "2": 0, "3": 0}


def test_when_the_broker_never_comes_back_then_the_worker_exits_with_a_clear_message(
    tmp_path: Path, start_worker: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streams.broker import EmbeddedBroker, create_topics

    # a broker of its own (the session's broker stays up); the fixtures' topics are created on it
    own = EmbeddedBroker(log_path=tmp_path / "own.log").start()
    try:
        kafka = own.kafka_settings()
        asyncio.run(create_topics(kafka, ["notes.raw", "notes.deid", "notes.metrics", "notes.dlq",
                                          "notes.quarantine"]))
        worker: WorkerProc = start_worker(steps=LIGHT_STEPS, DEID_KAFKA__BOOTSTRAP_SERVERS=own.bootstrap,
                                          DEID_TOPICS__RAW="notes.raw", DEID_TOPICS__DEID="notes.deid",
                                          DEID_TOPICS__METRICS="notes.metrics", DEID_TOPICS__DLQ="notes.dlq",
                                          DEID_TOPICS__QUARANTINE="notes.quarantine",
                                          DEID_WORKER__BROKER_TIMEOUT_S="8")
        worker.wait_ready(90)
    finally:
        own.stop()
    down = time.monotonic()
    saw_unready = False
    while worker.proc.poll() is None:
        status, body = probe(worker.health_port, "/readyz")
        saw_unready |= status == 503 and body.get("broker_reachable") is False
        assert time.monotonic() - down < 60, "the worker hangs on a dead broker"
        time.sleep(0.3)
    assert worker.proc.returncode == 69
    assert saw_unready
    assert "Kafka unreachable: no bootstrap server" in worker.text()
