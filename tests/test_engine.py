"""The engine, the PLayer-FL split rule and the CLI (issue 2)."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import accuracy_score, f1_score

from playerfl_core import RunConfig, get_algorithm, run_federated
from playerfl_core.cli import main
from playerfl_core.fl.algorithms.playerfl import PLayerFL
from playerfl_core.fl.engine import DivergenceError
from playerfl_core.fl.sensitivity import choose_split, cumulative_sensitivity, relative_rises
from playerfl_core.fl.units import param_names, prefix, unit_names
from playerfl_core.stats.results import COLUMNS, SERVER, chosen_splits, select_rounds


def config(**kw):
    return RunConfig(**{"rounds": 2, "lr": 1e-2, "batch_size": 32, "progress": False, **kw})


# -- the split rule ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("s", "t", "p"),
    [
        ([1, 1, 1, 10, 100], 1.0, 3),  # rises 1, .5, 3.3 -> first > 1 at l = 3
        ([1, 1, 1, 10, 100], 0.9, 1),  # rise 1 > 0.9 already at l = 1
        ([1, 0.1, 0.1, 0.1], 1.0, 3),  # never rises: every unit but the head
        ([1, 5, 1, 1], 1.0, 1),
        ([4, 4, 4, 40], 2.0, 3),
    ],
)
def test_choose_split_on_hand_made_vectors(s, t, p):
    assert choose_split(s, t) == p


def test_relative_rise_is_ratio_of_cumulative_curve():
    s = [2.0, 1.0, 3.0, 12.0]
    F = cumulative_sensitivity(s)
    np.testing.assert_allclose(F, [1.0, 1.5, 3.0, 9.0])
    np.testing.assert_allclose(relative_rises(s), F[1:] / F[:-1] - 1)


@pytest.mark.parametrize("bad", [[1.0], [1.0, -1.0], [1.0, float("nan")]])
def test_split_rule_rejects_bad_sensitivities(bad):
    with pytest.raises(ValueError, match="ensitivities"):
        choose_split(bad)


def test_split_rule_rejects_bad_threshold():
    with pytest.raises(ValueError, match="threshold"):
        choose_split([1, 2, 3], threshold=-1)


# -- the engine -------------------------------------------------------------------------------
class SpyPLayerFL(PLayerFL):
    """Records every upload the server receives."""

    def server_step(self, run, rnd):
        self.seen = getattr(self, "seen", [])
        return super().server_step(run, rnd)

    def aggregate(self, run, rnd, uploads):
        self.seen.extend(name for up in uploads.values() for name in up)
        return super().aggregate(run, rnd, uploads)


def test_local_units_never_leave_a_client(heart):
    algo = SpyPLayerFL()
    run = run_federated(heart, algo, config(rounds=3))
    model = run.clients[0].model
    federated = set(param_names(model, prefix(model, algo.p)))
    local = set(param_names(model, unit_names(model)[algo.p :]))
    assert algo.seen and set(algo.seen) == federated
    assert not local & set(algo.seen)
    # The server never learnt the local units: its copy is still the initial weights ...
    init = run.new_model().state_dict()
    for name in local:
        assert torch.equal(run.global_params[name], init[name])
    # ... while the clients' local units trained apart, and the federated ones agree.
    first, second = (dict(c.model.named_parameters()) for c in run.clients[:2])
    assert all(not torch.equal(first[n], second[n]) for n in local)
    assert all(torch.equal(first[n], second[n]) for n in federated)


def test_playerfl_records_split_and_sensitivities(heart):
    table = run_federated(heart, get_algorithm("playerfl"), config()).table()
    splits = chosen_splits(table)
    assert len(splits) == 1 and 1 <= splits["split_p"][0] <= 3
    server = table[(table.client == SERVER) & table.metric.str.startswith("sensitivity/")]
    assert list(server.metric) == [f"sensitivity/fc{i}" for i in range(1, 5)]
    per_client = table[(table.client >= 0) & table.metric.str.startswith("sensitivity/")]
    assert len(per_client) == 4 * len(heart.clients)


def test_fedavg_with_one_client_equals_local_training(heart):
    one = dataclasses.replace(heart, clients=heart.clients[:1])
    local = run_federated(one, get_algorithm("local"), config(rounds=3))
    fedavg = run_federated(one, get_algorithm("fedavg"), config(rounds=3))
    a, b = local.table().drop(columns="algorithm"), fedavg.table().drop(columns="algorithm")
    pd.testing.assert_frame_equal(a, b)
    for (n, p), (_, q) in zip(
        local.clients[0].model.named_parameters(),
        fedavg.clients[0].model.named_parameters(),
        strict=True,
    ):
        assert torch.equal(p, q), n


def test_fedavg_clients_share_the_global_model(digits):
    run = run_federated(digits, get_algorithm("fedavg"), config())
    for c in run.clients:
        for n, p in c.model.named_parameters():
            assert torch.equal(p, run.global_params[n])


def test_same_seed_identical_table_other_seed_differs(heart):
    a = run_federated(heart, get_algorithm("playerfl"), config(seed=3)).table()
    b = run_federated(heart, get_algorithm("playerfl"), config(seed=3)).table()
    c = run_federated(heart, get_algorithm("playerfl"), config(seed=4)).table()
    pd.testing.assert_frame_equal(a, b)
    assert not a["value"].equals(c["value"])


def test_table_is_long_and_tidy(heart):
    table = run_federated(heart, get_algorithm("fedavg"), config()).table()
    assert list(table.columns) == COLUMNS
    scored = table[table.split.isin(["val", "test"])]
    assert set(scored.metric) == {"loss", "accuracy", "macro_f1"}
    assert not table.duplicated(["client", "round", "split", "metric"]).any()
    best = select_rounds(table)
    assert set(best.groupby("client")["round"].nunique()) == {1}


def test_before_aggregation_scores_fedavg_before_aggregation(heart):
    deployed = run_federated(heart, get_algorithm("fedavg"), config()).table()
    authors = run_federated(
        heart, get_algorithm("fedavg"), config(eval_timing="before_aggregation")
    ).table()
    pick = lambda t: t[t.split == "test"]["value"].to_numpy()  # noqa: E731
    assert not np.allclose(pick(deployed), pick(authors))
    local_d = run_federated(heart, get_algorithm("local"), config()).table()
    local_a = run_federated(
        heart, get_algorithm("local"), config(eval_timing="before_aggregation")
    ).table()
    np.testing.assert_array_equal(pick(local_d), pick(local_a))


class RecordingFedAvg(get_algorithm("fedavg").__class__):
    """FedAvg that scores, with scikit-learn, every model it hands over for evaluation."""

    def deployed_model(self, run, client):
        model = super().deployed_model(run, client)
        rnd = len(self.expected) // (2 * len(run.clients))
        with torch.no_grad():
            model.eval()
            for split in ("val", "test"):
                x, y = client.x[split], client.y[split]
                logits = model(x)
                pred = logits.argmax(1).numpy()
                self.expected[(client.id, rnd, split)] = {
                    "loss": torch.nn.functional.cross_entropy(logits, y).item(),
                    "accuracy": accuracy_score(y.numpy(), pred),
                    "macro_f1": f1_score(y.numpy(), pred, average="macro", zero_division=0),
                }
            model.train()
        return model


@pytest.mark.parametrize("dataset", ["heart", "digits"])
def test_logged_metrics_equal_sklearn_on_the_deployed_models(dataset, request):
    data = request.getfixturevalue(dataset)
    algo = RecordingFedAvg()
    algo.expected = {}
    table = run_federated(data, algo, config(rounds=3)).table()
    scored = table[table.split.isin(["val", "test"])]
    assert len(algo.expected) == 3 * 2 * len(data.clients)
    assert len(scored) == 3 * len(algo.expected)
    for r in scored.itertuples():
        assert r.value == algo.expected[(r.client, r.round, r.split)][r.metric], r


def test_adam_uses_the_multi_tensor_path_with_unchanged_results(heart):
    run = run_federated(heart, get_algorithm("fedavg"), config(rounds=1))
    group = run.clients[0].optimizer.param_groups[0]
    assert group["foreach"] and group["amsgrad"] and group["weight_decay"] == 1e-4
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    twin = torch.nn.Linear(5, 3)
    twin.load_state_dict(model.state_dict())
    fast = run.clients[0].make_optimizer(model.parameters())
    plain = torch.optim.Adam(twin.parameters(), lr=1e-2, amsgrad=True, weight_decay=1e-4)
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))
    for _ in range(5):
        for m, opt in ((model, fast), (twin, plain)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
    assert all(
        torch.equal(p, q) for p, q in zip(model.parameters(), twin.parameters(), strict=True)
    )


def test_train_and_eval_modes_are_honoured_only_where_they_matter(heart):
    """The engine skips train/eval switching for models without dropout or batch norm (pure
    overhead), but a model with dropout must still train in train mode and be scored in eval
    mode (deterministic logits), and be left in the mode it was found in."""
    from playerfl_core.fl.engine import Client, mode_matters
    from playerfl_core.fl.models import build_model

    plain = build_model(heart.model, heart.num_classes, heart.input_shape, 1.0, 0)
    assert not mode_matters(plain)
    model = build_model(heart.model, heart.num_classes, heart.input_shape, 1.0, 0)
    model.fc2.append(torch.nn.Dropout(0.5))
    assert mode_matters(model)
    client = Client(0, heart.clients[0], model, config())
    first, second = (client.logits(model, ("test",))[0] for _ in range(2))
    assert torch.equal(first, second) and model.training
    seen = []
    hook = model.fc2.register_forward_hook(lambda m, i, o: seen.append(m.training))
    client.train_epoch()
    hook.remove()
    assert seen and all(seen)


def test_nan_loss_raises_a_clear_divergence_error(heart):
    broken = dataclasses.replace(heart, clients=list(heart.clients))
    bad = dataclasses.replace(broken.clients[0], x_train=broken.clients[0].x_train.clone())
    bad.x_train[0, 0] = float("nan")
    broken.clients[0] = bad
    with pytest.raises(DivergenceError, match="Lower the learning rate"):
        run_federated(broken, get_algorithm("fedavg"), config())


def test_unknown_algorithm_and_bad_parameters_are_explained():
    with pytest.raises(ValueError, match="Available: local, fedavg"):
        get_algorithm("fedsomething")
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        get_algorithm("playerfl", treshold=1.0)
    with pytest.raises(ValueError, match="lr must be"):
        config(lr=-1)
    with pytest.raises(ValueError, match="eval_timing must be one of"):
        config(eval_timing="authors")


# -- the command line -------------------------------------------------------------------------
def test_cli_writes_the_long_results_table(tmp_path, capsys):
    out = tmp_path / "results.csv"
    code = main(
        [
            "run",
            "--dataset",
            "heart",
            "--algorithms",
            "local,playerfl",
            "--seeds",
            "0,1",
            "--rounds",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(out)
    assert {"algorithm", "client", "metric", "value"} <= set(table.columns)
    assert set(table.algorithm) == {"local", "playerfl"} and set(table.seed) == {0, 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "heart", "--algorithms", "fedx"], "--algorithms: unknown algorithm 'fedx'"),
        (["--dataset", "mnist9"], "unknown dataset 'mnist9'"),
    ],
)
def test_cli_explains_bad_input(tmp_path, capsys, args, message):
    assert main(["run", *args, "--rounds", "1", "--out", str(tmp_path / "r.csv")]) == 2
    assert message in capsys.readouterr().err


def test_sensitivity_leaves_the_model_as_found(heart):
    from playerfl_core.fl.models import build_model
    from playerfl_core.fl.sensitivity import federation_sensitivity

    model = build_model("mlp", 5, heart.input_shape, 1.0, seed=0)
    model.train()
    model.fc2.eval()  # a mixed state must survive
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    c = heart.clients[0]
    s = federation_sensitivity(model, c.x_train, c.y_train, batch_size=64)
    assert list(s) == list(unit_names(model)) and all(v > 0 for v in s.values())
    assert model.training and not model.fc2.training and model.fc1.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_run_federated_takes_algorithm_objects_not_names(heart):
    """Names are resolved by callers (``get_algorithm``), so the engine needs no registry."""
    with pytest.raises(TypeError, match=r"get_algorithm\('fedavg'\)"):
        run_federated(heart, "fedavg", config(rounds=1))


def test_observers_see_each_round_before_and_after_the_server_and_change_nothing(heart):
    """The measurement hook: ``after_local_updates`` sees the clients' own models (FedAvg has
    not averaged them yet), ``on_round_end`` the averaged ones; watching changes no number."""
    from playerfl_core.fl.engine import Observer

    class Watch(Observer):
        def __init__(self):
            self.calls = []

        def _same(self, run) -> bool:
            first = run.clients[0].model.state_dict()
            return all(
                torch.equal(first[k], v)
                for c in run.clients[1:]
                for k, v in c.model.state_dict().items()
            )

        def after_local_updates(self, run, rnd):
            self.calls.append(("local", rnd, self._same(run)))

        def on_round_end(self, run, rnd):
            self.calls.append(("end", rnd, self._same(run)))

    watch = Watch()
    watched = run_federated(heart, get_algorithm("fedavg"), config(rounds=2), observers=[watch])
    plain = run_federated(heart, get_algorithm("fedavg"), config(rounds=2))
    assert watch.calls == [
        ("local", 0, False),
        ("end", 0, True),
        ("local", 1, False),
        ("end", 1, True),
    ]
    pd.testing.assert_frame_equal(watched.table(), plain.table())
