"""Bootstrap intervals, quantiles and correlations of the evaluation (hand-computed values)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from processors.evaluation.stats import (
    QUANTILE_METHOD,
    auroc,
    bootstrap_ci,
    f1,
    pearson,
    percentile_interval,
    ratio,
    resample_sums,
    resample_weights,
    spearman,
)


def type7(ordered: list[float], q: float) -> float:
    """The quantile the evaluation computed by hand before numpy (Hyndman & Fan type 7)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# ------------------------------------------------------------------------------------------ quantiles

@pytest.mark.parametrize("alpha, expected", [
    # sorted 0, 8, 16, 32; q = 0.25 -> position 0.75: 0 + 8 * 0.75 = 6; q = 0.75 -> 2.25: 16 + 16 * 0.25 = 20
    (0.5, (6.0, 20.0)),
    # q = 0.125 -> position 0.375: 8 * 0.375 = 3; q = 0.875 -> 2.625: 16 + 16 * 0.625 = 26
    (0.25, (3.0, 26.0)),
])
def test_when_an_interval_is_taken_then_it_is_the_hand_computed_type_7_quantile(
        alpha: float, expected: tuple[float, float]) -> None:
    samples = [16.0, 0.0, 32.0, 8.0]
    assert percentile_interval(samples, alpha) == expected
    assert (type7(sorted(samples), alpha / 2), type7(sorted(samples), 1 - alpha / 2)) == expected
    # the other numpy methods give other numbers: the method is the one that reproduces type 7
    assert float(np.quantile(samples, 0.25, method="hazen")) == 4.0 and QUANTILE_METHOD == "linear"


def test_when_samples_are_random_then_numpy_agrees_with_the_hand_written_quantile() -> None:
    rng = random.Random(11)
    for _ in range(500):
        values = sorted(rng.random() for _ in range(rng.randrange(1, 300)))
        alpha = rng.choice([0.05, 0.1, 0.2, 0.5])
        lo, hi = percentile_interval(values, alpha)  # type: ignore[misc]
        # the same definition; numpy interpolates from the upper neighbour past the midpoint, so the last
        # bit or two can differ (never seen in a report: the presidio report.json is unchanged)
        assert lo == pytest.approx(type7(values, alpha / 2), rel=1e-15)
        assert hi == pytest.approx(type7(values, 1 - alpha / 2), rel=1e-15)


def test_when_no_sample_is_defined_then_there_is_no_interval() -> None:
    assert percentile_interval([], 0.05) is None
    assert percentile_interval([math.nan, math.nan], 0.05) is None
    assert percentile_interval([math.nan, 0.5], 0.05) == (0.5, 0.5)


# ------------------------------------------------------------------------------------------ resampling

def test_when_resampling_then_the_draws_are_the_stdlib_stream_resample_after_resample() -> None:
    weights = resample_weights(size=5, n=3, seed=42)
    rng = random.Random(42)
    for row in weights:
        expected = [0] * 5
        for _ in range(5):
            expected[rng.randrange(5)] += 1
        assert row.tolist() == expected
    assert weights.shape == (3, 5) and (weights.sum(axis=1) == 5).all()
    assert resample_weights(size=0, n=4, seed=0).shape == (4, 0)


def test_when_counts_are_resampled_then_each_resample_sums_its_notes() -> None:
    counts = np.array([[[1, 10]], [[2, 20]], [[4, 40]]])  # (notes, groups, fields)
    sums = resample_sums(counts, n=6, seed=3)
    weights = resample_weights(3, 6, 3)
    assert sums.shape == (6, 1, 2)
    assert sums[:, 0, 0].tolist() == (weights @ np.array([1, 2, 4])).tolist()
    assert (sums[:, 0, 1] == 10 * sums[:, 0, 0]).all()


def test_when_ratios_are_undefined_then_they_are_nan() -> None:
    r = ratio(np.array([1, 0, 3]), np.array([2, 0, 4]))
    assert r[0] == 0.5 and math.isnan(r[1]) and r[2] == 0.75
    f = f1(np.array([1.0, 0.0, math.nan, 0.5]), np.array([0.5, 0.0, 1.0, 1.0]))
    assert f[0] == pytest.approx(2 / 3) and f[1] == 0.0 and math.isnan(f[2]) and f[3] == pytest.approx(2 / 3)


def _share(totals: np.ndarray) -> dict[str, np.ndarray]:
    return {"share": ratio(totals[..., 0], totals[..., 1])}


def test_when_bootstrapping_groups_then_they_share_the_resamples() -> None:
    # group 0 and group 1 hold the same counts: the same resamples give the same intervals
    counts = np.array([[[1, 2], [1, 2]], [[0, 2], [0, 2]], [[2, 2], [2, 2]], [[0, 0], [0, 0]]])
    ci = bootstrap_ci(counts, _share, n=200, seed=5)
    assert ci["share"][0] == ci["share"][1]
    lo, hi = ci["share"][0]  # type: ignore[misc]
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    assert ci == bootstrap_ci(counts, _share, n=200, seed=5)
    # a group without a denominator in any resample has no interval
    assert bootstrap_ci(np.zeros((3, 1, 2), dtype=np.int64), _share, n=10)["share"] == [None]


@pytest.mark.parametrize("kwargs", [{"alpha": 0.0}, {"alpha": 1.0}, {"n": 0}])
def test_when_bootstrap_arguments_are_out_of_range_then_value_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci(np.ones((2, 1, 2), dtype=np.int64), _share, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        bootstrap_ci(np.ones((2, 2), dtype=np.int64), _share)


# ------------------------------------------------------------------------------------------ correlation

def test_when_series_are_given_then_pearson_and_spearman_match_hand_values() -> None:
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = 1,2,3,4; y = 1,3,2,4: cov = 4, var_x = var_y = 5 -> 0.8
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([10, 20, 30, 40], [1, 9, 4, 16]) == pytest.approx(0.8)  # ranks 1,3,2,4
    # ties share their mean rank: x ranks 1, 2.5, 2.5, 4 against 1, 2, 3, 4 -> 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


@pytest.mark.parametrize("xs, ys", [
    ([1, 2], [1, 2]),            # fewer than 3 pairs
    ([1, 1, 1], [1, 2, 3]),      # constant x
    ([1, 2, 3], [5, 5, 5]),      # constant y
    ([1, 2, 3], [1, 2]),         # unequal lengths
    ([], []),
])
def test_when_a_correlation_is_undefined_then_it_is_none(xs: list[float], ys: list[float]) -> None:
    assert pearson(xs, ys) is None and spearman(xs, ys) is None


@pytest.mark.parametrize("scores, positive, expected", [
    ([0.1, 0.4, 0.35, 0.8], [False, False, True, True], 0.75),  # 3 of the 4 (pos, neg) pairs ordered right
    ([0.2, 0.2, 0.9], [False, True, True], 0.75),               # a tie counts half
    ([0.9, 0.1], [False, True], 0.0),
    ([0.3, 0.4], [True, True], None),                           # one class only
])
def test_when_scores_rank_positives_then_auroc_is_the_share_of_pairs_ordered_right(
        scores: list[float], positive: list[bool], expected: float | None) -> None:
    got = auroc(scores, positive)
    assert got == (pytest.approx(expected) if expected is not None else None)
