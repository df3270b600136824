"""processors.ensemble: the score / vote acceptance policy, overlap resolution (extent, label, subtype,
score, provenance) and the ``ensemble`` step that applies them to a note. Spans are built by hand."""

from __future__ import annotations

import pytest

from processors.ensemble import Ensemble, accept, resolve_overlaps
from processors.pipeline import BuildContext, Note, build_processor
from schemas import ConfigError, NoteIn, Span

THRESHOLDS = {"regex": 0.3, "dictionary": 0.5, "ner": 0.5, "message": 0.0}
DEFAULT = 0.4


def span(start: int, end: int, source: str = "ner", score: float = 0.9, label: str = "NAME",
         subtype: str | None = None) -> Span:
    return Span(start=start, end=end, label=label, subtype=subtype,  # type: ignore[arg-type]
                score=score, source=source)


def key(s: Span) -> tuple[int, int, str, float]:
    return s.start, s.end, s.source, s.score


# --- acceptance: a span passes on its score, or on the votes of the sources that overlap it -------------

# (id, candidates, min_votes, accepted (start, end, source, score); the others are rejected)
ACCEPT_CASES: list[tuple[str, list[Span], int, list[tuple[int, int, str, float]]]] = [
    ("score_at_threshold_is_accepted", [span(0, 5, "ner", 0.5)], 2, [(0, 5, "ner", 0.5)]),
    ("score_below_threshold_alone_is_rejected", [span(0, 5, "ner", 0.49)], 2, []),
    ("each_source_has_its_own_threshold", [span(0, 5, "regex", 0.3), span(10, 15, "dictionary", 0.3)], 2,
     [(0, 5, "regex", 0.3)]),
    ("unknown_source_takes_the_default_threshold", [span(0, 5, "llm", 0.4), span(10, 15, "llm", 0.39)], 2,
     [(0, 5, "llm", 0.4)]),
    ("message_identifiers_pass_at_any_score", [span(0, 5, "message", 0.0)], 2, [(0, 5, "message", 0.0)]),
    ("merged_provenance_takes_the_lowest_threshold_of_its_sources", [span(0, 5, "dictionary+regex", 0.35)], 5,
     [(0, 5, "dictionary+regex", 0.35)]),
    ("merged_provenance_counts_as_votes_of_its_own", [span(0, 5, "dictionary+ner", 0.1)], 2,
     [(0, 5, "dictionary+ner", 0.1)]),
    ("weak_span_rescued_by_an_overlapping_source",
     [span(0, 5, "ner", 0.2), span(3, 9, "dictionary", 0.2), span(20, 25, "ner", 0.2)], 2,
     [(0, 5, "ner", 0.2), (3, 9, "dictionary", 0.2)]),
    ("rejected_neighbours_still_vote",  # ner and regex see two sources each, dictionary sees all three
     [span(0, 5, "ner", 0.1), span(3, 9, "dictionary", 0.2), span(8, 12, "regex", 0.1)], 3,
     [(3, 9, "dictionary", 0.2)]),
    ("overlap_from_the_same_source_is_no_second_vote", [span(0, 5, "ner", 0.2), span(2, 7, "ner", 0.2)], 2, []),
    ("touching_spans_do_not_vote_for_each_other", [span(0, 5, "ner", 0.2), span(5, 9, "dictionary", 0.2)], 2, []),
    ("three_votes_needed_two_are_not_enough", [span(0, 5, "ner", 0.2), span(1, 4, "dictionary", 0.2)], 3, []),
    ("three_sources_reach_three_votes",
     [span(0, 5, "ner", 0.2), span(1, 4, "dictionary", 0.2), span(3, 8, "regex", 0.1)], 3,
     [(0, 5, "ner", 0.2), (1, 4, "dictionary", 0.2), (3, 8, "regex", 0.1)]),
    ("a_strong_span_is_accepted_without_votes", [span(0, 5, "ner", 0.95)], 3, [(0, 5, "ner", 0.95)]),
]


@pytest.mark.parametrize(("candidates", "min_votes", "accepted"), [c[1:] for c in ACCEPT_CASES],
                         ids=[c[0] for c in ACCEPT_CASES])
def test_when_candidates_are_scored_then_threshold_or_votes_decide(
    candidates: list[Span], min_votes: int, accepted: list[tuple[int, int, str, float]],
) -> None:
    acc, rej = accept(candidates, THRESHOLDS, DEFAULT, min_votes)
    assert [key(s) for s in acc] == accepted
    # every candidate lands in exactly one list, in input order
    assert sorted(map(id, acc + rej)) == sorted(map(id, candidates))
    assert [s for s in candidates if s in rej] == rej


# --- overlap resolution ---------------------------------------------------------------------------------

# (id, accepted spans, resolved (start, end, label, subtype, score, source))
RESOLVE_CASES: list[tuple[str, list[Span], list[tuple[int, int, str, str | None, float, str]]]] = [
    ("when_two_sources_overlap_then_the_union_is_kept_with_both_sources",
     [span(0, 4, "ner", 0.6), span(2, 8, "dictionary", 0.9)],
     [(0, 8, "NAME", None, 0.9, "dictionary+ner")]),
    ("when_one_span_nests_in_another_then_the_outer_extent_is_kept",
     [span(0, 10, "regex", 0.7, "LOCATION"), span(3, 6, "ner", 0.5, "LOCATION")],
     [(0, 10, "LOCATION", None, 0.7, "ner+regex")]),
    ("when_two_sources_overlap_then_the_label_with_the_highest_summed_score_wins",
     [span(0, 5, "ner", 0.6, "NAME"), span(0, 5, "dictionary", 0.6, "NAME"), span(0, 5, "regex", 0.9, "DATE")],
     [(0, 5, "NAME", None, 0.9, "dictionary+ner+regex")]),
    ("when_summed_scores_tie_then_the_more_specific_label_wins",
     [span(0, 8, "ner", 0.7, "NAME"), span(0, 8, "regex", 0.7, "ID")],
     [(0, 8, "ID", None, 0.7, "ner+regex")]),
    ("when_summed_scores_tie_then_phone_beats_date",
     [span(0, 8, "regex", 0.5, "DATE"), span(0, 8, "ner", 0.5, "PHONE")],
     [(0, 8, "PHONE", None, 0.5, "ner+regex")]),
    ("when_two_sources_overlap_then_the_subtype_comes_from_the_best_span_of_the_winning_label",
     [span(0, 5, "ner", 0.6, "NAME", "PROVIDER"), span(0, 5, "dictionary", 0.8, "NAME", "PATIENT"),
      span(0, 5, "regex", 0.95, "DATE", "BIRTHDATE")],
     [(0, 5, "NAME", "PATIENT", 0.95, "dictionary+ner+regex")]),
    ("when_sources_repeat_then_provenance_lists_each_once_sorted",
     [span(0, 5, "ner", 0.6), span(1, 6, "dictionary+ner", 0.7), span(2, 7, "message", 0.8)],
     [(0, 7, "NAME", None, 0.8, "dictionary+message+ner")]),
    ("when_a_chain_of_overlaps_links_spans_then_they_merge_into_one",
     [span(0, 3, "ner"), span(2, 6, "regex"), span(5, 9, "dictionary")],
     [(0, 9, "NAME", None, 0.9, "dictionary+ner+regex")]),
    ("when_spans_only_touch_then_they_stay_apart",
     [span(4, 8, "regex", 0.5, "DATE"), span(0, 4, "ner", 0.6)],
     [(0, 4, "NAME", None, 0.6, "ner"), (4, 8, "DATE", None, 0.5, "regex")]),
    ("when_a_span_stands_alone_then_it_is_returned_unchanged",
     [span(10, 14, "regex", 0.3, "ID", "MRN")], [(10, 14, "ID", "MRN", 0.3, "regex")]),
    ("when_nothing_is_accepted_then_nothing_is_returned", [], []),
    # labels a surrogate depends on (issue 27)
    ("when_the_regex_matched_an_identifier_shape_then_its_label_wins_over_the_models",  # "123-45-6789"
     [span(0, 11, "ner", 1.0, "PHONE"), span(0, 11, "regex", 0.95, "ID", "SSN")],
     [(0, 11, "ID", "SSN", 1.0, "ner+regex")]),
    ("when_the_regex_only_guesses_a_shape_then_the_other_detectors_vote_too",  # "20230407 at 1400"
     [span(0, 8, "ner", 1.0, "DATE"), span(0, 8, "regex", 0.25, "DATE"), span(0, 8, "regex", 0.4, "ID")],
     [(0, 8, "DATE", None, 1.0, "ner+regex")]),
    ("when_a_shape_covers_only_part_of_a_region_then_it_does_not_name_the_region",  # an address block with a URL
     [span(0, 40, "ner", 1.0, "LOCATION"), span(0, 12, "ner", 0.9, "ORGANIZATION"), span(30, 40, "regex", 0.9, "URL")],
     [(0, 40, "LOCATION", None, 1.0, "ner+regex")]),
    ("when_parts_of_a_region_carry_another_label_then_the_whole_regions_label_wins",  # Saint Brennan Medical Center
     [span(0, 28, "ner", 1.0, "ORGANIZATION"), span(0, 28, "dictionary", 0.75, "ORGANIZATION", "HOSPITAL"),
      span(0, 5, "dictionary", 0.9, "NAME"), span(6, 13, "dictionary", 0.9, "NAME")],
     [(0, 28, "ORGANIZATION", "HOSPITAL", 1.0, "dictionary+ner")]),
    ("when_a_vocabulary_lists_the_whole_region_as_a_city_then_it_is_a_location",  # "seen at Springfield"
     [span(0, 11, "ner", 0.99, "ORGANIZATION"), span(0, 11, "dictionary", 0.5, "LOCATION", "CITY"),
      span(0, 11, "dictionary", 0.6, "NAME")],
     [(0, 11, "LOCATION", "CITY", 0.99, "dictionary+ner")]),
    ("when_the_best_span_of_the_label_has_no_subtype_then_another_ones_is_taken",
     [span(0, 10, "dictionary", 0.9), span(0, 10, "ner", 0.8, "NAME", "PATIENT")],
     [(0, 10, "NAME", "PATIENT", 0.9, "dictionary+ner")]),
    ("when_only_a_weaker_span_says_provider_then_the_subtype_stays_unknown",  # PROVIDER may be left verbatim
     [span(0, 10, "dictionary", 0.9), span(0, 10, "ner", 0.8, "NAME", "PROVIDER")],
     [(0, 10, "NAME", None, 0.9, "dictionary+ner")]),
]


@pytest.mark.parametrize(("spans", "expected"), [c[1:] for c in RESOLVE_CASES], ids=[c[0] for c in RESOLVE_CASES])
def test_when_accepted_spans_overlap_then_one_span_per_region(
    spans: list[Span], expected: list[tuple[int, int, str, str | None, float, str]],
) -> None:
    got = resolve_overlaps(spans)
    assert [(s.start, s.end, str(s.label), s.subtype, s.score, s.source) for s in got] == expected
    assert all(a.end <= b.start for a, b in zip(got, got[1:], strict=False))  # sorted, non-overlapping


def test_when_input_order_changes_then_the_resolution_does_not() -> None:
    spans = [span(0, 4, "ner", 0.6), span(2, 8, "dictionary", 0.9, "NAME", "PATIENT"),
             span(12, 20, "regex", 0.4, "DATE"), span(15, 22, "ner", 0.3, "DATE")]
    assert resolve_overlaps(spans) == resolve_overlaps(list(reversed(spans)))


# --- the ensemble step ------------------------------------------------------------------------------------


def _note(spans: list[Span], dropped: tuple[Span, ...] = ()) -> Note:
    return Note(input=NoteIn(note_id="n-1", text="x" * 40), spans=tuple(spans), dropped=dropped)


def test_when_the_step_runs_then_rejected_spans_are_appended_to_dropped_and_the_rest_merged() -> None:
    earlier = span(30, 35, "recovery", 0.1)
    strong, weak_pair, lonely = span(0, 4, "ner", 0.9), span(2, 8, "dictionary", 0.2), span(20, 25, "ner", 0.05)
    step = build_processor("ensemble", {}, BuildContext())
    assert isinstance(step, Ensemble)
    (out,) = step.process_batch([_note([strong, weak_pair, lonely], dropped=(earlier,))])
    assert [(s.start, s.end, s.source) for s in out.spans] == [(0, 8, "dictionary+ner")]
    assert out.dropped == (earlier, lonely)


@pytest.mark.parametrize("steps", [("ensemble",), ("decide", "ensemble")], ids=["policy", "merge_only"])
def test_when_a_shape_span_takes_the_sentences_final_period_then_the_step_cuts_it(steps: tuple[str, ...]) -> None:
    text = "Contact: john.smith@example.com. Call 617-555-1234, or see Dr. Smith."
    email = text.index("john")
    phone = text.index("617")
    name = text.index("Dr.")
    spans = [span(email, email + 23, "ner", 0.96, "EMAIL"), span(email, email + 22, "regex", 0.95, "EMAIL"),
             span(phone, phone + 13, "ner", 0.9, "PHONE"), span(name, len(text), "ner", 0.9, "NAME")]
    ens = Ensemble(Ensemble.Config(), BuildContext(steps=steps))
    (out,) = ens.process_batch([Note(input=NoteIn(note_id="n-1", text=text), spans=tuple(spans))])
    assert [text[s.start:s.end] for s in out.spans] == ["john.smith@example.com", "617-555-1234", "Dr. Smith."]


def test_when_the_step_has_options_then_they_replace_the_defaults() -> None:
    weak = [span(0, 5, "ner", 0.05), span(3, 9, "dictionary", 0.2)]  # both under the default thresholds
    default = build_processor("ensemble", {}, BuildContext())
    strict = build_processor("ensemble", {"min_votes": 3}, BuildContext())
    lenient = build_processor("ensemble", {"thresholds": {"ner": 0.05}, "default_threshold": 0.1, "min_votes": 5},
                              BuildContext())
    assert len(default.process_batch([_note(weak)])[0].spans) == 1
    assert strict.process_batch([_note(weak)])[0].spans == ()
    assert len(lenient.process_batch([_note(weak)])[0].spans) == 1  # both pass on score alone


def test_when_the_step_runs_then_each_note_is_resolved_on_its_own() -> None:
    step = build_processor("ensemble", {}, BuildContext())
    a, b = _note([span(0, 5, "ner", 0.05)]), _note([span(0, 5, "dictionary", 0.1)])
    out = step.process_batch([a, b])
    assert [n.spans for n in out] == [(), ()]  # the two weak spans are in different notes: no votes
    assert [len(n.dropped) for n in out] == [1, 1]


@pytest.mark.parametrize("options", [{"min_votes": 0}, {"default_threshold": 1.5}, {"bogus": 1}],
                         ids=["zero_votes", "threshold_above_one", "unknown_option"])
def test_when_options_are_invalid_then_config_error(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        build_processor("ensemble", options, BuildContext())
