"""Judge panel for gold evaluation, after Miranda et al. (LLM-as-judge with majority voting).

Items are the gold entities (a judge says TP: removed / detected, or FN: missed) and the predicted spans
that overlap no gold entity (a judge says FP, or TP when it thinks gold missed a real identifier). N
judges vote on each item; a verdict wins when its share of the N votes is greater than ``threshold``
(default 0.5: a strict majority); a judge may abstain (``None``), which counts as a vote for nothing.
Items without a winning verdict are reported as discarded, not counted.

Judges: deterministic ones (``CoverageJudge``: share of the entity's tokens covered by predictions;
``StringJudge``: the string-based check of the de-identified output, i.e. the entity's LSI in its aligned
sentence is below a threshold) and ``LLMJudge`` over any completion function (``openai_complete`` talks to
an OpenAI-compatible server such as vLLM). The LLM sees note text: use it only on gold corpora, on a
server with the same access rules as the raw notes.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from processors.metrics.proxy import lsi, sentence_bounds, sentence_region
from processors.spans import OffsetMap

logger = logging.getLogger(__name__)

__all__ = [
    "CoverageJudge", "Judge", "JudgeItem", "LLMChunkJudge", "LLMJudge", "PanelResult", "StringJudge", "Verdict",
    "build_judges", "majority", "openai_complete", "panel_items", "run_panel",
]

_TOKEN = re.compile(r"[^\W_]+")


class Verdict(StrEnum):
    TP = "TP"
    FN = "FN"
    FP = "FP"


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """One thing to vote on. ``kind`` is "gold" (a gold entity) or "pred" (a prediction overlapping no
    gold entity). Offsets into ``text`` (the original); ``predicted`` holds the offsets of every
    predicted span of the note; ``output``/``offsets`` the de-identified text and its offset map, if any."""

    note_id: str
    kind: str
    start: int
    end: int
    label: str
    text: str
    predicted: tuple[tuple[int, int], ...] = ()
    output: str | None = None
    offsets: OffsetMap | None = field(default=None, compare=False)


@runtime_checkable
class Judge(Protocol):
    name: str

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]: ...


def _covered_share(item: JudgeItem) -> float:
    toks = [m.span() for m in _TOKEN.finditer(item.text, item.start, item.end)]
    if not toks:
        return 0.0
    hit = sum(1 for a, b in toks if any(s < b and a < e for s, e in item.predicted))
    return hit / len(toks)


class CoverageJudge:
    """Deterministic: a gold entity is TP when at least ``min_share`` of its tokens are covered by
    predictions (1.0: the conservative entity-level rule); a lone prediction is FP."""

    def __init__(self, min_share: float = 1.0, name: str | None = None) -> None:
        if not 0.0 < min_share <= 1.0:
            raise ValueError("min_share must be in (0, 1]")
        self.min_share = min_share
        self.name = name or f"coverage@{min_share:g}"

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        out: list[Verdict | None] = []
        for it in items:
            if it.kind == "pred":
                out.append(Verdict.FP)
            else:
                out.append(Verdict.TP if _covered_share(it) >= self.min_share else Verdict.FN)
        return out


class StringJudge:
    """Deterministic, on the OUTPUT (Miranda et al.'s string-based evaluation): a gold entity is TP when
    its LSI in the aligned output sentence is below ``threshold``; abstains without an output."""

    def __init__(self, threshold: float = 0.85, name: str = "string") -> None:
        self.threshold = threshold
        self.name = name

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        out: list[Verdict | None] = []
        cuts_cache: dict[str, list[int]] = {}
        for it in items:
            if it.kind == "pred":
                out.append(Verdict.FP)
                continue
            if it.output is None or it.offsets is None:
                out.append(None)
                continue
            cuts = cuts_cache.get(it.note_id)
            if cuts is None:
                cuts = cuts_cache[it.note_id] = sentence_bounds(it.text)
            s0, s1 = sentence_region(cuts, it.start, it.end)
            o0, o1 = it.offsets.map(s0, "left"), it.offsets.map(s1, "right")
            score = lsi(it.text[it.start:it.end], it.output, o0, o1)
            out.append(Verdict.TP if score < self.threshold else Verdict.FN)
        return out


_PROMPT_GOLD = (
    "You check the de-identification of a clinical note. Original sentence:\n{orig}\n"
    "De-identified sentence:\n{deid}\nWas the identifier \"{entity}\" ({label}) removed or replaced in the "
    "de-identified sentence? Answer with one word: TP if it was removed, FN if it is still there."
)
_PROMPT_PRED = (
    "You check the de-identification of a clinical note. Sentence:\n{orig}\nA system removed \"{entity}\" "
    "as a {label} identifier. Is it a real personal identifier (name, date, place, contact, ID number)? "
    "Answer with one word: TP if it is an identifier, FP if it is not."
)
_ANSWER = re.compile(r"\b(TP|FN|FP)\b")


class LLMJudge:
    """Asks a language model per item; ``complete(prompt) -> answer``. Unparseable answers abstain."""

    def __init__(self, complete: Callable[[str], str], name: str = "llm") -> None:
        self.complete = complete
        self.name = name

    def prompt(self, item: JudgeItem) -> str:
        s0, s1 = sentence_region(sentence_bounds(item.text), item.start, item.end)
        orig = item.text[s0:s1].strip()
        entity = item.text[item.start:item.end]
        if item.kind == "pred":
            return _PROMPT_PRED.format(orig=orig, entity=entity, label=item.label)
        deid = "(not available)"
        if item.output is not None and item.offsets is not None:
            deid = item.output[item.offsets.map(s0, "left"):item.offsets.map(s1, "right")].strip()
        return _PROMPT_GOLD.format(orig=orig, deid=deid, entity=entity, label=item.label)

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        out: list[Verdict | None] = []
        allowed = {"gold": {Verdict.TP, Verdict.FN}, "pred": {Verdict.TP, Verdict.FP}}
        for it in items:
            try:
                answer = self.complete(self.prompt(it))
            except Exception as exc:  # noqa: BLE001 - a failed call is an abstention, never a crash
                logger.warning("judge %s: call failed (%s)", self.name, type(exc).__name__)
                out.append(None)
                continue
            m = _ANSWER.search(answer.upper())
            verdict = Verdict(m.group(1)) if m else None
            out.append(verdict if verdict in allowed.get(it.kind, set()) else None)
        return out


_CHUNK_PROMPT = (
    "Original clinical text:\n{orig}\n\nDe-identified text:\n{deid}\n\nIgnoring removed or replaced personal "
    "identifiers (names, dates, places, contact details, ID numbers), does the de-identified text change the "
    "clinical meaning (diagnoses, history, test values, doses, procedures, negations, ages)? Answer yes or no."
)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class LLMChunkJudge:
    """CIRE's optional judge (``processors.metrics.step.ChunkJudge``): asks a language model whether each
    changed chunk altered clinical meaning. Unparseable answers and failed calls count as changed (the
    conservative side). Plug it in with the metrics option ``cire_judge: "package.module:factory"``."""

    def __init__(self, complete: Callable[[str], str], name: str = "llm") -> None:
        self.complete = complete
        self.name = name

    def changed_meaning(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        out = []
        for orig, deid in pairs:
            try:
                m = _YES_NO.search(self.complete(_CHUNK_PROMPT.format(orig=orig, deid=deid)))
            except Exception as exc:  # noqa: BLE001 - an unavailable judge must not drop the note
                logger.warning("chunk judge %s: call failed (%s)", self.name, type(exc).__name__)
                m = None
            out.append(m is None or m.group(1).lower() == "yes")
        return out


def openai_complete(base_url: str, model: str, *, timeout_s: float = 60.0,
                    api_key: str | None = None) -> Callable[[str], str]:
    """A completion function over an OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM)."""
    url = base_url.rstrip("/") + ("/chat/completions" if base_url.rstrip("/").endswith("/v1")
                                  else "/v1/chat/completions")

    def complete(prompt: str) -> str:
        body = json.dumps({"model": model, "temperature": 0, "max_tokens": 8,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - configured URL
            data: Any = json.loads(resp.read())
        return str(data["choices"][0]["message"]["content"])

    return complete


def build_judges(names: Sequence[str], *, threshold: float = 0.85) -> list[Judge]:
    """Deterministic judges by name: ``entity`` (all tokens covered), ``partial`` (half of them),
    ``any`` (one token), ``string`` (LSI on the output), ``llm=URL@MODEL`` (an OpenAI-compatible server)."""
    judges: list[Judge] = []
    for raw in names:
        name = raw.strip()
        if name == "entity":
            judges.append(CoverageJudge(1.0, "entity"))
        elif name == "partial":
            judges.append(CoverageJudge(0.5, "partial"))
        elif name == "any":
            judges.append(CoverageJudge(1e-9, "any"))
        elif name == "string":
            judges.append(StringJudge(threshold))
        elif name.startswith("llm="):
            url, _, model = name[4:].rpartition("@")
            if not url or not model:
                raise ValueError("llm judge: use llm=URL@MODEL")
            judges.append(LLMJudge(openai_complete(url, model), name=f"llm:{model}"))
        elif name:
            raise ValueError(f"unknown judge {name!r}; use entity, partial, any, string or llm=URL@MODEL")
    return judges


def panel_items(text_by_id: Mapping[str, str], gold_by_id: Mapping[str, Sequence[Any]],
                pred_by_id: Mapping[str, Sequence[Any]], *, outputs: Mapping[str, tuple[str, OffsetMap]] | None = None
                ) -> list[JudgeItem]:
    """Gold entities plus the predictions that overlap no gold entity, note by note. Spans are objects
    or mappings with start, end, label."""

    def fields(s: Any) -> tuple[int, int, str]:
        if isinstance(s, Mapping):
            return int(s["start"]), int(s["end"]), str(s["label"])
        return int(s.start), int(s.end), str(getattr(s.label, "value", s.label))

    items: list[JudgeItem] = []
    for note_id, text in text_by_id.items():
        gold = [fields(s) for s in gold_by_id.get(note_id, ())]
        pred = [fields(s) for s in pred_by_id.get(note_id, ())]
        predicted = tuple(sorted((s, e) for s, e, _ in pred))
        out, offsets = (outputs or {}).get(note_id, (None, None))
        for s, e, label in gold:
            items.append(JudgeItem(note_id, "gold", s, e, label, text, predicted, out, offsets))
        for s, e, label in pred:
            if not any(gs < e and s < ge for gs, ge, _ in gold):
                items.append(JudgeItem(note_id, "pred", s, e, label, text, predicted, out, offsets))
    return items


def majority(votes: Sequence[Verdict | None], n_judges: int, threshold: float = 0.5) -> Verdict | None:
    """The verdict whose share of the ``n_judges`` votes is > ``threshold``; None when none is."""
    if n_judges <= 0:
        return None
    counts = Counter(v for v in votes if v is not None)
    for verdict, k in counts.most_common():
        if k / n_judges > threshold:
            return verdict
    return None


@dataclass(frozen=True)
class PanelResult:
    """Majority counts: ``tp``/``fn`` over gold entities, ``fp``/``tp_pred`` over lone predictions (a
    prediction judged a real identifier that gold lacks is ``tp_pred``); ``discarded``: no majority."""

    judges: tuple[str, ...]
    threshold: float
    tp: int
    fn: int
    fp: int
    tp_pred: int
    discarded: int
    per_label: Mapping[str, Mapping[str, int]]
    agreement: Mapping[str, float]

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def precision(self) -> float | None:
        found = self.tp + self.tp_pred
        return found / (found + self.fp) if found + self.fp else None

    def to_dict(self) -> dict[str, Any]:
        return {"judges": list(self.judges), "threshold": self.threshold, "tp": self.tp, "fn": self.fn,
                "fp": self.fp, "tp_pred": self.tp_pred, "discarded": self.discarded,
                "precision": self.precision, "recall": self.recall,
                "per_label": {k: dict(sorted(v.items())) for k, v in sorted(self.per_label.items())},
                "agreement_with_majority": dict(self.agreement)}


def run_panel(judges: Sequence[Judge], items: Sequence[JudgeItem], threshold: float = 0.5) -> PanelResult:
    """Every judge votes on every item; majority per item (``majority``); counts, per label too.

    ``agreement``: per judge, the share of decided items where it voted with the majority."""
    if not judges:
        raise ValueError("the panel needs at least one judge")
    votes = [j.judge(items) for j in judges]
    for j, v in zip(judges, votes, strict=True):
        if len(v) != len(items):
            raise ValueError(f"judge {j.name} returned {len(v)} verdicts for {len(items)} items")
    counts: Counter[str] = Counter()
    per_label: dict[str, Counter[str]] = {}
    agree: Counter[str] = Counter()
    decided = 0
    for i, item in enumerate(items):
        item_votes = [v[i] for v in votes]
        winner = majority(item_votes, len(judges), threshold)
        key = "discarded" if winner is None else (
            "tp_pred" if winner == Verdict.TP and item.kind == "pred" else winner.value.lower())
        counts[key] += 1
        per_label.setdefault(item.label, Counter())[key] += 1
        if winner is not None:
            decided += 1
            for judge, vote in zip(judges, item_votes, strict=True):
                agree[judge.name] += vote == winner
    agreement = {j.name: (agree[j.name] / decided if decided else 0.0) for j in judges}
    return PanelResult(tuple(j.name for j in judges), threshold, counts["tp"], counts["fn"], counts["fp"],
                       counts["tp_pred"], counts["discarded"], {k: dict(v) for k, v in per_label.items()},
                       agreement)
