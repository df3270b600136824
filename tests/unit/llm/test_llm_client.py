"""The LLM client (processors/llm/client.py) through the real openai SDK against the local test server."""

from __future__ import annotations

import json
import threading
import time

import pytest
from openai_test_server import OpenAITestServer, Reply, user_text
from pydantic import BaseModel

from processors.llm.client import LLMClient, LLMError


class Answer(BaseModel):
    names: list[str]


def test_structured_sends_schema_model_and_key():
    with OpenAITestServer(lambda body: Reply(json.dumps({"names": ["Smith"]}))) as srv:
        client = LLMClient(srv.url, "m1", api_key="s3cret-key", max_retries=0)
        got = client.structured([{"role": "user", "content": "hello"}], Answer, name="answer")
        client.close()
    assert got == Answer(names=["Smith"])
    (req,) = srv.requests
    assert req.headers["authorization"] == "Bearer s3cret-key"
    assert req.body["model"] == "m1"
    rf = req.body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"]["required"] == ["names"]
    assert "s3cret-key" not in repr(client)


def test_url_without_v1_gets_it():
    with OpenAITestServer(lambda body: Reply("TP")) as srv:
        client = LLMClient(srv.url[: -len("/v1")], "m", max_retries=0)
        assert client.complete("q", n=1) == ["TP"]
        client.close()


@pytest.mark.parametrize(("reply", "code"), [
    (Reply("not json"), "malformed"),
    (Reply('{"names": "x"}'), "malformed"),
    (Reply('{"names": ["a"'), "truncated"),
    (Reply(None, refusal="I cannot help"), "refusal"),
    (Reply(status=500), "server_error"),
    (Reply(status=401), "auth"),
    (Reply(status=400), "bad_request"),
    (Reply(raw=b"<html>oops", status=200), "malformed"),
])
def test_failures_become_reason_codes(reply, code):
    if code == "truncated":
        reply.finish_reason = "length"
    with OpenAITestServer(lambda body: reply) as srv:
        client = LLMClient(srv.url, "m", max_retries=1, timeout_s=5)
        with pytest.raises(LLMError) as info:
            client.structured([{"role": "user", "content": "secret note text"}], Answer, name="a")
        client.close()
    assert info.value.code == code
    assert "secret note text" not in str(info.value)
    # refusals and auth / bad requests are not asked again; the rest are, once (max_retries=1)
    assert len(srv.requests) == (1 if code in ("refusal", "auth", "bad_request") else 2)


def test_timeout_is_a_reason_code():
    with OpenAITestServer(lambda body: Reply("x", delay_s=2.0)) as srv:
        client = LLMClient(srv.url, "m", max_retries=0, timeout_s=0.3)
        t0 = time.monotonic()
        with pytest.raises(LLMError) as info:
            client.complete("q")
        assert time.monotonic() - t0 < 1.8
        client.close()
    assert info.value.code == "timeout"


def test_dead_server_is_connection():
    with OpenAITestServer(lambda body: Reply("x")) as srv:
        url = srv.url
    client = LLMClient(url, "m", max_retries=0, timeout_s=2)
    with pytest.raises(LLMError) as info:
        client.complete("q")
    assert info.value.code == "connection"


def test_map_honours_concurrency_and_keeps_order():
    def backend(body):
        return Reply(user_text(body).upper(), delay_s=0.15)

    with OpenAITestServer(backend) as srv:
        client = LLMClient(srv.url, "m", concurrency=3, max_retries=0)
        items = [f"q{i}" for i in range(12)]
        out = client.map(lambda p: client.complete(p)[0], items)
        client.close()
    assert out == [i.upper() for i in items]
    assert 2 <= srv.max_in_flight <= 3


def test_map_returns_errors_in_place():
    seen = threading.Event()

    def backend(body):
        seen.set()
        return Reply(status=500) if user_text(body) == "bad" else Reply("ok")

    with OpenAITestServer(backend) as srv:
        client = LLMClient(srv.url, "m", concurrency=2, max_retries=0)
        out = client.map(lambda p: client.complete(p)[0], ["a", "bad", "c"])
        client.close()
    assert out[0] == "ok" and out[2] == "ok"
    assert isinstance(out[1], LLMError) and out[1].code == "server_error"


def test_n_samples():
    with OpenAITestServer(lambda body: Reply(["TP", "FN", "TP"][: body.get("n", 1)])) as srv:
        client = LLMClient(srv.url, "m", max_retries=0)
        assert client.complete("q", n=3) == ["TP", "FN", "TP"]
        client.close()
    assert srv.requests[0].body["n"] == 3
