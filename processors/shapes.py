"""What the recovery and decide steps share about a candidate's text (like ``spans.py``: steps import it, it
imports no step): identifier shapes that are never dropped, the message's own identifiers, readings of a
number by the calendar, and the word tests both use (relation words, near misses of a word list)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dictionaries import vocab
from dictionaries.calendar import is_day_of_month
from dictionaries.text import FAMILY_CUES, PERSONAL_TITLES, PROVIDER_CUES, TITLES_DOCTOR, TITLES_OTHER
from processors.spans import sources_of
from schemas.labels import Label, Subtype
from schemas.models import NoteIn, PersonName, Span

#: Identifier shapes that are never un-tagged, whatever surrounds them.
_SHAPES = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.-]+"                                         # email
    r"|(?:https?://|www\.)\S+"                                          # URL
    r"|(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])"                      # IPv4
    r"|(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)"                                  # SSN
    r"|(?<!\d)(?:\+?1[-.\s]?)?\(?\d{3}\)?[-.\s]?\d{3}[-.\s]?\d{4}(?!\d)"  # phone, 10 digits
    r"|(?<![\d-])\d{3}[-.]\d{4}(?![\d-])",                              # phone, 7 digits with a separator
    re.IGNORECASE,
)
#: a ZIP code, or a military address's last line ("APO AE 09012": the post office and the region stand where a city
#: and a state would, USPS Publication 28)
_ZIP = re.compile(r"(?:(?i:apo|fpo|dpo)[ \t]+(?i:aa|ae|ap)[ \t]+)?\d{5}(?:-\d{4})?")
_NEVER_LABELS = frozenset({Label.EMAIL, Label.URL, Label.IP})
#: detectors that read a date without checking the calendar: a number only they call a date must be readable
MODEL_SOURCES = frozenset({"ner", "llm"})
HAS_DIGIT = re.compile(r"\d")
LETTER_RUN = re.compile(r"[^\W\d_]+(?:'s)?")
_WORD = re.compile(r"[^\W\d_]{2,}")
#: a form field's label right before its value ("Sexo: ", "Edad:", "Age - ")
_FIELD_LABEL_BEFORE = re.compile(r"(?P<w>[^\W\d_]+)[ \t]*[:=-][ \t]*\Z")
#: a word at least this frequent in general English (wordfreq Zipf) is a known word: "noon", "eve", "last"
KNOWN_WORD_ZIPF = 3.0
NAME_TITLES = frozenset(PERSONAL_TITLES) | TITLES_DOCTOR | TITLES_OTHER
#: words for a relative or a carer, never a name by themselves ("AUNTS", "pt's pastor", "Hsb is ENT physician");
#: misspelt by one edit too ("S DUAGHTER", "dauther")
RELATION_WORDS = FAMILY_CUES | PROVIDER_CUES | frozenset(
    "chaplain pastor priest minister rabbi family relatives parents children kids hsb husb dtr".split())
_RELATION_LONG = tuple(w for w in RELATION_WORDS if len(w) >= 5)
#: the years a month/year or a full date of four-digit year is read with
_YEARS = (1900, 2100)
#: a bare number in this range may be an age over 89 the model called a date: kept
_AGE_OVER_89 = (90, 130)
#: a number cut out of a larger one: the span, a run's characters
NUMBER_PIECE = re.compile(r"[\d/.:-]*\d[\d/.:-]*")
_RUN_CHAR = re.compile(r"[\w/.:-]")


def windows(text: str, spans: Sequence[Span], reach: int) -> list[tuple[int, int]]:
    """Merged regions ``reach`` characters around the spans, widened to whitespace (where recovery and decide scan
    the medical vocabulary)."""
    regions: list[list[int]] = []
    for s in sorted(spans, key=lambda sp: sp.start):
        lo, hi = max(0, s.start - reach), min(len(text), s.end + reach)
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
    return [(lo, hi) for lo, hi in regions]


def identifier_shaped(surface: str) -> bool:
    """``surface`` holds a phone, email, URL, IP or SSN shape, or is a ZIP code (a military one with its post office
    and region: "APO AE 09012")."""
    return bool(_SHAPES.search(surface) or _ZIP.fullmatch(surface))


def has_identifier_shape(span: Span, text: str) -> bool:
    """True for spans that must never be un-tagged: email/URL/IP labels (not the model's "email" without an "@"),
    SSNs, and any span whose text holds a phone, email, URL, IP or SSN shape, or is a ZIP code."""
    surface = text[span.start:span.end].strip()
    if span.label == Label.EMAIL and "@" not in surface and sources_of(span) <= MODEL_SOURCES:
        return False  # the model's "email" without an "@" ("DNR & [DNI]") has no email's shape
    if span.label in _NEVER_LABELS or span.subtype == Subtype.SSN:
        return True
    if "@" not in surface and "www." not in surface and "://" not in surface and not HAS_DIGIT.search(surface):
        return False  # every shape below needs one of these
    return identifier_shaped(surface)


def message_identifiers(note_in: NoteIn) -> tuple[frozenset[str], frozenset[str]]:
    """(name words, digit strings) carried by the message: patient, relatives, providers, facility."""
    words: set[str] = set()
    digits: set[str] = set()

    def add_name(name: PersonName | None) -> None:
        if name is not None:
            for part in name.parts():
                words.update(w.lower() for w in _WORD.findall(part))

    def add_value(value: str | None) -> None:
        if value:
            d = re.sub(r"\D", "", value)
            if len(d) >= 4:
                digits.add(d)

    p = note_in.patient
    if p is not None:
        for n in p.names:
            add_name(n)
        for v in (p.id, p.mrn, p.ssn, p.birth_date, *p.ids, *p.phones):
            add_value(v)
        for r in p.relatives:
            add_name(r.name)
            for v in r.phones:
                add_value(v)
    for prov in note_in.providers:
        add_name(prov.name)
        add_value(prov.id)
    if note_in.facility is not None and note_in.facility.name:
        words.update(w.lower() for w in _WORD.findall(note_in.facility.name) if w[:1].isupper())
    return frozenset(words), frozenset(digits)


def repeats_message(span: Span, text: str, words: frozenset[str], digits: frozenset[str]) -> bool:
    """The span holds a name word or a digit string (4+ digits) of the message's own identifiers."""
    surface = text[span.start:span.end]
    if words and any(w.lower() in words for w in _WORD.findall(surface)):
        return True
    d = re.sub(r"\D", "", surface)
    return bool(digits) and len(d) >= 4 and d in digits


def protected(span: Span, text: str, sources: frozenset[str],
              message: tuple[frozenset[str], frozenset[str]] | None) -> bool:
    """A candidate no step may drop: from a protected source, of an identifier's shape, or repeating the message's
    own identifiers (``message`` from :func:`message_identifiers`, None when that protection is off)."""
    return bool(sources_of(span) & sources) or has_identifier_shape(span, text) or (
        message is not None and repeats_message(span, text, *message))


def within_edits(word: str, choices: Sequence[str] | WordIndex, edits: int) -> bool:
    """``word`` is at most ``edits`` edits from one of ``choices`` (Damerau-Levenshtein: swapping two neighbouring
    letters is one edit). A long list is asked faster as a :class:`WordIndex` (the same answers)."""
    from rapidfuzz import distance, process

    if isinstance(choices, WordIndex):
        choices = choices.candidates(word, edits)
        if not choices:
            return False
    return process.extractOne(word, choices, scorer=distance.DamerauLevenshtein.distance,
                              score_cutoff=edits) is not None


def _letter_codes(text: str) -> npt.NDArray[np.int64]:
    """Each character of ``text`` as 0-25 (a-z) or 26 (any other character)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64) - ord("a")
    codes[(codes < 0) | (codes > 25)] = 26
    return codes


def _letter_masks(codes: npt.NDArray[np.int64], starts: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """For each word (its characters' ``_letter_codes`` from each of ``starts``), the set of its character classes as
    bits 0-26."""
    return np.bitwise_or.reduceat(np.left_shift(np.uint32(1), codes.astype(np.uint32)), starts)


def _popcount(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.integer[Any]]:
    """The set bits of each number (numpy's ``bitwise_count`` where it has one, numpy >= 2.0; else bit arithmetic)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        out: npt.NDArray[np.integer[Any]] = count(x)
        return out
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    return (((x + (x >> 4)) & 0x0F0F0F0F) * 0x01010101 & 0xFFFFFFFF) >> 24


class WordIndex:
    """A word list that :func:`within_edits` asks in a small part of the time of a plain scan (42,832 words: 0.04-0.3
    ms against ~10 ms a word), with the same answers: only the words that could be within the edits are compared.
    An edit (insert, delete, substitute, swap) changes a word's length by at most one, the set of its characters by
    at most two (a character gone, another new) and its multiset of characters by at most one in each direction (a
    swap changes neither), so the length difference, half the characters in one word's set but not the other's, and
    the bag distance (the larger of the characters one word has beyond the other and the reverse; merging
    characters into one class can only lower it) are lower bounds of the Damerau-Levenshtein distance, and a word
    beyond any of them cannot be within the edits. The sets (bits of a number) rule out most words cheaply; the bag
    distance is computed for the rest."""

    __slots__ = ("words", "_lengths", "_counts", "_masks")

    def __init__(self, words: Sequence[str]) -> None:
        self.words: tuple[str, ...] = tuple(sorted(words, key=len))
        self._lengths = np.array([len(w) for w in self.words], dtype=np.int64)
        codes = _letter_codes("".join(self.words))
        # every word's letter counts at once: one count over (word, letter) cells
        cells = np.repeat(np.arange(len(self.words), dtype=np.int64), self._lengths) * 27 + codes
        self._counts = np.bincount(cells, minlength=len(self.words) * 27).reshape(-1, 27).astype(np.int16)
        nonempty = self._lengths > 0  # an empty word has no characters: its set is empty (reduceat needs a start)
        self._masks = np.zeros(len(self.words), dtype=np.uint32)
        if nonempty.any():
            starts = (np.cumsum(self._lengths) - self._lengths)[nonempty]
            self._masks[nonempty] = _letter_masks(codes, starts)

    def candidates(self, word: str, edits: int) -> list[str]:
        """The words of the list no bound rules out for ``word`` within ``edits`` (in length order)."""
        n = len(word)
        lo = int(np.searchsorted(self._lengths, n - edits, "left"))
        hi = int(np.searchsorted(self._lengths, n + edits, "right"))
        if lo >= hi:
            return []
        codes = _letter_codes(word)
        mask = _letter_masks(codes, np.zeros(1, dtype=np.int64))[0] if n else np.uint32(0)
        near = np.flatnonzero(_popcount(self._masks[lo:hi] ^ mask) <= 2 * edits) + lo
        if not near.size:
            return []
        counts = np.bincount(codes, minlength=27).astype(np.int16)
        extra = np.maximum(self._counts[near] - counts, 0).sum(axis=1)
        # the characters the word has beyond a listed one: extra - (listed length - n)
        bag = np.maximum(extra, extra - (self._lengths[near] - n))
        return [self.words[int(k)] for k in near[bag <= edits]]


def relation_word(word: str) -> bool:
    """``word`` (lower case) names a relative or a carer: listed, a plural of one, or one edit (a transposition
    counts as one) from one of 5+ letters when it is in no name list."""
    if word in RELATION_WORDS or (word.endswith("s") and word[:-1] in RELATION_WORDS):
        return True
    return len(word) >= 5 and not vocab.is_name_word(word) and within_edits(word, _RELATION_LONG, 1)


def edge_key(word: str) -> str:
    """A word of a name span as the edge lists write it: lower case, without a possessive or a quote ("Drs'" ->
    "drs", "DR'S" -> "dr")."""
    w = word.lower().replace("\u2019", "'")
    return w.removesuffix("'s").rstrip("'.")


def number_run(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The run of word characters and separators around ``text[start:end]`` ("8/84" around "/84"): its offsets and
    its text without separators at its ends."""
    lo, hi = start, end
    while lo > 0 and _RUN_CHAR.match(text[lo - 1]):
        lo -= 1
    while hi < len(text) and _RUN_CHAR.match(text[hi]):
        hi += 1
    return lo, hi, text[lo:hi].strip("/.:-")


def readable_date(surface: str) -> bool:
    """``surface`` can be read as a date, or is no bare number: anything with a letter or another character, a
    year or a compact date (4, 6 or 8 digits), a possible age over 89, month/day or day/month ("5/5", "4-6"),
    month/year ("4/97", "8/1984"; not "07-1530"), year-month, three parts that make a day ("3/14/23",
    "2023-03-14") and a range of two days with a dash between them ("6/30-7/2"). Not: a single number of 1-3 digits
    ("[6]am", "x [3]"), pairs no calendar has ("140/60"), other runs of parts ("06/12/18/24", "24/06/12/18")."""
    if not NUMBER_PIECE.fullmatch(surface):
        return True
    texts = [x for x in re.split(r"[/.-]", surface) if x]
    if not texts or not all(x.isdigit() for x in texts):
        return True
    n, size = [int(x) for x in texts], [len(x) for x in texts]

    def day(d: int, m: int) -> bool:
        return is_day_of_month(m, d)

    def year(y: int, digits: int) -> bool:  # "97", "1997"; not "1530" (a time)
        return digits == 2 or (digits == 4 and _YEARS[0] <= y <= _YEARS[1])

    if len(n) == 1:
        return size[0] in (4, 6, 8) or _AGE_OVER_89[0] <= n[0] <= _AGE_OVER_89[1]
    if len(n) == 2:
        a, b = n
        return day(a, b) or day(b, a) or (1 <= a <= 12 and year(b, size[1])) or (year(a, size[0]) and 1 <= b <= 12)
    if len(n) == 3:
        a, b, c = n
        if size[0] == 4:
            return year(a, 4) and day(c, b)
        return (day(b, a) or day(a, b)) and year(c, size[2])
    if len(n) == 4:  # a range of two days ("6/30-7/2"; not "24/06/12/18", times of a schedule)
        seps = re.findall(r"[/.-]+", surface.strip("/.-"))
        return (len(seps) == 3 and seps[1] == "-" and seps[0] == seps[2] != "-"
                and all(day(x, y) or day(y, x) for x, y in ((n[0], n[1]), (n[2], n[3]))))
    return False


def field_label_before(text: str, start: int) -> str | None:
    """The label word (lower case) of the form field whose value starts at ``start`` ("Sexo: H" -> "sexo", "Edad: 27"
    -> "edad"), read within the 24 characters before it; None when no label and separator end there."""
    m = _FIELD_LABEL_BEFORE.search(text, max(0, start - 24), start)
    return None if m is None else m.group("w").lower()
