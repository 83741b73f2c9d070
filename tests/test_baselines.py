"""The baselines: each one's defining update, and that every algorithm runs on real data.

Most tests use a toy federation (three clients of 12, 30 and 7 samples, so training-size
shares are far from uniform; a 4-unit MLP of width 0.2) and small recording subclasses, and
compare what happened with the rule computed here from its definition. Reductions prove the
shared machinery: FedProx(μ=0), FedLP(p=1) and FedLAMA(τ'=φ=1) must be FedAvg bit for bit;
Ditto(λ=0) must be Local (personal) and FedAvg (global). Each rule-checking test was run once
against a deliberately wrong version of its rule and went red (README, "Mutation testing").
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import data_prep
from data_prep.base import ClientData, FederatedData
from playerfl_core.fl.algorithms import ALGORITHMS, get_algorithm, is_algorithm
from playerfl_core.fl.algorithms.ditto import Ditto
from playerfl_core.fl.algorithms.fedbabu import FedBABU
from playerfl_core.fl.algorithms.fedlama import FedLAMA, global_average
from playerfl_core.fl.algorithms.fedlp import FedLP
from playerfl_core.fl.algorithms.fedprox import FedProx
from playerfl_core.fl.algorithms.finetune import FineTune
from playerfl_core.fl.algorithms.pfedla import HyperNetwork, PFedLA, declared_sizes
from playerfl_core.fl.algorithms.pfedme import PFedMe
from playerfl_core.fl.algorithms.playerfl import PLayerFL
from playerfl_core.fl.algorithms.playerfl_random import PLayerFLRandom, random_split
from playerfl_core.fl.algorithms.prefix import RULE_METRIC, Prefix, parse_prefix_name
from playerfl_core.fl.engine import DivergenceError, RunConfig, run_federated
from playerfl_core.fl.models import MODELS, UnitModel
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.sensitivity import choose_split, federation_sensitivity
from playerfl_core.fl.units import (
    get_params,
    param_names,
    set_params,
    unit_names,
    unit_of,
    unit_params,
)
from playerfl_core.stats.results import SERVER

ORDER = [
    "local",
    "fedavg",
    "fedprox",
    "pfedme",
    "ditto",
    "finetune",
    "fedbabu",
    "fedlp",
    "fedlama",
    "pfedla",
    "playerfl",
    "playerfl_random",
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These models are tiny: one intra-op thread is faster, and on a busy 2-core machine two
    threads per process oversubscribe the cores (this file took 14 min instead of 25 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def fmnist():
    try:  # a smaller federation than the quick profile keeps this file fast
        return data_prep.load("fmnist", profile="quick", seed=0, samples_per_client=40)
    except data_prep.DataError as err:
        pytest.skip(f"Fashion-MNIST not prepared: {err}")


def cfg(data, rounds=2, **kw):
    return make_config(data.name, "quick", rounds=rounds, device="cpu", progress=False, **kw)


def run(data, name, rounds=2, config_kw=None, **hp):
    algorithm = name if not isinstance(name, str) else get_algorithm(name, **hp)
    return run_federated(data, algorithm, cfg(data, rounds, **(config_kw or {})))


def scores(r) -> pd.DataFrame:
    """Train loss and every val/test metric, without the algorithm's name."""
    t = r.table()
    keep = t["split"].isin(["val", "test"]) | ((t["split"] == "train") & (t["metric"] == "loss"))
    return t[keep].drop(columns="algorithm").reset_index(drop=True)


def params_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[n], b[n]) for n in a)


def all_params(model) -> dict:
    return get_params(model, [n for n, _ in model.named_parameters()])


# -- the toy federation -------------------------------------------------------------------------
SIZES = (12, 30, 7)


def toy_federation(sizes=SIZES, seed=0) -> FederatedData:
    """Separable-ish 3-class data with a per-client shift (heterogeneous clients)."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(3, 4, generator=g) * 2

    def split(i, n):
        y = torch.randint(0, 3, (n,), generator=g)
        return centres[y] + 0.5 * i + torch.randn(n, 4, generator=g), y

    clients = []
    for i, n in enumerate(sizes):
        (xt, yt), (xv, yv), (xs, ys) = split(i, n), split(i, 5), split(i, 5)
        clients.append(ClientData(f"c{i}", xt, yt, xv, yv, xs, ys))
    return FederatedData("toy", clients, 3, (4,), ["a", "b", "c"], model="mlp")


@pytest.fixture(scope="module")
def toy():
    return toy_federation()


def toy_config(rounds=2, **kw) -> RunConfig:
    return RunConfig(
        **{"rounds": rounds, "lr": 0.01, "batch_size": 8, "width": 0.2, "progress": False, **kw}
    )


def toy_run(data, algorithm, rounds=2, **kw):
    algorithm = get_algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    return run_federated(data, algorithm, toy_config(rounds, **kw))


def shares(clients) -> list[float]:
    """Training-sample shares, computed here rather than taken from the engine."""
    total = sum(c.n_train for c in clients)
    return [c.n_train / total for c in clients]


# -- registry ---------------------------------------------------------------------------------
DEFAULTS = {  # reference §1.2, except pFedMe (the pFedMe paper's λ, K, β; see its docstring)
    "local": {},
    "fedavg": {},
    "fedprox": {"mu": 0.1},
    "pfedme": {
        "lam": 15.0,
        "K": 5,
        "personal_lr": None,
        "beta": 1.0,
        "eta": None,
        "outer": "sgd",
        "inner": "adam",
    },
    "ditto": {"lam": 0.1},
    "finetune": {"finetune_epochs": 1},
    "fedbabu": {"finetune_epochs": 1, "finetune": "full"},
    "fedlp": {"p": 0.7},
    "fedlama": {"tau_base": 2, "phi": 2},
    "pfedla": {"hn_lr": 0.01, "embedding_dim": None, "hidden_dim": None},
    "playerfl": {"threshold": None, "rule": "paper"},
    "playerfl_random": {"threshold": 1.0},
}


def test_registry_order_and_hyperparameters():
    assert list(ALGORITHMS) == ORDER
    assert {name: get_algorithm(name).hyperparameters() for name in ORDER} == DEFAULTS
    assert get_algorithm("fedprox", mu=0.5).mu == 0.5
    with pytest.raises(ValueError, match="unknown_algo"):
        get_algorithm("unknown_algo")
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        get_algorithm("ditto", mu=1)
    base = get_algorithm("fedavg").deploys
    for name in ORDER:
        if name not in ("fedavg", "fedprox", "fedlp"):
            assert get_algorithm(name).deploys != base, name


# -- reductions to FedAvg / Local ---------------------------------------------------------------
@pytest.fixture(scope="module")
def fedavg_toy(toy):
    return toy_run(toy, "fedavg")


@pytest.mark.parametrize(
    ("name", "hp"),
    [("fedprox", {"mu": 0.0}), ("fedlp", {"p": 1.0}), ("fedlama", {"tau_base": 1, "phi": 1})],
)
def test_reductions_reproduce_fedavg_exactly(toy, fedavg_toy, name, hp):
    r = toy_run(toy, get_algorithm(name, **hp))
    pd.testing.assert_frame_equal(scores(r), scores(fedavg_toy), check_exact=True)
    assert params_equal(r.global_params, fedavg_toy.global_params)


def test_reductions_are_not_vacuous(toy, fedavg_toy):
    """With their default hyper-parameters the three methods do differ from FedAvg."""
    for name in ("fedprox", "fedlp", "fedlama"):
        assert not scores(toy_run(toy, name)).equals(scores(fedavg_toy)), name


def test_ditto_without_pull_is_local_and_fedavg(toy, fedavg_toy):
    ditto = toy_run(toy, get_algorithm("ditto", lam=0.0))
    local = toy_run(toy, "local")
    pd.testing.assert_frame_equal(scores(ditto), scores(local), check_exact=True)
    assert params_equal(ditto.global_params, fedavg_toy.global_params)
    # with its default pull the personal models are no longer Local's
    assert not scores(toy_run(toy, "ditto")).equals(scores(local))


# -- FedBABU ----------------------------------------------------------------------------------
class BabuProbe(FedBABU):
    def setup(self, run):
        super().setup(run)
        self.head_names = param_names(run.clients[0].model, [unit_names(run.clients[0].model)[-1]])
        self.init = get_params(run.clients[0].model, self.head_names)
        self.uploaded, self.heads = set(), []

    def upload(self, run, client, rnd):
        up = super().upload(run, client, rnd)
        self.uploaded |= set(up)
        return up

    def server_step(self, run, rnd):
        self.heads.append([get_params(c.model, self.head_names) for c in run.clients])
        super().server_step(run, rnd)
        self.heads.append([get_params(c.model, self.head_names) for c in run.clients])


def test_fedbabu_head_stays_at_initialisation(toy):
    babu = BabuProbe()
    r = toy_run(toy, babu, rounds=3)
    assert babu.head_names == ["fc4.weight", "fc4.bias"]
    assert not babu.uploaded & set(babu.head_names)  # the head never leaves a client
    assert len(babu.heads) == 6
    for snapshot in babu.heads:
        for head in snapshot:
            assert params_equal(head, babu.init)
    body = param_names(r.clients[0].model, ["fc1"])[0]
    assert not torch.equal(r.global_params[body], all_params(r.new_model())[body])
    # finish() fine-tuned the full model: now the head moved, and round R was evaluated
    assert not params_equal(get_params(r.clients[0].model, babu.head_names), babu.init)
    assert r.table()["round"].max() == 3


# -- FedLP ------------------------------------------------------------------------------------
class LPProbe(FedLP):
    def setup(self, run):
        super().setup(run)
        self.nobody, self.somebody = [], []

    def server_step(self, run, rnd):
        before = {n: v.clone() for n, v in run.global_params.items()}
        kept = [set(self.shared_units(run, c, rnd)) for c in run.clients]
        super().server_step(run, rnd)
        model = run.clients[0].model
        for u in unit_names(model):
            names = param_names(model, [u])
            unchanged = all(torch.equal(before[n], run.global_params[n]) for n in names)
            (self.somebody if any(u in k for k in kept) else self.nobody).append(unchanged)
        for c in run.clients:  # the full global model is distributed
            assert params_equal(all_params(c.model), run.global_params)


def test_fedlp_unit_kept_by_nobody_is_unchanged(toy):
    lp = LPProbe(p=0.4)
    toy_run(toy, lp, rounds=4)
    assert lp.nobody, "no unit was dropped by every client; pick another p or seed"
    assert all(lp.nobody)
    assert not any(lp.somebody)


def test_fedlp_coins_are_seeded(toy):
    a, b = toy_run(toy, "fedlp"), toy_run(toy, "fedlp")
    pd.testing.assert_frame_equal(a.table(), b.table(), check_exact=True)


def test_fedlp_coins_depend_on_the_run_seed_the_client_and_the_round():
    """Each (run seed, client, round) has its own coins: reproducible, yet not one fixed pattern."""
    fedlp = FedLP(p=0.5)

    def coins(seed, cid):
        run = SimpleNamespace(config=SimpleNamespace(seed=seed))
        client = SimpleNamespace(id=cid, model=TwoUnitNet())
        return [fedlp.shared_units(run, client, rnd) for rnd in range(20)]

    assert coins(0, 0) == coins(0, 0)
    assert coins(0, 0) != coins(1, 0) and coins(0, 0) != coins(0, 1)
    assert len(set(coins(0, 0))) > 1


# -- FedLAMA ----------------------------------------------------------------------------------
class LamaDeployProbe(FedLAMA):
    """Records, every round, the models the clients are scored on and the clients' own models."""

    def setup(self, run):
        super().setup(run)
        self.scored, self.current = {}, {}

    def deployed_model(self, run, client):
        model = super().deployed_model(run, client)
        rnd = len(self.scored) - (client.id != 0)
        self.scored.setdefault(rnd, []).append(all_params(model))
        self.current.setdefault(rnd, []).append(all_params(client.model))
        return model


def test_fedlama_scores_the_global_model_every_round(toy):
    lama = LamaDeployProbe()  # τ' = φ = 2: rounds 0, 2 synchronise nothing
    r = toy_run(toy, lama, rounds=4)
    shares = np.array([c.n_train for c in r.clients], dtype=float)
    shares /= shares.sum()
    assert sorted(lama.scored) == [0, 1, 2, 3]
    for rnd, scored in lama.scored.items():
        assert len(scored) == len(r.clients)
        for other in scored[1:]:
            assert params_equal(other, scored[0]), rnd  # one model for every client
        for n, value in scored[0].items():  # ... and it is the sample-weighted average
            average = sum(s * cur[n] for s, cur in zip(shares, lama.current[rnd], strict=True))
            torch.testing.assert_close(value, average, rtol=0, atol=1e-6)
    # in round 0 nothing is synchronised: the clients' own models differ, the scored one doesn't
    assert not params_equal(lama.current[0][0], lama.current[0][1])


class LamaProbe(FedLAMA):
    def setup(self, run):
        super().setup(run)
        self.unsynced = self.synced = 0

    def server_step(self, run, rnd):
        due = self.due(rnd)
        before = [all_params(c.model) for c in run.clients]
        super().server_step(run, rnd)
        model = run.clients[0].model
        for u in unit_names(model):
            for n in param_names(model, [u]):
                values = [dict(c.model.named_parameters())[n].detach() for c in run.clients]
                if u in due:
                    self.synced += 1
                    assert all(torch.equal(v, run.global_params[n]) for v in values)
                else:
                    self.unsynced += 1
                    assert all(torch.equal(v, b[n]) for v, b in zip(values, before, strict=True))
                    assert not torch.equal(values[0], values[1])  # really each client's own


def test_fedlama_unsynchronised_units_keep_local_values(toy):
    lama = LamaProbe(tau_base=1, phi=2)
    r = toy_run(toy, lama, rounds=6)
    assert lama.synced and lama.unsynced
    intervals = r.table().query("metric.str.startswith('interval/')")
    assert set(intervals["value"]) == {1.0, 2.0}


def test_fedlama_default_skips_round_zero(toy):
    lama = LamaProbe()
    toy_run(toy, lama, rounds=2)
    assert lama.due(0) == () and lama.unsynced > 0


@pytest.mark.parametrize(("tau_base", "phi"), [(0, 2), (1.5, 2), (2, 0), (2, 1.5)])
def test_fedlama_rejects_intervals_that_are_not_whole_rounds(tau_base, phi):
    # checked when the algorithm is built (the declared ranges), before any run is touched
    name = "tau_base" if tau_base != 2 else "phi"
    with pytest.raises(
        ValueError, match=rf"{name}=\S+ is outside the valid range \(an integer ≥ 1\)"
    ):
        FedLAMA(tau_base=tau_base, phi=phi).setup(None)


class TwoUnitNet(UnitModel):
    units = ("a", "b")

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 1)


def test_fedlama_global_model_is_the_weighted_average_on_hand_built_clients():
    """FedLAMA deploys Σ_i w_i x_i (Lee et al., 2023: the global model is the weighted average of
    the local models). Only a parameter *all* clients hold identically may be copied: here a.weight
    agrees on clients 1 and 2 only, b.weight on clients 0 and 2 only."""
    weights = {0: 0.5, 1: 0.3, 2: 0.2}
    models = [TwoUnitNet() for _ in weights]
    values = {
        "a.weight": [torch.full((2, 2), v) for v in (1.0, 2.0, 2.0)],
        "a.bias": [torch.full((2,), 4.0)] * 3,
        "b.weight": [torch.full((1, 2), v) for v in (3.0, -1.0, 3.0)],
        "b.bias": [torch.full((1,), v) for v in (0.0, 1.0, 2.0)],
    }
    for i, model in enumerate(models):
        set_params(model, {n: v[i] for n, v in values.items()})
    deployed = global_average({i: all_params(m) for i, m in enumerate(models)}, weights)
    for n, v in values.items():
        expected = sum(weights[i] * v[i] for i in weights)
        torch.testing.assert_close(deployed[n], expected, rtol=0, atol=1e-6, msg=n)


def test_fedlama_scores_do_not_depend_on_the_evaluation_timing(toy):
    """The weighted average of the clients' models is the same before and after synchronising
    (the module docstring's claim), so scoring before aggregation scores the same model."""
    after = toy_run(toy, "fedlama", rounds=4)
    before = toy_run(toy, "fedlama", rounds=4, eval_timing="before_aggregation")
    pd.testing.assert_frame_equal(scores(before), scores(after), rtol=1e-5, atol=1e-6)


# -- pFedLA -----------------------------------------------------------------------------------
class LAProbe(PFedLA):
    """Records the hypernetworks, and how far each client's mixture is from what it trained."""

    def setup(self, run):
        super().setup(run)
        self.hn_states, self.gaps = [self._hn()], []

    def _hn(self):
        return [torch.cat([p.detach().flatten() for p in hn.parameters()]) for hn in self.hypernets]

    def _gap(self, mixed, target):
        return sum(float(((mixed[n].detach() - target[n]) ** 2).sum()) for n in target)

    def server_step(self, run, rnd):
        old_copies = [{n: v.clone() for n, v in copy.items()} for copy in self.copies]
        targets = {c.id: all_params(c.model) for c in run.clients}  # what each client trained
        before = {c: self._gap(self.pending[c], targets[c]) for c in targets}
        super().server_step(run, rnd)
        self.hn_states.append(self._hn())
        new_copies, self.copies = self.copies, old_copies  # same copies, new weights α
        with torch.no_grad():
            self.gaps.append(
                {c: (before[c], self._gap(self.mix(self.alphas(c)), targets[c])) for c in targets}
            )
        self.copies = new_copies


def test_pfedla_hypernetwork_trains_by_descent(toy):
    la = LAProbe()
    toy_run(toy, la, rounds=2)
    before, after = la.hn_states[1], la.hn_states[2]  # round 1, when the copies differ
    last_round_change = [float((b - a).abs().max()) for a, b in zip(before, after, strict=True)]
    assert min(last_round_change) > 1e-6, last_round_change
    # the step is a descent step: the new weights mix the same copies closer to the trained model
    for gap_before, gap_after in la.gaps[1].values():
        assert gap_after < gap_before
    assert not params_equal(la.copies[0], la.copies[1])  # personalised copies


# -- pFedMe -----------------------------------------------------------------------------------
class MeProbe(PFedMe):
    """Records the gap ‖θ_i − w_i‖, the inner steps taken, and the server's mixing."""

    def setup(self, run):
        super().setup(run)
        self.gaps, self.inner_steps, self.w_moved, self.mixing_ok = [], [], [], []

    def local_update(self, run, client, rnd):
        received = all_params(client.model)
        loss = super().local_update(run, client, rnd)
        theta = torch.cat([p.detach().flatten() for p in client.state["personal"].parameters()])
        w = torch.cat([p.detach().flatten() for p in client.model.parameters()])
        self.gaps.append(float((theta - w).norm()))
        state = client.state["personal_optimizer"].state
        self.inner_steps.append(int(state[next(iter(state))]["step"]))
        self.w_moved.append(not params_equal(all_params(client.model), received))
        return loss

    def server_step(self, run, rnd):
        previous = dict(run.global_params)
        avg = {
            n: sum(run.weights[c.id] * all_params(c.model)[n] for c in run.clients)
            for n in previous
        }
        super().server_step(run, rnd)
        self.mixing_ok.append(
            all(
                torch.allclose(
                    run.global_params[n],
                    (1 - self.beta) * previous[n] + self.beta * avg[n],
                    atol=1e-6,
                )
                for n in previous
            )
        )


def test_pfedme_personal_model_is_pulled_to_w_by_lambda(toy):
    weak, strong = MeProbe(lam=0.1), MeProbe(lam=100.0, beta=0.5)
    r = toy_run(toy, weak, rounds=1)
    toy_run(toy, strong, rounds=1)
    assert min(weak.gaps) > 0 and min(strong.gaps) > 0  # θ_i is not the local copy w_i
    assert np.mean(strong.gaps) < 0.5 * np.mean(weak.gaps)
    # K inner steps per mini-batch, then w_i itself moves towards θ_i
    batches = [-(-c.n_train // r.config.batch_size) for c in r.clients]
    assert weak.inner_steps == [weak.K * b for b in batches]
    assert all(weak.w_moved)
    # the server's w ← (1 − β)·w + β·avg(w_i)
    assert weak.mixing_ok == [True] and strong.mixing_ok == [True]


def test_pfedme_literal_envelope_step_is_guarded(toy):
    with pytest.raises(ValueError, match="eta"):
        toy_run(toy, PFedMe(eta=1.0, lam=15.0), rounds=1)


def test_pfedme_outer_step_on_a_hand_built_quadratic():
    """The envelope of (λ/2)‖w − θ‖² has gradient λ(w − θ): w moves by exactly ηλ(w − θ)."""
    me = PFedMe(lam=4.0)
    me.setup(SimpleNamespace(config=SimpleNamespace(lr=0.1), clients=[]))  # η = the run lr
    w = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    theta = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    w_before = w.clone()
    me._envelope_step(SimpleNamespace(config=SimpleNamespace(lr=0.1)), [w], [theta])
    expected = w_before - 0.1 * 4.0 * (w_before - theta)  # = [0.6, -0.8, 0.5]
    torch.testing.assert_close(w, expected, rtol=0, atol=1e-15)
    torch.testing.assert_close(w, torch.tensor([0.6, -0.8, 0.5], dtype=torch.float64))


def test_pfedme_adam_outer_step_feeds_the_envelope_gradient_to_adam():
    """outer='adam': the client's Adam takes λ(w − θ) as the gradient of w, so w moves towards
    θ, by Adam's rescaled step rather than ηλ(w − θ)."""
    me = PFedMe(lam=4.0, outer="adam")
    me.setup(SimpleNamespace(config=SimpleNamespace(lr=0.1), clients=[]))
    w = nn.Parameter(torch.tensor([1.0, -2.0, 0.5, 3.0]))
    theta = torch.tensor([0.0, 1.0, 0.5, 2.0])
    ref = nn.Parameter(w.detach().clone())
    client = SimpleNamespace(optimizer=torch.optim.Adam([w], lr=0.1, amsgrad=True))
    ref_opt = torch.optim.Adam([ref], lr=0.1, amsgrad=True)
    for _ in range(3):
        me._envelope_step(client, [w], [theta])
        ref_opt.zero_grad()
        ref.grad = 4.0 * (ref.detach() - theta)
        ref_opt.step()
        assert torch.equal(w.detach(), ref.detach())
    assert (w.detach() - theta).abs().sum() < torch.tensor([1.0, 3.0, 0.0, 1.0]).sum()


class OuterProbe(PFedMe):
    """Records w before and after one client's local update, and θ after it."""

    def setup(self, run):
        super().setup(run)
        self.records = []

    def local_update(self, run, client, rnd):
        before = all_params(client.model)
        loss = super().local_update(run, client, rnd)
        self.records.append(
            (before, all_params(client.model), all_params(client.state["personal"]))
        )
        return loss


@pytest.mark.parametrize("eta", [None, 0.02])
def test_pfedme_local_update_moves_w_by_eta_lambda_towards_theta(toy, eta):
    """One mini-batch per round: after the K inner steps, w_i ← w_i − ηλ(w_i − θ_i) exactly."""
    probe = OuterProbe(lam=15.0, eta=eta)
    r = toy_run(toy, probe, rounds=1, batch_size=10_000)
    step = (eta if eta is not None else r.config.lr) * 15.0
    for before, after, theta in probe.records:
        assert not params_equal(before, theta)
        for n in before:
            expected = before[n] - step * (before[n] - theta[n])
            torch.testing.assert_close(after[n], expected, rtol=0, atol=1e-6)


def test_pfedme_unstable_outer_step_is_recorded_as_diverged(toy):
    """A grid lr with η·λ ≥ 2 is refused before round 0, as a divergence naming the values."""
    with pytest.raises(DivergenceError, match=r"eta=0\.5 \(the run lr\), lam=15, eta·lam=7\.5"):
        toy_run(toy, "pfedme", rounds=1, lr=0.5)
    with pytest.raises(ValueError, match=r"outer='rmsprop' is outside the valid range"):
        toy_run(toy, PFedMe(outer="rmsprop"), rounds=1)
    toy_run(toy, PFedMe(outer="adam"), rounds=1, lr=0.5)  # Adam: no such bound


# -- PLayer-FL-Random -------------------------------------------------------------------------
def test_playerfl_random_avoids_playerfls_split():
    drawn = set()
    for seed in range(5):
        data = toy_federation(seed=seed)
        p_star = toy_run(data, "playerfl", rounds=1, seed=seed).info["split_p"]
        r = toy_run(data, "playerfl_random", rounds=1, seed=seed)
        assert r.info["playerfl_split_p"] == p_star
        p = r.info["split_p"]
        assert 1 <= p < len(unit_names(r.clients[0].model)) and p != p_star
        assert r.info["federated_units"] == list(unit_names(r.clients[0].model)[:p])
        drawn.add(p)
    assert len(drawn) > 1, drawn


def test_random_split_is_seeded_and_uniform_over_the_other_splits():
    """PLayer-FL-Random draws p uniformly from {1, …, L−1} \\ {p*}, reproducibly per seed."""
    draws = [random_split(seed, 5, 2) for seed in range(200)]
    assert draws == [random_split(seed, 5, 2) for seed in range(200)]
    counts = np.bincount(draws, minlength=5)
    assert counts[0] == counts[2] == 0 and counts[1:].sum() == 200
    assert all(40 < counts[p] < 95 for p in (1, 3, 4))  # ≈ 200/3 each


def test_playerfl_random_needs_three_units():
    class TwoUnits(UnitModel):
        units = ("body", "head")

        def __init__(self):
            super().__init__()
            self.body, self.head = nn.Linear(2, 2), nn.Linear(2, 2)

    fake_run = SimpleNamespace(template=TwoUnits(), info={})
    with pytest.raises(ValueError, match="at least 3 layer units"):
        PLayerFLRandom().setup(fake_run)


# -- everything runs, under both evaluation protocols -------------------------------------------
def _check_runs(data, rounds=2, **config_kw):
    tables = {}
    for name in ORDER:
        r = run(data, name, rounds=rounds, config_kw=config_kw)
        t = r.table()
        assert np.isfinite(t["value"]).all(), name
        evaluated = sorted(t.loc[t["split"] == "test", "round"].unique())
        extra = [rounds] if name in ("finetune", "fedbabu") else []
        assert evaluated == list(range(rounds)) + extra, name
        tables[name] = scores(r)
    return tables


def test_all_algorithms_run_on_heart_both_protocols(heart):
    deployed = _check_runs(heart, rounds=1)
    authors = _check_runs(heart, rounds=1, eval_timing="before_aggregation")
    # the server step never touches a personal model: both protocols score the same models
    # FedLAMA deploys the average of the clients' current models, which synchronising leaves as is
    for name in ("local", "pfedme", "ditto", "pfedla", "fedlama"):
        pd.testing.assert_frame_equal(deployed[name], authors[name], check_exact=True)
    for name in ("fedavg", "fedprox"):
        assert not deployed[name].equals(authors[name]), name


def test_all_algorithms_run_on_fmnist(fmnist):
    _check_runs(fmnist, rounds=1)


def probe(cls, **hp):
    """``cls`` with a recorder of what each round uploads, averages, sends back and deploys."""

    class Recorder(cls):
        def setup(self, run):
            super().setup(run)
            self.rounds, self.start = [], {}

        def before_training(self, run, rnd):
            if rnd == 0:  # before anything the server sends (pFedLA's first mixture)
                for client in run.clients:
                    held = {"model": all_params(client.model)}
                    for key in ("personal",):
                        if key in client.state:
                            held[key] = all_params(client.state[key])
                    self.start[client.id] = held
            super().before_training(run, rnd)

        def upload(self, run, client, rnd):
            up = super().upload(run, client, rnd)
            self.sent[client.id] = set(up)
            return up

        def server_step(self, run, rnd):
            self.sent = {}
            trained = [all_params(c.model) for c in run.clients]
            previous = {n: v.clone() for n, v in run.global_params.items()}
            super().server_step(run, rnd)
            after = [all_params(c.model) for c in run.clients]
            self.prepare_deployment(run, rnd)  # FedLAMA forms its global model here
            deployed = [all_params(self.deployed_model(run, c)) for c in run.clients]
            self.rounds.append(
                {
                    "sent": {cid: self.sent.get(cid, set()) for cid in range(len(run.clients))},
                    "trained": trained,
                    "previous": previous,
                    "global": {n: v.clone() for n, v in run.global_params.items()},
                    "after": after,
                    "deployed": deployed,
                }
            )

    Recorder.__name__ = f"{cls.__name__}Recorder"
    return Recorder(**hp)


# which units each algorithm's clients upload, said independently of the algorithm's code
ALL, BODY, NONE = "all", "body", "none"
EXPECTED_UPLOADS = {
    "fedavg": ALL,
    "fedprox": ALL,
    "pfedme": ALL,
    "ditto": ALL,
    "finetune": ALL,
    "fedbabu": BODY,
    "local": NONE,
}


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_round_zero_weights_clients_actually_hold(toy, name):
    """Every client of every algorithm starts round 0 from the same weights (its trained model
    and any personal model), and a different seed gives different ones."""
    reference = probe(ALGORITHMS["fedavg"])
    toy_run(toy, reference, rounds=1)
    init = reference.start[0]["model"]
    rec = probe(ALGORITHMS[name])
    toy_run(toy, rec, rounds=1)
    assert sorted(rec.start) == [0, 1, 2]
    for held in rec.start.values():
        for model in held.values():
            assert params_equal(model, init), name
    if name in ("ditto", "pfedme"):
        assert all("personal" in held for held in rec.start.values())
    other = probe(ALGORITHMS[name])
    toy_run(toy, other, rounds=1, seed=1)
    assert not params_equal(other.start[0]["model"], init)


def check_average(record, clients, sent_names):
    """The server value of each parameter is the training-share-weighted average of the
    trained values of the clients that sent it, renormalised over those clients; a parameter
    nobody sent keeps its previous server value."""
    w = shares(clients)
    for n, value in record["global"].items():
        senders = [cid for cid in range(len(clients)) if n in sent_names[cid]]
        if not senders:
            assert torch.equal(value, record["previous"][n]), n
            continue
        total = sum(w[cid] for cid in senders)
        expected = sum(record["trained"][cid][n] * (w[cid] / total) for cid in senders)
        torch.testing.assert_close(value, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", list(EXPECTED_UPLOADS))
def test_server_averages_by_sample_share_what_was_uploaded(toy, name):
    rec = probe(ALGORITHMS[name])
    r = toy_run(toy, rec, rounds=2)
    model = r.clients[0].model
    units = unit_names(model)
    expected_units = {ALL: units, BODY: units[:-1], NONE: ()}[EXPECTED_UPLOADS[name]]
    expected_names = set(param_names(model, expected_units))
    for record in rec.rounds:
        assert all(sent == expected_names for sent in record["sent"].values()), name
        check_average(record, r.clients, record["sent"])
        for cid, after in enumerate(record["after"]):
            for n, value in after.items():  # what was averaged is sent back, the rest stays
                target = record["global"][n] if n in expected_names else record["trained"][cid][n]
                assert torch.equal(value, target), (name, n)
    if name == "local":
        assert params_equal(r.global_params, rec.start[0]["model"])  # nothing reached it
        assert not params_equal(rec.rounds[-1]["after"][0], rec.rounds[-1]["after"][2])


def test_what_each_algorithm_deploys(toy):
    """Global-model methods deploy the average every client holds; Ditto and pFedMe their
    personal model; Local and PLayer-FL their own (partly local) model."""
    for name in ("fedavg", "fedprox", "fedlp", "finetune", "fedbabu"):
        rec = probe(ALGORITHMS[name])
        r = toy_run(toy, rec, rounds=2)
        for record in rec.rounds:  # (FedBABU's head is never averaged, nor trained)
            for deployed in record["deployed"]:
                assert params_equal(deployed, record["global"]), name
    for name in ("ditto", "pfedme"):
        rec = probe(ALGORITHMS[name])
        r = toy_run(toy, rec, rounds=2)
        for c, deployed in zip(r.clients, rec.rounds[-1]["deployed"], strict=True):
            assert params_equal(deployed, all_params(c.state["personal"]))
            assert not params_equal(deployed, rec.rounds[-1]["global"])
    for name in ("local", "playerfl", "playerfl_random", "pfedla"):
        rec = probe(ALGORITHMS[name])
        toy_run(toy, rec, rounds=2)
        for record in rec.rounds:
            assert all(
                params_equal(d, a) for d, a in zip(record["deployed"], record["after"], strict=True)
            )
            assert not params_equal(record["deployed"][0], record["deployed"][1]), name


# -- FedLP: renormalisation over the senders ------------------------------------------------------
def test_fedlp_renormalises_over_the_clients_that_sent_a_unit(toy):
    rec = probe(FedLP, p=0.5)
    r = toy_run(toy, rec, rounds=4)
    partial = 0
    for record in rec.rounds:
        check_average(record, r.clients, record["sent"])
        for after in record["after"]:  # the full global model goes back to everyone
            assert params_equal(after, record["global"])
        counts = [sum(n in s for s in record["sent"].values()) for n in record["global"]]
        partial += sum(0 < k < len(r.clients) for k in counts)
    assert partial, "no unit was sent by only some clients; pick another p or seed"


def test_fedlp_keep_rate_is_p(toy):
    nothing = probe(FedLP, p=0.0)
    r = toy_run(toy, nothing, rounds=2)
    assert all(not s for record in nothing.rounds for s in record["sent"].values())
    assert params_equal(r.global_params, nothing.start[0]["model"])
    lp = FedLP(p=0.7)
    fake = SimpleNamespace(config=SimpleNamespace(seed=0))
    model = toy_run(toy, "local", rounds=1).clients[0].model
    kept = [
        len(lp.shared_units(fake, SimpleNamespace(id=c, model=model), rnd))
        for c in range(20)
        for rnd in range(50)
    ]
    assert np.mean(kept) / len(unit_names(model)) == pytest.approx(0.7, abs=0.03)


# -- FedProx and Ditto: the proximal anchor -------------------------------------------------------
def penalty_recorder(cls, **hp):
    """``cls`` recording, per local update, the model each round started from and every
    (model trained, penalty) pair handed to ``client.train_epoch``."""

    class PenaltyRecorder(cls):
        def setup(self, run):
            super().setup(run)
            self.calls = []

        def local_update(self, run, client, rnd):
            received = all_params(client.model)
            own, seen = client.train_epoch, []

            def train_epoch(model=None, optimizer=None, penalty=None, epochs=None):
                trained = model if model is not None else client.model
                seen.append((trained, penalty))
                return own(model=model, optimizer=optimizer, penalty=penalty, epochs=epochs)

            client.train_epoch = train_epoch
            try:
                loss = super().local_update(run, client, rnd)
            finally:
                del client.train_epoch
            self.calls.append((client, received, seen))
            return loss

    return PenaltyRecorder(**hp)


def check_proximal(run_, penalty, anchor, coef):
    """``penalty`` is (coef/2)‖θ − anchor‖²: zero at the anchor, coef·δ as gradient at
    anchor + δ (so it pulls towards the anchor, not away, not towards zero)."""
    model = run_.new_model()
    set_params(model, anchor)
    assert float(penalty(model).detach()) == 0.0
    g = torch.Generator().manual_seed(1)
    delta = {n: torch.randn(v.shape, generator=g) for n, v in anchor.items()}
    set_params(model, {n: anchor[n] + delta[n] for n in anchor})
    value = penalty(model)
    expected = 0.5 * coef * sum(float((d**2).sum()) for d in delta.values())
    assert float(value.detach()) == pytest.approx(expected, rel=1e-5)
    grads = torch.autograd.grad(value, list(model.parameters()))
    for (n, _), grad in zip(model.named_parameters(), grads, strict=True):
        torch.testing.assert_close(grad, coef * delta[n], rtol=1e-5, atol=1e-6)


def test_fedprox_pulls_towards_the_model_received_this_round(toy):
    prox = penalty_recorder(FedProx, mu=0.3)
    r = toy_run(toy, prox, rounds=2)
    assert len(prox.calls) == 6
    for client, received, seen in prox.calls:
        ((trained, penalty),) = seen
        assert trained is client.model
        check_proximal(r, penalty, received, 0.3)
    # round 1 starts from the average, which is not the initialisation: the anchor moved
    assert not params_equal(prox.calls[3][1], prox.calls[0][1])


def test_ditto_personal_model_pulls_towards_the_global_model_as_received(toy):
    ditto = penalty_recorder(Ditto, lam=0.4)
    r = toy_run(toy, ditto, rounds=2)
    for client, received, seen in ditto.calls:
        (global_model, none), (personal, penalty) = seen
        assert global_model is client.model and none is None  # w: plain loss
        assert personal is client.state["personal"]
        check_proximal(r, penalty, received, 0.4)  # not the copy just trained
    # the personal model is never overwritten by the server
    rec = probe(Ditto)
    r = toy_run(toy, rec, rounds=2)
    personal = [all_params(c.state["personal"]) for c in r.clients]
    assert all(
        params_equal(p, d) for p, d in zip(personal, rec.rounds[-1]["deployed"], strict=True)
    )


# -- pFedMe: θ towards w (inner), w towards θ (outer), averaging w --------------------------------
class InnerProbe(PFedMe):
    """Records w as received and θ after the K inner steps of a one-batch round."""

    def setup(self, run):
        super().setup(run)
        self.records = []

    def local_update(self, run, client, rnd):
        w = all_params(client.model)
        loss = super().local_update(run, client, rnd)
        self.records.append((client, w, all_params(client.state["personal"])))
        return loss


def test_pfedme_inner_steps_pull_theta_towards_w(toy):
    """With plain gradient steps (inner='sgd'), K = 2, one batch: θ₁ = w − α∇f(w),
    θ₂ = θ₁ − α(∇f(θ₁) + λ(θ₁ − w)): the proximal term pulls θ towards w."""
    lam, alpha = 3.0, 0.05
    me = InnerProbe(lam=lam, K=2, inner="sgd", personal_lr=alpha)
    r = toy_run(toy, me, rounds=2, batch_size=1000)
    for client, w, theta in me.records:
        model = r.new_model()
        set_params(model, w)
        x, y = client.x["train"], client.y["train"]
        for _ in range(2):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            current = all_params(model)
            grads = torch.autograd.grad(loss, list(model.parameters()))
            step = {
                n: current[n] - alpha * (g + lam * (current[n] - w[n]))
                for (n, _), g in zip(model.named_parameters(), grads, strict=True)
            }
            set_params(model, step)
        for n, value in all_params(model).items():
            torch.testing.assert_close(theta[n], value, rtol=0, atol=1e-5)


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_pfedme_server_mixes_with_beta(toy, beta):
    """w ← (1 − β)·w + β·avg(w_i); β = 2 is the paper's accelerated variant, not the average."""
    rec = probe(PFedMe, beta=beta)
    r = toy_run(toy, rec, rounds=2)
    w = shares(r.clients)
    for record in rec.rounds:
        for n, value in record["global"].items():
            avg = sum(w[i] * record["trained"][i][n] for i in range(len(w)))
            expected = (1 - beta) * record["previous"][n] + beta * avg
            torch.testing.assert_close(value, expected, rtol=0, atol=1e-6)


# -- FedLAMA: discrepancy, ordering, intervals ----------------------------------------------------
def lama_with_table(discrepancy, sizes, tau_base=2, phi=2):
    lama = FedLAMA(tau_base=tau_base, phi=phi)
    lama.units = tuple(discrepancy)
    lama.sizes = dict(sizes)
    lama.discrepancy = dict(discrepancy)
    lama.intervals = dict.fromkeys(lama.units, tau_base)
    return lama


@pytest.mark.parametrize(
    ("d", "n", "relaxed"),
    [
        # sorted ascending: b(1) d(2) c(3) a(4), equal sizes; δ = .1, .3, .6 against
        # 1 − λ = .75, .5, .25: the prefix grows until δ first exceeds 1 − λ, at c.
        ({"a": 4.0, "b": 1.0, "c": 3.0, "d": 2.0}, dict.fromkeys("abcd", 10), {"b", "d", "c"}),
        # equal discrepancies: δ = 1 − λ exactly at two units is not "exceeds", so three
        ({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, dict.fromkeys("abcd", 5), {"a", "b", "c"}),
        # only the order matters, not the scale (a total discrepancy below 1 still counts)
        ({"a": 4e-3, "b": 1e-3, "c": 3e-3, "d": 2e-3}, dict.fromkeys("abcd", 10), {"b", "d", "c"}),
        # a big low-discrepancy unit: λ = .9 after it, δ = 90/(90 + 500) ≈ .15 > .1
        ({"big": 1.0, "small": 50.0}, {"big": 90, "small": 10}, {"big"}),
        # the least discrepant unit first, even when listed last; sizes weigh the shares:
        # x(0.5·10 = 5), y(2·40 = 80), z(20): δ = 5/105 < 1 − 10/55, then 85/105 > 1 − 50/55
        ({"y": 2.0, "z": 4.0, "x": 0.5}, {"x": 10, "y": 40, "z": 5}, {"x", "y"}),
    ],
)
def test_fedlama_relaxes_the_least_discrepant_units(d, n, relaxed):
    lama = lama_with_table(d, n)
    lama.adjust_intervals()
    assert lama.intervals == {u: 4 if u in relaxed else 2 for u in d}


def test_fedlama_no_discrepancy_keeps_intervals():
    lama = lama_with_table(dict.fromkeys("abc", 0.0), dict.fromkeys("abc", 3))
    lama.intervals = {"a": 4, "b": 2, "c": 2}
    lama.adjust_intervals()
    assert lama.intervals == {"a": 4, "b": 2, "c": 2}


def test_fedlama_interval_rule():
    lama = lama_with_table(dict.fromkeys("abc", 1.0), dict.fromkeys("abc", 1))
    lama.intervals = {"a": 1, "b": 2, "c": 4}
    assert [lama.due(r) for r in range(8)] == [
        ("a",),
        ("a", "b"),
        ("a",),
        ("a", "b", "c"),
        ("a",),
        ("a", "b"),
        ("a",),
        ("a", "b", "c"),
    ]


def test_fedlama_resets_intervals_every_phi_tau_rounds(toy):
    """Lee et al. (2023): the intervals are adjusted once every φτ' iterations (here rounds),
    so with τ' = φ = 2 the logged intervals take effect at rounds 0, 4 and 8."""
    table = toy_run(toy, "fedlama", rounds=8).table()
    logged = table[table["metric"].str.startswith("interval/")]
    assert sorted(set(logged["round"])) == [0, 4, 8]
    assert set(logged["split"]) == {"server"} and set(logged["client"]) == {SERVER}


class LamaDiscrepancyProbe(FedLAMA):
    """Records, at each synchronisation, the discrepancy computed from the clients' uploads."""

    def setup(self, run):
        super().setup(run)
        self.checks, self.adjusted = [], []

    def aggregate(self, run, rnd, uploads):
        intervals = dict(self.intervals)
        updated = super().aggregate(run, rnd, uploads)
        server = dict(run.global_params)
        self.checks.append((rnd, intervals, uploads, server, dict(self.discrepancy)))
        return updated

    def adjust_intervals(self):
        self.adjusted.append(dict(self.discrepancy))
        super().adjust_intervals()


def test_fedlama_measures_size_and_interval_normalised_discrepancy(toy):
    """d_l = Σ_i s_i ‖u_l − x_l^i‖² / (τ_l · n_l), s_i the sample shares, at every synchronisation;
    intervals are reset every φτ' rounds."""
    lama = LamaDiscrepancyProbe(tau_base=1, phi=2)
    r = toy_run(toy, lama, rounds=6)
    w = shares(r.clients)
    model = r.clients[0].model
    sizes = {u: sum(p.numel() for p in unit_params(model, u).values()) for u in unit_names(model)}
    measured_at = []
    for _, intervals, uploads, server, discrepancy in lama.checks:
        for u in {unit_of(n) for up in uploads.values() for n in up}:
            names = param_names(model, [u])
            d = sum(
                w[cid] * sum(float(((server[n] - up[n]) ** 2).sum()) for n in names)
                for cid, up in uploads.items()
            )
            assert discrepancy[u] == pytest.approx(d / (intervals[u] * sizes[u]), rel=1e-5)
            measured_at.append(intervals[u])
    assert set(measured_at) == {1, 2}  # units synchronised with either interval were checked
    # intervals were reset after rounds 1, 3, 5 (every φτ' = 2 rounds): logged from 2, 4, 6
    logged = r.table().query("metric.str.startswith('interval/')")
    assert sorted(set(logged["round"])) == [0, 2, 4, 6]
    assert len(lama.adjusted) == 3


# -- pFedLA: each client receives its own mixture; its copy moves by its own Δ --------------------
class LAMixProbe(PFedLA):
    def setup(self, run):
        super().setup(run)
        self.received, self.copy_checks = [], []

    def local_update(self, run, client, rnd):
        own_train = client.train_epoch

        def train_epoch(**kw):  # record the model the client trains from
            self.received.append((client.id, all_params(client.model), self._expected(client.id)))
            return own_train(**kw)

        client.train_epoch = train_epoch
        try:
            return super().local_update(run, client, rnd)
        finally:
            del client.train_epoch

    def _expected(self, cid):
        """Σ_j α_ij[unit] θ_j computed here, parameter by parameter."""
        with torch.no_grad():
            alpha = self.alphas(cid)
            return {
                n: sum(alpha[unit_of(n)][j] * copy[n] for j, copy in enumerate(self.copies))
                for n in self.copies[0]
            }

    def server_step(self, run, rnd):
        old = [{n: v.clone() for n, v in copy.items()} for copy in self.copies]
        trained = {c.id: all_params(c.model) for c in run.clients}
        received = {cid: got for cid, got, _ in self.received[-len(run.clients) :]}
        super().server_step(run, rnd)
        for cid, copy in enumerate(self.copies):
            for n, value in copy.items():
                expected = old[cid][n] + (trained[cid][n] - received[cid][n])
                self.copy_checks.append(bool(torch.allclose(value, expected, atol=1e-6)))


def test_pfedla_mixes_with_the_clients_own_weights_and_updates_its_own_copy(toy):
    la = LAMixProbe(embedding_dim=4, hidden_dim=8)
    r = toy_run(toy, la, rounds=3)
    assert len(la.received) == 9
    for _, got, expected in la.received:
        for n in got:
            torch.testing.assert_close(got[n], expected[n], rtol=0, atol=1e-6)
    assert la.copy_checks and all(la.copy_checks)
    # round 0 mixes identical copies: every client trains from (nearly) the initialisation
    init = all_params(r.new_model())
    for _, got, _ in la.received[:3]:
        for n in got:
            torch.testing.assert_close(got[n], init[n], rtol=0, atol=1e-6)
    # the hypernetworks differ per client, so later mixtures differ per client
    assert not params_equal(la.received[-1][1], la.received[-2][1])


def test_pfedla_hypernetwork_is_an_mlp_with_a_softmax_over_clients():
    """The per-unit hypernetwork (module docstring): α_u = softmax(W₂ ReLU(W₁ e + b₁) + b₂),
    one weight per client; computed here by hand from its parameters."""
    torch.manual_seed(0)
    hn = HyperNetwork(("a", "b"), num_clients=3, embedding_dim=4, hidden_dim=6)
    alphas = hn()
    for u in ("a", "b"):
        first, last = hn.mlps[u][0], hn.mlps[u][-1]
        hidden = torch.clamp(first.weight @ hn.embedding + first.bias, min=0)
        logits = last.weight @ hidden + last.bias
        expected = torch.exp(logits) / torch.exp(logits).sum()
        torch.testing.assert_close(alphas[u], expected)
        assert (first.weight @ hn.embedding + first.bias).min() < 0  # the ReLU matters here


def test_pfedla_hypernetwork_sizes(toy):
    """Reference §1.2 sizes per dataset, (32, 64) for others, and explicit overrides."""
    la = PFedLA()
    toy_run(toy, la, rounds=1)
    mlp = la.hypernets[0].mlps["fc1"]
    assert la.hypernets[0].embedding.shape == (32,) and mlp[0].out_features == 64
    assert mlp[-1].out_features == len(toy.clients) and len(la.hypernets) == len(toy.clients)
    la = PFedLA(embedding_dim=5, hidden_dim=7)
    toy_run(toy, la, rounds=1)
    assert (
        la.hypernets[1].embedding.shape == (5,) and la.hypernets[1].mlps["fc4"][0].out_features == 7
    )
    assert declared_sizes("heart") == (16, 16) and declared_sizes("fmnist_alpha0.1") == (32, 64)
    as_heart = FederatedData("heart", toy.clients, 3, (4,), ["a", "b", "c"], model="mlp")
    la = PFedLA()
    toy_run(as_heart, la, rounds=1)
    assert (
        la.hypernets[0].embedding.shape == (16,)
        and la.hypernets[0].mlps["fc1"][0].out_features == 16
    )


def test_pfedla_hypernetworks_are_seeded_by_the_run_seed(toy):
    """Same seed, same hypernetworks; another run seed, other ones (no fixed global seed)."""
    embeddings = []
    for seed in (0, 0, 1):
        la = PFedLA()
        toy_run(toy, la, rounds=1, seed=seed)
        embeddings.append(la.hypernets[0].embedding.detach().clone())
    assert torch.equal(embeddings[0], embeddings[1])
    assert not torch.equal(embeddings[0], embeddings[2])


# -- PLayer-FL: the split comes from the trained clients' share-weighted sensitivities ------------
class SplitProbe(PLayerFL):
    def server_step(self, run, rnd):
        if rnd == 0:
            w = shares(run.clients)
            per_client = [
                federation_sensitivity(c.model, c.x["train"], c.y["train"]) for c in run.clients
            ]
            units = unit_names(run.clients[0].model)
            self.expected_s = [
                sum(wi * s[u] for wi, s in zip(w, per_client, strict=True)) for u in units
            ]
            self.per_client = per_client
        super().server_step(run, rnd)


@pytest.mark.parametrize("threshold", [0.0, 0.5, 1.0, 3.0])
def test_playerfl_split_from_trained_models_sensitivities(toy, threshold):
    sp = SplitProbe(threshold=threshold)
    r = toy_run(toy, sp, rounds=2)
    units = unit_names(r.clients[0].model)
    np.testing.assert_allclose([r.info["sensitivity"][u] for u in units], sp.expected_s, rtol=1e-6)
    assert r.info["split_p"] == choose_split(sp.expected_s, threshold)
    logged = r.table().query("metric.str.startswith('sensitivity/') and client >= 0")
    for cid, s in enumerate(sp.per_client):
        mine = logged[logged["client"] == cid].set_index("metric")["value"]
        assert [mine[f"sensitivity/{u}"] for u in units] == pytest.approx([s[u] for u in units])
    rec = probe(PLayerFL, threshold=threshold)
    toy_run(toy, rec, rounds=2)
    federated = set(param_names(r.clients[0].model, units[: r.info["split_p"]]))
    for record in rec.rounds:
        assert all(sent == federated for sent in record["sent"].values())
        check_average(record, r.clients, record["sent"])


def test_playerfl_split_reacts_to_the_threshold(toy):
    splits = {
        t: toy_run(toy, PLayerFL(threshold=t), rounds=1).info["split_p"] for t in (0.0, 100.0)
    }
    assert splits[0.0] < splits[100.0] == 3


# -- FineTune and FedBABU: what is adapted after the last round -----------------------------------
class FinishProbe:
    def finish_client(self, run, client):
        if client.id == 0:
            self.before, self.after, self.deployed, self.steps = [], [], [], []
            self.global_before = {n: v.clone() for n, v in run.global_params.items()}
        self.before.append(all_params(client.model))
        steps = self._steps(client)
        super().finish_client(run, client)
        self.steps.append(self._steps(client) - steps)
        self.after.append(all_params(client.model))
        self.deployed.append(all_params(self.deployed_model(run, client)))

    @staticmethod
    def _steps(client):
        state = client.optimizer.state
        return int(max((s["step"] for s in state.values()), default=0))


@pytest.mark.parametrize("epochs", [1, 2])
def test_finetune_adapts_the_final_global_model_locally(toy, epochs):
    ft = type("FT", (FinishProbe, FineTune), {})(finetune_epochs=epochs)
    r = toy_run(toy, ft, rounds=2)
    for c, before, after, deployed, steps in zip(
        r.clients, ft.before, ft.after, ft.deployed, ft.steps, strict=True
    ):
        assert params_equal(before, ft.global_before)  # starts from the final global model
        assert not params_equal(after, before) and params_equal(deployed, after)
        assert steps == epochs * -(-c.n_train // r.config.batch_size)
    assert sorted(set(r.table().query("split == 'test'")["round"])) == [0, 1, 2]
    tuned = r.table().query("split == 'train' and metric == 'loss' and round == 2")
    assert tuned["client"].tolist() == [0, 1, 2]  # the fine-tuning epoch's loss, per client
    assert tuned["n_samples"].tolist() == [c.n_train for c in r.clients]
    assert (tuned["value"] > 0).all()


@pytest.mark.parametrize("mode", ["full", "head"])
def test_fedbabu_fine_tunes_what_it_says(toy, mode):
    babu = type("BABU", (FinishProbe, FedBABU), {})(finetune=mode)
    r = toy_run(toy, babu, rounds=2)
    model = r.clients[0].model
    head = set(param_names(model, unit_names(model)[-1:]))
    init = all_params(r.new_model())
    for before, after, deployed in zip(babu.before, babu.after, babu.deployed, strict=True):
        assert all(torch.equal(before[n], init[n]) for n in head)  # frozen during federation
        assert all(not torch.equal(after[n], before[n]) for n in head)
        body_moved = [not torch.equal(after[n], before[n]) for n in after if n not in head]
        assert all(body_moved) if mode == "full" else not any(body_moved)
        assert params_equal(deployed, after)


# -- Prefix federation: the split sweep's algorithm ----------------------------------------------
def test_prefix_names_round_trip_and_only_exact_names_parse():
    algo = get_algorithm("prefix_p2")
    assert algo.p == algo.split == 2 and algo.name == "prefix_p2"
    assert algo.hyperparameters() == {"p": 2}
    assert get_algorithm("prefix", p=3).name == "prefix_p3"
    assert parse_prefix_name("prefix_p12") == 12
    for name in ("prefix", "prefix_p", "prefix_px", "xprefix_p1", "prefix_p1x", "prefix_p-1"):
        assert parse_prefix_name(name) is None, name
        assert not is_algorithm(name), name
    assert is_algorithm("prefix_p0") and is_algorithm("fedavg")


@pytest.mark.parametrize(
    ("hp", "message"),
    [
        ({}, r"prefix needs the split p \(number of federated units, 0..L\)"),
        ({"p": -1}, r"p must be an integer in 0..L .* got -1"),
        ({"p": 1.5}, r"p must be an integer in 0..L .* got 1.5"),
        ({"p": True}, r"p must be an integer in 0..L .* got True"),
    ],
)
def test_prefix_rejects_a_missing_or_bad_split(hp, message):
    with pytest.raises(ValueError, match=message):
        Prefix(**hp)


def test_prefix_beyond_the_model_names_the_valid_range(toy):
    with pytest.raises(ValueError, match=r"p = 5 is outside the valid range 0..4 for 'toy'"):
        toy_run(toy, get_algorithm("prefix_p5"), rounds=1)


def test_prefix_p0_is_local_and_p_all_is_fedavg(toy, fedavg_toy):
    """Federating no unit is Local, federating all L units is FedAvg (bit for bit)."""
    n_units = len(unit_names(fedavg_toy.clients[0].model))
    local = toy_run(toy, "local")
    pd.testing.assert_frame_equal(
        scores(toy_run(toy, "prefix_p0")), scores(local), check_exact=True
    )
    full = toy_run(toy, f"prefix_p{n_units}")
    pd.testing.assert_frame_equal(scores(full), scores(fedavg_toy), check_exact=True)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_prefix_averages_exactly_units_1_to_p_by_sample_share(toy, p):
    rec = probe(Prefix, p=p)
    r = toy_run(toy, rec, rounds=2)
    units = unit_names(r.clients[0].model)
    federated = set(param_names(r.clients[0].model, units[:p]))
    assert r.info["split_p"] == p and r.info["federated_units"] == list(units[:p])
    assert r.info["hyperparameters"] == {"p": p} and r.algorithm_name == f"prefix_p{p}"
    for record in rec.rounds:
        assert all(sent == federated for sent in record["sent"].values())
        check_average(record, r.clients, record["sent"])
        for cid, after in enumerate(record["after"]):  # the averaged prefix comes back
            for n, value in after.items():
                target = record["global"][n] if n in federated else record["trained"][cid][n]
                assert torch.equal(value, target), (p, n)


def test_prefix_records_the_rules_split_and_equals_playerfl_there(toy):
    """Every sweep run logs the split PLayer-FL's rule would choose on the same first-epoch
    models, and the prefix run at that split is the PLayer-FL run."""
    playerfl = toy_run(toy, "playerfl")
    rule_p = playerfl.info["split_p"]
    for p in {rule_p, rule_p % 3 + 1}:
        r = toy_run(toy, get_algorithm("prefix", p=p))
        assert r.info["rule_split_p"] == rule_p and r.info["split_p"] == p
        table = r.table()
        server = table[table["client"] == SERVER]
        assert server.set_index("metric").loc[RULE_METRIC, "value"] == rule_p
        assert server.set_index("metric").loc["split_p", "value"] == p
    at_rule = toy_run(toy, get_algorithm("prefix", p=rule_p))
    pd.testing.assert_frame_equal(scores(at_rule), scores(playerfl), check_exact=True)


# -- pFedMe: the ranges of its hyper-parameters, the personal learning rate, the reported loss --
def pfedme_setup(lr=0.01, **hyperparameters):
    """pFedMe's checks before round 0, on a run without clients."""
    me = PFedMe(**hyperparameters)
    me.setup(SimpleNamespace(config=SimpleNamespace(lr=lr), clients=[]))
    return me


def test_pfedme_hyperparameter_ranges():
    """K ≥ 1 (K = 1 is one inner step); λ ≥ 0; β, η and the personal lr strictly positive."""
    pfedme_setup(K=1)
    pfedme_setup(lam=0.0, outer="adam")  # λ = 0: θ fits the client alone, no envelope step
    for option in ("personal_lr", "beta", "eta"):
        with pytest.raises(ValueError, match=rf"{option}=0\.0 is outside the valid range"):
            PFedMe(**{option: 0.0})
    with pytest.raises(ValueError, match=r"K=0 is outside the valid range"):
        PFedMe(K=0)


@pytest.mark.parametrize(("eta", "lam"), [(0.125, 16.0), (0.25, 10.0)])
def test_pfedme_envelope_step_bound_is_open(eta, lam):
    """Plain gradient descent on the λ-smooth envelope needs ηλ < 2: ηλ = 2 oscillates around θ,
    larger diverges; both are refused before round 0, ηλ just below 2 is accepted."""
    with pytest.raises(DivergenceError, match="eta·lam"):
        pfedme_setup(eta=eta, lam=lam)
    pfedme_setup(eta=eta, lam=1.99 / eta)


def test_pfedme_envelope_step_with_lam_zero_is_refused_with_a_message():
    """λ = 0 makes the envelope step w ← w − ηλ(w − θ) a no-op: refused, with a message (not a
    division by zero while writing it)."""
    with pytest.raises(DivergenceError, match="With lam = 0 the envelope step never moves w"):
        pfedme_setup(eta=0.01, lam=0.0)


def test_pfedme_adam_outer_step_refuses_eta():
    """outer='adam' steps with the run's learning rate: an explicit eta would be ignored."""
    with pytest.raises(ValueError, match="eta=0.01 is the step of outer='sgd'"):
        pfedme_setup(outer="adam", eta=0.01)


def test_pfedme_personal_adam_takes_personal_lr(toy):
    """inner='adam': the personal model's Adam steps with personal_lr, not the run's lr."""
    r = toy_run(toy, PFedMe(personal_lr=0.003), rounds=1, lr=0.01)
    for c in r.clients:
        group = c.state["personal_optimizer"].param_groups[0]
        assert isinstance(c.state["personal_optimizer"], torch.optim.Adam)
        assert group["lr"] == 0.003


class LossProbe(PFedMe):
    """Records the loss each local update reports and the model w it started from."""

    def setup(self, run):
        super().setup(run)
        self.records = []

    def local_update(self, run, client, rnd):
        w = all_params(client.model)
        self.records.append((client, w, super().local_update(run, client, rnd)))
        return self.records[-1][2]


def test_pfedme_reports_the_sample_weighted_mean_training_loss(toy):
    """With steps too small to move θ or w (1e-30), every mini-batch's loss is the received
    model's, so the reported loss, the per-sample mean over the epoch's mini-batches, is the
    received model's mean training loss, whatever the batching."""
    me = LossProbe(inner="sgd", personal_lr=1e-30, eta=1e-30)
    r = toy_run(toy, me, rounds=1, batch_size=8)
    for client, w, reported in me.records:
        model = r.new_model()
        set_params(model, w)
        with torch.no_grad():
            expected = float(client.loss(model(client.x["train"]), client.y["train"]))
        assert reported == pytest.approx(expected, rel=1e-5)


class BatchLossProbe(PFedMe):
    """Records every mini-batch loss the inner steps compute, with its batch size."""

    def setup(self, run):
        super().setup(run)
        self.records = []

    def local_update(self, run, client, rnd):
        seen, task_loss = [], client.loss

        def recording_loss(out, y):
            value = task_loss(out, y)
            seen.append((value.detach().clone(), len(y)))
            return value

        client.loss = recording_loss
        try:
            reported = super().local_update(run, client, rnd)
        finally:
            client.loss = task_loss
        self.records.append((seen[self.K - 1 :: self.K], reported))  # each batch's last step
        return reported


def test_pfedme_accumulates_its_training_loss_in_float64(toy):
    """The reported loss is Σ nᵦ·lossᵦ / Σ nᵦ over the batches' last inner step, summed in
    float64 (as the stored results were computed), bit for bit; a float32 sum differs."""
    me = BatchLossProbe()
    toy_run(toy, me, rounds=2)
    float32_differs = False
    for batches, reported in me.records:
        total, total32, n = 0.0, torch.zeros(()), 0
        for loss, size in batches:
            total += float(loss) * size
            total32 += loss * size
            n += size
        assert reported == total / n
        float32_differs |= float(total32 / n) != total / n
    assert float32_differs  # the test can tell the two sums apart


# -- hyper-parameter ranges: bools, infinities and the bounds each algorithm declares ------------
@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("fedprox", "mu", True),  # a bool is not a number here, though Python says it is
        ("fedprox", "mu", "0.1"),
        ("fedprox", "mu", float("inf")),
        ("fedprox", "mu", float("nan")),
        ("fedlp", "p", True),
        ("fedlp", "p", 1.5),
        ("fedlp", "p", float("nan")),
        ("pfedla", "hn_lr", 0.0),  # a hypernetwork that never learns is refused
        ("pfedla", "hn_lr", float("inf")),
        ("playerfl", "threshold", -0.1),
        ("playerfl_random", "threshold", -0.1),
    ],
)
def test_out_of_range_hyperparameters_are_refused_naming_the_option(name, key, value):
    with pytest.raises(ValueError, match=rf"{name}: hyper-parameter {key}=.* outside the valid"):
        get_algorithm(name, **{key: value})


@pytest.mark.parametrize(
    ("name", "hp"),
    [
        ("fedlp", {"p": 0}),
        ("fedlp", {"p": 1}),
        ("pfedla", {"hn_lr": 1e-9, "embedding_dim": 1, "hidden_dim": 1}),
        ("playerfl", {"threshold": 0.5}),
        ("playerfl_random", {"threshold": 0}),
        ("playerfl_random", {"threshold": 0.5}),
    ],
)
def test_hyperparameters_at_the_edges_of_their_ranges_are_accepted(name, hp):
    assert get_algorithm(name, **hp).hyperparameters() == {**DEFAULTS[name], **hp}


def test_a_named_prefix_run_refuses_unknown_hyperparameters():
    """``prefix_p2`` with a misspelt option must fail, not silently drop it."""
    with pytest.raises(ValueError, match=r"prefix: unknown hyper-parameters \['mu'\]"):
        get_algorithm("prefix_p2", mu=0.1)


# -- the rows each algorithm adds to the results table (the contract with the analysis) ----------
ENGINE_TRAIN_METRICS = ("n_samples", "weight")


def algorithm_rows(run_) -> pd.DataFrame:
    """Every row but the engine's own (val/test scores, n_samples, weight, the round's training
    loss of rounds 0..R−1): what the algorithm itself logged."""
    t = run_.table()
    engine = t["split"].isin(["val", "test"]) | t["metric"].isin(ENGINE_TRAIN_METRICS)
    engine |= (t["split"] == "train") & (t["metric"] == "loss") & (t["round"] < run_.config.rounds)
    return t[~engine].reset_index(drop=True)


def keyed(rows: pd.DataFrame) -> dict:
    """(client, round, split, metric, n_samples) -> value, one entry per row."""
    keys = list(
        zip(
            rows["client"],
            rows["round"],
            rows["split"],
            rows["metric"],
            rows["n_samples"],
            strict=True,
        )
    )
    assert len(set(keys)) == len(keys), "a fact was logged twice"
    return dict(zip(keys, rows["value"], strict=True))


def sensitivity_rows(run_) -> dict:
    """PLayer-FL's round-0 sensitivity rows: each client's own (with its sample count), then the
    server's average (no samples), one per unit."""
    units = unit_names(run_.clients[0].model)
    rows = {}
    for c in run_.clients:
        for u in units:
            rows[(c.id, 0, "train", f"sensitivity/{u}", c.n_train)] = None
    for u in units:
        rows[(SERVER, 0, "server", f"sensitivity/{u}", 0)] = run_.info["sensitivity"][u]
    return rows


def check_rows(got: dict, expected: dict):
    """Same keys; the values given (not None) match exactly."""
    assert sorted(got, key=str) == sorted(expected, key=str)
    for key, value in expected.items():
        if value is not None:
            assert got[key] == pytest.approx(value, rel=1e-12), key


def test_ditto_logs_the_global_models_training_loss(toy, fedavg_toy):
    """Ditto's global model trains exactly as FedAvg's, so its ``loss_global`` rows are FedAvg's
    training-loss rows, per client and round, with the client's sample count."""
    r = toy_run(toy, "ditto")
    fedavg = fedavg_toy.table().query("split == 'train' and metric == 'loss'")
    expected = {
        (c, rnd, "train", "loss_global", n): v
        for c, rnd, n, v in zip(
            fedavg["client"], fedavg["round"], fedavg["n_samples"], fedavg["value"], strict=True
        )
    }
    assert len(expected) == 2 * len(toy.clients)
    check_rows(keyed(algorithm_rows(r)), expected)


def test_fedlp_logs_how_many_units_each_client_kept(toy):
    rec = probe(FedLP, p=0.5)
    r = toy_run(toy, rec, rounds=3)
    expected = {}
    for rnd, record in enumerate(rec.rounds):
        for c in r.clients:
            kept = {unit_of(n) for n in record["sent"][c.id]}
            expected[(c.id, rnd, "train", "kept_units", c.n_train)] = len(kept)
    assert len(set(expected.values())) > 1  # not one constant count
    check_rows(keyed(algorithm_rows(r)), expected)


def test_playerfl_logs_the_sensitivities_and_its_split(toy):
    r = toy_run(toy, "playerfl")
    expected = sensitivity_rows(r) | {(SERVER, 0, "server", "split_p", 0): r.info["split_p"]}
    check_rows(keyed(algorithm_rows(r)), expected)


def test_playerfl_random_logs_both_splits(toy):
    r = toy_run(toy, "playerfl_random")
    assert r.info["split_p"] != r.info["playerfl_split_p"]
    expected = sensitivity_rows(r) | {
        (SERVER, 0, "server", "playerfl_split_p", 0): r.info["playerfl_split_p"],
        (SERVER, 0, "server", "split_p", 0): r.info["split_p"],
    }
    check_rows(keyed(algorithm_rows(r)), expected)
    assert r.info["federated_units"] == list(unit_names(r.clients[0].model)[: r.info["split_p"]])


def test_prefix_logs_the_rules_split_and_its_own(toy):
    r = toy_run(toy, "prefix_p1")
    expected = sensitivity_rows(r) | {
        (SERVER, 0, "server", RULE_METRIC, 0): r.info["rule_split_p"],
        (SERVER, 0, "server", "split_p", 0): 1,
    }
    check_rows(keyed(algorithm_rows(r)), expected)


@pytest.mark.parametrize("epochs", [1, 2])
def test_fedbabu_logs_and_scores_the_fine_tuning_round(toy, epochs):
    """Round R is the fine-tuning: ``finetune_epochs`` epochs with a fresh optimiser, its
    training loss logged per client, and the fine-tuned models scored."""
    rounds = 2
    babu = FedBABU(finetune_epochs=epochs)
    r = toy_run(toy, babu, rounds=rounds)
    rows = keyed(algorithm_rows(r))
    assert sorted(rows) == [(c.id, rounds, "train", "loss", c.n_train) for c in r.clients]
    assert all(v > 0 for v in rows.values())
    assert sorted(set(r.table().query("split == 'test'")["round"])) == [0, 1, 2]
    for c in r.clients:
        steps = int(max(s["step"] for s in c.optimizer.state.values()))
        assert steps == epochs * -(-c.n_train // r.config.batch_size)


class AlphaProbe(PFedLA):
    """Records the hypernetworks' weights α after each server step."""

    def setup(self, run):
        super().setup(run)
        self.after_step = []

    def server_step(self, run, rnd):
        super().server_step(run, rnd)
        with torch.no_grad():
            self.after_step.append({c: self.alphas(c) for c in range(len(run.clients))})


def test_pfedla_records_each_clients_weights_after_the_step(toy):
    la = AlphaProbe()
    r = toy_run(toy, la, rounds=2)
    recorded = r.info["pfedla_alpha"]
    units = unit_names(r.clients[0].model)
    assert sorted(recorded) == [0, 1, 2]
    for cid, per_unit in recorded.items():
        assert list(per_unit) == list(units)
        for u, alpha in per_unit.items():
            assert alpha == la.after_step[-1][cid][u].tolist()
            assert len(alpha) == len(toy.clients) and sum(alpha) == pytest.approx(1)
    assert recorded[0] != recorded[1]


# -- the interface: every hook is told the run and the round it acts in ----------------------
def hook_recorder(cls, **hp):
    """``cls`` recording the (run, round) each hook receives, under the round being stepped."""

    class HookRecorder(cls):
        def setup(self, run):
            super().setup(run)
            self.calls, self.stepping = [], None

        def _seen(self, hook, run, rnd):
            self.calls.append((hook, run, rnd, self.stepping))

        def local_update(self, run, client, rnd):
            self.stepping = rnd
            self._seen("local_update", run, rnd)
            return super().local_update(run, client, rnd)

        def upload(self, run, client, rnd):
            self._seen("upload", run, rnd)
            return super().upload(run, client, rnd)

        def shared_units(self, run, client, rnd):
            self._seen("shared_units", run, rnd)
            return super().shared_units(run, client, rnd)

        def aggregate(self, run, rnd, uploads):
            self._seen("aggregate", run, rnd)
            return super().aggregate(run, rnd, uploads)

        def distribute(self, run, rnd, updated):
            self._seen("distribute", run, rnd)
            return super().distribute(run, rnd, updated)

    HookRecorder.__name__ = f"{cls.__name__}HookRecorder"
    return HookRecorder(**hp)


@pytest.mark.parametrize("name", [*ALGORITHMS, "prefix_p2"])
def test_every_hook_receives_the_run_and_the_current_round(toy, name):
    cls, hp = (Prefix, {"p": 2}) if name == "prefix_p2" else (ALGORITHMS[name], {})
    rec = hook_recorder(cls, **hp)
    r = toy_run(toy, rec, rounds=2)
    assert rec.calls
    for hook, run_, rnd, stepping in rec.calls:
        assert run_ is r and rnd == stepping, (name, hook, rnd, stepping)
    hooks = {hook for hook, *_ in rec.calls}
    if name != "pfedla":  # pFedLA's server works on the clients' updates, not uploads
        assert {"upload", "shared_units"} <= hooks, (name, hooks)
    if name not in ("local", "pfedla"):
        assert {"aggregate", "distribute"} <= hooks, (name, hooks)


# -- models with few units: PLayer-FL-Random needs three, the prefix sweep's rule two -----------
class NUnitNet(UnitModel):
    """A chain of ``n`` linear units (the model zoo's signature), for the unit-count edges."""

    n = 3

    def __init__(self, num_classes, input_shape, width=1.0):
        super().__init__()
        self.units = tuple(f"l{i}" for i in range(1, self.n + 1))
        sizes = [input_shape[0]] + [6] * (self.n - 1) + [num_classes]
        for i, u in enumerate(self.units):
            setattr(self, u, nn.Linear(sizes[i], sizes[i + 1]))


def with_units(monkeypatch, toy, n: int) -> FederatedData:
    """The toy federation on an ``n``-unit chain model."""
    monkeypatch.setitem(MODELS, "chain", type(f"Chain{n}", (NUnitNet,), {"n": n}))
    return FederatedData("toy", toy.clients, 3, (4,), ["a", "b", "c"], model="chain")


def test_playerfl_random_runs_on_three_units(toy, monkeypatch):
    r = toy_run(with_units(monkeypatch, toy, 3), "playerfl_random", rounds=1)
    assert len(unit_names(r.clients[0].model)) == 3
    assert r.info["split_p"] in (1, 2) and r.info["split_p"] != r.info["playerfl_split_p"]


@pytest.mark.parametrize(("n_units", "has_rule"), [(1, False), (2, True), (3, True)])
def test_prefix_records_the_rules_split_from_two_units_on(toy, monkeypatch, n_units, has_rule):
    """The rule needs two units; a sweep run on a two-unit model still records it."""
    r = toy_run(with_units(monkeypatch, toy, n_units), get_algorithm("prefix", p=1), rounds=1)
    assert ("rule_split_p" in r.info) == has_rule
    logged = r.table().query("client == @SERVER")["metric"].tolist()
    assert (RULE_METRIC in logged) == has_rule and "split_p" in logged
