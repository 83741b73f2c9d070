"""The book's claims: what each states and which chapter tests it (:data:`CLAIMS`), and how a
claim is assembled from its parts (:func:`evidence_claim`, :func:`claim_from`).

Below :mod:`playerfl_core.stats.claims` and :mod:`playerfl_core.stats.layer_claims`, which test
the claims; ``claims`` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from playerfl_core.stats.decisions import Claim, Evidence, Verdict, combine

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


def claim_from(cid: str, parts: pd.DataFrame, verdict: Verdict, profile: str = "") -> Claim:
    """A claim of :data:`CLAIMS` with its parts table and a verdict decided elsewhere (R2's,
    which is existential over rules: :func:`playerfl_core.study.preregistration.claim`)."""
    statement, chapter = CLAIMS[cid]
    return Claim(cid, statement, chapter, verdict, parts, profile)


def evidence_claim(cid: str, parts: Sequence[Evidence], profile: str = "") -> Claim:
    """A claim of :data:`CLAIMS` decided from its parts' evidence (:func:`combine`)."""
    statement, chapter = CLAIMS[cid]
    table = pd.DataFrame([p.row() for p in parts])
    return Claim(cid, statement, chapter, combine(parts), table, profile)
