"""The vectorised decoding (:func:`processors.ner.step.decode_spans`) against the per-piece loop it replaced.

``reference_decode`` is the grouping loop as it was (one Python step per word piece; the runs it finds become spans
through the same :func:`~processors.ner.step.spans_from_runs` as the step's); on random texts, offsets and
probabilities built to hit every branch (empty pieces, glued pieces inside words, B over I, label changes,
mixed subtypes, thresholds) both must give the same spans, scores included."""

from __future__ import annotations

import random

import numpy as np
import pytest

from processors.ner.step import (
    TagIndex,
    _char_kind,
    bio_tags,
    decode_spans,
    parse_class,
    piece_scores,
    spans_from_runs,
)
from schemas.models import Span

CLASSES = ["NAME/PATIENT", "NAME/PROVIDER", "NAME/RELATIVE", "DATE", "ID", "LOCATION"]
INDEX = TagIndex.from_tags(bio_tags(CLASSES))


def reference_decode(text: str, offsets: np.ndarray, probs: np.ndarray, index: TagIndex, *,
                     token_threshold: float = 0.5, min_score: float = 0.0, source: str = "ner") -> list[Span]:
    n = len(offsets)
    if n == 0:
        return []
    p_class, best, p_entity, is_entity, begins = piece_scores(probs, index, token_threshold)
    label_of = [str(parse_class(c)[0]) for c in index.classes]
    raw: list[tuple[int, int, int, float]] = []
    members: list[int] = []

    def close() -> None:
        if not members:
            return
        mass = p_class[members].sum(axis=0)
        same = [k for k in range(len(index.classes)) if label_of[k] == label_of[int(best[members[0]])]]
        cls = max(same, key=lambda k: float(mass[k]))
        raw.append((int(offsets[members[0], 0]), int(offsets[members[-1], 1]), cls,
                    float(p_entity[members].mean())))
        members.clear()

    for i in range(n):
        a, b = int(offsets[i, 0]), int(offsets[i, 1])
        if b <= a:
            continue
        if not is_entity[i]:
            close()
            continue
        c = int(best[i])
        if members:
            last = members[-1]
            end = int(offsets[last, 1])
            glued = a == end and _char_kind(text[a]) != 0 and _char_kind(text[a]) == _char_kind(text[a - 1])
            if glued or (label_of[c] == label_of[int(best[last])] and not begins[i]):
                members.append(i)
                continue
            close()
        members.append(i)
    close()
    return spans_from_runs(text, raw, index, min_score=min_score, source=source)


def random_case(rng: random.Random) -> tuple[str, np.ndarray, np.ndarray]:
    """A text cut into pieces (words split into glued pieces, punctuation, some empty pieces) and tag
    probabilities that favour runs of entity pieces."""
    words = ["Stockum", "94F", "Mercy", "General", ",", "(555)", "123-4567", "St.", "Jr", "the", "on", "12/03",
             "O'Neil", "tues", "x", "-", "MRN", "0042", "Dr", "."]
    text, offsets = "", []
    for _ in range(rng.randint(0, 40)):
        w = rng.choice(words)
        start = len(text) + (1 if text else 0)
        text += (" " if text else "") + w
        cut = sorted(rng.sample(range(1, len(w)), k=min(len(w) - 1, rng.randint(0, 2)))) if len(w) > 1 else []
        bounds = [0, *cut, len(w)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            offsets.append((start + a, start + b))
        if rng.random() < 0.1:
            offsets.append((start + len(w), start + len(w)))  # an empty piece (special tokens have these)
    n, n_tags = len(offsets), 1 + 2 * len(CLASSES)
    probs = np.zeros((n, n_tags), dtype=np.float32)
    entity_run = False
    for i in range(n):
        if rng.random() < 0.3:
            entity_run = not entity_run
        logits = np.asarray([rng.gauss(0, 1.5) for _ in range(n_tags)], dtype=np.float32)
        logits[0] += -3.0 if entity_run else 3.0
        if rng.random() < 0.05:
            logits[:] = 0.0  # exact ties between classes
        e = np.exp(logits - logits.max())
        probs[i] = e / e.sum()
    return text, np.asarray(offsets, dtype=np.int64).reshape(-1, 2), probs


@pytest.mark.parametrize("seed", range(8))
def test_when_random_pieces_are_decoded_then_spans_equal_the_per_piece_loop(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        text, offsets, probs = random_case(rng)
        for threshold, min_score in ((0.5, 0.0), (0.03, 0.03), (0.9, 0.5)):
            got = decode_spans(text, offsets, probs, INDEX, token_threshold=threshold, min_score=min_score)
            want = reference_decode(text, offsets, probs, INDEX, token_threshold=threshold, min_score=min_score)
            assert got == want
