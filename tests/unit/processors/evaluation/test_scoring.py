"""Token-level and entity-level scoring and the overall bootstrap intervals (hand-computed values)."""

from __future__ import annotations

import json

import pytest

from processors.evaluation.gold import GoldNote, GoldSpan
from processors.evaluation.scoring import NoteCounts, bootstrap_ci, evaluate, tokens
from schemas.models import Span

#           0         1         2         3         4
#           0123456789012345678901234567890123456789012345
TEXT = "Pt John Smith seen 7/22/2019, call 555-1234."
# tokens: Pt John Smith seen 7 22 2019 call 555 1234  (10)


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("J.Smith,", [(0, 1), (2, 7)]),
    ("555-1234", [(0, 3), (4, 8)]),
    ("a_b  c", [(0, 1), (2, 3), (5, 6)]),
    ("Zoë 42yo", [(0, 3), (4, 8)]),
    ("-- , .", []),
])
def test_when_tokenising_then_runs_of_letters_and_digits_are_tokens(text: str,
                                                                   expected: list[tuple[int, int]]) -> None:
    assert tokens(text) == expected


def _note(spans: list[tuple[int, int, str]], text: str = TEXT, note_id: str = "n1") -> GoldNote:
    return GoldNote(note_id, text, tuple(GoldSpan(s, e, lab, None, text[s:e]) for s, e, lab in spans))


def _pred(spans: list[tuple[int, int, str]]) -> list[dict[str, object]]:
    return [{"start": s, "end": e, "label": lab} for s, e, lab in spans]


NAME = (3, 13, "NAME")
DATE = (19, 28, "DATE")
PHONE = (35, 43, "PHONE")


@pytest.mark.parametrize("case, gold, pred, tp, fp, fn, entities, found", [
    ("exact match", [NAME], [NAME], 2, 0, 0, 1, 1),
    ("partial overlap of both tokens", [NAME], [(5, 10, "NAME")], 2, 0, 0, 1, 1),
    ("partial overlap of one token", [NAME], [(3, 5, "NAME")], 1, 0, 1, 1, 0),
    ("prediction spanning two tokens", [(3, 7, "NAME")], [NAME], 1, 1, 0, 1, 1),
    ("no prediction", [NAME, DATE], [], 0, 0, 5, 2, 0),
    ("date cut short", [DATE], [(19, 23, "DATE")], 2, 0, 1, 1, 0),
    ("prediction on punctuation only", [], [(28, 30, "DATE")], 0, 0, 0, 0, 0),
    ("gold on punctuation only", [(28, 29, "DATE")], [], 0, 0, 0, 0, 0),
    ("one of two entities found", [NAME, PHONE], [PHONE], 2, 0, 2, 2, 1),
    ("false positive", [], [(0, 2, "NAME")], 0, 1, 0, 0, 0),
    ("wrong label still covers", [NAME], [(3, 13, "ID")], 2, 0, 0, 1, 1),
    ("overlapping predictions count a token once", [NAME], [NAME, (3, 7, "ID")], 2, 0, 0, 1, 1),
])
def test_when_evaluating_then_token_and_entity_counts_match_hand_counts(
        case: str, gold: list[tuple[int, int, str]], pred: list[tuple[int, int, str]], tp: int, fp: int,
        fn: int, entities: int, found: int) -> None:
    result = evaluate([_note(gold)], {"n1": _pred(pred)})
    assert (result.tp, result.fp, result.fn, result.entities, result.entities_found) == (tp, fp, fn, entities,
                                                                                         found), case
    assert result.tokens == 10


def test_when_labels_disagree_then_recall_is_by_gold_label_and_precision_by_predicted_label() -> None:
    result = evaluate([_note([NAME, DATE])], {"n1": _pred([(3, 13, "DATE")])})
    assert (result.tp, result.fp, result.fn) == (2, 0, 3)
    assert result.recall == pytest.approx(0.4) and result.precision == 1.0
    name, date = result.per_label["NAME"], result.per_label["DATE"]
    assert (name.gold_tokens, name.gold_tokens_found, name.pred_tokens, name.recall, name.precision) == (
        2, 2, 0, 1.0, None)
    assert (date.gold_tokens, date.gold_tokens_found, date.pred_tokens, date.pred_tokens_correct) == (3, 0, 2, 2)
    assert (date.recall, date.precision, date.f1) == (0.0, 1.0, 0.0)
    assert (name.entities, name.entities_found, date.entities, date.entities_found) == (1, 1, 1, 0)


def test_when_predictions_are_span_models_then_they_are_scored_like_dicts() -> None:
    spans = [Span(start=3, end=13, label="NAME", source="regex"), Span(start=35, end=38, label="PHONE",
                                                                     source="regex")]
    result = evaluate([_note([NAME, PHONE])], {"n1": spans})
    assert (result.tp, result.fp, result.fn, result.entities_found) == (3, 0, 1, 1)
    assert result.per_label["PHONE"].pred_tokens == 1


def test_when_a_note_has_no_predictions_then_it_counts_as_missing_and_all_fn() -> None:
    result = evaluate([_note([NAME]), _note([DATE], note_id="n2")], {"n1": _pred([NAME])})
    assert result.missing_predictions == 1 and (result.tp, result.fn) == (2, 3)
    blob = json.loads(json.dumps(result.to_dict(include_notes=True)))
    assert blob["recall"] == pytest.approx(0.4) and len(blob["per_note"]) == 2
    assert blob["per_label"]["DATE"]["recall"] == 0.0


def test_when_nothing_is_predicted_or_gold_then_undefined_ratios_are_none() -> None:
    result = evaluate([_note([])], {"n1": []})
    assert (result.precision, result.recall, result.f1, result.entity_recall) == (None, None, None, None)


# ----------------------------------------------------------------------------------------- bootstrap

COUNTS = [NoteCounts(f"n{i}", 100, tp=8 + i % 3, fp=i % 2, fn=i % 4, entities=5, entities_found=4 + (i % 2))
          for i in range(25)]


def test_when_bootstrapping_with_a_seed_then_it_is_deterministic_and_contains_the_estimate() -> None:
    first = bootstrap_ci(COUNTS, n=200, seed=3)
    assert first == bootstrap_ci(COUNTS, n=200, seed=3)
    assert first != bootstrap_ci(COUNTS, n=200, seed=4)
    tp, fp, fn = (sum(getattr(c, k) for c in COUNTS) for k in ("tp", "fp", "fn"))
    point = {"recall": tp / (tp + fn), "precision": tp / (tp + fp),
             "entity_recall": sum(c.entities_found for c in COUNTS) / sum(c.entities for c in COUNTS)}
    for key, value in point.items():
        interval = first[key]
        assert interval is not None and interval[0] <= value <= interval[1] and interval[0] < interval[1]
    narrow = bootstrap_ci(COUNTS, n=200, seed=3, alpha=0.5)["recall"]
    assert narrow is not None and first["recall"] is not None
    assert first["recall"][0] <= narrow[0] <= narrow[1] <= first["recall"][1]


def test_when_every_note_is_perfect_then_the_interval_is_a_point() -> None:
    perfect = [NoteCounts("a", 10, 3, 0, 0, 1, 1), NoteCounts("b", 10, 5, 0, 0, 2, 2)]
    assert bootstrap_ci(perfect, n=50)["recall"] == (1.0, 1.0)
    assert bootstrap_ci([], n=10) == {"precision": None, "recall": None, "f1": None, "entity_recall": None}
    with pytest.raises(ValueError):
        bootstrap_ci(perfect, alpha=1.5)


def test_when_bootstrapping_then_the_intervals_are_those_of_the_hand_written_bootstrap_before_numpy() -> None:
    # values printed by the pure-Python bootstrap (random.Random draws, hand-written type-7 quantile) that
    # numpy replaced: same draws, same sums, same quantiles, bit for bit
    assert bootstrap_ci(COUNTS, n=200, seed=3) == {
        "precision": (0.9308801479408236, 0.9694389307926427), "recall": (0.8257340743198408, 0.8928717798594848),
        "f1": (0.8793774319066148, 0.9240821471715952), "entity_recall": (0.856, 0.936)}


def test_when_predictions_cover_non_identifier_numbers_and_words_then_content_changed_counts_them() -> None:
    from processors.evaluation.gold import GoldNote, GoldSpan
    from processors.evaluation.scoring import evaluate

    text = "Wife Maude called. HR 88 BP 120/80 on levo."
    maude = text.index("Maude")
    note = GoldNote("n1", text, (GoldSpan(maude, maude + 5, "NAME"),))
    hr, bp, levo = text.index("88"), text.index("120/80"), text.index("levo")
    result = evaluate([note], {"n1": [{"start": maude, "end": maude + 5, "label": "NAME"},
                                      {"start": bp, "end": bp + 6, "label": "DATE"},
                                      {"start": levo, "end": levo + 4, "label": "NAME"}]})
    content = result.content_changed()
    # numbers: 88, 120, 80 (3 tokens), of which 120 and 80 changed; words: Wife, called, HR, BP, on, levo (6), "levo" changed
    assert (content["number_tokens"], content["numbers_changed"]) == (3, 2)
    assert (content["word_tokens"], content["words_changed"]) == (6, 1)
    assert content["notes_with_a_number_changed"] == 1 and hr < bp
