"""Claims and verdicts: attainable p-values, exact permutation tests, the decision rule."""

import re
from itertools import permutations, product

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from playerfl_core.measure.layer_studies import COLUMNS, NO_OTHER
from playerfl_core.stats import claims as C


# -- smallest attainable p-values --------------------------------------------------------------
def test_min_pvalue_wilcoxon_matches_scipy_exact():
    for n in (2, 3, 5, 7):
        d = np.arange(1, n + 1, dtype=float)  # all positive: the most extreme pattern
        exact = stats.wilcoxon(d, alternative="two-sided", method="exact").pvalue
        assert C.min_pvalue("wilcoxon", n) == pytest.approx(exact)
    assert C.min_pvalue("wilcoxon", 3) == 0.25
    assert C.min_pvalue("wilcoxon", 2) == 0.5


def test_min_pvalue_friedman_by_enumeration():
    # Exact permutation distribution of the Friedman statistic, k = 3 treatments, n = 2 blocks.
    k, n = 3, 2
    perms = list(permutations(range(1, k + 1)))
    stat = []
    for blocks in product(perms, repeat=n):
        r = np.array(blocks, dtype=float).sum(axis=0)
        stat.append(12 / (n * k * (k + 1)) * (r**2).sum() - 3 * n * (k + 1))
    stat = np.array(stat)
    smallest = np.mean(stat >= stat.max() - 1e-12)
    assert C.min_pvalue("friedman", n, treatments=k) == pytest.approx(smallest)


def test_min_pvalue_spearman_and_bad_input():
    assert C.min_pvalue("spearman", 1, units=5) == pytest.approx(2 / 120)
    assert C.min_pvalue("spearman", 2, units=4) == pytest.approx(2 / 24**2)
    with pytest.raises(ValueError, match="Unknown test 'ttest'"):
        C.min_pvalue("ttest", 3)
    with pytest.raises(ValueError, match="units ≥ 2"):
        C.min_pvalue("spearman", 3, units=1)


# -- exact permutation tests of Spearman's rho -------------------------------------------------
def _profiles(values_per_seed):
    rows = [(s, d + 1, v) for s, vals in enumerate(values_per_seed) for d, v in enumerate(vals)]
    return pd.DataFrame(rows, columns=["seed", "depth", "v"])


def test_perfect_spearman_over_five_units_has_p_one_over_120():
    t = C.rank_correlation_test(_profiles([[0.1, 0.2, 0.4, 0.5, 0.9]]), "depth", "v")
    row = t.per_seed.iloc[0]
    assert row["rho"] == pytest.approx(1.0)
    assert row["p_greater"] == pytest.approx(1 / 120)
    assert row["p"] == pytest.approx(2 / 120)
    assert t.evidence.verdict == "supported"


def test_per_seed_p_is_not_reported_when_it_cannot_reach_alpha():
    # 4 units: the smallest two-sided p is 2/24 = 0.083 > 0.05, so no per-seed test is run,
    # but three seeds pooled can reach alpha.
    t = C.rank_correlation_test(_profiles([[1, 2, 3, 4]] * 3), "depth", "v")
    assert t.per_seed["p"].isna().all()
    assert t.per_seed["p_greater"].tolist() == pytest.approx([1 / 24] * 3)
    assert t.evidence.pvalue == pytest.approx(2 / 24**3)
    assert t.evidence.verdict == "supported"


def test_pooled_null_matches_brute_force_enumeration():
    seeds = [[0.3, 0.1, 0.4, 0.2], [0.5, 0.2, 0.9, 0.7]]
    t = C.rank_correlation_test(_profiles(seeds), "depth", "v")
    x = np.arange(1, 5)
    observed = np.mean([stats.spearmanr(x, s).statistic for s in seeds])
    means = []
    for p0, p1 in product(permutations(range(4)), repeat=2):
        r0 = stats.spearmanr(x, np.array(seeds[0])[list(p0)]).statistic
        r1 = stats.spearmanr(x, np.array(seeds[1])[list(p1)]).statistic
        means.append((r0 + r1) / 2)
    means = np.array(means)
    greater = np.mean(means >= observed - 1e-9)
    less = np.mean(means <= observed + 1e-9)
    assert t.evidence.estimate == pytest.approx(observed)
    assert t.evidence.pvalue == pytest.approx(min(1, 2 * min(greater, less)))


def test_decreasing_profile_is_contradicted_and_flat_seed_is_left_out():
    t = C.rank_correlation_test(_profiles([[5, 4, 3, 2, 1]] * 2 + [[1, 1, 1, 1, 1]]), "depth", "v")
    assert t.evidence.verdict == "contradicted"
    assert t.evidence.n == 2
    assert np.isnan(t.per_seed["rho"].iloc[2])


# -- paired comparisons --------------------------------------------------------------------------
def test_two_seed_comparison_is_undecided_and_not_run():
    # Even a one-sided test over 2 pairs has smallest p 1/4 > 0.05: it can never reject.
    a, b = np.array([0.90, 0.91]), np.array([0.50, 0.52])
    ev = C.paired_comparison(a, b)
    assert ev.verdict == "undecided" and ev.strength == "none"
    assert np.isnan(ev.pvalue)
    assert "smallest attainable two-sided p" in ev.reason and "0.500 > 0.05" in ev.reason
    assert ev.posterior is not None  # the Bayesian test still reports its posterior


def test_clear_simulated_effect_is_supported_and_opposite_contradicted():
    rng = np.random.default_rng(7)
    b = rng.normal(0.70, 0.03, 10)
    a = b + 0.05 + rng.normal(0, 0.01, 10)
    up = C.paired_comparison(a, b)
    assert up.verdict == "supported" and up.strength == "strong"
    assert up.pvalue == pytest.approx(2 / 2**10)
    assert up.posterior[0] > 0.95
    down = C.paired_comparison(b, a)
    assert down.verdict == "contradicted" and down.strength == "strong"
    # For the loss, lower is better: the same numbers read the other way.
    assert C.paired_comparison(a, b, higher_is_better=False).verdict == "contradicted"


def test_no_effect_is_undecided_and_tiny_differences_are_practically_equivalent():
    rng = np.random.default_rng(3)
    b = rng.normal(0.7, 0.05, 12)
    noisy = C.paired_comparison(b + rng.normal(0, 0.05, 12), b, rope=0.0)
    assert noisy.verdict == "undecided"
    tiny = C.paired_comparison(b + rng.normal(0, 0.001, 12), b, rope=0.02)
    assert tiny.verdict == "contradicted" and "practically equivalent" in tiny.reason
    assert tiny.posterior[1] >= 0.95


def test_wilcoxon_exact_with_ties_uses_full_enumeration():
    d = np.array([1.0, 1.0, 2.0, -1.0, 3.0, 3.0])
    signs = np.array(list(product([-1, 1], repeat=len(d))))
    ranks = stats.rankdata(np.abs(d))
    t_obs = (ranks * (d > 0)).sum()
    t_all = (ranks * (signs > 0)).sum(axis=1)
    expected = min(1, 2 * min(np.mean(t_all >= t_obs), np.mean(t_all <= t_obs)))
    assert C.wilcoxon_exact(d) == pytest.approx(expected)


def test_paired_comparison_bad_input():
    with pytest.raises(ValueError, match="rope must be ≥ 0"):
        C.paired_comparison([1, 2, 3], [1, 2, 3], rope=-0.1)
    with pytest.raises(ValueError, match="same length"):
        C.paired_comparison([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="alpha must lie in"):
        C.paired_comparison([1, 2, 3], [0, 1, 2], alpha=1.5)


# -- decision, Holm and combination --------------------------------------------------------------
def _ev(p, estimate=1.0, min_p=0.001, posterior=None):
    return C.decide(C.Evidence("x", "t", estimate, 5, "seeds", p, min_p, posterior=posterior))


def test_strength_rule():
    assert _ev(0.005).strength == "strong"
    assert _ev(0.03).strength == "moderate"
    assert _ev(0.005, posterior=(0.8, 0.1, 0.1)).strength == "moderate"
    lean = _ev(0.15, estimate=-0.3)
    assert lean.verdict == "undecided" and lean.strength == "weak" and "opposite" in lean.reason
    assert _ev(0.6).strength == "none"
    assert _ev(0.01, min_p=0.25).verdict == "undecided"


def test_holm_adjustment_can_undo_a_raw_rejection():
    parts = [_ev(0.03), _ev(0.04)]
    assert [p.verdict for p in parts] == ["supported", "supported"]
    adjusted = C.holm_decide(parts)
    assert [p.verdict for p in adjusted] == ["undecided", "undecided"]
    assert adjusted[0].p_adjusted == pytest.approx(0.06)


def test_combine_universal_claim():
    sup, con, und = _ev(0.001), _ev(0.03, estimate=-1), _ev(0.5)
    assert C.combine([sup, _ev(0.03)]).verdict == "supported"
    assert C.combine([sup, _ev(0.03)]).strength == "moderate"
    assert C.combine([sup, con, und]).verdict == "contradicted"
    mixed = C.combine([sup, und])
    assert mixed.verdict == "undecided" and mixed.strength == "weak"
    assert C.combine([und]).strength == "none"
    with pytest.raises(ValueError, match="verdict must be one of"):
        C.Evidence("x", "t", 1.0, 3, "seeds", 0.1, 0.1, verdict="holds")


# -- best-rank claims ----------------------------------------------------------------------------
def test_best_rank_evidence():
    rng = np.random.default_rng(0)
    algs = ["ctrl", "a", "b", "c"]
    few = pd.DataFrame(rng.normal(size=(4, 3)), index=algs)
    ev, nem = C.best_rank_evidence(few, "ctrl")
    assert ev.verdict == "undecided" and "cannot tell the treatments apart" in ev.reason
    assert nem.empty  # no post-hoc test after a Friedman test that does not reject
    base = rng.normal(size=12)
    clear = pd.DataFrame([base + 3, base + 2, base + 1, base], index=algs)
    ev, nem = C.best_rank_evidence(clear, "ctrl")
    assert ev.verdict == "undecided"  # first, but Nemenyi does not separate it from "a"
    assert len(nem) == 3
    # Always first, the others shuffled behind it: separated from every one of them.
    best = pd.DataFrame(rng.normal(size=(6, 12)), index=[*algs, "d", "e"])
    best.loc["ctrl"] = 10.0
    ev, nem = C.best_rank_evidence(best, "ctrl")
    assert ev.verdict == "supported" and (nem["p"] <= 0.05).all()
    assert C.best_rank_evidence(best, "ctrl", higher_is_better=False)[0].verdict == "contradicted"
    assert C.best_rank_evidence(clear, "c")[0].verdict == "contradicted"
    with pytest.raises(ValueError, match="not a complete row"):
        C.best_rank_evidence(clear, "zzz")


# -- C1 and the scorecard on a synthetic analytics table ----------------------------------------
def _analytics(slope, seeds=3, clients=2, units=5):
    rng = np.random.default_rng(1)
    rows = []
    for s in range(seeds):
        for c in range(clients):
            for d in range(1, units + 1):
                v = 0.5 + slope * d + rng.normal(0, 0.01)
                rows.append(
                    ("toy", "local", s, c, "first", 0, f"u{d}", d, "cka_dissimilarity", v, NO_OTHER)
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def test_c1_and_scorecard():
    up = C.c1_divergence_grows(_analytics(0.1), profile="toy profile")
    assert up.verdict.verdict == "supported"
    down = C.c1_divergence_grows(_analytics(-0.1))
    assert down.verdict.verdict == "contradicted"
    card = C.scorecard([up, down])
    assert list(card["verdict"]) == ["supported", "contradicted"]
    assert card["chapter"].iloc[0] == "{doc}`02_layerwise_divergence`"
    assert card["profile"].iloc[0] == "toy profile"
    assert "| claim |" in C.markdown_table(card)
    with pytest.raises(ValueError, match="stages present"):
        C.unit_profiles(_analytics(0.1), ["cka_dissimilarity"], "local", "final")


def test_every_badge_names_its_strength_none_too():
    """Chapter 06's C4 badge read "undecided" alone where every other card, and chapter 05's
    table, give a strength: "undecided · none"."""
    from dataclasses import replace

    up = C.c1_divergence_grows(_analytics(0.1))
    none = replace(up, id="C4", verdict=C.Verdict("undecided", "none", "2 undecided of 2 parts"))
    html = C.scorecard_html(C.scorecard([up, none]))
    assert f"{up.verdict.verdict} · {up.verdict.strength}</span>" in html
    assert "undecided · none</span>" in html


def test_datasets_keep_the_chapters_order_not_the_alphabets():
    named = [_analytics(0.1).assign(dataset=name) for name in ("heart", "digits", "fmnist")]
    analytics = pd.concat(named, ignore_index=True)
    profiles = C.unit_profiles(analytics, ["cka_dissimilarity"], "local", "first")
    assert list(pd.unique(profiles["dataset"])) == ["heart", "digits", "fmnist"]
    assert profiles.groupby("dataset", sort=False)["depth"].apply(list).map(len).eq(15).all()
    per_seed, evidence = C.depth_trend_tests(analytics, "cka_dissimilarity")
    assert [e.part for e in evidence] == ["heart", "digits", "fmnist"]


# -- timings -------------------------------------------------------------------------------------
def test_timed_warms_up_and_repeats():
    from playerfl_core.measure import layer_studies as S

    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1

    def b():
        calls["b"] += 1

    times = S.timed([a, b], repeats=7, warmup=3)
    assert times.shape == (7, 2) and (times >= 0).all()
    assert calls == {"a": 10, "b": 10}
    with pytest.raises(ValueError, match="repeats must be ≥ 5"):
        S.timed([a], repeats=1)


def test_metric_cost_reports_medians_and_spread():
    import torch

    from playerfl_core.fl.models import MLP
    from playerfl_core.measure import layer_studies as S

    torch.manual_seed(0)
    model = MLP(num_classes=5, input_shape=(10,))
    x, y = torch.randn(32, 10), torch.randint(0, 5, (32,))
    cost = S.metric_cost(model, x, y, n_probes=2, repeats=5, warmup=1)
    assert cost["repeats"] == 5
    for key in ("sensitivity", "hessian_trace", "ratio"):
        med = cost[key if key == "ratio" else f"{key}_s"]
        assert cost[f"{key}_q1"] <= cost[f"{key}_q3"]
        if key != "ratio":
            assert cost[f"{key}_q1"] <= med <= cost[f"{key}_q3"]
    assert cost["ratio"] == pytest.approx(cost["hessian_trace_s"] / cost["sensitivity_s"])


# -- C3-C5 on a synthetic results table ---------------------------------------------------------
def _results(
    effect,
    seeds=8,
    datasets=("d1", "d2", "d3"),
    algs=("playerfl", "playerfl_random", "local", "fedavg", "x", "y"),
):
    """One-round runs, 3 clients; ``playerfl`` scores ``effect`` above every other algorithm."""
    from playerfl_core.stats.results import COLUMNS as RESULT_COLUMNS

    rng = np.random.default_rng(5)
    rows = []
    for ds in datasets:
        for seed in range(seeds):
            base = rng.uniform(0.4, 0.6, 3)
            for a in algs:
                lift = effect if a == "playerfl" else rng.normal(0, 0.005)
                for c in range(3):
                    f1 = float(base[c] + lift + rng.normal(0, 0.002))
                    rows.append((ds, a, 0.01, seed, c, 0, "train", "n_samples", 10, 10))
                    rows.append((ds, a, 0.01, seed, c, 0, "val", "loss", 0.1, 5))
                    for metric in ("macro_f1", "accuracy", "loss"):
                        rows.append((ds, a, 0.01, seed, c, 0, "test", metric, f1, 5))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def test_c3_c5_from_results_table():
    better = _results(0.05)
    c5 = C.c5_beats_random(better)
    assert c5.verdict.verdict == "supported" and c5.parts["n"].iloc[0] == 24
    assert C.c3_best_rank(better).verdict.verdict == "supported"
    worse = _results(-0.05)
    assert C.c5_beats_random(worse).verdict.verdict == "contradicted"
    assert C.c3_best_rank(worse).verdict.verdict == "contradicted"
    two_seeds = _results(0.05, seeds=1, datasets=("d1", "d2"))
    c5_small = C.c5_beats_random(two_seeds)
    assert c5_small.verdict.verdict == "undecided" and "not run" in c5_small.parts["reason"].iloc[0]
    c4 = C.c4_fairness_and_ipr(better)
    assert list(c4.parts["part"]) == ["fairness", "IPR"]
    assert c4.verdict.verdict in C.VERDICTS
    with pytest.raises(ValueError, match="C5 needs runs of"):
        C.c5_beats_random(better[better["algorithm"] != "playerfl_random"])


def test_c3_rank_table_shows_the_verdicts_ranks_best_first_with_nemenyi_p():
    from playerfl_core.book.reports.comparison import c3_block_table

    better = _results(0.05)
    ranks = C.c3_rank_table(better)
    assert ranks.attrs["blocks"] == 24 and len(ranks) == 6
    assert ranks["mean_rank"].is_monotonic_increasing
    assert ranks["algorithm"].iloc[0] == "playerfl" and ranks["mean_rank"].iloc[0] == 1.0
    assert ranks["nemenyi_p"].isna().tolist() == [True, False, False, False, False, False]
    assert (ranks["nemenyi_p"].dropna() <= C.ALPHA).all()  # supported: ahead of every other
    shown = c3_block_table(better)
    assert list(shown.columns) == [
        "mean rank over 24 (dataset, seed) runs",
        "Nemenyi p against PLayer-FL",
    ]
    assert shown.index[0] == "PLayer-FL" and shown.iloc[0, 1] == "–"
    # no Friedman rejection: no Nemenyi p anywhere, as the verdict runs none
    flat = _results(0.0, seeds=2)
    assert "cannot tell" in C.c3_best_rank(flat).parts["reason"].iloc[0]
    assert C.c3_rank_table(flat)["nemenyi_p"].isna().all()


# -- the split study's verdicts: per-seed Wilcoxon tests, Holm over the family ------------------
def test_tolerance_evidence_decides_from_the_seeds_not_from_an_interval():
    """Ten seeds all below δ: within; all above: beyond; five seeds can never decide (2/2⁵ >
    0.05), however clear they look; strength follows the adjusted p."""
    below = [0.0] * 10
    ev = C.decide_family([C.tolerance_evidence(below, 0.02, "a")])[0]
    assert (ev.verdict, ev.strength) == ("supported", "strong")  # p = 2/1024
    above = [0.1 + 0.01 * i for i in range(10)]
    assert C.decide_family([C.tolerance_evidence(above, 0.02)])[0].verdict == "contradicted"
    five = C.decide_family([C.tolerance_evidence([0.0] * 5, 0.02)])[0]
    assert five.verdict == "undecided" and "not run" in five.reason
    mixed = [0.0, 0.05] * 5
    assert C.decide_family([C.tolerance_evidence(mixed, 0.02)])[0].verdict == "undecided"
    six = C.decide_family([C.tolerance_evidence([0.0] * 6, 0.02)])[0]
    assert (six.verdict, six.strength) == ("supported", "moderate")  # p = 2/64 > α/5
    with pytest.raises(ValueError, match="tolerance"):
        C.tolerance_evidence(below, 0)


def test_holm_over_the_family_can_undo_a_lone_decision():
    six = C.tolerance_evidence([0.0] * 6, 0.02, "six")  # p = 0.031 alone
    others = [C.tolerance_evidence([0.0, 0.04] * 5, 0.02, f"o{i}") for i in range(3)]
    alone = C.decide_family([six])[0]
    together = C.decide_family([six, *others])[0]
    assert alone.verdict == "supported" and together.verdict == "undecided"
    assert together.p_adjusted > alone.p_adjusted


def test_split_verdicts_on_per_seed_values():
    regrets = pd.DataFrame({"dataset": ["a"] * 10 + ["b"] * 10, "regret": [0.0] * 10 + [0.1] * 10})
    c5 = pd.DataFrame(
        {"dataset": ["a"] * 20, "other": ["random (expected)"] * 10 + ["random (drawn)"] * 10,
         "diff": [0.05 + 0.001 * i for i in range(10)] + [-0.05] * 5 + [0.05] * 5})  # fmt: skip
    het = pd.DataFrame(
        {"dataset": ["h1"] * 10 + ["h2"] * 5, "family": ["label skew"] * 10 + ["mixed"] * 5,
         "regret": [0.0] * 10 + [0.3] * 5})  # fmt: skip
    out = C.split_verdicts(regrets, c5, het, tolerance=0.02)
    got = out.set_index(["claim", "dataset", "family"])["verdict"].to_dict()
    assert got == {
        ("oracle", "a", "sweep"): "supported", ("oracle", "b", "sweep"): "contradicted",
        ("C5", "a", "vs random (expected)"): "supported",
        ("C5", "a", "vs random (drawn)"): "undecided",
        ("oracle", "h1", "label skew"): "supported", ("oracle", "h2", "mixed"): "undecided",
    }  # fmt: skip
    assert out["p_holm"].dropna().ge(out["p"].dropna()).all()
    text = C.split_verdict_lines(out, label=str.upper)
    assert "- **R1**, \"the rule's split is as good" in text and "  - A: **supported**" in text
    assert "  - A, vs random (drawn): **undecided**" in text
    assert text.count("the rule's split is as good") == 1  # the claim once, not per part
    assert not re.search(r"-\d", text) and "(−0.030 to 0.030)" in text  # minus signs, and "to"
    assert "(0.053–0.056)" in text  # a dash between two positive bounds
    het_line = "the 2 heterogeneity federations: within δ on 1, beyond δ on 0, undecided on 1 (5–10"
    assert het_line in text
    with pytest.raises(ValueError, match="tolerance"):
        C.split_verdicts(regrets, c5, het, tolerance=0)


def test_a_rescored_federations_verdict_line_names_its_test_sets():
    """Chapter 04's verdict bullet gave Fashion-MNIST's regret on 2,000 test images per client
    without saying so, beside the sweep's other value of the same regret on the same page."""
    regrets = pd.DataFrame(
        {"dataset": ["a"] * 6 + ["b"] * 6, "regret": [0.0] * 12,
         "rescored": [True] * 6 + [True] * 3 + [False] * 3})  # fmt: skip
    c5 = pd.DataFrame({"dataset": ["a"] * 6, "other": ["random (drawn)"] * 6, "diff": [0.05] * 6})
    out = C.split_verdicts(regrets, c5, tolerance=0.02).set_index(["claim", "dataset"])
    assert out.loc[("oracle", "a"), "rescored"] and not out.loc[("oracle", "b"), "rescored"]
    lines = C.split_verdict_lines(out.reset_index(), large_test="2,000 test images").splitlines()
    a, b = (next(x for x in lines if x.startswith(f"  - {d}:")) for d in "ab")
    assert "(0.000–0.000) on 2,000 test images; Holm" in a, a
    assert "2,000" not in b, b  # half its seeds on the book's sets: not named as rescored
    assert "2,000" not in C.split_verdict_lines(out.reset_index())
    # C5 has one part here: no Holm over "its 1 part"; R1's two federations are adjusted
    assert lines[-2].endswith('", its one part, so no adjustment is needed:'), lines
    assert lines[0].endswith('", Holm over its 2 federations:'), lines[0]


def test_tolerance_curve_moves_from_beyond_to_within_as_delta_grows():
    regrets = pd.DataFrame({"dataset": ["a"] * 10, "regret": [0.03 + 0.001 * i for i in range(10)]})
    curve = C.tolerance_curve(regrets, [0.01, 0.035, 0.1]).set_index("tolerance")["verdict"]
    assert curve.to_dict() == {0.01: "beyond δ", 0.035: "undecided", 0.1: "within δ"}


# -- the book's own claims: M1, R1, R2, and C5 joined by the sweep ---------------------------------
def test_r1_is_universal_over_federations():
    within = pd.DataFrame({"dataset": ["a"] * 10, "regret": [0.0] * 10})
    beyond = pd.DataFrame({"dataset": ["b"] * 10, "regret": [0.2 + 0.01 * i for i in range(10)]})
    assert C.r1_rule_finds_oracle(within).verdict.verdict == "supported"
    both = C.r1_rule_finds_oracle(pd.concat([within, beyond]))
    assert both.verdict.verdict == "contradicted" and list(both.parts["part"]) == ["a", "b"]
    assert both.chapter == "04_does_the_rule_pick_the_right_split"


def test_m1_reads_the_rank_correlation_of_sensitivity_with_the_measured_cost():
    rows = []
    for ds, sign in (("up", 1), ("down", -1)):
        for s in range(6):
            for u in range(5):
                rows.append((ds, s, f"u{u}", sign * (u + 0.1 * s), u))
    profiles = pd.DataFrame(rows, columns=["dataset", "seed", "unit", "sensitivity", "actual"])
    assert C.m1_sensitivity_ranks_cost(profiles, ["up"]).verdict.verdict == "supported"
    assert C.m1_sensitivity_ranks_cost(profiles, ["down"]).verdict.verdict == "contradicted"
    assert C.m1_sensitivity_ranks_cost(profiles, ["up", "down"]).verdict.verdict == "contradicted"


def test_c5_joins_the_same_learning_rate_comparison_as_parts_of_one_family():
    better = _results(0.05)
    sweep = pd.DataFrame(
        {"dataset": ["d"] * 20, "other": ["random (drawn)"] * 10 + ["random (expected)"] * 10,
         "diff": [-0.05 - 0.001 * i for i in range(20)]})  # fmt: skip
    alone = C.c5_beats_random(better)
    joined = C.c5_beats_random(better, sweep_c5=sweep)
    assert alone.verdict.verdict == "supported"
    assert joined.verdict.verdict == "contradicted"  # the sweep's parts say the opposite
    assert len(joined.parts) == 3 and joined.parts["p_holm"].notna().all()


def test_r2_needs_one_first_epoch_rule_within_delta_on_every_kind():
    from playerfl_core.study import preregistration as P

    def rows(entry, verdicts):
        return [(entry, k, 0.0, 10, 0.01, 0.01, v, "strong") for k, v in verdicts]

    kinds = ["k1", "k2"]
    cols = ["entry", "kind", "mean", "n", "p", "p_holm", "verdict", "strength"]
    probe = rows("validation probe (2 rounds)", [(k, P.WITHIN) for k in kinds])
    good = rows("update disagreement (tuned τ)", [(k, P.WITHIN) for k in kinds])
    bad = rows("paper (t = 1)", [("k1", P.WITHIN), ("k2", P.BEYOND)])
    open_ = rows("averaging cost (tuned τ)", [("k1", P.WITHIN), ("k2", "undecided")])
    assert P.claim(pd.DataFrame(good + bad, columns=cols)).verdict.verdict == "supported"
    assert P.claim(pd.DataFrame(bad + probe, columns=cols)).verdict.verdict == "contradicted"
    assert P.claim(pd.DataFrame(bad + open_, columns=cols)).verdict.verdict == "undecided"


def test_wilcoxon_with_ties_is_the_exact_sign_flip_null():
    """Tied |d| (regrets are often exactly equal): the p-value equals the brute-force sign-flip
    enumeration of the midrank statistic, and needs no sampling for any n."""
    import itertools

    from scipy import stats

    from playerfl_core.stats.exact_tests import wilcoxon_exact

    rng = np.random.default_rng(0)
    for _ in range(60):
        d = rng.integers(-3, 4, size=int(rng.integers(3, 10))).astype(float)
        d = d[d != 0]
        if not len(d):
            continue
        r = stats.rankdata(np.abs(d))
        observed = r[d > 0].sum()
        sums = np.array([r[list(s)].sum() for s in itertools.product([False, True], repeat=len(d))])
        brute = min(
            1.0, 2 * min((sums >= observed - 1e-9).mean(), (sums <= observed + 1e-9).mean())
        )
        assert wilcoxon_exact(d) == pytest.approx(brute, abs=1e-12)
    assert wilcoxon_exact(np.full(40, 0.02)) == pytest.approx(2 / 2**40)
