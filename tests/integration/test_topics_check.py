"""The worker's topic check at start (worker.topics_wait_s) on the real embedded broker: a mistyped topic stops the
worker with code 78 naming it, creating nothing; a topic made while the worker waits (a topic Job still running)
lets it start; 0 turns the check off. Tansu creates topics on first use, the case the check is for."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
from stream_helpers import LIGHT_STEPS, WorkerProc, probe, wait_for

from streams.app import EXIT_TOPICS_MISSING
from streams.broker import create_topics, free_port, missing_topics, produce, wait_for_topics
from streams.codec import FORMAT_HEADER, RawRecord
from streams.settings import KafkaSettings, TopicSettings

pytestmark = pytest.mark.integration


def test_when_the_input_topic_is_mistyped_then_the_worker_exits_78_naming_it_and_creates_nothing(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    typo = topics.raw + "s"
    worker: WorkerProc = start_worker(steps=LIGHT_STEPS, DEID_TOPICS__RAW=typo, DEID_WORKER__TOPICS_WAIT_S="3")
    assert worker.wait_exit(120) == EXIT_TOPICS_MISSING
    log = worker.text()
    assert f"no topic {typo} on {kafka.bootstrap_servers}" in log
    assert "worker.topics_wait_s" in log and "Traceback" not in log
    # the mistyped topic was listed, never looked up: still not there
    assert asyncio.run(missing_topics(kafka, [typo, *topics.all()[1:]])) == [typo]


def test_when_a_topic_appears_while_the_worker_waits_then_it_starts_and_processes(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    late = topics.raw + ".late"
    worker: WorkerProc = start_worker(steps=LIGHT_STEPS, DEID_TOPICS__RAW=late, DEID_WORKER__TOPICS_WAIT_S="120")
    deadline = time.monotonic() + 120
    while f"topic {late} not on" not in worker.text():  # models loaded, now waiting for the topic
        assert time.monotonic() < deadline and worker.proc.poll() is None, worker.text()[-3000:]
        time.sleep(0.2)
    assert probe(worker.health_port, "/readyz")[0] != 200
    asyncio.run(create_topics(kafka, [late], partitions=2))
    worker.wait_ready(90)
    note = RawRecord(b"k", json.dumps({"id": "late-1", "text": "Seen by Dr. Halvorsen on 03/04/2024."}).encode(),
                     ((FORMAT_HEADER, b"json"),))
    asyncio.run(produce(kafka, late, [note]))
    wait_for(kafka, topics, lambda o: len(o.sources("deid")) == 1, timeout_s=60, worker=worker)
    assert worker.terminate() == 0


def test_when_the_check_is_off_then_a_mistyped_topic_is_read_as_before(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    typo = topics.raw + "s"
    worker: WorkerProc = start_worker(steps=LIGHT_STEPS, DEID_TOPICS__RAW=typo, DEID_WORKER__TOPICS_WAIT_S="0")
    worker.wait_ready(120)  # the hazard the check is for: ready, on a topic nobody writes to
    assert "worker.topics_wait_s" not in worker.text()
    assert worker.terminate() == 0


def test_when_no_broker_answers_then_the_wait_gives_up_with_none() -> None:
    nobody = KafkaSettings(bootstrap_servers=f"127.0.0.1:{free_port()}", request_timeout_s=1.0)
    t0 = time.monotonic()
    assert asyncio.run(wait_for_topics(nobody, ["notes.raw"], wait_s=2.0, poll_s=0.5)) is None
    assert time.monotonic() - t0 < 30


def test_while_the_same_topic_is_missing_then_the_wait_says_so_once_per_interval(
    kafka: KafkaSettings, caplog: pytest.LogCaptureFixture,
) -> None:
    """A topic Job can take a minute: one warning a poll (every 2 s) would bury the log. The wait says what is
    missing when that changes, and again only after ``say_every_s``."""
    caplog.set_level(logging.WARNING, logger="streams.broker")
    absent = f"never.created.{free_port()}"
    assert asyncio.run(wait_for_topics(kafka, [absent], wait_s=3.0, poll_s=0.3, say_every_s=60.0)) == [absent]
    said = [r.getMessage() for r in caplog.records if r.name == "streams.broker"]
    assert len(said) == 1 and absent in said[0], said
    caplog.clear()
    assert asyncio.run(wait_for_topics(kafka, [absent], wait_s=2.0, poll_s=0.3, say_every_s=0.5)) == [absent]
    again = [r.getMessage() for r in caplog.records if r.name == "streams.broker"]
    assert 2 <= len(again) <= 5, again
