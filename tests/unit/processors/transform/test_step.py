"""transform: tag / surrogate / dateshift on hand-made notes (spans built by hand, no detectors)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest
from span_items import Item, spans_for

from dictionaries import vocab
from processors.pipeline import (
    BuildContext,
    Note,
    PipelineConfig,
    SharedPolicy,
    build_processor,
    make_context,
)
from processors.transform.step import (
    Transform,
    apply_replacements,
    build_output,
    shift_date_string,
    shift_days,
    surrogate_for,
)
from processors.transform.surrogates import date_year, hmac_hex
from schemas.errors import ConfigError
from schemas.models import NoteIn, Patient, PersonName, Provider, Span, Versions

SECRET = "unit-test-secret-7f3a"


def note(text: str, items: Sequence[Item], *, patient: str = "P-1", note_id: str = "n-1",
         given: str = "John", family: str = "Smith") -> Note:
    pat = Patient(id=patient, names=(PersonName(given=given, family=family),))
    inp = NoteIn(note_id=note_id, text=text, patient=pat,
                 providers=(Provider(name=PersonName(given="Alice", family="Jones")),))
    return Note(input=inp, spans=spans_for(text, items))


def ctx(secret: str | None = SECRET, *, redact_providers: bool = True) -> BuildContext:
    config = PipelineConfig(policy=SharedPolicy(redact_providers=redact_providers))
    return make_context(config, secret, vocab.cache_dir())


def run(n: Note, *, redact_providers: bool = True, **options: Any) -> Note:
    """The transform step with ``options``; ``redact_providers`` is the pipeline's shared policy."""
    (out,) = build_processor("transform", options, ctx(redact_providers=redact_providers)).process_batch([n])
    return out


TAG_CASES: list[tuple[str, str, list[Item], dict[str, Any], str]] = [
    ("name_and_date", "Pt John Smith seen 07/22/2019.", [("John Smith", "NAME", "PATIENT"), ("07/22/2019", "DATE")],
     {}, "Pt [NAME] seen [DATE 2019]."),
    ("keep_years_off", "Seen 07/22/2019.", [("07/22/2019", "DATE")], {"keep_years": False}, "Seen [DATE]."),
    ("two_digit_year", "Seen 7/22/19 by team.", [("7/22/19", "DATE")], {}, "Seen [DATE 2019] by team."),
    ("named_month_year", "Admitted 22-Jul-19.", [("22-Jul-19", "DATE")], {}, "Admitted [DATE 2019]."),
    ("yearless_date", "Seen 7/22 @ 0800.", [("7/22 @ 0800", "DATE")], {}, "Seen [DATE]."),
    ("old_birthdate_loses_year", "DOB 1/2/1920.", [("1/2/1920", "DATE", "BIRTHDATE")], {}, "DOB [DATE]."),
    ("recent_birthdate_keeps_year", "DOB 1/2/1980.", [("1/2/1980", "DATE", "BIRTHDATE")], {}, "DOB [DATE 1980]."),
    ("phone_id_email", "Call 555-123-4567, MRN 12345678, jsmith@mail.com",
     [("555-123-4567", "PHONE"), ("12345678", "ID", "MRN"), ("jsmith@mail.com", "EMAIL")], {},
     "Call [PHONE], MRN [ID], [EMAIL]"),
    ("provider_redacted_by_default", "Seen by Dr. Jones.", [("Jones", "NAME", "PROVIDER")], {}, "Seen by Dr. [NAME]."),
    ("provider_kept", "Seen by Dr. Jones for John.", [("Jones", "NAME", "PROVIDER"), ("John", "NAME", "PATIENT")],
     {"redact_providers": False}, "Seen by Dr. Jones for [NAME]."),
    ("overlaps_merged", "Pt John Smith here.", [("John Smith", "NAME"), ("Smith", "NAME")], {}, "Pt [NAME] here."),
    ("age_tagged_in_tag_mode", "A 92 yo man.", [("92 yo", "AGE")], {}, "A [AGE] man."),
    ("no_spans", "Nothing to hide here.", [], {}, "Nothing to hide here."),
    ("multi_line_span_keeps_layout", "From: Oak Clinic\n12 Elm St\nBoston, MA 02118\nThanks",
     [("Oak Clinic\n12 Elm St\nBoston, MA 02118", "LOCATION")], {},
     "From: [LOCATION]\n[LOCATION]\n[LOCATION]\nThanks"),
    ("span_at_both_ends", "Smith was here John", [("Smith", "NAME"), ("John", "NAME")], {}, "[NAME] was here [NAME]"),
]


@pytest.mark.parametrize(("text", "items", "options", "expected"), [c[1:] for c in TAG_CASES],
                         ids=[c[0] for c in TAG_CASES])
def test_when_tag_mode_then_output_is_exact(text: str, items: list[Item], options: dict[str, Any],
                                            expected: str) -> None:
    out = run(note(text, items), **options)
    assert out.output == expected
    for r in out.replacements:
        assert out.output[r.out_start:r.out_end].startswith("[" + r.span.label)
        assert text[r.span.start:r.span.end]  # original offsets untouched


def test_when_transformed_then_pseudonyms_are_hmac_of_note_and_patient() -> None:
    out = run(note("John", [("John", "NAME")], note_id="n-77", patient="P-9"))
    assert out.note_pseudonym == hmac_hex(SECRET.encode(), "note:n-77")[:20]
    assert out.patient_pseudonym == hmac_hex(SECRET.encode(), "patient:P-9")[:20]


@pytest.mark.parametrize("mode", ["surrogate", "dateshift"])
def test_when_secret_is_default_then_surrogate_and_dateshift_refuse_to_build(mode: str) -> None:
    for secret in (None, "deidstream-insecure-default-secret"):
        with pytest.raises(ConfigError, match="DEID_SECRET"):
            build_processor("transform", {"mode": mode}, ctx(secret))


def test_when_secret_is_default_then_tag_mode_still_builds() -> None:
    assert isinstance(build_processor("transform", {"mode": "tag"}, ctx(None)), Transform)


def test_when_shift_range_is_inverted_then_config_is_rejected() -> None:
    with pytest.raises(ConfigError):
        build_processor("transform", {"min_shift_days": 10, "max_shift_days": 5}, ctx())


# ------------------------------------------------------------------------------------------- dateshift

def _ord(n: int) -> str:
    return "th" if 11 <= n <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _strip_ord(s: str) -> str:
    return re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", s, flags=re.I)


def _fmt(render: str) -> Callable[[datetime], str]:
    return lambda d: d.strftime(render)


# (id, strptime format of the originals, renderer of the expected layout, date 1, date 2 = date 1 + 10 days)
DATESHIFT_CASES: list[tuple[str, str, Callable[[datetime], str], str, str]] = [
    ("mm/dd/yyyy", "%m/%d/%Y", _fmt("%m/%d/%Y"), "07/22/2019", "08/01/2019"),
    ("m/d/yyyy", "%m/%d/%Y", _fmt("%-m/%-d/%Y"), "7/2/2019", "7/12/2019"),
    ("m-d-yy", "%m-%d-%y", _fmt("%-m-%-d-%y"), "7-2-19", "7-12-19"),
    ("iso", "%Y-%m-%d", _fmt("%Y-%m-%d"), "2019-07-22", "2019-08-01"),
    ("compact", "%Y%m%d", _fmt("%Y%m%d"), "20191228", "20200107"),
    ("d-Mon-yy", "%d-%b-%y", _fmt("%-d-%b-%y"), "2-Jul-19", "12-Jul-19"),
    ("D-MON-YYYY caps", "%d-%b-%Y", lambda d: d.strftime("%-d-%b-%Y").upper(), "2-JUL-2019", "12-JUL-2019"),
    ("d Mon yyyy", "%d %b %Y", _fmt("%-d %b %Y"), "2 Jul 2019", "12 Jul 2019"),
    ("Month dth, yyyy", "%B %d, %Y", lambda d: f"{d:%B} {d.day}{_ord(d.day)}, {d:%Y}", "July 2nd, 2019",
     "July 12th, 2019"),
    ("m/d yearless", "%m/%d", _fmt("%-m/%-d"), "7/2", "7/12"),
    ("Mon d yearless", "%b %d", _fmt("%b %-d"), "Jul 2", "Jul 12"),
    ("dth of Month yearless", "%d of %B", lambda d: f"{d.day}{_ord(d.day)} of {d:%B}", "2nd of July",
     "12th of July"),
    ("date with time", "%m/%d/%Y %H:%M", _fmt("%m/%d/%Y %H:%M"), "07/22/2019 14:30", "08/01/2019 14:30"),
]


def _dateshift_pair(fmt: str, d1: str, d2: str, patient: str) -> tuple[str, str, str]:
    text = f"Admitted {d1}; discharged {d2}."
    out = run(note(text, [(d1, "DATE"), (d2, "DATE")], patient=patient), mode="dateshift")
    assert out.output is not None
    m = re.fullmatch(r"Admitted (.+); discharged (.+)\.", out.output)
    assert m is not None, out.output
    return text, m.group(1), m.group(2)


@pytest.mark.parametrize(("fmt", "render", "d1", "d2"), [c[1:] for c in DATESHIFT_CASES],
                         ids=[c[0] for c in DATESHIFT_CASES])
def test_when_dateshift_then_format_and_interval_are_kept(fmt: str, render: Callable[[datetime], str],
                                                          d1: str, d2: str) -> None:
    _, o1, o2 = _dateshift_pair(fmt, d1, d2, "P-1")
    p1, p2 = datetime.strptime(_strip_ord(o1), _strip_ord(fmt)), datetime.strptime(_strip_ord(o2), _strip_ord(fmt))
    assert (render(p1), render(p2)) == (o1, o2)  # same layout
    shift = shift_days(SECRET.encode(), "P-1", 1, 365)
    orig1 = datetime.strptime(_strip_ord(d1), _strip_ord(fmt))
    yearless = "%Y" not in fmt and "%y" not in fmt
    interval, moved = (p2 - p1).days, (p1 - orig1).days
    if yearless:  # rendered without a year: compare modulo the (non-leap) reference year
        interval, moved, shift = interval % 365, moved % 365, shift % 365
    assert interval == 10
    assert moved == shift
    assert o1 != d1


def test_when_same_patient_in_two_notes_then_same_shift_and_other_patient_differs() -> None:
    a = run(note("Seen 07/22/2019.", [("07/22/2019", "DATE")], note_id="a"), mode="dateshift")
    b = run(note("Back 07/22/2019.", [("07/22/2019", "DATE")], note_id="b"), mode="dateshift")
    c = run(note("Seen 07/22/2019.", [("07/22/2019", "DATE")], note_id="c", patient="P-2"), mode="dateshift")
    assert a.output is not None and b.output is not None and c.output is not None
    assert a.output[5:] == b.output[5:]
    assert a.output != c.output
    assert shift_days(SECRET.encode(), "P-1", 1, 365) != shift_days(SECRET.encode(), "P-2", 1, 365)


def test_when_shift_range_is_set_then_offset_is_negative_and_within_it() -> None:
    for key in ("P-1", "P-2", "P-3", "abc", "x" * 40):
        assert -30 <= shift_days(b"k", key, 10, 30) <= -10


SHIFT_CASES = [
    ("07/22/2019", -10, "07/12/2019"),
    ("7/22/19", -10, "7/12/19"),
    ("JULY 22ND, 2019", -10, "JULY 12TH, 2019"),
    ("Monday, July 22, 2019", -10, "Friday, July 12, 2019"),
    ("Sept. 3, 2019", -10, "Aug. 24, 2019"),
    ("Jan 5", -10, "Dec 26"),
    ("Mar 1", -1, "Feb 28"),  # yearless: non-leap reference year
    ("3/1/2020", -1, "2/29/2020"),
    ("07/2019", -200, "12/2018"),
    ("July 2019", -10, "July 2019"),
    ("Jul '19", -200, "Dec '18"),
    ("the 9th", -10, "the 30th"),
    ("07/22 @ 0800", -10, "07/12 @ 0800"),
    ("7/22/2019 at 2000", -10, "7/12/2019 at 2000"),
    ("7/22-7/25", -10, "7/12-7/15"),
    ("22/7/2019", -10, "12/7/2019"),
    ("fri", -1, "thu"),
    ("Wednesday", -10, "Sunday"),
    ("18-May-62", -10, "8-May-62"),
    ("May 27", -30, "April 27"),
    ("no date at all", -10, None),
]


@pytest.mark.parametrize(("s", "days", "expected"), SHIFT_CASES, ids=[c[0] for c in SHIFT_CASES])
def test_when_shift_date_string_then_layout_is_kept(s: str, days: int, expected: str | None) -> None:
    assert shift_date_string(s, days) == expected


def test_when_date_cannot_be_parsed_then_dateshift_tags_it_and_counts() -> None:
    out = run(note("Seen last Xmas and on 07/22/2019, age 93.", [("last Xmas", "DATE"), ("07/22/2019", "DATE"),
                                                            ("93", "AGE")]), mode="dateshift")
    assert out.output is not None
    assert out.output.startswith("Seen [DATE] and on ")
    assert out.output.endswith(", age 90+.")
    assert out.extra["unparsed_dates"] == 1


def test_when_a_date_has_another_languages_month_then_dateshift_moves_it_with_the_others() -> None:
    text = "Ingresa el 14 de enero de 2006; alta el 20/01/2006."
    out = run(note(text, [("14 de enero de 2006", "DATE"), ("20/01/2006", "DATE")]), mode="dateshift")
    assert out.output is not None and "unparsed_dates" not in out.extra
    m = re.fullmatch(r"Ingresa el (\d{1,2}) de (\w+) de (\d{4}); alta el (\d\d)/(\d\d)/(\d{4})\.", out.output)
    assert m is not None, out.output
    months = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
              "noviembre", "diciembre")
    first = datetime(int(m[3]), months.index(m[2]) + 1, int(m[1]))
    second = datetime(int(m[6]), int(m[5]), int(m[4]))
    assert (second - first).days == 6 and first < datetime(2006, 1, 14)


def test_when_dateshift_then_other_labels_are_tagged_and_keep_years_does_not_apply() -> None:
    out = run(note("John Smith 555-123-4567 seen 07/22/2019", [("John Smith", "NAME"), ("555-123-4567", "PHONE"),
                                                               ("07/22/2019", "DATE")]), mode="dateshift")
    assert out.output is not None
    assert out.output.startswith("[NAME] [PHONE] seen ")
    assert re.fullmatch(r"\d\d/\d\d/\d{4}", out.output.rsplit(" ", 1)[1])


def test_when_keep_years_then_two_digit_years_expand() -> None:
    assert date_year("1/2/45") == 1945
    assert date_year("7/22/19") == 2019
    assert date_year("7/22") is None


# ------------------------------------------------------------------------------------------- surrogate

SURR_TEXT = ("John Smith (MRN 12345678) seen 07/22/2019 by Dr. Alice Jones. JOHN SMITH called from "
             "(555) 123-4567; mr. smith's email john.smith@mail.com. J. Smith lives at 123 Main St, Boston, MA "
             "02118. Portal www.johnsmith.net, IP 10.1.2.3, SSN 123-45-6789, age 93. Admitted to Massachusetts "
             "General Hospital. Smith will call 555.123.4567.")
SURR_ITEMS: list[Item] = [
    ("John Smith", "NAME", "PATIENT"), ("12345678", "ID", "MRN"), ("07/22/2019", "DATE"),
    ("Alice Jones", "NAME", "PROVIDER"), ("JOHN SMITH", "NAME", "PATIENT"), ("(555) 123-4567", "PHONE"),
    ("smith", "NAME", "PATIENT"), ("john.smith@mail.com", "EMAIL"), ("J. Smith", "NAME", "PATIENT"),
    ("123 Main St", "LOCATION", "STREET"), ("Boston", "LOCATION", "CITY"), ("MA", "LOCATION", "STATE"),
    ("02118", "LOCATION", "ZIP"), ("www.johnsmith.net", "URL"), ("10.1.2.3", "IP"), ("123-45-6789", "ID", "SSN"),
    ("93", "AGE"), ("Massachusetts General Hospital", "ORGANIZATION", "HOSPITAL"), ("Smith", "NAME", "PATIENT"),
    ("555.123.4567", "PHONE"),
]


@pytest.fixture(scope="module")
def surrogate_note() -> Note:
    return run(note(SURR_TEXT, SURR_ITEMS), mode="surrogate")


def _rep(n: Note, original: str, nth: int = 0) -> str:
    assert n.output is not None
    reps = [r for r in n.replacements if n.text[r.span.start:r.span.end] == original]
    return n.output[reps[nth].out_start:reps[nth].out_end]


def test_when_surrogate_then_no_original_identifier_survives(surrogate_note: Note) -> None:
    out = surrogate_note.output
    assert out is not None
    for ident in ("John", "Smith", "JOHN", "smith", "12345678", "07/22/2019", "Jones", "123-4567", "mail.com",
                  "Main", "Boston", "02118", "johnsmith", "10.1.2.3", "123-45-6789", "93", "Massachusetts General"):
        assert ident not in out, ident
    assert len(surrogate_note.replacements) == len(SURR_ITEMS)


def test_when_surrogate_then_name_words_map_consistently_with_case_and_initials(surrogate_note: Note) -> None:
    first, last = _rep(surrogate_note, "John Smith").split(" ")
    assert first.istitle() and last[0].isupper()
    assert _rep(surrogate_note, "JOHN SMITH") == f"{first} {last}".upper()
    assert _rep(surrogate_note, "smith") == last.lower()
    assert _rep(surrogate_note, "Smith") == last
    assert _rep(surrogate_note, "J. Smith") == f"{first[0]}. {last}"


SHAPE_CASES = [("(555) 123-4567", "PHONE"), ("555.123.4567", "PHONE"), ("12345678", "ID"), ("123-45-6789", "ID"),
               ("02118", "LOCATION")]


@pytest.mark.parametrize(("original", "label"), SHAPE_CASES)
def test_when_surrogate_then_numbers_keep_their_shape(surrogate_note: Note, original: str, label: str) -> None:
    new = _rep(surrogate_note, original)
    assert re.sub(r"\d", "9", new) == re.sub(r"\d", "9", original)
    assert new != original


def test_when_same_number_is_written_two_ways_then_surrogate_digits_agree(surrogate_note: Note) -> None:
    a, b = _rep(surrogate_note, "(555) 123-4567"), _rep(surrogate_note, "555.123.4567")
    assert re.sub(r"\D", "", a) == re.sub(r"\D", "", b)


def test_when_surrogate_then_other_labels_are_realistic_and_safe(surrogate_note: Note) -> None:
    assert re.fullmatch(r"[a-z]+\.[a-z]+@example\.org", _rep(surrogate_note, "john.smith@mail.com"))
    assert _rep(surrogate_note, "www.johnsmith.net").startswith("https://example.org/")
    assert _rep(surrogate_note, "10.1.2.3").startswith("192.0.2.")
    assert _rep(surrogate_note, "93") == "90+"
    assert re.fullmatch(r"\d{3} [A-Z][a-z]+ St", _rep(surrogate_note, "123 Main St"))
    assert re.fullmatch(r"[A-Z]{2}", _rep(surrogate_note, "MA"))
    assert _rep(surrogate_note, "Boston")[0].isupper()
    assert _rep(surrogate_note, "Massachusetts General Hospital")
    shift = shift_days(SECRET.encode(), "P-1", 1, 365)
    assert _rep(surrogate_note, "07/22/2019") == shift_date_string("07/22/2019", shift)


def test_when_same_patient_in_another_note_then_surrogates_are_the_same() -> None:
    text = "Smith, John called; MRN 12345678."
    items: list[Item] = [("Smith", "NAME"), ("John", "NAME"), ("12345678", "ID", "MRN")]
    a = run(note(text, items, note_id="a"), mode="surrogate")
    b = run(note(text, items, note_id="b"), mode="surrogate")
    c = run(note(text, items, note_id="c", patient="P-2"), mode="surrogate")
    assert a.output == b.output
    assert a.output != c.output
    d = build_processor("transform", {"mode": "surrogate"}, ctx("another-secret")).process_batch(
        [note(text, items, note_id="a")])[0]
    assert d.output != a.output


def test_when_surrogate_for_is_called_twice_then_it_is_deterministic() -> None:
    span = Span(start=0, end=5, label="NAME", source="ner")
    a = surrogate_for(b"s", "P-1", span, "Smith")
    assert a == surrogate_for(b"s", "P-1", span, "Smith") == surrogate_for(b"s", "P-1", span, "SMITH").title()
    assert a != "Smith"


def test_when_providers_are_kept_then_surrogate_leaves_them_verbatim() -> None:
    out = run(note("Dr. Alice Jones saw John.", [("Alice Jones", "NAME", "PROVIDER"), ("John", "NAME", "PATIENT")]),
              mode="surrogate", redact_providers=False)
    assert out.output is not None
    assert out.output.startswith("Dr. Alice Jones saw ") and "John" not in out.output
    assert [r.span.subtype for r in out.replacements] == ["PATIENT"]


# ------------------------------------------------------------------------------- apply + build_output

def test_when_apply_replacements_then_regions_point_into_output() -> None:
    text = "ab John cd Smith"
    spans = spans_for(text, [("John", "NAME"), ("Smith", "NAME")])
    out, reps = apply_replacements(text, spans, lambda s, o: "<" + o.lower() + ">" if o != "Smith" else None)
    assert out == "ab <john> cd Smith"
    assert [(r.out_start, r.out_end) for r in reps] == [(3, 9)]


def test_when_build_output_then_model_has_output_offsets_and_no_original_text() -> None:
    out = run(note("Pt John Smith, MRN 12345678.", [("John Smith", "NAME", "PATIENT"), ("12345678", "ID", "MRN")]))
    model = build_output(out, mode="tag", versions=Versions(pipeline="0.1.0", config_hash="abc"))
    assert model.text == "Pt [NAME], MRN [ID]."
    assert [model.text[s.start:s.end] for s in model.spans] == ["[NAME]", "[ID]"]
    assert model.patient_pseudonym == out.patient_pseudonym and model.mode == "tag"
    dumped = model.model_dump_json()
    for ident in ("John", "Smith", "12345678", "P-1", "n-1"):
        assert ident not in dumped


def test_when_note_was_not_transformed_then_build_output_raises() -> None:
    from schemas.errors import ProcessingError

    with pytest.raises(ProcessingError):
        build_output(note("x", []), mode="tag", versions=None)


def test_when_a_merged_span_holds_lines_of_other_shapes_then_each_line_gets_its_own_surrogate() -> None:
    block = "Oak Clinic\n15 Park Ct\nLe Mars, Iowa 51031\nTel (930)284-6778\nhttps://www.oakclinic.com/"
    text = f"{block}\n\nDear Dr. X,"
    out = run(note(text, [(block, "LOCATION", "CITY")]), mode="surrogate")
    assert out.output is not None
    lines = out.output.split("\n")
    assert len(lines) == 7 and lines[5:] == ["", "Dear Dr. X,"]
    assert re.fullmatch(r"\d{2} [A-Z][a-z]+ Ct", lines[1])
    assert re.fullmatch(r"[A-Z][\w .'-]+, [A-Z][a-z ]+ \d{5}", lines[2])
    assert re.sub(r"\d", "9", lines[3]) != lines[3] and "930" not in lines[3]
    assert lines[4].startswith("https://example.org/")
    for ident in ("Oak", "Park", "Le Mars", "51031", "284-6778", "oakclinic"):
        assert ident not in out.output


# --- the patient's stated sex (issue 27) ---------------------------------------------------------------------------

@pytest.mark.parametrize(("patient_sex", "text", "expected"), [
    (None, "Pt is a 67-year-old man with CHF.", "M"),
    (None, "54 yo F presents with dyspnea.", "F"),
    (None, "A 34 y/o white female, seen today.", "F"),
    (None, "Sex: M\nHPI: chest pain.", "M"),
    (None, "67M with chest pain", "M"),
    (None, "Her husband, a 70-year-old man, is with the 66-year-old woman.", None),  # two sexes: none
    (None, "Patient seen today.", None),
    ("F", "Pt is a 67-year-old man.", "F"),  # the message wins over the text
    ("female", "Seen today.", "F"),
    ("U", "Pt is a 67-year-old man.", None),  # stated as unknown: no sex is guessed
], ids=["year_old_man", "yo_f", "y_o_white_female", "sex_field", "67M", "two_sexes", "none", "pid8_wins",
        "json_female", "pid8_unknown"])
def test_when_the_message_or_note_states_the_sex_then_stated_sex_reads_it(
    patient_sex: str | None, text: str, expected: str | None
) -> None:
    from processors.transform.step import stated_sex
    from schemas.models import Patient

    note = NoteIn(note_id="n", text=text, patient=Patient(id="p", sex=patient_sex) if patient_sex else None)
    assert stated_sex(note, text) == expected
