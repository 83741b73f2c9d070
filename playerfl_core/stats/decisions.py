"""The decision rule: how a p-value and an effect become a verdict with a strength.

A **verdict** is exactly one of *supported*, *contradicted* or *undecided*, with an **evidence
strength**. The rule, applied to every test of the claims (α = :data:`ALPHA` unless given):

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

Cut out of :mod:`playerfl_core.stats.claims` with the records it makes
(:class:`Evidence`, :class:`Verdict`, :class:`Claim`); the tests are in
:mod:`~playerfl_core.stats.exact_tests` and :mod:`~playerfl_core.stats.evidence`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from playerfl_core.stats.p_values import p_value_text
from playerfl_core.stats.rank_tests import holm

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


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")


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
                f"of the {ev.test} is {p_value_text(ev.min_pvalue, 3)} > {ev.alpha:g}"
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
            ev,
            verdict=verdict,
            strength=strength,
            reason=f"{label} = {p_value_text(p, 3)} ≤ {ev.alpha:g}",
        )
    if equivalence and ev.posterior is not None and ev.posterior[1] >= POSTERIOR_LEVEL:
        return replace(
            ev,
            verdict="contradicted",
            strength="moderate",
            reason=(
                f"{label} = {p_value_text(p, 3)} > {ev.alpha:g}, and P(ROPE) = "
                f"{ev.posterior[1]:.2f} ≥ {POSTERIOR_LEVEL}: practically equivalent"
            ),
        )
    lean = p <= LEAN_P and sign != 0
    towards = "the claim" if sign > 0 else "the opposite"
    return replace(
        ev,
        verdict="undecided",
        strength="weak" if lean else "none",
        reason=f"{label} = {p_value_text(p, 3)} > {ev.alpha:g}"
        + (f"; the data lean towards {towards}" if lean else ""),
    )


def strength_text(verdict: str, strength: str, estimate: float) -> str:
    """A part's strength as a table shows it beside its verdict. A decided verdict names its
    direction (supported, contradicted); an undecided one does not, so its *weak* (leaning,
    rule 3) says which way it leans: "weak, against the claim" must not read as weak support."""
    if verdict == "undecided" and strength == "weak" and np.isfinite(estimate) and estimate != 0:
        return f"weak, {'for' if estimate > 0 else 'against'} the claim"
    return strength


def holm_decide(parts: Sequence[Evidence], equivalence: bool = False) -> list[Evidence]:
    """Decide every part on its Holm-adjusted p-value, over the parts that were run."""
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
