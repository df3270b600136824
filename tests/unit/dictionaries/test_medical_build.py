"""Medical vocabulary builders: the curated list, term normalisation, spelling variants, ICD phrase cutting,
the shape and ambiguity filters, and the automaton (pure functions; no vocabulary build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dictionaries.medical_build import (
    CURATED_FILE,
    _acceptable,
    _clean_fragment,
    _default_case_sensitive,
    _eponym_variants,
    _icd_phrases,
    _is_ambiguous,
    _variants,
    make_automaton,
    normalize_term,
    normalize_text,
    read_curated,
)

CATEGORIES = {"sign", "test", "scale", "procedure", "disease", "device", "ehr", "abbrev", "drug-brand",
              "drug-code", "care-unit", "unit"}
_ZIPF = {"the": 7.0, "score": 5.0, "will": 6.0, "jackson": 3.5, "pratt": 2.5, "grace": 4.8}
NAMES = frozenset({"jackson", "pratt", "allegra", "bell", "grace", "turner"})
FIRST = frozenset({"allegra", "grace"})


def _zipf(word: str, lang: str) -> float:
    return _ZIPF.get(word, 1.0)


def test_when_curated_list_is_read_then_it_has_at_least_300_unique_entries() -> None:
    entries = read_curated()
    unique = {normalize_term(term) for term, _, _ in entries}
    assert len(unique) >= 300
    assert len(unique) == len(entries), "duplicate curated entries"


def test_when_curated_list_is_read_then_every_entry_has_a_known_category_and_flags() -> None:
    for term, category, flags in read_curated():
        assert term and term == term.strip()
        assert category in CATEGORIES, (term, category)
        assert flags <= {"amb", "unamb", "cs", "ci"}, (term, flags)
    assert "\t" in CURATED_FILE.read_text(encoding="utf-8")


def test_when_a_curated_file_has_comments_and_defaults_then_they_are_read_as_such(tmp_path: Path) -> None:
    path = tmp_path / "curated.txt"
    path.write_text("# comment\n\nNAD\nFoley catheter\tdevice\nBell\tsign\tamb, cs\n", encoding="utf-8")
    assert read_curated(path) == [("NAD", "abbrev", frozenset()), ("Foley catheter", "device", frozenset()),
                                  ("Bell", "sign", frozenset({"amb", "cs"}))]


def test_when_normalising_then_quotes_dashes_and_spaces_are_unified_and_text_offsets_map_back() -> None:
    assert normalize_term("  Parkinson\u2019s\u00a0 Disease ") == "parkinson's disease"
    assert normalize_term("Guillain\u2013Barre") == "guillain-barre"
    norm, index = normalize_text("Bruce  Protocol")
    assert norm == "bruce protocol" and index is not None
    assert "Bruce  Protocol"[index[6]:index[13] + 1] == "Protocol"
    assert normalize_text("Lasix 40 mg") == ("lasix 40 mg", None)


def test_when_a_term_has_spelling_variants_then_all_are_produced() -> None:
    assert _variants("Parkinson's disease") == {"Parkinson's disease", "Parkinson disease", "Parkinsons disease"}
    assert {"Guillain Barre syndrome", "Guillain-Barre syndrome"} <= _variants("Guillain-Barr\u00e9 syndrome")
    assert _variants("St. Jude valve") == {"St. Jude valve", "St Jude valve"}
    assert _eponym_variants("Down syndrome") == {"Down syndrome", "Down's syndrome"}


def test_when_an_icd_description_is_cut_then_qualifiers_and_boilerplate_are_dropped() -> None:
    phrases = _icd_phrases("Other specified disorders of the kidney, unspecified, due to diabetes")
    assert "kidney" in phrases and "disorders" in phrases
    assert not {"other", "unspecified", "other specified"} & phrases
    assert _clean_fragment("Lasix(R) tablet (oral)") == "Lasix tablet"


@pytest.mark.parametrize(("term", "ok"), [
    ("lasix", True), ("the", False), ("ab", False), ("community hospital", False), ("of the", False),
    ("a" * 65, False), ("one two three four five six seven", False), ("123", False),
])
def test_when_a_source_term_is_filtered_then_only_useful_shapes_pass(term: str, ok: bool) -> None:
    assert _acceptable(term, _zipf) is ok


@pytest.mark.parametrize(("term", "ambiguous"), [
    ("allegra", True), ("jackson pratt", True), ("jackson-pratt", True), ("grace bell", True),
    ("bell sign", False), ("5-fu", False), ("k-wire", False), ("lasix", False), ("jackson score", False),
])
def test_when_a_term_is_made_of_names_then_it_is_ambiguous(term: str, ambiguous: bool) -> None:
    assert _is_ambiguous(term, NAMES, FIRST, _zipf) is ambiguous


def test_when_a_term_is_short_all_caps_then_it_is_case_sensitive_by_default() -> None:
    assert _default_case_sensitive("NAD") and _default_case_sensitive("PT")
    assert not _default_case_sensitive("PERRLA") and not _default_case_sensitive("BiPAP")


def test_when_rows_are_indexed_then_the_automaton_maps_each_term_to_its_row() -> None:
    auto = make_automaton([("foley",), ("foley catheter",)])
    assert list(auto.iter("foley catheter")) == [(4, 0), (13, 1)]
