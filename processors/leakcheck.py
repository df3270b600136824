"""The ``leakcheck`` step: re-scan the OUTPUT for the message's own identifiers and identifier shapes.

Scans of ``note.output``:

- ``message``: ``dictionaries.message.find_message_identifiers`` with the note's own patient block
  (exact + fuzzy at ``fuzzy_threshold``): any of the patient's / relatives' identifiers still there.
  (the pipeline's shared name rules). Provider names count only when the pipeline's policy redacts
  providers; the facility name only with
  ``facility``; states and countries never (Safe Harbor allows them).
- ``strict_names`` (part of the message scan): the people's name words once more, with context rules
  that know the output: a common-word surname ("JONES", Zipf >= 4) right after a replaced given name
  ("[NAME] JONES", "BRYCE Z. JONES") is a leak even in an ALL-CAPS line, where the dictionary's own
  rules (tuned for precision on the original) let it pass.
- ``shapes``: a regex detector built from the registry with this step's own ``shape_options`` (default: the
  regex step's defaults; set them to match a customised ``regex`` step), findings with score
  >= ``shape_min_score``, run on the output with replacement regions and tags masked (``mask``): a
  surrogate must not lend context to its neighbours ("NGT, KY" is not "City, ST").

Findings inside a replacement region (surrogates are realistic identifiers by design) or overlapping a
bracket tag ("[NAME]", "[DATE 2019]") are discarded, as are bare years (Safe Harbor keeps years) and,
with ``ignore_dropped``, shape findings where an earlier step deliberately dropped a candidate (recovery
judged it a medical term). What remains becomes ``note.leak_findings``; ``note.leak`` is True when any.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dictionaries.message import find_message_identifiers
from dictionaries.text import line_bounds, line_fact
from processors.pipeline import BuildContext, LeakFinding, Note, Replacement, build_processor, register
from processors.spans import ByStart, SpanDetector
from schemas.errors import ProcessingError
from schemas.labels import Label, Subtype
from schemas.models import NoteIn, PersonName, Span

logger = logging.getLogger(__name__)

_TAG_RE = re.compile(r"\[[A-Z][A-Z0-9_+\- ]*\]")
_YEAR_RE = re.compile(r"(?:1[89]|20|21)\d\d")
#: Safe Harbor allows states and countries: never a leak.
_ALLOWED_SUBTYPES = frozenset({Subtype.STATE.value, Subtype.COUNTRY.value})
_DEFAULT_LABELS = ["NAME", "PHONE", "ID", "EMAIL", "DATE", "URL", "IP", "AGE", "LOCATION"]


def excluded_regions(output: str, replacements: Sequence[Replacement]) -> list[tuple[int, int]]:
    """Sorted, merged output regions a finding must not touch: replacements and bracket tags."""
    regions = [(r.out_start, r.out_end) for r in replacements if r.out_end > r.out_start]
    regions.extend((m.start(), m.end()) for m in _TAG_RE.finditer(output))
    return merge_regions(regions)


def merge_regions(regions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint union of half-open regions."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(regions):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


#: Replacement regions and tags are masked with a character that is neither a word character, a digit nor
#: a space, so shape context never comes from our own output ("NGT, KY" with a surrogate state code
#: "KY" is not "City, ST") and offsets stay those of the output.
MASK = "\u00b7"


def mask(output: str, regions: Sequence[tuple[int, int]]) -> str:
    """``output`` with every region overwritten by ``MASK`` (same length, same offsets)."""
    if not regions:
        return output
    parts: list[str] = []
    pos = 0
    for start, end in regions:
        parts.append(output[pos:start])
        parts.append(MASK * (end - start))
        pos = end
    parts.append(output[pos:])
    return "".join(parts)


def touches(regions: Sequence[tuple[int, int]], starts: Sequence[int], start: int, end: int) -> bool:
    """True when ``[start, end)`` overlaps one of the sorted, disjoint ``regions`` (``starts`` = their
    start offsets, for bisection)."""
    i = bisect.bisect_right(starts, start) - 1
    for j in (i, i + 1):
        if 0 <= j < len(regions) and regions[j][0] < end and start < regions[j][1]:
            return True
    return False


def to_output(pos: int, replacements: Sequence[Replacement]) -> int:
    """Map an ORIGINAL offset outside every replaced span to its OUTPUT offset (text between spans is
    copied verbatim, so only the length changes of earlier replacements move it)."""
    delta = 0
    for r in replacements:
        if r.span.end <= pos:
            delta += (r.out_end - r.out_start) - (r.span.end - r.span.start)
        else:
            break
    return pos + delta


def _caps_line(line: str) -> bool:
    """More than 80% of the line's letters are capitals."""
    letters = [c for c in line if c.isalpha()]
    return bool(letters) and sum(c.isupper() for c in letters) / len(letters) > 0.8


_TITLE_WORDS = frozenset({"dr", "doctor", "prof", "mr", "mrs", "ms", "miss", "mx"})
_SEP_RE = re.compile(r"[\s.,]{0,3}")
#: A name word: letters, with inner apostrophes ("O'Brien"); hyphenated names are two words.
_WORD_RE = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


@dataclass(frozen=True, slots=True)
class NamePart:
    """A name word of one of the message's people: ``given`` (given, middle, nickname) or family."""

    word: str
    subtype: str
    given: bool


def name_parts(note: NoteIn, *, providers: bool, min_len: int) -> dict[str, NamePart]:
    """Lowercase word -> part, for the patient's, relatives' and (optionally) providers' names."""
    people: list[tuple[PersonName, str]] = []
    if note.patient is not None:
        people += [(n, Subtype.PATIENT.value) for n in note.patient.names]
        people += [(r.name, Subtype.RELATIVE.value) for r in note.patient.relatives if r.name is not None]
    if providers:
        people += [(p.name, Subtype.PROVIDER.value) for p in note.providers if p.name is not None]
    out: dict[str, NamePart] = {}
    for name, subtype in people:
        for value, given in ((name.family, False), (name.given, True), (name.middle, True),
                             *((nick, True) for nick in name.nicknames)):
            for word in _WORD_RE.findall(value or ""):
                if len(word) >= min_len and word.casefold() not in out:
                    out[word.casefold()] = NamePart(word, subtype, given)
    return out


def strict_name_hits(
    output: str, parts: dict[str, NamePart], regions: Sequence[tuple[int, int]],
    name_regions: Sequence[tuple[int, int]], common: Callable[[str], bool],
) -> list[tuple[int, int, NamePart]]:
    """Whole-word occurrences of the people's name words outside ``regions``. Uncommon words count in
    any case. Common words ("Will", "Jones" at Zipf >= 4) count when capitalised and either next to a
    replaced name on the right side (given name before it, family name after it or before ", First"),
    after a title ("DR WOOD"), or Title-case inside a sentence of a mixed-case line."""
    if not parts:
        return []
    starts = [r[0] for r in regions]
    ends_at = {e for _, e in name_regions}
    starts_at = {s for s, _ in name_regions}
    out: list[tuple[int, int, NamePart]] = []
    for m in _WORD_RE.finditer(output):
        word = m.group(0)
        part = parts.get(word.casefold())
        if part is None:
            continue
        start, end = m.span()
        if touches(regions, starts, start, end):
            continue
        if not common(part.word):
            out.append((start, end, part))
            continue
        if not word[:1].isupper():
            continue
        # a replaced name right before / after it, only spaces, dots or commas between
        left = [e for e in range(max(0, start - 3), start + 1)
                if e in ends_at and _SEP_RE.fullmatch(output[e:start])]
        right = [b for b in range(end, end + 4) if b in starts_at and _SEP_RE.fullmatch(output[end:b])]
        prev_word = re.search(r"([^\W\d_]+)\W{0,2}$", output[max(0, start - 12):start])
        titled = prev_word is not None and prev_word.group(1).casefold() in _TITLE_WORDS
        last_first = any("," in output[end:b] for b in right)  # "JONES, [NAME]"
        if titled or (part.given and right) or (not part.given and (left or last_first)):
            out.append((start, end, part))
            continue
        line_start = line_bounds(output, start, end)[0]
        caps_line = line_fact(_caps_line, output, start, end)
        # only the blanks before the name and the character before them decide (a search over all the line
        # before it would make the check quadratic on a note without line breaks)
        j = start
        while j > line_start and output[j - 1].isspace():
            j -= 1
        sentence_start = re.search(r"(^|[.!?:;]\s*|\n\s*)$", output[max(line_start, j - 1):start]) is not None
        if not caps_line and not sentence_start and not word.isupper():
            out.append((start, end, part))
    return out


def message_counts(span: Span, *, redact_providers: bool, facility: bool) -> bool:
    """Policy: does a message identifier still present in the output count as a leak?"""
    if span.subtype in _ALLOWED_SUBTYPES:
        return False
    if span.label == Label.NAME and span.subtype == Subtype.PROVIDER:
        return redact_providers
    if span.label == Label.ORGANIZATION:
        return facility
    return True


@register("leakcheck")
class LeakCheck:
    """Set ``note.leak`` / ``note.leak_findings`` from a re-scan of ``note.output``."""

    name = "leakcheck"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        message: bool = True
        shapes: bool = True
        fuzzy_threshold: int = Field(default=92, ge=50, le=100)
        shape_min_score: float = Field(default=0.5, ge=0.0, le=1.0)
        labels: list[str] = Field(default_factory=lambda: list(_DEFAULT_LABELS))
        ignore_dropped: bool = True
        facility: bool = False
        #: also scan the people's name words with output-aware context rules (see strict_name_hits)
        strict_names: bool = True
        #: options of the regex detector that scans the output for identifier shapes
        shape_options: dict[str, Any] = Field(default_factory=dict)

        @field_validator("labels")
        @classmethod
        def _known(cls, v: list[str]) -> list[str]:
            return [Label(x.upper()).value for x in v]

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        self.labels = frozenset(config.labels)
        self.redact_providers = ctx.policy.redact_providers
        self._min_name_len = ctx.policy.min_name_len
        self._common_zipf = ctx.policy.common_word_zipf
        self._regex: SpanDetector | None = None
        if config.shapes:
            self._regex = cast(SpanDetector, build_processor("regex", config.shape_options, ctx))
        if config.message:
            from dictionaries import vocab

            vocab.load(ctx.cache_dir)

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [self.check(n) for n in notes]

    def check(self, note: Note) -> Note:
        if note.output is None:
            raise ProcessingError("leakcheck needs the transform step before it (note has no output)")
        output = note.output
        regions = excluded_regions(output, note.replacements)
        starts = [r[0] for r in regions]
        findings: set[LeakFinding] = set()

        if self.config.message:
            for s in find_message_identifiers(output, note.input, fuzzy=True,
                                              threshold=self.config.fuzzy_threshold,
                                              common_word_zipf=self._common_zipf, min_name_len=self._min_name_len):
                if (s.label in self.labels and not touches(regions, starts, s.start, s.end)
                        and message_counts(s, redact_providers=self.redact_providers,
                                           facility=self.config.facility)):
                    findings.add(LeakFinding(s.start, s.end, "message", str(s.label)))
            if self.config.strict_names and Label.NAME.value in self.labels:
                parts = name_parts(note.input, providers=self.redact_providers, min_len=self._min_name_len)
                name_regions = [(r.out_start, r.out_end) for r in note.replacements if r.span.label == Label.NAME]
                for start, end, _part in strict_name_hits(output, parts, regions, name_regions, self._common):
                    findings.add(LeakFinding(start, end, "message", Label.NAME.value))

        if self._regex is not None:
            dropped = self._dropped_regions(note) if self.config.ignore_dropped else []
            dstarts = [r[0] for r in dropped]
            for s in self._regex.detect(mask(output, regions)):
                if (s.score < self.config.shape_min_score or s.label not in self.labels
                        or s.subtype in _ALLOWED_SUBTYPES
                        or touches(regions, starts, s.start, s.end)
                        or touches(dropped, dstarts, s.start, s.end)
                        or (s.label == Label.DATE and _YEAR_RE.fullmatch(output[s.start:s.end].strip()))):
                    continue
                findings.add(LeakFinding(s.start, s.end, "shape", str(s.label)))

        ordered = tuple(sorted(findings, key=lambda f: (f.out_start, f.out_end, f.kind)))
        if ordered:
            logger.info("leakcheck: note flagged with %d finding(s)", len(ordered))
        return note.replace(leak=bool(ordered), leak_findings=ordered)

    def _common(self, word: str) -> bool:
        from dictionaries import vocab

        return vocab.is_common_word(word, self._common_zipf)

    @staticmethod
    def _dropped_regions(note: Note) -> list[tuple[int, int]]:
        """Output regions of the candidates an earlier step dropped (outside every replaced span)."""
        reps = sorted(note.replacements, key=lambda r: r.span.start)
        # indexes, not a scan of every replacement per dropped candidate (quadratic on dense notes): the replaced
        # spans by start, and ``to_output`` as a bisection over the prefix maximum of their ends
        replaced = ByStart(reps, lambda r: (r.span.start, r.span.end))
        max_end: list[int] = []
        shift = [0]
        for r in reps:
            max_end.append(max(r.span.end, max_end[-1]) if max_end else r.span.end)
            shift.append(shift[-1] + (r.out_end - r.out_start) - (r.span.end - r.span.start))
        out: list[tuple[int, int]] = []
        for d in note.dropped:
            if replaced.overlapping(d.start, d.end):
                continue  # part of it was replaced anyway
            start = d.start + shift[bisect.bisect_right(max_end, d.start)]  # = to_output(d.start, reps)
            out.append((start, start + (d.end - d.start)))
        return merge_regions(out)
