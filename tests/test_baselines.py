"""The ten baselines (issue 3): each one's defining behaviour, on real data (heart, digits, fmnist).

Reductions prove the shared machinery: FedProx(μ=0), FedLP(p=1) and FedLAMA(τ'=φ=1) must be
FedAvg bit for bit; Ditto(λ=0) must be Local (personal) and FedAvg (global). The rest checks the
one thing each algorithm is about, through small subclasses that record what happens.
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import data_prep
from playerfl_core.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.algorithms.fedbabu import FedBABU
from playerfl_core.algorithms.fedlama import FedLAMA
from playerfl_core.algorithms.fedlp import FedLP
from playerfl_core.algorithms.pfedla import PFedLA
from playerfl_core.algorithms.pfedme import PFedMe
from playerfl_core.algorithms.playerfl_random import PLayerFLRandom
from playerfl_core.engine import run_federated
from playerfl_core.models import UnitModel
from playerfl_core.profiles import make_config
from playerfl_core.units import get_params, param_names, unit_names

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
        return data_prep.load("fmnist", profile="quick", seed=0, samples_per_client=100)
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


# -- registry ---------------------------------------------------------------------------------
def test_registry_order_and_hyperparameters():
    assert list(ALGORITHMS) == ORDER
    assert get_algorithm("fedprox", mu=0.5).mu == 0.5
    assert get_algorithm("pfedme").hyperparameters() == {
        "lam": 15.0,
        "K": 5,
        "personal_lr": None,
        "beta": 1.0,
        "eta": None,
    }
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        get_algorithm("ditto", mu=1)
    base = get_algorithm("fedavg").deploys
    for name in ORDER:
        if name not in ("fedavg", "fedprox", "fedlp"):
            assert get_algorithm(name).deploys != base, name


# -- reductions to FedAvg / Local ---------------------------------------------------------------
@pytest.fixture(scope="module")
def fedavg_digits(digits):
    return run(digits, "fedavg")


@pytest.mark.parametrize(
    ("name", "hp"),
    [("fedprox", {"mu": 0.0}), ("fedlp", {"p": 1.0}), ("fedlama", {"tau_base": 1, "phi": 1})],
)
def test_reductions_reproduce_fedavg_exactly(digits, fedavg_digits, name, hp):
    r = run(digits, name, **hp)
    pd.testing.assert_frame_equal(scores(r), scores(fedavg_digits), check_exact=True)
    assert params_equal(r.global_params, fedavg_digits.global_params)


def test_reductions_are_not_vacuous(digits, fedavg_digits):
    """With their default hyper-parameters the three methods do differ from FedAvg."""
    for name in ("fedprox", "fedlp", "fedlama"):
        assert not scores(run(digits, name)).equals(scores(fedavg_digits)), name


def test_ditto_without_pull_is_local_and_fedavg(digits, fedavg_digits):
    ditto = run(digits, "ditto", lam=0.0)
    local = run(digits, "local")
    pd.testing.assert_frame_equal(scores(ditto), scores(local), check_exact=True)
    assert params_equal(ditto.global_params, fedavg_digits.global_params)
    # with its default pull the personal models are no longer Local's
    assert not scores(run(digits, "ditto")).equals(scores(local))


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


def test_fedbabu_head_stays_at_initialisation(heart):
    babu = BabuProbe()
    r = run(heart, babu, rounds=3)
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


def test_fedlp_unit_kept_by_nobody_is_unchanged(heart):
    lp = LPProbe(p=0.4)
    run(heart, lp, rounds=4)
    assert lp.nobody, "no unit was dropped by every client; pick another p or seed"
    assert all(lp.nobody)
    assert not any(lp.somebody)


def test_fedlp_coins_are_seeded(heart):
    a, b = run(heart, "fedlp", rounds=2), run(heart, "fedlp", rounds=2)
    pd.testing.assert_frame_equal(a.table(), b.table(), check_exact=True)


# -- FedLAMA ----------------------------------------------------------------------------------
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


def test_fedlama_unsynchronised_units_keep_local_values(heart):
    lama = LamaProbe(tau_base=1, phi=2)
    r = run(heart, lama, rounds=6)
    assert lama.synced and lama.unsynced
    intervals = r.table().query("metric.str.startswith('interval/')")
    assert set(intervals["value"]) == {1.0, 2.0}


def test_fedlama_default_skips_round_zero(heart):
    lama = LamaProbe()
    run(heart, lama, rounds=2)
    assert lama.due(0) == () and lama.unsynced > 0


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
        targets = {
            c: {n: m.detach() + d[n] for n, m in mx.items()} for c, (mx, d) in self.pending.items()
        }
        before = {c: self._gap(self.pending[c][0], targets[c]) for c in targets}
        super().server_step(run, rnd)
        self.hn_states.append(self._hn())
        new_copies, self.copies = self.copies, old_copies  # same copies, new weights α
        with torch.no_grad():
            self.gaps.append(
                {c: (before[c], self._gap(self.mix(self.alphas(c)), targets[c])) for c in targets}
            )
        self.copies = new_copies


def test_pfedla_hypernetwork_trains_and_weights_sum_to_one(heart):
    la = LAProbe()
    r = run(heart, la, rounds=2)
    before, after = la.hn_states[1], la.hn_states[2]  # round 1, when the copies differ
    last_round_change = [float((b - a).abs().max()) for a, b in zip(before, after, strict=True)]
    assert min(last_round_change) > 1e-6, last_round_change
    # the step is a descent step: the new weights mix the same copies closer to the trained model
    for gap_before, gap_after in la.gaps[1].values():
        assert gap_after < gap_before
    with torch.no_grad():
        for cid in range(len(r.clients)):
            alpha = la.alphas(cid)
            assert set(alpha) == set(unit_names(r.clients[0].model))
            for a in alpha.values():
                assert a.shape == (len(r.clients),) and (a > 0).all()
                assert abs(float(a.sum()) - 1) < 1e-6
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


def test_pfedme_personal_model_is_pulled_to_w_by_lambda(heart):
    weak, strong = MeProbe(lam=0.1), MeProbe(lam=100.0, beta=0.5)
    r = run(heart, weak, rounds=1)
    run(heart, strong, rounds=1)
    assert min(weak.gaps) > 0 and min(strong.gaps) > 0  # θ_i is not the local copy w_i
    assert np.mean(strong.gaps) < 0.5 * np.mean(weak.gaps)
    # K inner steps per mini-batch, then w_i itself moves towards θ_i
    batches = [-(-c.n_train // r.config.batch_size) for c in r.clients]
    assert weak.inner_steps == [weak.K * b for b in batches]
    assert all(weak.w_moved)
    # the server's w ← (1 − β)·w + β·avg(w_i)
    assert weak.mixing_ok == [True] and strong.mixing_ok == [True]


def test_pfedme_literal_envelope_step_is_guarded(heart):
    with pytest.raises(ValueError, match="eta"):
        run(heart, "pfedme", rounds=1, eta=1.0, lam=15.0)


# -- PLayer-FL-Random -------------------------------------------------------------------------
def test_playerfl_random_avoids_playerfls_split():
    drawn = set()
    for seed in range(5):
        data = data_prep.load("heart", seed=seed)
        config = make_config("heart", "quick", rounds=1, seed=seed, device="cpu", progress=False)
        p_star = run_federated(data, "playerfl", config).info["split_p"]
        r = run_federated(data, "playerfl_random", config)
        assert r.info["playerfl_split_p"] == p_star
        p = r.info["split_p"]
        assert 1 <= p < len(unit_names(r.clients[0].model)) and p != p_star
        assert r.info["federated_units"] == list(unit_names(r.clients[0].model)[:p])
        drawn.add(p)
    assert len(drawn) > 1, drawn


def test_playerfl_random_needs_three_units():
    class TwoUnits(UnitModel):
        units = ("body", "head")

        def __init__(self):
            super().__init__()
            self.body, self.head = nn.Linear(2, 2), nn.Linear(2, 2)

    fake_run = SimpleNamespace(clients=[SimpleNamespace(model=TwoUnits())], info={})
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
    deployed = _check_runs(heart)
    authors = _check_runs(heart, eval_timing="before_aggregation")
    # the server step never touches a personal model: both protocols score the same models
    for name in ("local", "pfedme", "ditto", "pfedla"):
        pd.testing.assert_frame_equal(deployed[name], authors[name], check_exact=True)
    for name in ("fedavg", "fedprox", "fedlama"):
        assert not deployed[name].equals(authors[name]), name


def test_all_algorithms_run_on_digits(digits):
    _check_runs(digits)


def test_all_algorithms_run_on_fmnist(fmnist):
    _check_runs(fmnist)
