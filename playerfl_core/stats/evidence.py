"""The tests a claim's parts run, each decided by the rule of
:mod:`~playerfl_core.stats.decisions`: rank correlation over few units (pooled over seeds),
pairwise comparison over seeds (Wilcoxon beside baycomp's Bayesian signed-rank test), and the
"best rank" test (Friedman, then Nemenyi).

Cut out of :mod:`playerfl_core.stats.claims`; the claims themselves stay there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from playerfl_core.fl.names import algorithm_label
from playerfl_core.stats.decisions import (
    ALPHA,
    STRONG_FACTOR,
    Evidence,
    _check_alpha,
    decide,
)
from playerfl_core.stats.exact_tests import (
    _atoms,
    _corr_rows,
    _mean_null,
    _ranks,
    _tail_p,
    min_pvalue,
    spearman_null,
    wilcoxon_exact,
)
from playerfl_core.stats.metrics import friedman, nemenyi_pvalues, rank_table
from playerfl_core.stats.p_values import p_value_text


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
    import baycomp  # deferred: about 0.6 s to import, and only this test needs it

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
    where = (
        f"{name} at position {position} of {k} (mean rank {ranks[control]:.2f} over {n} {blocks})"
    )
    if not base.testable or not np.isfinite(fr.pvalue):
        return decide(base), empty
    if fr.pvalue > alpha:
        ev = decide(replace(base, estimate=0.0))
        lean = "none"  # a Friedman test has no direction: nothing leans towards the claim
        reason = (
            f"Friedman p = {p_value_text(fr.pvalue)} > {alpha:g} over {n} {blocks}: the data "
            f"cannot tell the treatments apart; {where}"
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
            f"Friedman p = {p_value_text(fr.pvalue)}; Nemenyi: "
            f"{', '.join(map(algorithm_label, better['other']))} rank "
            f"significantly ahead (p = {p_value_text(p)}); {where}"
        )
        return replace(
            base, pvalue=p, verdict="contradicted", strength=strength, reason=reason
        ), nem
    if position == 1 and (nem["p"] <= alpha).all():
        p = float(nem["p"].max())
        strength = "strong" if p <= alpha / STRONG_FACTOR else "moderate"
        reason = (
            f"Friedman p = {p_value_text(fr.pvalue)}; Nemenyi: ahead of every other "
            f"(max p = {p_value_text(p)})"
        )
        return replace(base, pvalue=p, verdict="supported", strength=strength, reason=reason), nem
    close = nem[nem["p"] > alpha]["other"].tolist()
    reason = (
        f"Friedman p = {p_value_text(fr.pvalue)} ≤ {alpha:g}, but Nemenyi does not separate "
        f"{name} from {len(close)} others; {where}"
    )
    return replace(base, verdict="undecided", strength="weak", reason=reason), nem
