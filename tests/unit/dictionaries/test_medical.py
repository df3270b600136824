"""Medical vocabulary: term matching with exact offsets, ambiguity, concepts, loading and the cache version,
and ``medical_syntax_spans`` defaulting to the vocabulary's genes (the recognisers: test_medical_syntax.py;
the builders: test_medical_build.py).

Uses the real vocabulary (built on first use into the run's DEID_CACHE_DIR, see tests/conftest.py, then
loaded).
"""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

import pytest

from dictionaries import medical, medical_build
from dictionaries.medical import (
    MedicalVocabulary,
    medical_syntax_spans,
    medical_vocabulary,
    normalize_term,
    vocabulary_version,
)
from dictionaries.medical_syntax import syntax_spans


@pytest.fixture(scope="module")
def vocab() -> MedicalVocabulary:
    return medical_vocabulary()


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


def test_when_a_builder_module_changes_then_the_version_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert medical_build in medical.BUILDER_MODULES
    builder = Path(str(medical_build.__file__))
    read_bytes = Path.read_bytes

    def edited(self: Path) -> bytes:
        data = read_bytes(self)
        return data + b"\n# edited\n" if self == builder else data

    before = vocabulary_version.__wrapped__()
    monkeypatch.setattr(Path, "read_bytes", edited)
    assert vocabulary_version.__wrapped__() != before


def test_when_syntax_is_scanned_without_genes_then_the_vocabulary_genes_are_used(vocab: MedicalVocabulary) -> None:
    text = "KRAS G12C mutated; Lasix 40 mg at 0630; BP 120/80."
    assert medical_syntax_spans(text) == syntax_spans(text, vocab.genes) == vocab.syntax_spans(text)
    assert (0, 9, "gene") in medical_syntax_spans(text)
    assert medical_syntax_spans(text, start=19, end=30) == syntax_spans(text, vocab.genes, start=19, end=30)


def _windows_of(text: str, rng: random.Random) -> list[tuple[int, int]]:
    """Parts as recovery and decide cut them (whitespace-edged windows around random spans), and parts cut anywhere."""
    from processors.shapes import windows
    from schemas.labels import Label
    from schemas.models import Span

    spans = []
    for _ in range(rng.randint(1, 6) if len(text) > 1 else 0):
        a = rng.randrange(0, len(text) - 1)
        spans.append(Span(start=a, end=min(len(text), a + rng.randint(1, 12)), label=Label.NAME, source="ner"))
    cut = windows(text, spans, rng.choice([0, 5, 40, 200])) if spans else []
    anywhere = [tuple(sorted((rng.randrange(len(text) + 1), rng.randrange(len(text) + 1)))) for _ in range(3)]
    return cut + [(a, b) for a, b in anywhere if b > a]


def test_when_a_text_was_scanned_whole_then_its_parts_get_exactly_the_matches_of_their_own_scan(
        vocab: MedicalVocabulary, shared_dir: Path) -> None:
    from streams.cli.bench import fixed_length_notes

    texts = [n.text for n in fixed_length_notes(120, 1000)]
    for name in ("presidio_synth_v2", "meddocan_dev"):  # general English; Spanish accents (not ASCII)
        with (shared_dir / "data" / "eval" / f"{name}.jsonl").open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for _, line in zip(range(200), fh, strict=False)]
    texts += [  # runs of blanks at a part's edges, other blanks, a character that lower-cases to two, final sigma
        "BP  stable,\n\n  Bruce  protocol\tnext week;\xa0heart failure\u2009and COPD.  ",
        "İstanbul: asthma and heart failure. ΟΔΟΣ asthma ΣΑΣ heart  failure",
        "  \n  pneumonia  ", "asthma", "",
    ]
    rng = random.Random(5)
    answered = parts = 0
    fresh = MedicalVocabulary(vocab.version, vocab._rows, vocab.genes, vocab.chapters, vocab._auto)
    for text in texts:
        whole = fresh._scan(text, 0, len(text))
        assert vocab.scan(text) == whole
        assert vocab.scan(text) == whole  # kept: the same again
        for a, b in _windows_of(text, rng):
            own = fresh._scan(text, a, b)
            assert vocab.scan(text, a, b) == own, (a, b)
            parts += 1
            answered += own != [] and (a == 0 or text[a - 1].isspace()) and (b == len(text) or text[b].isspace())
    assert parts > 1_000 and answered > 300  # parts with matches, answered from the kept scans


def test_when_more_texts_are_scanned_than_are_kept_then_the_oldest_go_and_answers_stay_right(
        vocab: MedicalVocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(medical, "KEPT_SCANS", (3, 200))
    v = MedicalVocabulary(vocab.version, vocab._rows, vocab.genes, vocab.chapters, vocab._auto)
    texts = [f"note {i}: asthma, heart failure and COPD" for i in range(6)] + ["x" * 300 + " asthma"]
    for text in texts:
        assert v.scan(text) == v._scan(text, 0, len(text))
        assert len(v._kept.scans) <= 3 and v._kept.chars <= 200
    assert list(v._kept.scans) == texts[3:6]  # the newest three; the 307-character text was not kept
    assert v.scan(texts[0], 8, 14) == v._scan(texts[0], 8, 14) != []
