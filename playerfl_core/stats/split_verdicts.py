"""Verdicts read from a bootstrap interval over seeds: the split study's claims (the rule's split
against the oracle's, C5 over seeds, heterogeneity).

Cut out of :mod:`playerfl_core.stats.claims` (issue 23), which re-exports its names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.stats.decisions import Verdict

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
