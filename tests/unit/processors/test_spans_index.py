"""processors.spans.ByStart: the items near a range by bisection give what a scan over all of them gives."""

from __future__ import annotations

import random

import pytest

from processors.spans import ByStart


def _items(seed: int, n: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.randrange(0, 500)
        out.append((a, a + rng.choice([0, 1, 2, 5, 30, 120])))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_when_items_are_queried_then_the_index_returns_what_a_scan_returns_in_the_given_order(seed: int) -> None:
    items = _items(seed, 300)
    index = ByStart(items, lambda x: x)
    rng = random.Random(100 + seed)
    for _ in range(300):
        a = rng.randrange(-10, 520)
        b = a + rng.randrange(0, 40)
        reach = rng.choice([0, 3, 17])
        assert index.overlapping(a, b) == [x for x in items if x[0] < b and a < x[1]]
        assert index.near(a, b, reach) == [x for x in items if x[0] <= b + reach and a <= x[1] + reach]


def test_when_there_are_no_items_then_nothing_is_near() -> None:
    index: ByStart[tuple[int, int]] = ByStart([], lambda x: x)
    assert len(index) == 0
    assert index.near(0, 10, 5) == [] and index.overlapping(0, 10) == []
