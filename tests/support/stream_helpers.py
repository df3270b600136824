"""Helpers for the integration tests: worker subprocess handle, reading the output topics, bounded waits."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams.broker import consumer_kwargs, read_topic
from streams.codec import SOURCE_HEADER
from streams.settings import KafkaSettings, TopicSettings

#: A light pipeline for tests that are about the stream, not about detection quality.
LIGHT_STEPS = ["regex", "ensemble", "transform", "leakcheck"]


def probe(port: int, path: str) -> tuple[int | None, dict[str, Any]]:
    """A worker health page: (status, JSON body); (None, {}) when nothing listens yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:  # faust's plain-text 404
            return exc.code, {}
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None, {}


@dataclass
class WorkerProc:
    """A worker subprocess; ``log`` holds its stdout+stderr."""

    proc: subprocess.Popen[bytes]
    log: Path
    group: str
    _fh: Any = field(repr=False, default=None)
    health_port: int = 0

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def _wait_health(self, path: str, done: Callable[[int | None], bool], what: str, timeout_s: float) -> None:
        """Until the health server's answer to ``path`` (its status, None when nothing answers) is ``done``; fails if
        the worker exits first or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while not done(probe(self.health_port, path)[0]):
            assert self.proc.poll() is None, f"worker exited {self.proc.returncode}: {self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"worker not {what} within {timeout_s}s: {self.text()[-3000:]}"
            time.sleep(0.2)

    def wait_live(self, timeout_s: float = 120.0) -> None:
        """Until the worker's health server answers ``/livez`` (it has started, its signal handlers are in place): a
        SIGTERM before that ends it as any process is ended, which is no test of the worker's shutdown."""
        self._wait_health("/livez", lambda status: status is not None, "live", timeout_s)  # any status (busy: 503)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Until ``/readyz`` answers 200; fails if the worker exits first or the time runs out."""
        self._wait_health("/readyz", lambda status: status == 200, "ready", timeout_s)

    def wait_exit(self, timeout_s: float = 120.0) -> int:
        """Until the worker exits by itself (no signal sent): its exit code; fails if it runs past ``timeout_s``."""
        try:
            return int(self.proc.wait(timeout_s))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not stop within {timeout_s}s: {self.text()[-3000:]}") from None

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout_s: float = 60.0) -> int:
        """SIGTERM and wait; SIGKILL (and fail the wait) if it does not stop within ``timeout_s``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"worker did not stop within {timeout_s}s of SIGTERM") from None
        return int(self.proc.returncode)


@dataclass
class Outputs:
    deid: list[Any]
    metrics: list[Any]
    dlq: list[Any]
    quarantine: list[Any]

    def sources(self, role: str) -> set[str]:
        return {header(r, SOURCE_HEADER) or "" for r in getattr(self, role)}

    def covered(self) -> set[str]:
        return self.sources("deid") | self.sources("dlq") | self.sources("quarantine")


def header(record: Any, name: str) -> str | None:
    for k, v in record.headers:
        if k.lower() == name:
            return bytes(v).decode("utf-8", "replace")
    return None


def read_outputs(kafka: KafkaSettings, topics: TopicSettings) -> Outputs:
    async def go() -> Outputs:
        d, m, q, x = await asyncio.gather(*(read_topic(kafka, t, timeout_s=30) for t in (
            topics.deid, topics.metrics, topics.dlq, topics.quarantine)))
        return Outputs(d, m, q, x)

    return asyncio.run(go())


def wait_for(kafka: KafkaSettings, topics: TopicSettings, done: Callable[[Outputs], bool], *, timeout_s: float,
             worker: WorkerProc | None = None, poll_s: float = 0.5) -> Outputs:
    """Poll the output topics until ``done(outputs)``; fail with the worker log tail on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = read_outputs(kafka, topics)
        if done(out):
            return out
        if worker is not None and worker.proc.poll() is not None:
            raise AssertionError(f"worker exited with {worker.proc.returncode}:\n{worker.text()[-3000:]}")
        if time.monotonic() > deadline:
            tail = worker.text()[-3000:] if worker is not None else ""
            raise AssertionError(f"timed out after {timeout_s}s waiting for outputs\n{tail}")
        time.sleep(poll_s)


def committed_offsets(kafka: KafkaSettings, topic: str, group: str, partitions: int = 4) -> dict[int, int]:
    """The consumer group's committed offset of each of ``topic``'s partitions (0 where none is committed)."""
    async def go() -> dict[int, int]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        c = AIOKafkaConsumer(**consumer_kwargs(kafka), group_id=group, enable_auto_commit=False)
        await c.start()
        try:
            return {p: (await c.committed(TopicPartition(topic, p))) or 0 for p in range(partitions)}
        finally:
            await c.stop()

    return asyncio.run(go())
