"""Claims and verdicts: the statistics behind every "supported" in the book.

A **verdict** is exactly one of *supported*, *contradicted* or *undecided*, with an **evidence
strength**, decided by one rule, stated once in :mod:`~playerfl_core.stats.decisions` (a test
that cannot reach α is not run; direction from a two-sided test; strength from the p-value;
practical equivalence through a ROPE; Holm over the parts of a claim).

Tests used: exact permutation tests of Spearman's ρ (every one of the m! orderings; a pooled
test of the mean ρ over seeds whose exact null distribution is the convolution of the per-seed
ones), scipy's exact Wilcoxon signed-rank test (sign-flip enumeration when there are ties),
the exact sign-flip permutation test of a mean (the split study's R1, R2 and C5 at one learning
rate: their text reports means), baycomp's ``SignedRankTest``, scipy's Friedman test and
scikit-posthocs' Nemenyi post-hoc test.

Where each part lives: the exact tests in :mod:`~playerfl_core.stats.exact_tests`, the rule in
:mod:`~playerfl_core.stats.decisions`, the tests a part runs in
:mod:`~playerfl_core.stats.evidence`, the split study's interval verdicts in
:mod:`~playerfl_core.stats.split_verdicts`, the scorecard in
:mod:`~playerfl_core.stats.scorecard`; this module holds the book's claims and re-exports the
others' names (:data:`__all__`), so a chapter needs one import (``claims as C``). About 450
lines, of which the re-export list takes 45.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from playerfl_core.stats.decisions import (
    ALPHA,
    LEAN_P,
    POSTERIOR_LEVEL,
    STRENGTHS,
    STRONG_FACTOR,
    VERDICTS,
    Claim,
    Evidence,
    Verdict,
    combine,
    decide,
    holm_decide,
)
from playerfl_core.stats.evidence import (
    RankTest,
    best_rank_evidence,
    paired_comparison,
    rank_correlation_test,
)
from playerfl_core.stats.exact_tests import (
    EXACT_PERMUTATION_LIMIT,
    MAX_SUPPORT,
    min_pvalue,
    spearman_null,
    wilcoxon_exact,
)
from playerfl_core.stats.scorecard import (
    describe_profile,
    markdown_table,
    scorecard,
    scorecard_html,
)
from playerfl_core.stats.split_verdicts import (
    C5_COMPARISONS,
    SPLIT_CLAIMS,
    TOLERANCE,
    TUNED_PART,
    c5_family,
    decide_family,
    difference_evidence,
    r1_family,
    split_verdict_lines,
    split_verdicts,
    tolerance_curve,
    tolerance_evidence,
    tolerance_verdicts,
)

__all__ = [  # chapters read the claims' statistics through this one module (``claims as C``)
    "ALPHA",
    "C2_MEASURES",
    "CLAIMS",
    "EXACT_PERMUTATION_LIMIT",
    "LEAN_P",
    "MAX_SUPPORT",
    "POSTERIOR_LEVEL",
    "SPLIT_CLAIMS",
    "STRENGTHS",
    "STRONG_FACTOR",
    "VERDICTS",
    "Claim",
    "Evidence",
    "RankTest",
    "Verdict",
    "best_rank_evidence",
    "c1_divergence_grows",
    "c2_sensitivity_tracks",
    "c3_best_rank",
    "c4_fairness_and_ipr",
    "c5_beats_random",
    "c5_family",
    "C5_COMPARISONS",
    "TUNED_PART",
    "combine",
    "decide",
    "depth_trend_tests",
    "describe_profile",
    "holm_decide",
    "markdown_table",
    "metric_correlation_tests",
    "min_pvalue",
    "paired_comparison",
    "rank_correlation_test",
    "scorecard",
    "scorecard_html",
    "spearman_null",
    "split_verdict_lines",
    "split_verdicts",
    "claim_from",
    "m1_sensitivity_ranks_cost",
    "r1_rule_finds_oracle",
    "r1_family",
    "TOLERANCE",
    "decide_family",
    "difference_evidence",
    "tolerance_curve",
    "tolerance_evidence",
    "tolerance_verdicts",
    "stage_agreement_tests",
    "trend_table",
    "unit_profiles",
    "wilcoxon_exact",
]


# -- the book's claims ---------------------------------------------------------------------------
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
        "The sensitivity-chosen split beats a random split (PLayer-FL vs PLayer-FL-Random, each "
        "at its tuned learning rate; and every split at one learning rate)",
        "05_playerfl_vs_baselines",
    ),
    "M1": (
        "Federation sensitivity sₖ ranks layer units like the measured cost of averaging them",
        "03a_the_algorithm_and_its_metric",
    ),
    "R1": (
        "The rule's split is as good as the validation oracle's (regret within δ = 0.02) on "
        "every federation",
        "04_does_the_rule_pick_the_right_split",
    ),
    "R2": (
        "Some rule that reads only the first local epoch keeps the regret within δ = 0.02 on "
        "every kind of heterogeneity (pre-registered tests)",
        "04b_beyond_the_paper",
    ),
}
"""Claim id → (statement, chapter): the paper's claims (C1–C5) and the book's own (M1, R1, R2),
each tested where its chapter is."""

C2_MEASURES = (
    "grad_variance",
    "grad_noise",
    "hessian_trace",
    "hessian_top_eig",
    "cka_dissimilarity",
)
"""The measures C2 names. ``hessian_trace_per_param`` is shown in chapter 03 as a diagnostic
(the trace divided by the unit's size), not as one of the paper's measures."""


def claim_from(cid: str, parts: pd.DataFrame, verdict: Verdict, profile: str = "") -> Claim:
    """A claim of :data:`CLAIMS` with its parts table and a verdict decided elsewhere (R2's,
    which is existential over rules: :func:`playerfl_core.study.preregistration.claim`)."""
    statement, chapter = CLAIMS[cid]
    return Claim(cid, statement, chapter, verdict, parts, profile)


def _claim(cid: str, parts: Sequence[Evidence], profile: str = "") -> Claim:
    statement, chapter = CLAIMS[cid]
    table = pd.DataFrame([p.row() for p in parts])
    return Claim(cid, statement, chapter, combine(parts), table, profile)


def unit_profiles(
    analytics: pd.DataFrame, metrics: Sequence[str], algorithm: str, stage: str
) -> pd.DataFrame:
    """Client-averaged per-unit values of ``metrics`` per (dataset, seed, depth), wide; datasets
    in the order ``analytics`` first lists them (the chapter's), not alphabetical."""
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


def c3_rank_table(
    results: pd.DataFrame, control: str = "playerfl", alpha: float = ALPHA
) -> pd.DataFrame:
    """C3's test as a table, best first: every algorithm's mean macro-F1 rank over the
    (dataset, seed) blocks and Nemenyi's p against ``control`` (NaN for the control itself, and
    for every row when the Friedman test does not reject: the verdict then runs no Nemenyi)."""
    from playerfl_core.stats.metrics import rank_table

    complete = _blocks_wide(results).dropna(axis=0, how="any")
    _, nem = best_rank_evidence(
        complete, control, True, "macro-F1 runs", alpha, "(dataset, seed) blocks"
    )
    ranks = rank_table(complete, True)["mean_rank"]
    out = pd.DataFrame({"algorithm": ranks.index, "mean_rank": ranks.to_numpy()})
    out["nemenyi_p"] = out["algorithm"].map(nem.set_index("other")["p"]).astype(float)
    out.attrs["blocks"] = complete.shape[1]
    return out.sort_values("mean_rank", kind="stable").reset_index(drop=True)


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
    sweep_c5: pd.DataFrame | None = None,
) -> Claim:
    """C5: the control's headline macro-F1 beats the random split's (:func:`c5_family`: at tuned
    learning rates, and with ``sweep_c5`` at one learning rate per dataset, one family)."""
    family = c5_family(results, sweep_c5, control, random, rope, alpha, seed)
    return _claim("C5", [e for *_, e in family], profile)


def m1_sensitivity_ranks_cost(
    profiles: pd.DataFrame, datasets: Sequence[str], label=str, profile: str = ""
) -> Claim:
    """M1: per dataset, the rank correlation between s_k and the measured loss change of
    averaging unit k (chapter 03a's ``client_averaged`` profiles), Holm over datasets."""
    from playerfl_core.stats.evidence import rank_correlation_test

    tests = [
        rank_correlation_test(
            profiles[profiles["dataset"] == name], "sensitivity", "actual", part=label(name)
        ).evidence
        for name in datasets
    ]
    return _claim("M1", holm_decide(tests), profile)


def r1_rule_finds_oracle(
    regrets: pd.DataFrame, tolerance: float = TOLERANCE, label=str, profile: str = ""
) -> Claim:
    """R1: per federation, the paper's rule's mean regret is within δ (:func:`r1_family`), read
    as universal."""
    return _claim("R1", [e for *_, e in r1_family(regrets, tolerance, label)], profile)
