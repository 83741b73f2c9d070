"""Ranks and rank tests over an algorithms × datasets (or seeds) table: ranks within each block,
the Friedman test, Nemenyi's critical difference and pairwise p-values, Wilcoxon against a
control with Holm's adjustment, and Holm's step-down adjustment itself.

Cut out of :mod:`playerfl_core.stats.metrics`, which re-exports every name here, so chapters keep
reading them through ``metrics as M``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from playerfl_core.stats.exact_tests import min_pvalue, wilcoxon_exact
from playerfl_core.stats.p_values import p_value_text


def to_wide(
    summary: pd.DataFrame, value: str = "median", order: list[str] | None = None
) -> pd.DataFrame:
    """Algorithms × datasets matrix of ``value`` from a long summary, algorithms in ``order``."""
    wide = summary.pivot(index="algorithm", columns="dataset", values=value)
    if order is not None:
        wide = wide.reindex([a for a in order if a in wide.index])
    datasets = list(dict.fromkeys(summary["dataset"]))
    return wide[datasets]


def rank_table(wide: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Per-dataset ranks (1 = best, ties averaged) and their mean over datasets.

    ``wide`` is algorithms × datasets. Missing cells stay missing and the remaining algorithms
    are ranked among themselves; ``mean_rank`` averages over the datasets each algorithm has.
    """
    ranks = pd.DataFrame(index=wide.index, columns=wide.columns, dtype=float)
    for col in wide.columns:
        v = wide[col].astype(float)
        ok = v.notna()
        key = -v[ok] if higher_is_better else v[ok]
        ranks.loc[ok, col] = stats.rankdata(key.to_numpy(), method="average")
    ranks["mean_rank"] = ranks[list(wide.columns)].mean(axis=1)
    return ranks


@dataclass
class FriedmanResult:
    """Outcome of a Friedman test; ``message`` explains NaNs or dropped treatments."""

    statistic: float
    pvalue: float
    n_treatments: int
    n_blocks: int
    orientation: str
    mean_ranks: pd.Series = field(default_factory=pd.Series)
    dropped: list = field(default_factory=list)
    message: str = ""

    def __str__(self):
        p = "n/a" if np.isnan(self.pvalue) else f"{p_value_text(self.pvalue, 3)}"
        s = (
            f"Friedman ({self.orientation} as treatments): {self.n_treatments} treatments, "
            f"{self.n_blocks} blocks, chi2 = {self.statistic:.3f}, p = {p}"
        )
        return s + (f". {self.message}" if self.message else "")


def friedman(
    wide: pd.DataFrame, higher_is_better: bool = True, orientation: str = "algorithms"
) -> FriedmanResult:
    """Friedman test on an algorithms × blocks matrix (blocks: datasets, or seeds).

    ``orientation="algorithms"``: rows (algorithms) are the treatments, columns the blocks —
    the test of "do the algorithms differ?". ``"authors"`` passes the columns as treatments,
    as the authors' code does (appendix §7); its p-value tests whether the *datasets* differ.
    Rows with a missing cell are dropped (listed in ``dropped``). Fewer than 3 treatments or 2
    blocks give NaN with a message instead of an exception.
    """
    if orientation not in ("algorithms", "authors"):
        raise ValueError(f"orientation must be 'algorithms' or 'authors', got {orientation!r}.")
    complete = wide.dropna(axis=0, how="any")
    dropped = [i for i in wide.index if i not in complete.index]
    note = f"Dropped (missing cells): {dropped}." if dropped else ""
    m = complete.to_numpy(dtype=float)
    groups = list(m) if orientation == "algorithms" else list(m.T)
    k, n = len(groups), (len(groups[0]) if groups else 0)
    what = "algorithms" if orientation == "algorithms" else "datasets"
    if orientation == "algorithms" and n:
        ranks = rank_table(complete, higher_is_better)["mean_rank"]
    else:
        ranks = pd.Series(dtype=float)
    if k < 3 or n < 2:
        msg = (
            f"Friedman needs ≥ 3 treatments and ≥ 2 blocks; got {k} treatments and {n} "
            f"blocks. {note}"
        ).strip()
        return FriedmanResult(np.nan, np.nan, k, n, what, ranks, dropped, msg)
    if np.all(np.ptp(np.asarray(groups).T, axis=1) == 0):
        msg = f"Every block ranks all treatments equal (all ties); no evidence either way. {note}"
        return FriedmanResult(0.0, 1.0, k, n, what, ranks, dropped, msg.strip())
    res = stats.friedmanchisquare(*groups)
    if n < 5:
        note = (
            note + " With fewer than 5 blocks the chi-square approximation is rough and "
            "the test has little power."
        ).strip()
    return FriedmanResult(float(res.statistic), float(res.pvalue), k, n, what, ranks, dropped, note)


def nemenyi_cd(n_treatments: int, n_blocks: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference of mean ranks (Demšar 2006): q_α·sqrt(k(k+1)/(6N)).

    q_α is the studentized-range quantile (infinite df) divided by √2.
    """
    k, n = int(n_treatments), int(n_blocks)
    if k < 2 or n < 1:
        raise ValueError(f"Need ≥ 2 treatments and ≥ 1 block, got k={k}, N={n}.")
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def nemenyi_pairs(mean_ranks: pd.Series, cd: float) -> pd.DataFrame:
    """All pairs of treatments with their mean-rank gap and whether it exceeds ``cd``."""
    names = list(mean_ranks.index)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            gap = float(mean_ranks[b] - mean_ranks[a])
            rows.append((a, b, gap, abs(gap) > cd))
    return pd.DataFrame(rows, columns=["a", "b", "rank_gap", "significant"])


def nemenyi_pvalues(wide: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Pairwise Nemenyi p-values after a Friedman test (scikit-posthocs), treatments × treatments.

    ``wide`` is treatments (rows) × blocks (columns); rows with a missing cell are dropped.
    The test compares mean ranks within blocks, so the direction only matters for the ranks.
    """
    import scikit_posthocs as sp  # deferred: about 1 s to import, and only this test needs it

    complete = wide.dropna(axis=0, how="any")
    if complete.shape[0] < 3 or complete.shape[1] < 2:
        raise ValueError(
            f"Nemenyi needs ≥ 3 complete treatments and ≥ 2 blocks, got {complete.shape}."
        )
    data = (complete if higher_is_better else -complete).T.reset_index(drop=True)
    return sp.posthoc_nemenyi_friedman(data)


def wilcoxon_holm(
    wide: pd.DataFrame, control: str, higher_is_better: bool = True, alpha: float = 0.05
) -> pd.DataFrame:
    """Control vs every other row: exact two-sided Wilcoxon signed-rank over blocks, Holm-adjusted.

    Columns: algorithm, n_blocks, median_diff (control − other, direction-aware so positive
    means the control is better), min_p, pvalue, p_holm, reject. A comparison whose smallest
    attainable p (2/2ⁿ over its n non-zero differences; n = 3: 0.25) exceeds ``alpha`` is not
    run: its pvalue and p_holm are NaN and it can never be rejected; Holm's family is the
    comparisons that were run.
    """
    complete = wide.dropna(axis=0, how="any")
    if control not in complete.index:
        raise ValueError(f"Control {control!r} is not a complete row of the table.")
    sign = 1.0 if higher_is_better else -1.0
    rows = []
    for alg in complete.index:
        if alg == control:
            continue
        d = sign * (complete.loc[control].to_numpy(float) - complete.loc[alg].to_numpy(float))
        floor = min_pvalue("wilcoxon", int((d != 0).sum()))
        p = wilcoxon_exact(d) if floor <= alpha else np.nan
        rows.append((alg, len(d), float(np.median(d)), floor, p))
    out = pd.DataFrame(rows, columns=["algorithm", "n_blocks", "median_diff", "min_p", "pvalue"])
    run = out["pvalue"].notna()
    out["p_holm"] = np.nan
    if run.any():
        out.loc[run, "p_holm"] = holm(out.loc[run, "pvalue"].to_numpy())
    out["reject"] = out["p_holm"] <= alpha
    return out


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p, kind="stable")
    adj = np.empty_like(p)
    running = 0.0
    for pos, idx in enumerate(order):
        running = max(running, min(1.0, (len(p) - pos) * p[idx]))
        adj[idx] = running
    return adj
