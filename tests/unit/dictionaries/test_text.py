"""The line helpers of dictionaries.text: the line(s) around an offset, and ALL-CAPS lines."""

from __future__ import annotations

from dictionaries.text import is_all_caps, line_around, line_bounds


def test_when_offset_is_inside_a_line_then_its_bounds_exclude_the_newlines() -> None:
    text = "first line\nSECOND LINE 5/5\nthird"
    at = text.index("5/5")
    assert line_bounds(text, at) == (11, 26)
    assert line_around(text, at, at + 3) == "SECOND LINE 5/5"
    assert line_around(text, 0) == "first line"
    assert line_around(text, len(text) - 1) == "third"


def test_when_span_crosses_a_newline_then_both_lines_are_returned() -> None:
    text = "a\nb c\nd e\nf"
    assert line_around(text, text.index("c"), text.index("d") + 1) == "b c\nd e"


def test_when_line_has_letters_and_no_lower_case_then_it_is_all_caps() -> None:
    assert is_all_caps("PT ON CPAP 5/5, 40%")
    assert not is_all_caps("Pt on CPAP 5/5")
    assert not is_all_caps("120/80 88%")
