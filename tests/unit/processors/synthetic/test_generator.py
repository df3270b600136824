"""Synthetic corpus generator: exact gold, conventions, hard negatives, reproducibility."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from paths import DATA

from processors.synthetic import data as D
from processors.synthetic.generator import KINDS, generate, write_jsonl
from schemas.labels import SUBTYPE_LABEL, Label, Subtype
from schemas.models import NoteIn

FIXTURE = DATA / "synthetic_small.jsonl"


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    return generate(400, 11)


def _gold_overlapping(record: dict[str, Any], start: int, end: int) -> list[dict[str, Any]]:
    return [s for s in record["spans"] if s["start"] < end and start < s["end"]]


@pytest.mark.parametrize("kind", KINDS)
def test_when_generating_a_kind_then_every_span_is_exact_ordered_and_labelled(kind: str) -> None:
    records = generate(25, 3, kinds=[kind])
    assert {r["kind"] for r in records} == {kind}
    assert sum(len(r["spans"]) for r in records) > 25
    for r in records:
        prev_end = 0
        for s in r["spans"]:
            assert r["text"][s["start"]:s["end"]] == s["text"]
            assert s["start"] >= prev_end and s["text"] == s["text"].strip()
            label = Label(s["label"])
            if s["subtype"] is not None:
                assert SUBTYPE_LABEL[Subtype(s["subtype"])] == label
            prev_end = s["end"]


def test_when_same_seed_then_records_are_identical_and_another_seed_differs() -> None:
    assert generate(15, 5) == generate(15, 5)
    assert [r["text"] for r in generate(15, 5)] != [r["text"] for r in generate(15, 6)]


def test_when_regenerating_the_committed_fixture_then_bytes_match(tmp_path: Path) -> None:
    out = tmp_path / "again.jsonl"
    assert write_jsonl(generate(30, 7), out) == 30
    assert out.read_bytes() == FIXTURE.read_bytes()


def test_when_the_output_folder_is_missing_then_it_is_made(tmp_path: Path) -> None:
    out = tmp_path / "new" / "folder" / "notes.jsonl"
    assert write_jsonl(generate(2, 7), out) == 2 and len(out.read_text().splitlines()) == 2


def test_when_kind_is_unknown_then_value_error() -> None:
    with pytest.raises(ValueError, match="unknown note kinds"):
        generate(1, 1, kinds=["haiku"])


@pytest.mark.parametrize("share, low, high", [(0.0, 0, 0), (1.0, 80, 80), (0.5, 28, 52)])
def test_when_patient_share_is_set_then_that_share_carries_a_patient_block(share: float, low: int,
                                                                           high: int) -> None:
    records = generate(80, 2, patient_share=share)
    with_block = [r for r in records if r["patient"] is not None]
    assert low <= len(with_block) <= high
    for r in with_block:
        note = NoteIn.model_validate(r)
        assert note.patient is not None and note.patient.names and note.patient.mrn
        assert note.patient_key == r["patient"]["id"]
        assert len(note.providers) == 3 and note.facility is not None


def test_when_a_note_carries_a_patient_block_then_its_mrn_and_ssn_spans_match_the_block(
        corpus: list[dict[str, Any]]) -> None:
    checked = 0
    for r in corpus:
        if r["patient"] is None:
            continue
        for s in r["spans"]:
            if s["subtype"] == "MRN":
                assert s["text"].upper() == r["patient"]["mrn"].upper()
                checked += 1
            if s["subtype"] == "SSN":
                assert s["text"] == r["patient"]["ssn"]
    assert checked > 20


def test_when_generating_then_lengths_and_kinds_are_realistic(corpus: list[dict[str, Any]]) -> None:
    lengths = [len(r["text"]) for r in corpus if r["kind"] != "query"]
    assert 750 <= statistics.mean(len(r["text"]) for r in corpus) <= 1300
    assert min(lengths) >= 150 and 2000 <= max(lengths) <= 3500
    assert all(len(r["text"]) < 300 and "\n" not in r["text"] for r in corpus if r["kind"] == "query")
    assert set(Counter(r["kind"] for r in corpus)) == set(KINDS)
    icu = [r["text"] for r in corpus if r["kind"] == "icu_nursing"]
    assert icu and all(t == t.upper() for t in icu)


def test_when_generating_then_every_label_but_other_appears(corpus: list[dict[str, Any]]) -> None:
    labels = {s["label"] for r in corpus for s in r["spans"]}
    assert labels == {label.value for label in Label} - {"OTHER"}
    subtypes = {s["subtype"] for r in corpus for s in r["spans"]}
    assert {"PATIENT", "PROVIDER", "RELATIVE", "BIRTHDATE", "FAX", "PAGER", "MRN", "SSN", "STREET", "CITY",
            "STATE", "ZIP", "HOSPITAL", "CLINIC"} <= subtypes


def _shape(text: str) -> str:
    return re.sub(r"[A-Za-z]+", "a", re.sub(r"\d+", "9", text))


def test_when_generating_then_dates_come_in_at_least_15_shapes(corpus: list[dict[str, Any]]) -> None:
    shapes = {_shape(s["text"]) for r in corpus for s in r["spans"] if s["label"] == "DATE"}
    assert len(shapes) >= 15


def test_when_an_age_is_written_then_only_ages_over_89_are_tagged(corpus: list[dict[str, Any]]) -> None:
    seen_young = seen_old = 0
    for r in corpus:
        for m in re.finditer(r"\b(\d{2,3})(?: ?(?:yo|YO|-year-old)|[MF]\b)", r["text"]):
            gold = _gold_overlapping(r, m.start(1), m.end(1))
            if int(m.group(1)) > 89:
                assert [(g["label"], g["text"]) for g in gold] == [("AGE", m.group(1))]
                seen_old += 1
            else:
                assert gold == []
                seen_young += 1
    assert seen_young > 50 and seen_old > 0
    assert all(int(s["text"]) > 89 for r in corpus for s in r["spans"] if s["label"] == "AGE")


def test_when_a_date_follows_dob_then_it_is_a_birthdate(corpus: list[dict[str, Any]]) -> None:
    found = 0
    for r in corpus:
        for m in re.finditer(r"(?i)\b(?:DOB|Date of birth):? ", r["text"]):
            nxt = [s for s in r["spans"] if s["start"] == m.end()]
            assert nxt and nxt[0]["subtype"] == "BIRTHDATE"
            found += 1
    assert found > 20


def test_when_a_name_has_a_title_or_credential_then_they_stay_outside_the_span(
        corpus: list[dict[str, Any]]) -> None:
    names = [s["text"] for r in corpus for s in r["spans"] if s["label"] == "NAME"]
    assert not [n for n in names if re.match(r"(?i)(dr|mr|mrs|ms)\b\.?", n)]
    assert not [n for n in names if re.search(r"\b(MD|M\.D\.|RN|LPN|PA-C)$", n)]
    shapes = {_shape(n) for n in names}
    assert {"a a", "a, a", "a. a", "a"} <= shapes  # full, "Smith, John", "J. Smith", single part


def test_when_sampling_names_then_common_word_names_and_rare_surnames_occur(
        corpus: list[dict[str, Any]]) -> None:
    parts = Counter(w for r in corpus for s in r["spans"] if s["label"] == "NAME"
                    for w in re.findall(r"[A-Za-z]+", s["text"]))
    common = set(D.COMMON_WORD_FIRST_F + D.COMMON_WORD_FIRST_M + D.COMMON_WORD_SURNAMES)
    assert len(common & set(parts)) >= 5
    assert len(parts) > 600  # a long tail, not a handful of names


NEGATIVES = ["Foley catheter", "MyChart", "FK506", "Bruce protocol", "Murphy sign", "NAD", "BP 120/80", "GCS 15",
             "Lasix 40 mg IV BID", "C5-C6", "L4-L5", "K 3.3", "Frank", "will", "hope", "q6h", "St. Jude"]


@pytest.mark.parametrize("needle", NEGATIVES)
def test_when_a_hard_negative_is_written_then_it_is_never_tagged(corpus: list[dict[str, Any]],
                                                                 needle: str) -> None:
    hits = 0
    flags = re.IGNORECASE if needle.islower() else 0  # "mychart" in a portal URL is part of the URL
    pattern = re.compile(r"(?<![A-Za-z0-9])" + re.escape(needle) + r"(?![A-Za-z0-9])", flags)
    for r in corpus:
        for m in pattern.finditer(r["text"]):
            gold = _gold_overlapping(r, m.start(), m.end())
            if needle.isalpha() and gold and all(g["label"] == "NAME" or g["text"] != m.group(0) for g in gold):
                continue  # the word as a real name ("Frank" the patient) or inside one ("hope_wood@..."): PHI
            assert gold == [], (needle, r["id"])
            hits += 1
    assert hits > 0


def test_when_a_time_stands_alone_then_it_is_not_tagged(corpus: list[dict[str, Any]]) -> None:
    times = 0
    for r in corpus:
        for m in re.finditer(r"(?:@|\bat )(\d{4}|\d\d:\d\d)\b", r["text"]):
            assert _gold_overlapping(r, m.start(1), m.end(1)) == []
            times += 1
    assert times > 50


def test_when_a_year_stands_alone_then_it_is_not_tagged(corpus: list[dict[str, Any]]) -> None:
    years = 0
    for r in corpus:
        for m in re.finditer(r"\b(?:in|since|quit in) (19|20)\d\d\b", r["text"]):
            assert _gold_overlapping(r, m.start() + m.group(0).rfind(" ") + 1, m.end()) == []
            years += 1
    assert years > 20
