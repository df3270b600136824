"""Per-note quality metrics: recall proxy (no gold) and clinical information retention (DESIGN.md §5).

Pure functions plus the ``metrics`` processor, which sets ``note.metrics`` to a ``schemas.NoteMetrics``.

Recall proxy, after Pissarra et al. Entities are the identifiers KNOWN to be in the original: the
message's own identifiers found in it (the dictionary step's "message" spans, or a scan of the original
when that step did not run), institution-dictionary hits (final, or dropped by the ensemble; a dropped hit
on a medical term was judged medical and is left out), every final span (what the pipeline removed),
other whole-word occurrences of those values, and the leak check's findings; de-duplicated by offsets,
without Safe-Harbor-allowed states/countries, provider names the transform keeps, and initials (fewer
than ``min_entity_chars`` letters/digits: "L" matches any "l"). For an entity of length e,
``LSI = max_j LRa(entity, AN[j:j+e])`` with ``LRa(a, b) = 1 - LD(a, b) / max(|a|, |b|)`` (rapidfuzz
``Levenshtein.normalized_similarity``, case-insensitive by default), over the windows of the ALIGNED
SENTENCE of the output only (so "Tim" is not found again in "time" elsewhere in the note). Then
``ALID = (1 - mean LSI) * 100``, ``LR@t = 100 * share(LSI < t)``, ``LRDI@t = 100`` if every direct
identifier has LSI < t else 0, ``LRQI@t`` = LR@t over quasi-identifiers; None when there is nothing to
score. Sentences are aligned through the transform's replacements (or a character alignment of another
tool's output).

Clinical information retention:
- JSC@thb and NSDCG@K over a pluggable ``ClinicalClassifier`` (class -> logit). The default,
  ``ConceptClassifier``, needs no model: medical-dictionary matches become a weighted vector of ICD-10-CM
  categories and chapters, ICD-10-PCS operation groups and drug classes; its logits are the log weights
  (so the softmax is each class's share). ``ArrayClassifier`` wraps a real model (logits over a fixed
  class list, e.g. a BioBERT ICD-10 classifier). NSDCG uses the original's softmax probabilities as
  relevance (positive, monotone in the original logits); classes the de-identified note lost entirely
  (logit -inf) have relevance 0.
- Medical-term retention: share of the original's medical-dictionary terms (not the patient's own
  identifiers) that no change touched. Number retention: share of clinical numbers kept; a number inside
  an identifier (a span of the pipeline or of the message) is not clinical unless medical syntax covers
  it there ("Hgb 13.1", "5 mg", "pain 5/10").
- CIRE, after Aghakasiri et al.: original and output word tokens are aligned with
  ``rapidfuzz.distance.Levenshtein.opcodes`` on the token lists (a global unit-cost alignment, the
  Needleman-Wunsch equivalent), the original is cut into ``chunk_tokens``-token chunks, and a changed
  chunk is clinically relevant when a changed token is a medical term, a clinical number, a negation or
  part of an age (deterministic judge), or when an optional ``ChunkJudge`` (an LLM) says so. CIRE is the
  share of chunks unchanged in clinical meaning.
"""

from __future__ import annotations

import bisect
import importlib
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from dictionaries.calendar import MONTH_ABBREVIATIONS
from dictionaries.message import find_message_identifiers
from processors.pipeline import PIPELINE_VERSION, BuildContext, Note, register
from processors.spans import Intervals, OffsetMap
from schemas.errors import ConfigError
from schemas.labels import Label, Subtype, is_direct
from schemas.metrics import ClinicalRetention, NoteMetrics, RecallProxy
from schemas.models import Span, Versions

logger = logging.getLogger(__name__)

__all__ = [
    "ArrayClassifier", "ChunkJudge", "ClinicalClassifier", "ConceptClassifier", "Entity", "Intervals", "Metrics",
    "OffsetMap", "alid", "align_tokens", "cire", "clinical_numbers", "compute_note_metrics", "jsc",
    "known_identifiers", "leak_entities", "lr_at", "lra", "lrdi_at", "lrqi_at", "lsi", "medical_matches",
    "medical_term_changes", "nsdcg", "recall_proxy", "repeated_occurrences", "sentence_bounds",
    "sentence_region", "softmax",
]

#: Safe Harbor allows states and countries: never counted as identifiers that should have gone.
ALLOWED_SUBTYPES = frozenset({Subtype.STATE.value, Subtype.COUNTRY.value})
NEGATIONS = frozenset(
    "no not denies denied deny denying without negative neg never none nor absent cannot free unable".split()
)
_TOKEN = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENT_END = re.compile(r"[.!?;](?=\s)|\n")
_WORD_BEFORE = re.compile(r"\w+$")
_ABBREV = frozenset("dr mr mrs ms st vs no prof jr sr mt ft drs approx".split())
#: ages: "45-year-old", "3 months old", "45 yo", "45 y/o F", "age 45", "aged 45", "45M"
_AGE = re.compile(
    r"\b\d{1,3}(?:\.\d)?[\s-]*(?i:years?|yrs?|months?|mos?|weeks?|wks?|days?)[\s-]*(?i:old)\b"
    r"|\b\d{1,3}\s?(?i:y/?o|yo)(?:[MF]\b|\b)|\b(?i:age[sd]?|aged)\s*:?\s*\d{1,3}\b|\b\d{1,3}\s?[MF]\b"
)
_SYNTAX_MARGIN = 24
#: labels whose numbers are never clinical values, even when a detector was wrong about the label
_NO_CLINICAL_NUMBERS = frozenset({Label.PHONE, Label.EMAIL, Label.URL, Label.IP, Label.LOCATION})
#: a DATE span with a month name or a four-digit year is a date whatever else it holds
_SURE_DATE = re.compile(r"(?i:" + "|".join(MONTH_ABBREVIATIONS) + r")[a-z]*\b|(?<!\d)(?:1[89]|20)\d\d(?!\d)")
_ID_SHAPE = re.compile(r"\b\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b\d{1,2}:\d{2}(?::\d{2})?\b(?!:)")
_TAG = re.compile(r"\[[A-Z][A-Z0-9_+\- ]*\]")


# ------------------------------------------------------------------------------------------ offsets

# ------------------------------------------------------------------------------------------ recall proxy

def lra(a: str, b: str) -> float:
    """Levenshtein ratio ``1 - LD(a, b) / max(|a|, |b|)`` (1.0 for two empty strings)."""
    return float(Levenshtein.normalized_similarity(a, b))


def lsi(entity: str, output: str, start: int = 0, end: int | None = None, *, ignore_case: bool = True) -> float:
    """Best LRa of ``entity`` against every window of ``len(entity)`` characters of ``output[start:end]``
    (step 1). A region shorter than the entity is compared whole."""
    region = output[start:end]
    if ignore_case:
        entity, region = entity.lower(), region.lower()
    e = len(entity)
    if e == 0:
        return 0.0
    if entity in region:
        return 1.0
    if len(region) <= e:
        return lra(entity, region)
    windows = [region[j:j + e] for j in range(len(region) - e + 1)]
    best = process.extractOne(entity, windows, scorer=Levenshtein.normalized_similarity)
    return float(best[1]) if best is not None else 0.0


def alid(lsis: Sequence[float]) -> float | None:
    """``(1 - mean(LSI)) * 100``; None without entities."""
    return (1.0 - sum(lsis) / len(lsis)) * 100.0 if lsis else None


def lr_at(lsis: Sequence[float], t: float = 0.85) -> float | None:
    """``100 * share of entities with LSI < t``; None without entities."""
    return 100.0 * sum(1 for x in lsis if x < t) / len(lsis) if lsis else None


def lrdi_at(direct_lsis: Sequence[float], t: float = 0.85) -> float | None:
    """All or nothing: 100 when every direct identifier has LSI < t, else 0; None without any."""
    if not direct_lsis:
        return None
    return 100.0 if all(x < t for x in direct_lsis) else 0.0


def lrqi_at(quasi_lsis: Sequence[float], t: float = 0.85) -> float | None:
    """LR@t over quasi-identifiers only."""
    return lr_at(quasi_lsis, t)


def sentence_bounds(text: str) -> list[int]:
    """Sorted cut positions (0 and ``len(text)`` included): after a newline, or after ``.!?;`` followed
    by whitespace unless the word before is an initial or a title ("Dr.", "L.")."""
    cuts = [0]
    for m in _SENT_END.finditer(text):
        if m.group() != "\n":
            w = _WORD_BEFORE.search(text, max(0, m.start() - 6), m.start())
            if w is not None and ((len(w.group()) == 1 and w.group().isalpha()) or w.group().lower() in _ABBREV):
                continue
        cuts.append(m.end())
    if cuts[-1] != len(text):
        cuts.append(len(text))
    return cuts


def sentence_region(cuts: Sequence[int], start: int, end: int) -> tuple[int, int]:
    """The original range of the sentence(s) that ``[start, end)`` touches."""
    i = bisect.bisect_right(cuts, start) - 1
    j = bisect.bisect_left(cuts, end)
    return cuts[max(i, 0)], cuts[min(j, len(cuts) - 1)]


def _word_in(region: str, word: str) -> bool:
    """``word`` occurs in ``region`` exactly, not inside a longer word."""
    pos = region.find(word)
    while pos >= 0:
        before = region[pos - 1] if pos > 0 else " "
        after = region[pos + len(word)] if pos + len(word) < len(region) else " "
        if not (before.isalnum() and word[:1].isalnum()) and not (after.isalnum() and word[-1:].isalnum()):
            return True
        pos = region.find(word, pos + 1)
    return False


@dataclass(frozen=True, slots=True)
class Entity:
    """A known identifier: offsets into the ORIGINAL text and its class (no text kept)."""

    start: int
    end: int
    label: str
    direct: bool


def known_identifiers(spans: Iterable[Span], *, exclude: Callable[[Span], bool] | None = None) -> list[Entity]:
    """Entities from spans, de-duplicated by offsets (direct wins when the same offsets carry both),
    without Safe-Harbor-allowed subtypes (state, country) and without spans ``exclude`` rejects."""
    by_offsets: dict[tuple[int, int], Entity] = {}
    for s in spans:
        if s.subtype in ALLOWED_SUBTYPES or (exclude is not None and exclude(s)):
            continue
        ent = Entity(s.start, s.end, str(s.label), s.direct)
        old = by_offsets.get((s.start, s.end))
        if old is None or (ent.direct and not old.direct):
            by_offsets[(s.start, s.end)] = ent
    return [by_offsets[k] for k in sorted(by_offsets)]


def repeated_occurrences(text: str, entities: Sequence[Entity], *, min_chars: int = 3) -> list[Entity]:
    """Other occurrences of the known identifiers' values in ``text`` (same case, whole words, values of
    at least ``min_chars`` letters/digits), as entities of the same class: a value known to be an
    identifier in one place is one everywhere ("Barchard" removed once and missed later)."""
    taken = Intervals((e.start, e.end) for e in entities)
    seen: dict[str, Entity] = {}
    for e in entities:
        value = text[e.start:e.end]
        if sum(c.isalnum() for c in value) >= min_chars and (value not in seen or e.direct):
            seen[value] = e
    out: list[Entity] = []
    for value, e in seen.items():
        pos = text.find(value)
        while pos >= 0:
            end = pos + len(value)
            if (not taken.overlaps(pos, end) and not (pos > 0 and text[pos - 1].isalnum() and value[0].isalnum())
                    and not (end < len(text) and text[end].isalnum() and value[-1].isalnum())):
                out.append(Entity(pos, end, e.label, e.direct))
            pos = text.find(value, pos + 1)
    # two values can overlap at one place ("John Smith" and "Smith"): keep the longest
    out.sort(key=lambda x: (x.start, -x.end))
    kept: list[Entity] = []
    for x in out:
        if not kept or x.start >= kept[-1].end:
            kept.append(x)
    return kept


def leak_entities(note: Note, offsets: OffsetMap, entities: Sequence[Entity]) -> list[Entity]:
    """The leak check's findings (identifiers still in the OUTPUT), mapped back to the original, as
    known identifiers, unless they fall on a known one already or inside changed text."""
    back = OffsetMap((ds, de, s, e) for s, e, ds, de in offsets.blocks)
    taken = Intervals((e.start, e.end) for e in entities)
    out: list[Entity] = []
    for f in note.leak_findings:
        start, end = back.map(f.out_start, "left"), back.map(f.out_end, "right")
        if end - start != f.out_end - f.out_start or taken.overlaps(start, end):
            continue  # touches a replacement (a surrogate), or already known
        label = Label(f.label) if f.label in Label.__members__ else Label.OTHER
        out.append(Entity(start, end, label.value, is_direct(label)))
    return out


def entity_lsis(text: str, output: str, entities: Sequence[Entity], offsets: OffsetMap, *,
                sentences: bool = True, ignore_case: bool = True) -> list[tuple[float, bool]]:
    """(LSI, still verbatim) per entity, each searched in its aligned output sentence (or the whole
    output with ``sentences=False``)."""
    cuts = sentence_bounds(text) if sentences else [0, len(text)]
    out: list[tuple[float, bool]] = []
    for ent in entities:
        if sentences:
            s0, s1 = sentence_region(cuts, ent.start, ent.end)
            o0, o1 = offsets.map(s0, "left"), offsets.map(s1, "right")
        else:
            o0, o1 = 0, len(output)
        value = text[ent.start:ent.end]  # only inside this computation; never logged or stored
        region = output[o0:o1]
        out.append((lsi(value, region, ignore_case=ignore_case), _word_in(region, value)))
    return out


def recall_proxy(text: str, output: str, entities: Sequence[Entity], offsets: OffsetMap, *,
                 threshold: float = 0.85, sentences: bool = True, ignore_case: bool = True,
                 min_chars: int = 2) -> RecallProxy:
    """LSI per entity, then ALID, LR@t, LRDI@t, LRQI@t and the verbatim count. Entities with fewer than
    ``min_chars`` letters/digits are skipped (an initial "L" matches any "l" of the sentence)."""
    all_entities = entities
    entities = [e for e in entities if sum(c.isalnum() for c in text[e.start:e.end]) >= min_chars]
    scored = entity_lsis(text, output, entities, offsets, sentences=sentences, ignore_case=ignore_case)
    lsis = [x for x, _ in scored]
    direct = [x for (x, _), e in zip(scored, entities, strict=True) if e.direct]
    quasi = [x for (x, _), e in zip(scored, entities, strict=True) if not e.direct]
    known_by_label: Counter[str] = Counter(e.label for e in entities)
    removed_by_label: Counter[str] = Counter(e.label for (x, _), e in zip(scored, entities, strict=True)
                                             if x < threshold)
    return RecallProxy(
        threshold=threshold, known=len(entities), skipped=len(all_entities) - len(entities),
        direct=len(direct), quasi=len(quasi),
        removed=sum(1 for x in lsis if x < threshold), verbatim=sum(1 for _, v in scored if v),
        lsi_mean=sum(lsis) / len(lsis) if lsis else None, alid=alid(lsis), lr=lr_at(lsis, threshold),
        lrdi=lrdi_at(direct, threshold), lrqi=lrqi_at(quasi, threshold),
        known_by_label=dict(sorted(known_by_label.items())), removed_by_label=dict(sorted(removed_by_label.items())),
    )


# ------------------------------------------------------------------------------------------ classifiers

@runtime_checkable
class ClinicalClassifier(Protocol):
    """Logits per class for each text; a class missing from a result has logit -inf (probability 0)."""

    name: str

    def logits(self, texts: Sequence[str]) -> list[dict[str, float]]: ...


class ArrayClassifier:
    """Adapter for a real model: ``predict(texts)`` returns a (n_texts, n_classes) array-like of logits
    over ``labels`` (e.g. a BioBERT ICD-10 classifier)."""

    def __init__(self, name: str, labels: Sequence[str], predict: Callable[[Sequence[str]], Any]) -> None:
        self.name = name
        self.labels = list(labels)
        self._predict = predict

    def logits(self, texts: Sequence[str]) -> list[dict[str, float]]:
        rows = self._predict(texts)
        out = []
        for row in rows:
            values = [float(x) for x in row]
            if len(values) != len(self.labels):
                raise ValueError("classifier returned a row of the wrong width")
            out.append(dict(zip(self.labels, values, strict=True)))
        return out


class ConceptClassifier:
    """The offline default: a weighted concept vector from medical-dictionary matches.

    Each match spreads a weight of 1 over its ICD-10-CM categories (or blocks), 1 over their chapters,
    1 over its ICD-10-PCS operation groups and 1 over its drug classes (MeSH tree prefix or name).
    Logits are log weights, so the softmax gives each class its share of the note's concept mass."""

    name = "concepts"

    def __init__(self, vocab: Any) -> None:
        self.vocab = vocab
        self._parts: dict[tuple[str, ...], tuple[tuple[str, float], ...]] = {}

    def logits(self, texts: Sequence[str]) -> list[dict[str, float]]:
        return [self.logits_from_matches(self.vocab.find(t)) for t in texts]

    def logits_from_matches(self, matches: Iterable[Any]) -> dict[str, float]:
        weights: dict[str, float] = {}
        for m in matches:
            parts = self._parts.get(m.concept_ids)
            if parts is None:
                parts = self._parts[m.concept_ids] = tuple(concept_weights([m], self.vocab.chapter).items())
            for c, w in parts:
                weights[c] = weights.get(c, 0.0) + w
        return {k: math.log(w) for k, w in weights.items() if w > 0}


def concept_weights(matches: Iterable[Any], chapter_of: Callable[[str], str | None]) -> dict[str, float]:
    """Class weights of ``matches`` (objects with ``concept_ids``); see ``ConceptClassifier``."""
    weights: dict[str, float] = {}

    def spread(classes: set[str]) -> None:
        for c in classes:
            weights[c] = weights.get(c, 0.0) + 1.0 / len(classes)

    for m in matches:
        cats: set[str] = set()
        chapters: set[str] = set()
        drugs: set[str] = set()
        pcs: set[str] = set()
        for cid in m.concept_ids:
            if cid.startswith("ICD10:"):
                cats.add(cid)
                ch = chapter_of(cid)
                if ch is not None:
                    chapters.add(f"ICD10-CH:{ch}")
            elif cid.startswith("DRUG:"):
                drugs.add(cid)
            elif cid.startswith("PCS:") and cid != "PCS:index":
                pcs.add(cid[:7])
        for group in (cats, chapters, drugs, pcs):
            if group:
                spread(group)
    return weights


def softmax(logits: Mapping[str, float]) -> dict[str, float]:
    """Probabilities from logits; -inf (and missing) classes get 0."""
    finite = {k: v for k, v in logits.items() if v != -math.inf}
    if not finite:
        return {}
    top = max(finite.values())
    exp = {k: math.exp(v - top) for k, v in finite.items()}
    total = sum(exp.values())
    return {k: v / total for k, v in exp.items()}


def jsc(p_orig: Mapping[str, float], p_deid: Mapping[str, float], thb: float = 0.05) -> float | None:
    """``JSC@thb = C11 / (C11 + C01 + C10) * 100`` over classes with probability > thb; None when
    neither note has such a class."""
    a = {k for k, p in p_orig.items() if p > thb}
    b = {k for k, p in p_deid.items() if p > thb}
    union = a | b
    return 100.0 * len(a & b) / len(union) if union else None


def nsdcg(logits_orig: Mapping[str, float], logits_deid: Mapping[str, float], k: int = 10) -> float | None:
    """``NSDCG@K = SDCG@K / ISDCG@K * 100``.

    ``sd_i``: the softmax of the original's logits sorted descending (the discount of rank i);
    ``rel``: the original's probabilities, taken in the order the de-identified note ranks the classes
    (``SDCG``) or in the original's own order (``ISDCG``). Ties in the de-identified ranking keep the
    original order; classes the de-identified note lost (-inf or missing) have relevance 0. None when the
    original has no class."""
    p = softmax(logits_orig)
    if not p:
        return None
    orig_rank = sorted(p, key=lambda c: (-p[c], c))
    sd = [p[c] for c in orig_rank[:k]]
    order = {c: i for i, c in enumerate(orig_rank)}
    present = [c for c, v in logits_deid.items() if v != -math.inf]
    deid_rank = sorted(present, key=lambda c: (-logits_deid[c], order.get(c, len(order)), c))
    rel = [p.get(c, 0.0) for c in deid_rank[:k]]
    ideal = sum(s * p[c] for s, c in zip(sd, orig_rank[:k], strict=False))
    got = sum(s * r for s, r in zip(sd, rel, strict=False))
    # rearrangement inequality: got <= ideal; min() only absorbs float rounding
    return min(100.0, 100.0 * got / ideal) if ideal > 0 else None


# ------------------------------------------------------------------------------------------ CIRE

@runtime_checkable
class ChunkJudge(Protocol):
    """Optional judge (an LLM): does the de-identified chunk change the clinical meaning of the original
    chunk? One answer per (original, de-identified) pair."""

    name: str

    def changed_meaning(self, pairs: Sequence[tuple[str, str]]) -> list[bool]: ...


def align_tokens(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """Global alignment of two token lists (rapidfuzz Levenshtein opcodes on the lists: unit costs,
    equivalent to Needleman-Wunsch); ``(tag, src_start, src_end, dst_start, dst_end)``."""
    return [(o.tag, o.src_start, o.src_end, o.dest_start, o.dest_end) for o in Levenshtein.opcodes(a, b)]


@dataclass(frozen=True, slots=True)
class CireResult:
    chunks: int
    changed: int
    clinical: int

    @property
    def cire(self) -> float | None:
        return (self.chunks - self.clinical) / self.chunks if self.chunks else None


def _map_token(ops: Sequence[tuple[str, int, int, int, int]], i: int, side: str) -> int:
    for tag, s0, s1, d0, d1 in ops:
        if s0 <= i < s1 or (i == s1 and s0 == s1 == i):
            if tag == "equal":
                return d0 + (i - s0)
            return d0 if side == "left" else d1
    return ops[-1][4] if ops else 0


def cire(text: str, output: str, *, sensitive: Iterable[tuple[int, int]] = (), chunk_tokens: int = 20,
         judge: ChunkJudge | None = None) -> CireResult:
    """Chunks of the original's tokens, changed chunks, and clinically relevant changed chunks.

    ``sensitive``: original ranges that carry clinical information (medical terms, clinical numbers,
    ages). The rules judge calls a changed chunk relevant when a changed original token overlaps one of
    them or is a negation, or when a negation was inserted; with ``judge`` the chunk texts go to it."""
    src = [m.span() for m in _TOKEN.finditer(text)]
    dst = [m.span() for m in _TOKEN.finditer(output)]
    src_words = [text[s:e] for s, e in src]
    dst_words = [output[s:e] for s, e in dst]
    n = len(src)
    n_chunks = (n + chunk_tokens - 1) // chunk_tokens
    if n_chunks == 0:
        return CireResult(0, 0, 0)
    marks = Intervals(sensitive)

    def flagged(i: int) -> bool:
        return src_words[i].lower() in NEGATIONS or marks.overlaps(*src[i])

    ops = align_tokens(src_words, dst_words)
    changed: dict[int, bool] = {}
    for tag, s0, s1, d0, d1 in ops:
        if tag == "equal":
            continue
        inserted_negation = any(w.lower() in NEGATIONS for w in dst_words[d0:d1])
        if s0 == s1:
            c = min(s0, n - 1) // chunk_tokens
            changed[c] = changed.get(c, False) or inserted_negation
            continue
        for i in range(s0, s1):
            c = i // chunk_tokens
            changed[c] = changed.get(c, False) or inserted_negation or flagged(i)
    if judge is not None and changed:
        order = sorted(changed)
        pairs = []
        for c in order:
            t0, t1 = c * chunk_tokens, min(n, (c + 1) * chunk_tokens)
            o0, o1 = _map_token(ops, t0, "left"), _map_token(ops, t1, "right")
            a = text[src[t0][0]:src[t1 - 1][1]]
            b = output[dst[o0][0]:dst[o1 - 1][1]] if o1 > o0 else ""
            pairs.append((a, b))
        verdicts = judge.changed_meaning(pairs)
        if len(verdicts) != len(order):
            raise ValueError("chunk judge returned a different number of answers")
        changed = dict(zip(order, (bool(v) for v in verdicts), strict=True))
    return CireResult(n_chunks, len(changed), sum(1 for v in changed.values() if v))


def clinical_numbers(text: str, identifiers: Sequence[tuple[int, int]],
                     syntax: Callable[[str, int, int], Sequence[tuple[int, int, str]]],
                     trusted: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Numbers of ``text`` that carry clinical information: every number outside ``identifiers``, and
    those inside an identifier that medical syntax (doses, labs, vitals, scores) covers there.
    ``syntax(text, start, end)`` scans a window (``dictionaries.medical.medical_syntax_spans``). Numbers
    inside ``trusted`` identifiers (the message's own, phones, addresses), full dates, clock times and
    runs of 5+ digits are identifier numbers without a scan (the scan is the expensive part)."""
    merged: list[list[int]] = []
    for s, e in sorted(identifiers):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    starts = [m[0] for m in merged]
    inside: list[tuple[int, int, int]] = []
    out: list[tuple[int, int]] = []
    shapes: Intervals | None = None
    for m in _NUMBER.finditer(text):
        a, b = m.span()
        j = bisect.bisect_left(starts, b) - 1
        if j < 0 or merged[j][1] <= a:
            out.append((a, b))
            continue
        if shapes is None:
            shapes = Intervals([*(x.span() for s, e in merged for x in _ID_SHAPE.finditer(text, s, e)), *trusted])
        if (b - a >= 5 and text[a:b].isdigit()) or shapes.overlaps(a, b):
            continue
        inside.append((a, b, j))
    if inside:
        # one syntax scan per group of nearby identifiers that hold numbers
        windows: list[list[int]] = []
        for j in sorted({j for _a, _b, j in inside}):
            w0, w1 = max(0, merged[j][0] - _SYNTAX_MARGIN), min(len(text), merged[j][1] + _SYNTAX_MARGIN)
            if windows and w0 <= windows[-1][1]:
                windows[-1][1] = w1
            else:
                windows.append([w0, w1])
        # a schedule time inside an identifier is part of a date-time; syntax across a line break ("25\ncc:")
        # is a misparse
        found = Intervals((s, e) for w0, w1 in windows for s, e, k in syntax(text, w0, w1)
                          if k != "time" and "\n" not in text[s:e])
        out.extend((a, b) for a, b, _j in inside if found.overlaps(a, b))
        out.sort()
    return out


# ------------------------------------------------------------------------------------------ the note

def _span_has(span: Span, source: str) -> bool:
    return source in span.source.split("+")


@dataclass(frozen=True)
class MetricsOptions:
    """Options of ``compute_note_metrics`` (the processor's Config, resolved)."""

    threshold: float = 0.85
    sentences: bool = True
    ignore_case: bool = True
    min_chars: int = 2
    jsc_threshold: float = 0.05
    nsdcg_k: int = 10
    chunk_tokens: int = 20
    dropped_dictionary: bool = True
    repeats: bool = True
    leaks: bool = True
    redact_providers: bool = True


def compute_note_metrics(
    note: Note, *, vocab: Any, versions: Versions, options: MetricsOptions = MetricsOptions(),
    classifier: ClinicalClassifier | None = None, judge: ChunkJudge | None = None,
    message_spans: Sequence[Span] | None = None,
) -> NoteMetrics:
    """All metrics of one processed note. ``vocab`` is the medical vocabulary (``find``, ``chapter``,
    ``genes``); ``classifier`` defaults to the concept classifier over ``vocab``;
    ``message_spans``: the message's identifiers found in the original when the pipeline's spans may not
    hold them (``find_message_identifiers``); spans whose source includes "message" are used anyway."""
    text, output, o = note.text, note.output, options
    spans_by_label = Counter(str(s.label) for s in note.spans)
    spans_by_source = Counter(s.source for s in note.spans)
    dropped_by_source = Counter(s.source for s in note.dropped)
    stage_ms = {name: round(ms, 3) for name, ms in note.stage_ms}
    recall: RecallProxy | None = None
    retention: ClinicalRetention | None = None

    message = [s for s in (*note.spans, *note.dropped) if _span_has(s, "message")] + list(message_spans or ())
    if output is not None:
        offsets = OffsetMap.for_note(text, output, note.replacements)

        def kept_by_policy(s: Span) -> bool:
            return not o.redact_providers and s.label == Label.NAME and s.subtype == Subtype.PROVIDER

        msg = Intervals((s.start, s.end) for s in message)
        matches = medical_matches(text, vocab, msg, note.spans)
        medical = Intervals((m.start, m.end) for m in matches)
        # a dropped hit on a medical term was judged medical (recovery), not an identifier
        dropped = [s for s in note.dropped if o.dropped_dictionary and not medical.overlaps(s.start, s.end)]
        dictionary_hits = [s for s in (*note.spans, *dropped) if _span_has(s, "dictionary")]
        entities = known_identifiers([*message, *dictionary_hits, *note.spans], exclude=kept_by_policy)
        if o.repeats:
            entities = [*entities, *repeated_occurrences(text, entities)]
        if o.leaks and note.leak_findings:
            entities = [*entities, *leak_entities(note, offsets, entities)]
        entities.sort(key=lambda e: (e.start, e.end))
        recall = recall_proxy(text, output, entities, offsets, threshold=o.threshold, sentences=o.sentences,
                              ignore_case=o.ignore_case, min_chars=o.min_chars)
        retention = _retention(note, output, offsets, vocab, message, matches, o, classifier, judge)

    return NoteMetrics(
        note_pseudonym=note.note_pseudonym, patient_pseudonym=note.patient_pseudonym, chars=len(text),
        spans=len(note.spans), dropped=len(note.dropped),
        spans_by_label=dict(sorted(spans_by_label.items())), spans_by_source=dict(sorted(spans_by_source.items())),
        dropped_by_source=dict(sorted(dropped_by_source.items())), leak=note.leak,
        leak_findings=len(note.leak_findings),
        leak_findings_by_label=dict(sorted(Counter(f.label for f in note.leak_findings).items())),
        recall=recall, retention=retention, stage_ms=stage_ms, total_ms=round(sum(stage_ms.values()), 3),
        versions=versions,
    )


def _retention(note: Note, output: str, offsets: OffsetMap, vocab: Any, message: Sequence[Span],
               matches: Sequence[Any], o: MetricsOptions, classifier: ClinicalClassifier | None,
               judge: ChunkJudge | None) -> ClinicalRetention:
    text = note.text
    terms_kept = sum(1 for m in matches if not offsets.touched(m.start, m.end))

    identifiers = sorted({(s.start, s.end) for s in (*note.spans, *message)})
    trusted = [(s.start, s.end) for s in message] + [
        (s.start, s.end) for s in note.spans
        if s.label in _NO_CLINICAL_NUMBERS or (s.label == Label.DATE and _SURE_DATE.search(text, s.start, s.end))]
    numbers = clinical_numbers(text, identifiers,
                               lambda t, a, b: cast(Sequence[tuple[int, int, str]], _syntax(vocab, t, a, b)),
                               trusted=trusted)
    numbers_kept = sum(1 for a, b in numbers if not offsets.touched(a, b))

    ages = [m.span() for m in _AGE.finditer(text)] + [(s.start, s.end) for s in note.spans if s.label == Label.AGE]
    sensitive = [(m.start, m.end) for m in matches] + numbers + ages
    chunks = cire(text, output, sensitive=sensitive, chunk_tokens=o.chunk_tokens, judge=judge)

    clf = classifier if classifier is not None else ConceptClassifier(vocab)
    if isinstance(clf, ConceptClassifier):
        lo = clf.logits_from_matches(matches)
        ld = clf.logits_from_matches(_output_matches(output, offsets, matches, vocab))
    else:
        lo, ld = clf.logits([text, output])
    po, pd = softmax(lo), softmax(ld)
    return ClinicalRetention(
        classifier=clf.name, jsc_threshold=o.jsc_threshold, nsdcg_k=o.nsdcg_k,
        classes=sum(1 for p in po.values() if p > o.jsc_threshold),
        jsc=jsc(po, pd, o.jsc_threshold), nsdcg=nsdcg(lo, ld, o.nsdcg_k),
        medical_terms=len(matches), medical_terms_kept=terms_kept,
        medical_term_retention=terms_kept / len(matches) if matches else None,
        numbers=len(numbers), numbers_kept=numbers_kept,
        number_retention=numbers_kept / len(numbers) if numbers else None,
        chunk_tokens=o.chunk_tokens, chunks=chunks.chunks, chunks_changed=chunks.changed,
        chunks_clinical=chunks.clinical, cire=chunks.cire, cire_judge=judge.name if judge is not None else "rules",
    )


def medical_matches(text: str, vocab: Any, message: Intervals, spans: Sequence[Span] = ()) -> list[Any]:
    """The original's medical-dictionary matches, without those on the message's own identifiers, those
    strictly inside a longer span ("mychart" in a URL, "behavioral" in a hospital name, "PM" in a
    date-time: parts of an identifier) and ambiguous ones (also names or places: "Iris", "Wilson") that a
    span covers: the detectors and recovery judged them names. A span that is exactly an unambiguous
    term still counts."""
    ranges = sorted((s.start, s.end) for s in spans)
    out = []
    for m in vocab.find(text):
        if message.overlaps(m.start, m.end):
            continue
        inside = [e - s for s, e in ranges if s <= m.start and m.end <= e]
        if inside and (m.ambiguous or max(inside) > m.end - m.start):
            continue
        out.append(m)
    return out


def medical_term_changes(note: Note, vocab: Any) -> list[tuple[int, int, bool]]:
    """``(start, end, destroyed)`` per medical term of the original (not on the message's identifiers);
    destroyed: a change of the output touches it. Empty without an output."""
    if note.output is None:
        return []
    offsets = OffsetMap.for_note(note.text, note.output, note.replacements)
    msg = Intervals((s.start, s.end) for s in (*note.spans, *note.dropped) if _span_has(s, "message"))
    return [(m.start, m.end, offsets.touched(m.start, m.end))
            for m in medical_matches(note.text, vocab, msg, note.spans)]


def _output_matches(output: str, offsets: OffsetMap, matches: Sequence[Any], vocab: Any) -> list[Any]:
    """The medical matches of the output: the original's untouched ones plus any inside changed text
    (a surrogate can be a term). Bracket tags hold no terms, so tag mode scans nothing."""
    out = [m for m in matches if not offsets.touched(m.start, m.end)]
    for _s, _e, ds, de in offsets.blocks:
        if de > ds and not _TAG.fullmatch(output, ds, de):
            w0, w1 = max(0, ds - _SYNTAX_MARGIN), min(len(output), de + _SYNTAX_MARGIN)
            out.extend(m for m in vocab.find(output[w0:w1]) if m.start + w0 < de and ds < m.end + w0)
    return out


def _syntax(vocab: Any, text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    from dictionaries.medical import medical_syntax_spans

    return medical_syntax_spans(text, vocab.genes, start=start, end=end)


# ------------------------------------------------------------------------------------------ processor

def _load_plugin(spec: str, ctx: BuildContext) -> Any:
    """``package.module:factory`` -> ``factory(ctx)``."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"metrics plugin {spec!r}: expected 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"metrics plugin {spec!r} cannot be loaded ({type(exc).__name__})") from None
    return factory(ctx)


@register("metrics")
class Metrics:
    """Set ``note.metrics`` (a ``schemas.NoteMetrics``): recall proxy + clinical information retention."""

    name = "metrics"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: t of LR@t, LRDI@t, LRQI@t
        threshold: float = Field(default=0.85, ge=0.0, le=1.0)
        #: search each entity only in its aligned output sentence (avoids "Tim" matching "time")
        sentence_window: bool = True
        ignore_case: bool = True
        #: known identifiers with fewer letters/digits are not scored (initials match any letter)
        min_entity_chars: int = Field(default=2, ge=1)
        #: thb of JSC@thb
        jsc_threshold: float = Field(default=0.05, ge=0.0, lt=1.0)
        nsdcg_k: int = Field(default=10, ge=1)
        chunk_tokens: int = Field(default=20, ge=1)
        #: dictionary hits that the ensemble rejected are known identifiers too (not those on medical terms)
        dropped_dictionary: bool = True
        #: other occurrences of a known identifier's value are known identifiers too
        repeats: bool = True
        #: the leak check's findings (identifiers still in the output) are known identifiers too
        leaks: bool = True
        #: scan the original for the message's identifiers: "auto" = only when the dictionary step did not
        message_scan: str = Field(default="auto", pattern="^(auto|always|never)$")
        #: "concepts" or "package.module:factory" (factory(ctx) -> ClinicalClassifier)
        classifier: str = "concepts"
        #: "rules" or "package.module:factory" (factory(ctx) -> ChunkJudge, e.g. an LLM judge)
        cire_judge: str = "rules"

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        from dictionaries.medical import medical_vocabulary

        self.config = config
        self.vocab = medical_vocabulary(ctx.cache_dir)
        # "auto": the dictionary step already matched the message's identifiers in the original (a
        # dictionary step configured with message=false needs message_scan="always" here)
        self.scan_message = config.message_scan == "always" or (config.message_scan == "auto"
                                                                and "dictionary" not in ctx.steps)
        self.options = MetricsOptions(
            threshold=config.threshold, sentences=config.sentence_window, ignore_case=config.ignore_case,
            min_chars=config.min_entity_chars,
            jsc_threshold=config.jsc_threshold, nsdcg_k=config.nsdcg_k, chunk_tokens=config.chunk_tokens,
            dropped_dictionary=config.dropped_dictionary, repeats=config.repeats, leaks=config.leaks,
            redact_providers=ctx.policy.redact_providers,
        )
        self.classifier: ClinicalClassifier = ConceptClassifier(self.vocab)
        if config.classifier != "concepts":
            self.classifier = cast(ClinicalClassifier, _load_plugin(config.classifier, ctx))
        self.judge: ChunkJudge | None = None
        if config.cire_judge != "rules":
            self.judge = cast(ChunkJudge, _load_plugin(config.cire_judge, ctx))
        self._pipeline_versions = ctx.versions
        self._config_hash = ctx.config_hash
        self._versions: Versions | None = None

    def dictionary_versions(self) -> dict[str, str]:
        return {"medical": self.vocab.version}

    def versions(self) -> Versions:
        """The pipeline's versions (every step built), or this step's own outside a Pipeline."""
        if self._versions is None:
            if self._pipeline_versions is not None:
                self._versions = self._pipeline_versions()
            else:
                self._versions = Versions(pipeline=PIPELINE_VERSION, model=None,
                                          dictionaries=self.dictionary_versions(), config_hash=self._config_hash)
        return self._versions

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        versions = self.versions()
        out = []
        for n in notes:
            try:
                metrics = self.measure(n, versions)
            except Exception as exc:  # noqa: BLE001 - metrics inform; they must never send a clean note to the DLQ
                logger.warning("metrics: measuring a note failed (%s); counts only", type(exc).__name__)
                metrics = compute_note_metrics(n.replace(output=None), vocab=self.vocab, versions=versions,
                                               options=self.options)
            out.append(n.replace(metrics=metrics))
        return out

    def measure(self, note: Note, versions: Versions | None = None) -> NoteMetrics:
        message_spans: list[Span] = []
        inp = note.input
        if self.scan_message and (inp.patient is not None or inp.providers or inp.facility is not None):
            message_spans = find_message_identifiers(note.text, inp)
        return compute_note_metrics(note, vocab=self.vocab, versions=versions or self.versions(),
                                    options=self.options, classifier=self.classifier, judge=self.judge,
                                    message_spans=message_spans)
