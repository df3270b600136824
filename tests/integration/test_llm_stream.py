"""The LLM pass in the real worker on the embedded broker: a dead LLM server never stops the stream or loses a
note; each note's metrics say ``llm: failed`` with the reason code, and nothing the worker emits (log, metrics
records, headers) holds the notes' identifiers or the API key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from stream_helpers import WorkerProc, header, wait_for

from streams.broker import free_port, produce
from streams.codec import RawRecord
from streams.settings import KafkaSettings, TopicSettings

pytestmark = pytest.mark.integration

IDENTIFIERS = ("Zebulon", "Quackenbush", "MRN-77341920", "617-555-0142", "Philippa", "Oyelaran-Whitcombe",
               "llm-note-")
API_KEY = "sk-integration-5d1c"


def _note(i: int) -> dict[str, Any]:
    return {"id": f"llm-note-{i}",
            "text": (f"Zebulon Quackenbush (MRN-77341920) seen on 03/1{i}/2024 with Philippa Oyelaran-Whitcombe. "
                     "Call 617-555-0142. Continue furosemide 40 mg daily."),
            "patient": {"mrn": "MRN-77341920", "names": [{"family": "Quackenbush", "given": "Zebulon"}]}}


@pytest.mark.slow
def test_when_the_llm_server_is_dead_then_every_note_comes_out_with_llm_failed_and_no_phi_anywhere(
    kafka: KafkaSettings, topics: TopicSettings, start_worker: Any,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    worker: WorkerProc = start_worker(
        steps=["regex", "dictionary", "ensemble", "transform", "leakcheck", "metrics"],
        DEID_LLM__MODE="always", DEID_LLM__URL=dead, DEID_LLM__MODEL="served-model", DEID_LLM__API_KEY=API_KEY,
        DEID_LLM__TIMEOUT_S="1", DEID_LLM__MAX_RETRIES="0")
    n = 4
    asyncio.run(produce(kafka, topics.raw, [RawRecord(b"MRN-77341920", json.dumps(_note(i)).encode(), ())
                                            for i in range(n)]))
    out = wait_for(kafka, topics, lambda o: len(o.deid) >= n and len(o.metrics) >= n, timeout_s=150, worker=worker)
    assert worker.terminate() == 0

    assert len(out.deid) == n and not out.dlq and not out.quarantine
    metrics = [json.loads(r.value) for r in out.metrics]
    llm = [m["metrics"]["llm"] for m in metrics]
    assert {(x["status"], x["reason"], x["windows_failed"]) for x in llm} == {("failed", "connection", 1)}
    assert all(0.0 <= x["gate_score"] <= 1.0 for x in llm)
    for rec in out.deid:
        assert header(rec, "deid-llm-model") == "served-model"
        assert (header(rec, "deid-llm-prompt") or "").startswith("de:")
    emitted = {"worker log": worker.text(),
               "metrics records": "\n".join(r.value.decode() for r in out.metrics),
               "headers": "\n".join(f"{k}={bytes(v).decode('utf-8', 'replace')}" for r in out.deid + out.metrics
                                    for k, v in r.headers)}
    for where, text in emitted.items():
        for secret in (*IDENTIFIERS, API_KEY):
            assert secret not in text, f"{secret!r} in {where}"
    assert "went on without the LLM (connection" in worker.text()
