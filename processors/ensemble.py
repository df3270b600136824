"""Ensemble policy: per-source score thresholds, agreement voting, overlap resolution.

Pure functions over spans; the ``ensemble`` processor applies them to each note. When the pipeline runs the
``decide`` step, that step has already decided which candidates stay, and the ensemble only merges overlaps
(step 2-3); otherwise, the policy:

1. A candidate span is *accepted* when its score >= the threshold of its source
   (``thresholds``, default ``default_threshold``), or when spans from >= ``min_votes`` distinct
   sources overlap it (agreement rescues low-confidence detections: recall first).
2. Accepted spans that overlap are merged into one span covering their union (a partial overlap
   means the detectors disagree on extent; the union never leaves part of an identifier behind).
3. The merged span takes the label with the highest summed score (ties by ``LABEL_PRIORITY``), the
   subtype of the best-scored span with that label, the max score, and ``source`` = the sorted,
   ``+``-joined set of contributing sources (provenance kept).
   Votes: score times the share of the region a span covers; where the regex step matched an identifier shape
   (ID, EMAIL, PHONE, URL, IP) in the region, only those spans vote (``processors.spans.merge_cluster``).
4. A span of a shape label loses the sentence punctuation at its end ("john@example.com." -> "john@example.com").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from processors.pipeline import BuildContext, Note, register
from processors.spans import SOURCE_THRESHOLDS, resolve_overlaps, sources_of, without_trailing_punctuation
from schemas.models import Span


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


def decide(
    spans: Sequence[Span], thresholds: Mapping[str, float], default_threshold: float, min_votes: int
) -> tuple[list[Span], list[Span]]:
    """The whole policy: (one labelled span per accepted region, the rejected candidates)."""
    accepted, rejected = accept(spans, thresholds, default_threshold, min_votes)
    return resolve_overlaps(accepted), rejected


@register("ensemble")
class Ensemble:
    """Merge candidate spans from all detectors into one labelled span per region."""

    name = "ensemble"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        thresholds: dict[str, float] = Field(
            default_factory=lambda: dict(SOURCE_THRESHOLDS)
        )
        default_threshold: float = Field(default=0.5, ge=0, le=1)
        min_votes: int = Field(default=2, ge=1)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        #: the decide step's model accepted the candidates; thresholds and votes would judge them twice
        self.merge_only = "decide" in ctx.steps

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        out = []
        for note in notes:
            if self.merge_only:
                merged = resolve_overlaps(note.spans)
                out.append(note.replace(spans=tuple(without_trailing_punctuation(merged, note.text))))
                continue
            kept, rej = decide(note.spans, self.config.thresholds, self.config.default_threshold,
                               self.config.min_votes)
            out.append(note.replace(spans=tuple(without_trailing_punctuation(kept, note.text)),
                                    dropped=note.dropped + tuple(rej)))
        return out
