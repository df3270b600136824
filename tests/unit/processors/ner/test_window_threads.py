"""The CPU's int8 NER runs its windows side by side, one intra-op thread each (``processors.ner.step.side_by_side``):
the probabilities must be the same to the bit as one window after another on all of torch's threads, the caller's
thread setting must come back, and an error in one window must stop the others and reach the caller."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest
import torch

import processors.ner.step as ner_step
from processors.pipeline import BuildContext, build_processor
from streams.cli.bench import fixed_length_notes

LONG = "Seen by Dr. Ansel Whitcombe on 03/04/2021 at Larchmere Clinic; stable, continue the plan. " * 40


@pytest.fixture(scope="module")
def shipped() -> Any:
    return build_processor("ner", {}, BuildContext())


def one_after_another(chunks: Any, run: Any, threads: int) -> None:
    """The sequential loop the side-by-side path replaces: every window on all of torch's threads."""
    with torch.inference_mode():
        for chunk in chunks:
            run(chunk)


def test_windows_side_by_side_give_the_same_probabilities_to_the_bit(shipped: Any, two_threads: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = shipped.model
    assert loaded.quantized  # the default profile, cpu-int8: one window a call
    texts = [n.text for n in fixed_length_notes(24, 1000)] + [LONG, "Pt seen.", "Call Jo Ann Perez at 555-0199."]
    calls: list[int] = []
    real = ner_step.side_by_side

    def counted(chunks: Any, run: Any, threads: int) -> None:
        calls.append(threads)
        real(chunks, run, threads)

    monkeypatch.setattr(ner_step, "side_by_side", counted)
    threaded = ner_step.predict(loaded, texts)
    assert calls == [2]
    assert torch.get_num_threads() == 2  # the caller's setting is back
    monkeypatch.setattr(ner_step, "side_by_side", one_after_another)
    sequential = ner_step.predict(loaded, texts)
    assert len(threaded) == len(sequential) == len(texts)
    for a, b in zip(threaded, sequential, strict=True):
        assert np.array_equal(a.offsets, b.offsets)
        assert a.probs.dtype == b.probs.dtype and np.array_equal(a.probs, b.probs)
    assert LONG and max(len(p.offsets) for p in threaded) > 510  # the long note took more than one window


def test_the_spans_are_the_same_as_on_one_thread(shipped: Any, two_threads: Any) -> None:
    """One intra-op thread everywhere (what ``--workers 2`` gives each process on two cores) takes the sequential
    loop: the same spans as the side-by-side windows."""
    from processors.pipeline import Note
    from schemas.models import NoteIn

    notes = [Note(input=n) for n in fixed_length_notes(12, 1000)] + [Note(input=NoteIn(note_id="long", text=LONG))]
    side_by_side = shipped.process_batch(notes)
    torch.set_num_threads(1)
    alone = shipped.process_batch(notes)
    assert [n.spans for n in side_by_side] == [n.spans for n in alone]
    assert sum(len(n.spans) for n in alone) > 12


def test_an_error_in_one_window_stops_the_others_and_reaches_the_caller(two_threads: Any) -> None:
    ran: list[int] = []
    lock = threading.Lock()

    def run(chunk: int) -> None:
        with lock:
            ran.append(chunk)
        time.sleep(0.002)  # a window's forward lets the other thread run
        if chunk == 3:
            raise ValueError("window 3 failed")

    with pytest.raises(ValueError, match="window 3 failed"):
        ner_step.side_by_side(list(range(100)), run, 2)
    assert 3 in ran and len(ran) <= 6  # the other thread finishes the window in hand, then takes no other
    assert torch.get_num_threads() == 2


def test_each_thread_runs_torch_on_one_intra_op_thread(two_threads: Any) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def run(chunk: int) -> None:
        with lock:
            seen.append(torch.get_num_threads())

    ner_step.side_by_side(list(range(8)), run, 2)
    assert seen == [1] * 8
    assert torch.get_num_threads() == 2


def test_threads_started_later_get_the_callers_setting_back(shipped: Any, two_threads: Any,
                                                           new_thread_setting: Any) -> None:
    """torch gives a new thread the last setting made anywhere in the process; a window thread's one must not stay
    (a worker's executor thread started later would run its NER on one thread)."""
    for _ in range(3):
        ner_step.predict(shipped.model, [n.text for n in fixed_length_notes(6, 1000)])
        assert torch.get_num_threads() == 2 and new_thread_setting() == 2


def test_a_window_thread_that_ends_last_does_not_leave_its_setting_to_threads_started_later(
        two_threads: Any, new_thread_setting: Any) -> None:
    """The window thread takes its first setting from the last one made anywhere (here 1, by another thread) and puts
    it back when it ends; it ends last (its chunk is slow), so without the caller's own reset threads started later
    would run torch on that one thread."""
    elsewhere = threading.Thread(target=torch.set_num_threads, args=(1,))
    elsewhere.start()
    elsewhere.join()
    assert torch.get_num_threads() == 2  # this thread's own setting

    def run(chunk: int) -> None:
        if threading.current_thread().name.startswith("ner-window"):
            time.sleep(0.3)

    ner_step.side_by_side([0, 1], run, 2)
    assert torch.get_num_threads() == 2 and new_thread_setting() == 2
