"""The ``icu_shift`` note kind: real-style ICU shift notes whose numbers and jargon are negatives."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dictionaries.medical_syntax import measurement_value
from processors.synthetic.generator import EXTRA_KINDS, KINDS, generate
from processors.synthetic.icu import gas, vent


@pytest.fixture(scope="module")
def shift_notes() -> list[dict[str, Any]]:
    return generate(300, 4242, kinds=["icu_shift"])


def _untagged(record: dict[str, Any]) -> str:
    text = record["text"]
    for s in record["spans"]:
        text = text[: s["start"]] + " " * (s["end"] - s["start"]) + text[s["end"]:]
    return text


def test_when_kinds_are_default_then_icu_shift_is_never_drawn() -> None:
    assert "icu_shift" in EXTRA_KINDS and "icu_shift" not in KINDS
    assert {r["kind"] for r in generate(200, 7)} <= set(KINDS)


def test_when_asked_for_icu_shift_then_every_note_is_one_and_reproducible(shift_notes: list[dict[str, Any]]) -> None:
    assert {r["kind"] for r in shift_notes} == {"icu_shift"}
    assert generate(20, 4242, kinds=["icu_shift"]) == shift_notes[:20]


def test_when_shift_notes_are_written_then_they_are_mostly_numbers_and_few_identifiers(
    shift_notes: list[dict[str, Any]],
) -> None:
    numbers = sum(len(re.findall(r"\d+(?:\.\d+)?", _untagged(r))) for r in shift_notes)
    spans = sum(len(r["spans"]) for r in shift_notes)
    assert numbers > 3 * spans  # identifier-shaped numbers are the negatives this kind exists for
    # some notes carry no identifier at all, as most real nursing notes do
    assert sum(1 for r in shift_notes if not r["spans"]) >= 15


def test_when_shift_notes_are_written_then_all_three_case_styles_occur(shift_notes: list[dict[str, Any]]) -> None:
    letters = [re.sub(r"[^A-Za-z]", "", _untagged(r)) for r in shift_notes]
    upper = sum(1 for s in letters if s.isupper())
    lower = sum(1 for s in letters if s.islower())
    mixed = len(letters) - upper - lower
    assert upper > 60 and lower > 30 and mixed > 20


def test_when_identifiers_are_written_then_month_year_dates_and_named_wards_are_tagged(
    shift_notes: list[dict[str, Any]],
) -> None:
    spans = [s for r in shift_notes for s in r["spans"]]
    assert any(s["label"] == "DATE" and re.fullmatch(r"\d{1,2}/\d{2}", s["text"]) for s in spans)
    assert any(s["label"] == "LOCATION" and re.fullmatch(r"[A-Za-z' -]+ \d{1,2}", s["text"]) for s in spans)
    assert {s["label"] for s in spans} >= {"NAME", "DATE", "LOCATION", "ORGANIZATION", "PHONE"}


@pytest.mark.parametrize("seed", range(40))
def test_when_a_ventilator_setting_or_gas_is_written_then_it_is_untagged_clinical_syntax(seed: int) -> None:
    import random

    rng = random.Random(seed)
    for text in (vent(rng), "ABG " + gas(rng)):
        assert re.search(r"\d", text)
        if not text[0].isalpha():
            continue  # a bare "600x12x5x50%" is a hard negative for the model; no rule claims it
        # the shared medical-syntax rules read at least one number of it as a measurement
        assert any(measurement_value(text, m.start(), m.end()) for m in re.finditer(r"\d+(?:\.\d+)?", text)), text
