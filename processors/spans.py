"""What the steps share: span sources and their default thresholds, overlap resolution, interval sets and
original-to-output offset maps. Steps import this module, never each other."""

from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

from rapidfuzz.distance import Levenshtein

from processors.pipeline import Replacement
from schemas.labels import Label
from schemas.models import Span

# ------------------------------------------------------------------------------------------ sources

#: The NER step's decoding threshold (its ``token_threshold`` and ``min_score``): the model's spans are candidates
#: for the decide step, so the threshold is set for recall (the candidates' recall on the PhysioNet design notes,
#: cross-validated: 0.974 at 0.08, 0.981 at 0.03, 0.986 at 0.01, 0.994 at 0.005; the lockbox confirmed 0.005 with
#: the decision model retrained on its candidates: README, Quality)
NER_CANDIDATE_THRESHOLD = 0.005
#: The ensemble's threshold for NER spans in a pipeline without the decide step (and the old policy's, which the
#: decision model reads as a feature): tuned for recall before the decide step existed (README, Quality)
NER_THRESHOLD = 0.08

#: The ensemble's default acceptance threshold per span source.
#: regex 0.4: shapes scored below it (bare "5/10"-style fractions read as dates, short digit runs) count only
#: with another detector's vote (refitted in issue 10, cross-validated by patient group; git history)
SOURCE_THRESHOLDS: dict[str, float] = {"regex": 0.4, "message": 0.0, "dictionary": 0.5, "ner": NER_THRESHOLD,
                                       "llm": 0.5}


@runtime_checkable
class SpanDetector(Protocol):
    """A step that can also detect spans in any text (the leak check re-runs one over the output)."""

    def detect(self, text: str) -> list[Span]: ...


# ------------------------------------------------------------------------------------------ overlaps

#: Tie-break order: more specific / more harmful labels first.
LABEL_PRIORITY: tuple[Label, ...] = (
    Label.ID, Label.EMAIL, Label.PHONE, Label.URL, Label.IP, Label.NAME, Label.DATE, Label.AGE,
    Label.LOCATION, Label.ORGANIZATION, Label.OTHER,
)
_PRIO = {label: i for i, label in enumerate(LABEL_PRIORITY)}


def sources_of(span: Span) -> frozenset[str]:
    return _sources(span.source)


@functools.lru_cache(maxsize=256)  # a handful of distinct "regex+ner" strings; asked for every candidate
def _sources(source: str) -> frozenset[str]:
    return frozenset(source.split("+"))


def clusters(spans: Iterable[Span]) -> list[list[Span]]:
    """Group spans into maximal runs of overlapping spans, ordered by start."""
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    groups: list[list[Span]] = []
    end = -1
    for span in ordered:
        if groups and span.start < end:
            groups[-1].append(span)
            end = max(end, span.end)
        else:
            groups.append([span])
            end = span.end
    return groups


#: Labels an identifier's shape decides (an SSN's 3-2-4 digits, an e-mail's "@"): where the regex step matched
#: such a shape over a whole region, its recognizers name the region's type; the other detectors' labels are
#: guesses from context (the NER model reads "123-45-6789" after "number" as a phone).
SHAPE_LABELS: frozenset[Label] = frozenset({Label.ID, Label.EMAIL, Label.PHONE, Label.URL, Label.IP})
SHAPE_SOURCE = "regex"
#: ... when it matched it with at least this score: below it the regex is guessing too (a bare 8-digit number is an
#: ID shape at 0.4 and a date at 0.25; "20230407 at 1400" is a date)
SHAPE_MIN_SCORE = 0.5
#: A place or an institution: which of the two a region is, a vocabulary that lists the region's whole text as a
#: city, state, country or hospital knows better than the NER model's reading of the context ("seen at
#: Springfield" reads like a facility; Springfield is a city).
PLACE_LABELS: frozenset[Label] = frozenset({Label.LOCATION, Label.ORGANIZATION})
GAZETTEER_SOURCE = "dictionary"


def _label_voters(group: Sequence[Span], lo: int, hi: int) -> Sequence[Span]:
    """The spans whose labels vote: the regex step's spans over the whole region when the best-scored of them is an
    identifier shape matched with at least ``SHAPE_MIN_SCORE`` (they vote among themselves), else every span."""
    whole = [s for s in group if s.start == lo and s.end == hi and SHAPE_SOURCE in sources_of(s)]
    best = max(whole, key=lambda s: s.score, default=None)
    return whole if best is not None and best.label in SHAPE_LABELS and best.score >= SHAPE_MIN_SCORE else group


def merge_cluster(group: Sequence[Span]) -> Span:
    """One span for a group of overlapping spans (see module policy, step 3).

    A span's vote for its label is its score times the share of the region it covers: the label of a detection
    of the whole region ("Saint Brennan Medical Center", ORGANIZATION) outweighs those of its parts ("Saint",
    "Brennan" in name lists). Between place and institution, a vocabulary entry for the whole region (a city, a
    hospital) decides. The subtype comes from the best-scored span of the label; when that one has none,
    from the best-scored span of the label that has one (never PROVIDER, which policy may leave verbatim)."""
    if len(group) == 1:
        return group[0]
    lo = min(s.start for s in group)
    hi = max(s.end for s in group)
    weight: dict[Label, float] = defaultdict(float)
    for s in _label_voters(group, lo, hi):
        weight[s.label] += s.score * (s.end - s.start) / (hi - lo)
    label = max(weight, key=lambda lab: (weight[lab], -_PRIO[lab]))
    listed = sorted((s for s in group if s.label in PLACE_LABELS and s.subtype is not None and s.start == lo
                     and s.end == hi and GAZETTEER_SOURCE in sources_of(s)), key=lambda s: -s.score)
    if label in PLACE_LABELS and listed:
        label = listed[0].label
    same = sorted((s for s in group if s.label == label), key=lambda s: -s.score)
    subtype = same[0].subtype
    if label in PLACE_LABELS and listed:
        subtype = listed[0].subtype
    elif subtype is None:
        subtype = next((s.subtype for s in same if s.subtype is not None and s.subtype != "PROVIDER"), None)
    srcs: set[str] = set()
    for s in group:
        srcs |= sources_of(s)
    return Span(
        start=lo,
        end=hi,
        label=label,
        subtype=subtype,
        score=max(s.score for s in group),
        source="+".join(sorted(srcs)),
    )


def resolve_overlaps(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans sorted by start: each overlapping group merged into one."""
    return [merge_cluster(g) for g in clusters(spans)]


#: Sentence punctuation that no shape-labelled identifier ends with ("john@example.com." at a sentence's end).
_TRAILING_PUNCT = ".,;:!?"


def without_trailing_punctuation(spans: Iterable[Span], text: str) -> list[Span]:
    """``spans`` with sentence punctuation cut off the end of every span of a shape label (an e-mail, URL, phone,
    ID or IP address never ends in a period or comma: the NER model's extent often takes the sentence's)."""
    out: list[Span] = []
    for s in spans:
        end = s.end
        if s.label in SHAPE_LABELS:
            while end - 1 > s.start and text[end - 1] in _TRAILING_PUNCT:
                end -= 1
        out.append(s if end == s.end else s.model_copy(update={"end": end}))
    return out


# ------------------------------------------------------------------------------------------ offsets

class Intervals:
    """Sorted half-open ranges with a prefix maximum of ends: ``overlaps`` in O(log n)."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        self.ranges = sorted(ranges)
        self._starts = [s for s, _ in self.ranges]
        self._max_end: list[int] = []
        top = -1
        for _s, e in self.ranges:
            top = max(top, e)
            self._max_end.append(top)

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, end) - 1
        return i >= 0 and self._max_end[i] > start


T = TypeVar("T")


class ByStart(Generic[T]):
    """Items with half-open ``[start, end)`` bounds (spans, vocabulary matches, tuples), indexed by start: the items
    near a range in O(log n + k) instead of a scan over all of them (a note dense with identifiers has thousands of
    candidates; a scan per candidate made steps quadratic). Results keep the items' given order."""

    def __init__(self, items: Iterable[T], bounds: Callable[[T], tuple[int, int]]) -> None:
        self.items: tuple[T, ...] = tuple(items)
        self._bounds = [bounds(x) for x in self.items]
        self._order = sorted(range(len(self.items)), key=lambda k: self._bounds[k][0])
        self._starts = [self._bounds[k][0] for k in self._order]
        self._longest = max((e - s for s, e in self._bounds), default=0)

    def __len__(self) -> int:
        return len(self.items)

    def _select(self, lo: int, hi: int, keep: Callable[[int], bool]) -> list[T]:
        return [self.items[k] for k in sorted(k for k in self._order[lo:hi] if keep(k))]

    def near(self, start: int, end: int, reach: int = 0) -> list[T]:
        """The items ``x`` with ``x.start <= end + reach`` and ``start <= x.end + reach``: overlapping ``[start, end)``,
        touching it, or within ``reach`` characters of it."""
        lo = bisect.bisect_left(self._starts, start - reach - self._longest)
        hi = bisect.bisect_right(self._starts, end + reach)
        return self._select(lo, hi, lambda k: start <= self._bounds[k][1] + reach)

    def overlapping(self, start: int, end: int) -> list[T]:
        """The items that share at least one character with ``[start, end)`` (``x.start < end`` and ``start < x.end``)."""
        lo = bisect.bisect_left(self._starts, start - self._longest)
        hi = bisect.bisect_left(self._starts, end)
        return self._select(lo, hi, lambda k: start < self._bounds[k][1])


class OffsetMap:
    """Maps ORIGINAL offsets to OUTPUT offsets through changed blocks ``(src_start, src_end, dst_start,
    dst_end)`` (non-overlapping; ``src_start == src_end`` is an insertion); text outside the blocks is
    identical. A position strictly inside a block maps to the block's output start (``side="left"``) or
    end (``side="right"``); an insertion exactly at a position is after it on the right side."""

    def __init__(self, blocks: Iterable[tuple[int, int, int, int]]) -> None:
        self.blocks = sorted(blocks)
        self._starts = [b[0] for b in self.blocks]
        self._cum = [0]
        for s, e, ds, de in self.blocks:
            self._cum.append(self._cum[-1] + (de - ds) - (e - s))

    @classmethod
    def from_replacements(cls, replacements: Sequence[Replacement]) -> OffsetMap:
        return cls((r.span.start, r.span.end, r.out_start, r.out_end) for r in replacements)

    @classmethod
    def from_texts(cls, text: str, output: str) -> OffsetMap:
        """Blocks from a character alignment (rapidfuzz Levenshtein opcodes): for outputs that did not
        come with replacements (another tool's output, an LLM rewrite)."""
        return cls((o.src_start, o.src_end, o.dest_start, o.dest_end)
                   for o in Levenshtein.opcodes(text, output) if o.tag != "equal")

    @classmethod
    def for_note(cls, text: str, output: str, replacements: Sequence[Replacement]) -> OffsetMap:
        """Replacements when they account for the output (lengths agree), else a character alignment."""
        delta = sum((r.out_end - r.out_start) - (r.span.end - r.span.start) for r in replacements)
        if len(text) + delta == len(output) and (replacements or text == output):
            return cls.from_replacements(replacements)
        return cls.from_texts(text, output)

    def map(self, pos: int, side: str = "left") -> int:
        i = bisect.bisect_left(self._starts, pos)  # blocks[:i] start before pos
        if i > 0:
            s, e, ds, de = self.blocks[i - 1]
            if e > pos:
                return ds if side == "left" else de
        out = pos + self._cum[i]
        if side == "right":
            while i < len(self.blocks) and self.blocks[i][0] == self.blocks[i][1] == pos:
                out += self.blocks[i][3] - self.blocks[i][2]
                i += 1
        return out

    def touched(self, start: int, end: int) -> bool:
        """True when a change touches the original range ``[start, end)`` (an insertion strictly inside
        it counts; one at its edge does not)."""
        i = bisect.bisect_left(self._starts, end) - 1
        # ends are non-decreasing (blocks do not overlap): the last block starting before ``end`` decides
        return i >= 0 and self.blocks[i][1] > start
