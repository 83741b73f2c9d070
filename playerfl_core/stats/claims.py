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
:mod:`~playerfl_core.stats.scorecard`, what each claim states in
:mod:`~playerfl_core.stats.claim_list`, the per-layer claims C1 and C2 in
:mod:`~playerfl_core.stats.layer_claims`; this module holds the other claims and re-exports the
others' names (:data:`__all__`), so a chapter needs one import (``claims as C``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from playerfl_core.stats import metrics as M
from playerfl_core.stats.claim_list import CLAIMS, claim_from, evidence_claim
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
from playerfl_core.stats.layer_claims import (
    C2_MEASURES,
    c1_divergence_grows,
    c2_sensitivity_tracks,
    depth_trend_tests,
    metric_correlation_tests,
    stage_agreement_tests,
    trend_table,
    unit_profiles,
)
from playerfl_core.stats.metrics import rank_table, run_scores
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
from playerfl_core.stats.split_verdicts import (
    TEST as MEAN_TEST,
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


def c3_rank_table(
    results: pd.DataFrame, control: str = "playerfl", alpha: float = ALPHA
) -> pd.DataFrame:
    """C3's test as a table, best first: every algorithm's mean macro-F1 rank over the
    (dataset, seed) blocks and Nemenyi's p against ``control`` (NaN for the control itself, and
    for every row when the Friedman test does not reject: the verdict then runs no Nemenyi)."""
    complete = _blocks_wide(results).dropna(axis=0, how="any")
    _, nem = best_rank_evidence(
        complete, control, True, "macro-F1 runs", alpha, "(dataset, seed) runs"
    )
    ranks = rank_table(complete, True)["mean_rank"]
    out = pd.DataFrame({"algorithm": ranks.index, "mean_rank": ranks.to_numpy()})
    out["nemenyi_p"] = out["algorithm"].map(nem.set_index("other")["p"]).astype(float)
    out.attrs["blocks"] = complete.shape[1]
    return out.sort_values("mean_rank", kind="stable").reset_index(drop=True)


def _blocks_wide(results: pd.DataFrame, metric: str = "macro_f1") -> pd.DataFrame:
    """Algorithms × (dataset, seed) blocks of headline run scores."""
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
        _blocks_wide(results), control, True, "macro-F1 runs", alpha, "(dataset, seed) runs"
    )
    return evidence_claim("C3", [ev], profile)


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
    fair = M.fairness(results, "macro_f1").rename(columns={"variance": "value"})
    ipr = M.ipr(results, "macro_f1").rename(columns={"ipr": "value"})
    fair_w = M.to_wide(fair, "value")
    ipr_w = M.to_wide(ipr, "value")
    others = [a for a in fair_w.index if a not in references]
    half = alpha / 2
    ev_f, _ = best_rank_evidence(fair_w.loc[others], control, False, "fairness", half, "datasets")
    ev_i, _ = best_rank_evidence(ipr_w.loc[others], control, True, "IPR", half, "datasets")
    return evidence_claim("C4", [ev_f, ev_i], profile)


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
    return evidence_claim("C5", [e for *_, e in family], profile)


def m1_sensitivity_ranks_cost(
    profiles: pd.DataFrame, datasets: Sequence[str], label=str, profile: str = ""
) -> Claim:
    """M1: per dataset, the rank correlation between s_k and the measured loss change of
    averaging unit k (chapter 03a's ``client_averaged`` profiles), Holm over datasets."""
    tests = [
        rank_correlation_test(
            profiles[profiles["dataset"] == name], "sensitivity", "actual", part=label(name)
        ).evidence
        for name in datasets
    ]
    return evidence_claim("M1", holm_decide(tests), profile)


def r1_rule_finds_oracle(
    regrets: pd.DataFrame,
    tolerance: float = TOLERANCE,
    label=str,
    profile: str = "",
    test: str = MEAN_TEST,
) -> Claim:
    """R1: per federation, the paper's rule's mean regret is within δ (:func:`r1_family`, with
    the mean test ``test``), read as universal."""
    parts = r1_family(regrets, tolerance, label, test=test)
    return evidence_claim("R1", [e for *_, e in parts], profile)
