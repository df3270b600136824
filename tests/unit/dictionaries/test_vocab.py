"""dictionaries.vocab: derived vocabularies (real packages, cached once per test session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dictionaries import vocab


@pytest.fixture(scope="module")
def cache(cache_dir: Path) -> Path:
    """The run's cache folder (DEID_CACHE_DIR, see tests/conftest.py), with the vocabularies loaded."""
    vocab.load(cache_dir)
    return cache_dir


@pytest.mark.slow
def test_when_loaded_then_cache_file_is_written_and_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Build into a fresh folder regardless of what this process loaded before (test order must not matter);
    # the process's loaded bundle is put back afterwards.
    monkeypatch.setattr(vocab, "_LOADED", {})
    built = vocab.load(tmp_path)
    path = tmp_path / f"vocab-{vocab.vocab_version()}.pkl"
    assert path.is_file()
    vocab._LOADED.clear()
    again = vocab.load(tmp_path)
    assert again.version == built.version == vocab.vocab_version()
    assert again is not built


def test_when_version_asked_then_it_is_a_stable_short_hash(cache: Path) -> None:
    v = vocab.vocab_version()
    assert len(v) == 16 and int(v, 16) >= 0
    assert v == vocab.vocab_version()


@pytest.mark.parametrize(
    ("listing", "member"),
    [
        ("first", "Mary"), ("first", "Nevaeh"), ("surname", "Nguyen"), ("surname", "Kowalski"),
        ("surname", "Obrien"), ("city", "Dothan"), ("city", "Boston"), ("city", "Bayamon"),
        ("country", "France"), ("country", "Iran"),
    ],
)
def test_when_list_is_built_then_it_holds_known_entries(cache: Path, listing: str, member: str) -> None:
    lists = {
        "first": vocab.first_names, "surname": vocab.surnames, "city": vocab.us_cities, "country": vocab.countries,
    }
    values = lists[listing]()
    if listing == "city":  # geonames spells it "Bayamón"
        values = tuple(v.replace("ó", "o") for v in values)
    assert member in values


def test_when_first_names_listed_then_most_frequent_first_and_title_case(cache: Path) -> None:
    names = vocab.first_names()
    assert set(names[:5]) >= {"James", "John"}
    assert all(n[:1].isupper() for n in names[:1000])
    assert "Unknown" not in names and "Baby" not in names  # SSA placeholders


def test_when_cities_listed_then_most_populous_first(cache: Path) -> None:
    recs = vocab.us_city_records()
    assert recs[0].population >= recs[100].population >= recs[-1].population
    assert recs[0].name == "New York City"


def test_when_states_listed_then_names_and_codes(cache: Path) -> None:
    states = dict(vocab.us_states())
    assert states["Massachusetts"] == "MA" and states["District of Columbia"] == "DC"
    assert len(states) == 52


def test_when_hospitals_loaded_then_cms_rows_are_typed(cache: Path) -> None:
    hs = vocab.hospitals()
    assert len(hs) > 5000
    first = hs[0]
    assert first.name and first.city and len(first.state) == 2 and first.zip.isdigit()


@pytest.mark.parametrize(
    ("term", "common"),
    [
        ("Will", True), ("Green", True), ("Primary Care", True), ("General Hospital", True), ("may", True),
        ("Kowalski", False), ("Nguyen", False), ("Sibley Memorial Hospital", False), ("", False),
    ],
)
def test_when_term_checked_then_common_word_filter_decides(term: str, common: bool) -> None:
    assert vocab.is_common_word(term, vocab.COMMON_WORD_ZIPF) is common


@pytest.mark.parametrize(
    ("term", "common"),
    [
        ("Will", True), ("May", True), ("Green", True), ("Primary Care", True),
        ("John", False), ("Mary", False), ("St Mary's", False), ("Kowalski", False),
    ],
)
def test_when_term_checked_name_aware_then_names_are_not_common(cache: Path, term: str, common: bool) -> None:
    assert vocab.is_common_term(term) is common


def test_when_zipf_asked_then_wordfreq_scale() -> None:
    assert vocab.zipf("the") > 7.0
    assert vocab.zipf("kowalski") < 3.5
    assert vocab.zipf("qzxjvv") == 0.0


def test_when_word_is_in_a_name_list_then_it_is_a_name_word() -> None:
    from dictionaries import vocab

    assert vocab.is_name_word("Morales") and vocab.is_name_word("mary")
    assert not vocab.is_name_word("tommorow")
    assert vocab.is_first_name("MARY") and not vocab.is_first_name("Morales")
    assert vocab.is_surname("morales") and vocab.is_surname("Proud")  # Census surnames hold English words


def test_when_term_is_a_country_city_or_state_then_it_is_a_place_name() -> None:
    assert vocab.is_place_name("rome") and vocab.is_place_name("SWITZERLAND") and vocab.is_place_name("Boston")
    assert vocab.is_place_name("Texas") and vocab.is_place_name("mt")
    assert not vocab.is_place_name("waiting room") and not vocab.is_place_name("st")


def test_when_street_types_listed_then_lower_case_set_matches() -> None:
    assert {"st", "ave", "blvd", "street"} <= vocab.STREET_TYPE_WORDS
    assert {s.lower() for s in vocab.STREET_TYPES} == vocab.STREET_TYPE_WORDS
