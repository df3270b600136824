"""Phone, fax and pager numbers: NANP, international, 7-digit, extensions, internal pagers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import Pattern

from processors.regex.context import measure_before, unit_after
from processors.regex.recognizer import RE_FLAGS, ClinicalPattern, ClinicalRecognizer, Hit
from schemas.labels import Label, Subtype

_PHONE_TAIL = r"(?:[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,6})?"
_PHONE_END = r"(?![\w-]|\.\d)"
_PHONE_PREFIX = re.compile(r"(?<![\w.+-])(?:\+?1[ \t.-]?|\+1[ \t]*)$")
#: The SSN's shape (3-2-4 digits with hyphens) is the SSN recognizer's: a loose digit grouping that is exactly it
#: is no phone, even after a phone word ("number 123-45-6789"), so the span's type stays ID/SSN.
_SSN_SHAPE = re.compile(r"\d{3}-\d{2}-\d{4}")


_DIGIT_BEFORE = re.compile(r"\d[ \t.-]*$")
_LABEL_BEFORE = re.compile(r"(?:\b([chwmofp])\b\)?|(#)|\b(no)\.?|\b(ph)|\b(at))[ \t]*[:.)]?[ \t]*$", RE_FLAGS)
_RESULT_BEFORE = re.compile(r"(?:\d|%|/[a-z]{1,3}|\b(?:ref|range|normal|nl))[ \t]*$", RE_FLAGS)
_ADJACENT_ONLY = frozenset({"c", "h", "w", "m", "o", "f", "p", "#", "no", "ph", "at"})
_CODE_PREFIX_BEFORE = re.compile(r"\b(?:omim|mim|pmid|doi)[ \t:#]*$", RE_FLAGS)
#: Context words that are about telephones (for the any-grouping pattern, which needs one).
_PHONE_WORDS = frozenset("""
phone ph tel telephone tele cell cellphone mobile mob call called calls contact reach reached number pager pgr
beeper fax facsimile hotline voicemail vm dial callback messages answering desk""".split())


class PhoneRecognizer(ClinicalRecognizer):
    """Phone / fax / pager numbers (NANP, international with +, 7-digit, extensions, internal pagers)."""

    ENTITY = "PHONE_NUMBER"
    LABEL = Label.PHONE
    CONTEXT = list("""
phone ph tel telephone tele cell cellphone mobile mob home work office call called calls contact reach reached number
no # pager page paged pgr beeper beep fax facsimile ext extension hotline voicemail vm text txt dial line callback
messages answering desk at c h w m o f p""".split())
    CONTEXT_WINDOW = 28
    PATTERNS: list[Pattern] = [
        ClinicalPattern(  # (617) 555-1234
            "(NNN) NNN-NNNN", r"\(\d{3}\)[ \t]*\d{3}[ \t.-]?\d{4}" + _PHONE_TAIL + _PHONE_END, 0.85,
            context_score=0.95, kind="nanp"),
        ClinicalPattern(  # 617-555-1234, 617.555.1234, 617 555 1234 (score by separators in check)
            "NNN-NNN-NNNN", r"(?<![\w.+/])\d{3}(?P<s1>[ \t.-])\d{3}(?P<s2>[ \t.-])\d{4}" + _PHONE_TAIL
            + _PHONE_END, 0.8, context_score=0.95, kind="nanp"),
        ClinicalPattern(
            "international", r"(?<![\w+])\+\d{1,3}[ \t.-]?(?:\(\d{1,4}\)|\d{1,4})(?:[ \t.-]?\d{2,4}){2,4}"
            + _PHONE_TAIL + _PHONE_END, 0.7, context_score=0.9, trigger=("+",), kind="intl"),
        ClinicalPattern(  # "Mobile: 0496 46 46 70", "call me on (64) 3591-3246": any grouping, phone word required
            "grouped digits", r"(?<![\w.+/-])(?:\(\d{1,4}\)[ \t]?)?\d{2,5}(?:[ \t.-]\d{2,5}){1,4}" + _PHONE_END,
            0.2, context_score=0.85, needs_context=True, kind="grouped"),
        ClinicalPattern(
            "10 digits", r"(?<![\w.+/-])\d{10,11}" + _PHONE_END, 0.2, context_score=0.85, needs_context=True,
            kind="ten"),
        ClinicalPattern(
            "NNN-NNNN", r"(?<![\w.+/-])[2-9]\d{2}[.-]\d{4}" + _PHONE_TAIL + _PHONE_END, 0.35, context_score=0.85,
            kind="seven"),
        ClinicalPattern(
            "extension", r"\b(?:ext\.?|extension)[ \t]*(?P<v>\d{2,6})\b", 0.8, kind="ext"),
        ClinicalPattern(
            "pager", r"\b(?:pager|pgr|beeper|beep)[ \t]*(?:#|no\.?|number|num)?[ \t]*[:#]?[ \t]*"
            r"(?P<v>\d[\d-]{2,10}\d)(?![\w-])", 0.9, kind="pager", trigger=("pager", "pgr", "beep")),
        ClinicalPattern(  # "p03046", "P#6952": pager shorthand (never "P 88", a pulse)
            "p#", r"\bp(?:#[ \t]*|(?=\d{4,6}\b))(?P<v>\d{4,6})\b", 0.75, kind="pager"),
    ]

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = self.span_of(match, pattern)
        kind = pattern.kind
        if kind == "pager":
            yield Hit(start, end, Label.PHONE, Subtype.PAGER, pattern.score)
            return
        context = self.context_before(text, start)
        if kind == "ext":
            if not unit_after(text, end):
                yield Hit(start, end, Label.PHONE, self.subtype_for(context), pattern.score)
            return
        # A formatted NANP number ("212-555-0187") is a phone even after a measurement word ("ref", "p"):
        # only the ambiguous shapes (7 digits, bare digit runs, loose groupings) yield to one.
        if context is None and (unit_after(text, end) or (kind != "nanp" and measure_before(text, start))):
            return
        digits = sum(c.isdigit() for c in text[start:end])
        if kind == "ten" and digits == 11 and text[start] != "1":
            return
        if kind in ("intl", "grouped") and not 7 + (kind == "intl") <= digits <= 15:
            return
        if kind == "intl" and _CODE_PREFIX_BEFORE.search(text, max(0, start - 8), start):
            return  # "OMIM +603967"
        if kind == "grouped" and (context not in _PHONE_WORDS or _SSN_SHAPE.fullmatch(text, start, end)):
            return
        score = pattern.score
        if kind == "nanp":
            prefix = _PHONE_PREFIX.search(text, max(0, start - 4), start)
            if prefix is not None:
                start = int(prefix.start())
            elif start > 0 and text[start - 1] == "-":
                return  # the tail of a longer dash-separated number
            if "s1" in match.re.groupindex and (match.group("s1") != match.group("s2") or match.group("s1") in " \t"):
                score = 0.45  # "617 555 1234" / mixed separators: plausible, not certain
        if context is not None:
            score = max(score, pattern.context_score or score)
        elif pattern.needs_context:
            return
        if kind == "seven" and context is None:
            if _DIGIT_BEFORE.search(text, max(0, start - 4), start):
                return  # the tail of a longer number sequence
            if text[start - 1:start] == "(" and text[end:end + 1] == ")" and _RESULT_BEFORE.search(
                    text, max(0, start - 16), start - 1):
                score = 0.2  # "588 ng/dl (270-1734)": a reference range
        yield Hit(start, end, Label.PHONE, self.subtype_for(context), score)

    def subtype_for(self, context: str | None) -> Subtype | None:
        if context in ("fax", "facsimile", "f"):
            return Subtype.FAX
        if context in ("pager", "page", "paged", "pgr", "beeper", "beep", "p"):
            return Subtype.PAGER
        return None

    def context_before(self, text: str, start: int, window: int | None = None) -> str | None:
        # Single letters ("c: 555-1234", "(h)"), "#", "no", "ph" (also pH) and "at" count only right before it.
        label = _LABEL_BEFORE.search(text, max(0, start - 6), start)
        if label is not None:
            return next(g for g in label.groups() if g).lower()
        if self._context is None:
            return None
        return self._context.last_before(text, start, window or self.CONTEXT_WINDOW, _ADJACENT_ONLY)
