"""Statistics of per-example scores: bootstrap intervals of a mean or of a pooled rate, and the
paired sign-flip (permutation) test of two methods scored on the same examples (exact up to 20
examples that differ; issue #58 replaced a paired bootstrap with a shifted null, which read
small or lopsided differences as more certain than they are).

The random ones draw with numpy's seeded generator, so a result depends only on the values,
the number of draws and the seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

_CHUNK = 1000
"""Resamples drawn at a time, so memory stays at CHUNK × n whatever n_boot is."""


def _resamples(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """N_BOOT draws with replacement of N example indices, CHUNK rows at a time."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, _CHUNK):
        yield rng.integers(0, n, size=(min(_CHUNK, n_boot - start), n))


def _resampled_means(values: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Means of N_BOOT samples of VALUES drawn with replacement."""
    if values.ndim != 1 or not len(values):
        raise ValueError("the bootstrap needs a non-empty one-dimensional sequence of values")
    return np.concatenate([values[idx].mean(axis=1)
                           for idx in _resamples(len(values), n_boot, seed)])


def bootstrap_ci(values: Sequence[float], level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of VALUES at confidence LEVEL.

    The bounds are the (1 - level)/2 and (1 + level)/2 quantiles of the means of N_BOOT
    resamples of the values (Efron & Tibshirani 1993, ch. 13).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    means = _resampled_means(np.asarray(values, dtype=float), n_boot, seed)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap_ratio_ci(numerators: Sequence[float], denominators: Sequence[float],
                       level: float = 0.95, n_boot: int = 2000, seed: int = 0,
                       ) -> tuple[float, float]:
    """Percentile bootstrap interval of Σ NUMERATORS / Σ DENOMINATORS, a pooled rate such as
    bits per byte: each resample draws examples with their numerator and denominator together."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if num.ndim != 1 or not len(num) or num.shape != den.shape:
        raise ValueError("the bootstrap needs non-empty numerators and denominators of one length")
    ratios = np.concatenate([num[idx].sum(axis=1) / den[idx].sum(axis=1)
                             for idx in _resamples(len(num), n_boot, seed)])
    low, high = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


EXACT_UP_TO = 20
"""Non-zero differences up to which the sign-flip test enumerates every sign (2^20 at most)."""


def paired_permutation_p(a: Sequence[float], b: Sequence[float], n_perm: int = 10000,
                         seed: int = 0, exact_up_to: int = EXACT_UP_TO) -> float:
    """Two-sided p-value of mean(A) - mean(B) != 0 by the paired sign-flip (permutation) test,
    A[i] and B[i] scored on the same example.

    Under the null each example's difference is as likely to have either sign; the p-value is
    the share of sign assignments whose sum is at least as far from 0 as the observed one.
    Questions on which the two agree (difference 0) change no sum and are left out. With at
    most EXACT_UP_TO non-zero differences every assignment is counted (exact: 9 of 9 in one
    direction gives 2/512 = 0.0039, the exact sign test); above it N_PERM random ones, with
    the observed one counted in (p = (1 + hits) / (1 + N_PERM), never 0). Identical or empty
    samples give 1.0.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    diff = diff[diff != 0.0]
    observed = abs(float(diff.sum()))
    if not len(diff) or observed == 0.0:
        return 1.0
    tolerance = 1e-9 * max(1.0, observed)
    m = len(diff)
    if m <= exact_up_to:
        codes = np.arange(2 ** m, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)
        signs = 1.0 - 2.0 * (codes & 1)
        sums = np.abs(signs @ diff)
        return float(np.mean(sums >= observed - tolerance))
    if n_perm < 1:
        raise ValueError(f"n_perm must be at least 1, got {n_perm}")
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, n_perm, _CHUNK):
        signs = rng.choice((-1.0, 1.0), size=(min(_CHUNK, n_perm - start), m))
        hits += int(np.sum(np.abs(signs @ diff) >= observed - tolerance))
    return (1 + hits) / (1 + n_perm)
