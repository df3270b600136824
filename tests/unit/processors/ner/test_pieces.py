"""The NER step's word pieces (:mod:`processors.ner.pieces`): the fast path gives the shipped tokenizer's own ids,
offsets and word numbers, on the evaluation notes and on random text, and hands everything else to it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from processors.evaluation.lockbox import design_only
from processors.ner.pieces import PieceEncoder, Pieces
from processors.ner.step import DEFAULT_MODEL_DIR

TOKENIZER_JSON = DEFAULT_MODEL_DIR / "tokenizer.json"


def _tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(TOKENIZER_JSON))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return _tokenizer()


def _library(tok: Tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    e = tok.encode(text, add_special_tokens=False)
    return e.ids, [tuple(o) for o in e.offsets], [-1 if w is None else w for w in e.word_ids]


def _same(p: Pieces, expected: tuple[list[int], list[tuple[int, int]], list[int]]) -> bool:
    ids, offsets, words = expected
    return (p.ids.tolist() == ids and [tuple(o) for o in p.offsets.tolist()] == offsets
            and p.word_ids.tolist() == words and p.offsets.shape == (len(ids), 2))


def test_fast_path_taken_where_each_character_maps_to_one(tokenizer: Tokenizer) -> None:
    enc = PieceEncoder(tokenizer)
    assert enc.fast and enc.lowercase
    assert enc.fast_path("Pt seen by Dr. Smith on 3/4, BP 120/80 [stable]\n\tplan: d/c home.")
    assert enc.fast_path("")
    # accents stripped, a capital I with a dot lower-cased to "i", signs and symbols: one character each
    assert enc.fast_path("Señor Núñez, İzmir, 37.5°C, 5 µg, ½ tab, ‘quoted’\u00a0text")
    assert not enc.fast_path("e\u0301")  # a combining accent: nothing alone, part of the letter before it in context
    assert not enc.fast_path("中文")  # Chinese characters: the normalizer puts spaces around them
    assert not enc.fast_path("a\u200bb")  # a zero-width space: removed, joining "ab"
    assert not enc.fast_path("ab\x01cd")  # a control character the normalizer removes, joining "abcd"
    assert not enc.fast_path("x\x0by")
    assert not enc.fast_path("note [CLS] text")  # a special token, matched on the raw text before normalizing
    assert enc.fast_path("note [cls] text")  # not one: special tokens match their case


@pytest.mark.parametrize("text", [
    "", " ", "\n\n", "a", "Pt", "SMITH, JOHN A.", "Dr. O'Brien-Smith saw pt @ 14:30; f/u 2/3/2019 (clinic).",
    "hypertensionxq zzqqxx ##s [cls] [Cls] {x} ~`^_|\\\"'", "a" * 101 + " b " + "c" * 100,  # over 100 chars: [UNK]
    "ab\x01cd e\x0bf \x7f", "Señor Núñez, 45 años", "x [CLS] y [SEP] [MASK][PAD][UNK]", "\t\r\n x \r\n",
    "İSTANBUL ΣΟΦΙΑ straße ﬁne 37°C 5µg ½ “quoted” — x\u00a0y\u2028z 😀 €5", "café\u0301 中文 a\u200bb",
    "Ø ø Æ Ł ł ð þ ı ǅ ﬀ ™ ® © § ¶ • … ‰ ′ ″",
    "MRN#1234567 SSN 123-45-6789 tel:(617)555-0199 jsmith@example.org http://a.b/c?d=e",
])
def test_same_pieces_as_the_tokenizer(tokenizer: Tokenizer, text: str) -> None:
    enc = PieceEncoder(tokenizer)
    (got,) = enc.encode([text])
    assert _same(got, _library(tokenizer, text))


_ALPHABET = st.sampled_from(list("abcxyzABCXYZ0189 .,;:-/()[]#'\"\t\n\r@&*_~") + [
    "\x01", "[CLS]", "[MASK]", "é", "Ñ", "ß", "İ", "Σ", "ς", "°", "µ", "½", "²", "’", "“", "—", "\u00a0", "\u2028",
    "\u0301", "\u200b", "中", "😀", "ﬁ", "Ø", "ı", "€"])


@pytest.fixture(scope="module")
def small_encoder(tokenizer: Tokenizer) -> PieceEncoder:
    return PieceEncoder(tokenizer, max_words=64)  # small: the table starts afresh often


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_random_text_same_pieces(tokenizer: Tokenizer, small_encoder: PieceEncoder, text: str) -> None:
    (got,) = small_encoder.encode([text])
    assert _same(got, _library(tokenizer, text))


def test_bounded_memory_same_answers(tokenizer: Tokenizer) -> None:
    """A table smaller than a note's words starts afresh before the note and still answers right; words seen before
    and after a fresh start get the same pieces."""
    rng = random.Random(5)
    vocab = ["stable", "Quimby", "zzxq", "hypertension", "2019", "-", "pt", "Okonkwo", "qwertyuiop", "."]
    enc = PieceEncoder(tokenizer, max_words=8)
    texts = [" ".join(rng.choice(vocab) + rng.choice(["", "s", "x9"]) for _ in range(rng.randint(0, 30)))
             for _ in range(60)]
    for text, got in zip(texts, enc.encode(texts), strict=True):
        assert _same(got, _library(tokenizer, text))
    assert len(enc._key) <= 30  # one note's distinct words at most, after a fresh start


def test_batch_mixes_fast_and_library_texts_in_order(tokenizer: Tokenizer) -> None:
    texts = ["plain ascii one", "Núñez", "two [CLS]", "", "plain again, 3/4", "中文 x", "x\x01y"]
    enc = PieceEncoder(tokenizer)
    got = enc.encode(texts)
    assert [enc.fast_path(t) for t in texts] == [True, True, False, True, True, False, False]
    for text, p in zip(texts, got, strict=True):
        assert _same(p, _library(tokenizer, text))


def test_other_tokenizers_go_to_the_library(tokenizer: Tokenizer) -> None:
    """A tokenizer of another kind (here the same vocabulary with a plain lower-case normalizer, which keeps the
    control characters) is never put on the fast path."""
    spec = json.loads(tokenizer.to_str())
    spec["normalizer"] = {"type": "Lowercase"}
    other = Tokenizer.from_str(json.dumps(spec))
    enc = PieceEncoder(other)
    assert not enc.fast and not enc.fast_path("plain ascii")
    (got,) = enc.encode(["Plain ASCII, 3/4"])
    assert _same(got, _library(other, "Plain ASCII, 3/4"))


def test_cased_bert_tokenizer_keeps_case(tokenizer: Tokenizer) -> None:
    spec = json.loads(tokenizer.to_str())
    spec["normalizer"]["lowercase"] = False
    cased = Tokenizer.from_str(json.dumps(spec))
    enc = PieceEncoder(cased)
    assert enc.fast and not enc.lowercase
    text = "Dr. SMITH saw Quimby, hypertension"
    (got,) = enc.encode([text])
    assert _same(got, _library(cased, text))


def test_evaluation_notes_same_pieces(tokenizer: Tokenizer, shared_dir: Path) -> None:
    """Every note of the evaluation sets (the PhysioNet and MEDDOCAN lockbox left out), by whichever path it takes,
    gets the tokenizer's pieces, and nearly all take the fast path (a few MEDDOCAN notes hold a character the
    normalizer removes or expands). Only counts are reported."""
    enc = PieceEncoder(tokenizer)
    for name, min_fast in (("physionet_deid_dev.jsonl", 1.0), ("presidio_synth_v2.jsonl", 1.0),
                           ("meddocan_dev.jsonl", 0.9)):
        rows = [json.loads(line) for line in (shared_dir / "data" / "eval" / name).open(encoding="utf-8")]
        texts = [r["text"] for r in design_only(rows)]
        got = enc.encode(texts)
        wrong = [i for i, (t, p) in enumerate(zip(texts, got, strict=True)) if not _same(p, _library(tokenizer, t))]
        assert wrong == [], f"{name}: {len(wrong)} of {len(texts)} notes with other pieces (positions {wrong[:10]})"
        fast = np.mean([enc.fast_path(t) for t in texts])
        assert fast >= min_fast, f"{name}: {fast:.2f} of the notes on the fast path"


def test_when_the_words_and_their_starts_disagree_then_the_tokenizer_answers(
        tokenizer: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard behind the fast path: should the regular expression's words and the character table's starts ever
    disagree (here the table is made wrong on purpose: "-" read as whitespace), the note goes to the tokenizer."""
    from processors.ner import pieces

    kind = pieces._KIND.copy()
    kind[ord("-")] = 0
    monkeypatch.setattr(pieces, "_KIND", kind)
    text = "follow-up in 2-3 weeks"
    (got,) = PieceEncoder(tokenizer).encode([text])
    assert _same(got, _library(tokenizer, text))


def test_added_tokens_of_a_tokenizer_are_left_to_it(tokenizer: Tokenizer) -> None:
    """A token added to the vocabulary (matched whole before the normalizer, as the special tokens are) sends the
    texts that hold it to the tokenizer; other texts keep the fast path."""
    tok = Tokenizer.from_str(tokenizer.to_str())
    tok.add_tokens(["zzyzx"])
    enc = PieceEncoder(tok)
    assert "zzyzx" in enc.specials
    assert not enc.fast_path("seen at zzyzx today") and enc.fast_path("seen at home today")
    assert not enc.fast_path("seen at ZZYZX today")  # matched on the lower-cased text
    for text in ("seen at zzyzx today", "seen at ZZYZX today", "seen at home today"):
        (got,) = enc.encode([text])
        assert _same(got, _library(tok, text))
