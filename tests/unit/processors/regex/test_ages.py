"""regex step, ages over 89: the number only, and vitals that are not ages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

A = Label.AGE

POSITIVE: list[tuple[str, list[Expected]]] = [
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
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_age_over_89_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


@pytest.mark.parametrize(("text", "expected"), [p for p in POSITIVE if p[0].upper() != p[0]],
                         ids=[p[0].upper() for p in POSITIVE if p[0].upper() != p[0]])
def test_when_all_caps_then_same_ages(
    assert_tagged_upper: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged_upper(text, expected)


#: Temperatures, weights and other vitals in the 90-125 range.
MUST_NOT_TAG: list[str] = [
    "T 98.6", "Temp 99 F", "Tmax 101 F", "weight 92 kg", "O2 sat 92 F", "HR 92, RR 20", "93% on RA",
    "sinus rhythm in the 90's all night",  # "in the 90s" is a rate; an age is "in her 90s"
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
