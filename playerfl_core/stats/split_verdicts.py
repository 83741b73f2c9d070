"""Verdicts of the split study, on the book's one decision rule (:mod:`~playerfl_core.stats.
decisions`): the rule's split against the oracle's, C5 at one learning rate, heterogeneity, and
the pre-registered test of the split rules.

Two kinds of claim, both on per-seed values (never on a summary), both about a **mean**, the
quantity the book's text and tables report:

* **within tolerance** (:func:`tolerance_evidence`): "the mean regret is below δ". A two-sided
  test of the mean of δ − regret over seeds: the exact sign-flip permutation test confirmed by a
  studentized bootstrap (:func:`~playerfl_core.stats.exact_tests.mean_test_confirmed`, the larger
  of the two p-values); *supported* when the mean regret is significantly below δ,
  *contradicted* when significantly above, else *undecided*.
  An equivalence claim, so δ is fixed before looking; :func:`tolerance_curve` shows how the
  verdicts move with δ.
* **better than** (:func:`difference_evidence`): "the rule's split beats the other one" on
  paired per-seed differences (same seed, same learning rate), the same test of their mean.

Why not the Wilcoxon signed-rank test, which these verdicts used until the fifth declaration of
:mod:`playerfl_core.study.preregistration` (a declared correction): it decides on a symmetric
centre, close to the median for the zero-inflated, right-skewed regrets of a split rule, while
the text says "mean regret within δ" (18 seeds at 0 and 2 at 0.30: mean 0.03 > δ, Wilcoxon
"within δ").
``test="wilcoxon"`` keeps the earlier test, for the side-by-side re-analysis of chapter 04b.

Why the bootstrap confirms the sign-flip test: regrets are skewed and zero-inflated, so δ − regret
is not symmetric when its mean is 0, and the sign-flip test alone said "within δ" of up to 14 %
of samples drawn from the book's own regrets with the mean set at δ (2.5 % nominal;
``tests/test_mean_tests.py``); the bootstrap confirms only what it can (see
:func:`~playerfl_core.stats.exact_tests.mean_test_confirmed`). ``test="sign_flip"`` keeps the
sign-flip test alone, for the comparison (:func:`test_change`).

Every verdict is one part of its claim's family: Holm's adjustment applies over the family
(:func:`decide_family`), and strength comes from the adjusted p-value (strong: p ≤ α/5). A test
that cannot reach α with the seeds at hand (2/2ⁿ > α: fewer than 6 non-zero values) is not run,
and its verdict is *undecided* with the reason.

Cut out of :mod:`playerfl_core.stats.claims`, which re-exports its names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from playerfl_core.stats.decisions import ALPHA, Evidence, holm_decide, p_value_text
from playerfl_core.stats.evidence import paired_comparison
from playerfl_core.stats.exact_tests import (
    mean_test_confirmed,
    min_pvalue,
    sign_flip_mean_test,
    wilcoxon_exact,
)
from playerfl_core.stats.metrics import run_scores
from playerfl_core.stats.seed_stats import bootstrap_interval

TOLERANCE = 0.02
"""δ: the regret (macro-F1) the book accepts as "as good as the oracle", fixed before looking:
the practitioner's target an early review of the split rule set, and the book's earlier region
of practical equivalence."""

SPLIT_CLAIMS = {
    "oracle": "the rule's split is as good as the validation oracle's (mean regret within δ)",
    "C5": "the rule's split beats a random other split at the same learning rate",
}
VERDICT_WORDS = {
    "oracle": {"supported": "within δ", "contradicted": "beyond δ", "undecided": "undecided"},
    "C5": {"supported": "better", "contradicted": "worse", "undecided": "undecided"},
}
"""How a verdict of each claim reads in a table."""


TESTS = {
    "confirmed_mean": ("sign-flip test of the mean confirmed by a studentized bootstrap",
                       "sign_flip", mean_test_confirmed, np.mean),
    "sign_flip": ("exact sign-flip permutation test of the mean", "sign_flip",
                  sign_flip_mean_test, np.mean),
    "wilcoxon": ("exact Wilcoxon signed-rank test", "wilcoxon", wilcoxon_exact, np.median),
}  # fmt: skip
"""The split study's tests by name: (what the verdict's reason calls it, its :func:`min_pvalue`
name, the test, the centre whose sign gives the direction)."""
TEST = "confirmed_mean"
"""The book's one choice for the split study's verdicts: a test of the mean (the fifth
declaration of the pre-registration, a declared correction), the sign-flip test confirmed by a
studentized bootstrap so that skewed regrets keep its size."""
OLD_TEST = "sign_flip"
"""The test of the mean the fifth declaration named, before the bootstrap confirmed it."""


def _evidence(d: np.ndarray, part: str, of: str, alpha: float, test: str) -> Evidence:
    if test not in TESTS:
        raise ValueError(f"test must be one of {sorted(TESTS)}, got {test!r}.")
    name, floor_name, run, centre = TESTS[test]
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    n = int((d != 0).sum())
    floor = min_pvalue(floor_name, n)
    p = run(d) if floor <= alpha else np.nan
    return Evidence(
        part=part,
        test=f"{name} of {of}",
        estimate=float(centre(d)) if len(d) else np.nan,
        n=n,
        replicates="seeds with a non-zero difference",
        pvalue=float(p),
        min_pvalue=floor,
        alpha=alpha,
    )


def tolerance_evidence(
    regrets: Sequence[float],
    tolerance: float = TOLERANCE,
    part: str = "",
    alpha: float = ALPHA,
    test: str = TEST,
) -> Evidence:
    """Is the mean regret within ``tolerance``? Evidence on δ − regret (> 0 is the claim),
    undecided until :func:`decide_family` decides it. ``test``: a key of :data:`TESTS`."""
    if not tolerance > 0:
        raise ValueError(f"tolerance must be a positive score difference, got {tolerance!r}.")
    d = tolerance - np.asarray(regrets, dtype=float)
    return _evidence(d, part, "δ − regret", alpha, test)


def difference_evidence(
    diffs: Sequence[float], part: str = "", alpha: float = ALPHA, test: str = TEST
) -> Evidence:
    """Is the mean paired difference (the rule's split minus another, per seed) above 0?"""
    return _evidence(diffs, part, "the paired differences", alpha, test)


def decide_family(parts: Sequence[Evidence]) -> list[Evidence]:
    """Holm over the family, each part decided on its adjusted p (the book's rule)."""
    return holm_decide(list(parts))


def r1_family(
    regrets: pd.DataFrame, tolerance: float = TOLERANCE, label=str, test: str = TEST
) -> list[tuple[str, np.ndarray, Evidence]]:
    """R1's one family, decided (defined here only; the scorecard and chapter 04 read it from
    here): per federation of ``regrets`` (dataset, regret: every swept federation, base and
    heterogeneity alike), is the paper's rule's mean regret within δ (the split study's mean
    test, ``test``)? Holm over every federation. Returns (dataset, regrets, evidence) per part."""
    groups = [(ds, g["regret"].to_numpy()) for ds, g in regrets.groupby("dataset", sort=False)]
    decided = holm_decide(
        [tolerance_evidence(r, tolerance, label(ds), test=test) for ds, r in groups]
    )
    return [(ds, r, e) for (ds, r), e in zip(groups, decided, strict=True)]


C5_COMPARISONS = ("random (drawn)", "random (expected)")
"""The sweep's C5 comparisons: the split PLayer-FL-Random draws on the seed, and the mean over
the splits it can draw (``split_oracle.c5_table``'s ``other``)."""
TUNED_PART = "tuned learning rates"


def c5_family(
    results: pd.DataFrame | None = None,
    sweep_c5: pd.DataFrame | None = None,
    control: str = "playerfl",
    random: str = "playerfl_random",
    rope: float = 0.01,
    alpha: float = ALPHA,
    seed: int = 0,
    test: str = TEST,
) -> list[tuple[str, str, np.ndarray, Evidence]]:
    """C5's one family, decided (defined here only: the scorecard, chapter 04 and chapter 05
    read it from here, so a part has the same adjusted p on every page).

    Parts: with ``results`` (a comparison grid), the control's run macro-F1 against the random
    split's, each at its tuned learning rate, paired by (dataset, seed): Wilcoxon beside
    baycomp's ROPE (``rope`` in macro-F1; a median, reported as such); with ``sweep_c5``
    (``split_oracle.c5_table``), per dataset the rule's split against each of
    :data:`C5_COMPARISONS` at one learning rate, the mean test of the split study (``test``,
    a key of :data:`TESTS`). Holm over
    every part when the sweep is given. Returns (dataset, comparison, per-pair values,
    evidence) per part; the tuned part's dataset is ``"all"``."""
    out = []
    if results is not None:
        runs = run_scores(results, "macro_f1")
        wide = runs.pivot_table(index=["dataset", "seed"], columns="algorithm", values="value")
        missing = [a for a in (control, random) if a not in wide.columns]
        if missing:
            raise ValueError(
                f"C5 needs runs of {missing}; algorithms present: {list(wide.columns)}."
            )
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
        diffs = (wide[control] - wide[random]).to_numpy()
        ev = dataclasses.replace(ev, part=f"{TUNED_PART}: {ev.part}")
        out.append(("all", TUNED_PART, diffs, ev))
    if sweep_c5 is not None:
        rows = sweep_c5[sweep_c5["other"].isin(C5_COMPARISONS)]
        for (ds, other), g in rows.groupby(["dataset", "other"], sort=False):
            d = g["diff"].to_numpy()
            ev = difference_evidence(d, f"one learning rate: {ds}, vs {other}", alpha, test)
            out.append((ds, f"vs {other}", d, ev))
        decided = holm_decide([e for *_, e in out], equivalence=True)
        out = [(*o[:3], e) for o, e in zip(out, decided, strict=True)]
    if not out:
        raise ValueError("C5 needs a comparison grid (results) or a sweep's C5 table (sweep_c5).")
    return out


def _row(claim, dataset, family, values, ev: Evidence, rescored: bool = False) -> tuple:
    m, lo, hi = bootstrap_interval(values, seed=0) if len(values) else (np.nan,) * 3
    return (claim, dataset, family, m, lo, hi, float(np.median(values)) if len(values) else
            np.nan, len(values), ev.pvalue, ev.p_adjusted, ev.verdict, ev.strength,
            ev.reason, rescored)  # fmt: skip


COLUMNS = ["claim", "dataset", "family", "estimate", "lo", "hi", "median", "n_seeds", "p",
           "p_holm", "verdict", "strength", "reason", "rescored"]  # fmt: skip
"""``rescored``: every seed's regret of the federation has both test terms on the large test
sets (``study.rescore``), so its lines name them."""


def split_verdicts(
    regrets: pd.DataFrame,
    c5: pd.DataFrame,
    heterogeneity: pd.DataFrame | None = None,
    tolerance: float = TOLERANCE,
    tuned: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The split study's verdicts in their claims' families, the scorecard's: R1
    (:func:`r1_family`, Holm over every federation, base and heterogeneity) and C5
    (:func:`c5_family`, Holm over its parts). One row per (claim, federation[, comparison]).

    ``regrets``: per seed, the paper's rule's regret (``split_oracle.regrets``: dataset,
    regret); ``c5``: per seed, test(rule's p) − test(other) (``split_oracle.c5_table``);
    ``heterogeneity``: per seed regrets of the heterogeneity federations, with a ``family``
    column; ``tuned``: the comparison grid's results, for C5's part at tuned learning rates
    (without it C5's family is the sweep's parts alone). Estimate: mean over seeds, with its
    bootstrap interval; the verdict comes from the family's tests. A ``rescored`` column of
    ``regrets`` or ``heterogeneity`` (``study.rescore.r1_regrets``) marks the federations
    whose every regret is on the large test sets. Columns: :data:`COLUMNS`.
    """
    if not tolerance > 0:
        raise ValueError(f"tolerance must be a positive score difference, got {tolerance!r}.")
    het = heterogeneity if heterogeneity is not None else pd.DataFrame(columns=["dataset"])
    family = dict.fromkeys(regrets["dataset"], "sweep")
    family.update(zip(het["dataset"], het.get("family", het["dataset"]), strict=True))
    columns = ["dataset", "regret", "rescored"]
    every = pd.concat([regrets.reindex(columns=columns), het.reindex(columns=columns)])
    large = every["rescored"].eq(True).groupby(every["dataset"]).all()
    rows = [_row("oracle", ds, family[ds], r, e, bool(large[ds]))
            for ds, r, e in r1_family(every[["dataset", "regret"]], tolerance)]  # fmt: skip
    rows += [_row("C5", ds, other, d, e) for ds, other, d, e in c5_family(tuned, c5)]
    return pd.DataFrame(rows, columns=COLUMNS)


def tolerance_verdicts(
    regrets: pd.DataFrame, by: Sequence[str], tolerance: float = TOLERANCE, test: str = TEST
) -> pd.DataFrame:
    """ "Mean regret within δ" per group of ``by`` (e.g. rule, or rule and kind), one family:
    mean with its bootstrap interval, median, the test of δ − regret (``test``, a key of
    :data:`TESTS`), Holm over the groups. Columns: ``by`` + mean, lo, hi, median, n, p, p_holm,
    verdict, strength, reason; the verdict reads "within δ", "beyond δ" or "undecided"."""
    groups = list(regrets.groupby(list(by), sort=False))
    decided = decide_family(
        [tolerance_evidence(g["regret"], tolerance, " | ".join(map(str, _key(k))), test=test)
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


def test_change(
    regrets: pd.DataFrame,
    by: Sequence[str] = ("dataset",),
    tolerance: float = TOLERANCE,
    old: str = OLD_TEST,
    new: str = TEST,
) -> pd.DataFrame:
    """One family of "mean regret within δ" verdicts (:func:`tolerance_verdicts` over the
    groups of ``by``: R1's federations with the default, R2's (entry, kind) pairs with
    ``by=["entry", "kind"]``) under the ``old`` test and the ``new`` one, side by side, for the
    table of the answer under every protocol. Columns: ``by`` + mean, n, p_old, p_holm_old,
    verdict_old, p_new, p_holm_new, verdict_new, changed."""
    keys = list(by)
    columns = [*keys, "mean", "n", "p", "p_holm", "verdict"]
    sides = [tolerance_verdicts(regrets, keys, tolerance, t)[columns] for t in (old, new)]
    out = sides[0].merge(sides[1].drop(columns=["mean", "n"]), on=keys, suffixes=("_old", "_new"))
    out["changed"] = out["verdict_old"] != out["verdict_new"]
    return out


def _key(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def tolerance_curve(
    regrets: pd.DataFrame,
    tolerances: Sequence[float],
    by: Sequence[str] = ("dataset",),
    test: str = TEST,
) -> pd.DataFrame:
    """:func:`tolerance_verdicts` for each δ of ``tolerances``: how much of the answer is the
    tolerance's. Columns: ``by`` + tolerance, verdict, p_holm."""
    parts = [
        tolerance_verdicts(regrets, by, float(t), test)[[*by, "verdict", "p_holm"]].assign(
            tolerance=float(t)
        )
        for t in tolerances
    ]
    return pd.concat(parts, ignore_index=True)[[*by, "tolerance", "verdict", "p_holm"]]


def _signed(x: float) -> str:
    return f"{0.0 if round(x, 3) == 0 else x:.3f}".replace("-", "−")


def _interval(value: float, lo: float, hi: float) -> str:
    """``−0.006 (−0.018 to 0.002)``, the book's way: true minus signs, none on a value that
    rounds to zero, "to" beside a bound printed with a minus sign
    (``book.reports.tables.interval_text``, which this layer does not import)."""
    bounds = _signed(lo), _signed(hi)
    sep = " to " if any(b.startswith("−") for b in bounds) else "–"
    return f"{_signed(value)} ({bounds[0]}{sep}{bounds[1]})"


def split_verdict_lines(verdicts: pd.DataFrame, label=str, large_test: str = "") -> str:
    """Markdown, one bullet per claim (what it says, how many parts Holm adjusts over, or that a
    claim of one part needs no adjustment) with one
    sub-bullet per sweep dataset and C5 part, and one counting the heterogeneity federations.
    ``label`` maps a dataset name to display text; ``large_test`` names the large test sets (e.g.
    "2,000 test images per client") after a rescored federation's regret, so that it is not read
    as the sweep's."""
    lines = []
    for claim, name, noun in (("oracle", "R1", "federation"), ("C5", "C5", "part")):
        rows = verdicts[verdicts["claim"] == claim]
        if rows.empty:
            continue
        family = (f"Holm over its {_count(len(rows), noun)}" if len(rows) > 1
                  else f"its one {noun}, so no adjustment is needed")  # fmt: skip
        lines.append(f'- **{name}**, "{SPLIT_CLAIMS[claim]}", {family}:')
        lines += [
            f"  - {_part_line(r, label, large_test)}" for r in rows[_shown(rows)].itertuples()
        ]
        het = rows[~_shown(rows)]
        if len(het):
            counts = het["verdict"].value_counts()
            seeds = sorted(het["n_seeds"].unique())
            span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
            lines.append(
                f"  - the {_count(len(het), 'heterogeneity federation')}: within δ on "
                f"{counts.get('supported', 0)}, beyond δ on {counts.get('contradicted', 0)}, "
                f"undecided on {counts.get('undecided', 0)} ({span} seeds each)."
            )
    return "\n".join(lines)


def _part_line(r, label, large_test: str) -> str:
    strength = f"{r.strength} evidence, " if r.verdict != "undecided" else ""
    if r.family == TUNED_PART:
        return (f"at {TUNED_PART} (chapter 05), PLayer-FL against PLayer-FL-Random, each at its "
                f"own tuned rate: **{r.verdict}** ({strength}{r.n_seeds} paired runs; median "
                f"difference {_signed(r.median)}; Holm-adjusted p {_p(r.p_holm)})")  # fmt: skip
    what = "regret" if r.claim == "oracle" else "difference"
    versus = f", {r.family}" if r.claim == "C5" else ""
    on = f" on {large_test}" if large_test and r.rescored else ""
    return (
        f"{label(r.dataset)}{versus}: **{r.verdict}** ({strength}{r.n_seeds} seeds; mean "
        f"{what} {_interval(r.estimate, r.lo, r.hi)}{on}; Holm-adjusted p {_p(r.p_holm)})"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _shown(verdicts: pd.DataFrame) -> pd.Series:
    """Rows with a line of their own: C5's parts and R1's sweep federations (the heterogeneity
    federations are counted in one line)."""
    return (verdicts["claim"] == "C5") | (verdicts["family"] == "sweep")


def _p(p: float) -> str:
    return "not run" if not np.isfinite(p) else f"{p_value_text(p)}"
