"""IDs: MRN / account / health plan / license / device / vehicle numbers by context word and by shape; SSNs;
credit card numbers."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from presidio_analyzer import Pattern
from presidio_analyzer.predefined_recognizers import CreditCardRecognizer, UsSsnRecognizer

from dictionaries.medical_syntax import clinical_measures
from processors.regex.context import is_measure_token, measure_before, unit_after
from processors.regex.recognizer import (
    RE_FLAGS,
    REGEX_CASED,
    ClinicalPattern,
    ClinicalRecognizer,
    Hit,
    lower_keep_offsets,
)
from schemas.labels import Label, Subtype

#: ID context keywords: (lower-case keywords, subtype, strong, needs a marker). A strong keyword accepts short
#: tokens ("MRN 123"); a weak one needs 4+ characters with 3+ digits. Keywords that need a marker only count
#: when "#", "no", "number" or "id" follows ("chart #", "order no.", "case number").
_ID_KEYWORD_TABLE: tuple[tuple[str, Subtype | None, bool, bool], ...] = (
    ("license plate|plate|vin|vehicle id|vehicle identification number", Subtype.VEHICLE, True, False),
    ("mrn|medical record|medical records|med rec|patient id|pt id|pid|empi|mpi|medical record number",
     Subtype.MRN, True, False),
    ("mr|hospital|unit|chart|record|hosp", Subtype.MRN, True, True),
    ("acct|account|csn|fin|har|encounter|claim|invoice|billing", Subtype.ACCOUNT, True, False),
    ("enc|visit", Subtype.ACCOUNT, True, True),
    ("policy|member|subscriber|medicaid|medicare|mbi|hicn|beneficiary|payer id|member id|insurance id",
     Subtype.HEALTHPLAN, True, False),
    ("insurance|group|plan", Subtype.HEALTHPLAN, True, True),
    ("license|licence|lic|dea|npi|upin|ein|driver's license|drivers license|driver license|certificate|tax id",
     Subtype.LICENSE, True, False),
    ("dl|cert", Subtype.LICENSE, True, True),
    ("serial|s/n|sn|udi|implant id|device id|serial number", Subtype.DEVICE, True, False),
    ("device", Subtype.DEVICE, True, True),
    ("model|lot|catalog", Subtype.DEVICE, False, False),
    ("accession|specimen|requisition|specimen id|accession number", None, True, False),
    ("acc|spec|req", None, True, True),
    ("id|identifier|tracking|confirmation", None, False, False),
    ("sample|order|case|ref|reference|file", None, False, True),
)
#: Keywords that are IDs only in upper case ("MR #" vs "Mr.", "FIN" vs "fin", "SN", "DL").
_ID_KEYWORDS_UPPER = frozenset({"mr", "vin", "csn", "fin", "har", "mbi", "hicn", "dea", "npi", "upin", "ein", "dl",
                                "sn", "udi", "pid", "empi", "mpi"})
_ID_TOKEN = r"(?P<v>(?=[a-z0-9-]*\d)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?![\w-]|\.\d)"
_ID_TAIL = re.compile(
    r"(?P<sep>(?:[ \t]*(?:[#:=-]|(?:no\.?|num(?:ber)?\.?|id\.?|is)(?![a-z])))*)[ \t]*" + _ID_TOKEN, RE_FLAGS
)
_ID_MARKER = re.compile(r"#|no|num|id", RE_FLAGS)


@functools.cache
def _id_keyword_automaton() -> Any:
    """Aho-Corasick automaton over the ID keywords: one pass instead of a ~100-way regex alternation."""
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for words, subtype, strong, marker in _ID_KEYWORD_TABLE:
        for word in words.split("|"):
            automaton.add_word(word, (len(word), subtype, strong, marker))
    automaton.make_automaton()
    return automaton


_YEAR_ONLY = re.compile(r"(?:19|20)\d\d")
#: Gene variants that look like codes: nucleotide "G20210A", protein "V600E".
_MUTATION = re.compile(r"[ACGTU]\d+[ACGTU]|[A-Z]\d{1,4}[A-Z]")
#: Prefixes of non-patient codes that look like IDs (trials, dbSNP, PubMed, gene/protein accessions).
_CODE_PREFIX = re.compile(r"(?:NCT|RS|PMID|PMC|ISRCTN|NM|NP|NC|NR|XM|ENSG|ENST|HGNC|OMIM|MIM|ICD|CPT)\d", RE_FLAGS)


def _looks_like_phone_or_date(value: str) -> bool:
    """Shapes other recognizers own (SSN 3-2-4, phone 3-3-4, dates): the generic digit-group ID skips them."""
    lengths = tuple(len(p) for p in value.split("-"))
    return lengths in ((3, 2, 4), (3, 3, 4), (4, 2, 2), (2, 2, 4), (1, 2, 4), (2, 1, 4), (2, 2, 2), (1, 1, 4),
                       (1, 2, 2), (2, 1, 2), (1, 1, 2))


_GLUED = re.compile(r"(?P<label>[A-Za-z]{2,})[-:]?(?P<value>\d{1,3}(?:-\d{1,3})*)")


def _glued_measure(value: str) -> bool:
    """A vital-sign label written onto its value or range ("HR-110-133", "BP130-140", "RATE98-100"): every
    number of three digits at most, which no record number is."""
    m = _GLUED.fullmatch(value)
    return m is not None and clinical_measures().label.fullmatch(m.group("label").lower()) is not None


class IdRecognizer(ClinicalRecognizer):
    """MRN / account / health plan / license / device / vehicle / other IDs after a context word, and
    identifier shapes without one (7+ digit numbers, letter+digit codes) at a lower score."""

    ENTITY = "ID"
    LABEL = Label.ID
    PATTERNS: list[Pattern] = [
        ClinicalPattern("# id", r"(?<![\w#&])#[ \t]*" + _ID_TOKEN, 0.75, kind="hash", trigger=("#",)),
        ClinicalPattern("long number", r"(?<![\w.,#/:-])\d{7,}(?![\w-]|[.,]\d)", 0.4, kind="shape"),
        ClinicalPattern(  # A1234567, AB-123-4567, S19-12345, 8F3K99217
            "letters + digits", r"(?<![\w.-])(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9][A-Z0-9-]{4,33}(?![\w-])",
            0.4, kind="code", flags=REGEX_CASED),
        ClinicalPattern(
            "digit groups", r"(?<![\w.-])\d{2,6}-\d{2,6}-\d{2,6}(?:-\d{1,6})?(?![\w-]|\.\d)", 0.35, kind="groups"),
    ]

    def find(self, text: str, lower: str | None = None) -> Iterator[Hit]:
        lower = lower_keep_offsets(text) if lower is None else lower
        yield from self._keyword_ids(text, lower)
        yield from super().find(text, lower)

    def _keyword_ids(self, text: str, lower: str) -> Iterator[Hit]:
        """IDs right after a context keyword ("MRN: 1234567", "acct # A-99812", "Medicare ID 1EG4TE5MK73")."""
        n = len(text)
        for last, (length, subtype, strong, needs_marker) in _id_keyword_automaton().iter(lower):
            kw_start, kw_end = last + 1 - length, last + 1
            if (kw_start > 0 and lower[kw_start - 1].isalnum()) or (kw_end < n and lower[kw_end].isalnum()):
                continue
            if lower[kw_start:kw_end] in _ID_KEYWORDS_UPPER and not text[kw_start:kw_end].isupper():
                continue
            tail = _ID_TAIL.match(text, kw_end)
            if tail is None or (needs_marker and not _ID_MARKER.search(tail.group("sep"))):
                continue
            hit = self._token_hit(text, tail.start("v"), tail.end("v"), subtype, strong, min_len=4)
            if hit is not None:
                yield hit

    @staticmethod
    def _token_hit(
        text: str, start: int, end: int, subtype: Subtype | None, strong: bool, min_len: int
    ) -> Hit | None:
        value = text[start:end]
        if is_measure_token(value) or unit_after(text, end) or _YEAR_ONLY.fullmatch(value):
            return None
        if strong:
            if len(value) < 3:
                return None
        elif len(value) < min_len or sum(c.isdigit() for c in value) < 3:
            return None
        return Hit(start, end, Label.ID, subtype, 0.9 if strong else 0.75)

    def check(self, text: str, match: Any, pattern: ClinicalPattern) -> Iterator[Hit]:
        start, end = self.span_of(match, pattern)
        value = text[start:end]
        kind = pattern.kind
        if kind == "hash":
            hit = self._token_hit(text, start, end, None, False, min_len=5)
            if hit is not None:
                yield hit
            return
        if _CODE_PREFIX.match(value) or unit_after(text, end):
            return
        if kind == "code" and not self._code_shape(value):
            return
        if kind == "groups" and (measure_before(text, start) or _looks_like_phone_or_date(value)):
            return
        yield Hit(start, end, Label.ID, None, pattern.score)

    @staticmethod
    def _code_shape(value: str) -> bool:
        """Letter+digit codes that look like record numbers, not gene names or lab codes ("CYP2D6", "T2N0M0")."""
        if is_measure_token(value) or _MUTATION.fullmatch(value) or _glued_measure(value):
            return False
        digits = sum(c.isdigit() for c in value)
        letters = sum(c.isalpha() for c in value)
        if "-" in value:
            groups = value.split("-")
            return (digits >= 5 and all(groups) and value[0].isalpha()
                    and any(g.isdigit() and len(g) >= 3 for g in groups))
        if value[0].isalpha():
            lead = len(value) - len(value.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
            if lead <= 3 and value[lead:].isdigit():
                return len(value) - lead >= 5  # A1234567, MRN12345
        return len(value) >= 6 and digits >= 4 and letters >= 1


class SsnRecognizer(ClinicalRecognizer, UsSsnRecognizer):
    """SSNs (ID/SSN). Presidio's invalidation (000/666 area, placeholder numbers) lowers the score instead of
    dropping the match: a placeholder-looking SSN in a note is still redacted."""

    ENTITY = "US_SSN"
    LABEL = Label.ID
    SUBTYPE = Subtype.SSN
    CONTEXT = ["ssn", "ss", "ss#", "social security", "soc sec", "social", "ssn#"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern("NNN-NN-NNNN", r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])", 0.85, context_score=0.95),
        ClinicalPattern("NNN NN NNNN", r"(?<![\w.-])\d{3}(?P<s>[ .])\d{2}(?P=s)\d{4}(?![\w-]|\.\d)", 0.5,
                        context_score=0.9),
        ClinicalPattern("9 digits", r"(?<![\w.-])\d{9}(?![\w-]|\.\d)", 0.2, context_score=0.9, needs_context=True,
                        trigger=("ssn", "ss#", "ss #", "social", "soc sec")),
        ClinicalPattern("masked", r"(?<![\w*-])(?:\*{3}|[xX]{3}|#{3})-?(?:\*{2}|[xX]{2}|#{2})-?\d{4}(?![\w-])", 0.8,
                        trigger=("***", "xxx", "###")),
    ]

    def presidio_score(self, value: str, score: float) -> float | None:
        if not value[:3].isdigit():
            return score  # masked form: Presidio's digit checks do not apply
        return 0.5 if self.invalidate_result(value) else score


class CreditCardIdRecognizer(ClinicalRecognizer, CreditCardRecognizer):
    """Credit card numbers (an account number under Safe Harbor): Presidio's pattern and Luhn check."""

    ENTITY = "CREDIT_CARD"
    LABEL = Label.ID
    SUBTYPE = Subtype.ACCOUNT
    replacement_pairs: list[tuple[str, str]] = [("-", ""), (" ", "")]  # Presidio's, for the Luhn check
    CONTEXT = ["credit", "card", "visa", "mastercard", "cc", "amex", "discover", "jcb", "diners", "maestro"]
    PATTERNS: list[Pattern] = [
        ClinicalPattern(
            "credit card", r"(?<![\w-])(?!1\d{12}(?!\d))(?:4\d{3}|5[0-5]\d{2}|6\d{3}|1\d{3}|3\d{3})[- ]?\d{3,4}[- ]?"
            r"\d{3,4}[- ]?\d{3,5}(?![\w-])", 0.5, context_score=0.95),
    ]

    def presidio_score(self, value: str, score: float) -> float | None:
        return 0.9 if self.validate_result(value) else None
