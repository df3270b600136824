"""regex step, locations: streets, PO boxes, City / State / ZIP; credentials and clinical abbreviations
after a comma that are not states."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

L = Label.LOCATION

POSITIVE: list[tuple[str, list[Expected]]] = [
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
    # an ALL-CAPS line gives no case evidence: a city the gazetteer knows still counts
    ("SON FROM DALLAS, TX CALLED TODAY", [("DALLAS", L, Subtype.CITY), ("TX", L, Subtype.STATE)]),
    ("Lives at 12 Oak St. with wife.", [("12 Oak St.", L, Subtype.STREET)]),
    ("1600 Pennsylvania Avenue NW, Washington, DC 20500", [
        ("1600 Pennsylvania Avenue NW", L, Subtype.STREET), ("Washington", L, Subtype.CITY),
        ("DC", L, Subtype.STATE), ("20500", L, Subtype.ZIP)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_location_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


#: Credentials and clinical abbreviations after a comma, and homes that are not cities.
MUST_NOT_TAG: list[str] = [
    "FRANK BLOOD IN NGT, MD AWARE.", "Results sent to Carri Wood, MD.", "Consults: Cardiology, ID, Renal",
    "seen by her PCP, Nevada", "K 3.3 REPLETED W/ 40 MEQ KCL. ST. JUDE VALVE IN PLACE",
    "lives in a nursing home", "LIVES IN APARTMENT ALONE",
    # ALL-CAPS clinical words before a comma are no city, so the abbreviation after it is no state
    "RESPONDING WELL TO LASIX, CO/CI IMPROVED", "LUNG SOUNDS DIM IN BASES BILAT, CT SYSTEM WITHOUT LEAK",
    "PMHX: CAD S/P CABG, MI '91",
    "PMHx: CAD -s/p CABG, MI '98, ESRD on HD",  # mixed case too: "MI" needs a place word before the city
    # no house numbers: insulin units, an ordinal written apart, two sentences
    "ENDO=BS COVER W 4U REG SQ @ 0200", "BASELINE 1 ST DEGREE AV BLOCK",
    "MOVES X 4 EXTREMITIES SPONTANEOUSLY. HEAD CT NEGATIVE",
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
