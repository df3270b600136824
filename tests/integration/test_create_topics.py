"""``deidstream create-topics`` (what the Helm chart's topic Job runs) on the real embedded broker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from streams.broker import EmbeddedBroker

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


async def _partitions(kafka: object, names: list[str]) -> dict[str, int]:
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.broker import client_kwargs

    admin = AIOKafkaAdminClient(**client_kwargs(kafka))  # type: ignore[arg-type]
    await admin.start()
    try:
        described = await admin.describe_topics(names)
        return {d["topic"]: len(d["partitions"]) for d in described}
    finally:
        await admin.close()


def test_when_create_topics_runs_twice_then_the_configured_topics_exist_once(broker: EmbeddedBroker) -> None:
    prefix = f"c{uuid.uuid4().hex[:8]}"
    names = {role: f"{prefix}.{role}" for role in ("raw", "deid", "metrics", "dlq", "quarantine")}
    env = dict(os.environ, DEID_KAFKA__BOOTSTRAP_SERVERS=broker.bootstrap, DEID_TOPICS__PARTITIONS="3",
               **{f"DEID_TOPICS__{role.upper()}": name for role, name in names.items()})
    cmd = [sys.executable, "-m", "streams.cli", "create-topics"]
    first = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert all(n in first.stderr for n in names.values())
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "(all existed)" in again.stderr
    parts = asyncio.run(_partitions(broker.kafka_settings(), list(names.values())))
    assert parts == {n: 3 for n in names.values()}


def test_when_the_cluster_is_unreachable_then_create_topics_fails_with_a_message() -> None:
    from streams.broker import free_port

    env = dict(os.environ, DEID_KAFKA__BOOTSTRAP_SERVERS=f"127.0.0.1:{free_port()}",
               DEID_KAFKA__REQUEST_TIMEOUT_S="3")
    res = subprocess.run([sys.executable, "-m", "streams.cli", "create-topics"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "error" in res.stderr and "Traceback" not in res.stderr
