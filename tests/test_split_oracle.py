"""The split sweep: prefix federation, oracle by validation, regret, C5 without the confound."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from torch import nn

from playerfl_core import make_config
from playerfl_core.fl.algorithms import get_algorithm, is_algorithm
from playerfl_core.fl.algorithms.playerfl_random import random_split
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.sensitivity import average_sensitivities, choose_split, server_split
from playerfl_core.stats.results import COLUMNS, SERVER
from playerfl_core.study import split_oracle as O

ROUNDS = 3


def _config(seed=0, **kw):
    return make_config("heart", "quick", seed=seed, rounds=ROUNDS, device="cpu", progress=False,
                       **kw)  # fmt: skip


def _core(table: pd.DataFrame) -> pd.DataFrame:
    """Everything but the algorithm's name and the facts only a split rule records."""
    keep = ~table["metric"].str.startswith("sensitivity/") & (table["client"] != SERVER)
    return table[keep].drop(columns="algorithm").reset_index(drop=True)


@pytest.fixture(scope="module")
def heart_runs(heart):
    """Local, FedAvg, PLayer-FL and the prefix runs at p = 0, L and PLayer-FL's p, seed 0."""
    cfg = _config()
    runs = {
        name: run_federated(heart, get_algorithm(name), cfg)
        for name in ("local", "fedavg", "playerfl")
    }
    p_star = runs["playerfl"].info["split_p"]
    for p in sorted({0, 4, p_star}):
        runs[f"prefix_p{p}"] = run_federated(heart, get_algorithm(f"prefix_p{p}"), cfg)
    return runs


# -- the prefix algorithm ------------------------------------------------------------------
def test_prefix_p0_is_local_and_pL_is_fedavg(heart_runs):
    assert _core(heart_runs["prefix_p0"].table()).equals(_core(heart_runs["local"].table()))
    assert _core(heart_runs["prefix_p4"].table()).equals(_core(heart_runs["fedavg"].table()))
    assert not _core(heart_runs["prefix_p0"].table()).equals(_core(heart_runs["fedavg"].table()))
    assert set(heart_runs["prefix_p4"].table()["algorithm"]) == {"prefix_p4"}


def test_prefix_at_the_rules_split_is_playerfl(heart_runs):
    pl = heart_runs["playerfl"]
    p_star = pl.info["split_p"]
    pr = heart_runs[f"prefix_p{p_star}"]
    assert pr.info["federated_units"] == pl.info["federated_units"]
    # Identical tables, row for row, but for the algorithm name and the rule's own record.
    a = pl.table().drop(columns="algorithm")
    b = pr.table()
    b = b[b["metric"] != "rule_split_p"].drop(columns="algorithm").reset_index(drop=True)
    assert a.equals(b)
    # Every prefix run records the rule's split of its seed, whatever its own p.
    for p in (0, 4):
        rows = heart_runs[f"prefix_p{p}"].table()
        assert rows.loc[rows["metric"] == "rule_split_p", "value"].tolist() == [p_star]


def test_rule_recomputed_from_a_sweep_table_is_playerfls(heart_runs):
    table = pd.concat([heart_runs[k].table() for k in heart_runs if k.startswith("prefix")])
    rules = O.rule_splits(O.table_sensitivities(table))
    paper = rules[rules["variant"] == "paper"]
    assert paper["p_rule"].tolist() == [heart_runs["playerfl"].info["split_p"]]


def test_a_table_whose_rows_were_resorted_is_refused_not_misread(heart_runs):
    """Depth comes from the order a run logged its units in: rows sorted by metric name (fc1,
    fc2, … before layer1) would give every rule the wrong units, so the recorded split guards."""
    table = pd.concat([heart_runs[k].table() for k in heart_runs if k.startswith("prefix")])
    sens = table["metric"].str.startswith("sensitivity/")
    reversed_units = pd.concat([table[~sens], table[sens].iloc[::-1]], ignore_index=True)
    with pytest.raises(ValueError, match="not in the model's unit order .* recorded p = "):
        O.table_sensitivities(reversed_units)
    O.table_sensitivities(table.sort_values(["seed", "algorithm"], kind="stable"))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: get_algorithm("prefix"), "needs the split p"),
        (lambda: get_algorithm("prefix", p=-1), "integer in 0..L"),
        (lambda: get_algorithm("prefix", p=1.5), "integer in 0..L"),
    ],
)
def test_bad_p_is_explained(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_p_beyond_the_model_names_the_valid_range(heart):
    with pytest.raises(ValueError, match=r"p = 5 is outside the valid range 0\.\.4"):
        run_federated(heart, get_algorithm("prefix_p5"), _config())
    assert is_algorithm("prefix_p3") and not is_algorithm("prefix_px")


def test_sweep_over_a_one_unit_model_is_explained(heart, monkeypatch):
    from playerfl_core.fl import models

    class OneUnit(models.UnitModel):
        units = ("fc",)

        def __init__(self, num_classes, input_shape, width=1.0):
            super().__init__()
            self.fc = nn.Linear(input_shape[0], num_classes)

    monkeypatch.setitem(models.MODELS, "one_unit", OneUnit)
    one = type(heart)(**{**heart.__dict__, "model": "one_unit"})
    with pytest.raises(ValueError, match="at least 2 layer units.*has 1"):
        O.run_sweep("heart", [0], data_loader=lambda s: one, progress=False)
    with pytest.raises(ValueError, match=r"outside the valid range 0\.\.4"):
        O.run_sweep("heart", [0], splits=[0, 7], data_loader=lambda s: heart, progress=False)


def test_a_grid_spec_can_name_a_sweep_run(tmp_path, heart_runs):
    from playerfl_core.study.experiments import RunSpec, Store, execute

    spec = RunSpec("heart", "prefix_p4", 0.01, 0, "quick", rounds=ROUNDS)
    assert execute(spec, str(tmp_path), device="cpu", threads=None)["status"] == "ok"
    stored = Store(tmp_path).table(spec)
    mine = heart_runs["prefix_p4"].table()
    assert np.allclose(stored["value"], mine["value"], rtol=0, atol=1e-12)
    assert (stored["metric"] == mine["metric"]).all()


def test_a_sweep_does_not_depend_on_the_number_of_workers():
    one = O.run_sweep("heart", [1], rounds=2, splits=[0, 4], device="cpu", progress=False)
    two = O.run_sweep(
        "heart", [1], rounds=2, splits=[0, 4], device="cpu", progress=False, workers=2
    )
    assert one.equals(two)
    assert list(one["algorithm"].unique()) == ["prefix_p0", "prefix_p4"]


# -- the random split (C5) -----------------------------------------------------------------
def test_random_split_never_draws_the_rules_split():
    for seed, n_units in itertools.product(range(40), (3, 4, 5)):
        for p_star in range(1, n_units):
            q = random_split(seed, n_units, p_star)
            assert q != p_star and 1 <= q <= n_units - 1
    draws = {random_split(s, 5, 2) for s in range(40)}
    assert draws == {1, 3, 4}  # every other interior split occurs


def test_playerfl_random_is_the_prefix_run_at_its_drawn_split(heart, heart_runs):
    rnd = run_federated(heart, get_algorithm("playerfl_random"), _config())
    p_star = heart_runs["playerfl"].info["split_p"]
    q = random_split(0, 4, p_star)
    assert rnd.info["split_p"] == q and rnd.info["playerfl_split_p"] == p_star
    pr = run_federated(heart, get_algorithm(f"prefix_p{q}"), _config())
    assert _core(rnd.table()).equals(_core(pr.table()))


# -- hand-built sweep tables ---------------------------------------------------------------
def _hand_table(val: dict, test: dict, sens: dict, n_units=3, clients=(0, 1)) -> pd.DataFrame:
    """A sweep table: ``val[seed][p]`` / ``test[seed][p]`` are every client's macro-F1 (one
    round, so the best-validation round is round 0); ``sens[seed]`` every client's s_k."""
    rows = []
    for seed in val:
        for p in range(n_units + 1):
            alg = f"prefix_p{p}"
            for c in clients:
                rows.append(("fake", alg, 0.1, seed, c, 0, "train", "n_samples", 10.0, 10))
                for split, score in (("val", val), ("test", test)):
                    rows.append(("fake", alg, 0.1, seed, c, 0, split, "loss", 1.0, 5))
                    rows.append(("fake", alg, 0.1, seed, c, 0, split, "macro_f1",
                                 score[seed][p], 5))  # fmt: skip
                for u, s in enumerate(sens[seed]):
                    rows.append(("fake", alg, 0.1, seed, c, 0, "train", f"sensitivity/u{u}", s, 10))
    return pd.DataFrame(rows, columns=COLUMNS)


RULE_P1 = [1.0, 5.0, 1.0]  # rise 5 > t at l = 1: p = 1
RULE_P2 = [1.0, 0.5, 9.0]  # rises 0.5, 6: p = 2


def test_oracle_is_chosen_on_validation_only():
    val = {0: [0.1, 0.5, 0.3, 0.2], 1: [0.4, 0.1, 0.2, 0.3]}
    test = {0: [0.1, 0.2, 0.3, 0.4], 1: [0.1, 0.2, 0.3, 0.4]}
    table = _hand_table(val, test, {0: RULE_P1, 1: RULE_P1})
    oracle = O.oracle_splits(O.sweep_scores(table))
    assert oracle["p_oracle"].tolist() == [1, 0]
    # Test scores (and labels) changed at will: the oracle does not move.
    shuffled = table.copy()
    is_test = shuffled["split"] == "test"
    shuffled.loc[is_test, "value"] = np.random.default_rng(0).random(is_test.sum())
    assert O.oracle_splits(O.sweep_scores(shuffled))["p_oracle"].tolist() == [1, 0]
    # ... but the test oracle does, and a change of validation scores moves the oracle.
    assert O.oracle_splits(O.sweep_scores(table), on="test")["p_oracle"].tolist() == [3, 3]
    val2 = {0: [0.1, 0.5, 0.9, 0.2], 1: [0.4, 0.1, 0.2, 0.3]}
    moved = O.oracle_splits(O.sweep_scores(_hand_table(val2, test, {0: RULE_P1, 1: RULE_P1})))
    assert moved["p_oracle"].tolist() == [2, 0]


def test_regret_is_zero_when_the_rule_finds_the_oracle_and_positive_otherwise():
    val = {0: [0.1, 0.5, 0.3, 0.2], 1: [0.1, 0.5, 0.3, 0.2]}
    test = {0: [0.2, 0.6, 0.45, 0.3], 1: [0.2, 0.6, 0.45, 0.3]}
    table = _hand_table(val, test, {0: RULE_P1, 1: RULE_P2})
    scores = O.sweep_scores(table)
    reg = O.regrets(scores, O.rule_splits(O.table_sensitivities(table))).set_index("seed")
    assert reg.loc[0, "p_rule"] == reg.loc[0, "p_oracle"] == 1
    assert reg.loc[0, "regret"] == 0
    assert reg.loc[1, "p_rule"] == 2 and reg.loc[1, "p_oracle"] == 1
    assert reg.loc[1, "regret"] == pytest.approx(0.6 - 0.45)
    summary = O.regret_summary(reg.reset_index()).iloc[0]
    assert summary["same"] == 0.5 and summary["within_one"] == 1.0
    assert summary["mean"] == pytest.approx(0.075)


def test_c5_compares_the_rule_with_every_other_split_and_the_random_one():
    test = {s: [0.2, 0.6, 0.45, 0.3] for s in range(3)}
    table = _hand_table(test, test, {s: RULE_P1 for s in range(3)})
    scores = O.sweep_scores(table)
    c5 = O.c5_table(scores, O.rule_splits(O.table_sensitivities(table)))
    one = c5[c5["seed"] == 0].set_index("other")["diff"]
    assert set(one.index) == {"p=0", "p=2", "p=3", "random (drawn)", "random (expected)"}
    assert one["p=0"] == pytest.approx(0.4) and one["p=3"] == pytest.approx(0.3)
    assert one["random (expected)"] == pytest.approx(0.6 - 0.45)  # only p = 2 is drawable
    assert (c5.loc[c5["other"] == "random (drawn)", "p_other"] != 1).all()
    refs = O.reference_table(scores, O.rule_splits(O.table_sensitivities(table)))
    assert refs[["playerfl", "local", "fedavg"]].iloc[0].tolist() == pytest.approx([0.6, 0.2, 0.3])


def test_client_curves_measure_gain_over_local():
    val = {0: [0.1, 0.5, 0.3, 0.2]}
    test = {0: [0.2, 0.6, 0.45, 0.3]}
    curves = O.client_curves(_hand_table(val, test, {0: RULE_P1}))
    assert curves.loc[curves["p"] == 0, "gain"].eq(0).all()
    assert curves.loc[curves["p"] == 1, "gain"].tolist() == pytest.approx([0.4, 0.4])


# -- the rule's variants -------------------------------------------------------------------
def test_server_split_default_is_the_papers_rule_and_variants_differ_where_they_should():
    # One heavy client with a sharp rise at unit 2; two light clients without one.
    per_client = {0: {"a": 1.0, "b": 50.0, "c": 1.0}, 1: {"a": 1.0, "b": 0.5, "c": 9.0},
                  2: {"a": 1.0, "b": 0.5, "c": 9.0}}  # fmt: skip
    weights = {0: 0.6, 1: 0.2, 2: 0.2}
    avg = average_sensitivities(per_client, weights)
    assert server_split(per_client, weights) == choose_split(list(avg.values())) == 1
    assert server_split(per_client, weights, aggregate="median") == 2
    with pytest.raises(ValueError, match="aggregate must be one of"):
        server_split(per_client, weights, aggregate="max")


def test_first_epoch_sensitivities_give_playerfls_split(heart, heart_runs):
    sens = O.first_epoch_sensitivities("heart", [0], data_loader=lambda s: heart, device="cpu",
                                       progress=False)  # fmt: skip
    rules = O.rule_splits(sens)
    assert rules.loc[rules["variant"] == "paper", "p_rule"].tolist() == [
        heart_runs["playerfl"].info["split_p"]
    ]
    recorded = heart_runs["playerfl"].info["sensitivity"]
    pooled = average_sensitivities(
        {c: dict(zip(g["unit"], g["sensitivity"], strict=True)) for c, g in sens.groupby("client")},
        sens.groupby("client")["weight"].first().to_dict(),
    )
    assert pooled == pytest.approx(recorded, rel=1e-12)


def test_a_diverged_split_run_stops_the_sweep_with_a_clear_message(heart):
    from playerfl_core.fl.engine import DivergenceError

    with pytest.raises(DivergenceError, match=r"heart seed 0, split p = 0: .*divergence bound"):
        O.run_sweeps(["heart"], [0], lr=10.0, rounds=1, splits=[0], data_loader=lambda s: heart,
                     device="cpu", progress=False)  # fmt: skip


# -- the command line ----------------------------------------------------------------------
def test_cli_sweep_writes_one_algorithm_per_split_at_one_lr(tmp_path, capsys):
    from playerfl_core.cli import main
    from playerfl_core.stats.results import load_table

    out = tmp_path / "sweep.csv"
    args = ["sweep", "--dataset", "heart", "--seeds", "0", "--rounds", "2", "--out", str(out)]
    assert main([*args, "--lr", "0.02"]) == 0
    table = load_table(out)
    assert sorted(table["algorithm"].unique()) == [f"prefix_p{p}" for p in range(5)]
    assert set(table["lr"]) == {0.02}
    assert main(["sweep", "--dataset", "heart", "--splits", "9", "--out", str(out)]) == 2
    assert "valid range 0..4" in capsys.readouterr().err


def test_stability_counts_splits_within_one_unit_of_the_oracle():
    splits = pd.DataFrame(
        {"dataset": "d", "variant": "paper", "seed": range(5), "p_rule": [1, 1, 2, 3, 1]}
    )
    row = O.stability_summary(splits, {"d": 2}).iloc[0]
    assert (row["modal_p"], row["modal_share"], row["distinct"]) == (1, 0.6, 3)
    assert (row["same"], row["within_one"]) == (0.2, 1.0)
    row = O.stability_summary(splits, {"d": 3}).iloc[0]
    assert (row["same"], row["within_one"]) == (0.2, 0.4)
    scores = pd.DataFrame(
        {"dataset": "d", "lr": 0.1, "seed": [0, 0, 1, 1], "p": [0, 1, 0, 1],
         "val": [0.5, 0.4, 0.1, 0.3], "test": [1.0, 0.0, 1.0, 0.0]}
    )  # fmt: skip
    assert O.dataset_oracle(scores) == {"d": 1}  # mean validation 0.35 against 0.3


def test_the_c5_summary_lists_splits_in_order_then_the_random_comparisons():
    """Heart's p=2 came after the random rows when its first seed's rule picked p = 2."""
    c5 = pd.DataFrame(
        {"dataset": ["h"] * 4 + ["d"] * 2,
         "other": ["p=3", "random (drawn)", "random (expected)", "p=2", "p=1", "random (drawn)"],
         "diff": [0.1, 0.2, 0.3, 0.4, 0.1, 0.2]}
    )  # fmt: skip
    shown = O.c5_summary(c5)
    assert shown["dataset"].tolist() == ["h"] * 4 + ["d"] * 2
    assert shown["other"].tolist()[:4] == ["p=2", "p=3", "random (drawn)", "random (expected)"]
