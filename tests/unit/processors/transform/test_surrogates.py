"""processors.transform.surrogates, the pure functions behind the transform step: surrogates are a function of
(secret, patient key, original) only, so one patient's identifiers map the same in every call, note and
process; another patient or another secret maps them elsewhere; a patient's dates move by one shift, keeping
the intervals between them and each date's layout."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
from datetime import datetime

import pytest
from paths import REPO

from processors.transform.surrogates import (
    shift_date_string,
    shift_days,
    surrogate_age,
    surrogate_for,
    surrogate_ip,
    surrogate_name,
    surrogate_shape,
)
from schemas.models import Span

SECRET = b"unit-test-secret-7f3a"
PATIENTS = ("P-1", "P-2", "P-3", "P-4", "P-5")

# (id, label, subtype, original)
IDENTIFIERS: list[tuple[str, str, str | None, str]] = [
    ("full_name", "NAME", "PATIENT", "John Smith"),
    ("caps_name_with_title", "NAME", "PROVIDER", "Dr. ALICE JONES"),
    ("phone", "PHONE", None, "(555) 123-4567"),
    ("mrn", "ID", "MRN", "MRN-0098765"),
    ("ssn", "ID", "SSN", "123-45-6789"),
    ("email", "EMAIL", None, "john.smith@mail.com"),
    ("url", "URL", None, "www.johnsmith.net"),
    ("ipv4", "IP", None, "10.1.2.3"),
    ("street", "LOCATION", "STREET", "123 Main St"),
    ("city", "LOCATION", "CITY", "Springfield"),
    ("zip", "LOCATION", "ZIP", "62704"),
    ("address_without_subtype", "LOCATION", None, "12 Oak Street, Boston, MA 02118"),
    ("hospital", "ORGANIZATION", "HOSPITAL", "Riverside Heights Hospital"),
    ("date", "DATE", None, "07/22/2019"),
]
#: Identifiers with enough possible surrogates that two patients must get different ones.
HIGH_ENTROPY = {"full_name", "phone", "mrn", "ssn", "email", "url", "date"}


def surrogate(label: str, subtype: str | None, original: str, patient: str = "P-1", secret: bytes = SECRET) -> str:
    span = Span(start=0, end=len(original), label=label, subtype=subtype, source="test")  # type: ignore[arg-type]
    return surrogate_for(secret, patient, span, original)


def table() -> dict[str, str]:
    """Every identifier's surrogate for P-1 (also computed in a fresh process below)."""
    return {case: surrogate(label, sub, orig) for case, label, sub, orig in IDENTIFIERS}


# --- determinism: same secret + same patient -> same surrogate; another patient or secret -> another ------


@pytest.mark.parametrize(("label", "subtype", "original"), [c[1:] for c in IDENTIFIERS], ids=[c[0] for c in IDENTIFIERS])
def test_when_the_same_patient_and_secret_come_again_then_the_surrogate_is_the_same(
    label: str, subtype: str | None, original: str,
) -> None:
    first = surrogate(label, subtype, original)
    assert first == surrogate(label, subtype, original)
    assert first != original


@pytest.mark.parametrize(("case", "label", "subtype", "original"), IDENTIFIERS, ids=[c[0] for c in IDENTIFIERS])
def test_when_the_patient_or_secret_differs_then_the_surrogate_differs(
    case: str, label: str, subtype: str | None, original: str,
) -> None:
    by_patient = [surrogate(label, subtype, original, patient=p) for p in PATIENTS]
    assert len(set(by_patient)) > 1  # small pools (IP block, street names) may repeat, never all alike
    if case in HIGH_ENTROPY:
        assert by_patient[0] != by_patient[1]
        assert surrogate(label, subtype, original, secret=b"another-secret") != by_patient[0]


def test_when_computed_in_a_fresh_process_then_every_surrogate_is_the_same() -> None:
    # No per-process state (caches, str hash randomisation) may change a surrogate: workers, restarts
    # and replays must agree.
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(REPO / 'tests' / 'support')!r})\n"
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('surrogates_test', {__file__!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "print(json.dumps(mod.table()))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == table()


def test_when_a_name_word_appears_alone_or_in_a_full_name_then_it_maps_the_same() -> None:
    full = surrogate_name(SECRET, "P-1", "John Smith")
    given, family = full.split()
    assert surrogate_name(SECRET, "P-1", "Smith") == family
    assert surrogate_name(SECRET, "P-1", "SMITH") == family.upper()
    assert surrogate_name(SECRET, "P-1", "Dr. Smith, MD") == f"Dr. {family}, MD"
    assert surrogate_name(SECRET, "P-1", "J. Smith", known_names=("John", "Smith")) == f"{given[0]}. {family}"


def test_when_a_name_span_holds_a_possessive_then_the_s_is_kept() -> None:
    family = surrogate_name(SECRET, "P-1", "Smith")
    assert surrogate_name(SECRET, "P-1", "Mr. Smith's") == f"Mr. {family}'s"
    assert surrogate_name(SECRET, "P-1", "SMITH\u2019S") == f"{family.upper()}\u2019S"
    # a real initial after an apostrophe-free space is still replaced
    assert surrogate_name(SECRET, "P-1", "S Smith").split()[1] == family


def test_when_names_must_be_avoided_then_the_surrogate_is_none_of_them() -> None:
    avoid = frozenset({"john", "smith"})
    for patient in PATIENTS:
        words = {w.casefold() for w in surrogate_name(SECRET, patient, "John Smith", avoid=avoid).split()}
        assert not words & avoid


# --- date shift: one negative shift per patient; intervals and layout kept --------------------------------

# (id, strptime format, layout of the output, first date, a later date)
DATE_CASES: list[tuple[str, str, str, str, str]] = [
    ("mm/dd/yyyy", "%m/%d/%Y", r"\d\d/\d\d/\d{4}", "07/22/2019", "08/01/2019"),
    ("m/d/yy", "%m/%d/%y", r"\d{1,2}/\d{1,2}/\d\d", "7/22/19", "9/3/19"),
    ("iso_across_a_new_year", "%Y-%m-%d", r"\d{4}-\d\d-\d\d", "2019-12-28", "2020-01-07"),
    # "28" does not tell whether days are zero-padded, "01" does
    ("dd-Mon-yyyy_across_feb_29", "%d-%b-%Y", r"\d{1,2}-[A-Z][a-z]{2}-\d{4}", "28-Feb-2020", "01-Mar-2020"),
    ("zero_padded_d-Mon-yyyy", "%d-%b-%Y", r"\d\d-[A-Z][a-z]{2}-\d{4}", "02-Feb-2020", "01-Mar-2020"),
    ("Month d, yyyy", "%B %d, %Y", r"[A-Z][a-z]+ \d{1,2}, \d{4}", "March 3, 2021", "April 14, 2021"),
    ("compact", "%Y%m%d", r"\d{8}", "20210310", "20221115"),
]


@pytest.mark.parametrize(("fmt", "layout", "d1", "d2"), [c[1:] for c in DATE_CASES], ids=[c[0] for c in DATE_CASES])
def test_when_a_patients_dates_are_shifted_in_separate_calls_then_intervals_and_layout_are_kept(
    fmt: str, layout: str, d1: str, d2: str,
) -> None:
    o1, o2 = surrogate("DATE", None, d1), surrogate("DATE", None, d2)  # two calls, as in two notes
    assert re.fullmatch(layout, o1) and re.fullmatch(layout, o2), (o1, o2)
    p1, p2 = datetime.strptime(o1, fmt), datetime.strptime(o2, fmt)
    orig1, orig2 = datetime.strptime(d1, fmt), datetime.strptime(d2, fmt)
    assert (p2 - p1) == (orig2 - orig1)
    assert (p1 - orig1).days == shift_days(SECRET, "P-1", 1, 365) < 0


def test_when_a_shift_is_given_then_it_is_used() -> None:
    span = Span(start=0, end=10, label="DATE", source="test")  # type: ignore[arg-type]
    assert surrogate_for(SECRET, "P-1", span, "07/22/2019", shift=-10) == "07/12/2019"
    assert shift_date_string("Monday, July 22, 2019", -10) == "Friday, July 12, 2019"


#: Dates written with another language's month names, shifted by -40 days: the language, its connectors ("de", "del",
#: "3."), its case and accents (or their absence) are kept; a shared name is read by the date around it ("Mai":
#: German capitalised, French in lower case); French writes only the first day "1er".
FOREIGN_DATES: list[tuple[str, str]] = [
    ("14 de enero de 2006", "5 de diciembre de 2005"),
    ("3 de marzo del 2019", "22 de enero del 2019"),
    ("enero de 2006", "diciembre de 2005"),  # a month and a year: from the 15th
    ("14 de enero", "5 de diciembre"),
    ("12 MARZO 2019", "31 ENERO 2019"),
    ("14 de janeiro de 2006", "5 de dezembro de 2005"),
    ("3. März 2019", "22. Januar 2019"),
    ("3 Mai 2019", "24 März 2019"),
    ("3. Maerz 2019", "22. Januar 2019"),
    ("12 janvier 2006", "3 décembre 2005"),
    ("5 fevrier 2006", "27 decembre 2005"),
    ("1er mai 2019", "22 mars 2019"),
    ("12 gennaio 2006", "3 dicembre 2005"),
    ("3 maart 2019", "22 januari 2019"),
]


@pytest.mark.parametrize(("original", "expected"), FOREIGN_DATES, ids=[o for o, _ in FOREIGN_DATES])
def test_when_a_date_has_another_languages_month_then_it_is_shifted_in_that_language(
        original: str, expected: str) -> None:
    assert shift_date_string(original, -40) == expected


def test_when_a_french_first_of_the_month_moves_then_only_the_first_is_written_1er() -> None:
    assert shift_date_string("le 1er mai 2019", 1) == "le 2 mai 2019"
    assert shift_date_string("le 2er mai 2019", -1) == "le 1er mai 2019"  # a typo's "er" stays an ordinal
    assert shift_date_string("le 2 mai 2019", -1) == "le 1 mai 2019"  # no ordinal is added


def test_when_shift_days_is_asked_then_it_is_per_patient_negative_and_in_range() -> None:
    shifts = {p: shift_days(SECRET, p, 10, 30) for p in PATIENTS}
    assert all(-30 <= d <= -10 for d in shifts.values())
    assert shifts == {p: shift_days(SECRET, p, 10, 30) for p in PATIENTS}
    assert len(set(shifts.values())) > 1
    assert shift_days(SECRET, "P-1", 1, 365) != shift_days(SECRET, "P-2", 1, 365)
    assert shift_days(SECRET, "P-1", 7, 7) == -7


@pytest.mark.parametrize(("lo", "hi"), [(-1, 10), (10, 5)], ids=["negative_low", "inverted"])
def test_when_the_shift_range_is_invalid_then_value_error(lo: int, hi: int) -> None:
    with pytest.raises(ValueError):
        shift_days(SECRET, "P-1", lo, hi)


# --- shapes, ages, addresses ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "original"),
    [("PHONE", "(555) 123-4567"), ("PHONE", "+1 617 555 0143"), ("ID", "MRN-0098765"), ("ID", "ab12-CD34"),
     ("ID", "123-45-6789")],
)
def test_when_a_number_is_replaced_then_its_shape_is_kept(label: str, original: str) -> None:
    new = surrogate_shape(SECRET, "P-1", label, original)
    assert new != original and len(new) == len(original)
    for a, b in zip(original, new, strict=True):
        assert (a.isdigit(), a.isupper(), a.islower()) == (b.isdigit(), b.isupper(), b.islower())
        if not a.isalnum():
            assert a == b


def test_when_a_phone_is_written_two_ways_then_the_surrogate_digits_agree_and_are_nanp_valid() -> None:
    a = surrogate_shape(SECRET, "P-1", "PHONE", "(555) 123-4567")
    b = surrogate_shape(SECRET, "P-1", "PHONE", "555.123.4567")
    digits = re.sub(r"\D", "", a)
    assert digits == re.sub(r"\D", "", b)
    assert digits[0] in "23456789" and digits[3] in "23456789"
    assert re.sub(r"\D", "", surrogate_shape(SECRET, "P-1", "PHONE", "1-555-123-4567"))[0] == "1"


@pytest.mark.parametrize(
    ("original", "expected"),
    [("92 yo", "90+ yo"), ("age 90", "age 90+"), ("89", "89"), ("45-year-old", "45-year-old"), ("elderly", None)],
)
def test_when_an_age_is_replaced_then_only_ages_over_89_aggregate(original: str, expected: str | None) -> None:
    assert surrogate_age(original) == expected


@pytest.mark.parametrize(("original", "network"), [("10.1.2.3", "192.0.2.0/24"), ("fe80::1", "2001:db8::/32")])
def test_when_an_ip_is_replaced_then_it_is_a_documentation_address(original: str, network: str) -> None:
    assert ipaddress.ip_address(surrogate_ip(SECRET, "P-1", original)) in ipaddress.ip_network(network)


def test_when_an_address_has_no_subtype_then_each_part_keeps_its_kind() -> None:
    new = surrogate("LOCATION", None, "12 Oak Street, Boston, MA 02118")
    m = re.fullmatch(r"(\d+) (\w+) Street, ([A-Za-z .'-]+), ([A-Z]{2}) (\d{5})", new)
    assert m is not None, new
    assert m.group(2) != "Oak" and m.group(3) != "Boston" and m.group(4) != "MA" and m.group(5) != "02118"


# --- a surrogate keeps the person's sex (issue 27) ----------------------------------------------------------------

def _first_sex(name: str) -> str | None:
    from dictionaries import vocab

    return vocab.first_name_sex(name.split()[0])


@pytest.mark.parametrize("original", ["John Smith", "Robert", "Mary Jones", "Linda", "JAMES", "Susan Kim"])
def test_when_a_given_name_belongs_to_one_sex_then_its_surrogate_does_too(original: str) -> None:
    for patient in PATIENTS:
        new = surrogate_name(SECRET, patient, original)
        assert _first_sex(new) == _first_sex(original) is not None, (original, new)


@pytest.mark.parametrize(("sex", "original"), [("M", "Jordan Smith"), ("F", "Jordan Smith"), ("F", "Alex Kim"),
                                               ("M", "Mary Jones")])
def test_when_the_patients_sex_is_stated_then_the_patients_given_name_takes_it(sex: str, original: str) -> None:
    words = frozenset(w.casefold() for w in original.split())
    for patient in PATIENTS:
        new = surrogate_name(SECRET, patient, original, patient_words=words, sex=sex)
        assert _first_sex(new) == sex, (original, new)
        # another person's name in the same note keeps its own sex
        other = surrogate_name(SECRET, patient, "Robert Brown", patient_words=words, sex=sex)
        assert _first_sex(other) == "M"


@pytest.mark.parametrize(("original", "kept", "gone"), [
    # the name's letters of any script are one word, replaced whole; the street type, particles and door stay
    ("Rákóczi út 13", ("út",), ("Rákóczi", "R", "czi", "13")),
    ("Calle Dr. Joaquín Aznar Molina 2, 3F", ("Calle", "Dr.", "F"), ("Joaquín", "Aznar", "Molina", "Joaqu")),
    ("ul. Jesionowa 127", ("ul.",), ("Jesionowa", "127")),
    ("Via delle Coste 41", ("Via", "delle"), ("Coste", "41")),
    ("USNS Saibara", ("USNS",), ("Saibara",)),
    # a Spanish address's floor and door words and the door's letter stay; a letter that names the street does not
    ("C ARBOLEDA, 1. Bajo A", ("C ", "Bajo A"), ("ARBOLEDA", "1")),
    ("C/ Pino 4, 2, B", ("C/", ", B"), ("Pino",)),  # (a new number may equal an old one)
    ("4 A Street", ("Street",), ("A", "4")),
])
def test_when_a_street_of_another_language_or_a_military_one_then_its_name_and_numbers_change(
        original: str, kept: tuple[str, ...], gone: tuple[str, ...]) -> None:
    new = surrogate("LOCATION", "STREET", original)
    words = re.findall(r"[^\W\d_]+\.?|\d+", new)
    assert all(k in new for k in kept), new
    assert not any(g in words or g.rstrip(".") in words for g in gone), new


@pytest.mark.parametrize("original", ["14. Okt. 2019", "14 janv. 2019", "9th of Okt.", "the 9th and 10th",
                                      "2006 at 14:30", "July 22 and Okt. 3"])
def test_when_only_a_bare_year_or_day_is_read_beside_more_date_then_nothing_is_shifted(original: str) -> None:
    # a shift of the year alone would leave "14. Okt." in the clear: the transform writes [DATE] instead
    assert shift_date_string(original, -200) is None


@pytest.mark.parametrize(("original", "expected"), [("in 2006", "in 2005"), ("Christmas 2019", "Christmas 2018"),
                                                    ("the 9th", "the 26th"), ("since 2019", "since 2018")])
def test_when_a_bare_year_or_day_stands_alone_then_it_still_moves(original: str, expected: str) -> None:
    assert shift_date_string(original, -200) == expected
