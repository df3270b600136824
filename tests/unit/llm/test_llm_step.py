"""The llm step through the real openai SDK against the local OpenAI-compatible test server: add-only spans at
exact offsets (every occurrence, case-insensitive whole words), strings not in the text dropped and counted,
failures as data, long-note windows, the concurrency bound, the API key, the risky gate, the prompt language,
and the versions and metrics the rest of the pipeline sees."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openai_test_server import OpenAITestServer, Reply, user_text
from pydantic import SecretStr

from processors.llm.step import LLM_SCORE, LLMStep, load_prompts, locate, prompt_version, windows
from processors.pipeline import BuildContext, Note, Pipeline, PipelineConfig, build_processor, make_context
from schemas.labels import Label
from schemas.metrics import LLMOutcome
from schemas.models import NoteIn, Span
from streams.codec import version_headers

Backend = Callable[[dict[str, Any]], Reply]

NOTE = ("Seen with daughter Marguerite Kowalczyk today. MARGUERITE agrees with the plan; marguerite will call.\n"
        "Annual review planned. Ann Lee (PCP) informed. Kowalczyk-Smith is another family.")


def window_text(body: dict[str, Any]) -> str:
    """The note text (or window) inside a request's user message."""
    m = re.search(r"<<<\n(.*)\n>>>", user_text(body), re.S)
    assert m is not None
    return m.group(1)


def finder(strings: dict[str, str]) -> Backend:
    """A deterministic model: names each ``text: type`` of the table that occurs in the window it is sent."""

    def backend(body: dict[str, Any]) -> Reply:
        text = window_text(body).lower()
        found = [{"type": t, "text": s} for s, t in strings.items() if s.lower() in text]
        return Reply(json.dumps({"identifiers": found}))

    return backend


def answer(*items: tuple[str, str]) -> Backend:
    """A model that always answers with the same identifiers."""
    payload = json.dumps({"identifiers": [{"type": t, "text": s} for s, t in items]})
    return lambda body: Reply(payload)


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(answer()) as srv:
        yield srv


@pytest.fixture(scope="module")
def ctx() -> BuildContext:
    return make_context(PipelineConfig(steps=("regex", "llm", "recovery", "ensemble")))


def make_step(server: OpenAITestServer, ctx: BuildContext, backend: Backend, **options: Any) -> LLMStep:
    server.set_backend(backend)
    opts = {"url": server.url, "model": "test-model", "mode": "always", "max_retries": 0, "timeout_s": 5.0,
            **options}
    step = build_processor("llm", opts, ctx)
    assert isinstance(step, LLMStep)
    return step


def note(text: str = NOTE, *, spans: tuple[Span, ...] = (), language: str = "en", note_id: str = "n1") -> Note:
    return Note(input=NoteIn(note_id=note_id, text=text, language=language), spans=spans)


def outcome(n: Note) -> LLMOutcome:
    out = n.extra["llm"]
    assert isinstance(out, LLMOutcome)
    return out


def llm_spans(n: Note) -> list[tuple[str, str]]:
    return [(n.text[s.start:s.end], str(s.label)) for s in n.spans if s.source == "llm"]


# --- spans ------------------------------------------------------------------------------------------------------


def test_when_the_model_names_a_string_then_every_whole_word_occurrence_becomes_an_llm_span_and_nothing_else_changes(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    existing = (Span(start=0, end=4, label=Label.OTHER, score=0.2, source="regex"),)
    step = make_step(server, ctx, answer(("marguerite", "NAME"), ("Kowalczyk", "NAME"), ("Ann", "NAME")))
    (out,) = step.process_batch([note(spans=existing)])
    assert out.spans[: len(existing)] == existing  # add-only: existing spans first, untouched
    got = [(s.start, s.end, NOTE[s.start:s.end]) for s in out.spans if s.source == "llm"]
    expected = sorted((m.start(), m.end(), m.group()) for pat in (r"\bmarguerite\b", r"\bKowalczyk\b", r"\bAnn\b")
                      for m in re.finditer(pat, NOTE, re.I))
    assert got == expected
    # every casing of Marguerite, Kowalczyk alone and before "-Smith"; "Ann" not inside "Annual" or "planned"
    assert [t for _, _, t in got].count("Ann") == 1 and len(got) == 6
    assert all(s.score == LLM_SCORE and s.label == Label.NAME for s in out.spans if s.source == "llm")
    o = outcome(out)
    assert (o.status, o.reason, o.proposed, o.located, o.not_found, o.spans, o.windows) == ("ok", None, 3, 3, 0, 6, 1)


def test_when_strings_are_not_in_the_text_or_too_short_then_they_are_dropped_and_counted(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    step = make_step(server, ctx, answer(("Bartholomew", "NAME"), ("K", "NAME"), ("Marguerite", "NAME"),
                                         ("45", "AGE"), ("Lee (PCP)", "NAME"), ("Lee.", "NAME")))
    (out,) = step.process_batch([note()])
    o = outcome(out)
    assert (o.proposed, o.located, o.not_found, o.rejected) == (6, 3, 1, 2)  # "K" and age 45 rejected
    assert {t for t, _ in llm_spans(out)} == {"Marguerite", "MARGUERITE", "marguerite", "Lee (PCP)", "Lee"}


def test_locate_is_case_insensitive_whole_word_and_whitespace_tolerant() -> None:
    text = "Dr. O'Neil saw Ann\nLee; ann lee, Annlee and (555) 123-4567 x."
    assert locate(text, "ann lee") == [(15, 22), (24, 31)]
    phone = text.index("(555)")
    assert locate(text, "(555) 123-4567") == [(phone, phone + 14)]
    assert locate(text, "O'Neil") == [(4, 10)]
    assert locate(text, "Dr.") == [(0, 3)]
    assert locate(text, "nne") == [] and locate(text, " ") == []


# --- failures ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "code"), [
    (Reply(status=500), "server_error"),
    (Reply("this is not json"), "malformed"),
    (Reply('{"identifiers": [{"type": "NAME"'), "malformed"),
    (Reply('{"identifiers": [{"type": "NAME", "text": "Ann"}]', finish_reason="length"), "truncated"),
    (Reply(None, refusal="I can't help with that."), "refusal"),
    (Reply('{"identifiers": [{"type": "PERSON", "text": "Ann"}]}'), "malformed"),  # not one of our types
    (Reply("x", delay_s=1.5), "timeout"),
])
def test_when_the_server_fails_then_the_note_goes_on_without_the_llm_with_the_reason(
    server: OpenAITestServer, ctx: BuildContext, reply: Reply, code: str,
) -> None:
    existing = (Span(start=19, end=29, label=Label.NAME, score=1.0, source="dictionary"),)
    step = make_step(server, ctx, lambda body: reply, timeout_s=0.5)
    (out,) = step.process_batch([note(spans=existing)])
    assert out.spans == existing and out.error is None
    o = outcome(out)
    assert (o.status, o.reason, o.windows, o.windows_failed, o.spans) == ("failed", code, 1, 1, 0)
    assert "Marguerite" not in o.model_dump_json()


def test_when_the_server_is_dead_then_every_note_fails_with_connection_and_none_is_lost(ctx: BuildContext) -> None:
    with OpenAITestServer(answer()) as srv:
        url = srv.url
    step = build_processor("llm", {"url": url, "model": "m", "mode": "always", "max_retries": 0, "timeout_s": 2},
                           ctx)
    notes = [note(note_id=f"n{i}") for i in range(5)]
    out = step.process_batch(notes)
    assert [n.note_id for n in out] == [n.note_id for n in notes]
    assert {(outcome(n).status, outcome(n).reason) for n in out} == {("failed", "connection")}


def test_when_the_server_hangs_then_the_batch_stops_sending_after_concurrency_timeouts_in_a_row(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    step = make_step(server, ctx, lambda body: Reply("x", delay_s=2.0), timeout_s=0.4, concurrency=2)
    before = len(server.requests)
    t0 = time.monotonic()
    out = step.process_batch([note(note_id=f"n{i}") for i in range(12)])
    elapsed = time.monotonic() - t0
    assert {(outcome(n).status, outcome(n).reason) for n in out} == {("failed", "timeout")}
    assert len(server.requests) - before <= 4 and elapsed < 12 * 0.4 / 2


# --- windows and concurrency -------------------------------------------------------------------------------------


def test_windows_cover_the_text_overlap_and_cut_at_boundaries() -> None:
    text = "".join(f"Line {i} of the note with some words in it.\n" for i in range(60))
    ws = windows(text, 500, overlap=100)
    assert ws[0][0] == 0 and ws[-1][1] == len(text) and len(ws) > 4
    for (a, b), (c, _d) in zip(ws, ws[1:], strict=False):
        assert b - a <= 500 and c < b and text[b - 1] == "\n" and (c == 0 or text[c - 1] == " ")
    assert windows("short", 500) == [(0, 5)]


def test_when_a_note_is_long_then_it_goes_in_windows_and_offsets_point_into_the_whole_note(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    filler = "Patient resting comfortably, vitals stable, plan unchanged overnight.\n"
    text = filler * 5 + "Called daughter Zofia Wisniewska at home.\n" + filler * 8 + "Zofia visited at noon.\n"
    step = make_step(server, ctx, finder({"Zofia Wisniewska": "NAME", "Zofia": "NAME"}), max_chars=400)
    before = len(server.requests)
    (out,) = step.process_batch([note(text)])
    sent = [window_text(r.body) for r in server.requests[before:]]
    assert len(sent) == outcome(out).windows >= 3 and all(len(w) <= 400 for w in sent)
    assert {(text[s.start:s.end], s.start) for s in out.spans} == {
        ("Zofia Wisniewska", text.index("Zofia Wisniewska")), ("Zofia", text.index("Zofia")),
        ("Zofia", text.rindex("Zofia"))}


def test_when_many_requests_are_due_then_at_most_concurrency_are_in_flight(ctx: BuildContext) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        return Reply(json.dumps({"identifiers": []}), delay_s=0.15)

    with OpenAITestServer(slow) as srv:
        step = build_processor("llm", {"url": srv.url, "model": "m", "mode": "always", "concurrency": 3,
                                       "max_retries": 0}, ctx)
        out = step.process_batch([note(note_id=f"n{i}") for i in range(12)])
        assert len(srv.requests) == 12 and 2 <= srv.max_in_flight <= 3
    assert all(outcome(n).status == "ok" for n in out)


# --- request, key, prompt -------------------------------------------------------------------------------------


def test_request_carries_the_key_the_model_the_schema_and_the_prompt_of_the_notes_language(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    prompts = load_prompts()
    assert set(prompts) >= {"en", "es", "it", "de"}
    step = make_step(server, ctx, answer(), api_key="sk-test-41", concurrency=1)
    before = len(server.requests)
    step.process_batch([note(language=lang, note_id=lang) for lang in ("es", "it-IT", "DE", "fr", "en")])
    reqs = server.requests[before:]
    assert [r.headers["authorization"] for r in reqs] == ["Bearer sk-test-41"] * 5
    assert [r.body["messages"][0]["content"] for r in reqs] == [prompts[x].system for x in
                                                                ("es", "it", "de", "en", "en")]
    body = reqs[0].body
    assert body["model"] == "test-model" and body["max_tokens"] == 512
    schema = body["response_format"]["json_schema"]["schema"]
    assert set(schema["$defs"]["Label"]["enum"]) == {str(label) for label in Label}
    assert NOTE in user_text(body) and "- NAME:" in user_text(body)
    assert "sk-test-41" not in repr(step.client) and "sk-test-41" not in repr(step.config)


def test_prompt_files_are_versioned_and_named_by_language() -> None:
    prompts = load_prompts()
    for lang, p in prompts.items():
        assert p.language == lang and p.version >= 1 and "{text}" in p.user and "{types}" in p.user
        assert set(p.types) == set(Label)
    assert prompt_version(prompts) == ",".join(f"{k}:{prompts[k].version}" for k in sorted(prompts))


# --- gate -------------------------------------------------------------------------------------------------------


def test_risky_mode_sends_only_notes_at_or_over_the_threshold_and_records_every_score(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    quiet = note("Pt resting. BP 120/80, HR 72. Continue lisinopril 10 mg daily.", note_id="quiet")
    busy = note(("Seen by Dr Zbigniew Wroclawski with Magdalena Przybylska and Bartosz Kwiatkowski at Oakhaven "
                 "Lakeside Pavilion. Call 617-555-0199 re MRN 4471902. " * 6), note_id="busy")
    probe = make_step(server, ctx, answer(), mode="risky")
    low, high = probe.gate_score(quiet), probe.gate_score(busy)
    assert low < high
    step = make_step(server, ctx, answer(("Zbigniew", "NAME")), mode="risky", risk_threshold=high)  # ">=" sends
    before = len(server.requests)
    out = step.process_batch([quiet, busy])
    assert len(server.requests) - before == 1 and window_text(server.requests[-1].body) == busy.text
    q, b = outcome(out[0]), outcome(out[1])
    assert (q.status, q.reason, q.gate_score) == ("skipped", "below_threshold", round(low, 6))
    assert (b.status, b.gate_score, b.mode) == ("ok", round(high, 6), "risky") and b.spans == 6
    assert out[0].spans == quiet.spans and out[0].extra["llm_gate_score"] == low
    (empty,) = make_step(server, ctx, answer()).process_batch([note("   \n", note_id="e")])
    assert (outcome(empty).status, outcome(empty).reason) == ("skipped", "empty_note")


def test_gate_score_is_the_residual_risk_of_the_candidates_the_ensemble_would_accept(
    server: OpenAITestServer, ctx: BuildContext,
) -> None:
    text = "Wife Marguerite Kowalczyk visited; call 934-364-2389."
    step = make_step(server, ctx, answer())
    bare = step.gate_score(note(text))
    a, b = text.index("Marguerite"), text.index("Kowalczyk") + len("Kowalczyk")
    strong = Span(start=a, end=b, label=Label.NAME, score=0.9, source="ner")
    weak = Span(start=a, end=b, label=Label.NAME, score=0.01, source="ner")
    assert step.gate_score(note(text, spans=(strong,))) < bare  # covered: the names no longer count
    assert step.gate_score(note(text, spans=(weak,))) > step.gate_score(note(text, spans=(strong,)))


# --- the pipeline around it ---------------------------------------------------------------------------------------


def test_in_the_pipeline_recovery_still_applies_to_llm_spans_and_versions_name_the_model_and_prompt(
    server: OpenAITestServer,
) -> None:
    server.set_backend(answer(("Kowalczyk", "NAME"), ("Parkinson", "NAME")))
    steps = ("regex", "llm", "recovery", "ensemble", "transform", "leakcheck", "metrics")
    cfg = PipelineConfig(steps=steps, options={"llm": {"url": server.url, "model": "served-7b", "mode": "always",
                                                       "max_retries": 0,
                                                       "api_key": SecretStr("sk-hidden-9")}})
    pipe = Pipeline.from_config(cfg)
    (out,) = pipe.run([NoteIn(note_id="p1", text="Kowalczyk has Parkinson disease; Kowalczyk is stable.")])
    assert out.output == "[NAME] has Parkinson disease; [NAME] is stable."
    assert [s.source for s in out.dropped if s.source == "llm"] == ["llm"]  # recovery un-tagged "Parkinson"
    assert out.metrics is not None and out.metrics.llm is not None and out.metrics.metrics_version == "3"
    assert (out.metrics.llm.status, out.metrics.llm.spans) == ("ok", 3)
    v = pipe.versions()
    assert v.llm_model == "served-7b" and v.llm_prompt == prompt_version(load_prompts())
    headers = dict(version_headers(v))
    assert headers["deid-llm-model"] == b"served-7b" and headers["deid-llm-prompt"].startswith(b"de:")
    dumped = json.dumps(cfg.model_dump(mode="json"), default=str)
    assert "sk-hidden-9" not in dumped and "sk-hidden-9" not in repr(cfg)
    hashed = PipelineConfig(steps=steps, options={"llm": {**cfg.options["llm"], "api_key": SecretStr("another-key")}})
    assert hashed.config_hash() == cfg.config_hash()  # the key is masked before hashing
