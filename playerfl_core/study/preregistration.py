"""The pre-registered test of the split rules: declared before any evaluation run existed.

**What is declared here, and was committed before the evaluation federations were computed
or read** (the commit that added this module says so; ``git log --follow`` shows it):

1. **Development set** (:data:`DEVELOPMENT`): Heart (50 seeds), Digits and its eight
   heterogeneity federations (10 seeds each). Thresholds may be tuned here, nowhere else.
2. **Evaluation set** (:data:`EVALUATION`): Fashion-MNIST and its eight heterogeneity
   federations, plus a kind of heterogeneity the development set does not contain: **noise**
   feature skew (client k's inputs get Gaussian noise of k/(K−1)·0.5 of the pixel range) on both
   bases, alone and mixed with α = 0.1 label skew. 10 seeds each.
   Disclosure: the Fashion-MNIST heterogeneity sweeps of seeds 0–4 existed before this
   declaration, and issue 24 reported the paper's rule and the oracle on them (the paper's rule
   chose p = 3 everywhere). No other rule was computed on them before this commit.
   *Completed by item 11*: the base federation was not unseen either. Before this
   declaration chapter 04 had shown the Fashion-MNIST base sweep on all 10 evaluation seeds,
   with the paper's rule (mean regret 0.010) and both robust poolings of it (median and
   geometric mean over clients), so for the base federation the set was evaluation data already
   looked at; its heterogeneity federations beyond seeds 0–4 and the noise kinds were unseen.
3. **Rules and thresholds** (:data:`ENTRIES`): the paper's rule at the paper's t = 1 and at the
   t tuned on the development set; its median and geometric-mean poolings at t = 1; the
   first-order averaging-cost rule and the update-disagreement rule at their tuned τ; and the
   validation probe (every p trained :data:`PROBE_ROUNDS` rounds, best validation score) as the
   practical upper reference. Tuning (:func:`tune`): on the development set, the threshold of
   :data:`GRIDS` with the smallest mean regret, each federation weighing the same (ties: the
   smaller threshold). The tuned τ of the cost and disagreement rules are their defaults in
   :mod:`playerfl_core.fl.split_rules` (the paper's rule keeps t = 1);
   ``tests/test_preregistration.py`` recomputes every tuned value.
4. **Outcome**: per seed, regret = test(oracle p) − test(rule's p), macro-F1, the validation
   oracle and the scores of the committed split sweeps (``stores/standard``).
5. **Test** (:func:`evaluate`): per rule and kind of heterogeneity (:func:`kind_of`), is the
   regret within the tolerance δ = :data:`TOLERANCE` = 0.02 macro-F1? The exact two-sided
   Wilcoxon signed-rank test of δ − regret over the kind's seeds decides by the book's rule
   (:mod:`playerfl_core.stats.decisions`): *within δ* when significantly below δ,
   *beyond δ* when significantly above, else *undecided*; Holm over every (rule, kind)
   of the evaluation set. δ is the practitioner's target the issue set, fixed before looking;
   a figure shows the verdicts over a range of δ.
6. **Headline**: the rules whose regret is within δ on every kind of the evaluation
   set; "none" is a valid answer.
   *Completed by item 11*: how claim R2 reads "none" (*contradicted* when every first-epoch
   rule is beyond δ on at least one kind) was not in this declaration; it was written into
   :func:`claim` at commit 7cd12ac, after it, while the evaluation runs were computing.
7. **Follow-up** (:data:`FOLLOW_UP`, declared after the first test's outcome was known and
   before any of its federations was computed or read): the same entries at the same
   thresholds (:data:`TUNED`, not tuned again) on **quantity skew**, a kind neither set contains,
   on both image bases with 20 seeds each; the same test with Holm over the 7 entries alone
   (``evaluate(regrets, "follow-up")``). It asks whether the first test's descriptive pattern
   holds on a new kind, with enough seeds to decide.
8. **More development seeds** (declared with item 9): the eight Digits heterogeneity
   federations of the development set get seeds 10–19 (:data:`DEVELOPMENT_ADDED_SEEDS`), to
   describe them with 20 seeds. Tuning keeps the first declaration's seeds
   (:data:`TUNING_SEEDS`), so no threshold moves; the evaluation federations keep theirs.
9. **A second-order rule and a second follow-up** (:data:`ADDED_ENTRIES`, :data:`FOLLOW_UP_2`;
   declared after the first test and the follow-up were known, before the rule was computed
   on any federation and before any federation of the second follow-up existed):

   * ``cost2``, the **second-order cost of averaging**: the first-order rule's quantity plus the
     curvature term ½ Σ_i F_{c,i} (θ̄_i − θ_{c,i})², where F_c is the diagonal empirical Fisher
     of client c at θ_c (the mean over its training samples of the squared per-sample gradient
     of the loss, a positive stand-in for the Hessian's diagonal). The cumulative share of the
     first-order gain, units federated while it stays ≤ τ, τ from :data:`GRIDS` ``cost2`` tuned
     as in item 3 on the development set. It asks whether the first-order rule's misses come
     from ignoring curvature: averaging a unit costs at least the curvature term, so the rule
     federates no more than the first-order rule at the same τ. Cost: the first local epoch,
     one extra pass with per-sample gradients, three full models uploaded per client (θ_c,
     g_c, F_c) within the one exchange.
   * The second follow-up: every entry (:data:`ENTRIES` and :data:`ADDED_ENTRIES`, thresholds
     fixed) on **concept shift** (``<base>_swap``: labels IID, odd-numbered clients swap
     classes in pairs), a kind no set contains, both image bases, 20 seeds each; the same test
     with Holm over the 8 entries (``evaluate(regrets, "second follow-up")``).
   * ``cost2`` on the first test's evaluation federations and on the follow-up's, each with Holm
     over its own kinds alone. Disclosure: those federations were computed, and the other rules'
     outcomes on them known, before this rule was designed; only the second follow-up is unseen.
   * Does curvature pay? Per set (evaluation, follow-up, second follow-up), the exact Wilcoxon
     test of regret(``cost``) − regret(``cost2``) over the set's seeds, paired by seed, Holm over
     the three sets (:func:`curvature_comparison`; added to this declaration before the rule was
     computed on any federation of those sets).
   The first test's verdicts (item 5, the 7 entries, Holm over 63) and the follow-up's do not
   change: the added entry is tested in families of its own.
10. **A confirmation test** (:data:`CONFIRMATION`, :data:`CONFIRMATION_SEEDS`; declared after
    the first test, both follow-ups and item 9 were known, before any seed of it was computed).
    The first test decided 2 of its 63 pairs: with 10 seeds a kind cannot reach α under Holm
    over 63, although every first-epoch entry's largest mean regret was 0.11–0.25 macro-F1.
    This test asks, on fresh seeds, whether each entry is beyond δ where the first test saw it
    fail worst:

    * **Selection** (:func:`worst_kinds`, from the first test's evaluation regrets): per entry,
      the kind of its largest mean regret over the evaluation seeds. On the committed stores
      this gives *feature skew (rotate)* for the four forms of the paper's rule and for update
      disagreement, *mixed (rotate + α = 0.1)* for both averaging-cost rules, and *base
      federation* for the probe (a reference, not tested for its own kind here). The evaluation
      federations of the first-epoch rules' kinds are ``fmnist_rotate`` and
      ``fmnist_rotate_alpha0.1``; a test recomputes the selection.
    * **Data**: those two federations at seeds 10–29 (new client partitions and
      initialisations), the same sweep, learning rate and rules table as the first test; the
      first test's seeds 0–9 are not pooled in.
    * **Test**: every entry (:data:`ALL_ENTRIES`, thresholds fixed by item 3 and item 9) on both
      kinds, the declared test of item 5 (exact Wilcoxon of δ − regret, δ = 0.02), Holm over
      the 16 (entry, kind) pairs (``evaluate(regrets, "confirmation")``).
    * **Claim R2** (:func:`claim`): *contradicted* when every first-epoch entry is beyond δ on
      at least one kind of this test or of the first test (for ``cost2`` its own family there);
      otherwise R2 keeps the first test's verdict. A first-epoch entry within δ on both kinds
      here is reported as such; it does not make R2 *supported*, which needs every kind.
11. **A declared correction: the test of the mean** (declared after every earlier test's
    outcome was known, and after an audit (issue 34) had re-tested the committed stores with a
    test of the mean and reported which verdicts would change; committed before the code below
    was run on any store). The text and tables of every set say "*mean* regret within δ",
    but item 5's Wilcoxon test of δ − regret decides on a symmetric centre, close to the median
    for the zero-inflated, right-skewed regrets of a split rule (18 seeds at 0 and 2 at 0.30:
    mean 0.03 > δ, yet Wilcoxon "within δ", p ≈ 0.008). So:

    * **Test**: the exact two-sided sign-flip permutation test of the mean of δ − regret
      (:func:`playerfl_core.stats.exact_tests.sign_flip_mean_test`: every sign pattern of the
      non-zero values, meet in the middle, up to 40 values; a seeded Monte Carlo of 200,000
      patterns above), in place of the Wilcoxon test, in every family of items 5, 7, 9 and 10,
      with the same δ = 0.02, the same families and Holm, the same decision rule and the same
      floor (not run when 2/2ⁿ > α). Item 9's curvature comparison tests the mean paired
      difference the same way. Outside the pre-registration, chapter 04's R1 and the
      one-learning-rate parts of C5 use it too (``split_verdicts.TEST``): one test for every
      "mean … within δ" and "mean difference" verdict of the split study.
    * **Reporting**: chapter 04b shows, per family, the verdicts under the declared Wilcoxon test
      and under the test of the mean side by side, and names the ones that changed
      (:func:`reanalysis`). The book's verdicts, claim R2 included (read as in item 10), are
      the test of the mean's; the Wilcoxon verdicts stay on the page as the record.
    * Nothing else changes: no federation, seed, threshold, entry or kind is added or dropped.

12. **Each split at its own learning rate** (issue 34, item 4; declared while its runs were
    computing, before any of them was read; every earlier item's outcome was known). Until now
    every split of a sweep trained at PLayer-FL's tuned rate, which handicaps the splits the
    rule did not choose and so weakens the oracle. So:

    * **Federations and seeds**: ``preregistered.FAIR_SWEEP`` (Heart, seeds 0–49; Digits,
      Fashion-MNIST, rotated Fashion-MNIST and Fashion-MNIST with α = 0.1, seeds 0–9: the
      one-rate sweep's seeds, so the two are paired).
    * **Runs**: every split p = 0 … L tuned like any algorithm of the standard grid (its
      learning-rate grid, its tuning seeds apart from the evaluation seeds, widening at an
      edge), then run at its own rate on the evaluation seeds; committed as ``stores/fair``.
    * **Quantities**: per seed, the oracle over splits each at its own rate (best validation
      score) and the paper's rule's regret, test(oracle) − test(rule's p at its own rate); the
      rule's p is unchanged (read from the first epoch at PLayer-FL's rate, as PLayer-FL runs).
    * **Test**: R1's test (the sign-flip test of the mean of δ − regret, δ = 0.02, α = 0.05),
      Holm over the five federations: the family "R1 at each split's own rate".
    * **Reporting**: chapter 04 shows per federation the one-rate and the own-rate mean regret
      with their intervals, both verdicts, and the rate each split was tuned to. R1 on the
      scorecard keeps its one-rate family (27 federations); its line names every federation
      whose verdict differs at own rates.

13. **The ladder's middle rung** (issue 34, item 6; declared before any of its runs was
    computed; every earlier item's outcome was known, and the rule's choice at the paper's
    sizes (the ladder's first rung, descriptive) had been read). The book's sweeps train the CNN
    at width 0.25 on 400 images per client for 10 rounds; does what they found hold on a
    larger federation? So:

    * **Federations and seeds**: ``preregistered.LADDER`` (Fashion-MNIST and its rotated
      federation, which decides claim R2), seeds ``preregistered.MIDDLE_SEEDS`` (0–4).
    * **Runs** (``study.middle_rung``): every split p = 0 … L at 1,000 images per client (the
      paper profile's loader and 64/16/20 splits), the CNN at width 0.5, 20 rounds, the book's
      sweep rate 0.003 and batch 32 (one rate, as the book's one-rate sweeps: no tuning at this
      size); committed as ``stores/ladder/middle_sweep.parquet``.
    * **Quantities**, per seed: the paper's rule's p (from the runs' first epoch, t = 1, mean
      pooling), the validation oracle's p, and the regret test(oracle) − test(rule's p), macro-F1.
    * **No test**: with 5 seeds the sign-flip test's smallest two-sided p is 2/2⁵ = 0.0625 > α,
      so the rung is descriptive and moves no verdict. **What "moves with scale" means**, per
      federation, against the book's one-rate sweep on the same seeds 0–4: the rule's p moves
      when its most frequent p differs (with ties: when the two rungs' sets of most frequent
      splits share none); the oracle's p the same; the regret moves when the
      book's mean regret lies outside the rung's seeded 95 % bootstrap interval of the mean.
      For rotated Fashion-MNIST the chapter also says whether the rung's mean regret is above δ.
    * **Reporting**: chapter 04's scale-ladder section shows both rungs side by side, with what
      the rung cost, whatever the outcome.

14. **The ladder's evaluation rung** (issue 34, item 5; declared before any of its runs was
    computed; every earlier item's outcome was known, the middle rung's included). At the book's
    sizes a Fashion-MNIST client scores on 64 validation and 80 test images, and a run's score
    has a standard error of about δ from the draw of those images alone. Do the regrets that
    decide R1 and R2 hold when that noise falls below δ/4? So:

    * **Federations and seeds**: ``preregistered.LADDER`` (Fashion-MNIST and its rotated
      federation), seeds ``preregistered.EVAL_SEEDS`` (0–9): the seeds of the book's one-rate
      sweeps of both.
    * **Runs** (``study.eval_rung``): the book's sweep as the book trains it (400 images per
      client, the CNN at width 0.25, 10 rounds, rate 0.003, batch 32; every client's training
      images bit for bit the book's), every split p = 0 … L, but each client's validation and
      test sets replaced by 2,000 images each, drawn with the client's label mix (and, rotated,
      its rotation) from Fashion-MNIST images no client trains on: the rest of the training
      split and the official test split (``data_prep.eval_sets``). Committed as
      ``stores/ladder/eval_sweep.parquet``.
    * **Quantities**, per seed: the paper's rule's p (first epoch, mean pooling; the rule reads
      training data only), the validation oracle's p, and the regret test(oracle) − test(rule's
      p), macro-F1, each client at its best-validation round.
    * **Test**: R1's test (the sign-flip test of the mean of δ − regret, δ = 0.02, α = 0.05),
      Holm over the two federations: the family "R1 at low evaluation noise". It is reported
      beside each federation's verdict in R1's family at the book's evaluation sizes; a
      verdict that differs is reported as changed by evaluation noise. R1's family on the
      scorecard is not replaced. Descriptive, as item 13: whether the rule's p, the oracle's p
      and the regret move (item 13's reading, against the book's sweep on the same seeds).
    * **Noise**: a run's standard error at both evaluation sizes (the accuracy's binomial
      error, as chapter 04 states it now), and a client's macro-F1 standard error, measured by
      resampling one trained model's predictions on a client's 2,000 test images at 80 and at
      2,000 images.
    * **Reporting**: chapter 04's scale-ladder section shows both evaluation sizes side by side,
      the verdicts and what the rung cost, whatever the outcome.

15. **R1's family at low evaluation noise** (issue 34, item 5; declared after item 14's outcome
    and its measurement of a regret's noise were known, and with R1's verdicts at the book's
    evaluation sizes on every page; committed before any run of it was computed). Item 14
    measured that a seed's regret at the book's 80 test images per client has a standard error
    of 0.02–0.03 (about δ), and 0.005–0.009 at 2,000; R1's family still reads the former. So:

    * **Federations and seeds**: every federation of R1's family whose declaration has held-out
      images (Fashion-MNIST and its 12 heterogeneity federations, on all their committed seeds
      of the one-rate sweep: 10, 20 or 30). Heart and Digits have no images to spare and keep
      their test sets.
    * **Runs** (``study.r1_rescore``): per seed, the committed run of the paper's rule's split
      and of the validation oracle's split (one run when they agree), trained again from its
      manifest entry and compared row by row with the committed run; each client's deployed
      model at its best-validation round scored on 2,000 test images drawn from its own
      distribution (``data_prep.eval_sets``, the evaluation rung's draw). The validation sets
      stay the book's: they choose the oracle's split and each client's round, which are the
      procedure under test, not its measurement (item 14 shows what larger validation sets
      change on two federations). Committed as ``stores/ladder/r1_rescore.parquet``.
    * **Quantities**: per seed, regret = test(oracle's p) − test(rule's p), macro-F1, both terms
      on the 2,000-image test sets.
    * **Test**: R1's family as it stands (the sign-flip test of the mean of δ − regret, δ = 0.02,
      α = 0.05, Holm over every swept federation), with these regrets in place of the same
      seeds' regrets on 80 images. It **replaces** R1's family of item 14's reading: the
      scorecard and chapter 04 read it. Item 12's comparison at each split's own
      rate keeps the book's test sets on both sides (its runs are not rescored).
    * **Reporting**: chapter 04 shows per federation the mean regret and verdict with the book's
      test sets and with 2,000 images side by side, names every verdict that changed, and says
      what the rescore cost; whatever the outcome.

16. **R2's families at low evaluation noise** (issue 34, item 5; declared after item 15's
    outcome was known (0 of R1's 13 rescored verdicts changed), with R2's verdicts at the book's
    evaluation sizes on every page; committed before any run of it was computed). Item 15 left
    every family of R2 on 80 test images per client. So:

    * **Federations and seeds**: every federation of R2's tested sets whose declaration has
      held-out images (the Fashion-MNIST federations of the evaluation set, both follow-ups and
      the confirmation test, on all their declared seeds); the Digits federations have no
      images to spare and keep their test sets. The development set (tuning) is not touched.
    * **Runs** (``study.r2_rescore``, item 15's procedure and draw): per seed, the committed run
      of every entry's split (:data:`ALL_ENTRIES`) and of the validation oracle's, trained again
      from its manifest entry and compared row by row with the committed run, each client's
      model at its best-validation round scored on 2,000 test images from its own distribution.
      A run item 15 already rescored is read from its store, not trained again. Validation
      stays the book's (it chooses every split and round). Committed as
      ``stores/ladder/r2_rescore.parquet``.
    * **Quantities**: per seed and entry, regret = test(oracle's p) − test(entry's p), macro-F1,
      both terms on the 2,000-image test sets where both runs were rescored.
    * **Test**: every family of items 5, 7, 9 and 10 as it stands (item 11's test of the mean,
      δ = 0.02, the same families, Holm and decision rule), item 9's curvature comparison and
      claim R2 (item 10's reading), with these regrets in place of the same seeds' regrets on
      80 images. They **replace** the 80-image families: chapter 04b, the appendix and the
      scorecard read them. Item 11's side by side (Wilcoxon against the mean) stays on the book's
      test sets: it is the record of that correction.
    * **Reporting**: chapter 04b shows, per family, rule and kind, the verdict with the book's
      test sets and with 2,000 images side by side, names every verdict that changed and what
      that makes of claim R2, and says what the rescore cost; whatever the outcome.

17. **Validation on 2,000 images too** (issue 34, item 5; declared after items 15 and 16's
    outcomes were known (0 of R1's 13 and 3 of R2's 104 rescored verdicts changed), committed
    before any run of it was computed but one: a check that the procedure gives item 14's run of
    Fashion-MNIST seed 3, p = 2 bit for bit; an earlier try computed 48 runs, none of them read
    but for their comparison with the committed runs, and lost them with its machine before this
    declaration landed: every run is computed again after it). Items 15 and 16 kept the book's
    64 validation images per client, which choose the oracle's split, the probe's and every
    client's round; a run's validation score is about δ away from its expectation by the draw
    of those images alone. So:

    * **Federations and seeds**: every seed of R1's family and of R2's tested sets whose
      federation has held-out images (Fashion-MNIST and its 12 heterogeneity federations, 190
      seeds). Heart and Digits keep their sets; the development set (tuning) is not touched.
    * **Runs** (``study.val_rescore``): every split p = 0 … L of each seed trained again from its
      manifest entry and compared row by row with the committed run; after every round each
      client's deployed model scored on 2,000 validation images from its own distribution
      (item 14's draw), its round chosen on those (lowest validation loss, as everywhere), and
      that round's model scored on 2,000 test images. The 20 seeds of item 14's rung
      (``fmnist`` and ``fmnist_rotate``, seeds 0–9) are read from its store: its runs are these
      runs. 1,020 runs, about 54,000 CPU-s (53 CPU-s measured on the check run). Committed as
      ``stores/ladder/val_rescore.parquet`` once every run is computed; no part of it is read
      before then.
    * **Quantities**: per seed, the validation oracle's split (best run score on the 2,000
      validation images; ties to the smaller p), the validation probe's split (its rule at
      round :data:`PROBE_ROUNDS` on those images), every first-epoch entry's split as
      committed (they read training data only), and regret = test(oracle's p) − test(entry's p),
      macro-F1, both terms on 2,000 test images at the rounds the validation images chose.
    * **Test**: R1's family (item 15's reading) and every family of items 5, 7, 9 and 10,
      item 9's curvature comparison and claim R2 (item 16's reading), each as it stands
      (item 11's test of the mean, δ = 0.02, the same families, Holm and decision rule), with
      these regrets in place of items 15 and 16's on the same seeds; the Digits seeds keep
      theirs. They **replace** items 15 and 16's families on every page, which stay beside them
      as the record.
    * **Reporting**: chapter 04 (R1) and 04b (R2) show per family, rule and kind the verdict
      with 2,000 test images only and with 2,000 validation images too, name every verdict
      that changed, say on how many seeds the oracle's split moved and what the rescore cost;
      whatever the outcome.
    * **Disclosure** (added on 2026-12-04, with 606 of the 1,020 runs computed and before the
      store was written): while the chapters' reading of this item was wired up, one check of
      the plumbing read the partial table of those runs (the 101 seeds whose every split was
      then computed): per federation, item 15's and this item's mean regret on those seeds,
      and on how many of them the oracle's split moved. Nothing above was changed after it;
      the partial numbers are reported nowhere, and the reading's code was then checked on
      item 14's rung alone.

About 700 lines in one module: each declaration and the code that carries it out stay side by
side, so that this file's git history is the record of what was declared, and when.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from data_prep import preregistered
from playerfl_core.stats.split_verdicts import TEST, TOLERANCE  # δ = 0.02; item 11's test

PROBE_ROUNDS = 2
"""The validation probe trains every split for this many rounds."""
SEEDS, DEFAULT_SEEDS = preregistered.SEEDS, preregistered.DEFAULT_SEEDS
LEARNING_RATES = preregistered.LEARNING_RATES
DEVELOPMENT, EVALUATION = preregistered.DEVELOPMENT, preregistered.EVALUATION
FOLLOW_UP = preregistered.FOLLOW_UP
FOLLOW_UP_2 = preregistered.FOLLOW_UP_2
CONFIRMATION = preregistered.CONFIRMATION
CONFIRMATION_SEEDS = preregistered.CONFIRMATION_SEEDS
TUNING_SEEDS = preregistered.TUNING_SEEDS
DEVELOPMENT_ADDED_SEEDS = preregistered.DEVELOPMENT_ADDED_SEEDS
"""The declared federations, seeds and learning rates: in ``data_prep/preregistered.py``, where
the library's dataset names live (declared in this module at commit a025bfc, moved unchanged)."""

GRIDS = {
    "paper": (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
    "cost": (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
    "disagreement": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "cost2": (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),  # item 9: the grid of "cost"
}
"""The thresholds :func:`tune` may choose from, per rule."""
TUNED = {"paper": 2.0, "cost": 0.1, "disagreement": 0.3, "cost2": 0.1}
"""The thresholds :func:`tune` chose on the development set (recomputed by a test). The
``cost``, ``cost2`` and ``disagreement`` values are those rules' defaults in ``split_rules``;
the paper's rule keeps the paper's t = 1 as its default, and its tuned t is an entry of its
own. ``cost2``'s was tuned after item 9's declaration, on the tuning seeds only."""


@dataclass(frozen=True)
class Entry:
    """One rule at one threshold, as evaluated."""

    label: str
    rule: str
    threshold: float | None
    """None: the value :data:`TUNED` holds for the rule."""


ENTRIES = (
    Entry("paper (t = 1)", "paper", 1.0),
    Entry("paper (tuned t)", "paper", None),
    Entry("paper, median pooling", "paper_median", 1.0),
    Entry("paper, geometric-mean pooling", "paper_geomean", 1.0),
    Entry("averaging cost (tuned τ)", "cost", None),
    Entry("update disagreement (tuned τ)", "disagreement", None),
    Entry("validation probe (2 rounds)", "probe", float(PROBE_ROUNDS)),
)
ADDED_ENTRIES = (Entry("averaging cost, second order (tuned τ)", "cost2", None),)
"""Item 9: tested in families of its own on the first test's sets, with every entry on the
second follow-up."""
ALL_ENTRIES = ENTRIES + ADDED_ENTRIES


def seeds_of(dataset: str) -> tuple[int, ...]:
    return SEEDS.get(dataset, DEFAULT_SEEDS)


def base_of(dataset: str) -> str:
    return dataset.split("_", 1)[0]


def kind_of(dataset: str) -> str:
    """The kind of heterogeneity a federation of the test represents."""
    _, _, rest = dataset.partition("_")
    if not rest:
        return "base federation"
    if rest.startswith("alpha"):
        alpha = float(rest.removeprefix("alpha"))
        if alpha <= 0.1:
            return "strong label skew (α ≤ 0.1)"
        return "near IID (α = 10)" if alpha >= 10 else "moderate label skew (α 0.3–1)"
    if rest == "quantity":
        return "quantity skew"
    if rest == "swap":
        return "concept shift"
    kind, _, alpha = rest.partition("_alpha")
    return f"mixed ({kind} + α = {alpha})" if alpha else f"feature skew ({kind})"


KIND_ORDER = (
    "base federation",
    "strong label skew (α ≤ 0.1)",
    "moderate label skew (α 0.3–1)",
    "near IID (α = 10)",
    "feature skew (rotate)",
    "feature skew (invert)",
    "feature skew (noise)",
    "mixed (rotate + α = 0.1)",
    "mixed (noise + α = 0.1)",
    "quantity skew",  # the follow-up's kind (item 7)
    "concept shift",  # the second follow-up's kind (item 9)
)


CONFIRMING = "confirmation"


def role_of(dataset: str, seed: int | None = None) -> str:
    """The set a federation belongs to; with ``seed``, the confirmation test's seeds of its
    federations (item 10) are a set of their own."""
    if seed is not None and dataset in CONFIRMATION and seed in CONFIRMATION_SEEDS:
        return CONFIRMING
    if dataset in DEVELOPMENT:
        return "development"
    if dataset in EVALUATION:
        return "evaluation"
    if dataset in FOLLOW_UP:
        return "follow-up"
    if dataset in FOLLOW_UP_2:
        return SECOND_FOLLOW_UP
    raise ValueError(
        f"{dataset!r} is in no set of the pre-registration (development: "
        f"{', '.join(DEVELOPMENT)}; evaluation: {', '.join(EVALUATION)}; follow-up: "
        f"{', '.join(FOLLOW_UP)}; second follow-up: {', '.join(FOLLOW_UP_2)})."
    )


# -- tuning, on the development set only ------------------------------------------------------
def tuning_curve(rules_table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Mean regret over the development federations (each weighing the same) per rule and
    threshold of :data:`GRIDS`, on the tuning seeds (:data:`TUNING_SEEDS`). Rows of any other
    federation or seed are dropped before anything is computed. Columns: rule, threshold,
    regret."""
    from playerfl_core.study.split_rules_table import rethreshold, rule_regrets

    def tuning_rows(frame):
        seeds = frame["dataset"].map(TUNING_SEEDS)
        keep = [isinstance(s, tuple) and x in s for s, x in zip(seeds, frame["seed"], strict=True)]
        return frame[keep]

    dev_rules = tuning_rows(rules_table)
    dev_scores = tuning_rows(scores)
    missing = sorted(set(DEVELOPMENT) - set(dev_rules["dataset"]))
    if missing:
        raise ValueError(f"The rules table lacks development federations {missing}.")
    rows = []
    for rule, grid in GRIDS.items():
        for t in grid:
            reg = rule_regrets(dev_scores, rethreshold(dev_rules, rule, t))
            rows.append((rule, t, reg.groupby("dataset")["regret"].mean().mean()))
    return pd.DataFrame(rows, columns=["rule", "threshold", "regret"])


def tune(rules_table: pd.DataFrame, scores: pd.DataFrame) -> dict[str, float]:
    """Per rule of :data:`GRIDS`: the threshold with the smallest mean development regret
    (:func:`tuning_curve`; ties to the smaller threshold)."""
    curve = tuning_curve(rules_table, scores).sort_values(["rule", "regret", "threshold"])
    best = curve.groupby("rule", sort=False).head(1).set_index("rule")["threshold"]
    return {rule: float(best[rule]) for rule in GRIDS}


# -- the declared analysis ------------------------------------------------------------------------
def entry_splits(rules_table: pd.DataFrame, entries: Sequence[Entry] = ALL_ENTRIES) -> pd.DataFrame:
    """Every entry's split per seed (default :data:`ALL_ENTRIES`), from the rules table (the
    probe's rows included, see :func:`~playerfl_core.study.split_rules_table.rules_for_sweep`).
    Columns: dataset, lr, seed, rule, threshold, p, entry."""
    from playerfl_core.study.split_rules_table import PROBE, rethreshold, splits

    parts = []
    for e in entries:
        if e.rule == PROBE:
            probe = rules_table[
                (rules_table["rule"] == PROBE) & (rules_table["threshold"] == e.threshold)
            ]
            if probe.empty:
                raise ValueError(
                    f"The rules table has no validation-probe rows of {e.threshold:g} rounds "
                    "(rules_for_sweep(..., probe_rounds=...) adds them)."
                )
            chosen = splits(probe)
        else:
            t = TUNED[e.rule] if e.threshold is None else e.threshold
            chosen = rethreshold(rules_table, e.rule, t)
        parts.append(chosen.assign(entry=e.label))
    return pd.concat(parts, ignore_index=True)


def entry_regrets(
    rules_table: pd.DataFrame, scores: pd.DataFrame, entries: Sequence[Entry] = ALL_ENTRIES
) -> pd.DataFrame:
    """Per seed and entry: the regret, with the federation's role and kind. Columns: dataset,
    lr, seed, entry, p_rule, p_oracle, test_rule, test_oracle, regret, role, kind."""
    from playerfl_core.study.split_rules_table import rule_regrets

    chosen = entry_splits(rules_table, entries)
    out = rule_regrets(scores, chosen.drop(columns="rule").rename(columns={"entry": "rule"}))
    out = out.rename(columns={"rule": "entry"})
    out["role"] = [role_of(d, s) for d, s in zip(out["dataset"], out["seed"], strict=True)]
    out["kind"] = out["dataset"].map(kind_of)
    return out


SECOND_FOLLOW_UP = "second follow-up"


def in_family(entries: pd.Series, role: str, added: bool = False) -> pd.Series:
    """Which rows one declared family tests on a set: every entry on the second follow-up and
    the confirmation test; elsewhere all but item 9's entries, or with ``added`` item 9's alone
    (Holm over their own kinds, so the first families stay as declared)."""
    if role in (SECOND_FOLLOW_UP, CONFIRMING):
        return pd.Series(True, index=entries.index)
    later = entries.isin([e.label for e in ADDED_ENTRIES])
    return later if added else ~later


def evaluate(
    regrets: pd.DataFrame,
    role: str = "evaluation",
    tolerance: float = TOLERANCE,
    added: bool = False,
    test: str = TEST,
) -> pd.DataFrame:
    """The declared test on one set (:func:`in_family` says which entries it holds): per
    entry and kind, mean regret with its bootstrap interval, the test of δ − regret (``test``:
    item 11's test of the mean, or ``"wilcoxon"``, the test declared until item 11), Holm over
    the family's (entry, kind) pairs and the verdict
    (:func:`playerfl_core.stats.split_verdicts.tolerance_verdicts`, the book's one rule).
    Columns: entry, kind, mean, lo, hi, median, n, p, p_holm, verdict, strength, reason."""
    from playerfl_core.stats.split_verdicts import tolerance_verdicts

    part = regrets[(regrets["role"] == role) & in_family(regrets["entry"], role, added)]
    if part.empty:
        raise ValueError(f"No regrets of the {role} set.")
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    entries = {e: i for i, e in enumerate(dict.fromkeys(part["entry"]))}
    part = part.sort_values(
        ["entry", "kind"],
        key=lambda c: c.map(entries) if c.name == "entry" else c.map(rank),
        kind="stable",
    )
    return tolerance_verdicts(part, ["entry", "kind"], tolerance, test)


FAMILIES = (
    ("evaluation", "evaluation", False),
    ("evaluation, second-order rule", "evaluation", True),
    ("follow-up", "follow-up", False),
    ("follow-up, second-order rule", "follow-up", True),
    ("second follow-up", "second follow-up", False),
    ("confirmation", "confirmation", False),
)
"""The declared families of the tested sets: (name, set, item 9's added entry alone)."""


def reanalysis(regrets: pd.DataFrame) -> pd.DataFrame:
    """Item 11's side by side: every declared family of :data:`FAMILIES` present in
    ``regrets``, under the Wilcoxon test declared until item 11 and under the test of the mean.
    Columns: family, entry, kind, mean, n, verdict_wilcoxon, p_holm_wilcoxon, verdict_mean,
    p_holm_mean, changed."""
    keys = ["entry", "kind"]
    parts = []
    for name, role, added in FAMILIES:
        rows = regrets[(regrets["role"] == role) & in_family(regrets["entry"], role, added)]
        if rows.empty:
            continue
        old = evaluate(regrets, role, added=added, test="wilcoxon")
        new = evaluate(regrets, role, added=added, test="mean")
        both = old[[*keys, "mean", "n", "verdict", "p_holm"]].merge(
            new[[*keys, "verdict", "p_holm"]], on=keys, suffixes=("_wilcoxon", "_mean")
        )
        parts.append(both.assign(family=name))
    if not parts:
        raise ValueError("No regrets of any declared family to re-analyse.")
    out = pd.concat(parts, ignore_index=True)
    out["changed"] = out["verdict_wilcoxon"] != out["verdict_mean"]
    return out[["family", *keys, "mean", "n", "verdict_wilcoxon", "p_holm_wilcoxon",
                "verdict_mean", "p_holm_mean", "changed"]]  # fmt: skip


WITHIN, BEYOND = "within δ", "beyond δ"
"""The verdict words of the test (``split_verdicts.VERDICT_WORDS``)."""


def headline(verdicts: pd.DataFrame) -> list[str]:
    """The entries within tolerance on every kind of the set (possibly none)."""
    ok = verdicts.groupby("entry", sort=False)["verdict"].apply(lambda v: bool((v == WITHIN).all()))
    return [e for e, good in ok.items() if good]


def tolerance_curve(
    regrets: pd.DataFrame, tolerances: Sequence[float], role: str = "evaluation"
) -> pd.DataFrame:
    """The declared test over a range of δ (the figure that shows how much the answer depends
    on the tolerance). Columns: entry, kind, tolerance, verdict, p_holm."""
    from playerfl_core.stats.split_verdicts import tolerance_curve as curve

    part = regrets[(regrets["role"] == role) & in_family(regrets["entry"], role)]
    return curve(part, tolerances, ["entry", "kind"])


CURVATURE_SETS = ("evaluation", "follow-up", SECOND_FOLLOW_UP)


def curvature_comparison(regrets: pd.DataFrame, test: str = TEST) -> pd.DataFrame:
    """Item 9's paired comparison: per set, regret of the first-order rule minus that of the
    second-order rule on the same seeds (> 0: curvature helps), the test of their mean (item 11;
    ``test="wilcoxon"``: item 9's), Holm over the sets present. Columns: set, mean, lo, hi, n,
    same_split, p, p_holm, verdict, strength, reason (verdict *supported*: the second order has
    the smaller regret)."""
    from playerfl_core.stats.seed_stats import bootstrap_interval
    from playerfl_core.stats.split_verdicts import decide_family, difference_evidence

    first, second = (next(e.label for e in ALL_ENTRIES if e.rule == r) for r in ("cost", "cost2"))
    key = ["dataset", "lr", "seed"]
    rows, parts = [], []
    for role in CURVATURE_SETS:
        part = regrets[regrets["role"] == role]
        a = part[part["entry"] == first].set_index(key)
        b = part[part["entry"] == second].set_index(key)
        if a.empty or b.empty:
            continue
        both = a.merge(b, left_index=True, right_index=True, suffixes=("_1", "_2"))
        d = (both["regret_1"] - both["regret_2"]).to_numpy()
        m, lo, hi = bootstrap_interval(d, seed=0)
        same = int((both["p_rule_1"] == both["p_rule_2"]).sum())
        rows.append((role, m, lo, hi, len(d), same))
        parts.append(difference_evidence(d, role, test=test))
    decided = decide_family(parts)
    out = pd.DataFrame(rows, columns=["set", "mean", "lo", "hi", "n", "same_split"])
    out["p"] = [e.pvalue for e in decided]
    out["p_holm"] = [e.p_adjusted for e in decided]
    out["verdict"] = [e.verdict for e in decided]
    out["strength"] = [e.strength for e in decided]
    out["reason"] = [e.reason for e in decided]
    return out


def worst_kinds(regrets: pd.DataFrame) -> dict[str, str]:
    """Item 10's selection: per entry, the kind of its largest mean regret over the first
    test's evaluation seeds (role ``evaluation``)."""
    ev = regrets[regrets["role"] == "evaluation"]
    if ev.empty:
        raise ValueError("No regrets of the evaluation set to select the confirmation kinds from.")
    means = ev.groupby(["entry", "kind"], sort=False)["regret"].mean()
    return {entry: str(g.droplevel(0).idxmax()) for entry, g in means.groupby(level=0, sort=False)}


def confirmation_federations(worst: dict[str, str]) -> tuple[str, ...]:
    """The evaluation federations of the first-epoch entries' worst kinds (item 10)."""
    kinds = {k for e, k in worst.items() if e != _PROBE_LABEL}
    return tuple(d for d in EVALUATION if kind_of(d) in kinds)


_PROBE_LABEL = next(e.label for e in ENTRIES if e.rule == "probe")
FIRST_EPOCH = tuple(e.label for e in ALL_ENTRIES if e.rule != "probe")
"""The entries a client can compute after its first epoch (the probe trains every split)."""


def claim(
    verdicts: pd.DataFrame,
    profile: str = "",
    confirmation: pd.DataFrame | None = None,
    added: pd.DataFrame | None = None,
):
    """Claim R2 of the scorecard from the evaluation verdicts: *supported* when some first-epoch
    rule is within δ on every kind, *contradicted* when every first-epoch rule is beyond δ on
    at least one kind, else *undecided* (the probe is a reference, not a first-epoch rule).
    With the confirmation test's verdicts (item 10) and the added rule's own evaluation family
    (``added``), a rule's failure may come from any of them. Strength: of the deciding rule's
    weakest kind (supported), or the weakest of the rules' strongest failures
    (contradicted)."""
    from playerfl_core.stats.claims import claim_from
    from playerfl_core.stats.decisions import STRENGTHS, Verdict

    rank = {s: i for i, s in enumerate(STRENGTHS)}
    first_epoch = [e.label for e in ENTRIES if e.rule != "probe"]
    rows = verdicts[verdicts["entry"].isin(first_epoch)]
    evidence = [rows]
    for extra, suffix in ((added, ""), (confirmation, " (confirmation)")):
        if extra is not None:
            extra = extra[extra["entry"].isin(FIRST_EPOCH)]
            evidence.append(extra.assign(kind=extra["kind"] + suffix))
    evidence = pd.concat(evidence, ignore_index=True)
    winners = [e for e in headline(rows)]
    if winners:
        g = rows[rows["entry"] == winners[0]]
        strength = max(g["strength"], key=rank.__getitem__)
        verdict = Verdict("supported", strength, f"{winners[0]}: within δ on all {len(g)} kinds")
    else:
        required = FIRST_EPOCH if confirmation is not None else dict.fromkeys(rows["entry"])
        failures = {
            e: evidence[(evidence["entry"] == e) & (evidence["verdict"] == BEYOND)][
                "strength"
            ].tolist()
            for e in required
        }
        if all(failures.values()):
            strongest = [min(f, key=rank.__getitem__) for f in failures.values()]
            weakest = max(strongest, key=rank.__getitem__)
            verdict = Verdict(
                "contradicted", weakest,
                f"each of the {len(failures)} first-epoch rules is beyond δ on at least one kind",
            )  # fmt: skip
        else:
            open_rules = [e for e, f in failures.items() if not f]
            verdict = Verdict(
                "undecided", "weak",
                f"{len(open_rules)} first-epoch rules are nowhere beyond δ but not within δ "
                "everywhere",
            )  # fmt: skip
    parts = evidence[["entry", "kind", "mean", "n", "p", "p_holm", "verdict", "strength"]]
    return claim_from("R2", parts.rename(columns={"entry": "part"}), verdict, profile)
