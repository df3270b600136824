"""The NER step checks the time budget (processors.budget) between model windows, so a long note stops at the
next window once its budget is spent instead of running all of its windows."""

from __future__ import annotations

from typing import Any

import pytest

from processors import budget
from processors.ner.step import predict
from processors.pipeline import BuildContext, Note, build_processor
from schemas.errors import NoteTimeout
from schemas.models import NoteIn

LONG = "Seen by Dr. Ansel Whitcombe on 03/04/2021 at Larchmere Clinic; stable, continue the plan. " * 300


@pytest.fixture(scope="module")
def shipped() -> Any:
    return build_processor("ner", {}, BuildContext())


def test_when_the_budget_is_spent_then_predict_stops_before_the_next_window(shipped: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str | None] = []
    real = budget.check

    def after_two_windows(stage: str | None = None) -> None:
        calls.append(stage)
        if len(calls) > 2:  # the first two windows run, then the (already spent) budget is checked for real
            real(stage)

    monkeypatch.setattr(budget, "check", after_two_windows)
    windows = -(-len(shipped.model.tokenizer(LONG, add_special_tokens=False)["input_ids"]) // 446)
    assert windows >= 5
    with budget.deadline(0.0), pytest.raises(NoteTimeout) as err:
        predict(shipped.model, [LONG])
    assert err.value.stage == "ner" and err.value.code == "E422"
    assert calls == ["ner"] * 3  # checked before each window; stopped at the third of its windows


def test_when_the_budget_is_ample_then_spans_are_the_same_as_without_one(shipped: Any) -> None:
    note = Note(input=NoteIn(note_id="n", text=LONG[:5000]))
    (plain,) = shipped.process_batch([note])
    with budget.deadline(600):
        (timed,) = shipped.process_batch([note])
    assert timed.spans == plain.spans and plain.spans
