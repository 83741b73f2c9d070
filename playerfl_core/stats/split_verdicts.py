"""Verdicts of the split study, on the book's one decision rule (:mod:`~playerfl_core.stats.
decisions`): the rule's split against the oracle's, C5 at one learning rate, heterogeneity, and
the pre-registered test of the split rules.

Two kinds of claim, both on per-seed values (never on a summary):

* **within tolerance** (:func:`tolerance_evidence`): "the regret is below δ". The exact
  two-sided Wilcoxon signed-rank test of δ − regret over seeds; *supported* when the regret
  is significantly below δ, *contradicted* when significantly above, else *undecided*. An
  equivalence claim, so δ is fixed before looking; :func:`tolerance_curve` shows how the
  verdicts move with δ.
* **better than** (:func:`difference_evidence`): "the rule's split beats the other one" on
  paired per-seed differences (same seed, same learning rate), the same Wilcoxon test.

Every verdict of a chapter is one part of the chapter's family: Holm's adjustment applies over
the family (:func:`decide_family`), and strength comes from the adjusted p-value (strong:
p ≤ α/5). A test that cannot reach α with the seeds at hand (2/2ⁿ > α: fewer than 6 non-zero
differences) is not run, and its verdict is *undecided* with the reason.

Cut out of :mod:`playerfl_core.stats.claims` (issue 23), which re-exports its names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from playerfl_core.stats.decisions import ALPHA, Evidence, holm_decide
from playerfl_core.stats.exact_tests import min_pvalue, wilcoxon_exact
from playerfl_core.stats.seed_stats import bootstrap_interval

TOLERANCE = 0.02
"""δ: the regret (macro-F1) the book accepts as "as good as the oracle", fixed before looking:
the practitioner's target of issue 24, and the book's earlier region of practical equivalence."""

SPLIT_CLAIMS = {
    "oracle": "the rule's split is as good as the validation oracle's (regret within δ)",
    "C5": "the rule's split beats a random other split at the same learning rate",
}
VERDICT_WORDS = {
    "oracle": {"supported": "within δ", "contradicted": "beyond δ", "undecided": "undecided"},
    "C5": {"supported": "better", "contradicted": "worse", "undecided": "undecided"},
}
"""How a verdict of each claim reads in a table."""


def _evidence(d: np.ndarray, part: str, test: str, alpha: float) -> Evidence:
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    n = int((d != 0).sum())
    floor = min_pvalue("wilcoxon", n)
    p = wilcoxon_exact(d) if floor <= alpha else np.nan
    return Evidence(
        part=part,
        test=test,
        estimate=float(np.median(d)) if len(d) else np.nan,
        n=n,
        replicates="seeds with a non-zero difference",
        pvalue=float(p),
        min_pvalue=floor,
        alpha=alpha,
    )


def tolerance_evidence(
    regrets: Sequence[float], tolerance: float = TOLERANCE, part: str = "", alpha: float = ALPHA
) -> Evidence:
    """Is the regret within ``tolerance``? Evidence on δ − regret (> 0 is the claim), undecided
    until :func:`decide_family` decides it."""
    if not tolerance > 0:
        raise ValueError(f"tolerance must be a positive score difference, got {tolerance!r}.")
    d = tolerance - np.asarray(regrets, dtype=float)
    return _evidence(d, part, "exact Wilcoxon signed-rank test of δ − regret", alpha)


def difference_evidence(diffs: Sequence[float], part: str = "", alpha: float = ALPHA) -> Evidence:
    """Is the paired difference (the rule's split minus another, per seed) above 0?"""
    return _evidence(diffs, part, "exact Wilcoxon signed-rank test of the paired differences",
                     alpha)  # fmt: skip


def decide_family(parts: Sequence[Evidence]) -> list[Evidence]:
    """Holm over the family, each part decided on its adjusted p (the book's rule)."""
    return holm_decide(list(parts))


def _row(claim, dataset, family, values, ev: Evidence) -> tuple:
    m, lo, hi = bootstrap_interval(values, seed=0) if len(values) else (np.nan,) * 3
    return (claim, dataset, family, m, lo, hi, float(np.median(values)) if len(values) else
            np.nan, len(values), ev.pvalue, ev.p_adjusted, ev.verdict, ev.strength,
            ev.reason)  # fmt: skip


COLUMNS = ["claim", "dataset", "family", "estimate", "lo", "hi", "median", "n_seeds", "p",
           "p_holm", "verdict", "strength", "reason"]  # fmt: skip


def split_verdicts(
    regrets: pd.DataFrame,
    c5: pd.DataFrame,
    heterogeneity: pd.DataFrame | None = None,
    tolerance: float = TOLERANCE,
    c5_comparisons: Sequence[str] = ("random (drawn)", "random (expected)"),
) -> pd.DataFrame:
    """The split study's verdicts, one family: one row per (claim, federation[, comparison]).

    ``regrets``: per seed, the paper's rule's regret (``split_oracle.regrets``: dataset,
    regret); ``c5``: per seed, test(rule's p) − test(other) (``split_oracle.c5_table``; the
    ``c5_comparisons`` rows are C5, both the drawn random split and the expected one);
    ``heterogeneity``: per seed regrets of the heterogeneity federations, with a ``family``
    column. Estimate: mean over seeds, with its bootstrap interval (descriptive); the verdict
    comes from the Wilcoxon test, Holm over every row. Columns: :data:`COLUMNS`.
    """
    if not tolerance > 0:
        raise ValueError(f"tolerance must be a positive score difference, got {tolerance!r}.")
    keys, values, parts = [], [], []
    for ds, g in regrets.groupby("dataset", sort=False):
        keys.append(("oracle", ds, "sweep"))
        values.append(g["regret"].to_numpy())
        parts.append(tolerance_evidence(values[-1], tolerance, f"oracle | {ds}"))
    for (ds, other), g in c5[c5["other"].isin(c5_comparisons)].groupby(
        ["dataset", "other"], sort=False
    ):
        keys.append(("C5", ds, f"vs {other}"))
        values.append(g["diff"].to_numpy())
        parts.append(difference_evidence(values[-1], f"C5 | {ds} | {other}"))
    if heterogeneity is not None and len(heterogeneity):
        for (ds, fam), g in heterogeneity.groupby(["dataset", "family"], sort=False):
            keys.append(("oracle", ds, fam))
            values.append(g["regret"].to_numpy())
            parts.append(tolerance_evidence(values[-1], tolerance, f"oracle | {ds}"))
    decided = decide_family(parts)
    rows = [_row(*k, v, e) for k, v, e in zip(keys, values, decided, strict=True)]
    return pd.DataFrame(rows, columns=COLUMNS)


def tolerance_verdicts(
    regrets: pd.DataFrame, by: Sequence[str], tolerance: float = TOLERANCE
) -> pd.DataFrame:
    """ "Regret within δ" per group of ``by`` (e.g. rule, or rule and kind), one family: mean
    with its bootstrap interval, median, the Wilcoxon test of δ − regret, Holm over the groups.
    Columns: ``by`` + mean, lo, hi, median, n, p, p_holm, verdict, strength, reason; the
    verdict reads "within δ", "beyond δ" or "undecided"."""
    groups = list(regrets.groupby(list(by), sort=False))
    decided = decide_family(
        [tolerance_evidence(g["regret"], tolerance, " | ".join(map(str, _key(k))))
         for k, g in groups]
    )  # fmt: skip
    rows = []
    for (key, g), ev in zip(groups, decided, strict=True):
        r = g["regret"].to_numpy()
        rows.append(
            (*_key(key), *bootstrap_interval(r, seed=0), float(np.median(r)), len(r), ev.pvalue,
             ev.p_adjusted, VERDICT_WORDS["oracle"][ev.verdict], ev.strength, ev.reason)
        )  # fmt: skip
    return pd.DataFrame(rows, columns=[*by, "mean", "lo", "hi", "median", "n", "p", "p_holm",
                                       "verdict", "strength", "reason"])  # fmt: skip


def _key(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def tolerance_curve(
    regrets: pd.DataFrame, tolerances: Sequence[float], by: Sequence[str] = ("dataset",)
) -> pd.DataFrame:
    """:func:`tolerance_verdicts` for each δ of ``tolerances``: how much of the answer is the
    tolerance's. Columns: ``by`` + tolerance, verdict, p_holm."""
    parts = [
        tolerance_verdicts(regrets, by, float(t))[[*by, "verdict", "p_holm"]].assign(
            tolerance=float(t)
        )
        for t in tolerances
    ]
    return pd.concat(parts, ignore_index=True)[[*by, "tolerance", "verdict", "p_holm"]]


def _interval(value: float, lo: float, hi: float) -> str:
    """``−0.006 (−0.018 to 0.002)``, the book's way: true minus signs, "to" beside a negative
    bound (``book.reports.tables.interval_text``, which this layer does not import)."""

    def signed(x: float) -> str:
        return f"{x:.3f}".replace("-", "−")

    sep = " to " if min(lo, hi) < 0 else "–"
    return f"{signed(value)} ({signed(lo)}{sep}{signed(hi)})"


def split_verdict_lines(verdicts: pd.DataFrame, label=str) -> str:
    """Markdown bullet lines of :func:`split_verdicts`: one per sweep dataset and claim, and one
    count over the heterogeneity federations. ``label`` maps a dataset name to display text."""
    lines = []
    sweep = verdicts[~verdicts["family"].isin(_het_families(verdicts))]
    for r in sweep.itertuples():
        what = "regret" if r.claim == "oracle" else "difference"
        strength = f"{r.strength} evidence, " if r.verdict != "undecided" else ""
        versus = f" ({r.family})" if r.claim == "C5" else ""
        lines.append(
            f"- {label(r.dataset)}, {'C5' + versus + ': ' if r.claim == 'C5' else ''}"
            f'"{SPLIT_CLAIMS[r.claim]}": **{r.verdict}** ({strength}{r.n_seeds} seeds; mean '
            f"{what} {_interval(r.estimate, r.lo, r.hi)}; Holm-adjusted p {_p(r.p_holm)})"
        )
    het = verdicts[verdicts["family"].isin(_het_families(verdicts))]
    if len(het):
        counts = het["verdict"].value_counts()
        seeds = sorted(het["n_seeds"].unique())
        span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        lines.append(
            f"- Heterogeneity: the rule's regret is within δ on {counts.get('supported', 0)} "
            f"of {len(het)} federations, beyond δ on {counts.get('contradicted', 0)}, "
            f"undecided on {counts.get('undecided', 0)} ({span} seeds each)."
        )
    return "\n".join(lines)


def _het_families(verdicts: pd.DataFrame) -> list[str]:
    return [f for f in verdicts["family"].unique() if f != "sweep" and not f.startswith("vs ")]


def _p(p: float) -> str:
    return "not run" if not np.isfinite(p) else f"{p:.2g}"
