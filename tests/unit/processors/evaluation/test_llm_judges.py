"""LLM judges of the panel through the project's LLMClient (the real openai SDK) against local
OpenAI-compatible test servers with scripted answers: majority across URL judges, samples, discarded items,
failures by reason code, a dead server, the API key, bounded concurrency, and `deidstream eval --judge`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from judge_note import GOLD, TEXT
from openai_test_server import OpenAITestServer, Reply, user_text
from typer.testing import CliRunner

from processors.evaluation.judges import (
    CoverageJudge,
    JudgeItem,
    LLMChunkJudge,
    LLMJudge,
    Verdict,
    build_llm_judges,
    close_judges,
    panel_items,
    parse_judge_spec,
    run_panel,
)
from processors.llm.client import LLMClient
from streams.cli import app

TP, FN, FP = Verdict.TP, Verdict.FN, Verdict.FP

LABEL = re.compile(r"\((NAME|DATE|ORGANIZATION)\)")
Backend = Callable[[dict[str, Any]], Reply]


def _items(pred: list[dict[str, Any]] | None = None, notes: int = 1) -> list[JudgeItem]:
    ids = [f"n{i}" for i in range(notes)]
    return panel_items(dict.fromkeys(ids, TEXT), dict.fromkeys(ids, GOLD), dict.fromkeys(ids, pred or []))


def by_label(answers: dict[str, str], pred: str = "FP") -> Backend:
    """A scripted judge: the answer for a gold item by its label; ``pred`` for a lone prediction."""

    def backend(body: dict[str, Any]) -> Reply:
        m = LABEL.search(user_text(body))
        return Reply(answers[m.group(1)] if m else pred)

    return backend


@pytest.fixture()
def servers() -> Iterator[Callable[..., list[OpenAITestServer]]]:
    with ExitStack() as stack:
        def start(*backends: Backend) -> list[OpenAITestServer]:
            return [stack.enter_context(OpenAITestServer(b)) for b in backends]

        yield start


def _judges(urls: list[str], **kw: Any) -> list[LLMJudge]:
    return build_llm_judges(urls, default_model=kw.pop("default_model", "m"), max_retries=0, timeout_s=5, **kw)


def test_when_three_url_judges_vote_then_the_panel_takes_their_majority(servers: Any) -> None:
    srv = servers(by_label({"NAME": "TP", "DATE": "TP", "ORGANIZATION": "TP"}),
                  by_label({"NAME": "TP", "DATE": "FN", "ORGANIZATION": "TP."}),
                  by_label({"NAME": "I think fn", "DATE": "FN", "ORGANIZATION": "FN"}, pred="TP"))
    judges = _judges([srv[0].url, f"{srv[1].url}@other", srv[2].url])
    res = run_panel(judges, _items([{"start": 0, "end": 2, "label": "NAME"}]))
    close_judges(judges)
    # NAME TP,TP,FN -> TP; DATE TP,FN,FN -> FN; ORG TP,TP,FN -> TP; the lone prediction FP,FP,TP -> FP
    assert (res.tp, res.fn, res.fp, res.tp_pred, res.discarded) == (2, 1, 1, 0, 0)
    a, b, c = (j.name for j in judges)
    assert a.startswith("llm:m@127.0.0.1:") and b.startswith("llm:other@127.0.0.1:")
    assert res.agreement == {a: 0.75, b: 1.0, c: 0.25}
    assert res.per_judge[c] == {"votes": 4, "abstained": 0, "agreement": 0.25, "abstentions": {}, "samples": 1}
    assert [r.body["model"] for s in srv for r in s.requests] == ["m"] * 4 + ["other"] * 4 + ["m"] * 4
    assert all(r.body["temperature"] == 0 and "n" not in r.body for s in srv for r in s.requests)


def test_when_a_judge_asks_samples_then_it_votes_with_their_majority(servers: Any) -> None:
    samples = {"NAME": ["TP", "tp", "FN"], "DATE": ["TP", "FN", "unsure"], "ORGANIZATION": ["?", "", "no idea"]}

    def backend(body: dict[str, Any]) -> Reply:
        m = LABEL.search(user_text(body))
        return Reply(samples[m.group(1)] if m else ["FP", "FP", "TP"])

    (srv,) = servers(backend)
    (judge,) = _judges([srv.url], samples=3)
    items = _items([{"start": 0, "end": 2, "label": "NAME"}])
    assert judge.judge(items) == [TP, None, None, FP]
    assert judge.abstentions == {"split": 1, "unparsed": 1}
    assert {r.body["n"] for r in srv.requests} == {3} and all(r.body["temperature"] > 0 for r in srv.requests)
    # one judge with three samples is still one vote beside two deterministic judges
    res = run_panel([judge, CoverageJudge(1.0, "entity"), CoverageJudge(0.5, "partial")], items)
    judge.client.close()
    assert (res.fn, res.fp, res.discarded) == (3, 1, 0)
    assert res.per_judge[judge.name]["samples"] == 3
    assert res.per_judge[judge.name]["abstentions"] == {"split": 1, "unparsed": 1}


def test_when_no_verdict_has_a_majority_then_the_item_is_discarded(servers: Any) -> None:
    srv = servers(by_label({"NAME": "TP", "DATE": "TP", "ORGANIZATION": "TP"}),
                  by_label({"NAME": "FN", "DATE": "FN", "ORGANIZATION": "TP"}),
                  by_label({"NAME": "maybe", "DATE": "FN", "ORGANIZATION": "TP"}))
    judges = _judges([s.url for s in srv])
    res = run_panel(judges, _items())
    close_judges(judges)
    # NAME TP,FN,- -> no verdict with more than half of the three votes; DATE FN x2 -> FN; ORG TP x3
    assert (res.tp, res.fn, res.discarded, res.items) == (1, 1, 1, 3)
    assert res.per_label["NAME"] == {"discarded": 1}
    assert res.to_dict()["per_judge"][judges[2].name]["abstentions"] == {"unparsed": 1}


def test_when_a_judge_server_is_dead_then_it_abstains_and_the_panel_still_decides(servers: Any) -> None:
    live = servers(by_label({"NAME": "TP", "DATE": "FN", "ORGANIZATION": "TP"}),
                   by_label({"NAME": "TP", "DATE": "FN", "ORGANIZATION": "TP"}))
    with OpenAITestServer(lambda body: Reply("TP")) as dead:
        dead_url = dead.url  # closed on exit: connection refused from now on
    judges = _judges([live[0].url, live[1].url, f"{dead_url}@gone"], concurrency=2)
    items = _items(notes=7)  # 21 items: the dead judge's first chunk (16) fails, the rest is not asked
    res = run_panel(judges, items)
    close_judges(judges)
    assert (res.tp, res.fn, res.discarded) == (14, 7, 0)
    dead_row = res.per_judge[judges[2].name]
    assert dead_row["votes"] == 0 and dead_row["abstained"] == 21
    assert dead_row["abstentions"] == {"connection": 16, "not_asked": 5}


def test_when_calls_fail_then_the_judge_abstains_and_counts_them_by_reason(servers: Any) -> None:
    def backend(body: dict[str, Any]) -> Reply:
        label = LABEL.search(user_text(body))
        if label and label.group(1) == "DATE":
            return Reply(status=500)
        if label and label.group(1) == "ORGANIZATION":
            return Reply(None, refusal="no")  # no content: answers nothing
        return Reply("TP")

    (srv,) = servers(backend)
    (judge,) = _judges([srv.url])
    assert judge.judge(_items()) == [TP, None, None]
    judge.client.close()
    assert judge.abstentions == {"server_error": 1, "unparsed": 1}


def test_when_the_settings_hold_an_api_key_then_every_judge_sends_it_and_never_shows_it(servers: Any) -> None:
    srv = servers(by_label({"NAME": "TP", "DATE": "TP", "ORGANIZATION": "TP"}),
                  by_label({"NAME": "TP", "DATE": "TP", "ORGANIZATION": "TP"}))
    judges = _judges([s.url for s in srv], api_key="judge-key-123")
    res = run_panel(judges, _items())
    close_judges(judges)
    assert {r.headers["authorization"] for s in srv for r in s.requests} == {"Bearer judge-key-123"}
    assert "judge-key-123" not in json.dumps(res.to_dict()) and "judge-key-123" not in repr(judges[0].client)


def test_when_there_are_many_items_then_at_most_concurrency_calls_are_in_flight(servers: Any) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        return Reply("TP", delay_s=0.05)

    (srv,) = servers(slow)
    (judge,) = _judges([srv.url], concurrency=3)
    assert judge.judge(_items(notes=6)) == [TP] * 18
    judge.client.close()
    assert 2 <= srv.max_in_flight <= 3 and len(srv.requests) == 18


def test_when_prompts_are_built_then_they_name_the_entity_and_fit_the_item_kind(servers: Any) -> None:
    (srv,) = servers(lambda body: Reply("TP"))
    (judge,) = _judges([srv.url])
    judge.judge(_items([{"start": 0, "end": 2, "label": "NAME"}]))
    judge.client.close()
    prompts = sorted(user_text(r.body) for r in srv.requests)  # requests arrive concurrently, in any order
    (name,) = [p for p in prompts if '"John Smith" (NAME)' in p]
    (pred,) = [p for p in prompts if '"Pt" as a NAME identifier' in p]
    assert "TP if it was removed, FN" in name and "FP if it is not" in pred and "7/22/2019" in name
    assert all(r.body["max_tokens"] == 8 for r in srv.requests)


@pytest.mark.parametrize(("spec", "default", "expected"), [
    ("http://vllm:8000/v1@Qwen/Qwen2.5-7B-Instruct", "", ("http://vllm:8000/v1", "Qwen/Qwen2.5-7B-Instruct")),
    ("http://vllm:8000", "m", ("http://vllm:8000", "m")),
    (" https://llm.example/v1@x ", "m", ("https://llm.example/v1", "x")),
    ("http://vllm:8000", "", "no model"),
    ("vllm:8000@m", "", "expected http"),
    ("http://user:pw@vllm:8000/v1@m", "", "no credentials"),
])
def test_when_a_judge_is_named_by_url_then_url_and_model_are_parsed(spec: str, default: str,
                                                                     expected: tuple[str, str] | str) -> None:
    if isinstance(expected, tuple):
        assert parse_judge_spec(spec, default) == expected
    else:
        with pytest.raises(ValueError, match=expected):
            parse_judge_spec(spec, default)


def test_when_the_same_server_is_named_twice_then_the_judges_get_distinct_names(servers: Any) -> None:
    (srv,) = servers(lambda body: Reply("TP"))
    judges = _judges([srv.url, srv.url])
    close_judges(judges)
    assert judges[1].name == judges[0].name + "#2"


def test_when_an_llm_judges_cire_chunks_then_yes_means_changed_and_failures_are_conservative(servers: Any) -> None:
    from processors.metrics.cir import ChunkJudge, cire

    def backend(body: dict[str, Any]) -> Reply:
        text = user_text(body)
        if "FAIL" in text:
            return Reply(status=503)
        return Reply("Yes, the dose changed" if "[DATE] mg" in text else ("No." if "aa" in text else "unsure"))

    (srv,) = servers(backend)
    judge = LLMChunkJudge(LLMClient(srv.url, "m", max_retries=0), name="chunks")
    assert isinstance(judge, ChunkJudge)
    assert judge.changed_meaning([("aa", "aa"), ("5 mg", "[DATE] mg"), ("x", "y"), ("FAIL", "x")]) == [
        False, True, True, True]
    assert judge.failures == {"server_error": 1}
    words = " ".join(f"w{i}" for i in range(20))
    res = cire(words, words.replace("w3", "[NAME]"), judge=judge)
    judge.client.close()
    assert (res.changed, res.clinical) == (1, 1)


# -- deidstream eval --judge ------------------------------------------------------------------------------

GOLD_NOTES = [
    {"id": "a", "text": "Seen by Dr Alma Petrov on 3/4/2021.", "spans": [
        {"start": 11, "end": 22, "label": "NAME"}, {"start": 26, "end": 34, "label": "DATE"}]},
    {"id": "b", "text": "Call Ivo Brandt at 555-201-3344 today.", "spans": [
        {"start": 5, "end": 15, "label": "NAME"}, {"start": 19, "end": 31, "label": "PHONE"}]},
]
PREDICTIONS = [  # the date and the phone found, the names missed; one false positive ("today")
    {"note_id": "a", "spans": [{"start": 26, "end": 34, "label": "DATE"}]},
    {"note_id": "b", "spans": [{"start": 19, "end": 31, "label": "PHONE"}, {"start": 32, "end": 37, "label": "DATE"}]},
]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in GOLD_NOTES))
    pred.write_text("".join(json.dumps(r) + "\n" for r in PREDICTIONS))
    return gold, pred


def honest(body: dict[str, Any]) -> Reply:
    """Says FN for names (the predictions missed them), TP for the rest, FP for lone predictions."""
    prompt = user_text(body)
    if "real personal identifier" in prompt:
        return Reply(["FP"] * body.get("n", 1))
    return Reply(["FN" if "(NAME)" in prompt else "TP"] * body.get("n", 1))


def test_when_eval_runs_with_llm_judges_then_the_report_holds_the_panel(
        servers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gold, pred = _files(tmp_path)
    srv = servers(honest, honest, lambda body: Reply(status=401))
    monkeypatch.setenv("DEID_LLM__API_KEY", "eval-key-456")
    monkeypatch.setenv("DEID_LLM__MODEL", "judge-model")
    monkeypatch.setenv("DEID_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("DEID_LLM__CONCURRENCY", "2")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, [
        "eval", "--gold", str(gold), "--pred", str(pred), "--report", str(out), "--no-metrics", "--bootstrap", "5",
        "--judge", f"{srv[0].url},{srv[1].url}@second,{srv[2].url}", "--judge-samples", "2",
        "--judges", "entity"])
    assert result.exit_code == 0, result.output
    panel = json.loads((out / "report.json").read_text())["judges"]
    names = panel["judges"]  # the deterministic judges first, then one LLM judge per URL
    llm_names = names[1:]
    assert names[0] == "entity" and len(llm_names) == 3
    assert llm_names[0].startswith("llm:judge-model@") and llm_names[1].startswith("llm:second@")
    # 4 gold entities (names FN, date and phone TP) + 1 lone prediction (FP): 3 of 4 voters agree each time
    assert (panel["tp"], panel["fn"], panel["fp"], panel["discarded"], panel["items"]) == (2, 2, 1, 0, 5)
    assert panel["recall"] == 0.5 and panel["precision"] == pytest.approx(2 / 3)
    refused = panel["per_judge"][llm_names[2]]
    assert refused["votes"] == 0 and refused["abstentions"] == {"auth": 5} and refused["samples"] == 2
    assert all(r.headers["authorization"] == "Bearer eval-key-456" and r.body["n"] == 2
               for s in srv for r in s.requests)
    page = (out / "report.html").read_text()
    assert "Judge panel" in page and "auth 5" in page and "Discarded:" in page
    for text in (result.output, (out / "report.json").read_text(), page):
        assert "eval-key-456" not in text
        assert not any(word in text for word in ("Petrov", "Brandt", "555-201-3344"))  # no note text
    assert "judge panel (4 judges, 5 items)" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--judge", "http://127.0.0.1:9"], "no model"),
    (["--judge", "ftp://x@m"], "expected http"),
    (["--judges", "llm=http://h@m"], "--judge"),
])
def test_when_llm_judges_are_misnamed_then_eval_is_a_usage_error(args: list[str], message: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEID_LLM__MODEL", raising=False)
    gold, pred = _files(tmp_path)
    result = CliRunner().invoke(app, ["eval", "--gold", str(gold), "--pred", str(pred), "--report",
                                      str(tmp_path / "r"), "--no-metrics", "--bootstrap", "5", *args])
    assert result.exit_code == 2 and message in result.output
