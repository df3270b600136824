"""Statistics of the evaluation, on numpy and scipy: percentile bootstrap intervals over notes, and the
Pearson / Spearman correlations of the report.

Bootstrap: the notes are resampled with replacement ``n`` times; each resample sums the notes' counts and
computes the metrics from the sums; an interval is the ``alpha/2`` and ``1 - alpha/2`` quantiles of the
defined (non-NaN) resampled values (``numpy.quantile`` with ``method="linear"``: linear interpolation
between the order statistics around position ``q * (m - 1)``, Hyndman & Fan type 7).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: The ``numpy.quantile`` method of every interval (type 7, numpy's default, spelled out).
QUANTILE_METHOD: Final = "linear"

Interval = tuple[float, float]
#: Summed counts ``(..., fields)`` -> metric name -> values ``(...)``, NaN where a metric is undefined.
Metrics = Callable[[NDArray[np.int64]], Mapping[str, NDArray[np.float64]]]


def resample_weights(size: int, n: int, seed: int) -> NDArray[np.int64]:
    """How often each of ``size`` notes is drawn in each of ``n`` resamples with replacement, shape
    ``(n, size)``; deterministic for a seed.

    The draws are ``random.Random(seed).randrange(size)``, resample after resample: the stream the
    evaluation has always used, so a seed keeps giving the intervals of earlier reports (numpy's
    generators draw a different stream).
    """
    rng = random.Random(seed)
    draws = np.fromiter((rng.randrange(size) for _ in range(n * size)), dtype=np.int64, count=n * size)
    rows = np.repeat(np.arange(n, dtype=np.int64) * size, size)
    return np.bincount(rows + draws, minlength=n * size).astype(np.int64).reshape(n, size)


def resample_sums(counts: ArrayLike, n: int, seed: int) -> NDArray[np.int64]:
    """Sums of ``counts`` (one row per note, any trailing shape) over the notes of each of ``n``
    resamples: shape ``(n, *counts.shape[1:])``."""
    arr = np.asarray(counts, dtype=np.int64)
    size = arr.shape[0]
    sums = resample_weights(size, n, seed) @ arr.reshape(size, math.prod(arr.shape[1:]))
    return sums.reshape((n, *arr.shape[1:]))


def ratio(num: ArrayLike, den: ArrayLike) -> NDArray[np.float64]:
    """``num / den`` elementwise; NaN where ``den`` is 0."""
    num_f, den_f = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f != 0)
    return out


def f1(precision: ArrayLike, recall: ArrayLike) -> NDArray[np.float64]:
    """Harmonic mean elementwise: 0 where both are 0, NaN where either is NaN."""
    p, r = np.asarray(precision, dtype=np.float64), np.asarray(recall, dtype=np.float64)
    total = p + r
    out = np.zeros(total.shape)
    np.divide(2 * p * r, total, out=out, where=total != 0)  # NaN != 0: NaN propagates
    return out


def percentile_interval(samples: ArrayLike, alpha: float = 0.05) -> Interval | None:
    """The ``alpha/2`` and ``1 - alpha/2`` quantiles of the non-NaN ``samples``; None when there are none."""
    values = np.asarray(samples, dtype=np.float64).ravel()
    values = values[~np.isnan(values)]
    if not values.size:
        return None
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2], method=QUANTILE_METHOD)
    return float(lo), float(hi)


def bootstrap_ci(counts: ArrayLike, metrics: Metrics, *, n: int = 100, seed: int = 0,
                 alpha: float = 0.05) -> dict[str, list[Interval | None]]:
    """Percentile bootstrap intervals, resampling notes; deterministic for a seed.

    ``counts`` has shape ``(notes, groups, fields)``: per note, one row of counts per group (per label, or
    a single group for overall scores); all groups share the same resamples. ``metrics`` computes the
    metrics from summed counts. Returns per metric one interval per group, None where the metric is
    undefined in every resample.
    """
    if not 0 < alpha < 1 or n < 1:
        raise ValueError("need 0 < alpha < 1 and n >= 1")
    arr = np.asarray(counts, dtype=np.int64)
    if arr.ndim != 3:
        raise ValueError("counts must have the shape (notes, groups, fields)")
    samples = metrics(resample_sums(arr, n, seed))
    return {key: [percentile_interval(values[:, g], alpha) for g in range(arr.shape[1])]
            for key, values in samples.items()}


# ------------------------------------------------------------------------------------------ correlation

def _series(xs: Sequence[float], ys: Sequence[float]) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Both series as arrays; None with unequal lengths, fewer than 3 pairs or a constant series."""
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return x, y


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation (``scipy.stats.pearsonr``); None with fewer than 3 pairs or a constant series."""
    series = _series(xs, ys)
    if series is None:
        return None
    from scipy.stats import pearsonr  # scipy.stats takes most of a second to import: only when needed

    result: Any = pearsonr(*series)
    return float(result.statistic)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation (``scipy.stats.spearmanr``: ties share their mean rank); None with fewer
    than 3 pairs or a constant series."""
    series = _series(xs, ys)
    if series is None:
        return None
    from scipy.stats import spearmanr

    result: Any = spearmanr(*series)
    return float(result.statistic)


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float | None:
    """Area under the ROC curve of ``scores`` for ``positive`` (ties count half): the Mann-Whitney U of the
    positives' scores against the negatives' over ``n_pos * n_neg`` (``scipy.stats.mannwhitneyu``). None
    without both classes."""
    pos = [s for s, p in zip(scores, positive, strict=True) if p]
    neg = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not pos or not neg:
        return None
    from scipy.stats import mannwhitneyu

    result: Any = mannwhitneyu(pos, neg, alternative="two-sided")
    return float(result.statistic) / (len(pos) * len(neg))
