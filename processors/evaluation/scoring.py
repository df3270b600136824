"""Scoring against gold spans: token-level precision/recall/F1, entity-level recall, bootstrap CIs.

Pure functions (DESIGN.md §6). Definitions:
- Tokens are runs of Unicode letters/digits (``[^\\W_]+``); punctuation, underscores and whitespace are
  never tokens, so "J.Smith," has the tokens "J" and "Smith" and "555-1234" has "555" and "1234".
- A token is PHI for a set of spans when ANY span overlaps it, even partly ("generous"): a span
  "Smi" in "Smith" marks the whole token.
- Overall TP/FP/FN count tokens, label-agnostic (a gold NAME token predicted as ID is a TP).
- Per label L: recall = gold tokens of L covered by any prediction / gold tokens of L;
  precision = predicted tokens of L that are gold PHI (any label) / predicted tokens of L.
- Entity-level recall ("conservative"): a gold span is found when every one of its tokens is covered
  by predictions; gold spans without any token (pure punctuation) are not counted.
- Undefined ratios (zero denominators) are ``None``.
- Notes without predictions count as predicting nothing (and are counted in ``missing_predictions``).

Gold notes come from ``processors.evaluation.gold``; the bootstrap from ``processors.evaluation.stats``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from processors.evaluation import stats
from processors.evaluation.gold import GoldNote

_TOKEN = re.compile(r"[^\W_]+")


class SpanLike(Protocol):
    """Anything with half-open offsets and a label (schemas.Span, GoldSpan)."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def label(self) -> Any: ...


# ------------------------------------------------------------------------------------------ tokens

def tokens(text: str) -> list[tuple[int, int]]:
    """Word tokens as half-open offsets: runs of letters/digits; punctuation is never a token."""
    return [m.span() for m in _TOKEN.finditer(text)]


def _covered(toks: Sequence[tuple[int, int]], ends: Sequence[int], start: int, end: int) -> range:
    """Indices of the tokens that overlap ``[start, end)``."""
    first = bisect_right(ends, start)
    last = first
    while last < len(toks) and toks[last][0] < end:
        last += 1
    return range(first, last)


def _span_fields(span: SpanLike | Mapping[str, Any]) -> tuple[int, int, str]:
    if isinstance(span, Mapping):
        return int(span["start"]), int(span["end"]), str(span["label"])
    label = span.label
    return int(span.start), int(span.end), str(getattr(label, "value", label))


# ------------------------------------------------------------------------------------------ metrics

def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


@dataclass(slots=True)
class LabelCounts:
    """Per-label token and entity counts (recall by gold label, precision by predicted label)."""

    gold_tokens: int = 0
    gold_tokens_found: int = 0
    pred_tokens: int = 0
    pred_tokens_correct: int = 0
    entities: int = 0
    entities_found: int = 0

    @property
    def recall(self) -> float | None:
        return _ratio(self.gold_tokens_found, self.gold_tokens)

    @property
    def precision(self) -> float | None:
        return _ratio(self.pred_tokens_correct, self.pred_tokens)

    @property
    def f1(self) -> float | None:
        return _f1(self.precision, self.recall)

    @property
    def entity_recall(self) -> float | None:
        return _ratio(self.entities_found, self.entities)

    def add(self, other: LabelCounts) -> None:
        self.gold_tokens += other.gold_tokens
        self.gold_tokens_found += other.gold_tokens_found
        self.pred_tokens += other.pred_tokens
        self.pred_tokens_correct += other.pred_tokens_correct
        self.entities += other.entities
        self.entities_found += other.entities_found

    def to_dict(self) -> dict[str, Any]:
        return {"gold_tokens": self.gold_tokens, "gold_tokens_found": self.gold_tokens_found,
                "pred_tokens": self.pred_tokens, "pred_tokens_correct": self.pred_tokens_correct,
                "entities": self.entities, "entities_found": self.entities_found, "precision": self.precision,
                "recall": self.recall, "f1": self.f1, "entity_recall": self.entity_recall}


@dataclass(frozen=True, slots=True)
class NoteCounts:
    """One note's counts; the unit the bootstrap resamples."""

    id: str
    tokens: int
    tp: int
    fp: int
    fn: int
    entities: int
    entities_found: int
    kind: str | None = None
    #: non-identifier tokens (gold says not PHI) holding a digit, and how many of them a prediction covered
    #: (tag mode replaces exactly the predicted spans: these are the clinical numbers the output changed)
    number_tokens: int = 0
    numbers_changed: int = 0
    #: the same for non-identifier word tokens (no digit): clinical words the output changed
    word_tokens: int = 0
    words_changed: int = 0


def _metrics(tp: int, fp: int, fn: int, entities: int, found: int) -> dict[str, float | None]:
    p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    return {"precision": p, "recall": r, "f1": _f1(p, r), "entity_recall": _ratio(found, entities)}


@dataclass(frozen=True, slots=True)
class EvalResult:
    notes: int
    tokens: int
    tp: int
    fp: int
    fn: int
    entities: int
    entities_found: int
    per_label: Mapping[str, LabelCounts]
    per_note: tuple[NoteCounts, ...]
    missing_predictions: int = 0

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    def content_changed(self) -> dict[str, Any]:
        """Non-identifier number and word tokens the output changed (pooled shares, and notes with any)."""
        n_num = sum(c.number_tokens for c in self.per_note)
        n_word = sum(c.word_tokens for c in self.per_note)
        ch_num = sum(c.numbers_changed for c in self.per_note)
        ch_word = sum(c.words_changed for c in self.per_note)
        return {"number_tokens": n_num, "numbers_changed": ch_num, "numbers_changed_share": _ratio(ch_num, n_num),
                "word_tokens": n_word, "words_changed": ch_word, "words_changed_share": _ratio(ch_word, n_word),
                "notes_with_a_number_changed": sum(1 for c in self.per_note if c.numbers_changed),
                "notes_with_a_word_changed": sum(1 for c in self.per_note if c.words_changed)}

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return _f1(self.precision, self.recall)

    @property
    def entity_recall(self) -> float | None:
        return _ratio(self.entities_found, self.entities)

    def to_dict(self, *, include_notes: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "notes": self.notes, "tokens": self.tokens, "tp": self.tp, "fp": self.fp, "fn": self.fn,
            "entities": self.entities, "entities_found": self.entities_found,
            "missing_predictions": self.missing_predictions,
            **_metrics(self.tp, self.fp, self.fn, self.entities, self.entities_found),
            "per_label": {k: v.to_dict() for k, v in sorted(self.per_label.items())},
            "content_changed": self.content_changed(),
        }
        if include_notes:
            out["per_note"] = [
                {"id": c.id, "kind": c.kind, "tokens": c.tokens, "tp": c.tp, "fp": c.fp, "fn": c.fn,
                 "entities": c.entities, "entities_found": c.entities_found} for c in self.per_note]
        return out


def evaluate_note(note: GoldNote, predicted: Iterable[SpanLike | Mapping[str, Any]],
                  per_label: dict[str, LabelCounts] | None = None) -> NoteCounts:
    """Counts for one note; adds this note's per-label counts into ``per_label`` when given."""
    toks = tokens(note.text)
    ends = [e for _, e in toks]
    gold_labels: dict[int, set[str]] = defaultdict(set)
    for span in note.spans:
        for i in _covered(toks, ends, span.start, span.end):
            gold_labels[i].add(span.label)
    # tokens of IGNORE regions (e.g. bare years) count neither way, unless a real gold span covers them too
    skip = {i for a, b in note.ignored for i in _covered(toks, ends, a, b)} - set(gold_labels)
    pred_labels: dict[int, set[str]] = defaultdict(set)
    for raw in predicted:
        start, end, label = _span_fields(raw)
        for i in _covered(toks, ends, start, end):
            if i not in skip:
                pred_labels[i].add(label)
    gold, pred = set(gold_labels), set(pred_labels)
    entities = found = 0
    labels = per_label if per_label is not None else {}
    for span in note.spans:
        idx = _covered(toks, ends, span.start, span.end)
        if not idx:
            continue
        hit = all(i in pred for i in idx)
        entities += 1
        found += hit
        counts = labels.setdefault(span.label, LabelCounts())
        counts.entities += 1
        counts.entities_found += hit
    for i, ls in gold_labels.items():
        for label in ls:
            counts = labels.setdefault(label, LabelCounts())
            counts.gold_tokens += 1
            counts.gold_tokens_found += i in pred
    for i, ls in pred_labels.items():
        for label in ls:
            counts = labels.setdefault(label, LabelCounts())
            counts.pred_tokens += 1
            counts.pred_tokens_correct += i in gold
    numeric = {i for i, (a, b) in enumerate(toks) if any(c.isdigit() for c in note.text[a:b])}
    clean = set(range(len(toks))) - gold - skip
    return NoteCounts(note.id, len(toks) - len(skip), len(gold & pred), len(pred - gold), len(gold - pred),
                      entities, found, note.kind, len(clean & numeric), len(clean & numeric & pred),
                      len(clean - numeric), len((clean - numeric) & pred))


def evaluate(gold_notes: Sequence[GoldNote],
             pred_spans_by_id: Mapping[str, Sequence[SpanLike | Mapping[str, Any]]]) -> EvalResult:
    """Token-level and entity-level scores of predictions (spans keyed by note id) against gold."""
    per_label: dict[str, LabelCounts] = {}
    per_note: list[NoteCounts] = []
    missing = 0
    for note in gold_notes:
        predicted = pred_spans_by_id.get(note.id)
        if predicted is None:
            missing += 1
            predicted = ()
        per_note.append(evaluate_note(note, predicted, per_label))
    return EvalResult(
        notes=len(per_note), tokens=sum(c.tokens for c in per_note), tp=sum(c.tp for c in per_note),
        fp=sum(c.fp for c in per_note), fn=sum(c.fn for c in per_note), entities=sum(c.entities for c in per_note),
        entities_found=sum(c.entities_found for c in per_note), per_label=per_label, per_note=tuple(per_note),
        missing_predictions=missing,
    )


# ------------------------------------------------------------------------------------------ bootstrap

#: The count fields the bootstrap sums: overall (``NoteCounts``) and per label (``LabelCounts``).
NOTE_FIELDS: tuple[str, ...] = ("tp", "fp", "fn", "entities", "entities_found")
LABEL_FIELDS: tuple[str, ...] = ("gold_tokens", "gold_tokens_found", "pred_tokens", "pred_tokens_correct",
                                 "entities", "entities_found")


def note_metrics(totals: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    """``_metrics`` over arrays of summed ``NOTE_FIELDS`` (last axis); NaN where undefined."""
    tp, fp, fn, entities, found = (totals[..., i] for i in range(len(NOTE_FIELDS)))
    p, r = stats.ratio(tp, tp + fp), stats.ratio(tp, tp + fn)
    return {"precision": p, "recall": r, "f1": stats.f1(p, r), "entity_recall": stats.ratio(found, entities)}


def label_metrics(totals: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    """``LabelCounts``' recall, precision, F1 and entity recall over arrays of summed ``LABEL_FIELDS``."""
    gold, gold_found, pred, pred_correct, entities, found = (totals[..., i] for i in range(len(LABEL_FIELDS)))
    r, p = stats.ratio(gold_found, gold), stats.ratio(pred_correct, pred)
    return {"recall": r, "precision": p, "f1": stats.f1(p, r), "entity_recall": stats.ratio(found, entities)}


def bootstrap_ci(per_note_counts: Sequence[NoteCounts], n: int = 100, seed: int = 0,
                 alpha: float = 0.05) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap intervals (resampling notes) for precision, recall, F1 and entity recall.

    Deterministic for a seed. A metric that is undefined in every resample maps to None.
    """
    counts = np.array([[getattr(c, f) for f in NOTE_FIELDS] for c in per_note_counts], dtype=np.int64)
    counts = counts.reshape(len(per_note_counts), 1, len(NOTE_FIELDS))
    intervals = stats.bootstrap_ci(counts, note_metrics, n=n, seed=seed, alpha=alpha)
    return {key: per_group[0] for key, per_group in intervals.items()}
