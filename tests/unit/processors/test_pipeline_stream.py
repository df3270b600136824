"""``Pipeline.run_stream``: the NER of the next batch started ahead (``NER.prefetch``) while this batch's later steps
run. Each batch must come out as ``Pipeline.run`` gives it (spans, dropped candidates, errors), a failure must be
isolated as ``run`` isolates it, and no thread may be left running when the stream ends, stops early or raises."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from processors import budget
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.errors import NoteTimeout
from schemas.models import NoteIn
from streams.cli.bench import fixed_length_notes

DETECT = ("regex", "ner", "dictionary", "recovery", "decide", "ensemble")
LONG = "Seen by Dr. Ansel Whitcombe on 03/04/2021 at Larchmere Clinic; stable, continue the plan. " * 40


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline.from_config(PipelineConfig().model_copy(update={"steps": DETECT}))


def batches() -> list[list[NoteIn]]:
    notes = fixed_length_notes(40, 1000)
    notes.insert(13, NoteIn(note_id="long", text=LONG))
    notes.insert(5, NoteIn(note_id="short", text="Pt seen."))
    return [notes[i:i + 9] for i in range(0, len(notes), 9)]


def outcome(batch: Sequence[Note]) -> list[Any]:
    return [(n.note_id, n.spans, n.dropped, n.error) for n in batch]


def ner_of(pipeline: Pipeline) -> Any:
    (ner,) = [p for p in pipeline.processors if p.name == "ner"]
    return ner


def test_each_batch_comes_out_as_run_gives_it_with_the_ner_started_ahead(
        pipeline: Pipeline, two_threads: Any, new_thread_setting: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ner = ner_of(pipeline)
    started: list[int] = []
    real = ner.prefetch

    def counted(notes: Sequence[Note]) -> Any:
        started.append(len(notes))
        finish = real(notes)
        assert finish is not None  # the int8 path with two threads: really started ahead
        return finish

    monkeypatch.setattr(ner, "prefetch", counted)
    threads, switch = threading.active_count(), sys.getswitchinterval()
    streamed = list(pipeline.run_stream(batches()))
    assert started == [len(b) for b in batches()[1:]]  # every batch but the first was started ahead
    assert [outcome(b) for b in streamed] == [outcome(pipeline.run(b)) for b in batches()]
    assert sum(len(n.spans) for b in streamed for n in b) > 40
    assert threading.active_count() == threads and sys.getswitchinterval() == switch
    # a thread started later gets the caller's torch setting, not a window thread's
    assert new_thread_setting() == 2 and torch.get_num_threads() == 2


def test_a_failure_in_the_batch_started_ahead_is_isolated_note_by_note_as_run_does(
        pipeline: Pipeline, two_threads: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ner = ner_of(pipeline)
    real = ner._probabilities

    def fails_on_boom(notes: Sequence[Note], board: Any = None) -> Any:
        if any("BOOM" in n.text for n in notes):
            raise ValueError("model call failed")
        return real(notes, board)

    monkeypatch.setattr(ner, "_probabilities", fails_on_boom)
    data = batches()
    data[2][3] = NoteIn(note_id="boom", text="Call BOOM Whitcombe at 555-0199 on 03/04/2021.")
    streamed = list(pipeline.run_stream(data))
    assert [outcome(b) for b in streamed] == [outcome(pipeline.run(b)) for b in data]
    failed = [n for b in streamed for n in b if n.error is not None]
    assert [(n.note_id, n.error.stage, n.error.error_type) for n in failed] == [("boom", "ner", "ValueError")]


def test_a_consumer_that_stops_early_leaves_no_thread_running(pipeline: Pipeline, two_threads: Any) -> None:
    threads, switch = threading.active_count(), sys.getswitchinterval()
    stream = pipeline.run_stream(batches())
    first = next(stream)
    assert len(first) == 9
    stream.close()
    assert threading.active_count() == threads and sys.getswitchinterval() == switch


class Slow:
    """A later step that takes 0.2 s a batch: the budget runs out in the middle of the stream."""

    name = "slow"

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        time.sleep(0.2)
        return list(notes)


def test_a_budget_spent_in_a_later_step_raises_and_leaves_no_thread_running(pipeline: Pipeline,
                                                                             two_threads: Any) -> None:
    regex, ner = pipeline.processors[0], ner_of(pipeline)
    slow = Pipeline([regex, ner, Slow()])
    threads, switch = threading.active_count(), sys.getswitchinterval()
    with budget.deadline(0.5), pytest.raises(NoteTimeout) as err:
        list(slow.run_stream(batches()))
    assert err.value.stage in ("slow", "ner", "regex")
    assert threading.active_count() == threads and sys.getswitchinterval() == switch


def test_with_one_torch_thread_nothing_starts_ahead_and_the_output_is_the_same(pipeline: Pipeline) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        notes = [Note(input=n) for n in batches()[0]]
        assert ner_of(pipeline).prefetch(notes) is None
        assert [outcome(b) for b in pipeline.run_stream(batches()[:2])] == [
            outcome(pipeline.run(b)) for b in batches()[:2]]
    finally:
        torch.set_num_threads(before)
