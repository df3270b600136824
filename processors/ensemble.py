"""Ensemble policy: per-source score thresholds, agreement voting, overlap resolution.

Pure functions over spans; the ``ensemble`` processor applies them to each note. Policy:

1. A candidate span is *accepted* when its score >= the threshold of its source
   (``thresholds``, default ``default_threshold``), or when spans from >= ``min_votes`` distinct
   sources overlap it (agreement rescues low-confidence detections: recall first).
2. Accepted spans that overlap are merged into one span covering their union (a partial overlap
   means the detectors disagree on extent; the union never leaves part of an identifier behind).
3. The merged span takes the label with the highest summed score (ties by ``LABEL_PRIORITY``), the
   subtype of the best-scored span with that label, the max score, and ``source`` = the sorted,
   ``+``-joined set of contributing sources (provenance kept).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from processors.ner.step import DEFAULT_THRESHOLD as NER_THRESHOLD
from processors.pipeline import BuildContext, Note, register
from schemas.labels import Label
from schemas.models import Span

#: Tie-break order: more specific / more harmful labels first.
LABEL_PRIORITY: tuple[Label, ...] = (
    Label.ID, Label.EMAIL, Label.PHONE, Label.URL, Label.IP, Label.NAME, Label.DATE, Label.AGE,
    Label.LOCATION, Label.ORGANIZATION, Label.OTHER,
)
_PRIO = {label: i for i, label in enumerate(LABEL_PRIORITY)}


def sources_of(span: Span) -> frozenset[str]:
    return frozenset(span.source.split("+"))


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


def merge_cluster(group: Sequence[Span]) -> Span:
    """One span for a group of overlapping spans (see module policy, step 3)."""
    if len(group) == 1:
        return group[0]
    weight: dict[Label, float] = defaultdict(float)
    best: dict[Label, Span] = {}
    for s in group:
        weight[s.label] += s.score
        if s.label not in best or s.score > best[s.label].score:
            best[s.label] = s
    label = max(weight, key=lambda lab: (weight[lab], -_PRIO[lab]))
    srcs: set[str] = set()
    for s in group:
        srcs |= sources_of(s)
    return Span(
        start=min(s.start for s in group),
        end=max(s.end for s in group),
        label=label,
        subtype=best[label].subtype,
        score=max(s.score for s in group),
        source="+".join(sorted(srcs)),
    )


def resolve_overlaps(spans: Iterable[Span]) -> list[Span]:
    """Non-overlapping spans sorted by start: each overlapping group merged into one."""
    return [merge_cluster(g) for g in clusters(spans)]


def accept(
    spans: Sequence[Span], thresholds: Mapping[str, float], default_threshold: float, min_votes: int
) -> tuple[list[Span], list[Span]]:
    """Split candidates into (accepted, rejected) by score threshold or cross-source agreement."""
    accepted: list[Span] = []
    rejected: list[Span] = []
    for s in spans:
        srcs = sources_of(s)
        thr = min(thresholds.get(src, default_threshold) for src in srcs)
        if s.score >= thr:
            accepted.append(s)
            continue
        voters = set(srcs)
        for other in spans:
            if other is not s and other.overlaps(s):
                voters |= sources_of(other)
        (accepted if len(voters) >= min_votes else rejected).append(s)
    return accepted, rejected


@register("ensemble")
class Ensemble:
    """Merge candidate spans from all detectors into one labelled span per region."""

    name = "ensemble"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        thresholds: dict[str, float] = Field(
            default_factory=lambda: {"regex": 0.3, "message": 0.0, "dictionary": 0.5, "ner": NER_THRESHOLD, "llm": 0.5}
        )
        default_threshold: float = Field(default=0.5, ge=0, le=1)
        min_votes: int = Field(default=2, ge=1)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        out = []
        for note in notes:
            acc, rej = accept(note.spans, self.config.thresholds, self.config.default_threshold,
                              self.config.min_votes)
            out.append(note.replace(spans=tuple(resolve_overlaps(acc)), dropped=note.dropped + tuple(rej)))
        return out
