"""Identifier shapes: what no step may drop whatever its score."""

from __future__ import annotations

import random

import numpy as np
import pytest

from processors.shapes import WordIndex, identifier_shaped, within_edits


@pytest.mark.parametrize("surface", ["02115", "02115-1234", "APO AE 09012", "fpo ap 12428", "DPO AA 34001-1234"])
def test_when_a_zip_or_a_military_zip_line_then_identifier_shaped(surface: str) -> None:
    assert identifier_shaped(surface)


@pytest.mark.parametrize("surface", ["APO AE", "APO A1 12345", "ZIP 02115", "0211", "APO AE 0901"])
def test_when_no_whole_zip_then_not_identifier_shaped(surface: str) -> None:
    assert not identifier_shaped(surface)


# ---- within_edits over a WordIndex: the same answers as a plain scan of the list --------------------------------

_WORDS = ("chair", "length", "sternal", "levophed", "abc", "résumé", "Foley", "ox", "daughter", "husband")


@pytest.mark.parametrize(("word", "edits", "expected"), [
    ("cahir", 1, True),       # a swap is one edit
    ("lentgh", 1, True),
    ("sternl", 1, True),      # a deletion
    ("levophd", 1, True),
    ("levofed", 1, False),    # "ph" -> "f": a substitution and a deletion
    ("levofed", 2, True),
    ("ca", 2, True),          # unrestricted Damerau-Levenshtein: "ca" -> "ac" -> "abc" (restricted: 3)
    ("ca", 1, False),
    ("resume", 2, True),      # other characters than a-z count as characters
    ("resume", 1, False),
    ("foley", 1, True),       # case matters: "F" -> "f" is a substitution
    ("foley", 0, False),
    ("xyzzy", 2, False),
    ("", 2, True),            # "ox": two insertions
    ("", 1, False),
    ("dauhgter" * 40, 2, False),
    ("ch\ud800ir", 1, True),  # a lone surrogate (JSON can carry one) is a character like any other
])
def test_when_a_word_index_is_asked_then_it_answers_as_the_plain_scan(word: str, edits: int, expected: bool) -> None:
    index = WordIndex(_WORDS)
    assert within_edits(word, _WORDS, edits) is expected
    assert within_edits(word, index, edits) is expected


def test_when_random_edits_are_made_to_listed_words_then_the_index_answers_as_the_plain_scan() -> None:
    rng = random.Random(11)
    words = tuple(sorted({"".join(rng.choice("abcdeilnorst") for _ in range(rng.randint(3, 10))) for _ in range(400)}))
    index = WordIndex(words)
    for _ in range(300):
        word = rng.choice(words)
        for _ in range(rng.randint(0, 3)):
            i = rng.randrange(len(word) + 1)
            op = rng.choice("idst")
            if op == "i":
                word = word[:i] + rng.choice("abcdeilnorstxé") + word[i:]
            elif op == "d" and i < len(word):
                word = word[:i] + word[i + 1:]
            elif op == "s" and i < len(word):
                word = word[:i] + rng.choice("abcdeilnorstxé") + word[i + 1:]
            elif op == "t" and i < len(word) - 1:
                word = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        for edits in (1, 2):
            assert within_edits(word, index, edits) is within_edits(word, words, edits), (word, edits)


def test_when_the_index_is_empty_then_no_word_is_near() -> None:
    assert within_edits("chair", WordIndex(()), 2) is False


def test_when_the_list_holds_an_empty_word_then_it_is_two_insertions_from_two_letters() -> None:
    index = WordIndex(("", "chair"))
    assert within_edits("ox", index, 2) is True
    assert within_edits("ox", index, 1) is False
    assert within_edits("chiar", index, 1) is True


def test_when_numpy_has_no_bitwise_count_then_the_fallback_counts_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    from processors import shapes

    values = np.array([0, 1, 3, 0x55555555, 0xFFFFFFFF, 0x07FFFFFF, 123456789, 1 << 31], dtype=np.uint32)
    expected = [bin(int(v)).count("1") for v in values]
    if hasattr(np, "bitwise_count"):
        assert shapes._popcount(values).tolist() == expected
        monkeypatch.delattr(np, "bitwise_count")
    assert shapes._popcount(values).tolist() == expected
    test_when_random_edits_are_made_to_listed_words_then_the_index_answers_as_the_plain_scan()
