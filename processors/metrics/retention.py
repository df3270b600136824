"""Number and word retention that sees the pipeline's own over-redaction (issue 14).

Every word token of the original (a run of letters/digits, as the gold scoring counts tokens) is either
kept (no change of the output touches it), lost (changed, and nothing says it was an identifier), or
removed for a reason (changed, and the span around it carries identifier evidence of its own). Retention
is ``kept / (kept + lost)``: what the output kept of the note's non-identifier content, as far as the
pipeline can tell without gold.

Numbers (tokens with a digit) the output changed are removed for a reason when the span has an identifier cue of its own
(``dictionaries.medical_syntax.identifier_cue``: a date shape, a month name or an ordinal day, "DOB" / "MRN" /
"pager" before it, a phone shape, an e-mail / URL / IP / street address, five or more digits, an age over
89; a measurement value such as "CPAP 5/5" is never read as a date there), and lost when it has none: clock
times, decimals and ranges are not Safe Harbor identifiers. Lost numbers in clinical syntax
(``dictionaries.medical_syntax.measurement_value``: a value after a vitals / ventilator / lab label, with a
unit, a range in such context; or the medical syntax regexes: doses, labs, scores, schedule times) are
counted apart (``lost_clinical``).

Words the output changed are removed for a reason when their span has an identifier cue (the words of a
date, an address); otherwise lost when they are clinical vocabulary (the curated jargon list always; the
medical vocabulary and clinical-text words of ``dictionaries.jargon.ClinicalWords``; unambiguous medical
dictionary terms) or common words (Zipf >= ``common_word_zipf``), unless a name cue says otherwise (a
title before, a credential after, a capitalised first name or surname); other changed words (names and
proper nouns the vocabularies do not explain) are removed for a reason, and so are the common words and
initials of a span that holds such a name ("Kowalczyk Medical Center", "J. Smith"; never jargon). Tokens of the message's
own identifiers (HL7 PID/NK1/PV1, the JSON patient block) are always removed for a reason.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dictionaries import vocab
from dictionaries.medical_syntax import identifier_cue, measurement_value
from dictionaries.text import TOKEN, name_context
from processors.risk import WordJudge, caps_line
from processors.spans import Intervals, OffsetMap
from schemas.models import Span

T = TypeVar("T")

#: medical syntax kinds that make a number clinical (gene symbols hold letters and say nothing about numbers)
_NUMBER_SYNTAX = frozenset({"dose", "vital", "score", "ratio", "frequency", "time", "lab", "vertebra", "exam",
                            "variant", "accession", "rsid", "drug-code"})
_SYNTAX_MARGIN = 28


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """Kept, lost and removed-for-a-reason tokens of one kind (numbers or words)."""

    kept: int = 0
    lost: int = 0
    removed: int = 0
    #: lost tokens that are clinical vocabulary (words) or in clinical syntax (numbers)
    lost_clinical: int = 0

    @property
    def counted(self) -> int:
        return self.kept + self.lost

    @property
    def retention(self) -> float | None:
        return self.kept / self.counted if self.counted else None


@dataclass(frozen=True, slots=True)
class Retention:
    numbers: TokenCounts
    words: TokenCounts
    #: original ranges of the numbers that count (kept or lost): clinical content for CIRE
    number_ranges: tuple[tuple[int, int], ...]


def _token_ranges(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(text)]


def count_retention(text: str, offsets: OffsetMap, spans: Sequence[Span], message: Intervals, *,
                    syntax: Callable[[str, int, int], Sequence[tuple[int, int, str]]],
                    medical_terms: Sequence[Any], judge: WordJudge) -> Retention:
    """Kept / lost / removed-for-a-reason number and word tokens of ``text`` (see the module docstring).

    ``spans``: the final spans (what the output replaced); ``message``: the message's own identifiers in the
    original; ``syntax(text, start, end)``: medical syntax spans of a window; ``medical_terms``: the
    original's medical-dictionary matches (objects with ``start``, ``end``, ``ambiguous``)."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    starts = [s.start for s in ordered]
    terms = Intervals((m.start, m.end) for m in medical_terms if not m.ambiguous)
    num = {"kept": 0, "lost": 0, "removed": 0, "lost_clinical": 0}
    word = dict(num)
    ranges: list[tuple[int, int]] = []
    pending: list[tuple[int, int, Span | None, bool]] = []
    named: set[tuple[int, int]] = set()  # spans with a word removed as a name

    def enclosing(a: int, b: int) -> Span | None:
        j = bisect.bisect_right(starts, a)
        for s in ordered[max(0, j - 8):j + 1]:  # merged spans never overlap; a few suffice
            if s.start < b and a < s.end:
                return s
        return None

    # asked for each token of a span: computed once per span
    has_cue = _per_span(lambda s: identifier_cue(text, s.start, s.end) is not None)
    titled = _per_span(lambda s: name_context(text, s.start, s.end, personal_titles_only=True))
    number_syntax = _per_span(lambda s: Intervals(
        (lo, hi) for lo, hi, kind in syntax(text, max(0, s.start - _SYNTAX_MARGIN), min(len(text), s.end + _SYNTAX_MARGIN))
        if kind in _NUMBER_SYNTAX and "\n" not in text[lo:hi]))

    def clinical_syntax(span: Span, a: int, b: int) -> bool:
        return number_syntax(span).overlaps(a, b)

    for a, b in _token_ranges(text):
        is_number = any(map(str.isdigit, text[a:b]))
        counts = num if is_number else word
        if not offsets.touched(a, b):
            counts["kept"] += 1
            if is_number:
                ranges.append((a, b))
            continue
        if message.overlaps(a, b):
            counts["removed"] += 1
            continue
        span = enclosing(a, b)
        if is_number:
            if span is None:
                lost, clinical = True, False
            else:
                # clinical syntax or not, a number the output changed is lost unless its span has an identifier
                # cue of its own (a measurement value is never read as a date there: identifier_cue checks); whether
                # it was clinical matters only when it is lost
                lost = not has_cue(span)
                clinical = lost and (measurement_value(text, a, b) or clinical_syntax(span, a, b))
            if lost:
                ranges.append((a, b))
        else:
            verdict = _word_lost(text, a, b, span, terms, judge, titled=titled, has_cue=has_cue)
            if verdict is None or (verdict[0] and span is not None and not judge.is_jargon(text[a:b])):
                # a letter, or a word that is no name alone: it follows the rest of its span
                pending.append((a, b, span, verdict[1] if verdict is not None else False))
                continue
            lost, clinical = verdict
            if not lost and span is not None:
                named.add((span.start, span.end))
        if lost:
            counts["lost"] += 1
            counts["lost_clinical"] += clinical
        else:
            counts["removed"] += 1
    # initials and common words go with the name beside them ("J. Smith", "Mercy General Hospital", "Oak Street");
    # alone they are abbreviations and ordinary text
    for _a, _b, span, clinical in pending:
        if span is not None and (span.start, span.end) in named:
            word["removed"] += 1
        else:
            word["lost"] += 1
            word["lost_clinical"] += clinical
    return Retention(TokenCounts(**num), TokenCounts(**word), tuple(ranges))


def _per_span(fn: Callable[[Span], T]) -> Callable[[Span], T]:
    """``fn`` memoised by the span's offsets."""
    memo: dict[tuple[int, int], T] = {}

    def get(span: Span) -> T:
        key = (span.start, span.end)
        if key not in memo:
            memo[key] = fn(span)
        return memo[key]

    return get


def _word_lost(text: str, a: int, b: int, span: Span | None, terms: Intervals,
               judge: WordJudge, *, titled: Callable[[Span], bool], has_cue: Callable[[Span], bool],
               ) -> tuple[bool, bool] | None:
    """(lost, clinical) for a changed word token; None for a single letter (an initial or an abbreviation:
    it follows the other words of its span). ``titled`` / ``has_cue``: the span's personal-title context and
    identifier cue (memoised per span by the caller)."""
    w = text[a:b]
    if span is not None and titled(span):
        return False, False  # "Dr. Neo", "Foley, RN": a name cue of its own
    if len(w) < 2:
        return None
    if span is not None and has_cue(span):
        return False, False  # a word of a date, an address, a record number ("12th of May", "Monday 3/4")
    if judge.is_jargon(w):
        return True, True  # the curated list wins over name lists ("levo", "aline", "wean")
    # capitals say something about names only in mixed-case text
    proper = w[:1].isupper() and not caps_line(text, a)
    clinical = terms.overlaps(a, b) or judge.words.reason(w) is not None
    if clinical or vocab.is_common_word(w, judge.common_word_zipf):
        if proper and vocab.is_name_like(w):
            return False, False  # "Will", "Iris": used as first names at least as much as as words
        return True, clinical
    if judge.is_name(w) or proper:
        return False, False  # a first name or surname, or a capitalised word no vocabulary knows
    return True, False  # lower-case (or ALL-CAPS) text no vocabulary knows: misspellings, clipped words
