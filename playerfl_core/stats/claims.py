"""Claims and verdicts: the statistics behind every "supported" in the book, in one place.

A **verdict** is exactly one of *supported*, *contradicted* or *undecided*, with an **evidence
strength**. The rule, applied to every test of this module (α = :data:`ALPHA` unless given):

1. **A test that cannot reject is not run.** Before testing, the smallest two-sided p-value the
   test can attain with the data's size is computed exactly (Wilcoxon signed-rank over n
   non-zero pairs: 2/2ⁿ; an exact Spearman permutation test over m units and s seeds:
   2/(m!)ˢ; the exact Friedman permutation test of k treatments over n blocks: (k!)^(1−n),
   see :func:`min_pvalue`). If it exceeds α the verdict is *undecided* with strength *none* and
   the reason says why ("with n = 3 paired seeds the smallest attainable two-sided Wilcoxon p
   is 0.25 > 0.05").
2. **Direction from a two-sided test.** Claims are directional (ρ > 0, A better than B). The
   two-sided p-value decides; its sign gives the direction: p ≤ α with the effect in the
   claimed direction is *supported*, in the opposite direction *contradicted* (each wrong
   direction has probability ≤ α/2 under no effect). Otherwise *undecided*.
3. **Strength.** *strong*: p ≤ α/5 (0.01) and, where a Bayesian test runs beside it, a
   posterior probability ≥ 0.95 for the same direction; *moderate*: any other decided
   verdict; *weak*: undecided but leaning (p ≤ 0.2, the direction is named); *none*: no test,
   or p > 0.2.
4. **Practical equivalence.** Pairwise comparisons also run baycomp's Bayesian signed-rank test
   with a region of practical equivalence (ROPE). When the frequentist test is undecided and
   the posterior puts ≥ 0.95 on the ROPE, a claim of superiority is *contradicted* (moderate):
   the two are practically equal.
5. **Claims with several parts** (datasets, measures) are read as universal: Holm's step-down
   adjustment is applied over the parts that were run (Bonferroni where a part's decision is not
   a single p-value, as for the Nemenyi-based parts of C4), each part is decided on its adjusted
   p-value, and the claim is *contradicted* if any part is, *supported* if every part is, else
   *undecided* (strength *weak* when some parts are decided or leaning, else *none*).

Tests used: exact permutation tests of Spearman's ρ (every one of the m! orderings; a pooled
test of the mean ρ over seeds whose exact null distribution is the convolution of the per-seed
ones), scipy's exact Wilcoxon signed-rank test (sign-flip enumeration when there are ties),
baycomp's ``SignedRankTest``, scipy's Friedman test and scikit-posthocs' Nemenyi post-hoc test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import permutations

import numpy as np
import pandas as pd
from scipy import stats

from playerfl_core.fl.names import algorithm_label

ALPHA = 0.05
"""Significance level of every verdict."""
VERDICTS = ("supported", "contradicted", "undecided")
STRENGTHS = ("strong", "moderate", "weak", "none")
STRONG_FACTOR = 5.0
"""A decided verdict is *strong* when p ≤ α / STRONG_FACTOR (0.01 at α = 0.05)."""
LEAN_P = 0.2
"""An undecided verdict with p ≤ LEAN_P is *weak* evidence in the direction of the effect."""
POSTERIOR_LEVEL = 0.95
"""Posterior probability needed for a strong verdict, and for practical equivalence."""
EXACT_PERMUTATION_LIMIT = 8
"""Up to this many units the Spearman null is every one of the m! orderings (8! = 40320)."""
MAX_SUPPORT = 2_000_000
"""Above this many atoms the pooled null is estimated by Monte Carlo (seeded), not convolved."""


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")


# -- smallest attainable p-values ----------------------------------------------------------------
def min_pvalue(test: str, n: int, units: int | None = None, treatments: int | None = None) -> float:
    """Smallest two-sided p-value ``test`` can attain, exactly.

    ``"wilcoxon"`` / ``"sign"``: ``n`` non-zero paired differences, 2/2ⁿ (only the all-positive
    or all-negative sign pattern reaches the extreme). ``"spearman"``: ``units`` = m ranked
    units in each of ``n`` independent seeds (n = 1: one profile), 2/(m!)ⁿ without ties (only the
    perfect ordering in every seed is extreme). ``"friedman"``: exact permutation test of
    ``treatments`` = k within each of ``n`` blocks; the largest statistic needs every block to
    rank alike, k! of the (k!)ⁿ arrangements, so p ≥ (k!)^(1−n) (one-sided statistic, already
    two-sided in effect). Capped at 1.
    """
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}.")
    if test in ("wilcoxon", "sign"):
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
    raise ValueError(f"Unknown test {test!r}; use 'wilcoxon', 'sign', 'spearman' or 'friedman'.")


# -- evidence and the decision rule --------------------------------------------------------------
@dataclass(frozen=True)
class Evidence:
    """One tested part of a claim, with its verdict. ``estimate`` is signed so that > 0 is the
    claimed direction; ``posterior`` = (P(claimed direction), P(ROPE), P(opposite))."""

    part: str
    test: str
    estimate: float
    n: int
    replicates: str
    pvalue: float
    min_pvalue: float
    alpha: float = ALPHA
    posterior: tuple[float, float, float] | None = None
    p_adjusted: float = float("nan")
    verdict: str = "undecided"
    strength: str = "none"
    reason: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}.")
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength must be one of {STRENGTHS}, got {self.strength!r}.")

    @property
    def testable(self) -> bool:
        """False when the test could not reach α with this many replicates (not run)."""
        return self.min_pvalue <= self.alpha

    def row(self) -> dict:
        post = self.posterior or (np.nan, np.nan, np.nan)
        return {
            "part": self.part,
            "test": self.test,
            "estimate": self.estimate,
            "n": self.n,
            "p": self.pvalue,
            "p_holm": self.p_adjusted,
            "min_p": self.min_pvalue,
            "P(claim)": post[0],
            "P(rope)": post[1],
            "P(opposite)": post[2],
            "verdict": self.verdict,
            "strength": self.strength,
            "reason": self.reason,
        }


def decide(ev: Evidence, pvalue: float | None = None, equivalence: bool = False) -> Evidence:
    """Apply the module's rule (see the module docstring) to ``ev`` with p-value ``pvalue``
    (default ``ev.pvalue``; pass a Holm-adjusted one for multi-part claims). ``equivalence``:
    the claim is one of superiority, so a posterior mass ≥ 0.95 on the ROPE contradicts it."""
    _check_alpha(ev.alpha)
    p = ev.pvalue if pvalue is None else pvalue
    if not ev.testable:
        return replace(
            ev,
            verdict="undecided",
            strength="none",
            reason=(
                f"not run: with n = {ev.n} {ev.replicates} the smallest attainable two-sided p "
                f"of the {ev.test} is {ev.min_pvalue:.3g} > α = {ev.alpha:g}"
            ),
        )
    if not np.isfinite(p) or not np.isfinite(ev.estimate):
        return replace(ev, verdict="undecided", strength="none", reason="no finite test result")
    sign = int(np.sign(ev.estimate))
    label = "adjusted p" if pvalue is not None and pvalue != ev.pvalue else "p"
    if p <= ev.alpha and sign != 0:
        verdict = "supported" if sign > 0 else "contradicted"
        post_ok = ev.posterior is None or (ev.posterior[0 if sign > 0 else 2] >= POSTERIOR_LEVEL)
        strength = "strong" if p <= ev.alpha / STRONG_FACTOR and post_ok else "moderate"
        return replace(
            ev, verdict=verdict, strength=strength, reason=f"{label} = {p:.3g} ≤ α = {ev.alpha:g}"
        )
    if equivalence and ev.posterior is not None and ev.posterior[1] >= POSTERIOR_LEVEL:
        return replace(
            ev,
            verdict="contradicted",
            strength="moderate",
            reason=(
                f"{label} = {p:.3g} > α, and P(ROPE) = {ev.posterior[1]:.2f} ≥ {POSTERIOR_LEVEL}: "
                "practically equivalent"
            ),
        )
    lean = p <= LEAN_P and sign != 0
    towards = "the claim" if sign > 0 else "the opposite"
    return replace(
        ev,
        verdict="undecided",
        strength="weak" if lean else "none",
        reason=f"{label} = {p:.3g} > α = {ev.alpha:g}"
        + (f"; the data lean towards {towards}" if lean else ""),
    )


def holm_decide(parts: Sequence[Evidence], equivalence: bool = False) -> list[Evidence]:
    """Decide every part on its Holm-adjusted p-value, over the parts that were run."""
    from playerfl_core.stats.metrics import holm

    run = [i for i, e in enumerate(parts) if e.testable and np.isfinite(e.pvalue)]
    adjusted = dict(zip(run, holm([parts[i].pvalue for i in run]), strict=True)) if run else {}
    out = []
    for i, e in enumerate(parts):
        p = adjusted.get(i, e.pvalue)
        e = replace(e, p_adjusted=float(p) if i in adjusted else float("nan"))
        out.append(decide(e, float(p) if i in adjusted else None, equivalence))
    return out


@dataclass(frozen=True)
class Verdict:
    verdict: str
    strength: str
    reason: str

    def __post_init__(self):
        if self.verdict not in VERDICTS or self.strength not in STRENGTHS:
            raise ValueError(f"Bad verdict/strength: {self.verdict!r}, {self.strength!r}.")


def combine(parts: Sequence[Evidence]) -> Verdict:
    """The verdict of a universal claim from its decided parts (rule 5 of the module)."""
    if not parts:
        return Verdict("undecided", "none", "no part could be tested")
    if len(parts) == 1:
        return Verdict(parts[0].verdict, parts[0].strength, parts[0].reason)
    order = {s: i for i, s in enumerate(STRENGTHS)}
    counts = {v: sum(p.verdict == v for p in parts) for v in VERDICTS}
    summary = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v]) + f" of {len(parts)}"
    contra = [p for p in parts if p.verdict == "contradicted"]
    if contra:
        strongest = min((p.strength for p in contra), key=order.__getitem__)
        return Verdict("contradicted", strongest, f"{summary} parts")
    if counts["supported"] == len(parts):
        weakest = max((p.strength for p in parts), key=order.__getitem__)
        return Verdict("supported", weakest, f"{summary} parts")
    leaning = any(p.verdict != "undecided" or p.strength == "weak" for p in parts)
    untested = sum(not p.testable for p in parts)
    note = f"; {untested} not run (too few replicates)" if untested else ""
    return Verdict("undecided", "weak" if leaning else "none", f"{summary} parts{note}")


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


@dataclass(frozen=True)
class RankTest:
    """An exact permutation test of Spearman's ρ: per seed and pooled over seeds."""

    per_seed: pd.DataFrame
    """seed, rho, p (two-sided exact, NaN when 2/m! > α), p_greater, p_less, units."""
    evidence: Evidence
    """The pooled test of the mean ρ over seeds, decided."""


def rank_correlation_test(
    profiles: pd.DataFrame,
    x: str,
    y: str,
    part: str = "",
    alpha: float = ALPHA,
    n_mc: int = 20_000,
    seed: int = 0,
) -> RankTest:
    """Is ρ(x, y) across units > 0? ``profiles``: one row per (seed, unit) with columns ``seed``,
    ``x`` and ``y`` (e.g. depth and a client-averaged metric).

    Per seed: the exact permutation p of ρ over all m! orderings (reported only when its
    smallest attainable value 2/m! is ≤ α). Pooled: the mean ρ over seeds against its exact
    null, the convolution of the per-seed nulls (seeds are independent replicates); decided
    by :func:`decide`. A seed whose x or y is constant has no ρ and is left out (counted).
    """
    _check_alpha(alpha)
    rows, nulls, rhos = [], [], []
    for s, g in profiles.groupby("seed", sort=True):
        g = g.dropna(subset=[x, y])
        m = len(g)
        if m < 3 or np.ptp(g[x].to_numpy(float)) == 0 or np.ptp(g[y].to_numpy(float)) == 0:
            rows.append((s, np.nan, np.nan, np.nan, np.nan, m))
            continue
        null = spearman_null(g[x], g[y], n_mc, seed)
        rho = float(_corr_rows(_ranks(g[x]), _ranks(g[y])[None, :])[0])
        pg, pl = _tail_p(null, np.full(len(null), 1.0 / len(null)), rho)
        two = min(1.0, 2 * min(pg, pl))
        rows.append((s, rho, two if min_pvalue("spearman", 1, m) <= alpha else np.nan, pg, pl, m))
        nulls.append(null)
        rhos.append(rho)
    per_seed = pd.DataFrame(rows, columns=["seed", "rho", "p", "p_greater", "p_less", "units"])
    n = len(rhos)
    units = int(per_seed["units"].max()) if len(per_seed) else 0
    if n == 0:
        ev = Evidence(
            part, "exact Spearman permutation test", np.nan, 0, "seeds", np.nan, 1.0, alpha
        )
        return RankTest(per_seed, decide(ev))
    vals, probs = _mean_null(nulls, n_mc, seed)
    mean_rho = float(np.mean(rhos))
    pg, pl = _tail_p(vals, probs, mean_rho)
    extremes = [_atoms(nu)[1] for nu in nulls]
    exact_min = 2 * min(np.prod([a[-1] for a in extremes]), np.prod([a[0] for a in extremes]))
    ev = Evidence(
        part=part,
        test=f"exact permutation test of the mean Spearman ρ over {n} seeds ({units} units)",
        estimate=mean_rho,
        n=n,
        replicates="seeds",
        pvalue=min(1.0, 2 * min(pg, pl)),
        min_pvalue=min(1.0, float(exact_min)),
        alpha=alpha,
    )
    return RankTest(per_seed, decide(ev))


# -- pairwise comparison over seeds --------------------------------------------------------------
def wilcoxon_exact(d, alternative: str = "two-sided", seed: int = 0) -> float:
    """Exact Wilcoxon signed-rank p-value of paired differences ``d`` (zeros dropped): scipy's
    exact null without ties, the full sign-flip enumeration with tied |d|."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0
    ties = len(np.unique(np.abs(d))) < len(d)
    if ties:
        method = stats.PermutationMethod(n_resamples=min(2 ** len(d), 1_000_000), rng=seed)
    else:
        method = "exact"
    return float(stats.wilcoxon(d, alternative=alternative, method=method).pvalue)


def paired_comparison(
    a,
    b,
    part: str = "",
    rope: float = 0.01,
    higher_is_better: bool = True,
    alpha: float = ALPHA,
    seed: int = 0,
    nsamples: int = 20_000,
    replicates: str = "paired seeds",
) -> Evidence:
    """Is ``a`` better than ``b``? Paired scores over seeds (or blocks), as arrays.

    Frequentist: the exact two-sided Wilcoxon signed-rank test of the differences (not run when
    2/2ⁿ > α over the n non-zero differences). Bayesian: baycomp's signed-rank test with
    ``rope`` (same units as the scores), seeded, giving P(a better), P(ROPE), P(b better).
    Decided by :func:`decide` with practical equivalence.
    """
    import baycomp

    _check_alpha(alpha)
    if rope < 0:
        raise ValueError(f"rope must be ≥ 0 (a width in the scores' units), got {rope!r}.")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a and b must be paired (same length), got {len(a)} and {len(b)}.")
    ok = np.isfinite(a) & np.isfinite(b)
    sign = 1.0 if higher_is_better else -1.0
    a, b = sign * a[ok], sign * b[ok]
    d = a - b
    n = int((d != 0).sum())
    p = wilcoxon_exact(d, seed=seed) if min_pvalue("wilcoxon", n) <= alpha else np.nan
    posterior = None
    if len(d) >= 2 and np.any(d != 0):
        probs = baycomp.SignedRankTest.probs(a, b, rope=rope, random_state=seed, nsamples=nsamples)
        probs = tuple(float(v) for v in probs)
        posterior = probs if rope > 0 else (probs[0], 0.0, probs[1])
    ev = Evidence(
        part=part,
        test="exact Wilcoxon signed-rank test",
        estimate=float(np.median(d)) if len(d) else np.nan,
        n=n,
        replicates=replicates,
        pvalue=float(p),
        min_pvalue=min_pvalue("wilcoxon", n),
        alpha=alpha,
        posterior=posterior,
    )
    return decide(ev, equivalence=True)


# -- "best rank" claims --------------------------------------------------------------------------
def best_rank_evidence(
    wide: pd.DataFrame,
    control: str,
    higher_is_better: bool = True,
    part: str = "",
    alpha: float = ALPHA,
    blocks: str = "blocks",
) -> tuple[Evidence, pd.DataFrame]:
    """Does ``control`` rank best? ``wide``: treatments (rows) × blocks (columns).

    The Friedman test (scipy, chi-square) gates: not run when its exact smallest attainable p
    exceeds α; undecided when it does not reject. After a rejection, scikit-posthocs' Nemenyi
    test compares the control with every other treatment: *contradicted* if some treatment
    ranks significantly better than the control, *supported* if the control ranks first and
    significantly better than every other, else undecided. Returns the evidence and the
    Nemenyi table (other, mean_rank, p), empty when not run.
    """
    from playerfl_core.stats.metrics import friedman, nemenyi_pvalues, rank_table

    _check_alpha(alpha)
    complete = wide.dropna(axis=0, how="any")
    if control not in complete.index:
        raise ValueError(
            f"{control!r} is not a complete row of the table; rows: {list(wide.index)}."
        )
    k, n = complete.shape
    ranks = rank_table(complete, higher_is_better)["mean_rank"]
    fr = friedman(complete, higher_is_better)
    position = int((ranks < ranks[control]).sum()) + 1
    estimate = float(ranks.drop(control).min() - ranks[control])  # > 0: control ranks ahead
    base = Evidence(
        part=part,
        test=f"Friedman test ({k} treatments, {n} {blocks}) and Nemenyi post-hoc",
        estimate=estimate,
        n=n,
        replicates=blocks,
        pvalue=fr.pvalue,
        min_pvalue=min_pvalue("friedman", n, treatments=k) if k >= 2 else 1.0,
        alpha=alpha,
    )
    empty = pd.DataFrame(columns=["other", "mean_rank", "p"])
    name = algorithm_label(control)  # reasons are read by people: display names
    where = f"{name} at position {position} of {k} (mean rank {ranks[control]:.2f})"
    if not base.testable or not np.isfinite(fr.pvalue):
        return decide(base), empty
    if fr.pvalue > alpha:
        ev = decide(replace(base, estimate=0.0))
        lean = "none"  # a Friedman test has no direction: nothing leans towards the claim
        reason = (
            f"Friedman p = {fr.pvalue:.2g} > α = {alpha:g} over {n} {blocks}: the data cannot "
            f"tell the treatments apart; {where}"
        )
        return replace(ev, verdict="undecided", strength=lean, reason=reason), empty
    pvals = nemenyi_pvalues(complete, higher_is_better)
    nem = pd.DataFrame(
        {
            "other": [o for o in complete.index if o != control],
            "mean_rank": [float(ranks[o]) for o in complete.index if o != control],
            "p": [float(pvals.loc[control, o]) for o in complete.index if o != control],
        }
    )
    better = nem[(nem["mean_rank"] < ranks[control]) & (nem["p"] <= alpha)]
    if len(better):
        p = float(better["p"].min())
        strength = "strong" if p <= alpha / STRONG_FACTOR else "moderate"
        reason = (
            f"Friedman p = {fr.pvalue:.2g}; Nemenyi: "
            f"{', '.join(map(algorithm_label, better['other']))} rank "
            f"significantly ahead (p = {p:.2g}); {where}"
        )
        return replace(
            base, pvalue=p, verdict="contradicted", strength=strength, reason=reason
        ), nem
    if position == 1 and (nem["p"] <= alpha).all():
        p = float(nem["p"].max())
        strength = "strong" if p <= alpha / STRONG_FACTOR else "moderate"
        reason = f"Friedman p = {fr.pvalue:.2g}; Nemenyi: ahead of every other (max p = {p:.2g})"
        return replace(base, pvalue=p, verdict="supported", strength=strength, reason=reason), nem
    close = nem[nem["p"] > alpha]["other"].tolist()
    reason = (
        f"Friedman p = {fr.pvalue:.2g} ≤ α, but Nemenyi does not separate {name} from "
        f"{len(close)} others; {where}"
    )
    return replace(base, verdict="undecided", strength="weak", reason=reason), nem


# -- the book's claims ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """A claim of the paper, its parts' evidence and the combined verdict."""

    id: str
    statement: str
    chapter: str
    """The chapter (document name) where the evidence is shown."""
    verdict: Verdict
    parts: pd.DataFrame
    """One row per tested part (:meth:`Evidence.row`)."""
    profile: str = ""

    def sentence(self) -> str:
        """ "**supported** (moderate): reason" — for prose and tables."""
        return f"**{self.verdict.verdict}** ({self.verdict.strength}): {self.verdict.reason}"


CLAIMS = {
    "C1": (
        "Clients' models diverge more with depth, already after one local epoch",
        "02_layerwise_divergence",
    ),
    "C2": (
        "Federation sensitivity tracks established per-layer measures "
        "(gradient variance and noise, Hessian trace and top eigenvalue, 1 − CKA)",
        "03_federation_sensitivity",
    ),
    "C3": (
        "PLayer-FL has the best mean macro-F1 rank among all algorithms",
        "05_playerfl_vs_baselines",
    ),
    "C4": (
        "PLayer-FL is the fairest (lowest variance of client macro-F1) and has the highest "
        "incentivized participation rate",
        "05_playerfl_vs_baselines",
    ),
    "C5": (
        "The sensitivity-chosen split beats a random split (PLayer-FL vs PLayer-FL-Random)",
        "05_playerfl_vs_baselines",
    ),
}
"""Claim id → (statement, chapter): the claims the chapters test."""

C2_MEASURES = (
    "grad_variance",
    "grad_noise",
    "hessian_trace",
    "hessian_top_eig",
    "cka_dissimilarity",
)
"""The measures C2 names. ``hessian_trace_per_param`` is shown in chapter 03 as a diagnostic
(the trace divided by the unit's size), not as one of the paper's measures."""


def _claim(cid: str, parts: Sequence[Evidence], profile: str = "") -> Claim:
    statement, chapter = CLAIMS[cid]
    table = pd.DataFrame([p.row() for p in parts])
    return Claim(cid, statement, chapter, combine(parts), table, profile)


def unit_profiles(
    analytics: pd.DataFrame, metrics: Sequence[str], algorithm: str, stage: str
) -> pd.DataFrame:
    """Client-averaged per-unit values of ``metrics`` per (dataset, seed, depth), wide."""
    from playerfl_core.stats.seed_stats import NO_OTHER

    sub = analytics[
        analytics["metric"].isin(metrics)
        & (analytics["other"] == NO_OTHER)
        & (analytics["algorithm"] == algorithm)
        & (analytics["stage"] == stage)
    ]
    if sub.empty:
        raise ValueError(
            f"No analytics rows for metrics {list(metrics)}, algorithm {algorithm!r}, stage "
            f"{stage!r}; stages present: {sorted(analytics['stage'].unique())}."
        )
    wide = sub.pivot_table(
        index=["dataset", "seed", "depth"], columns="metric", values="value", aggfunc="mean"
    )
    return wide.reset_index()


def depth_trend_tests(
    analytics: pd.DataFrame,
    metric: str,
    algorithm: str = "local",
    stage: str = "first",
    alpha: float = ALPHA,
) -> tuple[pd.DataFrame, list[Evidence]]:
    """Per dataset: exact permutation tests of ρ(depth, client-averaged ``metric``) per seed and
    pooled over seeds. Returns (per-seed table with a dataset column, pooled evidence)."""
    prof = unit_profiles(analytics, [metric], algorithm, stage)
    per_seed, evidence = [], []
    for ds, g in prof.groupby("dataset", sort=False):
        t = rank_correlation_test(g, "depth", metric, part=f"{ds}", alpha=alpha)
        per_seed.append(t.per_seed.assign(dataset=ds))
        evidence.append(t.evidence)
    return pd.concat(per_seed, ignore_index=True), evidence


def metric_correlation_tests(
    analytics: pd.DataFrame,
    x: str,
    measures: Sequence[str],
    algorithm: str = "local",
    stage: str = "first",
    alpha: float = ALPHA,
) -> tuple[pd.DataFrame, list[Evidence]]:
    """Per (dataset, measure): exact permutation tests of ρ between the client-averaged ``x``
    and ``measure`` profiles across units, per seed and pooled over seeds."""
    prof = unit_profiles(analytics, [x, *measures], algorithm, stage)
    per_seed, evidence = [], []
    for measure in measures:
        for ds, g in prof.groupby("dataset", sort=False):
            t = rank_correlation_test(g, x, measure, part=f"{ds}: {measure}", alpha=alpha)
            per_seed.append(t.per_seed.assign(dataset=ds, measure=measure))
            evidence.append(t.evidence)
    return pd.concat(per_seed, ignore_index=True), evidence


def c1_divergence_grows(
    analytics: pd.DataFrame,
    alpha: float = ALPHA,
    profile: str = "",
    algorithm: str = "local",
    stage: str = "first",
) -> Claim:
    """C1 per dataset: 1 − CKA rises with depth among ``algorithm``'s clients at ``stage``
    (default: Local after the first epoch)."""
    _, ev = depth_trend_tests(analytics, "cka_dissimilarity", algorithm, stage, alpha)
    return _claim("C1", holm_decide(ev), profile)


def c2_sensitivity_tracks(
    analytics: pd.DataFrame,
    measures: Sequence[str] = C2_MEASURES,
    alpha: float = ALPHA,
    profile: str = "",
    algorithm: str = "local",
    stage: str = "first",
) -> Claim:
    """C2 per (dataset, measure): sensitivity and the measure rank the units alike (ρ > 0)
    on ``algorithm``'s clients at ``stage`` (default: Local after the first epoch)."""
    _, ev = metric_correlation_tests(analytics, "sensitivity", measures, algorithm, stage, alpha)
    return _claim("C2", holm_decide(ev), profile)


def trend_table(
    analytics: pd.DataFrame,
    metrics: Sequence[str],
    algorithms: Sequence[str] = ("local", "fedavg"),
    stages: Sequence[str] = ("first", "final"),
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """ρ(depth, metric) per dataset, algorithm, stage and metric: the per-seed ρ (as text), the
    pooled exact test and its verdict, Holm-adjusted over the datasets of each (metric,
    algorithm, stage). Columns: metric, dataset, algorithm, stage, rho_per_seed, rho_mean,
    rho_min, rho_max, n_seeds, p, min_p, p_holm, verdict, strength."""
    rows = []
    present = set(zip(analytics["algorithm"], analytics["stage"], strict=True))
    for metric in metrics:
        for alg in algorithms:
            for stage in stages:
                if (alg, stage) not in present:
                    continue
                per_seed, ev = depth_trend_tests(analytics, metric, alg, stage, alpha)
                for e in holm_decide(ev):
                    r = per_seed[per_seed["dataset"] == e.part]["rho"].dropna()
                    rows.append(
                        {
                            "metric": metric,
                            "dataset": e.part,
                            "algorithm": alg,
                            "stage": stage,
                            "rho_per_seed": ", ".join(f"{v:.2f}" for v in r),
                            "rho_mean": e.estimate,
                            "rho_min": float(r.min()) if len(r) else np.nan,
                            "rho_max": float(r.max()) if len(r) else np.nan,
                            "n_seeds": e.n,
                            "p": e.pvalue,
                            "min_p": e.min_pvalue,
                            "p_holm": e.p_adjusted,
                            "verdict": e.verdict,
                            "strength": e.strength,
                        }
                    )
    return pd.DataFrame(rows)


def stage_agreement_tests(
    analytics: pd.DataFrame,
    metric: str,
    a: str = "first",
    b: str = "final",
    algorithms: Sequence[str] = ("local", "fedavg"),
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Does the ordering of units by ``metric`` at stage ``a`` persist at stage ``b``? Exact
    permutation tests of ρ between the two client-averaged profiles, per seed and pooled,
    Holm-adjusted over datasets per algorithm. Columns: dataset, algorithm, rho_per_seed,
    rho_mean, n_seeds, p, p_holm, verdict, strength."""
    rows = []
    for alg in algorithms:
        pa = unit_profiles(analytics, [metric], alg, a).rename(columns={metric: a})
        pb = unit_profiles(analytics, [metric], alg, b).rename(columns={metric: b})
        prof = pa.merge(pb, on=["dataset", "seed", "depth"])
        tests = [
            rank_correlation_test(g, a, b, part=ds, alpha=alpha)
            for ds, g in prof.groupby("dataset", sort=False)
        ]
        for t, e in zip(tests, holm_decide([t.evidence for t in tests]), strict=True):
            rows.append(
                {
                    "dataset": e.part,
                    "algorithm": alg,
                    "rho_per_seed": ", ".join(f"{v:.2f}" for v in t.per_seed["rho"].dropna()),
                    "rho_mean": e.estimate,
                    "n_seeds": e.n,
                    "p": e.pvalue,
                    "p_holm": e.p_adjusted,
                    "verdict": e.verdict,
                    "strength": e.strength,
                }
            )
    return pd.DataFrame(rows)


def _blocks_wide(results: pd.DataFrame, metric: str = "macro_f1") -> pd.DataFrame:
    """Algorithms × (dataset, seed) blocks of headline run scores."""
    from playerfl_core.stats.metrics import run_scores

    runs = run_scores(results, metric)
    wide = runs.pivot_table(index="algorithm", columns=["dataset", "seed"], values="value")
    wide.columns = [f"{ds}/seed {seed}" for ds, seed in wide.columns]
    return wide


def c3_best_rank(
    results: pd.DataFrame, control: str = "playerfl", alpha: float = ALPHA, profile: str = ""
) -> Claim:
    """C3: the control's macro-F1 ranks best. Blocks are (dataset, seed) runs: within a seed all
    algorithms share data and initial weights, so each is a block of a randomised block design."""
    ev, _ = best_rank_evidence(
        _blocks_wide(results), control, True, "macro-F1 runs", alpha, "(dataset, seed) blocks"
    )
    return _claim("C3", [ev], profile)


def c4_fairness_and_ipr(
    results: pd.DataFrame,
    control: str = "playerfl",
    references: Sequence[str] = ("local", "fedavg"),
    alpha: float = ALPHA,
    profile: str = "",
) -> Claim:
    """C4: the control has the lowest variance of client macro-F1 and the highest IPR, each a
    single number per dataset (datasets are the blocks), among the non-reference algorithms.
    Each part is decided by :func:`best_rank_evidence` at α/2 (Bonferroni over the two parts:
    its Nemenyi logic is not a single p-value that Holm could adjust)."""
    from playerfl_core.stats import metrics as M

    fair = M.fairness(results, "macro_f1").rename(columns={"variance": "value"})
    ipr = M.ipr(results, "macro_f1").rename(columns={"ipr": "value"})
    fair_w = M.to_wide(fair, "value")
    ipr_w = M.to_wide(ipr, "value")
    others = [a for a in fair_w.index if a not in references]
    half = alpha / 2
    ev_f, _ = best_rank_evidence(fair_w.loc[others], control, False, "fairness", half, "datasets")
    ev_i, _ = best_rank_evidence(ipr_w.loc[others], control, True, "IPR", half, "datasets")
    return _claim("C4", [ev_f, ev_i], profile)


def c5_beats_random(
    results: pd.DataFrame,
    control: str = "playerfl",
    random: str = "playerfl_random",
    rope: float = 0.01,
    alpha: float = ALPHA,
    seed: int = 0,
    profile: str = "",
) -> Claim:
    """C5: the control's headline macro-F1 beats the random split's, paired by (dataset, seed)
    (both share data, initial weights and batches within a seed); ``rope`` in macro-F1."""
    from playerfl_core.stats.metrics import run_scores

    runs = run_scores(results, "macro_f1")
    wide = runs.pivot_table(index=["dataset", "seed"], columns="algorithm", values="value")
    missing = [a for a in (control, random) if a not in wide.columns]
    if missing:
        raise ValueError(f"C5 needs runs of {missing}; algorithms present: {list(wide.columns)}.")
    wide = wide[[control, random]].dropna()
    ev = paired_comparison(
        wide[control],
        wide[random],
        "macro-F1, paired (dataset, seed)",
        rope=rope,
        alpha=alpha,
        seed=seed,
        replicates="paired runs",
    )
    return _claim("C5", [ev], profile)


# -- verdicts read from a bootstrap interval over seeds (the split study) ------------------------
MIN_INTERVAL_SEEDS = 3
"""Below this many seeds an interval decides nothing (a bootstrap over two values is their
range)."""


def interval_strength(n_seeds: int) -> str:
    """Strength of a verdict an interval decides: *strong* with ≥ 10 seeds, *moderate* with 5–9,
    *weak* with 3–4 (a percentile bootstrap over few seeds is too narrow to trust more)."""
    return "strong" if n_seeds >= 10 else "moderate" if n_seeds >= 5 else "weak"


def interval_verdict(
    lo: float, hi: float, n_seeds: int, bound: float = 0.0, claim: str = "above"
) -> Verdict:
    """The claim "the quantity lies ``claim`` (above / below) ``bound``", read from its CI.

    *supported* when the whole interval lies on the claim's side of ``bound``, *contradicted*
    when it lies on the other side, *undecided* (strength *none*) when it contains ``bound`` or
    rests on fewer than :data:`MIN_INTERVAL_SEEDS` seeds.
    """
    if claim not in ("above", "below"):
        raise ValueError(f"claim must be 'above' or 'below', got {claim!r}.")
    if n_seeds < MIN_INTERVAL_SEEDS or not (np.isfinite(lo) and np.isfinite(hi)):
        return Verdict("undecided", "none", f"{n_seeds} seeds: too few for an interval")
    above, below = lo > bound, hi < bound
    if not (above or below):
        return Verdict(
            "undecided", "none", f"[{lo:.3f}, {hi:.3f}] contains {bound:g} ({n_seeds} seeds)"
        )
    word = "supported" if above == (claim == "above") else "contradicted"
    side = "above" if above else "below"
    return Verdict(
        word,
        interval_strength(n_seeds),
        f"[{lo:.3f}, {hi:.3f}] lies {side} {bound:g} ({n_seeds} seeds)",
    )


SPLIT_CLAIMS = {
    "oracle": "the rule's split is as good as the validation oracle's (regret below the tolerance)",
    "C5": "the rule's split beats a random other split at the same learning rate",
}


def split_verdicts(
    regret: pd.DataFrame, c5: pd.DataFrame, heterogeneity: pd.DataFrame, tolerance: float = 0.02
) -> pd.DataFrame:
    """The split study's verdicts, one row per (claim, federation).

    ``regret``: per dataset mean, lo, hi, n_seeds of the rule's regret against the validation
    oracle (``split_oracle.regret_summary``); ``c5``: ``split_oracle.c5_summary`` (its
    ``random (expected)`` rows are C5); ``heterogeneity``: ``split_oracle.heterogeneity_summary``
    (regret, lo, hi, n_seeds per federation). Columns: claim, dataset, family, estimate, lo, hi,
    n_seeds, verdict, strength, reason.
    """
    if not tolerance > 0:
        raise ValueError(f"tolerance must be a positive score difference, got {tolerance!r}.")
    rows = []

    def add(claim, ds, family, est, lo, hi, n, bound, side):
        v = interval_verdict(lo, hi, int(n), bound, side)
        rows.append((claim, ds, family, est, lo, hi, int(n), v.verdict, v.strength, v.reason))

    for r in regret.itertuples():
        add("oracle", r.dataset, "sweep", r.mean, r.lo, r.hi, r.n_seeds, tolerance, "below")
    for r in c5[c5["other"] == "random (expected)"].itertuples():
        add("C5", r.dataset, "sweep", r.mean, r.lo, r.hi, r.n_seeds, 0.0, "above")
    for r in heterogeneity.itertuples():
        add("oracle", r.dataset, r.family, r.regret, r.lo, r.hi, r.n_seeds, tolerance, "below")
    cols = ["claim", "dataset", "family", "estimate", "lo", "hi", "n_seeds", "verdict",
            "strength", "reason"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def split_verdict_lines(verdicts: pd.DataFrame, label=str) -> str:
    """Markdown bullet lines of :func:`split_verdicts`: one per sweep dataset and claim, and one
    count over the heterogeneity federations. ``label`` maps a dataset name to display text."""
    lines = []
    sweep = verdicts[verdicts["family"] == "sweep"]
    for r in sweep.itertuples():
        what = "regret" if r.claim == "oracle" else "difference"
        strength = f"{r.strength} evidence, " if r.verdict != "undecided" else ""
        lines.append(
            f'- {label(r.dataset)}, {"C5: " if r.claim == "C5" else ""}"{SPLIT_CLAIMS[r.claim]}": '
            f"**{r.verdict}** ({strength}{r.n_seeds} seeds; {what} {r.estimate:.3f} "
            f"[{r.lo:.3f}, {r.hi:.3f}])"
        )
    het = verdicts[verdicts["family"] != "sweep"]
    if len(het):
        counts = het["verdict"].value_counts()
        seeds = sorted(het["n_seeds"].unique())
        span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        lines.append(
            f"- Heterogeneity: the rule is as good as the oracle on {counts.get('supported', 0)} "
            f"of {len(het)} federations, worse on {counts.get('contradicted', 0)}, undecided on "
            f"{counts.get('undecided', 0)} ({span} seeds each)."
        )
    return "\n".join(lines)


def describe_profile(profile: str, *tables: pd.DataFrame) -> str:
    """ "quick: 3 datasets, 2–3 seeds" from the tables' dataset and seed columns."""
    seeds = [n for t in tables for n in t.groupby("dataset")["seed"].nunique().tolist()]
    datasets = sorted({d for t in tables for d in t["dataset"].unique()})
    lo, hi = (min(seeds), max(seeds)) if seeds else (0, 0)
    span = f"{lo}" if lo == hi else f"{lo}–{hi}"
    plural = "s" if len(datasets) != 1 else ""
    return f"{profile}: {len(datasets)} dataset{plural}, {span} seeds"


def scorecard(claims: Sequence[Claim], links: bool = True) -> pd.DataFrame:
    """The scorecard: claim, statement, verdict, strength, reason, profile, chapter (a MyST
    ``{doc}`` link when ``links``), one row per claim in the order given."""
    rows = []
    for c in claims:
        rows.append(
            {
                "claim": c.id,
                "statement": c.statement,
                "verdict": c.verdict.verdict,
                "strength": c.verdict.strength,
                "evidence": c.verdict.reason,
                "profile": c.profile,
                "chapter": f"{{doc}}`{c.chapter}`" if links else c.chapter,
            }
        )
    return pd.DataFrame(rows)


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (cells as text, pipes escaped), for glue as Markdown."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def scorecard_html(card: pd.DataFrame) -> str:
    """The scorecard as an HTML table whose chapter cells link to ``<chapter>.html`` (for glue
    across pages, where only HTML and plain text are pasted)."""
    import html

    cols = ["claim", "statement", "verdict", "strength", "evidence", "profile", "chapter"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = []
    for r in card.itertuples(index=False):
        cells = []
        for c in cols:
            v = str(getattr(r, c))
            if c == "chapter":
                doc = v.removeprefix("{doc}`").removesuffix("`")
                cells.append(f'<td><a href="{html.escape(doc)}.html">{html.escape(doc)}</a></td>')
            elif c == "verdict":
                cells.append(f"<td><b>{html.escape(v)}</b></td>")
            else:
                cells.append(f"<td>{html.escape(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
