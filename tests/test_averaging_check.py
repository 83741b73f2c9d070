"""The averaging check measures L(θ_k ← θ̄_k) − L(θ) and its Taylor terms correctly."""

import numpy as np
import pytest
import torch
from torch import nn

from playerfl_core.fl.models import build_model
from playerfl_core.fl.sensitivity import federation_sensitivity
from playerfl_core.measure.averaging_check import (
    averaging_effects,
    client_averaged,
    mean_cross_entropy,
    replacement_effects,
    weighted_average,
)


class TwoUnits(nn.Module):
    """Parameters in two units, a (3 numbers) and b (2 numbers); the loss is supplied."""

    units = ("a", "b")

    def __init__(self, a, b):
        super().__init__()
        self.a = nn.Module()
        self.a.w = nn.Parameter(torch.tensor(a, dtype=torch.float64))
        self.b = nn.Module()
        self.b.w = nn.Parameter(torch.tensor(b, dtype=torch.float64))

    def theta(self):
        return torch.cat([self.a.w, self.b.w])


def quadratic_problem(seed=0):
    gen = torch.Generator().manual_seed(seed)
    m = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    hessian = m @ m.T + torch.eye(5, dtype=torch.float64)  # coupled units (off-diagonal blocks)
    c = torch.randn(5, generator=gen, dtype=torch.float64)

    def loss(model):
        t = model.theta()
        return 0.5 * t @ hessian @ t + c @ t

    theta = torch.randn(5, generator=gen, dtype=torch.float64)
    target = torch.randn(5, generator=gen, dtype=torch.float64)
    return hessian, c, theta, target, loss


def target_dict(target):
    return {"a.w": target[:3], "b.w": target[3:]}


def test_quadratic_loss_first_and_second_order_terms_are_exact():
    hessian, c, theta, target, loss = quadratic_problem()
    model = TwoUnits(theta[:3].tolist(), theta[3:].tolist())
    out = replacement_effects(model, target_dict(target), loss).set_index("unit")
    grad = hessian @ theta + c
    for unit, idx in (("a", slice(0, 3)), ("b", slice(3, 5))):
        d = target[idx] - theta[idx]
        first = float(grad[idx] @ d)
        curvature = float(0.5 * d @ hessian[idx, idx] @ d)
        assert out.loc[unit, "first_order"] == pytest.approx(first, rel=1e-12)
        # A quadratic has no third-order term: the second-order prediction is the actual change,
        # and the first-order one misses exactly the unit's own curvature term.
        assert out.loc[unit, "second_order"] == pytest.approx(out.loc[unit, "actual"], abs=1e-10)
        assert out.loc[unit, "actual"] - first == pytest.approx(curvature, rel=1e-9)
        assert abs(curvature) > 1e-3  # the check is not vacuous
        assert out.loc[unit, "pruning_first_order"] == pytest.approx(
            float(-(grad[idx] @ theta[idx])), rel=1e-12
        )
        assert out.loc[unit, "distance"] == pytest.approx(float(d.norm()), rel=1e-12)
    assert list(out["n_params"]) == [3, 2]
    # The model itself is untouched.
    assert torch.equal(model.theta().detach(), theta)


def test_first_order_error_shrinks_quadratically_on_a_non_quadratic_loss():
    """Exact to second order: halving the step quarters the first-order error, and the
    second-order prediction's error falls at least eightfold (a cubic term remains)."""
    gen = torch.Generator().manual_seed(1)
    theta = torch.randn(5, generator=gen, dtype=torch.float64)
    direction = torch.randn(5, generator=gen, dtype=torch.float64)

    def loss(model):
        t = model.theta()
        return torch.log(torch.exp(t).sum()) + (t**3).sum() / 6

    errors1, errors2 = [], []
    for eps in (1e-2, 5e-3):
        model = TwoUnits(theta[:3].tolist(), theta[3:].tolist())
        out = replacement_effects(model, target_dict(theta + eps * direction), loss)
        errors1.append((out["actual"] - out["first_order"]).abs().to_numpy())
        errors2.append((out["actual"] - out["second_order"]).abs().to_numpy())
    np.testing.assert_allclose(errors1[0] / errors1[1], 4.0, rtol=0.05)
    assert np.all(errors2[0] / errors2[1] > 7.0)


def test_weighted_average_uses_the_weights():
    m1, m2 = TwoUnits([1.0, 1.0, 1.0], [0.0, 0.0]), TwoUnits([5.0, 5.0, 5.0], [4.0, 4.0])
    avg = weighted_average([m1, m2], [3, 1])
    np.testing.assert_allclose(avg["a.w"].numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(avg["b.w"].numpy(), [1.0, 1.0])
    with pytest.raises(ValueError, match="one weight per model"):
        weighted_average([m1, m2], [1.0])
    with pytest.raises(ValueError, match="weights must be ≥ 0"):
        weighted_average([m1, m2], [1.0, -2.0])


def test_averaging_effects_on_a_real_model_and_its_sensitivity():
    torch.manual_seed(0)
    models = [build_model("mlp", 5, (10,), 1.0, seed) for seed in (0, 1)]
    gen = torch.Generator().manual_seed(0)
    data = [(torch.randn(40, 10, generator=gen), torch.randint(0, 5, (40,), generator=gen))] * 2
    # All weight on client 0: θ̄ is client 0's model, so nothing changes for client 0.
    out = averaging_effects(models, data, [1.0, 0.0], progress=False)
    own = out[out["client"] == 0]
    assert np.all(own[["actual", "first_order", "second_order", "distance"]].abs() < 1e-12)
    other = out[out["client"] == 1]
    assert np.all(other["distance"] > 0) and np.all(other["actual"].abs() > 0)
    # s_k is the library's federation sensitivity of the client's own model.
    x, y = data[1]
    expected = federation_sensitivity(models[1], x, y)
    np.testing.assert_allclose(other["sensitivity"], list(expected.values()), rtol=1e-5)
    # Client-averaged profile: weighted mean per unit, in forward order.
    prof = client_averaged(out)
    assert list(prof["unit"]) == list(models[0].units) and list(prof["depth"]) == [1, 2, 3, 4]
    np.testing.assert_allclose(prof["actual"], own["actual"].to_numpy(), atol=1e-12)


def test_bad_inputs_are_named():
    model = TwoUnits([0.0, 0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="Unknown units \\['c'\\]"):
        replacement_effects(model, target_dict(torch.zeros(5)), lambda m: m.theta().sum(), ["c"])
    with pytest.raises(ValueError, match="target lacks parameters \\['b.w'\\]"):
        replacement_effects(model, {"a.w": torch.zeros(3)}, lambda m: m.theta().sum())
    x, y = torch.zeros(4, 10), torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match="one \\(x, y\\) per model"):
        averaging_effects([model, model], [(x, y)], [1, 1])
    assert callable(mean_cross_entropy(x, y))
