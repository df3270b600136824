"""Word pieces without the tokenizer's per-character work (issue 26: the NER stage's host work).

The NER model's tokenizer (BERT's: a normalizer that cleans, lower-cases and strips accents, a pre-tokenizer that
splits on whitespace and isolates punctuation, WordPiece) keeps an alignment for every character through the
normalizer, and hands each note's pieces to Python as lists of tuples: on a GPU node, where the forward pass is
cheap, that was about half of the step's host work. Where the normalizer maps every character of a text to exactly
one character, offsets need no alignment: on ASCII text without control characters lower-casing is ``str.lower``
and the pre-tokenizer's words are the runs of letters and digits and each other printable character alone; beyond
ASCII, each character met is put once through the tokenizer's own normalizer and pre-tokenizer alone ("é" -> "e",
a letter; "’" a sign; a no-break space whitespace), and a text is translated with what they said. So
:class:`PieceEncoder` finds the words, asks the tokenizer's own WordPiece model once per distinct word (remembered)
and lays out the pieces with numpy: the same ids, offsets and word numbers as the tokenizer (tests compare them on
every evaluation note and on random text). A text with a character the normalizer removes, expands or joins to its
neighbour (a control character, a zero-width space, a combining accent, Chinese characters, which get spaces
around them), or with the text of a token added to the vocabulary (the special tokens such as ``[CLS]``, matched
before normalizing; others after), goes to the tokenizer itself, as does every text when the tokenizer is not of
that kind.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

#: ASCII control characters that BERT's normalizer removes or reads as whitespace (tab, line feed and carriage return
#: are whitespace to both paths)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: the pre-tokenizer's words on ASCII text: runs of letters and digits, and each other printable character alone
_WORDS = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
#: each ASCII character's kind: 0 whitespace (and the controls, which never reach it), 1 letter or digit, 2 a sign
_KIND = np.zeros(256, np.uint8)
_KIND[[ord(c) for c in "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"]] = 1
_KIND[[c for c in range(0x21, 0x7f) if not chr(c).isalnum()]] = 2
#: remembered words before the table starts afresh (a note's words repeat; ~100 bytes each)
MAX_WORDS = 1 << 17


@dataclass(frozen=True, slots=True)
class Pieces:
    """One text's word pieces: token ids (n,), char offsets (n, 2) and each piece's word number (n,)."""

    ids: IntArray
    offsets: IntArray
    word_ids: IntArray


def _plain_bert(tokenizer: Any) -> tuple[bool, bool, tuple[str, ...]]:
    """(whether ``tokenizer`` is BERT's plain kind, whether it lower-cases, its added tokens' texts) from its
    serialised configuration: a BertNormalizer that cleans the text, the BertPreTokenizer and a WordPiece model; no
    other normalizer or pre-tokenizer step; and the calls the fast path makes of it."""
    try:
        spec = json.loads(tokenizer.to_str())
        calls = (tokenizer.normalizer.normalize_str, tokenizer.pre_tokenizer.pre_tokenize_str, tokenizer.model.tokenize)
    except (AttributeError, ValueError):
        return False, False, ()
    norm, pre, model = spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}, spec.get("model") or {}
    plain = (norm.get("type") == "BertNormalizer" and bool(norm.get("clean_text"))
             and pre.get("type") == "BertPreTokenizer" and model.get("type") == "WordPiece" and all(calls))
    added = tuple(str(t.get("content") or "") for t in spec.get("added_tokens") or ())
    return plain, bool(norm.get("lowercase")), tuple(a for a in added if a)


class PieceEncoder:
    """The tokenizer's word pieces of texts (``add_special_tokens=False``), by the fast path where it gives the
    tokenizer's own answer and by the tokenizer elsewhere. ``tokenizer`` is a ``tokenizers.Tokenizer`` (a fast
    tokenizer's ``backend_tokenizer``) with truncation and padding off."""

    def __init__(self, tokenizer: Any, max_words: int = MAX_WORDS) -> None:
        self.tokenizer = tokenizer
        self.fast, self.lowercase, self.specials = _plain_bert(tokenizer)
        self.max_words = max_words
        self._lock = threading.Lock()
        # characters beyond ASCII, learnt from the normalizer and pre-tokenizer one at a time: what each becomes
        # (str.translate's table, ASCII upper case included when the tokenizer lower-cases; a character beyond ASCII
        # in it is a learnt one), each result's kind ("0" whitespace, "1" letter or digit, "2" a sign on its own),
        # and those that take the tokenizer
        self._fold: dict[int, str] = {c: chr(c).lower() for c in range(0x41, 0x5B)} if self.lowercase else {}
        self._kind_of: dict[int, str] = {c: str(int(_KIND[c])) for c in range(0x20, 0x7F)}
        self._kind_of.update({ord(c): "0" for c in "\t\n\r"})
        self._other: set[str] = set()
        self._reset()

    def _reset(self) -> None:
        self._key: dict[str, int] = {}
        # per remembered word: its first piece in the flat tables and how many it has
        self._first, self._count = np.zeros(1024, np.int64), np.zeros(1024, np.int64)
        # per piece of a remembered word: its id and its (start, end) within the word, in characters
        self._ids, self._rel = np.zeros(4096, np.int64), np.zeros((4096, 2), np.int64)
        self._n_pieces = 0

    def _learn(self, word: str) -> int:
        """The word's number, asking the WordPiece model for its pieces the first time."""
        tokens = self.tokenizer.model.tokenize(word)
        k, n, m = len(self._key), self._n_pieces, len(tokens)
        if k == len(self._first):
            self._first, self._count = np.resize(self._first, 2 * k), np.resize(self._count, 2 * k)
        while n + m > len(self._ids):
            self._ids, self._rel = np.resize(self._ids, 2 * len(self._ids)), np.resize(self._rel, (2 * len(self._rel), 2))
        self._first[k], self._count[k] = n, m
        char_at = _char_positions(word)  # the model's offsets count UTF-8 bytes
        for j, t in enumerate(tokens):
            self._ids[n + j] = t.id
            a, b = t.offsets
            self._rel[n + j] = (a, b) if char_at is None else (char_at[a], char_at[b])
        self._n_pieces = n + m
        self._key[word] = k
        return k

    def _learn_char(self, ch: str) -> None:
        """What the normalizer makes of ``ch`` and which kind the pre-tokenizer gives the result; a character it
        removes, expands, or combines with its neighbours (a combining mark: it becomes nothing alone) takes the
        tokenizer. Lower-casing, accents, cleaning and the pre-tokenizer's split act on one character at a time."""
        folded = self.tokenizer.normalizer.normalize_str(ch)
        if len(folded) != 1:
            self._other.add(ch)
            return
        words = len(self.tokenizer.pre_tokenizer.pre_tokenize_str(f"a{folded}a"))
        kind = {1: "1", 2: "0", 3: "2"}.get(words)
        if kind is None:
            self._other.add(ch)
            return
        self._fold[ord(ch)] = folded
        self._kind_of[ord(folded)] = kind

    def _folded(self, text: str) -> str | None:
        """``text`` as the normalizer makes it, one character for one, or None when it does not map so."""
        if not text.isascii():
            with self._lock:
                for ch in set(text):
                    if ord(ch) > 0x7F and ord(ch) not in self._fold and ch not in self._other:
                        self._learn_char(ch)
                if not self._other.isdisjoint(text):
                    return None
            return text.translate(self._fold)
        return text.lower() if self.lowercase else text

    def _admitted(self, text: str) -> str | None:
        """``text`` as the normalizer makes it when the fast path gives the tokenizer's answer for it, else None."""
        if not self.fast or _CONTROL.search(text) is not None:
            return None
        folded = self._folded(text)
        # an added token is matched before the normalizer (special tokens) or on its result (most others)
        if folded is None or any(s in text or s in folded for s in self.specials):
            return None
        return folded

    def fast_path(self, text: str) -> bool:
        """Whether ``text`` is one the fast path gives the tokenizer's answer for."""
        return self._admitted(text) is not None

    def _encode_fast(self, text: str) -> Pieces | None:
        folded = self._admitted(text)
        if folded is None:
            return None
        if folded.isascii():
            words = _WORDS.findall(folded)
            kind = _KIND[np.frombuffer(folded.encode("ascii"), np.uint8)]
        else:
            kind = np.frombuffer(folded.translate(self._kind_of).encode("ascii"), np.uint8) - ord("0")
            words = None
        # where each word starts: a sign, or a letter or digit after anything else
        word_char = kind == 1
        begins = kind == 2
        begins[0:1] |= word_char[0:1]
        begins[1:] |= word_char[1:] & ~word_char[:-1]
        starts = np.flatnonzero(begins)
        if words is None:
            ends = starts + 1  # a sign is a word of one character; a run of letters ends where they do
            run_ends = np.flatnonzero(word_char & ~np.append(word_char[1:], False)) + 1
            ends[word_char[starts]] = run_ends
            words = [folded[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        if len(starts) != len(words):  # not on the texts fast_path admits; should it ever, the tokenizer answers
            return None
        with self._lock:
            if len(self._key) + len(words) > self.max_words:
                self._reset()
            key = self._key
            found = list(map(key.get, words))
            if None in found:
                found = [key[w] if w in key else self._learn(w) for w in words]
            keys = np.array(found, np.int64)
            first, count = self._first[keys], self._count[keys]
            total = int(count.sum())
            # piece j of word i sits at first[i] + j: each word's first piece repeated, plus the rank within it
            before = np.cumsum(count) - count
            rows = np.repeat(first - before, count) + np.arange(total)
            ids, rel = self._ids[rows], self._rel[rows]
        word_ids = np.repeat(np.arange(len(words), dtype=np.int64), count)
        offsets = rel + starts[word_ids][:, None]
        return Pieces(ids, offsets, word_ids)

    def _encode_slow(self, texts: Sequence[str]) -> list[Pieces]:
        out = []
        for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False):
            n = len(e.ids)
            words = np.fromiter((-1 if w is None else w for w in e.word_ids), np.int64, n)
            out.append(Pieces(np.asarray(e.ids, dtype=np.int64).reshape(n),
                              np.asarray(e.offsets, dtype=np.int64).reshape(n, 2), words))
        return out

    def encode(self, texts: Sequence[str]) -> list[Pieces]:
        """Each text's pieces, in order."""
        out: list[Pieces | None] = [None] * len(texts)
        slow: list[int] = []
        for i, text in enumerate(texts):
            out[i] = self._encode_fast(text)
            if out[i] is None:
                slow.append(i)
        if slow:
            for i, p in zip(slow, self._encode_slow([texts[i] for i in slow]), strict=True):
                out[i] = p
        return out  # type: ignore[return-value]  # every slot filled above


def _char_positions(word: str) -> dict[int, int] | None:
    """For a word beyond ASCII, each UTF-8 byte position of a character boundary -> its character position (None
    for ASCII, where they are the same)."""
    if word.isascii():
        return None
    out, pos = {}, 0
    for i, ch in enumerate(word):
        out[pos] = i
        pos += len(ch.encode("utf-8"))
    out[pos] = len(word)
    return out
