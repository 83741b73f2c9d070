"""The per-layer claims: C1 (clients' models diverge more with depth) and C2 (federation
sensitivity tracks the established per-layer measures), with the rank-correlation tests behind
them and the tables chapters 02 and 03 show of them.

Cut out of :mod:`playerfl_core.stats.claims`, which re-exports every name here, so chapters keep
one import (``claims as C``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from playerfl_core.stats.claim_list import evidence_claim
from playerfl_core.stats.decisions import ALPHA, Claim, Evidence, holm_decide
from playerfl_core.stats.evidence import rank_correlation_test
from playerfl_core.stats.seed_stats import NO_OTHER

C2_MEASURES = (
    "grad_variance",
    "grad_noise",
    "hessian_trace",
    "hessian_top_eig",
    "cka_dissimilarity",
)
"""The measures C2 names. ``hessian_trace_per_param`` is shown in chapter 03 as a diagnostic
(the trace divided by the unit's size), not as one of the paper's measures."""


def unit_profiles(
    analytics: pd.DataFrame, metrics: Sequence[str], algorithm: str, stage: str
) -> pd.DataFrame:
    """Client-averaged per-unit values of ``metrics`` per (dataset, seed, depth), wide; datasets
    in the order ``analytics`` first lists them (the chapter's), not alphabetical."""
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
    ).reset_index()
    first_listed = {ds: i for i, ds in enumerate(pd.unique(analytics["dataset"]))}
    by_listing = wide["dataset"].map(first_listed)
    return wide.iloc[by_listing.argsort(kind="stable")].reset_index(drop=True)


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
    return evidence_claim("C1", holm_decide(ev), profile)


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
    return evidence_claim("C2", holm_decide(ev), profile)


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
                            "rho_per_seed": ", ".join(f"{v:.2f}".replace("-", "\u2212") for v in r),
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
                    "rho_per_seed": ", ".join(
                        f"{v:.2f}".replace("-", "\u2212") for v in t.per_seed["rho"].dropna()
                    ),
                    "rho_mean": e.estimate,
                    "n_seeds": e.n,
                    "p": e.pvalue,
                    "p_holm": e.p_adjusted,
                    "verdict": e.verdict,
                    "strength": e.strength,
                }
            )
    return pd.DataFrame(rows)
