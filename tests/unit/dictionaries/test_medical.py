"""Medical vocabulary: curated list, term matching with exact offsets, ambiguity, medical syntax.

Uses the real vocabulary (built on first use into the run's DEID_CACHE_DIR, see tests/conftest.py, then
loaded).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from dictionaries.medical import (
    CURATED_FILE,
    MedicalVocabulary,
    medical_syntax_spans,
    medical_vocabulary,
    normalize_term,
    read_curated,
)

CATEGORIES = {"sign", "test", "scale", "procedure", "disease", "device", "ehr", "abbrev", "drug-brand",
              "drug-code", "care-unit", "unit"}


@pytest.fixture(scope="module")
def vocab() -> MedicalVocabulary:
    return medical_vocabulary()


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


@pytest.mark.parametrize(
    ("text", "present", "absent"),
    [
        ("Completed a Bruce protocol today.", ["Bruce protocol"], ["Bruce"]),
        ("Murphy sign negative, Murphy's sign repeated.", ["Murphy sign", "Murphy's sign"], []),
        ("Hx of Parkinson's disease and Parkinson disease.", ["Parkinson's disease", "Parkinson disease"], []),
        ("Parkinson\u2019s disease, stable.", ["Parkinson\u2019s disease"], []),
        ("Kawasaki disease as a child; Down syndrome.", ["Kawasaki disease", "Down syndrome"], ["Down"]),
        ("Bruce  protocol\nnext week", ["Bruce  protocol"], []),
        ("\u0130\u0130 Lasix 40 mg", ["Lasix"], []),
        ("St. Jude valve; MyChart message; FK506 level.", ["St. Jude valve", "MyChart", "FK506"], ["St. Jude"]),
        ("Foley catheter and Whipple procedure; Apgar score 8/9.",
         ["Foley catheter", "Whipple procedure", "Apgar score"], ["Foley"]),
        ("Exam: NAD, PERRLA.", ["NAD", "PERRLA"], []),
        ("Guillain-Barre syndrome and Guillain Barre.", ["Guillain-Barre syndrome", "Guillain Barre"], []),
        ("Lasixfoo and xLasix", [], ["Lasix", "Lasixfoo", "xLasix"]),
        ("He will go down to see Grace Bell in May.", [], ["will", "down", "Grace", "Bell", "May", "Grace Bell"]),
    ],
)
def test_when_text_has_medical_terms_then_find_returns_exact_offsets(
    vocab: MedicalVocabulary, text: str, present: list[str], absent: list[str]
) -> None:
    matches = vocab.find(text)
    found = [text[m.start:m.end] for m in matches]
    for surface in present:
        assert surface in found, (surface, found)
    for surface in absent:
        assert surface not in found, (surface, found)
    for m in matches:
        assert normalize_term(text[m.start:m.end]) == m.term_norm


def test_when_matches_overlap_then_find_keeps_the_longest_left_to_right(vocab: MedicalVocabulary) -> None:
    text = "Foley catheter placed."
    found = vocab.find(text)
    assert [(m.start, m.end) for m in found][:1] == [(0, 14)]
    assert any((m.start, m.end) == (0, 5) for m in vocab.scan(text))


@pytest.mark.parametrize("word", ["Will", "May", "Down", "ALL", "Grace", "Bell", "Dr", "the", "pain"])
def test_when_word_is_common_english_then_it_is_not_a_term(vocab: MedicalVocabulary, word: str) -> None:
    assert vocab.get(word) is None


@pytest.mark.parametrize(
    ("term", "ambiguous"),
    [("Allegra", True), ("Iris", True), ("Foley", True), ("St. Jude", True), ("Grey Turner", True),
     ("Jackson-Pratt", True), ("Lasix", False), ("Bruce protocol", False), ("NAD", False),
     ("Apgar score", False), ("Foley catheter", False), ("5-FU", False), ("MyChart", False)],
)
def test_when_term_is_also_a_name_or_place_then_it_is_ambiguous(
    vocab: MedicalVocabulary, term: str, ambiguous: bool
) -> None:
    entry = vocab.get(term)
    assert entry is not None
    assert entry.ambiguous is ambiguous


@pytest.mark.parametrize(
    ("text", "surface", "matched"),
    [("Exam: NAD", "NAD", True), ("the nad of it", "nad", False), ("PT consult", "PT", True),
     ("pt is stable", "pt", False), ("BIPAP overnight", "BIPAP", True)],
)
def test_when_abbreviation_is_short_all_caps_then_case_matters(
    vocab: MedicalVocabulary, text: str, surface: str, matched: bool
) -> None:
    found = [text[m.start:m.end] for m in vocab.find(text)]
    assert (surface in found) is matched


@pytest.mark.parametrize(
    ("term", "prefix"),
    [("Parkinson's disease", "ICD10:G20"), ("Lasix", "DRUG:"), ("Foley catheter", "CUR:device"),
     ("Seizure", "HPO:0001250"), ("Bruce protocol", "CUR:test"), ("MyChart", "CUR:ehr")],
)
def test_when_term_is_known_then_it_maps_to_concept_ids(vocab: MedicalVocabulary, term: str, prefix: str) -> None:
    entry = vocab.get(term)
    assert entry is not None
    assert any(c.startswith(prefix) for c in entry.concept_ids), entry.concept_ids


def test_when_concept_is_an_icd10_category_then_its_chapter_is_known(vocab: MedicalVocabulary) -> None:
    assert vocab.chapter("ICD10:G20") == "6"
    assert vocab.chapter("DRUG:furosemide") is None


@pytest.mark.parametrize(
    ("term", "medical"),
    [("Lasix", True), ("Lasix,", True), ("g.7578395G>C", True), ("5 mg", True), ("Bruce", False),
     ("Jones", False), ("555-123-4567", False)],
)
def test_when_is_medical_is_asked_then_terms_and_syntax_count(
    vocab: MedicalVocabulary, term: str, medical: bool
) -> None:
    assert vocab.is_medical(term) is medical


def test_when_vocabulary_is_loaded_again_then_the_cached_pickle_is_used(
    vocab: MedicalVocabulary, cache_dir: Path
) -> None:
    path = cache_dir / f"medical-{vocab.version}.pkl"
    assert path.exists()
    assert medical_vocabulary() is vocab
    with path.open("rb") as f:
        data = pickle.load(f)
    assert data["version"] == vocab.version and len(data["terms"]) == len(vocab)


@pytest.mark.parametrize(
    ("text", "surface", "kind"),
    [
        ("TP53 g.7578395G>C was found", "g.7578395G>C", "variant"),
        ("BRCA1 c.68_69delAG carrier", "c.68_69delAG", "variant"),
        ("NM_000546.6:c.215C>G", "NM_000546.6:c.215C>G", "variant"),
        ("BRAF p.Val600Glu positive", "p.Val600Glu", "variant"),
        ("SNP rs80357906 heterozygous", "rs80357906", "rsid"),
        ("Lasix 40 mg daily", "40 mg", "dose"),
        ("KCl 20 mEq x1", "20 mEq", "dose"),
        ("Vitals: BP 120/80, HR 72", "BP 120/80", "vital"),
        ("GCS 15 on arrival", "GCS 15", "score"),
        ("Apgar 8/9 at birth", "Apgar 8/9", "score"),
        ("NYHA III symptoms", "NYHA III", "score"),
        ("Gleason 3+4 adenocarcinoma", "Gleason 3+4", "score"),
        ("pain 6/10 today", "pain 6/10", "score"),
        ("2/6 systolic murmur", "2/6 systolic", "score"),
        ("epinephrine 1:1000", "1:1000", "ratio"),
        ("Meds at 0630 and 1800", "at 0630 and 1800", "time"),
        ("Lasix 40 mg given @ 1105 today", "@ 1105", "time"),
        ("morphine q6h prn", "q6h", "frequency"),
        ("Na 138, K 4.1", "Na 138", "lab"),
        ("MRI C5-C6 herniation", "C5-C6", "vertebra"),
        ("BRCA1 mutation", "BRCA1", "gene"),
        ("KRAS G12C mutated", "KRAS G12C", "gene"),
        ("osimertinib (AZD9291) started", "AZD9291", "drug-code"),
        ("pembrolizumab (MK-3475) cycle 2", "MK-3475", "drug-code"),
        ("SKIN: BRADEN 13, Q2H TURNS", "BRADEN 13", "score"),
        ("In the ED, T 37.9 C.", "T 37.9 C", "vital"),
        ("Lasix 40\tmg daily", "40\tmg", "dose"),
    ],
)
def test_when_text_has_medical_syntax_then_it_is_recognised(
    vocab: MedicalVocabulary, text: str, surface: str, kind: str
) -> None:
    spans = medical_syntax_spans(text, vocab.genes)
    assert (text.index(surface), text.index(surface) + len(surface), kind) in spans, spans


@pytest.mark.parametrize(
    "text",
    [
        "Admitted on 03/14/2023 at 0630.",
        "He is 92 years old.",
        "Lives in New Orleans, LA 70112.",
        "Call 555-123-4567 after 5 pm",
        "MRN 12345678, seen by Dr. Smith",
        "Accession PF123456 received",
        "Office in K\u00f8benhavn K 1421, Denmark",
        "Seen by Wells 2 weeks ago; BP 12/24 clinic; Tanner 3/14.",
        "Callback 2817838255\ncc: Dr. Smith",
        "Na 12345678\nmg list reviewed",
        "Vitals taken 08-APR-2018 @ 1105 by RN.",
        "Seen APR 8, 2018 @ 1105, stable.",
        "Collected 2018-04-08 1105.",
        "Collected 2018-04-08 @ 1105.",
        "Dose given at 1105 on 08-Apr-18.",
        "",
    ],
)
def test_when_text_has_identifiers_only_then_no_syntax_covers_them(vocab: MedicalVocabulary, text: str) -> None:
    spans = medical_syntax_spans(text, vocab.genes)
    for ident in ("0630", "92", "70112", "555-123-4567", "12345678", "PF123456", "Wells", "12/24", "3/14", "1421",
                  "2817838255", "1105"):
        if ident in text:
            i = text.index(ident)
            assert not any(s <= i and e >= i + len(ident) for s, e, _ in spans), (ident, spans)


def test_when_syntax_scan_is_limited_then_offsets_stay_in_the_full_text(vocab: MedicalVocabulary) -> None:
    text = "Seen today. Apgar 8/9 at birth. BP 120/80."
    spans = medical_syntax_spans(text, vocab.genes, start=12, end=31)
    assert spans == [(12, 21, "score")]
