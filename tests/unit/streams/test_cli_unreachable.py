"""The Kafka commands against an address where no broker listens: the error once, exit 1, and no client left
unclosed (aiokafka logs "Unclosed AIOKafkaProducer" at exit for a client whose start failed and was never closed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import REPO

from streams.broker import free_port


@pytest.mark.parametrize("args", [
    ["produce", "tests/data/synthetic_small.jsonl"],
    ["consume", "notes.deid"],
    ["create-topics"],
])
def test_when_no_broker_listens_then_the_command_fails_with_the_error_once_and_closes_its_client(
        args: list[str]) -> None:
    port = free_port()  # nothing listens there
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEID_")}
    env["DEID_KAFKA__BOOTSTRAP_SERVERS"] = f"127.0.0.1:{port}"
    done = subprocess.run([sys.executable, "-m", "streams.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    stderr = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stderr
    assert "error KafkaConnectionError: Unable to bootstrap" in stderr, done.stderr  # the class named once
    assert "Unclosed" not in done.stderr and "Traceback" not in done.stderr
