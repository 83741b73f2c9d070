"""Metrics against hand-computed small examples (ties included)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from playerfl_core.stats import metrics as M
from playerfl_core.stats.published import TABLES, published, published_wide
from playerfl_core.stats.results import COLUMNS


def _run(ds, alg, seed, clients, lr=0.01):
    """Rows of one fake run. ``clients``: {cid: (n_train, [(val_loss, f1, acc, loss), ...])}."""
    rows = []
    for cid, (n_train, rounds) in clients.items():
        rows.append((ds, alg, lr, seed, cid, 0, "train", "n_samples", n_train, n_train))
        for r, (vl, f1, acc, loss) in enumerate(rounds):
            rows.append((ds, alg, lr, seed, cid, r, "val", "loss", vl, 10))
            for metric, v in (("macro_f1", f1), ("accuracy", acc), ("loss", loss)):
                rows.append((ds, alg, lr, seed, cid, r, "test", metric, v, 5 * (cid + 1)))
    return rows


def _table(*runs):
    return pd.DataFrame([r for run in runs for r in run], columns=COLUMNS)


def _final(ds, alg, seed, scores, n_train=None):
    """A one-round run whose clients' test score in every metric is ``scores[c]``."""
    n_train = n_train or [10] * len(scores)
    return _run(ds, alg, seed, {c: (n_train[c], [(0.1, s, s, s)]) for c, s in enumerate(scores)})


def test_weights_and_headline_use_best_validation_round():
    t = _table(
        _run(
            "d",
            "a",
            0,
            {
                0: (30, [(0.5, 0.1, 0.0, 0.0), (0.3, 0.8, 0.0, 0.0), (0.4, 0.9, 0.0, 0.0)]),
                1: (10, [(0.2, 0.6, 0.0, 0.0), (0.2, 0.7, 0.0, 0.0)]),  # tie: first round wins
            },
        )
    )
    w = M.client_weights(t).set_index("client")["weight"]
    assert w.tolist() == pytest.approx([0.75, 0.25])
    best = M.run_scores(t, "macro_f1", "best_val")["value"].item()
    assert best == pytest.approx(0.75 * 0.8 + 0.25 * 0.6)
    last = M.run_scores(t, "macro_f1", "last")["value"].item()
    assert last == pytest.approx(0.75 * 0.9 + 0.25 * 0.7)
    test_w = M.run_scores(t, "macro_f1", "best_val", weighting="test")["value"].item()
    assert test_w == pytest.approx((5 * 0.8 + 10 * 0.6) / 15)
    uni = M.run_scores(t, "macro_f1", "best_val", weighting="uniform")["value"].item()
    assert uni == pytest.approx(0.7)


def test_bootstrap_median_ci_is_seeded_and_sane():
    v = [0.1, 0.5, 0.2, 0.9, 0.4, 0.3]
    a, b = M.bootstrap_median_ci(v, seed=3), M.bootstrap_median_ci(v, seed=3)
    assert a == b
    med, lo, hi = a
    assert med == pytest.approx(0.35) and lo <= med <= hi and 0.1 <= lo and hi <= 0.9
    assert M.bootstrap_median_ci([0.7]) == (0.7, 0.7, 0.7)
    assert all(np.isnan(M.bootstrap_median_ci([])))
    # three values: every resample's median is one of them; 2.5 % and 97.5 % hit min and max
    assert M.bootstrap_median_ci([1.0, 2.0, 3.0])[1:] == (1.0, 3.0)


def test_summarize_median_over_seeds_and_one_lr_guard():
    t = _table(*(_final("d", "a", s, [v, v]) for s, v in enumerate([0.2, 0.6, 0.4])))
    s = M.summarize(t, "macro_f1")
    assert s.loc[0, "median"] == pytest.approx(0.4) and s.loc[0, "n_seeds"] == 3
    with pytest.raises(ValueError, match="several learning rates"):
        M.summarize(
            _table(
                _final("d", "a", 0, [0.1]),
                _run("d", "a", 1, {0: (5, [(0.1, 0.2, 0.2, 0.2)])}, lr=0.1),
            )
        )


def test_fairness_is_population_variance_of_client_medians():
    t = _table(
        _final("d", "a", 0, [0.8, 0.5]),
        _final("d", "a", 1, [0.6, 0.5]),
        _final("d", "a", 2, [0.7, 0.2]),
    )
    f = M.fairness(t, "macro_f1")
    # client medians 0.7 and 0.5 → variance (0.1² + 0.1²) / 2
    assert f["variance"].item() == pytest.approx(0.01)


def test_ipr_strict_and_direction_aware():
    t = _table(
        _final("d", "alg", 0, [0.8, 0.5, 0.6]),
        _final("d", "local", 0, [0.7, 0.5, 0.9]),
        _final("d", "fedavg", 0, [0.75, 0.4, 0.5]),
    )
    r = M.ipr(t, "macro_f1").set_index("algorithm")
    # client 0 beats both; client 1 only ties local (not strict); client 2 loses to local
    assert r.loc["alg", "ipr"] == pytest.approx(1 / 3) and r.loc["alg", "n_better"] == 1
    assert np.isnan(r.loc["local", "ipr"]) and np.isnan(r.loc["fedavg", "ipr"])
    # for the loss, lower is better: client 1 (0.5 vs 0.5 tie) no, client 2 0.6 < 0.9 but
    # 0.6 > 0.5 no, client 0 0.8 > 0.7 no → 0
    assert M.ipr(t, "loss").set_index("algorithm").loc["alg", "ipr"] == 0.0
    t2 = _table(
        _final("d", "alg", 0, [0.1, 0.6]),
        _final("d", "local", 0, [0.2, 0.7]),
        _final("d", "fedavg", 0, [0.3, 0.5]),
    )
    assert M.ipr(t2, "loss").set_index("algorithm").loc["alg", "ipr"] == 0.5
    with pytest.raises(ValueError, match="reference algorithm 'fedavg'"):
        M.ipr(_table(_final("d", "alg", 0, [0.1]), _final("d", "local", 0, [0.2])))


def test_rank_table_averages_ties_and_respects_direction():
    wide = pd.DataFrame({"d1": [0.9, 0.9, 0.8], "d2": [0.5, 0.7, 0.7]}, index=["A", "B", "C"])
    r = M.rank_table(wide, higher_is_better=True)
    assert r["d1"].tolist() == [1.5, 1.5, 3.0]
    assert r["d2"].tolist() == [3.0, 1.5, 1.5]
    assert r["mean_rank"].tolist() == [2.25, 1.5, 2.25]
    low = M.rank_table(wide, higher_is_better=False)
    assert low["d1"].tolist() == [2.5, 2.5, 1.0]
    wide.loc["C", "d2"] = np.nan
    assert M.rank_table(wide, True).loc["C", "mean_rank"] == 3.0  # ranked where present


def test_friedman_orientations_match_hand_computation():
    # A > B > C in every dataset; every algorithm increases from d1 to d4
    wide = pd.DataFrame(
        [[4, 5, 6, 7], [3, 4, 5, 6], [2, 3, 4, 5]],
        index=["A", "B", "C"],
        columns=["d1", "d2", "d3", "d4"],
        dtype=float,
    )
    right = M.friedman(wide, higher_is_better=True)
    # k=3 treatments, n=4 blocks, rank sums 4, 8, 12: 12/(4·3·4)·224 − 3·4·4 = 8
    assert right.statistic == pytest.approx(8.0)
    assert right.pvalue == pytest.approx(np.exp(-4.0))
    assert right.mean_ranks.tolist() == [1.0, 2.0, 3.0]
    wrong = M.friedman(wide, orientation="authors")
    # k=4 "treatments" (datasets), n=3 blocks, rank sums 3, 6, 9, 12: 0.2·270 − 45 = 9
    assert wrong.statistic == pytest.approx(9.0) and wrong.n_treatments == 4
    assert wrong.pvalue == pytest.approx(stats.chi2.sf(9.0, 3))


def test_friedman_with_ties_small_inputs_and_missing_cells():
    wide = pd.DataFrame(
        [[1, 2, 1], [1, 1, 2], [0, 0, 0]],
        index=["A", "B", "C"],
        columns=["d1", "d2", "d3"],
        dtype=float,
    )
    res = M.friedman(wide)
    ref = stats.friedmanchisquare([1, 2, 1], [1, 1, 2], [0, 0, 0])
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.mean_ranks.tolist() == pytest.approx([(1.5 + 1 + 2) / 3, (1.5 + 2 + 1) / 3, 3])
    two = M.friedman(wide.iloc[:2])
    assert np.isnan(two.pvalue) and "≥ 3 treatments" in two.message
    one_block = M.friedman(wide[["d1"]])
    assert np.isnan(one_block.pvalue) and "2 blocks" in one_block.message
    ties = M.friedman(pd.DataFrame(np.ones((3, 4))))
    assert ties.pvalue == 1.0
    wide.loc["C", "d1"] = np.nan
    dropped = M.friedman(wide)
    assert dropped.dropped == ["C"] and np.isnan(dropped.pvalue)  # 2 treatments remain


def test_nemenyi_cd_matches_demsar_table():
    # Demšar (2006), Table 5(a): q_0.05 = 2.343 (k=3), 3.164 (k=10)
    assert M.nemenyi_cd(3, 4) == pytest.approx(2.343 * np.sqrt(3 * 4 / 24), abs=1e-3)
    assert M.nemenyi_cd(10, 7) == pytest.approx(3.164 * np.sqrt(10 * 11 / 42), abs=1e-3)
    pairs = M.nemenyi_pairs(pd.Series({"A": 1.0, "B": 2.0, "C": 3.9}), cd=2.0)
    assert pairs["significant"].tolist() == [False, True, False]


def test_holm_and_wilcoxon_against_control():
    assert M.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    wide = pd.DataFrame(
        [
            [0.9, 0.8, 0.7, 0.95, 0.85, 0.75],
            [0.8, 0.7, 0.6, 0.85, 0.75, 0.65],
            [0.9, 0.8, 0.7, 0.95, 0.85, 0.75],
        ],
        index=["P", "X", "Y"],
    )
    out = M.wilcoxon_holm(wide, "P").set_index("algorithm")
    assert out.loc["X", "median_diff"] == pytest.approx(0.1)
    assert out.loc["X", "pvalue"] == pytest.approx(2 / 2**6)  # exact: all six positive
    assert out.loc["X", "reject"]
    assert np.isnan(out.loc["Y", "pvalue"]) and not out.loc["Y", "reject"]  # no non-zero pair
    three = M.wilcoxon_holm(wide.iloc[:, :3], "P").set_index("algorithm")
    assert three.loc["X", "min_p"] == 0.25 and np.isnan(three.loc["X", "pvalue"])
    assert not three["reject"].any()


def test_paired_differences_are_direction_aware():
    t = _table(
        _final("d", "p", 0, [0.5]),
        _final("d", "r", 0, [0.4]),
        _final("d", "p", 1, [0.3]),
        _final("d", "r", 1, [0.6]),
    )
    f1 = M.paired_differences(t, "p", "r", "macro_f1")
    assert f1["diff"].tolist() == pytest.approx([0.1, -0.3])
    loss = M.paired_differences(t, "p", "r", "loss")
    assert loss["diff"].tolist() == pytest.approx([-0.1, 0.3])


def test_best_val_loss_and_choose_lr():
    t = _table(
        _run(
            "d",
            "a",
            0,
            {0: (30, [(0.5, 0, 0, 0), (0.3, 0, 0, 0)]), 1: (10, [(0.2, 0, 0, 0), (0.4, 0, 0, 0)])},
        )
    )
    assert M.best_val_loss(t)["value"].item() == pytest.approx(0.75 * 0.3 + 0.25 * 0.2)
    scores = pd.DataFrame(
        {
            "dataset": "d",
            "algorithm": ["a"] * 3 + ["b"] * 2,
            "lr": [0.1, 0.01, 0.001, 0.1, 0.01],
            "score": [0.5, 0.4, 0.4, np.inf, np.nan],
        }
    )
    chosen = M.choose_lr(scores).set_index("algorithm")
    assert chosen.loc["a", "lr"] == 0.001  # tie → the smaller LR
    assert np.isnan(chosen.loc["b", "lr"])  # nothing eligible


def test_best_mean_rank_verdict():
    ranks = pd.DataFrame({"mean_rank": [1.5, 1.5, 3.0, 3.0]}, index=["A", "B", "C", "D"])
    v = M.best_mean_rank(ranks, "A")
    assert v["holds"] and v["position"] == 1 and v["best_other"] == "B"
    assert v["best_others"] == ["B"] and M.best_mean_rank(ranks, "B")["best_others"] == ["A"]
    assert M.best_mean_rank(ranks.drop(["A", "B"]), "C")["best_others"] == ["D"]
    assert M.best_mean_rank(ranks.drop("A"), "B")["best_others"] == ["C", "D"]  # a tie, named
    assert not M.best_mean_rank(ranks, "C")["holds"]


def test_published_tables_parse():
    assert set(TABLES) >= {"accuracy", "loss", "fairness_f1", "ipr_f1"}
    acc = published_wide("accuracy")
    assert acc.shape == (12, 7)
    assert acc.loc["playerfl", "fmnist"] == 89.8 and acc.loc["finetune", "heart"] == 53.8
    ranks = published("accuracy").query("dataset == 'avg_rank'").set_index("algorithm")
    assert ranks.loc["pfedla", "value"] == 11.1
    assert published_wide("ipr_f1").loc["playerfl", "fmnist"] == 100.0
    with pytest.raises(ValueError, match="Unknown published table"):
        published("f1")


def test_a_summary_lists_datasets_in_the_order_the_table_does():
    """Chapter 05's tables showed Digits, Fashion-MNIST, Heart in some tables and the reader's
    order (Fashion-MNIST, Heart, Digits) in others; every table follows the summary's order."""
    runs = [_final(ds, "a", s, [0.5 + s / 10, 0.6]) for ds in ("zeta", "alpha") for s in (0, 1)]
    t = _table(*runs)
    summary = M.summarize(t, n_boot=50)
    assert list(summary["dataset"]) == ["zeta", "alpha"]
    assert list(M.to_wide(summary).columns) == ["zeta", "alpha"]
    reversed_table = t.iloc[::-1]
    assert list(M.summarize(reversed_table, n_boot=50)["dataset"]) == ["alpha", "zeta"]
    pd.testing.assert_frame_equal(  # the order moves rows, never a number
        summary.set_index("dataset").sort_index(),
        M.summarize(reversed_table, n_boot=50).set_index("dataset").sort_index(),
    )
