"""The regex step: engine and pipeline behaviour (merging, offsets, options), general medical values and whole
notes. The recognizer families have their own modules (test_dates.py, test_ages.py, ...)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from processors.pipeline import BuildContext, Note, build_processor
from processors.regex.step import RegexDetector, merge_same_label, recognizers
from schemas.errors import ConfigError
from schemas.labels import Label, Subtype
from schemas.models import NoteIn, Span

#: Doses, vitals and lab values with no identifier shape: no recognizer tags them.
MUST_NOT_TAG: list[str] = [
    "HR 88", "K 4.1", "Na 138", "GCS 15", "O2 sat 95%", "INR 2.5", "5 mg", "20 G IV", "PEEP 5", "FiO2 40%",
    "3+ edema", "2+ DTRs", "q6h", "WBC 12.5", "lisinopril 10 mg daily", "walks 2 blocks", "NYHA class II",
    "ASA 325 mg", "x 3 days", "Mallampati 2", "I:E 1:2", "RR 18", "1:100,000 epinephrine", "lidocaine 1%",
    "Gleason 3+4=7", "pH 7.35", "BMI 32.5", "3 way Foley", "ETT 7.5", "A&O x3", "CN II-XII intact",
    "pulses 2+ bilaterally", "Tylenol 650 mg q6h prn", "Plan: 1. CHF 2. HTN",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)


def test_when_text_is_empty_then_returns_empty_list(detector: RegexDetector) -> None:
    assert detector.detect("") == []


def test_when_lowercase_changes_length_then_offsets_still_exact(redacted: Callable[[str], list[Span]]) -> None:
    text = "İİİ seen 07/22/2019, MRN 12345678"
    spans = {text[s.start:s.end] for s in redacted(text)}
    assert {"07/22/2019", "12345678"} <= spans


def test_when_same_label_nested_then_one_span_with_best_score_and_subtype(detector: RegexDetector) -> None:
    text = "MRN 12345678"
    spans = [s for s in detector.detect(text) if s.label == Label.ID]
    assert len(spans) == 1 and spans[0].subtype == Subtype.MRN and spans[0].score >= 0.85


def test_when_pipeline_step_then_spans_added_with_source_regex(threshold: float) -> None:
    proc = build_processor("regex", {}, BuildContext())
    notes = [Note(input=NoteIn(note_id="n1", text="DOB 1/2/45, call 617-555-1234")),
             Note(input=NoteIn(note_id="n2", text="BP 120/80, HR 88"))]
    out = proc.process_batch(notes)
    assert [len([s for s in n.spans if s.score >= threshold]) for n in out] == [2, 0]
    assert all(s.source == "regex" for n in out for s in n.spans)
    assert out[0].input is notes[0].input


def test_when_config_limits_labels_and_subtypes_then_only_those_emitted() -> None:
    text = "Seen 07/22/2019 in Boston, MA 02115, call 617-555-1234"
    only_dates = RegexDetector(RegexDetector.Config(entities=[Label.DATE]))
    assert {s.label for s in only_dates.detect(text)} == {Label.DATE}
    no_states = RegexDetector(RegexDetector.Config(exclude_subtypes=[Subtype.STATE]))
    assert Subtype.STATE not in {s.subtype for s in no_states.detect(text)}
    confident = RegexDetector(RegexDetector.Config(min_score=0.9))
    assert all(s.score >= 0.9 for s in confident.detect(text))


def test_when_options_come_from_settings_then_strings_are_coerced() -> None:
    proc = build_processor("regex", {"entities": ["DATE", "LOCATION"], "exclude_subtypes": ["STATE"]},
                           BuildContext())
    (note,) = proc.process_batch([Note(input=NoteIn(note_id="n", text="Seen 7/22/2019 in Boston, MA 02115"))])
    assert {(s.label, s.subtype) for s in note.spans} == {
        (Label.DATE, None), (Label.LOCATION, Subtype.CITY), (Label.LOCATION, Subtype.ZIP)}


NURSING_NOTE = (
    "NEURO: A&O X3, GCS 15, PERRLA 3MM. MAE, STRENGTH 5/5 UE, 4/5 LE. CV: HR 88-96 NSR, BP 118/72 (MAP 87), "
    "NO ECTOPY. K 3.3 REPLETED W/ 40 MEQ KCL. RESP: RR 18, O2 SAT 95% ON 2L NC, LS CLEAR. GI: TF @ 50CC/HR, "
    "1-2 TABS SENNA Q4-6H PRN. INR 2.5, PTT 32. WBC 12.5, HGB 10.2, PLT 250. PAIN 8/10 -> 2/10 AFTER MORPHINE "
    "2 MG IV AT 0630. APGARS 8/9. GRADE 3/6 SEM. T 98.6 F, TMAX 101.2 F. I/O 1200/800. PLAN: CONT ABX X 7 DAYS."
)


def test_when_nursing_note_without_identifiers_then_nothing_redacted(
    assert_not_redacted: Callable[[str], None]
) -> None:
    for text in (NURSING_NOTE, NURSING_NOTE.lower()):
        assert_not_redacted(text)


def test_when_note_has_many_identifiers_then_each_tagged_exactly(redacted: Callable[[str], list[Span]]) -> None:
    text = ("92 yo F, DOB 03/14/1931, MRN 00482913, admitted 7/22/2019 @ 1430 from 45 Oak Avenue Apt 3, "
            "Springfield, IL 62704. Daughter (c) 217-555-0142, email jane.doe@example.com. BP 120/80, K 4.1. "
            "F/u with Dr. Lee (pager 4-5678) on the 9th.")
    got = {(text[s.start:s.end], s.label) for s in redacted(text)}
    assert got == {
        ("92", Label.AGE), ("03/14/1931", Label.DATE), ("00482913", Label.ID), ("7/22/2019 @ 1430", Label.DATE),
        ("45 Oak Avenue Apt 3", Label.LOCATION), ("Springfield", Label.LOCATION), ("IL", Label.LOCATION),
        ("62704", Label.LOCATION), ("217-555-0142", Label.PHONE), ("jane.doe@example.com", Label.EMAIL),
        ("4-5678", Label.PHONE), ("9th", Label.DATE),
    }


def test_when_unknown_option_then_config_error() -> None:
    with pytest.raises(ConfigError):
        build_processor("regex", {"no_such_option": 1}, BuildContext())


def test_when_recognizers_built_then_they_are_presidio_pattern_recognizers() -> None:
    from presidio_analyzer import PatternRecognizer

    recs = recognizers()
    assert recs is recognizers()  # compiled once per process
    assert all(isinstance(r, PatternRecognizer) and r.patterns for r in recs)


def test_when_hits_nested_across_labels_then_both_kept() -> None:
    from processors.regex.step import Hit

    hits = [Hit(0, 8, Label.ID, None, 0.4), Hit(0, 8, Label.DATE, None, 0.25), Hit(2, 4, Label.ID, Subtype.MRN, 0.9)]
    merged = merge_same_label(hits)
    assert [(h.label, h.subtype, h.score) for h in merged] == [(Label.ID, Subtype.MRN, 0.9), (Label.DATE, None, 0.25)]
