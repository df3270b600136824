"""Medical syntax recognisers: variants, doses, vitals, scores, times, labs, levels, genes, drug codes are
recognised; identifiers (dates, ages, ZIPs, phones, MRNs, date-times) are not; limited scans keep offsets.

Genes come from the real vocabulary (built on first use into the run's DEID_CACHE_DIR, then loaded), so the
gene cases also check that the builder keeps those symbols.
"""

from __future__ import annotations

import pytest

from dictionaries.medical import medical_vocabulary
from dictionaries.medical_syntax import (
    SYNTAX_PATTERNS,
    clinical_measures,
    identifier_cue,
    measurement_value,
    parse_measures,
    syntax_spans,
)


@pytest.fixture(scope="module")
def genes() -> frozenset[str]:
    return medical_vocabulary().genes


def test_every_pattern_has_a_kind_and_lower_case_triggers_when_lowered() -> None:
    for sp in SYNTAX_PATTERNS:
        assert sp.kind and sp.regex.pattern
        if sp.lowered:
            assert all(t == t.lower() for t in sp.triggers), sp.kind


def test_when_genes_are_given_as_any_iterable_then_they_are_recognised() -> None:
    assert syntax_spans("BRAF V600E positive", ["BRAF"]) == [(0, 10, "gene")]
    assert syntax_spans("BRAF V600E positive", []) == []


@pytest.mark.parametrize(
    ("text", "surface", "kind"),
    [
        ("TP53 g.7578395G>C was found", "g.7578395G>C", "variant"),
        ("BRCA1 c.68_69delAG carrier", "c.68_69delAG", "variant"),
        ("NM_000546.6:c.215C>G", "NM_000546.6:c.215C>G", "variant"),
        ("BRAF p.Val600Glu positive", "p.Val600Glu", "variant"),
        ("SNP rs80357906 heterozygous", "rs80357906", "rsid"),
        ("Lasix 40 mg daily", "40 mg", "dose"),
        ("KCl 20 mEq x1", "20 mEq", "dose"),
        ("Vitals: BP 120/80, HR 72", "BP 120/80", "vital"),
        ("GCS 15 on arrival", "GCS 15", "score"),
        ("Apgar 8/9 at birth", "Apgar 8/9", "score"),
        ("NYHA III symptoms", "NYHA III", "score"),
        ("Gleason 3+4 adenocarcinoma", "Gleason 3+4", "score"),
        ("pain 6/10 today", "pain 6/10", "score"),
        ("2/6 systolic murmur", "2/6 systolic", "score"),
        ("epinephrine 1:1000", "1:1000", "ratio"),
        ("Meds at 0630 and 1800", "at 0630 and 1800", "time"),
        # a time before "on <date>" is the schedule of that day; only a time right after a date (or right before
        # one) makes a date-time
        ("Dose given at 1105 on 08-Apr-18.", "at 1105", "time"),
        ("no haldol since 5am on 6/14", "5am", "time"),
        ("Lasix 40 mg given @ 1105 today", "@ 1105", "time"),
        ("NPN CCU 7 PM - 7 AM: S/P stent", "7 PM - 7 AM", "time"),
        ("pt is 775cc neg since 12am", "12am", "time"),
        ("extubated at 1030AM, stable", "1030AM", "time"),
        ("ON CPAP FROM 12NOON TO 1600, TOLERATED", "FROM 12NOON TO 1600", "time"),
        ("slept from 2200 till 0600", "from 2200 till 0600", "time"),
        ("Time frame: 3:15-4:00pm", "3:15-4:00pm", "time"),
        ("EXPIRED AT 3:10 A.M. FAMILY AWARE", "3:10 A.M.", "time"),
        ("morphine q6h prn", "q6h", "frequency"),
        ("Na 138, K 4.1", "Na 138", "lab"),
        ("MRI C5-C6 herniation", "C5-C6", "vertebra"),
        ("BRCA1 mutation", "BRCA1", "gene"),
        ("KRAS G12C mutated", "KRAS G12C", "gene"),
        ("osimertinib (AZD9291) started", "AZD9291", "drug-code"),
        ("pembrolizumab (MK-3475) cycle 2", "MK-3475", "drug-code"),
        ("SKIN: BRADEN 13, Q2H TURNS", "BRADEN 13", "score"),
        ("In the ED, T 37.9 C.", "T 37.9 C", "vital"),
        ("on ra sat 96-100%, rr 16", "ra sat 96-100%", "vital"),
        ("EXTUBATED, SAT 97 ON 4L", "SAT 97", "vital"),
        ("RETURN TO SAT > 92; LP", "SAT > 92", "vital"),
        ("rr 16-18 with 02 sat 97-99% on ra", "02 sat 97-99%", "vital"),
        ("peep-5 at 1230,sat-97%,pt", "sat-97%", "vital"),
        ("Lasix 40\tmg daily", "40\tmg", "dose"),
        ("CODE CALLED AT 0455. ROUNDS AT 0800", "AT 0455", "time"),   # a cue in capitals
        ("Labs drawn At 0732, 0740", "At 0732, 0740", "time"),
        ("MICU NPN 0700-1930: neuro intact", "0700-1930", "time"),   # a shift
        ("see orders for 1900-0700.", "1900-0700", "time"),
    ],
)
def test_when_text_has_medical_syntax_then_it_is_recognised(
    genes: frozenset[str], text: str, surface: str, kind: str
) -> None:
    spans = syntax_spans(text, genes)
    assert (text.index(surface), text.index(surface) + len(surface), kind) in spans, spans


@pytest.mark.parametrize(
    "text",
    [
        "Admitted on 03/14/2023 at 0630.",
        "He is 92 years old.",
        "Lives in New Orleans, LA 70112.",
        "Call 555-123-4567 after 5 pm",
        "MRN 12345678, seen by Dr. Smith",
        "Accession PF123456 received",
        "Office in K\u00f8benhavn K 1421, Denmark",
        "Seen by Wells 2 weeks ago; BP 12/24 clinic; Tanner 3/14.",
        "Callback 2817838255\ncc: Dr. Smith",
        "Na 12345678\nmg list reviewed",
        "Vitals taken 08-APR-2018 @ 1105 by RN.",
        "Seen APR 8, 2018 @ 1105, stable.",
        "Collected 2018-04-08 1105.",
        "Collected 2018-04-08 @ 1105.",
        "Extubated 3/14 at 10 am.",
        "Account 1234-5678 opened",  # "5678" is no time of day
        "Moved from 1700 Main St to here",  # one number after "from": an address
        "Seen 3/14/2023 0700-1930.",  # a shift attached to a date is part of a date-time
        "Family meeting Sat 3/14, then Sat 12 at noon; seen sat 31.",  # Saturdays, no saturation
        "",
    ],
)
def test_when_text_has_identifiers_only_then_no_syntax_covers_them(genes: frozenset[str], text: str) -> None:
    spans = syntax_spans(text, genes)
    for ident in ("Sat 3/14", "Sat 12", "sat 31", "0630", "92", "70112", "555-123-4567", "12345678", "PF123456", "Wells", "12/24", "3/14", "1421",
                  "2817838255", "1105", "1700"):
        if ident in text:
            i = text.index(ident)
            assert not any(s <= i and e >= i + len(ident) for s, e, _ in spans), (ident, spans)


def test_when_syntax_scan_is_limited_then_offsets_stay_in_the_full_text(genes: frozenset[str]) -> None:
    text = "Seen today. Apgar 8/9 at birth. BP 120/80."
    spans = syntax_spans(text, genes, start=12, end=31)
    assert spans == [(12, 21, "score")]


def _measure(text: str, surface: str, occurrence: int = 0) -> bool:
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(surface, start + 1)
    return measurement_value(text, start, start + len(surface))


@pytest.mark.parametrize(
    ("text", "surface"),
    [
        ("Vitals: BP 91-146/48-63, HR 68-100", "91-146/48-63"),
        ("Vitals: BP 91-146/48-63, HR 68-100", "/48"),               # a fragment of the run
        ("ABG on these settings: 7.38-33-169.", "7.38-33-169"),
        ("ABG 7.38/33/169 after the change", "7.38/33/169"),
        ("Vent: AC 600x12, FiO2 40%, PEEP 5", "600x12"),
        ("VENT: AC 600X12, FIO2 40%, PEEP 5", "600X12"),
        ("CVP 24-26 overnight", "24-26"),
        ("cvp 24-26 overnight", "24-26"),
        ("SBP in the 90's most of the shift", "90's"),
        ("sbp in the 90s most of the shift", "90s"),
        ("HR 70'S-80'S, MAPS 68-80'S", "70'S-80'S"),
        ("HR 70'S-80'S, MAPS 68-80'S", "68-80'S"),
        ("weaned to CPAP 5/5 this morning", "5/5"),
        ("Switched to PSV 15/5, tolerating", "15/5"),
        ("H/H 9/27 after one unit", "9/27"),
        ("Last ABG on 50% rate 16 141/38/7.40.", "141/38/7.40"),
        ("Urine output 20-50cc/hr", "20-50cc/hr"),
        ("Sats 95-97% on 2L", "95-97"),
        ("sats 95-97 on 2L", "95-97"),
        ("HCT 30.1, PT/PTT 12.9/21.9, INR 1.1", "12.9/21.9"),
        ("Total 250 cc over the shift", "250"),                      # a unit after
        ("Started on D5 1/2 NS at 75/hr", "1/2"),                     # a fraction, not a date
        ("Crackles 2/3 up bilaterally", "2/3"),
        # common fractions in quantities: a fluid or strength after (even after "on"), a unit or amount word
        # after, a mixed number, a size, a dextrose solution before, a range of fractions
        ("He remains on 1/4 NS at 100cc/hr", "1/4"),
        ("Gauze soaked in 1/4 st betadine", "1/4"),
        ("Drinks 1/2 gallon of wine a day", "1/2"),
        ("Held pressure 1 1/2 hours to the groin", "1/2"),
        ('Skin tear 1"x1/2" on the left shin', "1/2"),
        ("Continues on IVF D5 1/2 at 75/hr", "1/2"),
        ("Crackles 1/3-1/2 up bilaterally", "1/3-1/2"),
        ("Hemodynamics: PADs 17-20, wedge 18", "17-20"),
        # a list of ventilator settings after its mode, a pair label after the value
        ("wean her to pressure support 15/5 40%; but", "15/5"),
        ("vent changed to CPAP .5% 5/5. Anticipate", "5/5"),
        ("SETTINGS-SIMV/PS, 500X10, 40%, & 5/8. ABG", "5/8"),
        ("remains vented IMV 700x10, 50% 8/5. sats >97%", "8/5"),
        ("cont. on vent 5/5 psv with rr 20s", "5/5"),
        # counts of cultures, pain scores
        ("1/4 BLOOD CULTURES WERE POSITIVE", "1/4"),
        ("gram neg rods in 2/4 bl cx from 5am", "2/4"),
        ("C/O INCISIONAL PAIN #9/10. DENIES SOB", "9/10"),
        ("STATED HE HAD 3/10 INCISIONAL PAIN", "3/10"),
        ("pain score 4/10 at rest", "4/10"),
        # a pressure-support / PEEP pair after a weaning or ventilation word (even after "on"), or before FiO2
        ("RESP: weaning trial on 5/5 this am", "5/5"),
        ("continued to wean down to 10/5, tolerating", "10/5"),
        ("FiO2 40% with flow-by 6/3, spont vols 400s", "6/3"),
        ("Pt remained on 5/5, 40% all shift", "5/5"),
        ("EXTUBATED FROM 5/5 IPS/CPAP ONTO 4L NC", "5/5"),
        ("ON MASK VENTILATION 8/5 THIS AM", "8/5"),
        # a pair before a minute or tidal volume with its value
        ("left on 10/5 with VE 9.2 and RR 18", "10/5"),
        ("resting on 8/5 and TV 450s", "8/5"),
        # a fraction right after a dosing verb: a part of a dose
        ("Glucose 62: give 1/2 Lantus tonight", "1/2"),
        ("HELD 1/2 DOSE OF LASIX FOR SBP 85", "1/2"),
    ],
)
def test_when_number_is_in_measurement_context_then_it_is_a_measurement(text: str, surface: str) -> None:
    assert _measure(text, surface), (text, surface)


@pytest.mark.parametrize(
    ("text", "surface"),
    [
        ("BP 120/80. DOB 3/4/1950.", "3/4/1950"),                     # a full date, its own cue
        ("BP 120/80, DOB 3/4/50", "3/4/50"),
        ("HR 80. MRN 1234567", "1234567"),
        ("HR 80, pager 12345", "12345"),
        ("HR 80, pgr 2-0231", "2-0231"),
        ("SBP 100, call 617-555-1234", "617-555-1234"),
        ("HR 80 seen 3/4/2019 in clinic", "3/4/2019"),
        ("K 3.9 on 3/4 in the lab", "3/4"),                           # a date cue
        ("Elevated WBC 16.0 8/22, afebrile", "8/22"),                 # date shape, not right after its label
        ("HCT 30 post 3/3 transfusion", "3/3"),
        ("PICC placed in R AC 11/17, line ok", "11/17"),              # AC is not a pair label
        ("BP 12/24 clinic visit", "12/24"),                           # a blood pressure is never 12/24
        ("Pt in her 90's with SBP 100", "90's"),                      # an age
        ("98 yo with HR 80", "98"),
        ("Temp 38.2, pain since March 21", "21"),                     # a month name
        ("Rate set under the Act of 2001", "2001"),                   # a year
        ("Seen in clinic on 6/10", "6/10"),                           # no measurement context
        ("Lives at 450 Main Street", "450"),
        ("Office in K\u00f8benhavn K 1421, Denmark", "1421"),           # no single-letter labels
        ("Jo\u017eef lives at 450 Praestevaenget", "450"),              # "ef" inside a name is no label
        ("Lives on the north side of Suarez 2906.", "2906"),           # "lives" is not "VEs"
        ("HR 80 at 10 PM", "10 PM"),                                  # letters that are no unit
        ("since 8-15 on the unit", "8-15"),                           # a dashed pair after a date cue
        ("HR 80 overnight; ref # 8336652", "8336652"),
        ("PS 10/5. Extubated 8/26 and doing well", "8/26"),       # a new sentence after the settings
        ("CPAP 5/5 40% since 8/3 and stable", "8/3"),              # a date cue in the settings list
        ("Admitted 9/10 with chest pain", "9/10"),                 # pain, but not the score's
        ("blood cx 2/4 pending", "2/4"),                           # a culture's date, not its count
        ("weaned, extubated on 5/5 and stable", "5/5"),             # weaning words more than two words before
        ("wean trial planned for 9/27", "9/27"),                   # no pressure-support pair: 27 > 25
        ("Transferred on 5/5, 40 minutes later", "5/5"),           # no FiO2 after it
        ("Extubated on 1/2 hours after the trial", "1/2"),         # a date cue before a unit word
        ("Seen 3/4 in the clinic", "3/4"),                         # "in" is no unit here
        ("Seen on 3/4, strength improving", "3/4"),                # a date cue, and no fluid right after
        ("Last dose given on 1/2 per pharmacy", "1/2"),            # a date cue between the verb and the pair

    ],
)
def test_when_number_is_an_identifier_then_it_is_no_measurement(text: str, surface: str) -> None:
    assert not _measure(text, surface), (text, surface)


def test_when_measures_file_is_loaded_then_labels_units_and_pairs_are_compiled() -> None:
    m = clinical_measures()
    assert m.version.startswith("cm-")
    assert m.label.search("cvp") and m.label.search("pads") and not m.label.search("k")
    assert m.label_for_dates.search("cpap") and not m.label_for_dates.search("ac")
    assert m.unit_after.match(" mmhg") and m.unit_after.match("cc/hr")
    assert m.strong_unit_after.match(" l") is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("BP\n", "before any section"),
        ("[labels]\nBP\n", "unknown section"),
    ],
)
def test_when_measures_file_is_malformed_then_value_error(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_measures(text)


def test_when_measures_file_is_parsed_then_flags_and_comments_are_read() -> None:
    parsed = parse_measures("# comment\n[label]\nCPAP\tpair\nHR\n\n[unit]\nmmHg\n")
    assert parsed == {"label": [("CPAP", frozenset({"pair"})), ("HR", frozenset())],
                      "unit": [("mmHg", frozenset())]}


# ------------------------------------------------------------------------------ identifier cues

@pytest.mark.parametrize("text, surface, expected", [
    ("DOB 04/13/1931 noted", "04/13/1931", "id-cue"),
    ("seen 7/22/2019 in clinic", "7/22/2019", "date"),
    ("follow up on 8/12 with labs", "8/12", "date"),
    ("since March 21 at home", "21", "date"),
    ("Smith (934) 364-2389 cell", "(934) 364-2389", "phone"),
    ("reached at 555-1234 x", "555-1234", "id-cue"),
    ("a 555-1234 entry", "555-1234", "phone"),
    ("MRN 1234 on file", "1234", "id-cue"),
    ("acct 02139876 billing", "02139876", "id-cue"),
    ("code 02139876 billing", "02139876", "long-digits"),
    ("pt is 92 yo and well", "92", "age"),
    ("lives at 12 Oak Street alone", "12 Oak Street", "address"),
    ("mail jo@example.org today", "jo@example.org", "address"),
    ("seen on the 12th again", "12th", "date"),
    # no identifier cue: measurements, clock times, decimals, ranges
    ("CPAP 5/5 overnight", "5/5", None),
    ("BP 120/80 sitting", "120/80", None),
    ("meds given at 0730 today", "0730", None),
    ("shift 7a-7p uneventful", "7a-7p", None),
    ("K 4.0 this am", "4.0", None),
    ("HR 80-100 NSR", "80-100", None),
    ("pt is 72 yo and well", "72", None),
])
def test_when_a_span_holds_numbers_then_identifier_cue_says_why_they_are_an_identifier(
        text: str, surface: str, expected: str | None) -> None:
    start = text.index(surface)
    assert identifier_cue(text, start, start + len(surface)) == expected


@pytest.mark.parametrize("text", ["C/ Feixa Llarga, s/n. 08907 L\u2019Hospitalet de Llobregat.",
                                  "Vive en el 08907 L'Hospitalet.", "Na 141 L\u2019Hospitalet"])
def test_when_a_unit_letter_is_an_elided_article_then_no_dose_covers_it(genes: frozenset[str], text: str) -> None:
    # "L" before an apostrophe and a letter starts a word ("L'Hospitalet"): no litres
    spans = syntax_spans(text, genes)
    i = text.index("L\u2019H") if "L\u2019H" in text else text.index("L'H")
    assert not any(s <= i < e for s, e, _ in spans), spans


def test_when_a_unit_stands_before_an_apostrophe_without_a_letter_then_it_is_still_a_dose(
        genes: frozenset[str]) -> None:
    text = "Gave 2 L' bolus; then 500 mL."
    kinds = {text[s:e]: k for s, e, k in syntax_spans(text, genes)}
    assert kinds.get("2 L") == "dose" and kinds.get("500 mL") == "dose"


@pytest.mark.parametrize(("text", "dose"), [("bolus 500cc's with no effect", "500cc"), ("ativan at 2mg's/hr", "2mg"),
                                             ("fentanyl at 100mcg's/hr", "100mcg"), ("Gave 2 L's of LR", "2 L"),
                                             ("GTT STARTED @ 2 U'HR", "2 U")])
def test_when_a_unit_is_written_plural_with_an_apostrophe_then_it_is_still_a_dose(
        genes: frozenset[str], text: str, dose: str) -> None:
    # only "L" before an apostrophe and a letter (not "'s") is read as an elided article
    assert [(text[s:e], k) for s, e, k in syntax_spans(text, genes)] == [(dose, "dose")]
