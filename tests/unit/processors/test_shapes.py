"""Identifier shapes: what no step may drop whatever its score."""

from __future__ import annotations

import pytest

from processors.shapes import identifier_shaped


@pytest.mark.parametrize("surface", ["02115", "02115-1234", "APO AE 09012", "fpo ap 12428", "DPO AA 34001-1234"])
def test_when_a_zip_or_a_military_zip_line_then_identifier_shaped(surface: str) -> None:
    assert identifier_shaped(surface)


@pytest.mark.parametrize("surface", ["APO AE", "APO A1 12345", "ZIP 02115", "0211", "APO AE 0901"])
def test_when_no_whole_zip_then_not_identifier_shaped(surface: str) -> None:
    assert not identifier_shaped(surface)
