"""Evaluation against gold spans: token-level precision/recall/F1, entity-level recall, bootstrap CIs.

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

Gold files use the shared eval JSONL format ``{"id", "text", "spans": [{"start", "end", "label", "text"}]}``;
corpus labels are mapped to ours with a label map (``load_label_map``): a value is ``"LABEL"``,
``"LABEL/SUBTYPE"`` or null (drop the label: not PHI under our policy).
"""

from __future__ import annotations

import importlib.resources
import json
import random
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from schemas.errors import ConfigError, InputError
from schemas.labels import Label, Subtype, check_subtype
from schemas.models import NoteIn

_TOKEN = re.compile(r"[^\W_]+")
PACKAGED_MAPS: tuple[str, ...] = ("presidio", "meddocan")


class SpanLike(Protocol):
    """Anything with half-open offsets and a label (schemas.Span, GoldSpan)."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def label(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class GoldSpan:
    start: int
    end: int
    label: str
    subtype: str | None = None
    text: str = ""
    source_label: str | None = None


@dataclass(frozen=True, slots=True)
class GoldNote:
    id: str
    text: str
    spans: tuple[GoldSpan, ...]
    kind: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_note_in(self) -> NoteIn:
        """The note as pipeline input, with its structured blocks (patient, providers, ...) if any."""
        return NoteIn.model_validate({**self.extra, "note_id": self.id, "text": self.text})


# ------------------------------------------------------------------------------------------ label maps

def _parse_target(value: str) -> tuple[str, str | None]:
    label, _, subtype = value.partition("/")
    Label(label)
    if subtype:
        Subtype(subtype)
        check_subtype(label, subtype)
    return label, subtype or None


def _validate_map(mapping: Mapping[str, str | None], where: str) -> dict[str, str | None]:
    bad: list[str] = []
    for key, value in mapping.items():
        if value is None:
            continue
        try:
            _parse_target(str(value))
        except ValueError:
            bad.append(f"{key}: {value}")
    if bad:
        raise ConfigError(f"label map {where}: invalid targets {sorted(bad)}; use LABEL, LABEL/SUBTYPE or null")
    return {str(k): (None if v is None else str(v)) for k, v in mapping.items()}


def load_label_map(name_or_path: str | Path) -> dict[str, str | None]:
    """A corpus-label -> our-label map: a packaged one by name ("presidio", "meddocan") or a YAML file.

    The YAML holds a ``labels:`` mapping (or is that mapping itself); null targets drop the label.
    """
    if isinstance(name_or_path, str) and name_or_path in PACKAGED_MAPS:
        resource = importlib.resources.files("schemas") / "labelmaps" / f"{name_or_path}.yaml"
        raw = yaml.safe_load(resource.read_text(encoding="utf-8"))
        where = name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ConfigError(f"label map {str(name_or_path)!r} is neither packaged ({', '.join(PACKAGED_MAPS)})"
                              " nor a file")
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        where = path.name
    mapping = raw.get("labels", raw) if isinstance(raw, dict) else None
    if not isinstance(mapping, dict):
        raise ConfigError(f"label map {where}: expected a mapping of labels")
    return _validate_map(mapping, where)


# ------------------------------------------------------------------------------------------ gold

def gold_from_records(records: Iterable[Mapping[str, Any]],
                      label_map: Mapping[str, str | None] | None = None) -> list[GoldNote]:
    """Gold notes from already-parsed records (see ``load_gold``)."""
    targets: dict[str, tuple[str, str | None] | None] = {}
    if label_map is not None:
        checked = _validate_map(label_map, "argument")
        targets = {k: (None if v is None else _parse_target(v)) for k, v in checked.items()}
    notes: list[GoldNote] = []
    unmapped: set[str] = set()
    for n, rec in enumerate(records, start=1):
        try:
            note_id, text, raw_spans = str(rec["id"]), rec["text"], rec.get("spans") or []
        except (KeyError, TypeError):
            raise InputError(f"gold record {n}: needs 'id' and 'text'") from None
        if not isinstance(text, str):
            raise InputError(f"gold record {n}: 'text' must be a string")
        spans: list[GoldSpan] = []
        for raw in raw_spans:
            start, end, source = int(raw["start"]), int(raw["end"]), str(raw["label"])
            if not 0 <= start < end <= len(text):
                raise InputError(f"gold record {n}: span [{start}, {end}) outside the text")
            if "text" in raw and raw["text"] is not None and text[start:end] != raw["text"]:
                raise InputError(f"gold record {n}: span text differs from text at offset {start}")
            target: tuple[str, str | None] | None
            if label_map is None:
                try:
                    target = _parse_target(source)
                except ValueError:
                    unmapped.add(source)
                    continue
                sub = raw.get("subtype")
                if sub is not None:
                    target = (target[0], _parse_target(f"{target[0]}/{sub}")[1])
            elif source in targets:
                target = targets[source]
            else:
                unmapped.add(source)
                continue
            if target is None:
                continue
            spans.append(GoldSpan(start, end, target[0], target[1], text[start:end], source))
        extra = {k: v for k, v in rec.items() if k not in ("id", "text", "spans", "kind")}
        kind = rec.get("kind")
        notes.append(GoldNote(note_id, text, tuple(sorted(spans, key=lambda s: (s.start, s.end))),
                              None if kind is None else str(kind), extra))
    if unmapped:
        raise InputError(f"gold labels without a mapping: {sorted(unmapped)}")
    return notes


def load_gold(path: str | Path, label_map: Mapping[str, str | None] | None = None) -> list[GoldNote]:
    """Gold notes from a JSONL file in the shared eval format.

    With ``label_map`` None the labels must already be ours (schemas.Label values, optional "subtype");
    otherwise every corpus label must be a key of the map (unmapped labels raise InputError listing them).
    """
    records: list[dict[str, Any]] = []
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                raise InputError(f"gold file line {n}: not valid JSON") from None
    return gold_from_records(records, label_map)


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
    pred_labels: dict[int, set[str]] = defaultdict(set)
    for raw in predicted:
        start, end, label = _span_fields(raw)
        for i in _covered(toks, ends, start, end):
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
    return NoteCounts(note.id, len(toks), len(gold & pred), len(pred - gold), len(gold - pred), entities, found,
                      note.kind)


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


def _quantile(ordered: Sequence[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def bootstrap_ci(per_note_counts: Sequence[NoteCounts], n: int = 100, seed: int = 0,
                 alpha: float = 0.05) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap intervals (resampling notes) for precision, recall, F1 and entity recall.

    Deterministic for a seed. A metric that is undefined in every resample maps to None.
    """
    if not 0 < alpha < 1 or n < 1:
        raise ValueError("need 0 < alpha < 1 and n >= 1")
    rng = random.Random(seed)
    size = len(per_note_counts)
    samples: dict[str, list[float]] = {"precision": [], "recall": [], "f1": [], "entity_recall": []}
    if size:
        for _ in range(n):
            tp = fp = fn = ent = found = 0
            for c in (per_note_counts[rng.randrange(size)] for _ in range(size)):
                tp, fp, fn, ent, found = tp + c.tp, fp + c.fp, fn + c.fn, ent + c.entities, found + c.entities_found
            for key, value in _metrics(tp, fp, fn, ent, found).items():
                if value is not None:
                    samples[key].append(value)
    out: dict[str, tuple[float, float] | None] = {}
    for key, values in samples.items():
        values.sort()
        out[key] = (_quantile(values, alpha / 2), _quantile(values, 1 - alpha / 2)) if values else None
    return out
