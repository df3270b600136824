"""How synthetic PHI values are written: dates in named formats, weekday names, NANP phone numbers and
their renderings, and identifiers with their real shapes and check digits (SSN, NPI, DEA, MRN).

Month and weekday names come from ``dictionaries.calendar``. Every random choice is drawn from the
``random.Random`` passed in, so output stays reproducible for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date

from dictionaries.calendar import MONTHS, WEEKDAYS

_MONTHS = tuple(m.title() for m in MONTHS)
WEEKDAY_NAMES = tuple(d.title() for d in WEEKDAYS)
#: Weekdays as clinicians abbreviate them (i2b2 tags these as DATE).
WEEKDAY_SHORT = ("mon", "tues", "wed", "thurs", "fri", "sat", "sun")


# ------------------------------------------------------------------------------------------------ dates

def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


#: Date formats with the year (full) and without (short); month-year; day-only. Keys are stable ids.
DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "m/d/yyyy": lambda d: f"{d.month}/{d.day}/{d.year}",
    "mm/dd/yyyy": lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    "m/d/yy": lambda d: f"{d.month}/{d.day}/{d.year % 100:02d}",
    "m-d-yy": lambda d: f"{d.month}-{d.day}-{d.year % 100:02d}",
    "iso": lambda d: d.isoformat(),
    "yyyymmdd": lambda d: f"{d.year}{d.month:02d}{d.day:02d}",
    "dd-Mon-yy": lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3]}-{d.year % 100:02d}",
    "dd-MON-yyyy": lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3].upper()}-{d.year}",
    "d Mon yyyy": lambda d: f"{d.day} {_MONTHS[d.month - 1][:3]} {d.year}",
    "Month d, yyyy": lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}",
    "Month dth yyyy": lambda d: f"{_MONTHS[d.month - 1]} {ordinal(d.day)} {d.year}",
    "Mon. d, yyyy": lambda d: f"{_MONTHS[d.month - 1][:3]}. {d.day}, {d.year}",
}
SHORT_DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "m/d": lambda d: f"{d.month}/{d.day}",
    "Mon d": lambda d: f"{_MONTHS[d.month - 1][:3]} {d.day}",
    "MON d": lambda d: f"{_MONTHS[d.month - 1][:3].upper()} {d.day}",
    "Month dth": lambda d: f"{_MONTHS[d.month - 1]} {ordinal(d.day)}",
    "dth of Month": lambda d: f"{ordinal(d.day)} of {_MONTHS[d.month - 1]}",
}
MONTH_YEAR_FORMATS: dict[str, Callable[[date], str]] = {
    "mm/yyyy": lambda d: f"{d.month:02d}/{d.year}",
    "Month yyyy": lambda d: f"{_MONTHS[d.month - 1]} {d.year}",
    "Mon 'yy": lambda d: f"{_MONTHS[d.month - 1][:3]} '{d.year % 100:02d}",
}


def format_date(d: date, fmt: str) -> str:
    """Render ``d`` in one of the named formats (DATE_FORMATS, SHORT_DATE_FORMATS, MONTH_YEAR_FORMATS)."""
    for table in (DATE_FORMATS, SHORT_DATE_FORMATS, MONTH_YEAR_FORMATS):
        if fmt in table:
            return table[fmt](d)
    raise KeyError(fmt)


# ------------------------------------------------------------------------------------------------ identifiers

def digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def phone_number(rng: random.Random) -> str:
    """Canonical NANP number "AAA-EEE-SSSS" (area and exchange never start with 0/1 nor are N11)."""
    def block() -> str:
        while True:
            b = f"{rng.randint(2, 9)}{digits(rng, 2)}"
            if b[1:] != "11":
                return b
    exchange = "555" if rng.random() < 0.15 else block()
    return f"{block()}-{exchange}-{digits(rng, 4)}"


def render_phone(canonical: str, rng: random.Random) -> str:
    a, e, s = canonical.split("-")
    return rng.choice((f"({a}) {e}-{s}", f"{a}-{e}-{s}", f"{a}.{e}.{s}", f"{a}{e}{s}", f"1-{a}-{e}-{s}",
                       f"+1 {a} {e} {s}", f"({a}){e}-{s}", f"{e}-{s}", f"{a}-{e}-{s}"))


def ssn(rng: random.Random) -> str:
    area = rng.randint(1, 898)
    if area >= 666:  # 666 is never issued
        area += 1
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def _luhn_digit(payload: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(payload)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def npi(rng: random.Random) -> str:
    """A 10-digit NPI with a valid check digit (Luhn over the "80840" prefix)."""
    body = rng.choice("12") + digits(rng, 8)
    return body + _luhn_digit("80840" + body)


def dea(rng: random.Random, family: str) -> str:
    d = [rng.randint(0, 9) for _ in range(6)]
    check = (d[0] + d[2] + d[4] + 2 * (d[1] + d[3] + d[5])) % 10
    return rng.choice("ABFM") + family[0].upper() + "".join(map(str, d)) + str(check)


def mrn(rng: random.Random) -> str:
    return rng.choice((f"{rng.randint(0, 99999999):08d}", f"{rng.randint(1000000, 9999999)}",
                       f"MR{digits(rng, 7)}", f"E{digits(rng, 7)}", f"{digits(rng, 3)}-{digits(rng, 2)}-"
                       f"{digits(rng, 2)}"))
