"""The batched driver: K runs of one federation as one computation give the one-by-one runs'
rows, split choices and best rounds (up to rounding)."""

import contextlib
import copy
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.batched import DRIVER, StackedAdam, run_batch, run_prefix_batch
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.stats.results import select_rounds

# Batched runs sum in another order (vmapped matmuls and convolutions, the masked batch loss),
# so float32 values differ in their last bits and the difference grows a little each round; on
# the few rounds of the small federations below the largest seen is 4.5e-6 (a loss). A
# difference that only rounding explains stays far inside this bound; a run trained on another
# run's data order, with Adam stepping a run that has no batch, with shared Adam moments, with
# padding counted in the loss or without the server's average each fall outside it (each tried:
# these tests turn red).
RTOL, ATOL = 1e-4, 1e-5

# Over Fashion-MNIST's 26 Adam steps, float32 rounding is no longer small: on an Intel AVX-512
# CPU the batched and one-by-one runs drifted apart by 1e-3 in a loss and flipped one
# validation sample (1/36 in an accuracy), while an AMD CPU stayed within 1.4e-6. Adam divides
# each step by the gradient's own scale, so a last-bit difference in a tiny gradient becomes a
# difference in a whole step. In float64 the same sweep agreed to 1.3e-14 (measured on the AMD
# CPU): rounding would have to grow ten-thousand-fold more to reach a bound a million times
# tighter than float32's, so that test runs in float64.
RTOL64, ATOL64 = 1e-10, 1e-12


@contextlib.contextmanager
def in_float64(tasks):
    """``tasks`` with float64 inputs, and models built in float64 inside the block. The data
    contract keeps inputs float32, so the copies are made after the federation is validated."""
    wide = []
    for data, seed, split in tasks:
        data = copy.copy(data)
        data.clients = [
            dataclasses.replace(
                c, **{f"x_{s}": c.split(s)[0].double() for s in ("train", "val", "test")}
            )
            for c in data.clients
        ]
        wide.append((data, seed, split))
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield wide
    finally:
        torch.set_default_dtype(before)


def one_by_one(jobs, cfg):
    return pd.concat(
        [
            run_federated(data, alg, dataclasses.replace(cfg, seed=seed)).table()
            for data, alg, seed in jobs
        ],
        ignore_index=True,
    )


def assert_same_runs(
    batched: pd.DataFrame, single: pd.DataFrame, rtol: float = RTOL, atol: float = ATOL
) -> None:
    """Same rows in the same order, values within the rounding bound, same split choices and
    the same best-validation round for every client."""
    keys = [c for c in single.columns if c != "value"]
    pd.testing.assert_frame_equal(batched[keys], single[keys])
    np.testing.assert_allclose(batched["value"], single["value"], rtol=rtol, atol=atol)
    splits = single["metric"].isin(["split_p", "rule_split_p", "playerfl_split_p"])
    assert (batched.loc[splits, "value"] == single.loc[splits, "value"]).all()
    best = ["dataset", "algorithm", "seed", "client", "split", "metric", "round"]
    b, s = (select_rounds(t)[best].sort_values(best, ignore_index=True) for t in (batched, single))
    pd.testing.assert_frame_equal(b, s)


def sweep_jobs(dataset, seeds, splits):
    return [(load(dataset, profile="quick", seed=s), s, p) for s in seeds for p in splits]


def test_heart_sweep_and_rules_batched_equal_one_by_one():
    """Heart (MLP): splits 0, 1, L on two seeds, plus PLayer-FL and PLayer-FL-Random, whose
    splits are chosen per run inside the batch, and FedLP (its own uploads and server step)."""
    cfg = make_config("heart", "quick", rounds=3, device="cpu", progress=False)
    data = {s: load("heart", profile="quick", seed=s) for s in (0, 1)}
    names = [prefix_name(p) for p in (0, 1, 4)] + ["playerfl", "playerfl_random", "fedlp"]
    jobs = [(data[s], name, s) for s in (0, 1) for name in names]
    runs = run_batch([(d, get_algorithm(n), s) for d, n, s in jobs], cfg)
    batched = pd.concat([r.table() for r in runs], ignore_index=True)
    single = one_by_one([(d, get_algorithm(n), s) for d, n, s in jobs], cfg)
    assert_same_runs(batched, single)
    assert {r.info["driver"] for r in runs} == {DRIVER}


def test_other_round_options_and_a_rule_with_uploads_batched_equal_one_by_one():
    """Scoring before aggregation, two local epochs, and PLayer-FL with a rule that asks the
    clients for their parameters and gradients once (uploads read the stacked rows)."""
    cfg = make_config(
        "heart",
        "quick",
        rounds=2,
        device="cpu",
        progress=False,
        eval_timing="before_aggregation",
        local_epochs=2,
    )
    data = {s: load("heart", profile="quick", seed=s) for s in (0, 1)}
    names = [prefix_name(2), "playerfl-cost"]
    jobs = [(data[s], name, s) for s in (0, 1) for name in names]
    runs = run_batch([(d, get_algorithm(n), s) for d, n, s in jobs], cfg)
    batched = pd.concat([r.table() for r in runs], ignore_index=True)
    single = one_by_one([(d, get_algorithm(n), s) for d, n, s in jobs], cfg)
    assert_same_runs(batched, single)


def test_digits_sweep_batched_equals_one_by_one():
    """Digits (small CNN): seeds whose clients hold different numbers of samples, so runs sit
    out steps and pad their evaluation sets inside the batch."""
    cfg = make_config("digits", "quick", rounds=2, device="cpu", progress=False)
    tasks = sweep_jobs("digits", (0, 1), (0, 2, 4))
    batched = run_prefix_batch(tasks, cfg)
    single = one_by_one([(d, get_algorithm(prefix_name(p)), s) for d, s, p in tasks], cfg)
    assert_same_runs(batched, single)


@pytest.mark.slow
def test_fmnist_sweep_batched_equals_one_by_one():
    """Fashion-MNIST quick (CNN3 at width 0.25, 400 images per client, batch 32), in float64:
    two rounds of Adam magnify float32 rounding past any bound a bug would exceed."""
    cfg = make_config("fmnist", "quick", rounds=2, device="cpu", progress=False)
    with in_float64(sweep_jobs("fmnist", (0, 1), (0, 3, 5))) as tasks:
        batched = run_prefix_batch(tasks, cfg)
        single = one_by_one([(d, get_algorithm(prefix_name(p)), s) for d, s, p in tasks], cfg)
    assert_same_runs(batched, single, RTOL64, ATOL64)


def test_one_by_one_runs_carry_no_driver(heart):
    cfg = make_config("heart", "quick", rounds=1, device="cpu", progress=False)
    assert "driver" not in run_federated(heart, get_algorithm("local"), cfg).info


def test_stacked_adam_is_torch_adam_per_run_with_its_own_steps():
    """All rows active: each row follows its own torch.optim.Adam (AMSGrad, L2 decay) bit for
    bit; a row that sits a step out keeps its parameters and moments, and its step count."""
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(3, 4, 5, generator=gen)
    grads = [torch.randn(3, 4, 5, generator=gen) for _ in range(6)]
    active = [np.array([True, i % 2 == 0, i < 2]) for i in range(6)]
    settings = {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-4}
    stacked = start.clone().requires_grad_()
    adam = StackedAdam([stacked], {**settings, "amsgrad": True})
    for g, on in zip(grads, active, strict=True):
        stacked.grad = g.clone()
        adam.step(on)
    for k in range(3):
        row = start[k].clone().requires_grad_()
        ref = torch.optim.Adam([row], amsgrad=True, foreach=True, **settings)
        for g, on in zip(grads, active, strict=True):
            if on[k]:
                row.grad = g[k].clone()
                ref.step()
        torch.testing.assert_close(stacked[k].detach(), row.detach(), rtol=0, atol=0)


def test_a_batch_refuses_what_it_does_not_compute_as_the_engine(heart, digits):
    cfg = make_config("heart", "quick", rounds=1, device="cpu", progress=False)
    anywhere = dataclasses.replace(cfg, dataset=None)
    mixed = [(heart, get_algorithm("local"), 0), (digits, get_algorithm("local"), 0)]
    with pytest.raises(ValueError, match="one federation"):
        run_batch(mixed, anywhere)
    with pytest.raises(ValueError, match="fedprox has its own local_update"):
        run_batch([(heart, get_algorithm("fedprox"), 0)], cfg)
    with pytest.raises(ValueError, match="ditto has its own"):
        run_batch([(heart, get_algorithm("ditto"), 0)], cfg)
    focal = dataclasses.replace(cfg, loss="focal")
    with pytest.raises(ValueError, match="loss='cross_entropy'"):
        run_batch([(heart, get_algorithm("local"), 0)], focal)
    with pytest.raises(ValueError, match="no runs"):
        run_batch([], cfg)


def test_a_batch_end_is_projected_from_the_rounds_after_the_first(monkeypatch):
    """Round 0 (warm-up) is not extrapolated; later rounds are; the last never raises."""
    from playerfl_core.fl import batched

    times = iter([10.0, 30.0, 60.0])
    monkeypatch.setattr(batched.time, "monotonic", lambda: next(times))
    clock = batched._Deadline(deadline=100.0, rounds=5)
    clock.after_round(0)  # 10 s for the first round: 50 s if extrapolated, not done
    clock.after_round(1)  # 20 s per round since: ends at 30 + 3 × 20 = 90
    with pytest.raises(batched.OutOfTime, match="10 s after its deadline"):
        clock.after_round(2)  # 25 s per round since: ends at 60 + 2 × 25 = 110
    batched._Deadline(deadline=0.0, rounds=5).after_round(4)  # the last round: kept
