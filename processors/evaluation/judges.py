"""Judge panel for gold evaluation, after Miranda et al. (LLM-as-judge with majority voting).

Items are the gold entities (a judge says TP: removed / detected, or FN: missed) and the predicted spans
that overlap no gold entity (a judge says FP, or TP when it thinks gold missed a real identifier). N
judges vote on each item; a verdict wins when its share of the N votes is greater than ``threshold``
(default 0.5: a strict majority); a judge may abstain (``None``), which counts as a vote for nothing.
Items without a winning verdict are reported as discarded, not counted.

Judges: deterministic ones (``CoverageJudge``: share of the entity's tokens covered by predictions;
``StringJudge``: the string-based check of the de-identified output, i.e. the entity's LSI in its aligned
sentence is below a threshold) and ``LLMJudge``: a model behind an OpenAI-compatible server (vLLM), asked
through the project's one client (``processors.llm.client.LLMClient``; ``deidstream eval --judge URL``).
Every judge casts one vote per item; an LLM judge asked several samples votes with their majority. The LLM
sees note text: use it only on gold corpora, on a server with the same access rules as the raw notes.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import SecretStr

from processors.llm.client import LLMClient, LLMError
from processors.metrics.proxy import lsi, sentence_bounds, sentence_region
from processors.spans import OffsetMap

logger = logging.getLogger(__name__)

__all__ = [
    "CoverageJudge", "Judge", "JudgeItem", "LLMChunkJudge", "LLMJudge", "PanelResult", "StringJudge", "Verdict",
    "build_judges", "build_llm_judges", "close_judges", "majority", "panel_items", "parse_judge_spec",
    "parse_verdict", "run_panel",
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
_ALLOWED = {"gold": frozenset({Verdict.TP, Verdict.FN}), "pred": frozenset({Verdict.TP, Verdict.FP})}
#: Failure codes after which the rest of a judge's items are not asked (every call of a chunk failed so).
_GIVE_UP = frozenset({"connection", "auth", "bad_request"})


def parse_verdict(answer: str, kind: str) -> Verdict | None:
    """The first TP / FN / FP word of ``answer`` if it fits an item of ``kind``; else None."""
    m = _ANSWER.search(answer.upper())
    verdict = Verdict(m.group(1)) if m else None
    return verdict if verdict in _ALLOWED.get(kind, frozenset()) else None


class LLMJudge:
    """A language model behind an OpenAI-compatible server as one judge of the panel (Miranda et al.).

    Each item is one :meth:`LLMClient.complete` call asking ``samples`` answers (``n``; sampled at
    ``temperature`` when more than one); the calls run through :meth:`LLMClient.map`, at most the client's
    ``concurrency`` in flight. The judge casts ONE vote per item: the verdict that more than ``threshold`` of
    its samples give (with one sample: that sample's verdict), so a judge with many samples never outweighs
    the others. It abstains (``None``) when the call fails, when no sample holds a verdict that fits the item,
    or when its samples split. Why it abstained is counted in :attr:`abstentions` (an :class:`LLMError` code,
    ``unparsed``, ``split``, or ``not_asked`` once a chunk of calls all failed with ``connection``, ``auth``
    or ``bad_request``: a dead or misconfigured server is not asked again item by item)."""

    def __init__(self, client: LLMClient, *, name: str | None = None, samples: int = 1,
                 temperature: float | None = None, threshold: float = 0.5, max_tokens: int = 8) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.client = client
        self.name = name or f"llm:{client.model}"
        self.samples = samples
        # several samples of a greedy decoder are one answer repeated: sample them
        self.temperature = temperature if temperature is not None else (0.7 if samples > 1 else None)
        self.threshold = threshold
        self.max_tokens = max_tokens
        self.abstentions: Counter[str] = Counter()

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

    def _ask(self, item: JudgeItem) -> list[str]:
        return self.client.complete(self.prompt(item), max_tokens=self.max_tokens, n=self.samples,
                                    temperature=self.temperature)

    def vote(self, answers: Sequence[str], kind: str) -> Verdict | None:
        """One vote from the samples' answers; records why when it is an abstention."""
        verdicts = [parse_verdict(a, kind) for a in answers]
        if not any(v is not None for v in verdicts):
            self.abstentions["unparsed"] += 1
            return None
        winner = majority(verdicts, len(verdicts), self.threshold)
        if winner is None:
            self.abstentions["split"] += 1
        return winner

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict | None]:
        self.abstentions = Counter()
        out: list[Verdict | None] = []
        chunk = max(16, 4 * self.client.concurrency)
        for at in range(0, len(items), chunk):
            part = items[at:at + chunk]
            answers = self.client.map(self._ask, part)
            for item, answer in zip(part, answers, strict=True):
                if isinstance(answer, LLMError):
                    self.abstentions[answer.code] += 1
                    out.append(None)
                else:
                    out.append(self.vote(answer, item.kind))
            codes = {a.code if isinstance(a, LLMError) else "" for a in answers}
            if len(codes) == 1 and codes <= _GIVE_UP and at + chunk < len(items):
                rest = len(items) - at - chunk
                logger.warning("judge %s: every call of a chunk failed (%s); %d items not asked", self.name,
                               next(iter(codes)), rest)
                self.abstentions["not_asked"] += rest
                out.extend([None] * rest)
                break
        return out


_CHUNK_PROMPT = (
    "Original clinical text:\n{orig}\n\nDe-identified text:\n{deid}\n\nIgnoring removed or replaced personal "
    "identifiers (names, dates, places, contact details, ID numbers), does the de-identified text change the "
    "clinical meaning (diagnoses, history, test values, doses, procedures, negations, ages)? Answer yes or no."
)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class LLMChunkJudge:
    """CIRE's optional judge (``processors.metrics.step.ChunkJudge``): asks a language model, through
    :meth:`LLMClient.complete` (concurrently, :meth:`LLMClient.map`), whether each changed chunk altered
    clinical meaning. Unparseable answers and failed calls count as changed (the conservative side); failed
    calls are counted by reason in :attr:`failures`. Plug it in with the metrics option
    ``cire_judge: "package.module:factory"`` (a factory that builds the client)."""

    def __init__(self, client: LLMClient, *, name: str | None = None, max_tokens: int = 4) -> None:
        self.client = client
        self.name = name or f"llm:{client.model}"
        self.max_tokens = max_tokens
        self.failures: Counter[str] = Counter()

    def _ask(self, pair: tuple[str, str]) -> str:
        orig, deid = pair
        return self.client.complete(_CHUNK_PROMPT.format(orig=orig, deid=deid), max_tokens=self.max_tokens)[0]

    def changed_meaning(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        out = []
        for answer in self.client.map(self._ask, pairs):
            if isinstance(answer, LLMError):  # an unavailable judge must not drop the note
                self.failures[answer.code] += 1
                out.append(True)
                continue
            m = _YES_NO.search(answer)
            out.append(m is None or m.group(1).lower() == "yes")
        return out


def build_judges(names: Sequence[str], *, threshold: float = 0.85) -> list[Judge]:
    """Deterministic judges by name: ``entity`` (all tokens covered), ``partial`` (half of them),
    ``any`` (one token), ``string`` (LSI on the output, below ``threshold``). LLM judges:
    :func:`build_llm_judges`."""
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
        elif name.startswith("llm"):
            raise ValueError("LLM judges are given with --judge URL[@MODEL] (build_llm_judges)")
        elif name:
            raise ValueError(f"unknown judge {name!r}; use entity, partial, any or string")
    return judges


def parse_judge_spec(spec: str, default_model: str) -> tuple[str, str]:
    """``URL`` or ``URL@MODEL`` -> (url, model); ``default_model`` when none is named. The URL carries no
    credentials (the API key comes from the settings)."""
    spec = spec.strip()
    url, at, model = spec.rpartition("@")
    if not at or "://" not in url:
        url, model = spec, ""
    url, model = url.strip(), model.strip() or default_model
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"LLM judge {spec!r}: expected http(s)://HOST[:PORT][/v1][@MODEL]")
    if parts.username or parts.password:
        raise ValueError("LLM judge URL: no credentials in the URL (the API key is the setting llm.api_key)")
    if not model:
        raise ValueError(f"LLM judge {url!r}: no model (URL@MODEL, --judge-model or the setting llm.model)")
    return url, model


def build_llm_judges(specs: Sequence[str], *, default_model: str, api_key: SecretStr | str | None = None,
                     timeout_s: float = 30.0, max_retries: int = 2, concurrency: int = 8, samples: int = 1,
                     temperature: float | None = None, threshold: float = 0.5) -> list[LLMJudge]:
    """One :class:`LLMJudge` per ``URL[@MODEL]`` spec, each with its own :class:`LLMClient` (the same API key,
    timeout, retries and concurrency). Names are ``llm:MODEL@HOST:PORT`` (made unique); call
    :func:`close_judges` when done."""
    judges: list[LLMJudge] = []
    seen: Counter[str] = Counter()
    for spec in specs:
        if not spec.strip():
            continue
        url, model = parse_judge_spec(spec, default_model)
        parts = urlsplit(url)
        name = f"llm:{model}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        seen[name] += 1
        if seen[name] > 1:
            name += f"#{seen[name]}"
        client = LLMClient(url, model, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries,
                           concurrency=concurrency)
        judges.append(LLMJudge(client, name=name, samples=samples, temperature=temperature, threshold=threshold))
    return judges


def close_judges(judges: Sequence[Judge]) -> None:
    """Close the LLM judges' clients (their connection pools and threads)."""
    for j in judges:
        client = getattr(j, "client", None)
        if isinstance(client, LLMClient):
            client.close()


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
    prediction judged a real identifier that gold lacks is ``tp_pred``); ``discarded``: no majority.

    ``agreement``: per judge, the share of decided items where it voted with the majority. ``per_judge``: per
    judge, ``votes`` cast, ``abstained``, ``agreement``, and (judges that count them, the LLM judges)
    ``abstentions``: why, by reason code (``processors.llm.client.REASONS``, ``unparsed``, ``split``,
    ``not_asked``) and ``samples`` asked per item. Counts and names only: never note text."""

    judges: tuple[str, ...]
    threshold: float
    tp: int
    fn: int
    fp: int
    tp_pred: int
    discarded: int
    per_label: Mapping[str, Mapping[str, int]]
    agreement: Mapping[str, float]
    per_judge: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def items(self) -> int:
        return self.tp + self.fn + self.fp + self.tp_pred + self.discarded

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def precision(self) -> float | None:
        found = self.tp + self.tp_pred
        return found / (found + self.fp) if found + self.fp else None

    def to_dict(self) -> dict[str, Any]:
        return {"judges": list(self.judges), "threshold": self.threshold, "items": self.items, "tp": self.tp,
                "fn": self.fn, "fp": self.fp, "tp_pred": self.tp_pred, "discarded": self.discarded,
                "precision": self.precision, "recall": self.recall,
                "per_label": {k: dict(sorted(v.items())) for k, v in sorted(self.per_label.items())},
                "agreement_with_majority": dict(self.agreement),
                "per_judge": {k: dict(v) for k, v in self.per_judge.items()}}


def run_panel(judges: Sequence[Judge], items: Sequence[JudgeItem], threshold: float = 0.5) -> PanelResult:
    """Every judge votes on every item; majority per item (``majority``); counts, per label too.

    A judge that records why it abstained (an ``abstentions`` counter, as :class:`LLMJudge`) has those
    reasons in ``per_judge``."""
    if not judges:
        raise ValueError("the panel needs at least one judge")
    names = [j.name for j in judges]
    if len(set(names)) != len(names):
        raise ValueError("judge names must be unique")
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
    per_judge: dict[str, dict[str, Any]] = {}
    for j, v in zip(judges, votes, strict=True):
        n_votes = sum(1 for x in v if x is not None)
        row: dict[str, Any] = {"votes": n_votes, "abstained": len(v) - n_votes, "agreement": agreement[j.name]}
        reasons = getattr(j, "abstentions", None)
        if isinstance(reasons, Mapping):
            row["abstentions"] = dict(sorted(reasons.items()))
            row["samples"] = int(getattr(j, "samples", 1))
        per_judge[j.name] = row
    return PanelResult(tuple(names), threshold, counts["tp"], counts["fn"], counts["fp"], counts["tp_pred"],
                       counts["discarded"], {k: dict(v) for k, v in per_label.items()}, agreement, per_judge)
