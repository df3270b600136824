"""processors.evaluation.folds: k folds by patient group."""

from __future__ import annotations

import pytest

from processors.evaluation.folds import group_folds, splits
from processors.evaluation.gold import GoldNote


def _notes(groups: list[str | None]) -> list[GoldNote]:
    return [GoldNote(f"n{i}", "text", (), group=g) for i, g in enumerate(groups)]


def test_when_notes_share_a_group_then_they_share_a_fold() -> None:
    notes = _notes(["a", "a", "b", "c", "c", "c", "d", "e", None, None])
    folds = group_folds(notes, k=3, seed=1)
    assert sorted(i for f in folds for i in f) == list(range(len(notes)))
    for group in "abcde":
        members = {i for i, n in enumerate(notes) if n.group == group}
        assert sum(1 for f in folds if members & set(f)) == 1, group


def test_when_split_then_no_note_is_both_fitted_and_scored_and_every_note_is_scored_once() -> None:
    notes = _notes([str(i // 3) for i in range(30)])
    scored: list[int] = []
    for fit, held_out in splits(notes, k=5, seed=0):
        assert not set(fit) & set(held_out)
        assert not {notes[i].group for i in fit} & {notes[i].group for i in held_out}
        scored.extend(held_out)
    assert sorted(scored) == list(range(30))


def test_the_split_is_reproducible_and_seeded() -> None:
    notes = _notes([str(i % 7) for i in range(40)])
    assert group_folds(notes, 3, seed=5) == group_folds(notes, 3, seed=5)
    assert len({tuple(map(tuple, group_folds(notes, 3, seed=s))) for s in range(6)}) > 1


@pytest.mark.parametrize("k, groups", [(1, ["a", "b"]), (3, ["a", "a", "b"])])
def test_when_folds_cannot_be_made_then_it_says_why(k: int, groups: list[str | None]) -> None:
    with pytest.raises(ValueError):
        group_folds(_notes(groups), k=k)
