"""The one table of month and weekday names (English; other languages' month names in ``FOREIGN_MONTHS``), for every
step that reads or writes dates.

Lower case; callers title-case or upper-case as they need. A fixed table, not the stdlib ``calendar``
module's names, which follow the process locale.
"""

from __future__ import annotations

import re

MONTHS: tuple[str, ...] = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december",
)
#: Three-letter abbreviations, in month order ("sept" is the one four-letter form in use: MONTH_TOKENS).
MONTH_ABBREVIATIONS: tuple[str, ...] = tuple(m[:3] for m in MONTHS)
#: Every single-word month token: full names, three-letter abbreviations and "sept".
MONTH_TOKENS: frozenset[str] = frozenset(MONTHS) | frozenset(MONTH_ABBREVIATIONS) | {"sept"}

#: Month names of the other languages the product meets (Spanish, German, French, Italian, Portuguese, Dutch), in month
#: order, each as the language writes it. Used only where a day or a year stands beside them ("14 de enero de 2006",
#: "3. März 2019", "janvier 2006"): alone, several are words or names ("mars", "mayo", "julio").
FOREIGN_MONTH_NAMES: dict[str, tuple[str, ...]] = {
    "es": ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"),
    "de": ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober", "november",
           "dezember"),
    "fr": ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre",
           "décembre"),
    "it": ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre",
           "novembre", "dicembre"),
    "pt": ("janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro",
           "novembro", "dezembro"),
    "nl": ("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober",
           "november", "december"),
}
#: Other common spellings: without accents ("maerz", "fevrier", "aout"), and regional names ("setiembre", "jänner").
FOREIGN_MONTH_VARIANTS: dict[str, tuple[str, int]] = {
    "setiembre": ("es", 9), "jänner": ("de", 1), "maerz": ("de", 3), "fevrier": ("fr", 2), "aout": ("fr", 8),
    "decembre": ("fr", 12),
}
#: Each language's month names with their other spellings (what the regex step reads); names the English table has
#: ("april", "august", "november") are left to it.
FOREIGN_MONTHS: dict[str, tuple[str, ...]] = {
    lang: names + tuple(v for v, (vl, _) in FOREIGN_MONTH_VARIANTS.items() if vl == lang)
    for lang, names in FOREIGN_MONTH_NAMES.items()
}
#: Every foreign month name that is not also an English month name or abbreviation.
FOREIGN_MONTH_TOKENS: frozenset[str] = frozenset(m for names in FOREIGN_MONTHS.values() for m in names) - MONTH_TOKENS


def foreign_months(token: str) -> list[tuple[str, int]]:
    """The (language, month 1-12) readings of a foreign month name in any case, in ``FOREIGN_MONTH_NAMES``' order of
    languages ("mai": German and French May; "marzo": Spanish and Italian March); [] for anything else."""
    low = token.lower().rstrip(".")
    if low not in FOREIGN_MONTH_TOKENS:
        return []
    found = [(lang, names.index(low) + 1) for lang, names in FOREIGN_MONTH_NAMES.items() if low in names]
    return found or [FOREIGN_MONTH_VARIANTS[low]]


WEEKDAYS: tuple[str, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAY_ABBREVIATIONS: tuple[str, ...] = tuple(d[:3] for d in WEEKDAYS)
#: Every single-word weekday token: full names, three-letter abbreviations and the longer short forms.
WEEKDAY_TOKENS: frozenset[str] = frozenset(WEEKDAYS) | frozenset(WEEKDAY_ABBREVIATIONS) | {"tues", "thur", "thurs"}

#: Single words that name a day of the year by themselves ("since Christmas"): a date without digits.
HOLIDAY_TOKENS: frozenset[str] = frozenset({
    "christmas", "xmas", "thanksgiving", "easter", "halloween", "hanukkah", "chanukah", "kwanzaa", "passover",
    "ramadan", "eid", "diwali", "yom", "kippur", "rosh", "hashanah", "valentine", "valentines", "valentine's",
    "juneteenth", "newyear", "memorial", "labor", "labour", "independence", "veterans", "columbus", "presidents",
})
#: Every word that makes a span without digits a date: months, weekdays and holidays.
CALENDAR_TOKENS: frozenset[str] = MONTH_TOKENS | WEEKDAY_TOKENS | HOLIDAY_TOKENS


#: The most days of each month (February in a leap year): "2/30" and "4/31" are no dates.
MONTH_DAYS: tuple[int, ...] = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_day_of_month(month: int, day: int) -> bool:
    """``day`` exists in ``month`` (1-12) of some year."""
    return 1 <= month <= 12 and 1 <= day <= MONTH_DAYS[month - 1]


def month_number(token: str) -> int | None:
    """1-12 for a month name or abbreviation in any case (a trailing dot allowed), else None."""
    low = token.lower().rstrip(".")
    if low not in MONTH_TOKENS:
        return None
    return MONTH_ABBREVIATIONS.index(low[:3]) + 1


def foreign_month_alternation() -> str:
    """A regex alternation (no group) of every foreign month name (``FOREIGN_MONTH_TOKENS``), longest first."""
    return "|".join(sorted(map(re.escape, FOREIGN_MONTH_TOKENS), key=lambda w: (-len(w), w)))


def month_alternation() -> str:
    """A regex alternation (no group) that matches every month name or abbreviation, factored on the
    three-letter prefix so a scanner tries one branch per first letters: ``jan(?:uary)?|...``."""
    parts = []
    for full in MONTHS:
        head, tail = full[:3], full[3:]
        if full == "september":
            parts.append("sep(?:t(?:ember)?)?")
        else:
            parts.append(head + (f"(?:{tail})?" if tail else ""))
    return "|".join(parts)
