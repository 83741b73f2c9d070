"""Split rules as a family: each rule's decision on hand-made first epochs, PLayer-FL running any
rule online with the split the sweep's replay gives, the rules table, the probe, the CLI."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from playerfl_core import make_config
from playerfl_core.fl.algorithms import get_algorithm, is_algorithm
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.sensitivity import server_split
from playerfl_core.fl.split_rules import (
    RULES,
    FirstEpoch,
    averaging_costs,
    describe_rules,
    get_rule,
    leading_at_most,
    update_disagreement,
)
from playerfl_core.stats.results import COLUMNS
from playerfl_core.study import split_rules_table as R

UNITS = ("u1", "u2", "u3")


def _state(moves: dict[int, list[float]], grads: dict[int, list[float]] | None = None,
           sens=None, fisher: dict[int, list[float]] | None = None) -> FirstEpoch:  # fmt: skip
    """Three one-parameter units starting at 0; client c ends at ``moves[c]``."""

    def tensors(per_client):
        return {
            c: {f"{u}.w": torch.tensor([v]) for u, v in zip(UNITS, m, strict=True)}
            for c, m in per_client.items()
        }

    params = tensors(moves)
    g = None if grads is None else tensors(grads)
    return FirstEpoch(
        units=UNITS,
        weights={c: 1 / len(moves) for c in moves},
        sensitivities=sens or {c: dict(zip(UNITS, [1.0, 1.5, 9.0], strict=True)) for c in moves},
        init={f"{u}.w": torch.zeros(1) for u in UNITS},
        params=params,
        grads=g,
        fisher=None if fisher is None else tensors(fisher),
    )


# -- each rule on hand-made first epochs ---------------------------------------------------------
def test_disagreement_is_the_client_specific_share_of_each_units_update():
    # u1: both clients move by +1 (agree, D = 0); u2: +1 and −1 (D = 1); u3: 1 and 3 (D = 1/5).
    state = _state({0: [1.0, 1.0, 1.0], 1: [1.0, -1.0, 3.0]})
    d = update_disagreement(state)
    assert d == pytest.approx({"u1": 0.0, "u2": 1.0, "u3": 0.2})
    assert get_rule("disagreement")(state, 0.5).p == 1  # stops at u2, although u3 agrees
    assert get_rule("disagreement")(state, 1.0).p == 3
    same = _state({0: [1.0, 2.0, 3.0], 1: [1.0, 2.0, 3.0]})
    assert get_rule("disagreement")(same, 0.0).p == 3  # identical clients: FedAvg


def test_cost_is_the_first_order_loss_change_of_averaging_as_a_share_of_the_epochs_gain():
    # Mean of u2 is 0; client 0 at +1 with gradient −1 (averaging moves it by −1: cost +1),
    # client 1 at −1 with gradient +1 (cost +1). Gains: g·(θ0 − θ) = 1 per client on u2 and u3.
    state = _state(
        {0: [0.0, 1.0, 1.0], 1: [0.0, -1.0, 1.0]},
        grads={0: [0.0, -1.0, -1.0], 1: [0.0, 1.0, -1.0]},
    )
    costs, gain = averaging_costs(state)
    assert costs == pytest.approx({"u1": 0.0, "u2": 1.0, "u3": 0.0})
    assert gain == pytest.approx(2.0)
    result = get_rule("cost")(state, 0.4)
    assert result.values == pytest.approx({"u1": 0.0, "u2": 0.5, "u3": 0.5})
    assert result.p == 1
    assert get_rule("cost")(state, 0.5).p == 3


def test_cost2_adds_half_the_fisher_weighted_squared_step_of_averaging():
    moves = {0: [0.0, 1.0, 1.0], 1: [0.0, -1.0, 1.0]}
    grads = {0: [0.0, -1.0, -1.0], 1: [0.0, 1.0, -1.0]}
    # Averaging moves each client by 1 on u2: curvature ½·F·1² = 1 per client with F = 2.
    state = _state(moves, grads, fisher={0: [5.0, 2.0, 7.0], 1: [5.0, 2.0, 7.0]})
    costs, gain = averaging_costs(state, second_order=True)
    assert costs == pytest.approx({"u1": 0.0, "u2": 2.0, "u3": 0.0})  # u1, u3 do not move
    result = get_rule("cost2")(state, 0.5)
    assert result.values == pytest.approx({"u1": 0.0, "u2": 1.0, "u3": 1.0})
    assert result.p == 1 and get_rule("cost")(state, 0.5).p == 3  # curvature stops it at u2
    flat = _state(moves, grads, fisher={0: [0.0] * 3, 1: [0.0] * 3})
    assert get_rule("cost2")(flat, 0.5).values == get_rule("cost")(flat, 0.5).values
    with pytest.raises(ValueError, match="needs the clients' fisher"):
        get_rule("cost2")(_state(moves, grads))


def test_diagonal_fisher_is_the_mean_squared_per_sample_gradient(heart):
    from playerfl_core.fl.models import model_for
    from playerfl_core.fl.sensitivity import diagonal_fisher

    model = model_for(heart, 1.0, 0)
    c = heart.clients[0]
    x, y = c.x_train[:7], c.y_train[:7]
    fisher = diagonal_fisher(model, x, y, batch_size=3)  # batches of 3, 3, 1
    expected = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    for i in range(len(y)):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for n, p in model.named_parameters():
            expected[n] += p.grad**2 / len(y)
    for n in expected:
        torch.testing.assert_close(fisher[n], expected[n], rtol=1e-5, atol=1e-9)


def test_the_papers_rule_in_the_family_is_the_servers_split():
    sens = {0: {"u1": 1.0, "u2": 1.5, "u3": 9.0}, 1: {"u1": 2.0, "u2": 0.5, "u3": 1.0}}
    state = _state({0: [0.0] * 3, 1: [0.0] * 3}, sens=sens)
    for name, aggregate in (("paper", "mean"), ("paper_median", "median"),
                            ("paper_geomean", "geomean")):  # fmt: skip
        for t in (0.2, 1.0, 5.0):
            assert get_rule(name)(state, t).p == server_split(sens, state.weights, t, aggregate)


def test_leading_at_most_counts_until_the_first_value_above():
    assert leading_at_most([0.1, 0.2, 0.9, 0.1], 0.5) == 2
    assert leading_at_most([0.9, 0.1], 0.5) == 0
    assert leading_at_most([0.1, 0.1], 0.5) == 2


def test_bad_thresholds_and_missing_inputs_are_explained():
    state = _state({0: [1.0] * 3})
    with pytest.raises(ValueError, match="must be ≥ 0"):
        get_rule("disagreement")(state, -1)
    bare = FirstEpoch(UNITS, {0: 1.0}, {0: dict.fromkeys(UNITS, 1.0)})
    with pytest.raises(ValueError, match="needs the clients' params"):
        get_rule("disagreement")(bare)
    with pytest.raises(ValueError, match="Unknown split rule 'nope'. Available: paper"):
        get_rule("nope")


def test_every_rule_states_its_cost_and_range():
    rows = describe_rules()
    assert [r["rule"] for r in rows] == list(RULES)
    assert all(r["cost"].startswith("the first local epoch only") for r in rows)
    assert {r["range"] for r in rows} == {"1..L−1", "0..L"}


# -- the rule as PLayer-FL's, online, equals the replay of the sweep's first epoch --------------
@pytest.fixture(scope="module")
def replayed(heart):
    return R.rules_table("heart", [0], "quick", data_loader=lambda s: heart, device="cpu",
                         progress=False)  # fmt: skip


@pytest.mark.parametrize("rule", list(RULES))
def test_playerfl_with_any_rule_picks_the_split_the_replay_gives(heart, replayed, rule):
    name = "playerfl" if rule == "paper" else f"playerfl-{rule}"
    assert is_algorithm(name)
    algorithm = get_algorithm(name)
    assert algorithm.name == name and algorithm.rule == rule
    config = make_config("heart", "quick", seed=0, rounds=2, device="cpu", progress=False)
    run = run_federated(heart, algorithm, config)
    expected = R.splits(replayed).set_index("rule")["p"]
    assert run.info["split_p"] == expected[rule]
    if rule not in ("paper",):
        logged = run.table().query("client == -1 and metric.str.contains('/')", engine="python")
        quantity = get_rule(rule).quantity
        values = replayed[replayed["rule"] == rule].set_index("unit")["value"]
        got = logged[logged["metric"].str.startswith(quantity + "/")]
        assert got["value"].to_numpy() == pytest.approx(values.to_numpy())


def test_a_rule_variant_name_must_name_a_rule():
    assert not is_algorithm("playerfl-nope")
    with pytest.raises(ValueError, match="playerfl-<rule>"):
        get_algorithm("playerfl-nope")
    with pytest.raises(ValueError, match="rule=.*outside the valid range"):
        get_algorithm("playerfl", rule="nope")


def test_the_rule_asks_for_parameters_once_and_shares_only_the_prefix_afterwards(heart):
    """The extra upload happens in round 0 only; later uploads are the prefix's."""
    from playerfl_core.fl.algorithms.playerfl import GRAD

    algorithm = get_algorithm("playerfl-cost")
    sent = []
    original = type(algorithm).upload

    def spy(self, run, client, rnd):
        out = original(self, run, client, rnd)
        sent.append((rnd, sorted(out)))
        return out

    type(algorithm).upload = spy
    try:
        config = make_config("heart", "quick", seed=0, rounds=2, device="cpu", progress=False)
        run = run_federated(heart, algorithm, config)
    finally:
        type(algorithm).upload = original
    full = [names for rnd, names in sent if any(n.startswith(GRAD) for n in names)]
    assert len(full) == len(heart.clients)  # once per client
    p = run.info["split_p"]
    later = {tuple(names) for rnd, names in sent if rnd == 1}
    units = {n.split(".")[0] for names in later for n in names}
    assert len(units) == p


# -- the rules table, the probe and the regrets --------------------------------------------------
def test_rethreshold_from_the_table_equals_applying_the_rule(replayed):
    for rule in RULES:
        table_p = R.splits(replayed).set_index("rule").loc[rule, "p"]
        again = R.rethreshold(replayed, rule, get_rule(rule).default_threshold)["p"].iloc[0]
        assert again == table_p
    high = R.rethreshold(replayed, "disagreement", 10.0)["p"].iloc[0]
    assert high == len(replayed.query("rule == 'disagreement'"))  # every unit federated


def _sweep(val: dict[int, list[float]]) -> pd.DataFrame:
    """A hand-made sweep: per seed and p, two clients with the given validation score at every
    round (round r adds r/10 to p = 0 only, so the probe's round matters)."""
    rows = []
    for seed, vals in val.items():
        for p, v in enumerate(vals):
            for c in (0, 1):
                for rnd in range(3):
                    bump = rnd / 10 if p == 0 else 0.0
                    for split in ("val", "test"):
                        rows.append(("fake", f"prefix_p{p}", 0.1, seed, c, rnd, split, "loss",
                                     1 - v - bump, 10))  # fmt: skip
                        rows.append(("fake", f"prefix_p{p}", 0.1, seed, c, rnd, split,
                                     "macro_f1", v + bump, 10))  # fmt: skip
                rows.append(("fake", f"prefix_p{p}", 0.1, seed, c, 0, "train", "n_samples", 10, 10))
                rows.append(("fake", f"prefix_p{p}", 0.1, seed, c, 0, "train", "weight", 0.5, 10))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_the_probe_picks_the_best_validation_score_after_its_rounds():
    sweep = _sweep({0: [0.5, 0.55, 0.52], 1: [0.3, 0.3, 0.2]})
    one = R.probe_splits(sweep, 1).set_index("seed")["p"]
    assert one.to_dict() == {0: 1, 1: 0}  # ties go to the smaller p
    two = R.probe_splits(sweep, 2).set_index("seed")["p"]  # p = 0 gained 0.1 by round 1
    assert two.to_dict() == {0: 0, 1: 0}
    rows = R.probe_rows(sweep, 2)
    assert set(rows["unit"]) == {"p=0", "p=1", "p=2"} and (rows["rule"] == R.PROBE).all()
    with pytest.raises(ValueError, match="a 9-round probe needs more"):
        R.probe_splits(sweep, 9)


def test_rule_regrets_use_the_validation_oracle_and_the_test_scores():
    from playerfl_core.study.split_scores import sweep_scores

    sweep = _sweep({0: [0.5, 0.6, 0.52]})
    chosen = pd.DataFrame(
        [("fake", 0.1, 0, "x", 0.0, 2)], columns=[*R.RUN, "rule", "threshold", "p"]
    )
    reg = R.rule_regrets(sweep_scores(sweep), chosen).iloc[0]
    # p = 0 reaches 0.7 on validation by its best round (2), and its test score there is 0.7.
    assert reg["p_oracle"] == 0 and reg["p_rule"] == 2
    assert reg["regret"] == pytest.approx(0.7 - 0.52)


# -- the command line ------------------------------------------------------------------------------
def test_cli_sweep_writes_every_rules_split_next_to_the_sweep(tmp_path, capsys):
    from playerfl_core.cli import main

    out = tmp_path / "sweep.csv"
    args = ["sweep", "--dataset", "heart", "--seeds", "0", "--rounds", "2", "--out", str(out)]
    assert main([*args, "--rules", "all"]) == 0
    rules = pd.read_csv(tmp_path / "sweep.rules.csv")
    assert set(rules["rule"]) == {*RULES, R.PROBE}
    assert list(rules.columns) == R.COLUMNS
    printed = capsys.readouterr().out
    assert "split per seed" in printed and "disagreement" in printed
    assert main([*args, "--rules", "paper,nope"]) == 2
    assert "unknown split rules ['nope']" in capsys.readouterr().err


def test_cli_rules_lists_each_rule_with_its_cost(capsys):
    from playerfl_core.cli import main

    assert main(["rules"]) == 0
    printed = capsys.readouterr().out
    for name in RULES:
        assert f"{name} (p in" in printed
    assert "cost:" in printed and "probe" in printed


def test_replay_check_flags_a_sweep_recorded_elsewhere(replayed):
    from playerfl_core.fl.algorithms.prefix import RULE_METRIC

    p = int(R.splits(replayed).set_index("rule").loc["paper", "p"])
    lr = replayed["lr"].iloc[0]
    row = ("heart", "prefix_p0", lr, 0, -1, 0, "server", RULE_METRIC, p, 0)
    sweep = pd.DataFrame([row], columns=COLUMNS)
    assert R.check_replay(replayed, sweep)["same"].all()
    other = sweep.assign(value=(p % 3) + 1)  # another split than the replay's
    assert not R.check_replay(replayed, other)["same"].any()
