"""Cross-validation folds by patient: no patient's notes both fitted and scored.

Notes carry ``GoldNote.group`` (a corpus's patient group, e.g. PhysioNet's ``patient_group``); notes without a
group are each their own group. Groups are dealt to ``k`` folds in a seeded random order, so fold sizes in
notes are roughly even and the split is reproducible.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Sequence

from processors.evaluation.gold import GoldNote


def group_folds(notes: Sequence[GoldNote], k: int = 5, seed: int = 0) -> list[list[int]]:
    """``k`` lists of note indexes; every group's notes fall in exactly one fold."""
    if k < 2:
        raise ValueError("cross-validation needs k >= 2 folds")
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, note in enumerate(notes):
        by_group[note.group if note.group is not None else f"note:{note.id}"].append(i)
    if len(by_group) < k:
        raise ValueError(f"{len(by_group)} groups cannot fill {k} folds")
    groups = sorted(by_group)
    random.Random(seed).shuffle(groups)
    # largest groups first, each to the fold with the fewest notes so far (ties: lowest fold number)
    groups.sort(key=lambda g: -len(by_group[g]))
    folds: list[list[int]] = [[] for _ in range(k)]
    for g in groups:
        smallest = min(range(k), key=lambda f: (len(folds[f]), f))
        folds[smallest].extend(by_group[g])
    return [sorted(f) for f in folds]


def splits(notes: Sequence[GoldNote], k: int = 5, seed: int = 0) -> Iterator[tuple[list[int], list[int]]]:
    """(fit indexes, score indexes) per fold."""
    folds = group_folds(notes, k, seed)
    for i, held_out in enumerate(folds):
        fit = sorted(j for f, fold in enumerate(folds) if f != i for j in fold)
        yield fit, held_out
