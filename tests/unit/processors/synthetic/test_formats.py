"""Synthetic value formats: named date formats, ordinals, phone numbers and identifiers with valid shapes."""

from __future__ import annotations

import random
import re
from datetime import date

import pytest

from processors.synthetic.formats import (
    DATE_FORMATS,
    MONTH_YEAR_FORMATS,
    SHORT_DATE_FORMATS,
    dea,
    format_date,
    npi,
    ordinal,
    phone_number,
    render_phone,
    ssn,
)


@pytest.mark.parametrize("fmt, expected", [
    ("m/d", "7/2"), ("mm/dd/yyyy", "07/02/2019"), ("m-d-yy", "7-2-19"), ("iso", "2019-07-02"),
    ("yyyymmdd", "20190702"), ("dd-Mon-yy", "02-Jul-19"), ("d Mon yyyy", "2 Jul 2019"), ("Mon d", "Jul 2"),
    ("Month dth", "July 2nd"), ("Month dth yyyy", "July 2nd 2019"), ("dth of Month", "2nd of July"),
    ("mm/yyyy", "07/2019"), ("Month yyyy", "July 2019"), ("Mon 'yy", "Jul '19"), ("MON d", "JUL 2"),
])
def test_when_formatting_a_date_then_the_named_format_is_used(fmt: str, expected: str) -> None:
    assert format_date(date(2019, 7, 2), fmt) == expected


def test_when_a_format_is_unknown_then_key_error() -> None:
    with pytest.raises(KeyError):
        format_date(date(2019, 7, 2), "dd.mm.yyyy")


def test_format_ids_are_unique_across_the_tables() -> None:
    names = [*DATE_FORMATS, *SHORT_DATE_FORMATS, *MONTH_YEAR_FORMATS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("n, expected", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"),
                                         (12, "12th"), (13, "13th"), (21, "21st"), (22, "22nd"), (111, "111th")])
def test_when_writing_an_ordinal_then_the_english_suffix_is_used(n: int, expected: str) -> None:
    assert ordinal(n) == expected


def _luhn_ok(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch) * (2 if i % 2 == 1 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def test_when_drawing_identifiers_then_their_shapes_and_check_digits_are_valid() -> None:
    rng = random.Random(5)
    for _ in range(300):
        value = npi(rng)
        assert re.fullmatch(r"[12]\d{9}", value) and _luhn_ok("80840" + value), value
        d = dea(rng, "smith")
        digits = [int(c) for c in d[2:]]
        assert re.fullmatch(r"[ABFM]S\d{7}", d), d
        assert (digits[0] + digits[2] + digits[4] + 2 * (digits[1] + digits[3] + digits[5])) % 10 == digits[6]
        area, group, serial = ssn(rng).split("-")
        assert area not in ("000", "666") and int(area) < 900 and group != "00" and serial != "0000"


def test_when_drawing_phone_numbers_then_they_are_nanp_and_every_rendering_keeps_the_digits() -> None:
    rng = random.Random(8)
    for _ in range(300):
        canonical = phone_number(rng)
        assert re.fullmatch(r"[2-9]\d\d-[2-9]\d\d-\d{4}", canonical), canonical
        area, exchange, _ = canonical.split("-")
        assert area[1:] != "11" and exchange[1:] != "11"
        written = re.sub(r"\D", "", render_phone(canonical, rng))
        assert canonical.replace("-", "").endswith(written.removeprefix("1")[-7:])
        assert written.removeprefix("1") in (canonical.replace("-", ""), canonical.replace("-", "")[3:])
