"""Federation sensitivity and the split rule, on hand-built models, gradients and profiles.

Every expected value is computed here from the definition (numpy or autograd), never taken from
the module under test; each test went red against a deliberately wrong version of its rule.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from playerfl_core.fl.models import UnitModel
from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    average_sensitivities,
    choose_split,
    cumulative_sensitivity,
    federation_sensitivity,
    full_gradient,
    relative_rises,
    sensitivity_from_gradient,
    server_split,
)


class ThreeUnits(UnitModel):
    """Units of very different sizes (with and without bias), so 1/n_k matters."""

    units = ("body", "mid", "head")

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.body = nn.Sequential(nn.Linear(3, 5), nn.Tanh())  # 20 parameters
        self.mid = nn.Sequential(nn.Linear(5, 2, bias=False), nn.Tanh())  # 10
        self.head = nn.Linear(2, 3)  # 9
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g))

    def forward(self, x):
        return self.head(self.mid(self.body(x)))


def data(n=11, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, generator=g), torch.randint(0, 3, (n,), generator=g)


def by_definition(model, grads):
    """s_k = (1/n_k) Σ_{p ∈ k} (θ_p g_p)², in float64 numpy."""
    sums, counts = {}, {}
    for name, p in model.named_parameters():
        unit = name.split(".")[0]
        theta, g = p.detach().double().numpy(), grads[name].double().numpy()
        sums[unit] = sums.get(unit, 0.0) + float(((theta * g) ** 2).sum())
        counts[unit] = counts.get(unit, 0) + theta.size
    return {u: sums[u] / counts[u] for u in sums}


def test_sensitivity_divides_by_the_units_parameter_count():
    model = ThreeUnits()
    g = torch.Generator().manual_seed(2)
    grads = {n: torch.randn(p.shape, generator=g) for n, p in model.named_parameters()}
    s = sensitivity_from_gradient(model, grads)
    assert list(s) == ["body", "mid", "head"]
    expected = by_definition(model, grads)
    assert s == pytest.approx(expected, rel=1e-6)
    assert {
        u: sum(p.numel() for n, p in model.named_parameters() if n.startswith(u)) for u in s
    } == {
        "body": 20,
        "mid": 10,
        "head": 9,
    }


def test_sensitivity_by_hand_on_one_unit():
    """Head bias θ = (1, −2, 3), g = (0.5, 1, −2), all else 0: s = (0.25 + 4 + 36) / 9."""
    model = ThreeUnits()
    grads = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    with torch.no_grad():
        model.head.bias.copy_(torch.tensor([1.0, -2.0, 3.0]))
        model.head.weight.zero_()
    grads["head.bias"] = torch.tensor([0.5, 1.0, -2.0])
    s = sensitivity_from_gradient(model, grads)
    assert s["head"] == pytest.approx((0.25 + 4 + 36) / 9)  # n_head = 6 weights + 3 biases
    assert s["body"] == 0.0 and s["mid"] == 0.0


def test_full_gradient_is_the_gradient_of_the_mean_loss():
    """Accumulated over uneven batches (11 = 4 + 4 + 3), it equals the full-batch gradient."""
    model = ThreeUnits()
    x, y = data()
    grads = full_gradient(model, x, y, batch_size=4)
    loss = F.cross_entropy(model(x), y)
    names = [n for n, _ in model.named_parameters()]
    exact = dict(zip(names, torch.autograd.grad(loss, list(model.parameters())), strict=True))
    assert list(grads) == names
    for n in names:
        torch.testing.assert_close(grads[n], exact[n], rtol=1e-5, atol=1e-7)
    s = federation_sensitivity(model, x, y, batch_size=4)
    assert s == pytest.approx(by_definition(model, exact), rel=1e-5)


SUBSAMPLE = {"batch_size": 3, "max_batches": 2}  # 6 of 20 samples, drawn by seed 5


def subsample_gradient(model, x, y) -> dict[str, torch.Tensor]:
    """The exact mean-loss gradient on the samples that ``SUBSAMPLE`` with seed 5 draws."""
    idx = torch.randperm(len(y), generator=torch.Generator().manual_seed(5))[:6]
    loss = F.cross_entropy(model(x[idx]), y[idx])
    names = [n for n, _ in model.named_parameters()]
    return dict(zip(names, torch.autograd.grad(loss, list(model.parameters())), strict=True))


def test_full_gradient_on_a_subsample_uses_its_own_mean():
    model = ThreeUnits()
    x, y = data(n=20)
    gen = torch.Generator().manual_seed(5)
    grads = full_gradient(model, x, y, **SUBSAMPLE, generator=gen)
    exact = subsample_gradient(model, x, y).values()
    for got, want in zip(grads.values(), exact, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_full_gradient_skips_frozen_parameters_and_restores_modes():
    model = ThreeUnits()
    model.head.weight.requires_grad_(False)
    model.train()
    model.mid.eval()
    x, y = data()
    grads = full_gradient(model, x, y)
    assert "head.weight" not in grads and "head.bias" in grads
    assert model.training and model.body.training and not model.mid.training
    assert all(p.grad is None for p in model.parameters())


def test_cumulative_and_relative_rise_by_hand():
    s = [2.0, 1.0, 3.0, 12.0]
    np.testing.assert_array_equal(cumulative_sensitivity(s), [1.0, 1.5, 3.0, 9.0])
    np.testing.assert_array_equal(relative_rises(s), [0.5, 1.0, 2.0])
    # s_1 = 0: the curve is not normalised, and a rise from zero is infinite
    np.testing.assert_array_equal(cumulative_sensitivity([0.0, 0.0, 2.0]), [0.0, 0.0, 2.0])
    np.testing.assert_array_equal(relative_rises([0.0, 0.0, 2.0]), [np.inf, np.inf])
    np.testing.assert_array_equal(relative_rises([0.0, 1.0, 2.0]), [np.inf, 2.0])


def test_curve_and_rises_at_real_magnitudes():
    """Real sensitivities are far below 1: F_l = Σ_{k≤l} s_k / s_1 normalises by any s_1 > 0,
    the rise s_{l+1} / Σ_{k≤l} s_k divides by any positive cumulative sum, and only s_1 = 0
    leaves the curve unnormalised (values exact in binary)."""
    np.testing.assert_array_equal(cumulative_sensitivity([0.5, 0.5, 1.0]), [1.0, 2.0, 4.0])
    np.testing.assert_array_equal(cumulative_sensitivity([0.0, 1.0, 2.0]), [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(relative_rises([0.25, 0.5, 0.375]), [2.0, 0.5])
    assert choose_split([0.25, 0.5, 0.375], 1.5) == 1


# per-unit sensitivities of three clients; unnormalised weights (the pools must divide by Σw)
POOL_CLIENTS = {
    0: {"a": 1.0, "b": 16.0, "c": 1.0},
    1: {"a": 1.0, "b": 1.0, "c": 1.0},
    2: {"a": 1.0, "b": 4.0, "c": 1.0},
}
POOL_WEIGHTS = {0: 2.0, 1: 1.0, 2: 1.0}


@pytest.mark.parametrize(
    ("aggregate", "pooled_b"),
    [
        ("mean", (2 * 16.0 + 1.0 + 4.0) / 4),  # Σ w s / Σ w = 9.25
        ("median", 4.0),  # unweighted median over clients
        ("geomean", 2**2.5),  # exp(Σ w log s / Σ w) = (16² · 1 · 4)^(1/4)
    ],
)
def test_server_split_pools_each_unit_by_its_definition(aggregate, pooled_b):
    """Every unit pools to 1 except b, so the first rise is exactly pooled_b / 1: the split is 1
    just below it and 2 (no rise exceeds t; the head stays local) just above it."""
    below, above = pooled_b * (1 - 1e-9), pooled_b * (1 + 1e-9)
    assert server_split(POOL_CLIENTS, POOL_WEIGHTS, below, aggregate) == 1
    assert server_split(POOL_CLIENTS, POOL_WEIGHTS, above, aggregate) == 2


def test_server_split_default_is_the_weighted_mean_and_bad_pools_are_named():
    assert server_split(POOL_CLIENTS, POOL_WEIGHTS, 9.0) == 1
    assert server_split(POOL_CLIENTS, POOL_WEIGHTS, 9.5) == 2
    with pytest.raises(ValueError, match=r"aggregate must be one of .*'mean'.* got 'max'"):
        server_split(POOL_CLIENTS, POOL_WEIGHTS, aggregate="max")


# rises of [2, 2, 8, 1]: l=1: 2/2 = 1.0, l=2: 8/4 = 2.0, l=3: 1/12 (all exact in binary)
PROFILE = [2.0, 2.0, 8.0, 1.0]


@pytest.mark.parametrize(
    ("t", "p"),
    [
        (0.999, 1),  # just below the first rise: split right there
        (1.0, 2),  # at it: "more than t" is strict, so the next rise decides
        (1.001, 2),  # just above
        (1.999, 2),
        (2.0, 3),  # at the second rise: no rise exceeds t, every unit but the head
        (2.001, 3),
        (0.0, 1),
    ],
)
def test_split_index_at_just_below_and_just_above_t(t, p):
    assert choose_split(PROFILE, t) == p


def test_split_threshold_default_and_early_units():
    assert DEFAULT_THRESHOLD == 1.0
    assert choose_split(PROFILE) == 2
    assert choose_split([1.0, 0.5, 0.25, 0.1, 10.0]) == 4  # a late sharp rise
    assert choose_split([1.0, 3.0]) == 1  # two units: the head is never federated
    assert choose_split([0.0, 0.0, 5.0]) == 1


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_split_rejects_bad_thresholds(bad):
    with pytest.raises(ValueError, match=r"threshold t must be a finite number ≥ 0, got"):
        choose_split(PROFILE, bad)


@pytest.mark.parametrize(
    "bad", [[1.0], [], [1.0, -0.5], [1.0, float("nan")], [1.0, float("inf")], [[1.0, 2.0]]]
)
def test_sensitivities_are_validated(bad):
    with pytest.raises(ValueError, match="ensitivities"):
        choose_split(bad)
    with pytest.raises(ValueError, match="ensitivities"):
        cumulative_sensitivity(bad)


def test_average_sensitivities_weighs_clients_by_the_given_weights():
    per_client = {0: {"a": 1.0, "b": 10.0}, 1: {"a": 3.0, "b": 0.0}, 2: {"a": 5.0, "b": 4.0}}
    weights = {0: 0.5, 1: 0.25, 2: 0.25}
    assert average_sensitivities(per_client, weights) == pytest.approx({"a": 2.5, "b": 6.0})
    # weights need not sum to 1, and a client without sensitivities does not count
    unnormalised = {0: 2.0, 1: 1.0, 2: 1.0, 3: 100.0}
    assert average_sensitivities(per_client, unnormalised) == pytest.approx({"a": 2.5, "b": 6.0})


def test_federation_sensitivity_on_a_subsample_is_the_subsamples_metric():
    """max_batches and generator reach the gradient: s_k of the subsample drawn by the seed."""
    model = ThreeUnits()
    x, y = data(n=20)
    gen = torch.Generator().manual_seed(5)
    s = federation_sensitivity(model, x, y, **SUBSAMPLE, generator=gen)
    assert s == pytest.approx(by_definition(model, subsample_gradient(model, x, y)), rel=1e-5)
    full = federation_sensitivity(model, x, y, batch_size=3)
    assert s != pytest.approx(full, rel=1e-3)  # the subsample is not the whole data
