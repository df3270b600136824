"""Judge panel: majority voting, discarded items, deterministic and fake judges (the LLM judges:
test_llm_judges.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from judge_note import GOLD, TEXT

from processors.evaluation.judges import (
    CoverageJudge,
    JudgeItem,
    StringJudge,
    Verdict,
    build_judges,
    majority,
    panel_items,
    run_panel,
)
from processors.pipeline import Replacement
from processors.spans import OffsetMap
from schemas.models import Span

TP, FN, FP = Verdict.TP, Verdict.FN, Verdict.FP


@pytest.mark.parametrize("votes, n, threshold, expected", [
    ([TP, TP, FN], 3, 0.5, TP),
    ([TP, FN, None], 3, 0.5, None),          # 1/3 each: no majority -> discarded
    ([TP, None, None], 3, 0.5, None),        # abstentions count as votes for nothing
    ([TP, TP, FN], 3, 0.6, TP),              # 2/3 > 0.6
    ([TP, TP, FN], 3, 0.7, None),            # 2/3 <= 0.7
    ([TP, FN], 2, 0.5, None),                # a tie is no majority
    ([FP, FP, FP, TP], 4, 0.5, FP),
    ([], 0, 0.5, None),
])
def test_when_judges_vote_then_a_verdict_needs_more_than_the_threshold(votes: list[Verdict | None], n: int,
                                                                       threshold: float,
                                                                       expected: Verdict | None) -> None:
    assert majority(votes, n, threshold) == expected


class Fixed:
    """A fake judge: the same verdict for gold items and another for lone predictions."""

    def __init__(self, name: str, gold: Verdict | None, pred: Verdict | None = FP) -> None:
        self.name, self.gold, self.pred = name, gold, pred

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        return [self.pred if it.kind == "pred" else self.gold for it in items]


class ByLabel:
    """A fake judge that misses one label."""

    def __init__(self, name: str, missed: str) -> None:
        self.name, self.missed = name, missed

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        return [FP if it.kind == "pred" else (FN if it.label == self.missed else TP) for it in items]


def _items(pred: list[dict[str, Any]]) -> list[JudgeItem]:
    return panel_items({"n1": TEXT}, {"n1": GOLD}, {"n1": pred})


def test_when_predictions_overlap_no_gold_then_they_become_pred_items() -> None:
    items = _items([{"start": 3, "end": 7, "label": "NAME"}, {"start": 0, "end": 2, "label": "NAME"}])
    assert [(i.kind, i.start, i.end) for i in items] == [("gold", 3, 13), ("gold", 19, 28), ("gold", 32, 44),
                                                         ("pred", 0, 2)]
    assert items[0].predicted == ((0, 2), (3, 7))


def test_when_the_panel_agrees_then_counts_follow_the_majority() -> None:
    items = _items([{"start": 0, "end": 2, "label": "NAME"}])
    judges = [ByLabel("a", "DATE"), ByLabel("b", "DATE"), ByLabel("c", "NAME")]
    res = run_panel(judges, items)
    # NAME: TP,TP,FN -> TP; DATE: FN,FN,TP -> FN; ORG: TP x3; the lone prediction: FP x3
    assert (res.tp, res.fn, res.fp, res.tp_pred, res.discarded) == (2, 1, 1, 0, 0)
    assert res.recall == pytest.approx(2 / 3) and res.precision == pytest.approx(2 / 3)
    assert res.agreement == {"a": 1.0, "b": 1.0, "c": 0.5}
    assert res.per_label["DATE"] == {"fn": 1} and res.per_label["NAME"] == {"tp": 1, "fp": 1}


def test_when_no_verdict_has_a_majority_then_items_are_discarded() -> None:
    items = _items([])
    res = run_panel([Fixed("tp", TP), Fixed("fn", FN), Fixed("abstain", None)], items)
    assert (res.tp, res.fn, res.discarded) == (0, 0, 3)
    assert res.recall is None and res.to_dict()["discarded"] == 3


def test_when_judges_say_a_lone_prediction_is_real_then_it_counts_as_tp_not_in_gold() -> None:
    items = _items([{"start": 0, "end": 2, "label": "NAME"}])
    res = run_panel([Fixed("x", TP, TP), Fixed("y", TP, TP), Fixed("z", TP, FP)], items)
    assert (res.tp, res.tp_pred, res.fp) == (3, 1, 0)


def test_when_a_judge_returns_the_wrong_number_of_verdicts_then_the_panel_refuses() -> None:
    class Short:
        name = "short"

        def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
            return []

    with pytest.raises(ValueError):
        run_panel([Short()], _items([]))
    with pytest.raises(ValueError):
        run_panel([], _items([]))
    with pytest.raises(ValueError, match="unique"):
        run_panel([Fixed("x", TP), Fixed("x", FN)], _items([]))


@pytest.mark.parametrize("pred, min_share, expected", [
    ([(3, 13)], 1.0, [TP, FN, FN]),
    ([(3, 7)], 1.0, [FN, FN, FN]),            # "Smith" not covered
    ([(3, 7)], 0.5, [TP, FN, FN]),            # half of the tokens
    ([(19, 21), (32, 37)], 0.5, [FN, FN, TP]),  # date: 1 of 3 tokens ("7"); clinic: 1 of 2
])
def test_when_coverage_judges_then_token_share_decides(pred: list[tuple[int, int]], min_share: float,
                                                       expected: list[Verdict]) -> None:
    items = _items([{"start": s, "end": e, "label": "X"} for s, e in pred])
    assert CoverageJudge(min_share).judge(items) == expected


def test_when_the_output_still_holds_an_entity_then_the_string_judge_says_fn() -> None:
    name = Span(start=3, end=13, label="NAME", source="regex")  # type: ignore[arg-type]
    out = "Pt [NAME] seen 7/22/2019 at Mercy Clinic."
    offsets = OffsetMap.from_replacements([Replacement(3, 9, name)])
    items = panel_items({"n1": TEXT}, {"n1": GOLD}, {"n1": [name]}, outputs={"n1": (out, offsets)})
    assert StringJudge().judge(items) == [TP, FN, FN]
    assert StringJudge().judge(_items([])) == [None, None, None]  # no output: abstain


def test_when_judges_are_named_then_build_judges_makes_them() -> None:
    assert [j.name for j in build_judges(["entity", "partial", "any", "string"])] == [
        "entity", "partial", "any", "string"]
    with pytest.raises(ValueError):
        build_judges(["oracle"])
    with pytest.raises(ValueError, match="--judge"):
        build_judges(["llm=http://h:8000@m"])
