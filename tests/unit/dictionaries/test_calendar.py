"""dictionaries.calendar: the one month/weekday table and the month regex built from it."""

from __future__ import annotations

import re

import pytest

from dictionaries.calendar import (
    MONTH_ABBREVIATIONS,
    MONTH_TOKENS,
    MONTHS,
    WEEKDAY_TOKENS,
    WEEKDAYS,
    month_alternation,
    month_number,
)

MONTH_RE = re.compile(r"(?:" + month_alternation() + r")\b\.?", re.IGNORECASE)


@pytest.mark.parametrize("token, number", [
    ("January", 1), ("jan", 1), ("JAN.", 1), ("Sept", 9), ("sep", 9), ("september", 9), ("May", 5), ("dec", 12),
    ("june", 6), ("jun", 6), ("Mayo", None), ("ja", None), ("", None), ("monday", None),
])
def test_month_number_table(token: str, number: int | None) -> None:
    assert month_number(token) == number


def test_the_tables_are_in_calendar_order() -> None:
    assert len(MONTHS) == 12 and MONTHS[0] == "january" and MONTHS[-1] == "december"
    assert MONTH_ABBREVIATIONS[8] == "sep" and len(set(MONTH_ABBREVIATIONS)) == 12
    assert WEEKDAYS[0] == "monday" and len(WEEKDAYS) == 7
    assert {"tues", "thurs", "sun"} <= WEEKDAY_TOKENS and "sept" in MONTH_TOKENS


@pytest.mark.parametrize("text", sorted(MONTH_TOKENS))
def test_when_a_month_token_is_scanned_then_the_alternation_matches_all_of_it(text: str) -> None:
    for form in (text, text.upper(), text.title(), text + "."):
        m = MONTH_RE.fullmatch(form)
        assert m is not None, form


@pytest.mark.parametrize("text", ["janu", "marc", "mayo", "julyy", "septem", "decemb", "monday", "ja"])
def test_when_a_word_only_starts_like_a_month_then_the_alternation_does_not_match_it_whole(text: str) -> None:
    assert MONTH_RE.fullmatch(text) is None
