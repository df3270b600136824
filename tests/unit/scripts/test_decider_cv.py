"""scripts/decider_cv.py: the aggregates ``fold-ners`` writes (the command itself runs for minutes on the fold models:
README, Quality)."""

from __future__ import annotations

import sys

from paths import REPO, load_script

from processors.evaluation.gold import GoldNote, GoldSpan

sys.path.insert(0, str(REPO / "scripts"))  # decider_cv imports ner_cv beside it
cv = load_script("decider_cv")


def _span(start: int, end: int, score: float) -> dict[str, object]:
    return {"start": start, "end": end, "label": "NAME", "score": score}


def test_when_the_ner_scores_are_summed_up_then_spans_touching_an_identifier_count_as_identifiers() -> None:
    text = "Seen by SMITH and Jones today with WARD staff."
    smith, jones, ward = text.index("SMITH"), text.index("Jones"), text.index("WARD")
    gold = [GoldNote(id="a", text=text, spans=(GoldSpan(smith, smith + 5, "NAME"), GoldSpan(jones, jones + 5, "NAME")))]
    stored = {"a": [_span(smith, smith + 5, 0.9), _span(jones - 4, jones + 2, 0.3),  # overlaps "Jones": an identifier
                    _span(ward, ward + 4, 0.6), _span(0, 4, 0.01)]}
    out = cv.score_stats(gold, stored)
    assert out["identifier"]["spans"] == 2 and out["other"]["spans"] == 2
    assert out["identifier"]["mean"] == 0.6 and out["identifier"]["share_at_0.5"] == 0.5
    assert out["other"]["mean"] == round((0.6 + 0.01) / 2, 4) and out["other"]["share_at_0.5"] == 0.5
    assert out["other"]["q50"] == round((0.6 + 0.01) / 2, 4)
    # a note without NER spans adds nothing; no spans at all: counts only
    assert cv.score_stats(gold, {}) == {"identifier": {"spans": 0}, "other": {"spans": 0}}
