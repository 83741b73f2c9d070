"""Exact tests over few replicates: the smallest p-value a test can attain, the exact (or seeded
Monte Carlo) null of Spearman's ρ and of its mean over seeds, the exact Wilcoxon test, the exact
sign-flip permutation test of a mean, and the split study's test of a mean: that sign-flip test
confirmed by a studentized bootstrap, which keeps its size on skewed, zero-inflated values.

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
from scipy.special import gammaln

EXACT_PERMUTATION_LIMIT = 8
"""Up to this many units the Spearman null is every one of the m! orderings (8! = 40320)."""
MAX_SUPPORT = 2_000_000
"""Above this many atoms the pooled null is estimated by Monte Carlo (seeded), not convolved."""
SIGN_FLIP_EXACT_LIMIT = 2**21
"""The sign-flip null is exact while each half of the meet in the middle holds at most this many
distinct sign patterns. Values with the same |d| form one group: flipping k equal values gives
k + 1 distinct sums, not 2ᵏ, so 50 seeds with 36 distinct |d| (Heart) are 5.5·10¹¹ patterns,
two halves of under 10⁶; above the limit, :data:`SIGN_FLIP_DRAWS` seeded patterns."""
SIGN_FLIP_DRAWS = 200_000
"""Seeded Monte Carlo sign patterns above :data:`SIGN_FLIP_EXACT_LIMIT` (p ≥ 1/200,001)."""
BOOTSTRAP_DRAWS = 20_000
"""Resamples of :func:`studentized_bootstrap_test` (seeded; a p-value's Monte Carlo standard
error is at most 0.0016 at p = 0.05)."""


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
    is their sum (the mean times n). Exact while the patterns, tied |d| grouped, fit
    :data:`SIGN_FLIP_EXACT_LIMIT`, else a seeded Monte Carlo of :data:`SIGN_FLIP_DRAWS`
    patterns ((1 + hits)/(1 + draws)). Exact when d is symmetric about 0 under the null, and
    asymptotically a test of the mean otherwise (the null's variance is Σd²/n², the mean's):
    unlike the Wilcoxon test, a few large values weigh by their size. On skewed values it does
    not keep its size at 10–20 seeds (:func:`mean_test_confirmed` says why and what does).
    Smallest two-sided p: 2/2ⁿ, as for Wilcoxon."""
    _check_alternative(alternative)
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0
    a = np.abs(d)
    observed = float(d.sum())
    tol = 1e-9 * float(a.sum())  # sums of the same values in another order differ in last bits
    halves = _grouped_halves(a)
    if max(halves[2]) <= SIGN_FLIP_EXACT_LIMIT:
        greater, less = _sign_flip_tails_exact(a, observed, tol, halves)
    else:
        greater, less = _sign_flip_tails_sampled(a, observed, tol, seed)
    return _p_value(greater, less, alternative)


def _check_alternative(alternative: str) -> None:
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}.")


def _p_value(greater: float, less: float, alternative: str) -> float:
    if alternative == "greater":
        return min(1.0, greater)
    if alternative == "less":
        return min(1.0, less)
    return min(1.0, 2 * min(greater, less))


def _group_null(value: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The sums ±value ± … over ``count`` equal values, value·(2b − count) for b positive signs,
    with their binomial probabilities: count + 1 distinct sums, not 2^count."""
    if count == 1:
        return np.array([-value, value]), np.array([0.5, 0.5])
    b = np.arange(count + 1)
    log_p = gammaln(count + 1) - gammaln(b + 1) - gammaln(count - b + 1) - count * math.log(2)
    return value * (2 * b - count), np.exp(log_p)


def _combine(groups) -> tuple[np.ndarray, np.ndarray]:
    """Every sum over the ``groups`` (values, probabilities), with its probability."""
    sums, probs = np.zeros(1), np.ones(1)
    for v, p in groups:
        sums = np.add.outer(sums, v).ravel()
        probs = np.outer(probs, p).ravel()
    return sums, probs


def _grouped_halves(a: np.ndarray) -> tuple[list, list, list[int]]:
    """The sign-flip null of Σ ±aᵢ as two independent halves of groups (values, probabilities),
    tied |d| grouped and the groups dealt so that the halves' pattern counts balance; with the
    halves' pattern counts."""
    values, counts = np.unique(np.round(a, 12), return_counts=True)
    halves, sizes = ([], []), [1, 1]
    for i in np.argsort(-counts, kind="stable"):
        h = 0 if sizes[0] <= sizes[1] else 1
        halves[h].append(_group_null(float(values[i]), int(counts[i])))
        sizes[h] *= int(counts[i]) + 1
    return halves[0], halves[1], sizes


def _sign_flip_tails_exact(
    a: np.ndarray, observed: float, tol: float, halves: tuple | None = None
) -> tuple[float, float]:
    """(P(S ≥ s), P(S ≤ s)) over all sign patterns of ``a`` (tied values grouped; ``halves``:
    :func:`_grouped_halves` of ``a`` where already dealt), by meet in the middle: S = S₁ + S₂
    over the halves, S₂ sorted with its cumulative probabilities, each S₁ counted against it."""
    first_groups, second_groups, _ = halves or _grouped_halves(np.asarray(a, dtype=float))
    first, p_first = _combine(first_groups)
    second, p_second = _combine(second_groups)
    order = np.argsort(second, kind="stable")
    second, p_second = second[order], p_second[order]
    at_most = np.concatenate([[0.0], np.cumsum(p_second)])
    at_least = np.concatenate([np.cumsum(p_second[::-1])[::-1], [0.0]])
    ge = at_least[np.searchsorted(second, observed - tol - first, side="left")]
    le = at_most[np.searchsorted(second, observed + tol - first, side="right")]
    return min(1.0, float(p_first @ ge)), min(1.0, float(p_first @ le))


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


def _t_statistics(x: np.ndarray, centre: float) -> np.ndarray:
    """One-sample t of each row of ``x`` about ``centre``; ±inf (or 0) where a row has no
    spread, so that a resample of equal values sits at the far end it points to."""
    n = x.shape[-1]
    shift = x.mean(axis=-1) - centre
    spread = x.std(axis=-1, ddof=1) / math.sqrt(n)
    flat = spread <= 1e-12 * (np.abs(x).max(axis=-1) + 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = shift / spread
    direction = np.sign(np.round(shift, 12))
    return np.where(flat, np.where(direction > 0, np.inf, np.where(direction < 0, -np.inf, 0.0)), t)


def studentized_bootstrap_test(
    d, alternative: str = "two-sided", seed: int = 0, draws: int = BOOTSTRAP_DRAWS
) -> float:
    """Bootstrap-t test of "the mean of ``d`` is 0" (Efron and Tibshirani 1993, ch. 16; Hall
    1992): the observed t = mean/standard error against the t of ``draws`` seeded
    resamples of d (zeros kept: a value exactly at δ is data), each about the sample's own mean.
    Unlike a sign-flip null, which is symmetric, the resampled t is as skewed as the data make
    it: where a few large values carry the mean, resamples that miss them have a small mean
    and a small standard error, and the test asks for that much more. Its one-sided error is
    O(1/n) where a test against a symmetric null errs by O(1/√n). P-values (1 + hits)/(1 +
    draws); the smallest is 1/(1 + draws), so fewer than 2 values give 1."""
    _check_alternative(alternative)
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return 1.0
    observed = float(_t_statistics(d[None, :], 0.0)[0])
    centre = float(d.mean())
    rng = np.random.default_rng(seed)
    ge = le = 0
    left = draws
    while left:
        k = min(left, max(1, 1_000_000 // len(d)))
        t = _t_statistics(d[rng.integers(0, len(d), size=(k, len(d)))], centre)
        ge += int((t >= observed).sum())
        le += int((t <= observed).sum())
        left -= k
    return _p_value((1 + ge) / (1 + draws), (1 + le) / (1 + draws), alternative)


def mean_test_confirmed(d, alternative: str = "two-sided", seed: int = 0) -> float:
    """The split study's test of a mean: the larger p of the exact sign-flip test
    (:func:`sign_flip_mean_test`) and the studentized bootstrap
    (:func:`studentized_bootstrap_test`), so a mean is significant only where both say so.

    Why both: regrets are zero-inflated and skewed, so δ − regret is not symmetric under the
    null. On samples drawn from R1's committed regrets of each federation with the mean set at
    δ, the sign-flip test alone said "within δ" of up to 14 % (2.5 % nominal; over 5 % on 7 of
    the 26 federations of 10–20 seeds), and "beyond δ" of 33 % where a few regrets are far below
    the rest (Digits). Studentizing the sign-flip statistic (mean over its standard error,
    recomputed under each flip) changes nothing: with the flips keeping Σd², that t is an
    increasing function of Σd, so it orders the sign patterns as the sum does and gives the same
    p. The bootstrap's resampled t carries the skew: it brings 3 of those 7 under 5 % (noisy
    Fashion-MNIST: 12 % to 3 %) and Digits' 33 % to 17 %. The sign-flip test keeps its exact
    floor (2/2ⁿ: fewer than 6 seeds decide nothing) and decides values without spread. Taking
    the larger p keeps the size of whichever is smaller.

    What no test on these seeds can do: where one or two regrets of 10–20 carry the mean, the
    samples that miss them (a third for one value, a tenth for two) look within δ to any test,
    so the size stays near that share: 7–11 % on 4 federations (Fashion-MNIST α = 1, α = 10,
    quantity skew; inverted Digits). ``tests/test_mean_tests.py`` measures two federations."""
    return max(
        sign_flip_mean_test(d, alternative, seed),
        studentized_bootstrap_test(d, alternative, seed),
    )
