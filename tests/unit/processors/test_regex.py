"""The regex processor: identifier shapes with exact offsets, and medical values it must not tag."""

from __future__ import annotations

import pytest

from processors.pipeline import BuildContext, Note, build_processor
from processors.regex.step import RegexDetector, merge_same_label, recognizers
from schemas.errors import ConfigError
from schemas.labels import Label, Subtype
from schemas.models import NoteIn, Span

#: The ensemble's default threshold for source "regex": what the pipeline will redact.
THRESHOLD = 0.3

D, A, P, ID, E, U, IP, L = Label.DATE, Label.AGE, Label.PHONE, Label.ID, Label.EMAIL, Label.URL, Label.IP, Label.LOCATION


@pytest.fixture(scope="module")
def detector() -> RegexDetector:
    return RegexDetector()


def redacted(detector: RegexDetector, text: str) -> list[Span]:
    return [s for s in detector.detect(text) if s.score >= THRESHOLD]


Expected = tuple[str, Label, Subtype | None]

POSITIVE: list[tuple[str, list[Expected]]] = [
    # dates, every common clinical format
    ("Seen in clinic on 7/22.", [("7/22", D, None)]),
    ("Admitted 07/22/2019 for chest pain.", [("07/22/2019", D, None)]),
    ("Surgery 7-22-19 without complication.", [("7-22-19", D, None)]),
    ("Echo done 2019-07-22, EF 55%.", [("2019-07-22", D, None)]),
    ("Culture collected 2019-07-22T14:30:00Z.", [("2019-07-22T14:30:00Z", D, None)]),
    ("Date of service: 20190722", [("20190722", D, None)]),
    ("Specimen drawn 22-Jul-19 in lab.", [("22-Jul-19", D, None)]),
    ("Discharged 22 Jul 2019 to home.", [("22 Jul 2019", D, None)]),
    ("Follow up Jul 22 with PCP.", [("Jul 22", D, None)]),
    ("Seen July 22nd by ortho.", [("July 22nd", D, None)]),
    ("Seen July 22nd, 2019 by ortho.", [("July 22nd, 2019", D, None)]),
    ("Seen July 22nd 2019 by ortho.", [("July 22nd 2019", D, None)]),
    ("MRI on the 22nd of July showed no change.", [("22nd of July", D, None)]),
    ("Return on the 9th.", [("9th", D, None)]),
    ("He will come back on the 3rd, per wife.", [("3rd", D, None)]),
    ("Last colonoscopy July 2019.", [("July 2019", D, None)]),
    ("Last colonoscopy Jul '19.", [("Jul '19", D, None)]),
    ("Last colonoscopy 07/2019.", [("07/2019", D, None)]),
    ("Symptoms began in March.", [("March", D, None)]),
    ("Pt seen 7/22/2019 14:30 by MD.", [("7/22/2019 14:30", D, None)]),
    ("Pt seen 07/22 @ 0800.", [("07/22 @ 0800", D, None)]),
    ("Follow-up July 22, 2019 at 3 pm in clinic.", [("July 22, 2019 at 3 pm", D, None)]),
    ("Admit date 7.22.2019", [("7.22.2019", D, None)]),
    ("Seen 22/07/2019 in Paris.", [("22/07/2019", D, None)]),
    ("Inpatient July 22-25, 2019.", [("July 22-25, 2019", D, None)]),
    ("Fall on Christmas Eve at home.", [("Christmas Eve", D, None)]),
    ("DOB 1/2/45", [("1/2/45", D, Subtype.BIRTHDATE)]),
    ("Date of birth: March 3, 1950.", [("March 3, 1950", D, Subtype.BIRTHDATE)]),
    ("She was born 3/4/1931 in Ohio.", [("3/4/1931", D, Subtype.BIRTHDATE)]),
    ("Seen 7/22/2019-7/25/2019 inpatient.", [("7/22/2019", D, None), ("7/25/2019", D, None)]),
    ("Labs from 7/2 to 7/9 reviewed.", [("7/2", D, None), ("7/9", D, None)]),
    ("Surgery on 7-22 went well.", [("7-22", D, None)]),
    # nursing style, ALL CAPS
    ("PT SEEN 7/22 @0800", [("7/22 @0800", D, None)]),
    ("D/C'D 12/3", [("12/3", D, None)]),
    ("SEEN JULY 22ND, D/C 22-JUL-2019", [("JULY 22ND", D, None), ("22-JUL-2019", D, None)]),
    ("BCX MAR 14 NGTD", [("MAR 14", D, None)]),
    ("Blood cultures from 2/9 grew MSSA.", [("2/9", D, None)]),
    ("Hospital Day #4 - 6/6", [("6/6", D, None)]),
    ("Symptoms until 1/3, when he developed fever.", [("1/3", D, None)]),
    # ages over 89
    ("Pt is a 92 yo M with CHF.", [("92", A, None)]),
    ("A 92-year-old woman with dementia.", [("92", A, None)]),
    ("Age 95, lives alone.", [("95", A, None)]),
    ("Patient aged 101 at admission.", [("101", A, None)]),
    ("92 y/o F s/p fall", [("92", A, None)]),
    ("92M presents with syncope.", [("92", A, None)]),
    ("Pt is a 94 F with dementia.", [("94", A, None)]),
    ("A woman in her 90s.", [("90s", A, None)]),
    ("A ninety-two year old man.", [("ninety-two", A, None)]),
    # phone, fax, pager
    ("Call (617) 555-1234 with results.", [("(617) 555-1234", P, None)]),
    ("Phone: 617-555-1234", [("617-555-1234", P, None)]),
    ("cell 617.555.1234", [("617.555.1234", P, None)]),
    ("Reach daughter at +1 617 555 1234.", [("+1 617 555 1234", P, None)]),
    ("Office 555-555-1234 x1234.", [("555-555-1234 x1234", P, None)]),
    ("Toll free 1-800-555-1234.", [("1-800-555-1234", P, None)]),
    # days of the week date the events (i2b2 convention; recall first); short forms that are words need a cue
    ("Pt c/o CP since tues, seen MONDAY", [("tues", D, None), ("MONDAY", D, None)]),
    ("Family visited on Sunday.", [("Sunday", D, None)]),
    ("f/u on sat with PCP", [("sat", D, None)]),
    # a formatted NANP number stays a phone after a measurement-like word ("ref", "p")
    ("Zebediah seen; ref 212-555-0187 noted.", [("212-555-0187", P, None)]),
    ("p 617-555-1234", [("617-555-1234", P, Subtype.PAGER)]),
    ("Fax: 617-555-9876", [("617-555-9876", P, Subtype.FAX)]),
    ("Cardiology fellow, pager 12345.", [("12345", P, Subtype.PAGER)]),
    ("Dr. Lee, pgr #4-5678", [("4-5678", P, Subtype.PAGER)]),
    ("beeper 3456", [("3456", P, Subtype.PAGER)]),
    ("Call 555-1234 to schedule.", [("555-1234", P, None)]),
    ("Nursing station ext. 4567", [("4567", P, None)]),
    ("UK contact +44 20 7946 0958.", [("+44 20 7946 0958", P, None)]),
    ("Home phone 6175551234", [("6175551234", P, None)]),
    ("Pam Carlotti, PA-C p03046", [("03046", P, Subtype.PAGER)]),
    ("PAGED @1730 RE: UOP, P#6952.", [("6952", P, Subtype.PAGER)]),
    ("Lives with brother (Marshall J. Ortiz, 555-2378).", [("555-2378", P, None)]),
    ("Contact: Frank M. Spiegel, 958-7887.", [("958-7887", P, None)]),
    ("Mobile: 0496 46 46 70", [("0496 46 46 70", P, None)]),
    # IDs by context word and by shape
    ("MRN: 12345678", [("12345678", ID, Subtype.MRN)]),
    ("MRN#A1234567", [("A1234567", ID, Subtype.MRN)]),
    ("Medical record number 00123456", [("00123456", ID, Subtype.MRN)]),
    ("Pt ID 556677", [("556677", ID, Subtype.MRN)]),
    ("Acct # 998877", [("998877", ID, Subtype.ACCOUNT)]),
    ("Encounter 4455667788", [("4455667788", ID, Subtype.ACCOUNT)]),
    ("CSN 123456789", [("123456789", ID, Subtype.ACCOUNT)]),
    ("Accession S19-12345", [("S19-12345", ID, None)]),
    ("Specimen ID: AB123456", [("AB123456", ID, None)]),
    ("Medicare ID 1EG4-TE5-MK73", [("1EG4-TE5-MK73", ID, Subtype.HEALTHPLAN)]),
    ("Policy #XYZ123456789", [("XYZ123456789", ID, Subtype.HEALTHPLAN)]),
    ("Member ID: W123456789", [("W123456789", ID, Subtype.HEALTHPLAN)]),
    ("DEA AB1234563", [("AB1234563", ID, Subtype.LICENSE)]),
    ("NPI 1234567893", [("1234567893", ID, Subtype.LICENSE)]),
    ("Driver's license # D1234567", [("D1234567", ID, Subtype.LICENSE)]),
    ("Pacemaker serial number PJN123456S", [("PJN123456S", ID, Subtype.DEVICE)]),
    ("Car VIN 1HGCM82633A004352", [("1HGCM82633A004352", ID, Subtype.VEHICLE)]),
    ("Order # 4477123", [("4477123", ID, None)]),
    ("Outside ref #A99812", [("A99812", ID, None)]),
    ("Sample A1234567 received.", [("A1234567", ID, None)]),
    ("Old chart 12345678 scanned.", [("12345678", ID, None)]),
    ("SSN 123-45-6789", [("123-45-6789", ID, Subtype.SSN)]),
    ("Social security number 078 05 1120.", [("078 05 1120", ID, Subtype.SSN)]),
    ("SSN: ***-**-1234", [("***-**-1234", ID, Subtype.SSN)]),
    ("Paid with card 4111 1111 1111 1111.", [("4111 1111 1111 1111", ID, Subtype.ACCOUNT)]),
    # email, URL, IP
    ("Email jjohnson@gmail.com for records.", [("jjohnson@gmail.com", E, None)]),
    ("Portal: https://mychart.example.org/login?id=5.", [("https://mychart.example.org/login?id=5", U, None)]),
    ("See www.example.com/patients.", [("www.example.com/patients", U, None)]),
    ("Info at example.org today.", [("example.org", U, None)]),
    ("Device IP 192.168.1.10 offline.", [("192.168.1.10", IP, None)]),
    ("Host 2001:db8::1 failed.", [("2001:db8::1", IP, None)]),
    # locations
    ("Lives at 123 Main St with wife.", [("123 Main St", L, Subtype.STREET)]),
    ("Address: 45 Oak Avenue Apt 3, Springfield", [("45 Oak Avenue Apt 3", L, Subtype.STREET)]),
    ("Mail to PO Box 123.", [("PO Box 123", L, Subtype.STREET)]),
    ("Boston, MA 02115", [("Boston", L, Subtype.CITY), ("MA", L, Subtype.STATE), ("02115", L, Subtype.ZIP)]),
    ("Springfield, Illinois 62701", [("Springfield", L, Subtype.CITY), ("Illinois", L, Subtype.STATE),
                                     ("62701", L, Subtype.ZIP)]),
    ("LIVES IN BOSTON, MA 02115-1234", [("BOSTON", L, Subtype.CITY), ("02115-1234", L, Subtype.ZIP)]),
    ("Zip code 90210.", [("90210", L, Subtype.ZIP)]),
    ("Moved to Houston, TX last year.", [("Houston", L, Subtype.CITY), ("TX", L, Subtype.STATE)]),
    ("Lives with his son in Indianapolis, IN.", [("Indianapolis", L, Subtype.CITY), ("IN", L, Subtype.STATE)]),
    ("Found on the floor at home in Pearisburg; down time unknown.", [("Pearisburg", L, Subtype.CITY)]),
    ("PT LIVES ALONE IN WICHITA. PLAN: WEAN", [("WICHITA", L, Subtype.CITY)]),
    ("Lives with his sister Judith J. Strong in Council Bluffs.", [("Council Bluffs", L, Subtype.CITY)]),
    ("23675 River Way Arlington Heights, IL 60005", [("23675 River Way", L, Subtype.STREET),
                                                    ("Arlington Heights", L, Subtype.CITY)]),
    ("Rio Grande City, TX 78582", [("Rio Grande City", L, Subtype.CITY)]),
    ("PSC 0413, Box 8144, APO AE 09012", [("PSC 0413, Box 8144", L, Subtype.STREET), ("09012", L, Subtype.ZIP)]),
    ("Office in Suite 501.", [("Suite 501", L, Subtype.STREET)]),
    ("1600 Pennsylvania Avenue NW, Washington, DC 20500", [
        ("1600 Pennsylvania Avenue NW", L, Subtype.STREET), ("Washington", L, Subtype.CITY),
        ("DC", L, Subtype.STATE), ("20500", L, Subtype.ZIP)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_identifier_shape_then_tagged_with_exact_offsets(
    detector: RegexDetector, text: str, expected: list[Expected]
) -> None:
    spans = redacted(detector, text)
    for substring, label, subtype in expected:
        start = text.index(substring)
        found = [s for s in spans if (s.start, s.end, s.label) == (start, start + len(substring), label)]
        assert found, f"{substring!r} not tagged {label}: {[(text[s.start:s.end], s.label) for s in spans]}"
        if subtype is not None:
            assert found[0].subtype == subtype
        assert all(s.source == "regex" for s in found)


#: Medical values (and other non-identifiers) that must not be redacted.
MUST_NOT_TAG: list[str] = [
    "BP 120/80", "BP: 90/60 mmHg", "HR 88", "K 4.1", "Na 138", "1-2 tabs q4-6h", "meds at 0630", "GCS 15",
    "Apgar 8/9", "Apgars 8/9", "2/3 of patients", "T 98.6", "O2 sat 95%", "INR 2.5", "TP53 g.7578395G>C", "5 mg",
    "10/10 pain", "pain 8/10", "C5-C6", "C5-6 disc", "Grade 3/6 murmur", "3/6 systolic murmur", "20 G IV", "PEEP 5",
    "FiO2 40%", "3+ edema", "strength 5/5", "5/5 strength throughout", "2+ DTRs", "reflexes 2/4",
    "Percocet 5/325 mg", "q6h", "at 14:30", "given at 0800 and 2000", "in 2019", "since 2015", "WBC 12.5",
    "Temp 99 F", "Tmax 101 F", "1/2 NS at 100 mL/hr", "D5 1/2 NS", "lisinopril 10 mg daily",
    "take 1-2 tablets every 4-6 hours", "walks 2 blocks", "CD4 count 350", "A1c 7.2", "NYHA class II",
    "ASA 325 mg", "for 3-4 days", "x 3 days", "2-3 times a day", "rs1234567", "BRCA1", "CYP2D6*4", "HLA-B27",
    "FK506", "T2N0M0", "E11.9", "20/20 vision", "VA 20/40 OU", "24/7 supervision", "Mallampati 2", "I:E 1:2",
    "RR 18", "1:100,000 epinephrine", "lidocaine 1%", "100-200 mg", "Gleason 3+4=7", "pH 7.35", "BMI 32.5",
    "weight 92 kg", "12-lead EKG", "3 way Foley", "#16 Foley", "ETT 7.5", "May be taken with food",
    "Dec in UOP", "MAR reviewed", "per MAR 2 doses given", "on 2L NC", "prednisone taper 40-30-20-10 mg",
    "1000000 units penicillin", "glucose 120-180", "K 3.5-5.0", "sat 88-92%", "HR 100-120s", "A&O x3",
    "CN II-XII intact", "pain improved from 8/10 to 2/10", "Grade 2/6 holosystolic", "pulses 2+ bilaterally",
    "sun exposure", "Sat up in chair", "wed to her partner", "in the spring", "the 3rd time", "the 5th metatarsal", "on the 2nd day", "3/4 inch laceration",
    "Tylenol 650 mg q6h prn", "EF 55-60%", "O2 sat 92 F", "HR 92, RR 20", "93% on RA", "FEV1 1.2 L",
    "Plan: 1. CHF 2. HTN", "G2P1", "ICD-10 I10", "PHQ-9 score 12", "MMSE 24/30", "MoCA 26/30",
    "FRANK BLOOD IN NGT, MD AWARE.", "Results sent to Carri Wood, MD.", "Consults: Cardiology, ID, Renal",
    "seen by her PCP, Nevada", "K 3.3 REPLETED W/ 40 MEQ KCL. ST. JUDE VALVE IN PLACE", "CK 350 (200-1000)",
    "SCN4A (OMIM +603967)", "factor V Leiden, prothrombin G20210A", "BRAF V600E", "Glasgow 6/15",
    "RUE 4/5, LUE 5/5", "Tonsils 2/4", "VAS 7/10", "lives in a nursing home", "LIVES IN APARTMENT ALONE",
    "WBC 8.4 x 109/L", "2/16 lymph nodes positive",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(detector: RegexDetector, text: str) -> None:
    spans = redacted(detector, text)
    assert spans == [], [(text[s.start:s.end], s.label.value, s.score) for s in spans]


@pytest.mark.parametrize(("text", "expected"), [p for p in POSITIVE if p[0].upper() != p[0]][:40],
                         ids=[p[0].upper() for p in POSITIVE if p[0].upper() != p[0]][:40])
def test_when_all_caps_then_same_dates_phones_ids_ages(
    detector: RegexDetector, text: str, expected: list[Expected]
) -> None:
    upper = text.upper()
    spans = redacted(detector, upper)
    for substring, label, _ in expected:
        start = upper.index(substring.upper())
        assert any((s.start, s.end, s.label) == (start, start + len(substring), label) for s in spans), substring


@pytest.mark.parametrize(("text", "substring"), [
    ("Tonsils enlarged, 2/4.", "2/4"),    # fraction-shaped near an exam word: needs another detector's vote
    ("Results 20190722 attached", "20190722"),  # compact date without a date word: an ID shape wins
])
def test_when_ambiguous_shape_then_low_score_candidate(detector: RegexDetector, text: str, substring: str) -> None:
    start = text.index(substring)
    dates = [s for s in detector.detect(text) if s.label == Label.DATE and s.start == start]
    assert dates and all(s.score < THRESHOLD for s in dates)


def test_when_text_is_empty_then_returns_empty_list(detector: RegexDetector) -> None:
    assert detector.detect("") == []


def test_when_lowercase_changes_length_then_offsets_still_exact(detector: RegexDetector) -> None:
    text = "İİİ seen 07/22/2019, MRN 12345678"
    spans = {text[s.start:s.end] for s in redacted(detector, text)}
    assert {"07/22/2019", "12345678"} <= spans


def test_when_same_label_nested_then_one_span_with_best_score_and_subtype(detector: RegexDetector) -> None:
    text = "MRN 12345678"
    spans = [s for s in detector.detect(text) if s.label == Label.ID]
    assert len(spans) == 1 and spans[0].subtype == Subtype.MRN and spans[0].score >= 0.85


def test_when_pipeline_step_then_spans_added_with_source_regex() -> None:
    proc = build_processor("regex", {}, BuildContext())
    notes = [Note(input=NoteIn(note_id="n1", text="DOB 1/2/45, call 617-555-1234")),
             Note(input=NoteIn(note_id="n2", text="BP 120/80, HR 88"))]
    out = proc.process_batch(notes)
    assert [len([s for s in n.spans if s.score >= THRESHOLD]) for n in out] == [2, 0]
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


def test_when_nursing_note_without_identifiers_then_nothing_redacted(detector: RegexDetector) -> None:
    for text in (NURSING_NOTE, NURSING_NOTE.lower()):
        spans = redacted(detector, text)
        assert spans == [], [(text[s.start:s.end], s.label.value, s.score) for s in spans]


def test_when_note_has_many_identifiers_then_each_tagged_exactly(detector: RegexDetector) -> None:
    text = ("92 yo F, DOB 03/14/1931, MRN 00482913, admitted 7/22/2019 @ 1430 from 45 Oak Avenue Apt 3, "
            "Springfield, IL 62704. Daughter (c) 217-555-0142, email jane.doe@example.com. BP 120/80, K 4.1. "
            "F/u with Dr. Lee (pager 4-5678) on the 9th.")
    got = {(text[s.start:s.end], s.label) for s in redacted(detector, text)}
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
