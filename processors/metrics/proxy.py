"""Recall proxy, after Pissarra et al. (DESIGN.md §5): how well the output removed the identifiers KNOWN to be in
the original (the message's own, dictionary hits, the spans the pipeline removed), measured by the best
Levenshtein ratio of each one over the aligned output sentence (LSI, ALID, LR@t, LRDI@t, LRQI@t)."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from processors.pipeline import Note
from processors.spans import Intervals, OffsetMap
from schemas.labels import Label, Subtype, is_direct
from schemas.metrics import RecallProxy
from schemas.models import Span

#: Safe Harbor allows states and countries: never counted as identifiers that should have gone.
ALLOWED_SUBTYPES = frozenset({Subtype.STATE.value, Subtype.COUNTRY.value})


_SENT_END = re.compile(r"[.!?;](?=\s)|\n")


_WORD_BEFORE = re.compile(r"\w+$")


_ABBREV = frozenset("dr mr mrs ms st vs no prof jr sr mt ft drs approx".split())


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
