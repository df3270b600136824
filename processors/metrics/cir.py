"""Clinical information retention (DESIGN.md §5): clinical classifiers (the concept vector by default), JSC and
NSDCG over their outputs, CIRE after Aghakasiri et al. (token alignment, chunks, a deterministic or LLM
judge), and the medical-term / clinical-number matching behind term and number retention."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rapidfuzz.distance import Levenshtein

from processors.pipeline import Note
from processors.risk import medical_matches
from processors.spans import Intervals, OffsetMap
from schemas.models import Span

NEGATIONS = frozenset(
    "no not denies denied deny denying without negative neg never none nor absent cannot free unable".split()
)


_TOKEN = re.compile(r"[^\W_]+")


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


_SYNTAX_MARGIN = 24


_ID_SHAPE = re.compile(r"\b\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b\d{1,2}:\d{2}(?::\d{2})?\b(?!:)")


_TAG = re.compile(r"\[[A-Z][A-Z0-9_+\- ]*\]")


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
        # sorted: set order follows the process's hash seed, and the weights' order decides the order of the
        # float sums downstream (softmax), so the last digit of NSDCG would differ between two workers
        for c in sorted(classes):
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


def align_tokens_by_blocks(src: Sequence[tuple[int, int]], dst: Sequence[tuple[int, int]], src_words: Sequence[str],
                           dst_words: Sequence[str], blocks: Sequence[tuple[int, int, int, int]],
                           ) -> list[tuple[str, int, int, int, int]] | None:
    """The token alignment of an output made from its original by the changed ``blocks`` (an
    :class:`~processors.spans.OffsetMap`'s: text outside them is identical), in time linear in the tokens.

    A token that neither overlaps nor touches a block is the same token in the output, shifted: those tokens are
    the anchors, and only the tokens between two anchors (the changed ones, a few per replacement) are aligned
    with :func:`align_tokens`. A global alignment of the whole token lists costs their lengths' product (2 s on
    a 1 MiB note). ``None`` when the blocks do not account for the output (an anchor missing there)."""
    anchors: list[tuple[int, int]] = []  # (src token, dst token)
    dst_at = {span: j for j, span in enumerate(dst)}
    k, shift = 0, 0
    for i, (a, b) in enumerate(src):
        while k < len(blocks) and blocks[k][1] < a:  # blocks ending before the token (not touching it)
            s, e, ds, de = blocks[k]
            shift += (de - ds) - (e - s)
            k += 1
        if k < len(blocks) and blocks[k][0] <= b:  # the next block overlaps or touches the token
            continue
        j = dst_at.get((a + shift, b + shift))
        if j is None or dst_words[j] != src_words[i]:
            return None
        anchors.append((i, j))
    ops: list[tuple[str, int, int, int, int]] = []
    pi, pj = -1, -1
    for i, j in [*anchors, (len(src), len(dst))]:
        if i - pi > 1 or j - pj > 1:
            ops.extend((tag, s0 + pi + 1, s1 + pi + 1, d0 + pj + 1, d1 + pj + 1)
                       for tag, s0, s1, d0, d1 in align_tokens(src_words[pi + 1:i], dst_words[pj + 1:j]))
        if i < len(src):
            if ops and ops[-1][0] == "equal" and ops[-1][2] == i and ops[-1][4] == j:
                tag, s0, _s1, d0, _d1 = ops[-1]
                ops[-1] = (tag, s0, i + 1, d0, j + 1)
            else:
                ops.append(("equal", i, i + 1, j, j + 1))
        pi, pj = i, j
    return ops


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
         judge: ChunkJudge | None = None, blocks: Sequence[tuple[int, int, int, int]] | None = None) -> CireResult:
    """Chunks of the original's tokens, changed chunks, and clinically relevant changed chunks.

    ``sensitive``: original ranges that carry clinical information (medical terms, clinical numbers,
    ages). The rules judge calls a changed chunk relevant when a changed original token overlaps one of
    them or is a negation, or when a negation was inserted; with ``judge`` the chunk texts go to it.
    ``blocks``: the changed blocks that made ``output`` from ``text`` (``OffsetMap.blocks``); the tokens are then
    aligned around them in linear time, else by a global alignment."""
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

    ops = align_tokens_by_blocks(src, dst, src_words, dst_words, blocks) if blocks is not None else None
    if ops is None:
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


def span_has(span: Span, source: str) -> bool:
    return source in span.source.split("+")


def medical_term_changes(note: Note, vocab: Any) -> list[tuple[int, int, bool]]:
    """``(start, end, destroyed)`` per medical term of the original (not on the message's identifiers);
    destroyed: a change of the output touches it. Empty without an output."""
    if note.output is None:
        return []
    offsets = OffsetMap.for_note(note.text, note.output, note.replacements)
    msg = Intervals((s.start, s.end) for s in (*note.spans, *note.dropped) if span_has(s, "message"))
    return [(m.start, m.end, offsets.touched(m.start, m.end))
            for m in medical_matches(note.text, vocab, msg, note.spans)]


def output_matches(output: str, offsets: OffsetMap, matches: Sequence[Any], vocab: Any) -> list[Any]:
    """The medical matches of the output: the original's untouched ones plus any inside changed text
    (a surrogate can be a term). Bracket tags hold no terms, so tag mode scans nothing."""
    out = [m for m in matches if not offsets.touched(m.start, m.end)]
    for _s, _e, ds, de in offsets.blocks:
        if de > ds and not _TAG.fullmatch(output, ds, de):
            w0, w1 = max(0, ds - _SYNTAX_MARGIN), min(len(output), de + _SYNTAX_MARGIN)
            out.extend(m for m in vocab.find(output[w0:w1]) if m.start + w0 < de and ds < m.end + w0)
    return out


def syntax_spans(vocab: Any, text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    from dictionaries.medical import medical_syntax_spans

    return medical_syntax_spans(text, vocab.genes, start=start, end=end)
