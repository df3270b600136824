"""regex step, dates: every common clinical format with exact offsets; fractions, scores, ranges and times that
are not dates."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from processors.evaluation.gold import load_gold
from processors.regex.step import RegexDetector
from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

D = Label.DATE

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
    # days of the week date the events (i2b2 convention; recall first); short forms that are words need a cue
    ("Pt c/o CP since tues, seen MONDAY", [("tues", D, None), ("MONDAY", D, None)]),
    ("Family visited on Sunday.", [("Sunday", D, None)]),
    ("f/u on sat with PCP", [("sat", D, None)]),
    # another language's month with a day before it or a year after it (Spanish, German, French, Italian,
    # Portuguese, Dutch)
    ("El nadir de PSA se alcanzó en enero de 2006.", [("enero de 2006", D, None)]),
    ("Ingresó el 14 de enero de 2006 por disuria.", [("14 de enero de 2006", D, None)]),
    ("Consulta 14/enero/2006 y en agosto del 2005.", [("14/enero/2006", D, None), ("agosto del 2005", D, None)]),
    ("Aufnahme am 3. März 2019, Entlassung im Januar 2020.", [("3. März 2019", D, None), ("Januar 2020", D, None)]),
    ("Vu le 12 janvier 2006, revu le 1er février.", [("12 janvier 2006", D, None), ("1er février", D, None)]),
    ("Ricoverato il 5 maggio 2010.", [("5 maggio 2010", D, None)]),
    ("Internado em 2 de março de 2015.", [("2 de março de 2015", D, None)]),
    ("Opgenomen op 7 maart 2018.", [("7 maart 2018", D, None)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_date_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


@pytest.mark.parametrize(("text", "expected"), [p for p in POSITIVE if p[0].upper() != p[0]],
                         ids=[p[0].upper() for p in POSITIVE if p[0].upper() != p[0]])
def test_when_all_caps_then_same_dates(
    assert_tagged_upper: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged_upper(text, expected)


@pytest.mark.parametrize(("text", "substring"), [
    ("Tonsils enlarged, 2/4.", "2/4"),    # fraction-shaped near an exam word: needs another detector's vote
    ("Results 20190722 attached", "20190722"),  # compact date without a date word: an ID shape wins
])
def test_when_ambiguous_shape_then_low_score_candidate(
    detector: RegexDetector, threshold: float, text: str, substring: str
) -> None:
    start = text.index(substring)
    dates = [s for s in detector.detect(text) if s.label == Label.DATE and s.start == start]
    assert dates and all(s.score < threshold for s in dates)


#: German day-month dates without a year ("am 12.04."): German writes a decimal with a comma, so in German text
#: (two German function words near) the periods make a date; a German date preposition right before it is a sure one
GERMAN_DAY_MONTH: list[tuple[str, list[str]]] = [
    ("Frau M. wurde am 12.04. bei uns aufgenommen und ist stabil.", ["12.04."]),
    ("Stationär vom 3.4. bis 9.4., danach Reha und Kontrolle bei uns.", ["3.4.", "9.4."]),
    ("Am 24.12. erfolgte die Verlegung auf die Intensivstation mit Beatmung.", ["24.12."]),
    ("Die Drainage wurde bis zum 2.11. belassen und dann entfernt.", ["2.11."]),
    ("Stationär vom 12.04.-15.04. und danach Reha bei uns.", ["12.04.", "15.04."]),  # a range
    ("Am 12.04. 2021 wurde sie bei uns aufgenommen.", ["12.04. 2021"]),  # the year after a blank joins it
]


@pytest.mark.parametrize(("text", "dates"), GERMAN_DAY_MONTH, ids=[t for t, _ in GERMAN_DAY_MONTH])
def test_when_german_day_month_after_a_date_preposition_then_tagged(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, dates: list[str]
) -> None:
    assert_tagged(text, [(d, D, None) for d in dates])


def test_when_german_day_month_without_a_preposition_then_tagged_less_sure(
    detector: RegexDetector, threshold: float
) -> None:
    def dates(text: str) -> list[tuple[str, float]]:
        return [(text[s.start:s.end], s.score) for s in detector.detect(text) if s.label == Label.DATE]

    bare = dates("Befund 12.04.: unauffällig, Kontrolle mit Labor und Sono.")
    after_am = dates("Befund am 12.04.: unauffällig, Kontrolle mit Labor und Sono.")
    assert [d for d, _ in bare] == [d for d, _ in after_am] == ["12.04."]
    assert threshold <= bare[0][1] < after_am[0][1]


PROBES = Path(__file__).resolve().parents[3] / "data/probes"


@pytest.mark.parametrize("name", ["german_letters.jsonl", "german_letters_fresh.jsonl"])
def test_when_the_german_probes_hold_a_day_month_then_the_regex_step_finds_each(
    detector: RegexDetector, threshold: float, name: str
) -> None:
    # the probes (sentences written for the README's German table) load as gold in our labels; every gold date of
    # the day-month shape is a regex DATE at or above the threshold, with its exact offsets
    gold = load_gold(PROBES / name)
    day_months = [(g, s) for g in gold for s in g.spans
                  if s.label == Label.DATE and re.fullmatch(r"\d{1,2}\.\d{1,2}\.", g.text[s.start:s.end])]
    assert len(day_months) >= 4
    for g, s in day_months:
        found = {(d.start, d.end) for d in detector.detect(g.text) if d.label == Label.DATE and d.score >= threshold}
        assert (s.start, s.end) in found, g.text[s.start:s.end]


@pytest.mark.parametrize("text", [
    "Hgb this am 12.4. K 4.0 and the pt is stable.",  # English: a lab value after "this am"
    "Am 31.02. wurde nicht und kein Befund erhoben.",  # no 31st of February
    "Die Version 1.2.3 ist nicht aktuell und wird ersetzt.",  # three numbers: no day-month
])
def test_when_no_german_day_month_then_no_date(detector: RegexDetector, text: str) -> None:
    assert not [s for s in detector.detect(text) if s.label == Label.DATE]


#: Fractions, scores, ranges, times, bare years and month or weekday words that are not dates.
MUST_NOT_TAG: list[str] = [
    "BP 120/80", "BP: 90/60 mmHg", "1-2 tabs q4-6h", "meds at 0630", "Apgar 8/9", "Apgars 8/9",
    "2/3 of patients", "10/10 pain", "pain 8/10", "Grade 3/6 murmur", "3/6 systolic murmur", "strength 5/5",
    "5/5 strength throughout", "reflexes 2/4", "Percocet 5/325 mg", "at 14:30", "given at 0800 and 2000",
    "in 2019", "since 2015", "1/2 NS at 100 mL/hr", "D5 1/2 NS", "take 1-2 tablets every 4-6 hours",
    "for 3-4 days", "2-3 times a day", "20/20 vision", "VA 20/40 OU", "24/7 supervision",
    "May be taken with food", "Dec in UOP", "MAR reviewed", "per MAR 2 doses given",
    "pain improved from 8/10 to 2/10", "Grade 2/6 holosystolic", "sun exposure", "Sat up in chair",
    "wed to her partner", "in the spring", "the 3rd time", "the 5th metatarsal", "on the 2nd day",
    "3/4 inch laceration", "MMSE 24/30", "MoCA 26/30", "Glasgow 6/15", "RUE 4/5, LUE 5/5", "Tonsils 2/4",
    "VAS 7/10", "2/16 lymph nodes positive", "breathing over the vent by 3-5, ABG ok",
    "line changed to a cordis. C/O 4-8, numbers the same", "HR from 6-9 overnight",
    "SBP 80'S/30-40'S, bolused", "pressures 90's-2/30's overnight",  # no month has a 30th of February
    # another language's month name alone is a word or a name ("Mars", "Julio", "Mayo Clinic", "mai"), and no day
    # is 32 or more
    "Mars is red", "Julio came today", "seen at Mayo Clinic", "sent by e-mail", "mai", "45 mayo",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
