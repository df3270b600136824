"""Worker health for Kubernetes probes, served by faust's web server (``streams.app`` adds the pages).

- ``GET /livez``: 200 unless a batch has been in the pipeline thread longer than
  ``health.stuck_after_s`` (a hung model call, a deadlock): then 503 and the kubelet restarts the pod.
  The pages run on the worker's event loop, so a blocked event loop answers nothing, which a probe with a
  timeout also reads as not live.
- ``GET /readyz``: 200 once the models are loaded and the consumer group has assigned this worker its
  partitions (at least one completed assignment; a worker given zero partitions, when there are more
  workers than partitions, is still ready: it is a warm standby); 503 before that, while stuck, while no
  Kafka bootstrap server accepts a connection, and once stopping.

Bodies are small JSON objects of flags and counts, never keys, offsets of notes or text. Consumer lag per
partition is sampled on the event loop (:class:`LagTracker`) and exported as the OpenTelemetry gauge
``deid.consumer.lag`` (``streams.telemetry``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

TopicPartition = tuple[str, int]


class Health:
    """Liveness and readiness state of one worker process (thread-safe: the pipeline thread and the
    event loop both touch it)."""

    def __init__(self, *, stuck_after_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stuck_after_s = stuck_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._batch_since: float | None = None
        self.models_loaded = False
        self.stopping = False
        self.broker_reachable = True
        self._assigned: frozenset[TopicPartition] | None = None

    # -- what the worker reports ----------------------------------------------------------------------------

    def batch_started(self) -> None:
        with self._lock:
            self._batch_since = self._clock()

    def batch_finished(self) -> None:
        with self._lock:
            self._batch_since = None

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._assigned = frozenset(partitions)

    # -- what the probes read -------------------------------------------------------------------------------

    def busy_s(self) -> float:
        """How long the batch in hand has been in the pipeline (0 when none is)."""
        with self._lock:
            since = self._batch_since
        return 0.0 if since is None else max(0.0, self._clock() - since)

    def liveness(self) -> tuple[bool, dict[str, Any]]:
        busy = self.busy_s()
        live = busy <= self.stuck_after_s
        return live, {"status": "ok" if live else "stuck", "batch_running_s": round(busy, 1),
                      "stuck_after_s": self.stuck_after_s}

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        live, _ = self.liveness()
        with self._lock:
            assigned = self._assigned
        joined = assigned is not None
        ready = self.models_loaded and joined and live and not self.stopping and self.broker_reachable
        return ready, {"status": "ready" if ready else "not ready", "models_loaded": self.models_loaded,
                       "group_joined": joined, "partitions": len(assigned or ()), "live": live,
                       "broker_reachable": self.broker_reachable, "stopping": self.stopping}


class BrokerWatch:
    """Whether any bootstrap server accepts a TCP connection, and since when none has. The worker exits when
    that lasts longer than ``worker.broker_timeout_s`` (Kafka clients retry forever otherwise)."""

    def __init__(self, servers: list[str], *, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.servers = servers
        self.timeout_s = timeout_s
        self._clock = clock
        self.down_since: float | None = None

    async def reachable(self, connect_timeout_s: float = 3.0) -> bool:
        import asyncio

        for server in self.servers:
            host, _, port = server.rpartition(":")
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)),
                                                   connect_timeout_s)
            except (OSError, ValueError, TimeoutError):
                continue
            writer.close()
            return True
        return False

    def observe(self, reachable: bool) -> float:
        """Record a probe; returns how long the brokers have been unreachable (0 when reachable)."""
        now = self._clock()
        if reachable:
            self.down_since = None
            return 0.0
        if self.down_since is None:
            self.down_since = now
        return now - self.down_since

    def expired(self, down_s: float) -> bool:
        return down_s > self.timeout_s


class LagTracker:
    """Consumer lag per assigned input partition: the partition's end offset minus the offset this worker
    committed (or, before its first commit there, the group's committed offset when the partition was
    assigned). Updated on the event loop; read by the metrics exporter's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._committed: dict[TopicPartition, int] = {}
        self._lag: dict[TopicPartition, int] = {}

    def committed(self, offsets: Mapping[TopicPartition, int]) -> None:
        with self._lock:
            self._committed.update(offsets)

    def committed_offset(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._committed.get(tp)

    def revoked(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self._committed.pop(tp, None)
                self._lag.pop(tp, None)

    def update(self, end_offsets: Mapping[TopicPartition, int], committed: Mapping[TopicPartition, int]) -> None:
        """Replace the snapshot: ``end - committed`` per partition, never below 0 (Tansu reports a
        partition's end as the base offset of its last record batch + 1, which can trail the records)."""
        with self._lock:
            self._lag = {tp: max(0, int(end) - int(committed.get(tp, 0))) for tp, end in end_offsets.items()}

    def snapshot(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._lag)
