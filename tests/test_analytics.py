"""Layer analytics: each quantity against its definition, and state hygiene."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from playerfl_core.fl.models import MLP, build_model
from playerfl_core.fl.sensitivity import cumulative_sensitivity, sensitivity_from_gradient
from playerfl_core.measure import analytics as A
from playerfl_core.measure import layer_studies as S


def _tiny_mlp(seed=0):
    return build_model("mlp", num_classes=3, input_shape=(6,), width=0.2, seed=seed)


def _data(n=64, d=6, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    return x, y


def _exact_block_hessian(model, x, y, unit):
    """The unit's diagonal Hessian block from torch.autograd.functional.hessian."""
    own = {n: p.detach() for n, p in model.named_parameters() if n.startswith(unit + ".")}
    rest = {n: p.detach() for n, p in model.named_parameters() if n not in own}
    shapes = [p.shape for p in own.values()]
    sizes = [p.numel() for p in own.values()]
    flat = torch.cat([p.reshape(-1) for p in own.values()]).double()

    def loss(theta):
        pieces = [t.reshape(s) for t, s in zip(theta.split(sizes), shapes, strict=True)]
        parts = dict(zip(own, pieces, strict=True))
        params = {k: v.double() for k, v in {**rest, **parts}.items()}
        out = torch.func.functional_call(model.double(), params, (x.double(),))
        return F.cross_entropy(out, y)

    h = torch.autograd.functional.hessian(loss, flat)
    model.float()
    return h


@pytest.mark.parametrize("unit", ["fc1", "fc3", "fc4"])
def test_hutchinson_trace_matches_exact_block_trace(unit):
    model = _tiny_mlp()
    x, y = _data()
    h = _exact_block_hessian(model, x, y, unit)
    exact = float(torch.trace(h))
    n_probes = 300
    # Hutchinson with Rademacher probes: Var(vᵀHv) = 2 (‖H‖²_F − Σ H_ii²).
    se = math.sqrt(2 * float((h**2).sum() - (torch.diagonal(h) ** 2).sum()) / n_probes)
    est = A.hessian_unit(model, x, y, unit, n_probes=n_probes, eig_iters=200, eig_tol=1e-6)
    assert abs(est["hessian_trace"] - exact) <= 4 * se + 1e-6 * abs(exact), (est, exact, se)
    eig = torch.linalg.eigvalsh(h)
    top = float(eig[eig.abs().argmax()])
    assert est["hessian_top_eig"] == pytest.approx(top, rel=0.03)


def test_hessian_is_reproducible_and_not_doubled_by_stale_gradients():
    import warnings

    from pyhessian import hessian

    model = _tiny_mlp()
    x, y = _data()
    clean = A.hessian_unit(model, x, y, "fc2", n_probes=20, eig_iters=20, seed=3)
    assert clean == A.hessian_unit(model, x, y, "fc2", n_probes=20, eig_iters=20, seed=3)
    # An earlier pyhessian object leaves graph-carrying .grad behind; building a second one on
    # top of it doubles the Hessian unless the gradients are cleared (stack_notes §3).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hessian(model, nn.CrossEntropyLoss(), data=(x, y), cuda=False)
    model.train()
    after_stale = A.hessian_unit(model, x, y, "fc2", n_probes=20, eig_iters=20, seed=3)
    assert after_stale == pytest.approx(clean, rel=1e-5)
    other_seed = A.hessian_unit(model, x, y, "fc2", n_probes=20, eig_iters=20, seed=4)
    assert other_seed["hessian_trace"] != clean["hessian_trace"]


def test_linear_cka_properties():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(200, 30, generator=g)
    assert A.linear_cka(a, a) == pytest.approx(1.0, abs=1e-12)
    q, _ = torch.linalg.qr(torch.randn(30, 30, generator=g))
    assert A.linear_cka(a, 3.7 * a @ q) == pytest.approx(1.0, abs=1e-10)
    unrelated = torch.randn(200, 30, generator=g)
    assert A.linear_cka(a, unrelated) < 0.3
    # The feature-space path (n ≥ d) agrees with the Gram-matrix definition.
    tall_a, tall_b = torch.randn(100, 5, generator=g), torch.randn(100, 7, generator=g)
    k1 = (tall_a - tall_a.mean(0)) @ (tall_a - tall_a.mean(0)).T
    k2 = (tall_b - tall_b.mean(0)) @ (tall_b - tall_b.mean(0)).T
    by_gram = float((k1 * k2).sum() / (k1.norm() * k2.norm()))
    assert A.linear_cka(tall_a, tall_b) == pytest.approx(by_gram, rel=1e-5)
    # A shift is removed by centring; a non-isotropic scaling is not an invariance.
    assert A.linear_cka(a, a + 5.0) == pytest.approx(1.0, abs=1e-12)
    stretch = a * torch.linspace(0.1, 10, 30)
    assert A.linear_cka(a, stretch) < 0.95


def test_sensitivity_scales_quadratically_and_cumulative_is_monotone():
    model = MLP(num_classes=3, input_shape=(4,))
    grads = {n: torch.full_like(p, 0.5) for n, p in model.named_parameters()}
    base = sensitivity_from_gradient(model, grads)
    c = 3.0
    with torch.no_grad():
        for p in model.fc2.parameters():
            p.mul_(c)
    scaled = sensitivity_from_gradient(model, grads)
    assert scaled["fc2"] == pytest.approx(c**2 * base["fc2"], rel=1e-6)
    for u in ("fc1", "fc3", "fc4"):
        assert scaled[u] == base[u]
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.exponential(size=rng.integers(2, 8))
        assert np.all(np.diff(cumulative_sensitivity(s)) >= 0)
        assert cumulative_sensitivity(s)[0] == pytest.approx(1.0)


def test_gradient_noise_estimate_matches_exact_and_monte_carlo():
    model = _tiny_mlp()
    x, y = _data(n=96)
    batch = 12
    exact = A.gradient_noise_exact(model, x, y, batch)
    # Monte Carlo over random batches (without replacement), straight from the definition.
    g = torch.Generator().manual_seed(1)
    draws = []
    for _ in range(400):
        idx = torch.randperm(len(y), generator=g)[:batch]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        draws.append(
            torch.cat([gr.reshape(-1) for gr in torch.autograd.grad(loss, model.fc4.parameters())])
        )
    mc = float(torch.stack(draws).var(0).mean())
    assert mc == pytest.approx(exact["fc4"], rel=0.15)
    # The micro-batch estimator is unbiased: its mean over shufflings approaches the exact value.
    est = [
        A.gradient_noise(
            model, x, y, batch, micro_batch=4, generator=torch.Generator().manual_seed(s)
        )
        for s in range(40)
    ]
    for unit in exact:
        mean = np.mean([e[unit] for e in est])
        assert mean == pytest.approx(exact[unit], rel=0.1), unit
    assert A.gradient_noise(model, x, y, len(y))["fc1"] == 0.0  # the batch is the data set


def _state(model):
    return (
        [p.detach().clone() for p in model.parameters()],
        [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        [p.requires_grad for p in model.parameters()],
        [m.training for m in model.modules()],
    )


def test_analytics_leave_model_state_as_found():
    model = _tiny_mlp()
    x, y = _data()
    loss = F.cross_entropy(model(x), y)
    loss.backward()  # leftover gradients must survive
    model.fc3[0].bias.grad = None
    model.fc2[0].weight.requires_grad_(False)  # a frozen parameter must stay frozen
    model.train()
    model.fc1.eval()  # mixed modes must survive too
    before = _state(model)
    settings = S.AnalyticsSettings(hutchinson_probes=3, eig_iters=3, probe_per_client=8)
    S.measure_model(model, x, y, batch_size=16, settings=settings)
    A.hessian_unit(model, x, y, "fc1", n_probes=2, eig_iters=2)
    A.cka_matrices([model, model], x)
    A.gradient_noise_exact(model, x, y, 16)
    after = _state(model)
    for b, a in zip(before[0], after[0], strict=True):
        assert torch.equal(a, b)
    for b, a in zip(before[1], after[1], strict=True):
        assert (a is None and b is None) or torch.equal(a, b)
    assert before[2:] == after[2:]


def test_layer_analytics_table(heart):
    settings = S.AnalyticsSettings(
        hutchinson_probes=2, eig_iters=2, hessian_samples=32, probe_per_client=10
    )
    table = S.layer_analytics(
        "heart", seeds=[0], rounds=2, settings=settings, device="cpu", data_loader=lambda s: heart
    )
    assert list(table.columns) == S.COLUMNS
    assert set(table["stage"]) == {"first", "final"}
    assert set(table["metric"]) == set(S.METRICS)
    units = ("fc1", "fc2", "fc3", "fc4")
    assert set(table["unit"]) == set(units)
    # After the first epoch local and FedAvg hold the same models: same numbers.
    first = table[table["stage"] == "first"].set_index(["client", "unit", "metric", "other"])
    loc = first[first["algorithm"] == "local"]["value"].sort_index()
    avg = first[first["algorithm"] == "fedavg"]["value"].sort_index()
    pd.testing.assert_series_equal(loc, avg)
    # ...but not at the end of training.
    final = table[(table["stage"] == "final") & (table["metric"] == "sensitivity")]
    assert not np.allclose(
        final[final["algorithm"] == "local"]["value"].to_numpy(),
        final[final["algorithm"] == "fedavg"]["value"].to_numpy(),
    )
    cka = table[table["metric"] == "cka"]
    assert cka["value"].between(-1e-9, 1 + 1e-9).all()
    assert (cka["other"] != cka["client"]).all()
    again = S.layer_analytics(
        "heart", seeds=[0], rounds=2, settings=settings, device="cpu", data_loader=lambda s: heart
    )
    pd.testing.assert_frame_equal(table, again)


def test_intervals_and_summaries():
    m, lo, hi = S.t_interval([1.0, 2.0, 3.0])
    assert m == 2.0
    assert hi - m == pytest.approx(4.302652729911275 * 1.0 / math.sqrt(3))
    assert math.isnan(S.t_interval([1.0])[1])
    b = S.bootstrap_interval([1.0, 2.0, 3.0, 4.0], seed=0)
    assert b == S.bootstrap_interval([1.0, 2.0, 3.0, 4.0], seed=0)
    assert b[1] < b[0] < b[2]
    table = pd.DataFrame(
        {
            "dataset": "d",
            "algorithm": "a",
            "stage": "first",
            "seed": [0, 0, 1, 1],
            "client": [0, 1, 0, 1],
            "value": [1.0, 3.0, 5.0, 7.0],
        }
    )
    s = S.seed_summary(table, ["dataset"])
    assert s.loc[0, "mean"] == 4.0 and s.loc[0, "n_seeds"] == 2  # seed means 2 and 6


def _fake(values_by_seed, metric="cka_dissimilarity"):
    rows = []
    for seed, profile in values_by_seed.items():
        for client in range(2):
            for depth, v in enumerate(profile, start=1):
                rows.append(
                    (
                        "d",
                        "local",
                        seed,
                        client,
                        "first",
                        0,
                        f"u{depth}",
                        depth,
                        metric,
                        v + 0.01 * client,
                        S.NO_OTHER,
                    )
                )
    return pd.DataFrame(rows, columns=S.COLUMNS)


def test_depth_trend_correlation_and_splits():
    up = _fake({0: [0.0, 0.1, 0.2, 0.5], 1: [0.0, 0.2, 0.1, 0.6]})
    rho = S.depth_trend(up, "cka_dissimilarity")
    assert rho["rho"].tolist() == pytest.approx([1.0, 0.8])
    down = _fake({0: [0.5, 0.2, 0.1, 0.0]})
    assert S.depth_trend(down, "cka_dissimilarity")["rho"].iloc[0] == pytest.approx(-1.0)
    both = pd.concat(
        [_fake({0: [1, 2, 3, 4]}, "sensitivity"), _fake({0: [4, 3, 2, 1]}, "hessian_trace")]
    )
    corr = S.metric_correlation(both, "sensitivity", "hessian_trace")
    assert corr["rho"].iloc[0] == pytest.approx(-1.0)
    # Split rule on flat-then-jump sensitivities (rises 1, 0.5, 3): the jump after unit 3 is
    # found for 1 ≤ t < 3; a smaller t already stops at the flat second unit.
    sens = _fake({0: [1.0, 1.0, 1.0, 9.0]}, "sensitivity")
    splits = S.server_splits(sens, thresholds=[0.5, 1.0, 2.5, 5.0])
    assert splits["p"].tolist() == [1, 3, 3, 3]
    # at t = 5 no rise passes: p = 3 is the rule's fallback (L − 1), not the rise it found at
    # t = 1 and 2.5, though p is the same; chapter 03 read Digits' fallback as a rise
    assert splits["fallback"].tolist() == [False, False, False, True]


def test_probe_set_is_seeded_and_shared(heart):
    a = A.probe_set(heart.clients, 5, seed=0)
    b = A.probe_set(heart.clients, 5, seed=0)
    assert torch.equal(a, b) and len(a) == 5 * len(heart.clients)
    assert not torch.equal(a, A.probe_set(heart.clients, 5, seed=1))


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="Unknown metrics"):
        S.AnalyticsSettings(metrics=("hessian_eigenvalue_sum",))


def test_unit_outputs_are_the_units_outputs():
    model = _tiny_mlp()
    x, _ = _data(n=10)
    outs = A.unit_outputs(model, x)
    with torch.no_grad():
        h = model.fc1(x)
        assert torch.equal(outs["fc1"], h)
        assert torch.equal(outs["fc4"], model(x))
    assert isinstance(model.fc1, nn.Module)


def test_split_from_models_is_the_playerfl_decision(heart):
    from playerfl_core import get_algorithm, make_config, run_federated

    config = make_config("heart", "quick", rounds=1, device="cpu", progress=False)
    models = S.first_epoch_models(heart, config)
    p, avg = S.split_from_models(models, heart.clients)
    run = run_federated(heart, get_algorithm("playerfl"), config)
    assert p == run.info["split_p"]
    assert avg == pytest.approx(run.info["sensitivity"])


def test_pruning_check_first_order_prediction_and_restore():
    model = _tiny_mlp()
    x, y = _data()
    before = [p.detach().clone() for p in model.parameters()]
    check = S.pruning_check(model, x, y, "fc4", max_params=40)
    assert len(check) == 15  # all of fc4: 4×3 weights and 3 biases
    assert len(S.pruning_check(model, x, y, "fc4", max_params=6)) == 6
    # The first-order term −θ·g dominates the actual change (Kaiming-sized weights leave a
    # visible second-order remainder, so only a strong, not perfect, agreement is expected).
    assert np.corrcoef(check["predicted"], check["actual"])[0, 1] > 0.8
    row = check.iloc[5]
    with torch.no_grad():
        pruned = _tiny_mlp()
        pruned.fc4.weight.view(-1)[5] = 0.0
        direct = float(F.cross_entropy(pruned(x), y) - F.cross_entropy(model(x), y))
    assert row["actual"] == pytest.approx(direct, rel=1e-4, abs=1e-7)
    for b, a in zip(before, model.parameters(), strict=True):
        assert torch.equal(b, a)


def test_small_helpers():
    quick = S.analytics_plan("fmnist", "quick")
    assert (quick.seeds, quick.rounds, quick.settings.hessian_samples) == ([0, 1, 2], 3, 32)
    paper = S.analytics_plan("heart", "paper", seeds=[7])
    assert (paper.seeds, paper.rounds, paper.settings) == ([7], None, S.AnalyticsSettings())
    table = pd.concat([_fake({0: [0.1, 0.2, 0.3, 0.4], 1: [0.1, 0.3, 0.2, 0.4]})])
    rises = S.adjacent_rises(table, "cka_dissimilarity")
    assert rises["rises"].tolist() == [1.0, 0.5, 1.0]
    final = table.assign(stage="final")
    agree = S.stage_agreement(pd.concat([table, final]), "cka_dissimilarity", by=["dataset"])
    assert agree["rho"].tolist() == pytest.approx([1.0, 1.0])
    pairs = pd.DataFrame(
        [
            ("d", "local", 0, 0, "final", 1, "u1", 1, "cka", 0.25, 1),
            ("d", "local", 0, 1, "final", 1, "u1", 1, "cka", 0.25, 0),
            ("d", "local", 1, 0, "final", 1, "u1", 1, "cka", 0.75, 1),
            ("d", "local", 1, 1, "final", 1, "u1", 1, "cka", 0.75, 0),
        ],
        columns=S.COLUMNS,
    )
    mat = S.cka_matrix_from_table(pairs, "d", "local", "final")["u1"]
    assert mat.tolist() == [[1.0, 0.5], [0.5, 1.0]]


def test_server_split_weights_and_reference_agreement():
    # Client 0 sees a jump at unit 2, client 1 a flat profile; the weights decide the split.
    rows = []
    for client, profile in enumerate([[1.0, 10.0, 10.0, 10.0], [1.0, 0.5, 0.5, 50.0]]):
        for depth, v in enumerate(profile, start=1):
            rows.append(
                (
                    "heart",
                    "fedavg",
                    0,
                    client,
                    "first",
                    0,
                    f"fc{depth}",
                    depth,
                    "sensitivity",
                    v,
                    S.NO_OTHER,
                )
            )
    table = pd.DataFrame(rows, columns=S.COLUMNS)
    heavy0 = S.server_splits(table, [1.0], weights=lambda key: {0: 100.0, 1: 1.0})
    heavy1 = S.server_splits(table, [1.0], weights={0: 1.0, 1: 100.0})
    assert heavy0["p"].tolist() == [1] and heavy1["p"].tolist() == [3]
    agree = S.reference_agreement(heavy1)
    assert dict(zip(agree["reference"], agree["agreement"], strict=True)) == {
        "paper_transition": 0.0,
        "authors_config": 0.0,
    }
    agree = S.reference_agreement(heavy0)
    assert dict(zip(agree["reference"], agree["agreement"], strict=True)) == {
        "paper_transition": 0.0,
        "authors_config": 1.0,
    }
