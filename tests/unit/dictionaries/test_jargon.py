"""dictionaries.jargon: the curated clinical-jargon list and the clinical-word filter."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dictionaries import jargon, vocab


@pytest.fixture(scope="module")
def words(cache_dir: Path) -> jargon.ClinicalWords:
    vocab.load(cache_dir)
    return jargon.clinical_words(cache_dir)


def test_when_list_read_then_every_word_has_a_source() -> None:
    entries = jargon.read_jargon()
    assert len(entries) > 200
    assert {"wean", "levo", "vanco", "aline", "swan", "pacer", "bolus", "lytes", "foley", "trach"} <= entries.keys()
    assert all(source for source in entries.values())
    assert all(w == w.lower() and " " not in w for w in entries)


@pytest.mark.parametrize(
    ("text", "error"),
    [("# --- drugs | source: x\nLevo\n", "lower-case"), ("levo\n", "no section"),
     ("# --- drugs | source: x\nneo gtt\n", "lower-case")],
)
def test_when_list_malformed_then_value_error(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "j.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        jargon.read_jargon(path)


def test_when_case_counted_then_sentence_starts_do_not_count_as_capitals() -> None:
    lower, capital = jargon.count_case(["Edema of limb. Hodgkin lymphoma", "Nodular Hodgkin disease; edema"])
    assert lower["edema"] == 1 and capital["edema"] == 0  # "Edema" starts a sentence
    assert capital["hodgkin"] == 1 and lower["hodgkin"] == 0


CLINICAL_CASES = [
    # (word, reason or None)
    ("wean", "jargon"),
    ("NEO", "jargon"),
    ("POs", "jargon"),  # the plural of a listed abbreviation
    ("bair", "jargon"),  # a device eponym (Bair Hugger); "quinton" stays out: a first name
    ("quinton", None),
    ("FEM", "jargon"),  # a line site; "rad" (radial) is no curated word (a first name), only a unit
    ("rad", "medical"),
    ("DELINE", "jargon"),  # removing the invasive lines, though a rare surname
    ("ivfs", "jargon"),
    ("TSICUB", "care-unit"),  # an intensive care unit with its letter
    ("pmicu", "care-unit"),
    ("mccue", None),  # a vowel after "ccu": a surname
    ("thrush", "medical"),
    ("saliva", "medical"),
    ("liter", "clinical-text"),
    ("hodgkin", None),  # eponym: capitalised in clinical text
    ("wilson", None),  # curated eponym, and name-like
    ("camila", None),  # a drug brand, but a first name
    ("mary", None),
    ("kowalski", None),
]


@pytest.mark.parametrize(("word", "reason"), CLINICAL_CASES, ids=[c[0] for c in CLINICAL_CASES])
def test_when_word_checked_then_reason_given(words: jargon.ClinicalWords, word: str, reason: str | None) -> None:
    assert words.reason(word) == reason


def test_when_filter_built_from_parts_then_rules_apply() -> None:
    medical = {"stent": ("term", False), "babinski": ("sign", True), "arima": ("drug", False)}
    cw = jargon.ClinicalWords(frozenset({"levo"}), Counter({"sternal": 5, "bell": 4}), Counter({"bell": 3}),
                              medical.get, lambda w: w == "pearl")
    assert cw.reason("levo") == "jargon"
    assert cw.reason("levos") == "jargon" and cw.reason("ls") is None  # a plural, not a bare "s"
    assert cw.is_curated("levo") and cw.is_curated("cvicu") and not cw.is_curated("stent")
    assert cw.reason("stent") == "medical"
    assert cw.reason("babinski") is None and cw.reason("arima") is None
    assert cw.reason("sternal") == "clinical-text"
    assert cw.reason("bell") is None  # capitalised too often
    assert cw.known_words() == frozenset({"levo", "sternal"})


def test_when_version_asked_then_stable() -> None:
    v = jargon.jargon_version()
    assert v.startswith("jargon-") and v == jargon.jargon_version()
