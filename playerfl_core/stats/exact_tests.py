"""Exact tests over few replicates: the smallest p-value a test can attain, the exact (or seeded
Monte Carlo) null of Spearman's ρ and of its mean over seeds, the exact Wilcoxon test, and the
exact sign-flip permutation test of a mean (the split study's test: its text claims means).

Cut out of :mod:`playerfl_core.stats.claims`: :mod:`~playerfl_core.stats.metrics`
uses these tests too, and taking them from here keeps metrics and claims out of a circle. No
verdicts here: :mod:`~playerfl_core.stats.decisions` turns p-values into verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import permutations

import numpy as np
from scipy import stats

EXACT_PERMUTATION_LIMIT = 8
"""Up to this many units the Spearman null is every one of the m! orderings (8! = 40320)."""
MAX_SUPPORT = 2_000_000
"""Above this many atoms the pooled null is estimated by Monte Carlo (seeded), not convolved."""
SIGN_FLIP_EXACT_LIMIT = 40
"""Up to this many non-zero values the sign-flip null is every one of the 2ⁿ sign patterns
(meet in the middle: two halves of at most 2²⁰ sums each); above, :data:`SIGN_FLIP_DRAWS`."""
SIGN_FLIP_DRAWS = 200_000
"""Seeded Monte Carlo sign patterns above :data:`SIGN_FLIP_EXACT_LIMIT` (p ≥ 1/200,001)."""


# -- smallest attainable p-values ----------------------------------------------------------------
def min_pvalue(test: str, n: int, units: int | None = None, treatments: int | None = None) -> float:
    """Smallest two-sided p-value ``test`` can attain, exactly.

    ``"wilcoxon"`` / ``"sign"`` / ``"sign_flip"``: ``n`` non-zero paired differences, 2/2ⁿ
    (only the all-positive or all-negative sign pattern reaches the extreme). ``"spearman"``:
    ``units`` = m ranked units in each of ``n`` independent seeds (n = 1: one profile), 2/(m!)ⁿ
    without ties (only the perfect ordering in every seed is extreme). ``"friedman"``: exact
    permutation test of ``treatments`` = k within each of ``n`` blocks; the largest statistic
    needs every block to rank alike, k! of the (k!)ⁿ arrangements, so p ≥ (k!)^(1−n) (one-sided
    statistic, already two-sided in effect). Capped at 1.
    """
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}.")
    if test in ("wilcoxon", "sign", "sign_flip"):
        return min(1.0, 2.0 / 2.0**n)
    if test == "spearman":
        if units is None or units < 2:
            raise ValueError(f"spearman needs units ≥ 2 (ranked units per profile), got {units}.")
        if n == 0:
            return 1.0
        return min(1.0, 2.0 * math.exp(-n * math.lgamma(units + 1)))
    if test == "friedman":
        if treatments is None or treatments < 2:
            raise ValueError(f"friedman needs treatments ≥ 2, got {treatments}.")
        if n < 2:
            return 1.0
        return min(1.0, math.exp((1 - n) * math.lgamma(treatments + 1)))
    raise ValueError(
        f"Unknown test {test!r}; use 'wilcoxon', 'sign', 'sign_flip', 'spearman' or 'friedman'."
    )


# -- rank correlation over few units -------------------------------------------------------------
def _ranks(v) -> np.ndarray:
    return stats.rankdata(np.asarray(v, dtype=float), method="average")


def _corr_rows(rx: np.ndarray, ry_rows: np.ndarray) -> np.ndarray:
    """Pearson correlation of ``rx`` with every row of ``ry_rows`` (ranks → Spearman ρ)."""
    a = rx - rx.mean()
    b = ry_rows - ry_rows.mean(axis=1, keepdims=True)
    den = np.sqrt((a**2).sum()) * np.sqrt((b**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (b @ a) / den


def spearman_null(x, y, n_mc: int = 20_000, seed: int = 0) -> np.ndarray:
    """Spearman ρ of ``x`` against every ordering of ``y``: all m! permutations when
    m ≤ :data:`EXACT_PERMUTATION_LIMIT` (each equally likely under no association), else
    ``n_mc`` permutations from a seeded generator."""
    rx, ry = _ranks(x), _ranks(y)
    m = len(rx)
    if m != len(ry) or m < 2:
        raise ValueError(f"x and y need the same length ≥ 2, got {len(rx)} and {len(ry)}.")
    if m <= EXACT_PERMUTATION_LIMIT:
        idx = np.array(list(permutations(range(m))))
    else:
        rng = np.random.default_rng(seed)
        idx = np.array([rng.permutation(m) for _ in range(n_mc)])
    return _corr_rows(rx, ry[idx])


def _tail_p(null_values, null_probs, observed: float) -> tuple[float, float]:
    """(P(T ≥ t), P(T ≤ t)) of a discrete null, with a tolerance for floating-point ties."""
    tol = 1e-9
    greater = float(null_probs[null_values >= observed - tol].sum())
    less = float(null_probs[null_values <= observed + tol].sum())
    return min(1.0, greater), min(1.0, less)


def _atoms(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.round(np.asarray(values, dtype=float), 10)
    u, counts = np.unique(v, return_counts=True)
    return u, counts / counts.sum()


def _mean_null(nulls: Sequence[np.ndarray], n_mc: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Null distribution of the mean of independent statistics, each uniform over its ``nulls``
    entry: exact convolution, or a seeded Monte Carlo above :data:`MAX_SUPPORT` atoms."""
    atoms = [_atoms(n) for n in nulls]
    if math.prod(len(a[0]) for a in atoms) <= MAX_SUPPORT:
        vals, probs = np.array([0.0]), np.array([1.0])
        for v, p in atoms:
            vals, probs = _atoms_weighted(np.add.outer(vals, v).ravel(), np.outer(probs, p).ravel())
        return vals / len(nulls), probs
    rng = np.random.default_rng(seed)
    draws = np.mean([rng.choice(n, size=n_mc) for n in nulls], axis=0)
    return draws, np.full(n_mc, 1.0 / n_mc)


def _atoms_weighted(values: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, inv = np.unique(np.round(values, 10), return_inverse=True)
    return u, np.bincount(inv, weights=probs)


# -- pairwise comparison over seeds --------------------------------------------------------------
def wilcoxon_exact(d, alternative: str = "two-sided", seed: int = 0) -> float:
    """Exact Wilcoxon signed-rank p-value of paired differences ``d`` (zeros dropped): scipy's
    exact null without ties; with tied |d|, the exact sign-flip null of the midrank statistic,
    computed by counting subset sums (:func:`_signed_rank_null`), fast for any n. ``seed`` is
    kept for callers; nothing is sampled."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0
    if len(np.unique(np.abs(d))) == len(d):
        return float(stats.wilcoxon(d, alternative=alternative, method="exact").pvalue)
    ranks = stats.rankdata(np.abs(d))  # midranks: 2·rank is an integer
    weights = np.rint(2 * ranks).astype(int)
    observed = int(weights[d > 0].sum())
    probs = _signed_rank_null(weights)
    greater, less = float(probs[observed:].sum()), float(probs[: observed + 1].sum())
    if alternative == "greater":
        return min(1.0, greater)
    if alternative == "less":
        return min(1.0, less)
    if alternative != "two-sided":
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}.")
    return min(1.0, 2 * min(greater, less))


def _signed_rank_null(weights: np.ndarray) -> np.ndarray:
    """P(S = s) for S = Σ wᵢ·bᵢ with independent fair bᵢ ∈ {0, 1} (every sign flip equally
    likely under no effect), by dynamic programming over the integer weights."""
    probs = np.zeros(int(weights.sum()) + 1)
    probs[0] = 1.0
    for w in weights:
        shifted = np.zeros_like(probs)
        shifted[w:] = probs[: len(probs) - w]
        probs = 0.5 * (probs + shifted)
    return probs


# -- the mean of paired values over seeds --------------------------------------------------------
def sign_flip_mean_test(d, alternative: str = "two-sided", seed: int = 0) -> float:
    """Exact sign-flip permutation test of the mean of ``d`` (Fisher–Pitman; zeros dropped).

    Under the null every sign pattern of the non-zero values is equally likely; the statistic
    is their sum (the mean times n). Exact over all 2ⁿ patterns up to
    :data:`SIGN_FLIP_EXACT_LIMIT` values, else a seeded Monte Carlo of :data:`SIGN_FLIP_DRAWS`
    patterns ((1 + hits)/(1 + draws)). Exact when d is symmetric about 0 under the null, and
    asymptotically a test of the mean otherwise (the null's variance is Σd²/n², the mean's):
    unlike the Wilcoxon test, a few large values weigh by their size, so a zero-inflated,
    right-skewed regret is judged by its mean. Smallest two-sided p: 2/2ⁿ, as for Wilcoxon."""
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}.")
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0
    a = np.abs(d)
    observed = float(d.sum())
    tol = 1e-9 * float(a.sum())  # sums of the same values in another order differ in last bits
    if len(a) <= SIGN_FLIP_EXACT_LIMIT:
        greater, less = _sign_flip_tails_exact(a, observed, tol)
    else:
        greater, less = _sign_flip_tails_sampled(a, observed, tol, seed)
    if alternative == "greater":
        return min(1.0, greater)
    if alternative == "less":
        return min(1.0, less)
    return min(1.0, 2 * min(greater, less))


def _signed_sums(a: np.ndarray) -> np.ndarray:
    """Every Σ ±aᵢ (2^len(a) values)."""
    sums = np.zeros(1)
    for x in a:
        sums = np.concatenate([sums + x, sums - x])
    return sums


def _sign_flip_tails_exact(a: np.ndarray, observed: float, tol: float) -> tuple[float, float]:
    """(P(S ≥ s), P(S ≤ s)) over all sign patterns, by meet in the middle: S = S₁ + S₂ with the
    halves' sums enumerated, S₂ sorted, and each S₁ counted against it."""
    half = len(a) // 2
    first, second = _signed_sums(a[:half]), np.sort(_signed_sums(a[half:]))
    total = float(len(first)) * len(second)
    n_ge = len(second) - np.searchsorted(second, observed - tol - first, side="left")
    n_le = np.searchsorted(second, observed + tol - first, side="right")
    return float(n_ge.sum()) / total, float(n_le.sum()) / total


def _sign_flip_tails_sampled(
    a: np.ndarray, observed: float, tol: float, seed: int
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    ge = le = 0
    left = SIGN_FLIP_DRAWS
    while left:
        k = min(left, 20_000)
        sums = (rng.integers(0, 2, size=(k, len(a))) * 2 - 1) @ a
        ge += int((sums >= observed - tol).sum())
        le += int((sums <= observed + tol).sum())
        left -= k
    return (1 + ge) / (1 + SIGN_FLIP_DRAWS), (1 + le) / (1 + SIGN_FLIP_DRAWS)
