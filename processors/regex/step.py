"""regex: identifier shapes for the HIPAA Safe Harbor categories.

Dates (every common clinical format, with attached times), phone/fax/pager numbers, MRNs and other IDs (by
context word and by shape), SSNs, credit cards, email, URL, IP, ZIP, street addresses, "City, ST 12345", and
ages over 89.

Recognizers are Presidio ``PatternRecognizer`` subclasses declared as data (``PATTERNS``, ``CONTEXT``, label and
subtype); the SSN, email, IP and credit-card ones inherit Presidio's predefined recognizers for their validation
(SSN invalidation, offline-TLD email check, ``ipaddress`` check, Luhn). Clinical checks look at the text AROUND a
match, which Presidio's ``validate_result`` cannot: "3/6" before "murmur" is a grade, "8/9" after "Apgar" a score,
"555-1234" followed by "mg" a range. The detector evaluates the recognizers' compiled patterns itself: Presidio's
AnalyzerEngine needs spaCy artifacts for context words and would cost ~100x the 1-2 ms per note budget. For speed,
patterns start on a cheap anchor (a digit, "@", a month name, a ZIP) and ``check`` extends the span around it.

Scores (the ensemble's default threshold for "regex" is 0.3): context-confirmed shapes 0.85-0.95, unambiguous
shapes 0.7-0.9, shape-only guesses 0.35-0.5, and ambiguous shapes that need a second detector's vote 0.2-0.25.

This module is the engine and the registered step; the recognizers live in one module per family (see the
package docstring).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from processors.pipeline import BuildContext, Note, register
from processors.regex.ages import AgeRecognizer
from processors.regex.dates import DateRecognizer
from processors.regex.ids import CreditCardIdRecognizer, IdRecognizer, SsnRecognizer
from processors.regex.locations import LocationRecognizer
from processors.regex.phones import PhoneRecognizer
from processors.regex.recognizer import ClinicalRecognizer, Hit, lower_keep_offsets
from processors.regex.web import EmailIdRecognizer, IpIdRecognizer, UrlRecognizer
from schemas.labels import Label, Subtype
from schemas.models import Span

__all__ = ["RECOGNIZER_CLASSES", "Hit", "RegexDetector", "merge_same_label", "recognizers"]

logger = logging.getLogger(__name__)

SOURCE = "regex"

RECOGNIZER_CLASSES: tuple[type[ClinicalRecognizer], ...] = (
    DateRecognizer, AgeRecognizer, PhoneRecognizer, SsnRecognizer, IdRecognizer, CreditCardIdRecognizer,
    EmailIdRecognizer, UrlRecognizer, IpIdRecognizer, LocationRecognizer,
)


@functools.cache
def recognizers() -> tuple[ClinicalRecognizer, ...]:
    """The recognizers, compiled once per process."""
    return tuple(cls() for cls in RECOGNIZER_CLASSES)


def merge_same_label(hits: Iterable[Hit]) -> list[Hit]:
    """Drop hits contained in a hit of the same label; the container keeps the best score (and the subtype of
    the best-scored hit that has one). Overlaps across labels stay: the ensemble decides."""
    ordered = sorted(hits, key=lambda h: (h.start, -h.end, -h.score))
    kept: list[Hit] = []
    widest: dict[Label, int] = {}  # label -> index in kept of the hit reaching furthest right so far
    for hit in ordered:
        i = widest.get(hit.label)
        if i is not None and hit.end <= kept[i].end:  # kept[i] starts no later: it contains hit
            outer = kept[i]
            best = outer if outer.score >= hit.score else hit
            subtype = best.subtype or outer.subtype or hit.subtype
            kept[i] = Hit(outer.start, outer.end, outer.label, subtype, max(outer.score, hit.score))
            continue
        kept.append(hit)
        widest[hit.label] = len(kept) - 1
    return sorted(kept, key=lambda h: (h.start, h.end))


@register("regex")
class RegexDetector:
    """Identifier shapes (HIPAA Safe Harbor) as candidate spans with ``source="regex"``."""

    name = "regex"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: Labels to emit (None: all).
        entities: list[Label] | None = None
        #: Subtypes never emitted (e.g. ["STATE"]: Safe Harbor allows states).
        exclude_subtypes: list[Subtype] = Field(default_factory=list)
        #: Candidates below this score are not emitted at all (the ensemble applies its own threshold).
        min_score: float = Field(default=0.0, ge=0.0, le=1.0)

    def __init__(self, config: Config | None = None, ctx: BuildContext | None = None) -> None:
        self.config = config or self.Config()
        entities = self.config.entities
        self._recognizers = tuple(r for r in recognizers() if entities is None or r.LABEL in entities)

    def detect(self, text: str) -> list[Span]:
        """Candidate spans (offsets into ``text``), sorted by start; overlaps across labels are kept."""
        lower = lower_keep_offsets(text)
        hits: list[Hit] = []
        for rec in self._recognizers:
            hits.extend(rec.find(text, lower))
        excluded = self.config.exclude_subtypes
        return [
            Span(start=h.start, end=h.end, label=h.label, subtype=h.subtype, score=round(min(1.0, h.score), 3),
                 source=SOURCE)
            for h in merge_same_label(hits)
            if h.score >= self.config.min_score and (h.subtype is None or h.subtype not in excluded)
        ]

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [note.add_spans(self.detect(note.text)) for note in notes]
