"""Recovery: candidate spans that are medical terms move to ``note.dropped``; names and the message's
own identifiers stay. Spans are built directly (no dependency on the detectors)."""

from __future__ import annotations

from typing import Any

import pytest

from dictionaries import vocab
from processors.pipeline import BuildContext, Note, build_processor
from processors.recovery import MedicalRecovery, covered
from schemas import ConfigError
from schemas.models import NoteIn, Patient, PersonName, Span

#: (substring, label, source[, occurrence]) -> a Span on the n-th occurrence of the substring.
SpanSpec = tuple[Any, ...]


@pytest.fixture(scope="module")
def recovery() -> MedicalRecovery:
    proc = build_processor("recovery", {}, BuildContext(cache_dir=vocab.cache_dir()))
    assert isinstance(proc, MedicalRecovery)
    return proc


def make_note(text: str, specs: list[SpanSpec], patient: Patient | None = None) -> Note:
    spans = []
    for spec in specs:
        sub, label, source = spec[:3]
        occurrence = spec[3] if len(spec) > 3 else 0
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(sub, start + 1)
        spans.append(Span(start=start, end=start + len(sub), label=label, source=source))
    return Note(input=NoteIn(note_id="n1", text=text, patient=patient), spans=tuple(spans))


def surfaces(note: Note, spans: tuple[Span, ...]) -> list[str]:
    return [note.text[s.start:s.end] for s in spans]


def dropped_surfaces(recovery: MedicalRecovery, text: str, specs: list[SpanSpec]) -> list[str]:
    """The sorted surfaces of the candidates recovery drops from one note."""
    note = recovery.process_batch([make_note(text, specs)])[0]
    return sorted(surfaces(note, note.dropped))


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "ner")], ["Bruce"]),
        ("Murphy sign positive on exam.", [("Murphy", "NAME", "ner")], ["Murphy"]),
        ("Status post Whipple procedure for mass.", [("Whipple", "NAME", "ner")], ["Whipple"]),
        ("Apgar score 8/9 at delivery.", [("Apgar", "NAME", "ner"), ("8/9", "DATE", "regex")], ["Apgar", "8/9"]),
        ("St. Jude valve, INR 2.5 today.", [("St. Jude", "ORGANIZATION", "ner")], ["St. Jude"]),
        ("Results were sent via MyChart.", [("MyChart", "ORGANIZATION", "ner")], ["MyChart"]),
        ("General: NAD. Lungs clear.", [("NAD", "ID", "regex")], ["NAD"]),
        ("Remains on FK506 after transplant.", [("FK506", "ID", "regex")], ["FK506"]),
        ("History of Parkinson's disease.",
         [("Parkinson", "NAME", "dictionary"), ("Parkinson's", "NAME", "ner"),
          ("Parkinson's disease", "NAME", "ner")],
         ["Parkinson", "Parkinson's", "Parkinson's disease"]),
        ("Lasix 40 mg PO daily.", [("Lasix", "NAME", "ner"), ("Lasix 40 mg", "NAME", "ner")],
         ["Lasix", "Lasix 40 mg"]),
        ("TP53 g.7578395G>C detected.", [("7578395", "ID", "regex"), ("g.7578395G>C", "ID", "regex")],
         ["7578395", "g.7578395G>C"]),
        ("Foley catheter removed this morning.", [("Foley", "NAME", "ner")], ["Foley"]),
        ("Kawasaki disease in childhood.", [("Kawasaki", "LOCATION", "ner")], ["Kawasaki"]),
        ("Treated for Lyme disease last summer.", [("Lyme", "LOCATION", "dictionary")], ["Lyme"]),
        ("Meds given at 0630 and 1800.", [("0630", "DATE", "regex"), ("1800", "DATE", "regex")], ["0630", "1800"]),
        ("Vitals: BP 120/80, pain 6/10.", [("120/80", "DATE", "regex"), ("6/10", "DATE", "regex")],
         ["120/80", "6/10"]),
        ("BRCA1 c.68_69delAG, rs80357906.", [("BRCA1", "ID", "regex"), ("rs80357906", "ID", "regex")],
         ["BRCA1", "rs80357906"]),
        ("Allegra 180 mg daily for allergies.", [("Allegra", "NAME", "ner")], ["Allegra"]),
        ("She was started on Allegra last week.", [("Allegra", "NAME", "ner")], ["Allegra"]),
        ("CT head negative for bleed.", [("CT", "LOCATION", "ner")], ["CT"]),
        ("Transferred to MICU overnight.", [("MICU", "ORGANIZATION", "ner")], ["MICU"]),
        ("NEURO: APGAR 8/9. SKIN: BRADEN 13.", [("APGAR", "NAME", "dictionary"), ("BRADEN", "NAME", "dictionary")],
         ["APGAR", "BRADEN"]),
        ("3. Norco 5/325 1-2 tabs q4h PRN", [("Norco", "LOCATION", "dictionary")], ["Norco"]),
        ("Held for a Mallory-Weiss tear.", [("Mallory", "NAME", "dictionary"), ("Weiss", "NAME", "dictionary")],
         ["Mallory", "Weiss"]),
        ("Echo (1/14): EF 55%, mild MR.", [("Echo", "NAME", "dictionary")], ["Echo"]),
    ],
)
def test_when_span_is_a_medical_term_then_it_is_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert sorted(surfaces(out, out.dropped)) == sorted(dropped)
    assert len(out.spans) + len(out.dropped) == len(note.spans)


@pytest.mark.parametrize(
    ("text", "specs"),
    [
        # (a title inside a name span is cut off: test_when_name_span_has_words_beside_the_name_then_they_are_cut_off)
        ("Seen by Dr. Parkinson in clinic.", [("Parkinson", "NAME", "dictionary"), ("Parkinson", "NAME", "ner")]),
        ("Mr. Bruce Wayne was admitted.", [("Bruce Wayne", "NAME", "ner"), ("Bruce", "NAME", "ner")]),
        ("Note by Foley, RN at bedside.", [("Foley", "NAME", "ner")]),
        ("Allegra called the clinic today.", [("Allegra", "NAME", "ner")]),
        ("Wilson reported no new complaints.", [("Wilson", "NAME", "ner")]),
        ("Discussed with Lasix Jones.", [("Lasix Jones", "NAME", "ner")]),
        ("Admitted on 03/14/2023 at 0630.", [("03/14/2023", "DATE", "regex"), ("0630", "DATE", "regex")]),
        ("Follow up on 6/10 in clinic.", [("6/10", "DATE", "regex")]),
        ("He is 92 years old.", [("92", "AGE", "regex")]),
        ("Lives in New Orleans, LA 70112.", [("70112", "LOCATION", "regex"), ("LA", "LOCATION", "ner")]),
        ("Dose 555-1234 mg per pharmacy.", [("555-1234", "PHONE", "regex")]),
        ("Portal: mychart@example.org", [("mychart@example.org", "EMAIL", "regex")]),
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "message+ner")]),
        ("Completed a Bruce protocol stress test.", [("Bruce", "NAME", "message")]),
        ("Transferred to St. Jude for chemotherapy.", [("St. Jude", "ORGANIZATION", "ner")]),
        ("Seen by Wells 2 weeks ago.", [("Wells", "NAME", "ner")]),
        ("Allegra Smith was started on metoprolol.", [("Allegra", "NAME", "ner")]),
        ("Admitted to Community Hospital.", [("Community Hospital", "ORGANIZATION", "dictionary")]),
    ],
)
def test_when_span_is_an_identifier_then_it_is_kept(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    assert out.spans == note.spans


def test_when_patient_name_is_a_drug_brand_then_the_patients_identifiers_are_kept(recovery: MedicalRecovery) -> None:
    patient = Patient(names=(PersonName(given="Allegra", family="Jones"),), mrn="12345678")
    text = "Allegra Jones (MRN 12345678) was started on Allegra 180 mg daily."
    note = make_note(
        text,
        [("Allegra Jones", "NAME", "message"), ("12345678", "ID", "message"),
         ("Allegra", "NAME", "ner"), ("Allegra", "NAME", "ner", 1)],
        patient=patient,
    )
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    unprotected = build_processor(
        "recovery", {"protect_message_identifiers": False}, BuildContext(cache_dir=vocab.cache_dir())
    )
    (out2,) = unprotected.process_batch([note])
    assert [(s.start, s.source) for s in out2.dropped] == [(text.rindex("Allegra"), "ner")]


def test_when_syntax_is_off_then_only_vocabulary_terms_are_dropped() -> None:
    proc = build_processor("recovery", {"use_syntax": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = make_note("Apgar score 8/9 at delivery.", [("Apgar", "NAME", "ner"), ("8/9", "DATE", "regex")])
    (out,) = proc.process_batch([note])
    assert surfaces(out, out.dropped) == ["Apgar"]
    assert surfaces(out, out.spans) == ["8/9"]


def test_when_note_has_no_candidates_then_it_is_returned_unchanged(recovery: MedicalRecovery) -> None:
    empty = make_note("Nothing to see here.", [])
    protected = make_note("Bruce protocol", [("Bruce", "NAME", "message")])
    assert recovery.process_batch([empty, protected]) == [empty, protected]


def test_when_note_already_has_dropped_spans_then_new_ones_are_appended(recovery: MedicalRecovery) -> None:
    earlier = Span(start=0, end=4, label="NAME", source="ensemble", score=0.1)
    note = make_note("Foley catheter in place.", [("Foley", "NAME", "ner")]).replace(dropped=(earlier,))
    (out,) = recovery.process_batch([note])
    assert out.dropped[0] == earlier
    assert surfaces(out, out.dropped[1:]) == ["Foley"]
    assert note.spans != out.spans  # the input note is not mutated
    assert len(note.dropped) == 1


def test_when_options_are_unknown_then_config_error() -> None:
    with pytest.raises(ConfigError):
        build_processor("recovery", {"bogus": 1}, BuildContext(cache_dir=vocab.cache_dir()))


@pytest.mark.parametrize(
    ("text", "intervals", "expected"),
    [
        ("Lasix", [(0, 5)], True),
        ("Lasix,", [(0, 5)], True),                   # trailing punctuation
        ("Parkinson's", [(0, 9)], True),              # possessive
        ("Lasix Jones", [(0, 5)], False),             # extra non-medical text
        ("Lasix 40 mg", [(0, 5), (6, 11)], True),     # a term and a dose side by side
        ("Bruce", [(0, 14)], True),                   # inside a longer match
        ("Lasix", [], False),
    ],
)
def test_when_coverage_is_checked_then_only_trivial_leftovers_are_allowed(
    text: str, intervals: list[tuple[int, int]], expected: bool
) -> None:
    assert covered(text + " protocol", 0, len(text), intervals) is expected


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Vent: AC 600x12, FiO2 40%, PEEP 5.", [("600x12", "ID", "regex")], ["600x12"]),
        ("VENT: AC 600X12, FIO2 40%, PEEP 5.", [("600X12", "ID", "regex")], ["600X12"]),
        ("ABG on settings: 7.38-33-169.", [("7.38-33-169", "PHONE", "ner")], ["7.38-33-169"]),
        ("abg on settings: 7.38/33/169.", [("33/169", "DATE", "ner")], ["33/169"]),
        ("CVP 24-26, SBP in the 90's.", [("24-26", "DATE", "ner"), ("90's", "AGE", "regex")], ["24-26", "90's"]),
        ("cvp 24-26, sbp in the 90's.", [("24-26", "DATE", "ner"), ("90's", "AGE", "regex")], ["24-26", "90's"]),
        ("HR 70'S-80'S, MAPS 68-80'S.", [("70'S-80'S", "DATE", "ner"), ("68-80'S", "IP", "ner")], ["70'S-80'S"]),
        ("Weaned to CPAP 5/5, PSV 15/5 overnight.", [("5/5", "DATE", "regex"), ("15/5", "DATE", "ner")],
         ["5/5", "15/5"]),
        ("BP 91-146/48-63 on neo.", [("/48", "DATE", "ner"), ("91-146", "PHONE", "ner")], ["/48", "91-146"]),
    ],
)
def test_when_number_is_in_vitals_vent_or_lab_context_then_it_is_dropped_with_its_label_and_source(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert sorted(surfaces(out, out.dropped)) == sorted(dropped)
    originals = {(s.start, s.end): s for s in note.spans}
    for d in out.dropped:  # moved unchanged: the metrics and the leak check read label and source
        assert originals[(d.start, d.end)] == d
    assert len(out.spans) + len(out.dropped) == len(note.spans)


@pytest.mark.parametrize(
    ("text", "specs"),
    [
        ("HR 80, BP 120/80. DOB 3/4/1950.", [("3/4/1950", "DATE", "regex")]),
        ("hr 80, bp 120/80. dob 3/4/50.", [("3/4/50", "DATE", "ner")]),
        ("HR 80. MRN 1234567.", [("1234567", "ID", "regex")]),
        ("SBP 100, call 617-555-1234 if lower.", [("617-555-1234", "PHONE", "regex")]),
        ("HR 80 when seen 3/4/2019.", [("3/4/2019", "DATE", "regex")]),
        ("HR 80, pager 12345.", [("12345", "PHONE", "ner")]),
        ("K 3.9 on 3/4, WBC 16.0 8/22.", [("3/4", "DATE", "regex"), ("8/22", "DATE", "ner")]),
        ("Pt in her 90's, SBP 100.", [("90's", "AGE", "regex")]),
        ("CVP 24-26 overnight.", [("24-26", "DATE", "message")]),
        ("CVP 24-26 overnight.", [("24-26", "DATE", "dictionary")]),     # not a measure source
        ("CVP 24-26 overnight.", [("24-26", "DATE", "dictionary+ner")]),
        ("CVP 8, patient ID 12-14 on the chart.", [("12-14", "ID", "regex")]),
    ],
)
def test_when_number_has_an_identifier_cue_or_source_then_it_is_kept(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec]
) -> None:
    note = make_note(text, specs)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()
    assert out.spans == note.spans


def test_when_measures_are_off_then_numbers_in_vital_context_are_kept() -> None:
    proc = build_processor("recovery", {"use_measures": False}, BuildContext(cache_dir=vocab.cache_dir()))
    # "12-14" reads as a date (December 14): only the measure rule can drop it
    note = make_note("CVP 12-14, AC 600x12.", [("12-14", "DATE", "ner"), ("600x12", "ID", "regex")])
    (out,) = proc.process_batch([note])
    assert out.dropped == ()


def test_when_measure_sources_are_configured_then_only_those_sources_are_dropped() -> None:
    proc = build_processor("recovery", {"measure_sources": ["regex"]}, BuildContext(cache_dir=vocab.cache_dir()))
    # "12-14" reads as a date (December 14): only the measure rule can drop it
    note = make_note("CVP 12-14, AC 600x12.", [("12-14", "DATE", "ner"), ("600x12", "ID", "regex")])
    (out,) = proc.process_batch([note])
    assert surfaces(out, out.dropped) == ["600x12"]
    assert surfaces(out, out.spans) == ["12-14"]


def test_when_a_number_repeats_the_patients_own_identifier_then_it_is_kept(recovery: MedicalRecovery) -> None:
    patient = Patient(names=(PersonName(given="Ann", family="Lee"),), mrn="1461")
    note = make_note("CK 1461 this am.", [("1461", "ID", "ner")], patient=patient)
    (out,) = recovery.process_batch([note])
    assert out.dropped == ()


@pytest.mark.parametrize(
    ("case", "text", "specs", "dropped"),
    [
        ("drip_shorthand", "LEVO WEANED OFF, VANCO GIVEN.", [("LEVO", "NAME", "ner"), ("VANCO", "NAME", "ner")],
         ["LEVO", "VANCO"]),
        ("line_as_place", "aline d/c'd, swan remains.", [("aline", "LOCATION", "ner"), ("swan", "NAME", "ner")],
         ["aline", "swan"]),
        ("service_as_org", "Screened by rehab today.", [("rehab", "ORGANIZATION", "ner+dictionary")], ["rehab"]),
        ("title_keeps_name", "Spoke with Dr. Swan about the plan.", [("Swan", "NAME", "ner")], []),
        ("credential_keeps_name", "Plan reviewed with Foley, RN.", [("Foley", "NAME", "ner")], []),
        ("not_all_jargon", "Levo started by Smith.", [("Levo started by Smith", "NAME", "ner")], []),
        ("dates_untouched", "Levo on Monday.", [("Monday", "DATE", "ner")], []),
        ("message_protected", "Neo at bedside.", [("Neo", "NAME", "message")], []),
        ("lower_clinical_word", "allergies: nkda. kub done.", [("allergies", "NAME", "ner"), ("kub", "NAME", "ner")],
         ["allergies", "kub"]),
        ("caps_clinical_word", "KUB DONE, ALLERGIES NKDA.", [("KUB", "ORGANIZATION", "ner")], ["KUB"]),
        ("title_case_is_evidence", "Seen by Allergies today.", [("Allergies", "NAME", "ner")], []),
        ("title_keeps_lower", "seen by dr. brown today.", [("brown", "NAME", "ner")], []),
        ("dictionary_find_kept", "kub done.", [("kub", "NAME", "dictionary")], []),
        ("not_clinical", "amber at bedside.", [("amber", "NAME", "ner")], []),
        ("nurse_specialty", "Stoma RN saw the site today.", [("Stoma", "NAME", "ner")], ["Stoma"]),
        ("title_before_credential", "Seen by Dr. Swan RN today.", [("Swan", "NAME", "ner")], []),
        ("care_unit", "TSICUB NURSING NOTE 7P-7A", [("TSICUB", "NAME", "ner")], ["TSICUB"]),
        ("acronym_plural", "Tolerating POs and sips.", [("POs", "NAME", "dictionary")], ["POs"]),
        ("device_eponym", "Temp 35.1, Bair hugger on.", [("Bair", "NAME", "dictionary")], ["Bair"]),
        # two letters are as often initials or a state's code as an abbreviation
        ("initials_stay", "BM 73M S/P FALL AT HOME.", [("BM", "NAME", "ner")], []),
        ("state_code_stays", "Lives in Duluth, MN 55802.", [("MN", "LOCATION", "regex")], []),
        ("two_letter_place", "BLOOD FROM OG, NGT TO LWS.", [("OG", "LOCATION", "ner")], ["OG"]),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v and len(v) < 30 else "",
)
def test_when_span_is_only_curated_jargon_then_dropped_unless_name_evidence(
    recovery: MedicalRecovery, case: str, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_jargon_off_then_jargon_spans_stay() -> None:
    proc = build_processor("recovery", {"use_jargon": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("LEVO WEANED OFF.", [("LEVO", "NAME", "ner")])])[0]
    assert not note.dropped
    assert "clinical_words" not in proc.dictionary_versions()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("NPN CCU 7 PM - 7 AM. S/P stent.", [("7 PM", "DATE", "ner"), ("7 AM", "DATE", "ner+regex")],
         ["7 PM", "7 AM"]),
        ("Negative 500 cc since 12am.", [("12am", "DATE", "ner")], ["12am"]),
        ("Extubated 3/14 at 10 am.", [("3/14 at 10 am", "DATE", "ner")], []),  # a date-time: an identifier
        ("Extubated 3/14 at 10 am.", [("3/14", "DATE", "regex")], []),
    ],
)
def test_when_date_span_is_a_time_of_day_then_dropped_unless_attached_to_a_date(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a date needs digits, a month, a weekday or a holiday: times of day and relative days are not dates
        ("FAMILY VISITING TILL MIDNIGHT.", [("MIDNIGHT", "DATE", "ner")], ["MIDNIGHT"]),
        ("Son called last eve.", [("last eve", "DATE", "ner")], ["last eve"]),
        ("TF ON HOLD SINCE NOON FOR TEE.", [("NOON", "DATE", "ner+regex")], ["NOON"]),
        ("VISITORS STAYED UNTILL APPROXAMATELY 9.", [("APPROXAMATELY", "DATE", "ner")], ["APPROXAMATELY"]),
        ("Dopamine weaned then dec'd further.", [("dec", "DATE", "ner")], ["dec"]),  # decreased
        ("Seen on dec 3 in clinic.", [("dec", "DATE", "ner")], []),
        ("Dialysis Monday.", [("Monday", "DATE", "ner")], []),
        ("Home since Christmas.", [("Christmas", "DATE", "ner")], []),
        ("ON QUARTERMAIN 6.", [("QUARTERMAIN", "DATE", "ner")], []),  # an unknown word: maybe a place
        ("Discharged 3/4.", [("3/4", "DATE", "ner")], []),
        # a count, a phone without a digit, a name or organisation without a letter (the model's alone)
        ("Day 7 of 14 of the antibiotic course.", [("7 of 14", "DATE", "ner")], ["7 of 14"]),
        ("(Continued) on the next page", [("Continued", "PHONE", "ner")], ["Continued"]),
        ("Box 2210 DPO AE 30412", [("AE", "PHONE", "ner"), ("30412", "PHONE", "ner")], []),
        ("Came up from WARD 5 today.", [("5", "ORGANIZATION", "ner")], ["5"]),
        ("Came up from WARD 5 today.", [("WARD", "LOCATION", "ner")], ["WARD"]),
        ("Back to Ward3 when stable.", [("Ward", "LOCATION", "ner")], ["Ward"]),
        ("Mail to Unit 7194 Box 5854", [("Unit", "LOCATION", "ner")], []),  # an army post's unit
        ("Up from WARD 4 for a swan.", [("WARD", "LOCATION", "ner+dictionary")], ["WARD"]),
        ("Seen by Dr. Ward 3 times", [("Ward", "NAME", "ner+dictionary")], []),  # a title: a person
        ("Nursing 7a-7p: slept well.", [("7", "NAME", "ner")], ["7"]),
        ("Came up from WARD 5 today.", [("5", "ORGANIZATION", "ner+dictionary")], []),
        # clock times with known words only, unless right beside a date (a date-time)
        ("Care conference moved to 14:30 tomorrow.", [("14:30 tomorrow", "DATE", "ner")], ["14:30 tomorrow"]),
        ("Visit window:3:15-4:45pm daily", [("3:15-4:45pm", "DATE", "ner")], ["3:15-4:45pm"]),
        ("Extubated 3/14 10:30 am.", [("10:30 am", "DATE", "ner")], []),
        ("Seen 10:30 Monday.", [("10:30 Monday", "DATE", "ner")], []),
        # an ordinal alone before a noun, "may" before a verb: no day
        ("PNEUMONIA ON 2ND DAY OF ADMISSION.", [("2ND", "DATE", "ner+regex")], ["2ND"]),
        ("cooperative on 2nd wake up", [("2nd", "DATE", "ner")], ["2nd"]),
        ("THINKS THIS MAY BE R/T LEVO.", [("MAY", "DATE", "regex")], ["MAY"]),
        ("pt may not need the line", [("may", "DATE", "ner")], ["may"]),
        ("Lasix 20 mg IV on the 22nd. Has been checking.", [("the 22nd", "DATE", "ner")], []),
        ("Seen the 3rd of May.", [("3rd", "DATE", "ner")], []),
        ("Clinic on the 5th at 10am.", [("5th", "DATE", "ner")], []),
        ("Due the 14th April.", [("14th", "DATE", "ner")], []),
        ("Seen May 5 in clinic.", [("May", "DATE", "ner")], []),
        ("May was a hard month.", [("May", "DATE", "ner")], []),
        # a lone letter only the model found, with no other detection beside it
        ("drew arm up to face x1. A. Bowel sounds present.", [("A", "NAME", "ner")], ["A"]),
        ("Seen by Z. Miller today.", [("Z", "NAME", "ner"), ("Miller", "NAME", "ner")], []),
        ("Seen by Z. today.", [("Z", "NAME", "ner+dictionary")], []),
        # a street type alone: no street name, no saint's name, no place
        ("HR up to 120s, sinus rhythm to ST with activity.", [("ST", "LOCATION", "ner")], ["ST"]),
        ("converted from afib to st overnight", [("st", "LOCATION", "ner")], ["st"]),
        ("Lives in Helena, MT with her son.", [("MT", "LOCATION", "ner")], []),  # a state code
        # a state's code alone (midnight, the VA): not after "City," or before a ZIP, not a relative's initials
        ("Net negative 900 cc since MN, goal even.", [("MN", "LOCATION", "ner")], ["MN"]),
        ("Nurse from the VA called back.", [("VA", "ORGANIZATION", "ner")], ["VA"]),
        ("Mail to Duluth MN 55802.", [("MN", "LOCATION", "ner")], []),
        ("Visited by the brother of MS today.", [("MS", "LOCATION", "ner")], []),
        ("Net negative 900 cc since MN.", [("MN", "LOCATION", "ner+dictionary")], []),
        ("Brother Glen visited.", [("Glen", "NAME", "ner")], []),  # a first name
        ("Lives on Oak St near the park.", [("St", "LOCATION", "ner+regex")], []),  # not the model's alone
        # a "phone" of one or two digits alone, or a signed number (a fluid balance)
        ("Intubated with # 8 ETT, 22 at the lip.", [("8", "PHONE", "ner")], ["8"]),
        ("LOS -905 at midnight, goal even.", [("-905", "PHONE", "ner")], ["-905"]),
        ("Wife (202232-4455) in to visit.", [("-4455", "PHONE", "ner")], []),  # a separator, not a sign
        # an email without its "@", a record number of fewer than three characters (the model's alone)
        ("Code status: DNR & DNI, comfort only.", [("DNI", "EMAIL", "ner")], ["DNI"]),
        ("Gave ms04 2 mg for pain.", [("04", "ID", "ner")], ["04"]),
        ("Write to kay@example.org", [("kay@example.org", "EMAIL", "ner")], []),
        ("Office at 12 Odos Ermou Apt. 3 ΠΑΦΟΣ PA", [("ΠΑΦΟΣ PA", "EMAIL", "ner")], []),  # an address's words
        ("Bed 04 assigned.", [("04", "ID", "regex")], []),
        ("Call +44 20 7946 0958 after six.", [("+44", "PHONE", "ner"), ("20 7946 0958", "PHONE", "ner")], []),
        # numbers joined by "and" / "to", none as long as a phone number: times, not a phone
        ("Boluses x2 at 0200 and 0415 overnight.", [("0200 and 0415", "PHONE", "ner")], ["0200 and 0415"]),
        ("Address: 12 Varga ut 4 Suite 9", [("12 Varga ut 4", "PHONE", "ner")], []),  # other words: an address
        ("Call 617-555-0134 or 0199.", [("617-555-0134 or 0199", "PHONE", "ner")], []),
        # a number glued to letters that no date or time has: a quantity and its unit
        ("Weaned to 3ln/c overnight, sats fine.", [("3ln", "DATE", "ner")], ["3ln"]),
        ("Given 4amp of bicarb.", [("4amp", "DATE", "ner")], ["4amp"]),
        ("Seen on the 3rd, again 12noon and at 5p.", [("3rd", "DATE", "ner"), ("12noon", "DATE", "ner"),
                                                    ("5p", "DATE", "ner")], []),
        ("Born 3Mar, seen 1990s.", [("3Mar", "DATE", "ner"), ("1990s", "DATE", "ner")], []),
        ("Weaned to 3ln/c overnight.", [("3ln", "DATE", "ner+regex")], []),  # not the model's alone
        # a chart month ("dec": decreased, "MAR": the administration record) alone, no number or date word near
        ("Lungs with dec breath sounds at bases.", [("dec", "DATE", "ner")], ["dec"]),
        ("ALL DOSES CHARTED PER MAR. NO PRN NEEDED.", [("MAR", "DATE", "ner")], ["MAR"]),
        ("ALL DOSES CHARTED ON MAR 3.", [("MAR", "DATE", "ner")], []),
        ("Last colonoscopy in dec, normal.", [("dec", "DATE", "ner")], []),
        ("Stent placed dec 12 at the OSH.", [("dec", "DATE", "ner")], []),
        ("Stent placed 12-Aug here.", [("Aug", "DATE", "ner")], []),
        ("Plan was set in Dec, unchanged.", [("Dec", "DATE", "ner")], []),
        # titles alone name nobody
        ("FAMILY MET WITH DRS TODAY, UPDATED.", [("DRS", "NAME", "ner")], ["DRS"]),
        ("Paged the Dr. on call.", [("Dr.", "NAME", "ner")], ["Dr."]),
        ("Paged Dr. Okafor.", [("Okafor", "NAME", "ner")], []),
    ],
)
def test_when_span_has_no_identifier_shape_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_shapeless_off_then_shapeless_spans_stay() -> None:
    proc = build_processor("recovery", {"use_shapeless": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("TILL MIDNIGHT. A.", [("MIDNIGHT", "DATE", "ner"), ("A", "NAME", "ner")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Meeting arranged for tommorow afternoon with family.", [("tommorow", "NAME", "ner")], ["tommorow"]),
        ("ALLERGIES: tomatoes, codiene and latex", [("codiene", "NAME", "ner")], ["codiene"]),
        ("DOES NOT HAVE O.R. PRIVELAGES HERE", [("PRIVELAGES", "ORGANIZATION", "ner")], ["PRIVELAGES"]),
        # two neighbouring letters swapped count as one edit
        ("no drainage from owund noted", [("owund", "NAME", "ner")], ["owund"]),
        ("FAMILY TALKED AT LENGHT WITH THE TEAM", [("LENGHT", "NAME", "ner")], ["LENGHT"]),
        # kept: a name list word, person or place evidence, a short line, a mixed-case line's capitals,
        # another detector's vote, one edit too many for a short word
        ("lorrie morales is a 70 yr old", [("morales", "NAME", "ner")], []),
        ("seen by dr. dobroth at 3 am", [("dobroth", "NAME", "ner")], []),
        ("REMAINS AS PER B. KARGAS TODAY", [("KARGAS", "NAME", "ner")], []),
        ("URINE OUTPUT FROM HRBOR HOSP. HE WAS", [("HRBOR", "LOCATION", "ner")], []),
        ("Suite 245\nFURLING\nAustria", [("FURLING", "LOCATION", "ner")], []),
        ("Pt seen by Tommorow today.", [("Tommorow", "NAME", "ner")], []),
        ("Meeting arranged for tommorow afternoon with family.", [("tommorow", "NAME", "ner+dictionary")], []),
        ("no drainage from wxunt noted", [("wxunt", "NAME", "ner")], []),
    ],
)
def test_when_span_is_a_misspelt_known_word_then_dropped_unless_name_evidence(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Asked for his guitar from home.", [("guitar", "NAME", "ner")], ["guitar"]),
        ("Son brings puzzles on weekends.", [("puzzles", "NAME", "ner")], ["puzzles"]),
        ("Family asked to stay in the waiting room.", [("waiting room", "LOCATION", "ner")], ["waiting room"]),
        ("We are proud of him.", [("proud", "NAME", "ner")], ["proud"]),  # a Census surname, and a common word
        # kept: a first name, a rarer surname, a place, an institution word, a title, capitals, other sources
        ("Visited by pearl and her sons.", [("pearl", "NAME", "ner")], []),
        ("Seen by dr. hall this am.", [("hall", "NAME", "ner")], []),
        ("Daughter flew in from rome.", [("rome", "LOCATION", "ner")], []),
        ("Transferred from memorial hospital.", [("memorial hospital", "ORGANIZATION", "ner")], []),
        ("Transferred from memorial yesterday.", [("memorial", "ORGANIZATION", "ner")], []),
        ("Going home to Spring Valley.", [("Spring Valley", "LOCATION", "ner")], []),
        ("Lives on church street.", [("church street", "LOCATION", "ner+regex")], []),
        ("Lives at 88 street road.", [("88 street", "LOCATION", "ner")], []),
    ],
)
def test_when_span_is_lower_case_common_words_then_dropped_unless_name_or_place(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # cardiology, ward and staff abbreviations in capitals (dictionaries/data/medical_curated.txt)
        ("PMH: CAD, AVR 2001, AMI w/ shock.", [("AVR", "NAME", "ner"), ("AMI", "NAME", "ner")], ["AVR", "AMI"]),
        ("ADMITTED FROM THE EW WITH RAPID AF.", [("EW", "LOCATION", "ner")], ["EW"]),
        ("TRANSFERRED FROM OSH FOR CATH.", [("OSH", "ORGANIZATION", "ner")], ["OSH"]),
        ("LINE PULLED BY HO. EF 45%.", [("HO", "NAME", "ner"), ("EF", "NAME", "ner")], ["HO", "EF"]),
        # the same letters written as a name stay a name
        ("Visited by Ami and her brother.", [("Ami", "NAME", "ner")], []),
        ("Dr. Ho saw him this morning.", [("Ho", "NAME", "ner")], []),
    ],
)
def test_when_span_is_a_capitals_abbreviation_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_common_words_off_then_common_words_stay() -> None:
    proc = build_processor("recovery", {"use_common_words": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("He brought his guitar in.", [("guitar", "NAME", "ner")])])[0]
    assert not note.dropped


def scored_note(text: str, specs: list[tuple[str, str, str, float]]) -> Note:
    """``make_note`` with a score per span: (substring, label, source, score)."""
    note = make_note(text, [spec[:3] for spec in specs])
    return note.replace(spans=tuple(span.model_copy(update={"score": spec[3]})
                                    for span, spec in zip(note.spans, specs, strict=True)))


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # lower case, the model's alone, scored below 0.6, no evidence: dropped
        ("neuro: alert, mae, pearl, follows commands", [("pearl", "NAME", "ner", 0.3)], ["pearl"]),
        ("plan: try to wean off vent tonight", [("vent", "LOCATION", "ner", 0.3)], ["vent"]),
        ("all lines out from the fem site", [("fem", "ORGANIZATION", "ner", 0.1)], ["fem"]),
        # scored higher, in Title case, or found by another detector too: kept
        ("neuro: alert and calm, pearl follows commands", [("pearl", "NAME", "ner", 0.9)], []),
        ("Neuro: alert and calm, Pearl follows commands", [("Pearl", "NAME", "ner", 0.3)], []),
        ("spoke with wolfe about the plan", [("wolfe", "NAME", "ner", 0.3), ("wolfe", "NAME", "dictionary", 0.6)],
         []),
        # a person's evidence: a title, an initial, a family or provider word, a credential, an age and sex, the
        # same name in a stronger detection
        ("seen by dr. dobson this am", [("dobson", "NAME", "ner", 0.3)], []),
        ("plan to extubate in am. s. roberts rrt", [("s. roberts", "NAME", "ner", 0.3)], []),
        ("son jonas called for an update", [("jonas", "NAME", "ner", 0.3)], []),
        ("called back per carol about the dose", [("carol", "NAME", "ner", 0.3)], []),
        ("line placed by kim rn at noon", [("kim", "NAME", "ner", 0.3)], []),
        ("family called and pt's visi was in", [("visi", "NAME", "ner", 0.3)], ["visi"]),  # a possessive: no initial
        ("joseph 81m with chf, here for diuresis", [("joseph", "NAME", "ner", 0.3)], []),
        ("Spoke with Radu Crosson today. later radu called back.",
         [("Radu Crosson", "NAME", "dictionary", 0.6), ("radu", "NAME", "ner", 0.3)], []),
        # a place's: a residence or work cue, an institution or unit word, another detection beside it
        ("her daughter lives in rome now", [("rome", "LOCATION", "ner", 0.3)], []),
        ("taken to gh cath lab, no stent", [("gh", "ORGANIZATION", "ner", 0.2)], []),
        ("lives at 12 elm st with wife", [("12", "LOCATION", "ner", 0.9), ("elm", "LOCATION", "ner", 0.3)], []),
    ],
)
def test_when_weak_lower_case_detection_has_no_evidence_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[tuple[str, str, str, float]], dropped: list[str]
) -> None:
    note = recovery.process_batch([scored_note(text, specs)])[0]
    assert sorted(surfaces(note, note.dropped)) == sorted(dropped)


def test_when_weak_lower_score_is_zero_then_weak_detections_stay(recovery: MedicalRecovery) -> None:
    proc = build_processor("recovery", {"weak_lower_score": 0}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([scored_note("all lines out from the bayview site",
                                           [("bayview", "ORGANIZATION", "ner", 0.1)])])[0]
    assert not note.dropped
    on = recovery.process_batch([scored_note("all lines out from the bayview site",
                                                       [("bayview", "ORGANIZATION", "ner", 0.1)])])[0]
    assert surfaces(on, on.dropped) == ["bayview"]  # the same span goes when the threshold is on


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("2 PIVS PLACED AT OUTSIDE HOSPITAL. A-LINE IN CCU.", [("OUTSIDE HOSPITAL", "ORGANIZATION", "ner")],
         ["OUTSIDE HOSPITAL"]),
        ("SHE HAD A PROLONGED HOSPITAL STAY LAST YEAR.", [("PROLONGED HOSPITAL", "ORGANIZATION", "dictionary")],
         ["PROLONGED HOSPITAL"]),
        ("pt admitted to hosp last week with sob", [("hosp", "ORGANIZATION", "ner")], ["hosp"]),
        ("returned call to funeral home re: arrangements", [("funeral home", "ORGANIZATION", "ner")],
         ["funeral home"]),
        # a misspelt describing word counts as one ("FAMIL" for "family")
        ("PT RESTING. FAMLY LEFT FOR HOME AT 2000.", [("FAMLY LEFT FOR HOME", "ORGANIZATION", "dictionary")],
         ["FAMLY LEFT FOR HOME"]),
        # a word of a hospital's name, a place, or case evidence: an institution's name
        ("TRANSFERRED FROM MERCY HOSPITAL FOR CATH.", [("MERCY HOSPITAL", "ORGANIZATION", "ner")], []),
        ("went to harbor hosp with abd pain", [("harbor hosp", "ORGANIZATION", "ner")], []),
        ("ADMITTED TO BOSTON HOSPITAL LAST WEEK.", [("BOSTON HOSPITAL", "ORGANIZATION", "ner")], []),
        ("ADMITTED TO KERNAN HOSPITAL LAST WEEK.", [("KERNAN HOSPITAL", "ORGANIZATION", "ner")], []),
        ("Lines were placed at Outside Hospital before transfer.", [("Outside Hospital", "ORGANIZATION", "ner")],
         []),
    ],
)
def test_when_institution_phrase_is_generic_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_generic_institutions_off_then_generic_phrases_stay() -> None:
    proc = build_processor("recovery", {"use_generic_institutions": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("PLACED AT OUTSIDE HOSPITAL.", [("OUTSIDE HOSPITAL", "ORGANIZATION", "ner")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("SOCIAL: MOTHER, AUNTS, GIRLFRIEND IN TODAY.", [("AUNTS", "NAME", "ner")], ["AUNTS"]),
        ("family here. Hsb is a retired teacher.", [("Hsb", "NAME", "ner")], ["Hsb"]),
        ("PT'S DUAGHTER IS HEALTH CARE PROXY.", [("DUAGHTER", "NAME", "ner")], ["DUAGHTER"]),
        ("CHAPLAIN VISITED. FAMILY AWARE.", [("CHAPLAIN", "NAME", "dictionary+ner")], ["CHAPLAIN"]),
        ("Consult per Dr. Brother this am.", [("Brother", "NAME", "dictionary")], []),  # a title: a surname
        ("Daughter Paula called.", [("Paula", "NAME", "ner")], []),
        ("Spoke with France about the plan.", [("France", "NAME", "dictionary")], []),  # a name, not "fiance"
    ],
)
def test_when_name_is_only_relation_words_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_relation_words_off_then_relation_words_stay() -> None:
    proc = build_processor("recovery", {"use_relation_words": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("MOTHER, AUNTS IN TODAY.", [("AUNTS", "NAME", "ner")])])[0]
    assert not note.dropped


def test_when_use_misspellings_off_then_misspelt_words_stay() -> None:
    proc = build_processor("recovery", {"use_misspellings": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Meeting arranged for tommorow afternoon.", [("tommorow", "NAME", "ner")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # words after the name: a lower-case word after a capitalised name, a frequent word without case evidence,
        # a credential; titles, conjunctions and relation words before it
        ("Dr Kearns paged and told of the fall.", "Kearns paged", "Kearns", ["paged"]),
        ("Dr King has seen the patient.", "King has", "King", ["has"]),
        ("K 3.1. DR MANNING AWARE AND ORDERED KCL.", "MANNING AWARE", "MANNING", ["AWARE"]),
        ("febrile overnight, dr parrilli aware, cultures sent", "parrilli aware", "parrilli", ["aware"]),
        ("plan to extubate in am. s. roberto rrt", "s. roberto rrt", "s. roberto", ["rrt"]),
        ("Family in attendance. Drs' Ballou pronounced.", "Drs' Ballou", "Ballou", ["Drs'"]),
        ("PT SEEN BY DR'S OKAFOR AND LAM.", "S OKAFOR", "OKAFOR", ["S"]),  # the "s" of "DR'S"
        ("ASKED FOR RABBI. RABBI KLEIN CAME TO SPEAK.", "RABBI KLEIN", "KLEIN", ["RABBI"]),
        ("Mr. Arthur Penhallow was admitted.", "Mr. Arthur Penhallow", "Arthur Penhallow", ["Mr."]),
        # nothing to cut: names that are English words, initials, lower-case name parts, foreign place words,
        # hyphenated and apostrophe surnames, a conjunction the model stopped at
        ("DR KIM YOUNG CAME TO SEE PT.", "KIM YOUNG", "KIM YOUNG", []),
        ("Seen by Dr. Amy Brown today.", "Amy Brown", "Amy Brown", []),
        ("SOCIAL: CAMBRIDGE, JOANN N. MD PAGED.", "CAMBRIDGE, JOANN N", "CAMBRIDGE, JOANN N", []),
        ("his wife, Janet logan is here", "Janet logan", "Janet logan", []),
        ("Where: Novo mesto Country Club.", "Novo mesto", "Novo mesto", []),
        ("Met with Dr. Retterer-moore today.", "Retterer-moore", "Retterer-moore", []),
        ("ci<2.0. mary o'hara np aware.", "mary o'hara", "mary o'hara", []),
        ("Ludwig van Beethoven wrote it.", "Ludwig van Beethoven", "Ludwig van Beethoven", []),
        ("The Jones, Smith and Davis Orchestra played.", "Smith and", "Smith and", []),
    ],
)
def test_when_name_span_has_words_beside_the_name_then_they_are_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut
    assert all(s.label == "NAME" and s.source == "ner" for s in (*note.spans, *note.dropped))


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        ("Daughters Ruth and Naomi visited.", "Ruth and Naomi", ["Ruth", "Naomi"], ["and"]),
        ("DRS PELLETIER AND OKAFOR AWARE OF K 3.1", "PELLETIER AND OKAFOR AWARE", ["PELLETIER", "OKAFOR"],
         ["AND", "AWARE"]),
        ("seen by dr. ames & dr. kowalczyk", "ames & dr. kowalczyk", ["ames", "kowalczyk"], ["& dr."]),
        # one name: a list or firm after "Word, ", a street before a number, a family firm
        ("Filed by Hayes, Moreno and Quist for the family.", "Moreno and Quist", ["Moreno and Quist"], []),
        ("Sent to Calle and Rivas 12 last week.", "Calle and Rivas", ["Calle and Rivas"], []),
        ("Owned by Parker and Sons.", "Parker and Sons", ["Parker and Sons"], []),
    ],
)
def test_when_name_span_joins_two_names_then_it_is_split_at_the_conjunction(
    recovery: MedicalRecovery, text: str, span: str, kept: list[str], cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == kept
    assert sorted(surfaces(note, note.dropped)) == sorted(cut)
    assert all(s.label == "NAME" and s.source == "ner" for s in (*note.spans, *note.dropped))


def test_when_name_edges_are_cut_then_the_rest_is_still_checked(recovery: MedicalRecovery) -> None:
    # "son & dauther": once the conjunction is cut, the misspelt relation word alone is no name
    text = "SOCIAL-son & dauther visited."
    note = recovery.process_batch([make_note(text, [("& dauther", "NAME", "ner")])])[0]
    assert not note.spans
    assert sorted(surfaces(note, note.dropped)) == ["&", "dauther"]


def test_when_use_name_edges_off_then_name_spans_keep_their_edges() -> None:
    proc = build_processor("recovery", {"use_name_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("DR MANNING AWARE.", [("MANNING AWARE", "NAME", "ner")])])[0]
    assert surfaces(note, note.spans) == ["MANNING AWARE"]
    assert not note.dropped


def test_when_message_name_has_words_beside_it_then_it_is_not_cut(recovery: MedicalRecovery) -> None:
    note = make_note("Dr Kearns paged.", [("Kearns paged", "NAME", "message")])
    out = recovery.process_batch([note])[0]
    assert out.spans == note.spans and not out.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # a unit's name with its ward or floor number, in a line that moves the patient: the number is cut off
        ("PLAN: TRANSFER TO QUARTERMAIN 2 WHEN BED AVAILABLE.", "QUARTERMAIN 2", "QUARTERMAIN", ["2"]),
        ("pt transferred from quartermain 3 for swan placement", "quartermain 3", "quartermain", ["3"]),
        ("Stable, transfer back to Fenwick3.", "Fenwick3", "Fenwick", ["3"]),
        ("p: to fenwick 2 at 1000; diet as tol", "fenwick 2", "fenwick", ["2"]),  # "to" right before it
        ("Code blue called to Lakeside 6 at 0400.", "Lakeside 6", "Lakeside", ["6"]),
        ("? to Lakeside 4 when a bed opens", "Lakeside 4", "Lakeside", ["4"]),
        # a house number, an apartment, a route, no movement cue, more than one word: the place stays whole
        ("Lives at Puruntie 82 with his wife.", "Puruntie 82", "Puruntie 82", []),
        ("Transferred to her home at Apt 12.", "Apt 12", "Apt 12", []),
        ("Transferred from a clinic on Route 9.", "Route 9", "Route 9", []),
        ("Daughter lives in Lakeside 4.", "Lakeside 4", "Lakeside 4", []),
        ("Transferred to 14 Clover Street.", "14 Clover Street", "14 Clover Street", []),
    ],
)
def test_when_unit_name_has_a_ward_number_then_the_number_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "LOCATION", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_ward_numbers_off_then_the_number_stays() -> None:
    proc = build_processor("recovery", {"use_ward_numbers": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("TRANSFER TO QUARTERMAIN 2.", [("QUARTERMAIN 2", "LOCATION", "ner")])])[0]
    assert surfaces(note, note.spans) == ["QUARTERMAIN 2"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # a part of the day written as a word before or after the date, a line of no date after a line break
        ("NG tube pulled 4/12 pm, tolerating sips.", "4/12 pm", "4/12", ["pm"]),
        ("Febrile to 102 on eve 5/3; cultures sent.", "eve 5/3", "5/3", ["eve"]),
        ("TRANSFUSED 2U 6/18 AM FOR HCT 24.", "6/18 AM", "6/18", ["AM"]),
        ("Dialysis due Monday a.m. per renal.", "Monday a.m.", "Monday", ["a.m."]),
        ("TRANSFERRED FOR CHF 3/22 \n \nHX: HTN, DM", "3/22 \n \nHX", "3/22", ["HX"]),
        ("Dialysis runs 6/9 eves via the permacath.", "6/9 eves", "6/9", ["eves"]),
        # a shift's hours after the date: a range, no moment
        ("Nursing addendum 4/2/19 07-1930, see flowsheet", "4/2/19 07-1930", "4/2/19", ["07-1930"]),
        ("NPN 11/3 7p-7a: slept well", "11/3 7p-7a", "11/3", ["7p-7a"]),
        ("Admitted 5/28-6/1 for pneumonia", "5/28-6/1", "5/28-6/1", []),  # a range of days stays
        # nothing to cut: a clock time is part of a date-time, two lines with a date each, a time alone
        ("Extubated 3/14 3:30 PM without trouble.", "3/14 3:30 PM", "3/14 3:30 PM", []),
        ("Seen 3/14/2023 @ 0930 by the team.", "3/14/2023 @ 0930", "3/14/2023 @ 0930", []),
        ("Seen 3/4\n3/5 again", "3/4\n3/5", "3/4\n3/5", []),
    ],
)
def test_when_date_span_has_edges_that_are_no_date_then_they_are_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "DATE", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut
    assert all(s.label == "DATE" and s.source == "ner" for s in (*note.spans, *note.dropped))


def test_when_use_date_edges_off_then_date_spans_keep_their_edges() -> None:
    proc = build_processor("recovery", {"use_date_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Pulled 4/12 pm.", [("4/12 pm", "DATE", "ner")])])[0]
    assert surfaces(note, note.spans) == ["4/12 pm"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a date of digits no calendar can read, from the model alone
        ("awake, oriented x 3, follows commands", [("3", "DATE", "ner")], ["3"]),
        ("THEY HAD 4: TWO SONS AND TWO DAUGHTERS", [("4", "DATE", "ner")], ["4"]),
        ("Pressures 152/64 overnight, improved.", [("152/64", "DATE", "ner")], ["152/64"]),
        ("Insulin on a 06/12/18/24 schedule.", [("06/12/18/24", "DATE", "ner")], ["06/12/18/24"]),
        ("Checks on a 22/04/10/16 schedule.", [("22/04/10/16", "DATE", "ner")], ["22/04/10/16"]),  # two "dates"
        # readable dates stay, so do a possible age over 89, the regex's finds and a piece of another detection
        ("Arm fracture 4/97, healed.", [("4/97", "DATE", "ner")], []),
        ("Ventilated 5/28-6/1 for pneumonia.", [("5/28-6/1", "DATE", "ner")], []),
        ("Seen 5/5 in clinic.", [("5/5", "DATE", "ner")], []),
        ("Seen 2023-03 in clinic.", [("2023-03", "DATE", "ner")], []),
        ("She turned 97 last week.", [("97", "DATE", "ner")], []),
        ("Pressures 152/64 overnight.", [("152/64", "DATE", "regex")], []),
        ("Short of breath 4/6 at home.", [("4/6", "DATE", "regex"), ("6", "DATE", "ner")], []),
    ],
)
def test_when_date_of_digits_is_no_calendar_date_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # the model's piece of a larger number or of a clock time
        ("Seen 11:20pm by the team.", [("20", "DATE", "ner")], ["20"]),
        ("note from the unit 07-1530 follows", [("-1530", "DATE", "ner")], ["-1530"]),
        ("Signed 11:20 by the resident.", [("20", "DATE", "ner")], ["20"]),
        # the whole run has an identifier shape, no run-on, another detection on it, not the model's alone
        ("Wife (202232-4455) in to visit.", [("202232", "DATE", "ner")], []),
        ("CAD, MI 6/91, HTN", [("/91", "DATE", "ner")], []),  # the month/year it is a piece of is a date
        ("Arm fracture fx4/97, healed.", [("4/97", "DATE", "ner")], []),
        ("Short of breath 4/6 at home.", [("4/6", "DATE", "regex"), ("4/", "DATE", "ner")], []),
        ("note from the unit 07-1530 follows", [("-1530", "DATE", "ner+regex")], []),
    ],
)
def test_when_span_is_a_piece_of_a_larger_number_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_number_pieces_off_then_pieces_stay() -> None:
    proc = build_processor("recovery", {"use_number_pieces": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Signed 11:20 by the resident.", [("20", "DATE", "ner")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a one-word dictionary name where a drug goes: after a dose, in a list with a known drug
        ("Sugar 240, gave 4u Reg insulin per scale.", [("Reg", "NAME", "dictionary")], ["Reg"]),
        ("Given 5mg Vit K IV for the INR.", [("Vit", "NAME", "dictionary")], ["Vit"]),
        ("Receiving Kef, Zosyn, Flagyl for now.", [("Kef", "NAME", "dictionary")], ["Kef"]),
        ("Levels of Digoxin/Napa pending.", [("Napa", "NAME", "dictionary")], ["Napa"]),
        # name evidence, no drug beside it, not a list, the model's own find
        ("Lasix given, Dr. Kef aware.", [("Kef", "NAME", "dictionary")], []),
        ("White, Willis and Hoffman signed it.", [("Hoffman", "NAME", "dictionary")], []),
        ("Lasix given. Mark called after.", [("Mark", "NAME", "dictionary")], []),
        ("Given 5mg Vit K IV for the INR.", [("Vit", "NAME", "dictionary+ner")], []),
    ],
)
def test_when_dictionary_name_stands_where_a_drug_goes_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_drug_lists_off_then_names_beside_drugs_stay() -> None:
    proc = build_processor("recovery", {"use_drug_lists": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Gave 4u Reg insulin.", [("Reg", "NAME", "dictionary")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "label", "kept", "cut"),
    [
        # a last word that is no part of the place's name: a preposition, "or", the letter of "s/p"
        ("had a hernia repair at lakeview hospital at age 40", "lakeview hospital at", "ORGANIZATION",
         "lakeview hospital", ["at"]),
        ("SCREENED FOR OAKDALE REHAB OR BAYSIDE REHAB", "OAKDALE REHAB OR", "ORGANIZATION", "OAKDALE REHAB", ["OR"]),
        ("discharged from Fairview Hospital for alcohol withdrawal", "Fairview Hospital for", "ORGANIZATION",
         "Fairview Hospital", ["for"]),
        ("came over from Mercy West s/p fall", "Mercy West s", "ORGANIZATION", "Mercy West", ["s"]),
        ("will go back to St. Anne's -10AM", "St. Anne's -10", "ORGANIZATION", "St. Anne's", ["-10"]),
        # "of" and "and" stay (the model stopped inside a longer name), so does a one-word place
        ("She lives on the corner of Main St.", "corner of", "LOCATION", "corner of", []),
        ("The Jones, Smith and Davis firm", "Smith and", "ORGANIZATION", "Smith and", []),
        ("Seen at Oakdale for years", "Oakdale", "LOCATION", "Oakdale", []),
    ],
)
def test_when_place_span_ends_in_a_word_of_no_name_then_it_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, label: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, label, "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_place_edges_off_then_places_keep_their_last_word() -> None:
    proc = build_processor("recovery", {"use_place_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("at lakeview hospital at noon", [("lakeview hospital at", "ORGANIZATION",
                                                                           "ner")])])[0]
    assert surfaces(note, note.spans) == ["lakeview hospital at"]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        ("Ordered by Dr Ames\nService: Cardiology", [("Service", "ORGANIZATION", "dictionary")], ["Service"]),
        ("\n  Reveiw of Sytems:\n  Neuro: intact", [("Reveiw of Sytems", "ORGANIZATION", "dictionary")],
         ["Reveiw of Sytems"]),
        ("Resp: on 2L.\nGU: foley draining well", [("GU", "NAME", "ner")], ["GU"]),
        # a dash ends a system-by-system heading too; a hyphenated name or a number after the dash is no heading
        ("Neuro- alert.\nGU- foley to gravity", [("GU", "NAME", "ner")], ["GU"]),
        ("Resp- clear.\nGU-foley draining", [("GU", "NAME", "ner")], ["GU"]),
        ("Mary-Ellen Okafor called back", [("Mary", "NAME", "dictionary")], []),
        ("Okafor - 617-555-0134 (daughter)", [("Okafor", "NAME", "ner")], []),
        # a misspelt heading word makes a heading only before a colon
        ("\n  Reveiw of Sytems- all negative", [("Reveiw of Sytems", "ORGANIZATION", "dictionary")], []),
        # a first name or a surname before the colon is a speaker or a signature; not a heading when something
        # comes before it on the line or no colon follows
        ("Grace: Are you awake?\nNurse: Yes.", [("Grace", "NAME", "dictionary+ner")], []),
        ("Smith: I will call back.", [("Smith", "NAME", "ner")], []),
        ("Kristiána: Who is there?", [("Kristiána", "NAME", "ner")], []),
        ("Seen in Service: Cardiology", [("Service", "ORGANIZATION", "dictionary")], []),
        ("Service Cardiology today", [("Service", "ORGANIZATION", "dictionary")], []),
    ],
)
def test_when_span_is_a_line_heading_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


@pytest.mark.parametrize(
    ("text", "specs", "dropped"),
    [
        # a curated abbreviation misspelt into a name-list word, as an item of a list of curated words
        ("Neuro: opens eyes. MAE. PEARL. Follows commands.", [("PEARL", "NAME", "ner")], ["PEARL"]),
        ("neuro: pearl, mae, nods to questions", [("pearl", "NAME", "ner")], ["pearl"]),
        ("NEURO: ALERT. MAE, PERLA, SPEECH CLEAR", [("PERLA", "NAME", "dictionary+ner")], ["PERLA"]),
        # no curated item beside it, a title before it, or no curated word one edit away: a name
        ("Daughter Pearl, at bedside, updated.", [("Pearl", "NAME", "ner")], []),
        ("MAE. Dr. Pearl, aware of labs.", [("Pearl", "NAME", "ner")], []),
        ("MAE. Ruth, his wife, visited.", [("Ruth", "NAME", "ner")], []),
    ],
)
def test_when_misspelt_abbreviation_is_an_item_of_a_list_of_abbreviations_then_dropped(
    recovery: MedicalRecovery, text: str, specs: list[SpanSpec], dropped: list[str]
) -> None:
    assert dropped_surfaces(recovery, text, specs) == sorted(dropped)


def test_when_use_jargon_lists_off_then_misspelt_list_items_stay() -> None:
    proc = build_processor("recovery", {"use_jargon_lists": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("MAE. PEARL.", [("PEARL", "NAME", "ner")])])[0]
    assert not note.dropped


def test_when_use_headings_off_then_headings_stay() -> None:
    proc = build_processor("recovery", {"use_headings": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Service: Cardiology", [("Service", "ORGANIZATION", "dictionary")])])[0]
    assert not note.dropped


@pytest.mark.parametrize(
    ("text", "span", "kept", "cut"),
    [
        # (a span with a whole phone's shape is no candidate: the model's piece of one is)
        ("niece: Ana Ruiz- 312-555-0147 \n 2) son: Leo", "-555-0147 \n 2", "-555-0147", ["2"]),
        # nothing to cut: one line, or more digits on the other line
        ("call 312-555-0147 after 5", "312-555-0147", "312-555-0147", []),
        ("Tel: 312 555\n0147", "312 555\n0147", "312 555\n0147", []),
    ],
)
def test_when_phone_span_crosses_a_line_break_then_the_other_line_is_cut_off(
    recovery: MedicalRecovery, text: str, span: str, kept: str, cut: list[str]
) -> None:
    note = recovery.process_batch([make_note(text, [(span, "PHONE", "ner")])])[0]
    assert surfaces(note, note.spans) == [kept]
    assert surfaces(note, note.dropped) == cut


def test_when_use_phone_edges_off_then_phone_spans_keep_their_lines() -> None:
    proc = build_processor("recovery", {"use_phone_edges": False}, BuildContext(cache_dir=vocab.cache_dir()))
    note = proc.process_batch([make_note("Ana 312-555-0147 \n 2)", [("-555-0147 \n 2", "PHONE", "ner")])])[0]
    assert surfaces(note, note.spans) == ["-555-0147 \n 2"] and not note.dropped
