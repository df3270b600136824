"""regex step, phone / fax / pager numbers, and number ranges that are not phones."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from processors.regex.step import RegexDetector
from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

P = Label.PHONE

POSITIVE: list[tuple[str, list[Expected]]] = [
    # phone, fax, pager
    ("Call (617) 555-1234 with results.", [("(617) 555-1234", P, None)]),
    ("Phone: 617-555-1234", [("617-555-1234", P, None)]),
    ("cell 617.555.1234", [("617.555.1234", P, None)]),
    ("Reach daughter at +1 617 555 1234.", [("+1 617 555 1234", P, None)]),
    ("Office 555-555-1234 x1234.", [("555-555-1234 x1234", P, None)]),
    ("Toll free 1-800-555-1234.", [("1-800-555-1234", P, None)]),
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
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_phone_number_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


#: Value ranges and reference intervals shaped like phone numbers.
MUST_NOT_TAG: list[str] = [
    "100-200 mg", "prednisone taper 40-30-20-10 mg", "glucose 120-180", "K 3.5-5.0", "sat 88-92%",
    "HR 100-120s", "EF 55-60%", "CK 350 (200-1000)", "SCN4A (OMIM +603967)",
]


@pytest.mark.parametrize("text", ["His number is 123-45-6789 on file.", "Social security number: 078-05-1120",
                                  "Contact 123-45-6789 or the office."])
def test_when_an_ssn_shape_follows_a_phone_word_then_it_is_an_ssn_not_a_phone(
    detector: RegexDetector, text: str
) -> None:
    spans = detector.detect(text)
    assert [str(s.label) for s in spans] == ["ID"] and spans[0].subtype == "SSN"  # even a sample SSN (score 0.5)


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
