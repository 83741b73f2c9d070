"""The split study decides on the mean, the quantity its text names (fifth declaration, item 11
of ``preregistration``): the exact sign-flip permutation test of the mean, and one family per
claim, the same on chapter 04 and on the scorecard."""

from itertools import product

import numpy as np
import pandas as pd
import pytest

from playerfl_core.stats import claims as C
from playerfl_core.stats import exact_tests as X
from playerfl_core.stats import split_verdicts as SV


def _brute_force(d):
    d = np.asarray(d, float)
    d = d[d != 0]
    sums = np.array([np.dot(s, np.abs(d)) for s in product([-1, 1], repeat=len(d))])
    greater = (sums >= d.sum() - 1e-12).mean()
    less = (sums <= d.sum() + 1e-12).mean()
    return greater, less, min(1.0, 2 * min(greater, less))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 13])
def test_sign_flip_mean_test_is_every_sign_pattern(n):
    d = np.random.default_rng(n).normal(0.01, 0.03, n)
    greater, less, both = _brute_force(d)
    assert X.sign_flip_mean_test(d) == pytest.approx(both, abs=1e-12)
    assert X.sign_flip_mean_test(d, "greater") == pytest.approx(greater, abs=1e-12)
    assert X.sign_flip_mean_test(d, "less") == pytest.approx(less, abs=1e-12)


def test_sign_flip_ties_zeros_and_floor():
    assert X.sign_flip_mean_test([0.02] * 10) == pytest.approx(X.min_pvalue("sign_flip", 10))
    assert X.sign_flip_mean_test([0.0, 0.02, 0.02, 0.0]) == pytest.approx(0.5)  # zeros dropped
    assert X.sign_flip_mean_test([]) == 1.0
    tied = [0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1]  # equal |d|: sums tie with the observed one
    assert X.sign_flip_mean_test(tied) == pytest.approx(_brute_force(tied)[2], abs=1e-12)
    with pytest.raises(ValueError, match="alternative"):
        X.sign_flip_mean_test([1.0], "bigger")


def test_sign_flip_above_the_exact_limit_samples_the_same_null(monkeypatch):
    """Above the exact limit, a seeded Monte Carlo: repeatable, and close to the exact p of the
    same values (computed here past the limit, lowered to keep the test fast)."""
    monkeypatch.setattr(X, "SIGN_FLIP_EXACT_LIMIT", 2**8)
    d = np.random.default_rng(3).normal(0.004, 0.03, 18)  # distinct: 2⁹ patterns per half
    sampled = X.sign_flip_mean_test(d)
    assert sampled == X.sign_flip_mean_test(d)
    exact = X._sign_flip_tails_exact(np.abs(d), float(d.sum()), 1e-12)
    assert sampled == pytest.approx(2 * min(exact), abs=0.005)


def test_a_zero_inflated_regret_with_mean_above_delta_is_not_within_delta():
    """18 seeds at regret 0 and 2 at 0.30: median 0, mean 0.03 > δ = 0.02. The Wilcoxon test
    (the test until item 11) calls it within δ; the test of the mean must not."""
    regrets = [0.0] * 18 + [0.3, 0.3]
    assert np.median(regrets) == 0 and np.mean(regrets) > 0.02
    old = C.decide_family([C.tolerance_evidence(regrets, 0.02, test="wilcoxon")])[0]
    new = C.decide_family([C.tolerance_evidence(regrets, 0.02)])[0]
    assert old.verdict == "supported"
    assert new.verdict != "supported" and new.estimate < 0  # the mean of δ − regret
    assert new.test.startswith(SV.TESTS[SV.TEST][0]) and "of the mean" in new.test
    frame = pd.DataFrame({"dataset": ["z"] * 20, "regret": regrets})
    assert C.tolerance_verdicts(frame, ["dataset"])["verdict"].item() != "within δ"
    assert C.r1_rule_finds_oracle(frame).verdict.verdict != "supported"


def test_a_mean_far_beyond_delta_with_a_median_within_is_beyond():
    regrets = [0.0] * 12 + [0.25] * 8  # median 0, mean 0.10
    new = C.decide_family([C.tolerance_evidence(regrets, 0.02)])[0]
    assert new.verdict == "contradicted"


def test_unknown_test_is_refused_by_name():
    with pytest.raises(ValueError, match="test must be one of"):
        C.tolerance_evidence([0.0] * 6, 0.02, test="median")


def test_each_claims_parts_read_the_same_in_chapter_04_and_on_the_scorecard(monkeypatch):
    """One family per claim: chapter 04's verdicts, computed from its default parameters as its
    cells compute them, and the scorecard's R1 and C5 (chapter 06, the intro) hold the same
    parts with the same Holm-adjusted p and verdict."""
    from playerfl_core.book.reports import reproduction as RP
    from playerfl_core.book.reports import split_choice as R
    from playerfl_core.study import rescore as V
    from playerfl_core.study import split_oracle as O
    from playerfl_core.study.archive import archive_dir

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed archives, as chapters
    stored = O.load_sweeps(archive_dir("standard"))
    datasets = ["heart", "digits", "fmnist"]
    seeds = [0, 1, 2, 3, 4]
    table = O.sweeps(datasets, seeds, "standard", stored=stored, progress=False)
    sweep = R.analyse_sweep(table, datasets)
    # the chapter's dataset order, not the alphabet's, in its curves (Fig. 16) and C5 table (39)
    c5_summary = O.c5_summary(O.c5_table(sweep.scores, sweep.rules))
    for frame in (sweep.scores, sweep.summary, c5_summary):
        assert list(dict.fromkeys(frame["dataset"])) == datasets
    kinds = "rotate,invert,noise,quantity,swap"
    plan = R.heterogeneity_plan("digits,fmnist", "0.05,0.1,0.3,1,10", kinds, "rotate:0.1,noise:0.1")
    assert set(plan["dataset"]) | set(datasets) <= set(stored["dataset"])  # nothing to train
    het = O.sweeps(plan["dataset"], seeds, "standard", stored=stored, progress=False)
    _, _, het_regrets = R.analyse_heterogeneity(het, plan)
    tuned = R.tuned_runs("standard", datasets)
    regrets = sweep.regrets[sweep.regrets["variant"] == "paper"]
    c5 = O.c5_table(sweep.scores, sweep.rules)
    chapter = C.split_verdicts(V.r1_family(regrets), c5, V.r1_family(het_regrets), tuned=tuned)

    split = RP.split_evidence("standard", datasets)
    card = {"oracle": split["r1"], "C5": C.c5_beats_random(tuned, sweep_c5=split["c5"])}
    for claim, scored in card.items():
        ours = chapter[chapter["claim"] == claim]
        theirs = scored.parts
        assert len(ours) == len(theirs), claim
        got = sorted(zip(ours["p_holm"].round(12), ours["verdict"], strict=True))
        want = sorted(zip(theirs["p_holm"].round(12), theirs["verdict"], strict=True))
        assert got == want, claim

    from playerfl_core.book.reports import comparison

    chapter_05 = comparison.paired_with_random(tuned, "standard")["c5"].parts  # its C5 table
    # the chapter's dataset order, not the alphabet's, in its C5 table and paired figure
    reader = pd.concat([tuned[tuned["dataset"] == d] for d in ("heart", "fmnist", "digits")])
    shown = comparison.paired_with_random(reader, "standard")
    assert list(dict.fromkeys(shown["diffs"]["dataset"])) == ["heart", "fmnist", "digits"]
    one_rate = [p.split(": ")[1].split(",")[0] for p in shown["c5_table"].index
                if p.startswith("one rate")]  # fmt: skip
    assert list(dict.fromkeys(one_rate)) == ["Heart", "Fashion-MNIST", "Digits"]
    got = sorted(zip(chapter_05["p_holm"].round(12), chapter_05["verdict"], strict=True))
    assert got == sorted(zip(card["C5"].parts["p_holm"].round(12), card["C5"].parts["verdict"],
                             strict=True))  # fmt: skip


def test_the_bottom_line_names_the_distinct_rules_and_the_kinds_that_decide_r2():
    from playerfl_core.book.reports import rule_scope as S
    from playerfl_core.study import preregistration as P

    paper, tuned, cost, cost2 = (P.FIRST_EPOCH[0], P.FIRST_EPOCH[1], "averaging cost (tuned τ)",
                                 "averaging cost, second order (tuned τ)")  # fmt: skip
    rows = []
    for seed in range(40):
        splits = {paper: 3, tuned: 3 if seed else 2, cost: seed % 4, cost2: seed % 4}
        if seed < 3:
            splits[cost2] = 5  # 37 of 40 = 92.5 % < 95 %: a rule of its own
        for entry, p in splits.items():
            rows.append(("fmnist_rotate", 0.01, seed, entry, p, "evaluation"))
    rows.append(("fmnist_rotate", 0.01, 0, paper, 0, "development"))  # tuning seeds do not count
    frame = pd.DataFrame(rows, columns=["dataset", "lr", "seed", "entry", "p_rule", "role"])
    groups = S.distinct_rules(frame)
    assert [g[0] for g in groups] == [paper, cost, cost2]
    assert groups[0][1] == [(paper, 1.0), (tuned, 39 / 40)]
    text = S.distinct_text(frame)
    assert "the 4 first-epoch rules tested are 3 distinct rules" in text
    assert text.endswith(
        f"seeds: “{paper}” (with “{tuned}”: the same split on ≥ 98% of seeds); “{cost}”; “{cost2}”"
    ), text

    median = "paper, median pooling"
    forms = pd.concat(
        [frame, frame[frame["entry"] == paper].assign(entry=median, p_rule=[4] * 10 + [3] * 31)]
    )
    assert S.paper_forms_agreement(forms) == "75%–98%"  # median 30 of 40, tuned 39 of 40
    assert S.paper_forms_agreement(frame) == "98%"

    parts = pd.DataFrame(
        [(e, k, P.BEYOND if k == "rotate" or e == paper else "undecided")
         for e in (paper, tuned, cost) for k in ("rotate", "noise")],
        columns=["part", "kind", "verdict"],
    )  # fmt: skip
    assert S.deciding_kinds(parts) == "every one is beyond δ on rotate, which decides R2 alone"
    parts.loc[parts["part"] == cost, "verdict"] = "undecided"
    assert S.deciding_kinds(parts) == "beyond δ on rotate (2 of 3); noise (1 of 3)"
    assert S._named("noise", plain=True) == "noise"
    confirmed = S._named(f"{P.kind_of(P.CONFIRMATION[0])} (confirmation)", plain=True)
    seeds = f"{P.CONFIRMATION_SEEDS[0]}–{P.CONFIRMATION_SEEDS[-1]}"
    assert confirmed.endswith(f"), confirmed on fresh seeds {seeds}"), confirmed
    assert "(confirmation" not in confirmed and confirmed.count("(") == 1


def test_the_reanalysis_shows_both_tests_for_every_declared_family():
    from playerfl_core.study import preregistration as P

    rows = []
    for seed in range(30):
        zero_inflated = 0.3 if seed < 3 else 0.0  # mean 0.03: Wilcoxon within δ, mean test not
        for entry in P.ENTRIES:
            rows.append((entry.label, "quantity skew", "follow-up", seed, zero_inflated))
    frame = pd.DataFrame(rows, columns=["entry", "kind", "role", "seed", "regret"])
    re = P.reanalysis(frame)
    assert set(re["family"]) == {"follow-up"} and len(re) == len(P.ENTRIES)
    assert (re["verdict_wilcoxon"] == P.WITHIN).all() and re["changed"].all()
    assert (re["verdict_mean"] != P.WITHIN).all()
    with pytest.raises(ValueError, match="No regrets"):
        P.reanalysis(frame.assign(role="development"))


# -- a test of the mean that keeps its size on skewed, zero-inflated regrets ----------------------
@pytest.fixture(scope="module")
def committed_r1():
    """R1's regrets per seed as the scorecard and chapter 04 read them, from the committed
    standard archive (every swept federation; Heart's 50 seeds)."""
    from playerfl_core.study import rescore as V
    from playerfl_core.study import split_oracle as O

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PLAYERFL_STORES", raising=False)  # the committed stores, as chapters
        scores, rules = O.committed_scores("standard")
        return V.r1_family(O.regrets(scores, rules))[["dataset", "seed", "regret"]]


def test_heart_50_seed_p_is_exact_with_tied_values_grouped(committed_r1):
    """Heart's 50 seeds have 36 distinct |δ − regret| (15 seeds at regret 0): grouped, their
    5.5·10¹¹ sign patterns are enumerated, and R1's Holm-adjusted p of the sign-flip test is
    0.0498 (a Monte Carlo of 200,000 patterns printed 0.049)."""
    family = {ds: e for ds, _, e in SV.r1_family(committed_r1, test="sign_flip")}
    heart = committed_r1.loc[committed_r1["dataset"] == "heart", "regret"].to_numpy()
    assert len(heart) == 50 and len(family) == 27
    assert max(X._grouped_halves(np.abs(SV.TOLERANCE - heart))[2]) <= X.SIGN_FLIP_EXACT_LIMIT
    assert f"{family['heart'].p_adjusted:.4f}" == "0.0498"


def test_studentizing_the_sign_flip_statistic_changes_nothing():
    """Why the remedy is not a studentized sign-flip statistic: with Σd² fixed by the flips,
    t = mean/se is increasing in Σd, so every sign pattern ranks as by the sum: same p."""
    d = np.array([0.02] * 7 + [0.015, 0.01, -0.05, -0.09, 0.012])
    patterns = np.array(list(product([-1, 1], repeat=len(d)))) * np.abs(d)
    t = patterns.mean(1) / (patterns.std(1, ddof=1) / np.sqrt(len(d)))
    t_obs = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    studentized = 2 * min((t >= t_obs - 1e-12).mean(), (t <= t_obs + 1e-12).mean())
    assert X.sign_flip_mean_test(d) == pytest.approx(studentized, abs=1e-12)


def test_grouped_ties_give_every_sign_pattern():
    """Zero-inflated regrets tie in |δ − regret|: the grouped null (k + 1 sums for k equal
    values, binomially weighted) equals all 2ⁿ patterns."""
    d = SV.TOLERANCE - np.array([0.0] * 9 + [0.04, 0.04, 0.01, 0.03, 0.0, 0.07, 0.005])
    greater, less, both = _brute_force(d)
    assert X.sign_flip_mean_test(d, "greater") == pytest.approx(greater, abs=1e-12)
    assert X.sign_flip_mean_test(d, "less") == pytest.approx(less, abs=1e-12)
    assert X.sign_flip_mean_test(d) == pytest.approx(both, abs=1e-12)


def test_the_books_test_needs_the_bootstrap_to_confirm_the_sign_flip():
    """Ten seeds at regret 0, five at 0.01 and one at 0.07: the sign-flip test calls the mean
    (0.0075) within δ; resamples that miss the one large seed show how far the mean moves, and
    the confirmed test does not. Constant values are decided by the sign-flip floor (2/2ⁿ)."""
    d = SV.TOLERANCE - np.array([0.0] * 10 + [0.01] * 5 + [0.07])
    assert X.sign_flip_mean_test(d) <= 0.05 < X.studentized_bootstrap_test(d)
    assert X.mean_test_confirmed(d) == X.studentized_bootstrap_test(d)
    assert X.studentized_bootstrap_test(d, seed=4) == X.studentized_bootstrap_test(d, seed=4)
    assert X.mean_test_confirmed([0.02] * 10) == pytest.approx(2 / 2**10)
    assert SV.TEST == "confirmed_mean"
    regrets = pd.DataFrame({"dataset": "a", "regret": SV.TOLERANCE - d})
    change = SV.test_change(regrets).iloc[0]
    assert (change["verdict_old"], change["verdict_new"]) == ("within δ", "undecided")
    assert change["changed"] and change["p_new"] > change["p_old"]


SIZE_FEDERATIONS = ("digits_alpha10", "fmnist_noise")
"""Two federations whose committed regrets are zero-inflated and right-skewed (20 and 10
seeds): of these 1,000 samples each, the sign-flip test alone says "within δ" of 6.5 % and
12.3 %, the book's test of 3.8 % and 2.8 %."""
SIZE_SIMULATIONS = 1000
SIZE_BOUND = 0.05
"""Twice the 2.5 % a verdict's direction may take at α = 0.05 (the Monte Carlo standard error
at 2.5 % is 0.5 points)."""


def test_within_delta_keeps_its_size_on_the_books_regrets(committed_r1):
    """The audit's check: samples of each federation's seed count, drawn from its committed
    regrets shifted so that the true mean is exactly δ; how often each test says "within δ"
    (and "beyond δ"). The sign-flip test alone exceeds the bound; the book's test does not."""
    for dataset in SIZE_FEDERATIONS:
        regrets = committed_r1.loc[committed_r1["dataset"] == dataset, "regret"].to_numpy()
        at_delta = regrets - regrets.mean() + SV.TOLERANCE
        rng = np.random.default_rng(2026)
        samples = SV.TOLERANCE - rng.choice(at_delta, size=(SIZE_SIMULATIONS, len(regrets)))
        above = samples.mean(axis=1) > 0  # δ − regret > 0: the within side
        rates = {}
        for name, test in (("old", X.sign_flip_mean_test), ("new", X.mean_test_confirmed)):
            significant = np.array([test(s) for s in samples]) <= 0.05
            rates[name] = ((significant & above).mean(), (significant & ~above).mean())
        assert rates["old"][0] > SIZE_BOUND, (dataset, rates)
        assert rates["new"][0] <= SIZE_BOUND and rates["new"][1] <= SIZE_BOUND, (dataset, rates)


@pytest.mark.slow
def test_every_within_delta_verdict_rests_on_a_test_that_keeps_its_size(committed_r1):
    """The audit's simulation on each federation R1 calls "within δ": samples of its seed count
    drawn from its own regrets shifted so that the true mean is exactly δ. The book's test says
    "within δ" of at most SIZE_BOUND of them there, so no verdict the book prints rests on a
    federation whose regrets' shape fools the test (those that do, 7–11 %, are undecided)."""
    decided = SV.r1_family(committed_r1)
    within = [(ds, r) for ds, r, e in decided if e.verdict == "supported"]
    assert len(within) >= 5, within
    for dataset, regrets in within:
        at_delta = regrets - regrets.mean() + SV.TOLERANCE
        rng = np.random.default_rng(2026)
        samples = SV.TOLERANCE - rng.choice(at_delta, size=(SIZE_SIMULATIONS, len(regrets)))
        said = np.array([X.mean_test_confirmed(s) <= 0.05 for s in samples])
        assert (said & (samples.mean(axis=1) > 0)).mean() <= SIZE_BOUND, dataset
