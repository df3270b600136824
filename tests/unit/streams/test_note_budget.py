"""The worker's per-note time budget (worker.note_timeout_s, E422): the deadline, the Pipeline letting it through,
the batch step running a batch over budget note by note, and the settings check against liveness. The
broker-level test is tests/integration/test_note_budget.py."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from processors import budget
from processors.pipeline import Note, Pipeline, PipelineConfig
from schemas.errors import ERROR_CODES, NoteTimeout
from streams.codec import InRecord
from streams.settings import Settings
from streams.worker import BatchProcessor

#: the slow note's identifiers: none may reach a DLQ reason
SLOW_IDENTIFIERS = ("Quenby", "Harrowgate", "MRN-5550199")


class SlowOn:
    """A step that sleeps ``seconds`` (in short slices, checking the budget as long loops do) on notes whose text
    contains ``marker``; counts the notes it saw."""

    name = "slowstep"

    def __init__(self, marker: str, seconds: float, *, check: bool = True) -> None:
        self.marker, self.seconds, self.check = marker, seconds, check
        self.seen: list[str] = []

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        for n in notes:
            self.seen.append(n.note_id)
            if self.marker in n.text:
                end = time.monotonic() + self.seconds
                while time.monotonic() < end:
                    time.sleep(0.01)
                    if self.check:
                        budget.check(self.name)
        return list(notes)


def _processor(slow: SlowOn, note_timeout_s: float | None) -> BatchProcessor:
    pipeline = Pipeline.from_config(PipelineConfig(steps=("transform", "leakcheck")))
    pipeline.processors.insert(0, slow)
    return BatchProcessor(pipeline, note_timeout_s=note_timeout_s)


def _record(i: int, text: str) -> InRecord:
    body = {"id": f"n{i}", "text": text, "patient": {"mrn": "MRN-5550199"}}
    return InRecord("notes.raw", 0, i, b"k", json.dumps(body).encode(), (), None)


SLOW_TEXT = "Pt Quenby Harrowgate MRN-5550199 seen today. SLOW"


def test_when_no_deadline_is_set_then_check_does_nothing() -> None:
    budget.check("x")
    assert budget.remaining_s() is None


def test_when_deadline_has_passed_then_check_raises_e422_naming_the_step() -> None:
    with budget.deadline(0.0):
        time.sleep(0.01)
        with pytest.raises(NoteTimeout) as err:
            budget.check("ner")
    assert err.value.code == "E422" and err.value.stage == "ner" and "E422" in ERROR_CODES
    budget.check("after")  # the deadline ends with its block


def test_when_a_step_runs_over_budget_then_the_pipeline_does_not_isolate_it_per_note() -> None:
    slow = SlowOn("SLOW", 5.0)
    pipeline = Pipeline([slow])
    t0 = time.monotonic()
    with budget.deadline(0.2), pytest.raises(NoteTimeout) as err:
        pipeline.run([Note(input=n).input for n in _inputs(["a", "b SLOW", "c"])])
    assert time.monotonic() - t0 < 2.0
    assert err.value.stage == "slowstep"
    assert slow.seen == ["a", "b"]  # no per-note retry of the batch after the timeout


def test_when_an_unchecked_step_overruns_then_the_next_step_boundary_stops_the_note() -> None:
    slow = SlowOn("SLOW", 0.4, check=False)
    after = SlowOn("never", 0.0)
    after.name = "after"
    with budget.deadline(0.1), pytest.raises(NoteTimeout) as err:
        Pipeline([slow, after]).run(_inputs(["x SLOW"]))
    assert err.value.stage == "after" and after.seen == []


def _inputs(texts: list[str]) -> list:  # type: ignore[type-arg]
    from schemas.models import NoteIn

    return [NoteIn(note_id=t.split()[0], text=t) for t in texts]


def test_when_one_note_of_a_batch_is_over_budget_then_it_alone_is_dead_lettered_with_e422() -> None:
    slow = SlowOn("SLOW", 10.0)
    proc = _processor(slow, note_timeout_s=0.5)
    records = [_record(0, "Stable, no changes."), _record(1, SLOW_TEXT), _record(2, "Seen today, doing well.")]
    progress: list[float] = []
    t0 = time.monotonic()
    result = proc.process(records, progress=lambda: progress.append(time.monotonic()))
    assert time.monotonic() - t0 < 5.0
    assert [oc.kind for oc in result.outcomes] == ["deid", "dlq", "deid"]
    dead = result.outcomes[1]
    assert dead.code == "E422"
    letter = json.loads(dead.outputs[0].value)
    assert letter["code"] == "E422" and letter["stage"] == "slowstep" and letter["error_type"] == "NoteTimeout"
    assert "0.5 s" in letter["reason"]
    for ident in SLOW_IDENTIFIERS:
        assert ident not in letter["reason"]
    assert dict(dead.outputs[0].headers)["deid-error-code"] == b"E422"
    assert len(progress) == 3  # each note's own budget marked for liveness


def test_when_a_lone_note_is_over_budget_then_it_is_not_run_a_second_time() -> None:
    slow = SlowOn("SLOW", 10.0)
    result = _processor(slow, note_timeout_s=0.3).process([_record(7, SLOW_TEXT)])
    assert [oc.code for oc in result.outcomes] == ["E422"]
    assert slow.seen == ["n7"]


def test_when_no_budget_is_set_then_a_slow_note_completes() -> None:
    slow = SlowOn("SLOW", 0.3)
    result = _processor(slow, note_timeout_s=None).process([_record(0, SLOW_TEXT)])
    # no detector ran, so the leak check quarantines the note: it went through the whole pipeline
    assert [oc.kind for oc in result.outcomes] == ["quarantine"]


def test_when_budget_is_not_shorter_than_liveness_then_settings_refuse() -> None:
    assert Settings().worker.note_timeout_s < Settings().health.stuck_after_s
    with pytest.raises(ValidationError, match="note_timeout_s"):
        Settings(worker={"note_timeout_s": 300.0}, health={"stuck_after_s": 300.0})
