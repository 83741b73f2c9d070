"""What federating a unit does to a client's loss: measured, and predicted to first order.

Federating layer unit k replaces a client's parameters θ_k by the clients' weighted average
θ̄_k. With g_k = ∂L/∂θ_k and H_kk the unit's block of the Hessian of the client's loss L,

    L(θ with θ_k ← θ̄_k) − L(θ) = g_k·d_k + ½ d_kᵀ H_kk d_k + O(‖d_k‖³),   d_k = θ̄_k − θ_k.

The pruning argument behind federation sensitivity is the special case θ̄_k = 0, whose first
term is −g_k·θ_k. This module measures the left side (in float64, on a copy of the model) next
to both terms of the right side and the paper's s_k, so the book can check which of them tracks
the actual cost of averaging.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from playerfl_core.fl.sensitivity import sensitivity_from_gradient
from playerfl_core.fl.units import unit_names, unit_params
from playerfl_core.measure.layer_measure import first_epoch_models

LossFn = Callable[[nn.Module], torch.Tensor]
COLUMNS = [
    "unit",
    "n_params",
    "actual",
    "first_order",
    "second_order",
    "pruning_first_order",
    "sensitivity",
    "distance",
]


def mean_cross_entropy(x: torch.Tensor, y: torch.Tensor) -> LossFn:
    """``loss(model)``: the mean cross-entropy over all of (x, y) in one batch, in eval mode (as
    :func:`~playerfl_core.fl.sensitivity.full_gradient`), in the model's floating-point type."""

    def loss(model: nn.Module) -> torch.Tensor:
        dtype = next(model.parameters()).dtype
        model.eval()
        return F.cross_entropy(model(x.to(dtype)), y)

    return loss


def weighted_average(
    models: Sequence[nn.Module], weights: Sequence[float]
) -> dict[str, torch.Tensor]:
    """θ̄: the weighted average of every parameter over ``models`` (weights renormalised), what
    FedAvg's server computes from full uploads."""
    if len(models) != len(weights) or not models:
        raise ValueError(
            f"Need one weight per model and at least one model; got {len(models)} models and "
            f"{len(weights)} weights."
        )
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"weights must be ≥ 0 with a positive sum, got {list(weights)}.")
    total = float(sum(weights))
    params = [dict(m.named_parameters()) for m in models]
    return {
        name: sum(
            p[name].detach().double() * (w / total) for p, w in zip(params, weights, strict=True)
        )
        for name in params[0]
    }


def replacement_effects(
    model: nn.Module,
    target: Mapping[str, torch.Tensor],
    loss: LossFn,
    units: Sequence[str] | None = None,
) -> pd.DataFrame:
    """For each unit k (default: all), replace θ_k by ``target``'s values and measure the loss
    change, next to its Taylor terms at θ. ``model`` is not modified (a float64 copy is used).

    Columns: ``actual`` = L(θ_k ← target_k) − L(θ); ``first_order`` = g_k·d_k with
    d_k = target_k − θ_k; ``second_order`` = first_order + ½ d_kᵀH_kk d_k (a Hessian-vector
    product); ``pruning_first_order`` = −g_k·θ_k (the target-zero case); ``sensitivity`` = the
    paper's s_k at θ; ``distance`` = ‖d_k‖; ``n_params``.
    """
    work = copy.deepcopy(model).double()
    all_units = unit_names(work)
    units = list(all_units if units is None else units)
    unknown = [u for u in units if u not in all_units]
    if unknown:
        raise ValueError(f"Unknown units {unknown}; the model's units are {list(all_units)}.")
    named = dict(work.named_parameters())
    missing = [n for u in units for n in unit_params(work, u) if n not in target]
    if missing:
        raise ValueError(f"target lacks parameters {missing} of the units {units}.")
    params = [p for p in named.values() if p.requires_grad]
    base = loss(work)
    grads = dict(
        zip(
            [n for n, p in named.items() if p.requires_grad],
            torch.autograd.grad(base, params, create_graph=True),
            strict=True,
        )
    )
    sensitivity = sensitivity_from_gradient(work, {n: g.detach() for n, g in grads.items()})
    taylor = {}
    for u in units:
        names = list(unit_params(work, u))
        deltas = {n: target[n].to(named[n]).detach() - named[n].detach() for n in names}
        first = sum((grads[n] * deltas[n]).sum() for n in names)
        hvp = torch.autograd.grad(first, [named[n] for n in names], retain_graph=True)
        quadratic = sum((h * deltas[n]).sum() for h, n in zip(hvp, names, strict=True))
        pruning = -sum((grads[n] * named[n]).sum() for n in names)
        distance = torch.sqrt(sum((d**2).sum() for d in deltas.values()))
        taylor[u] = [float(v.detach()) for v in (first, first + 0.5 * quadratic, pruning, distance)]
    del grads  # the graph holds the parameters; they are changed in place below
    rows = []
    with torch.no_grad():
        base_value = float(loss(work))
        for u in units:
            names = list(unit_params(work, u))
            saved = {n: named[n].clone() for n in names}
            for n in names:
                named[n].copy_(target[n])
            actual = float(loss(work)) - base_value
            for n in names:
                named[n].copy_(saved[n])
            first, second, pruning, distance = taylor[u]
            n_params = sum(named[n].numel() for n in names)
            rows.append((u, n_params, actual, first, second, pruning, sensitivity[u], distance))
    return pd.DataFrame(rows, columns=COLUMNS)


def averaging_effects(
    models: Sequence[nn.Module],
    data: Sequence[tuple[torch.Tensor, torch.Tensor]],
    weights: Sequence[float],
    progress: bool = True,
) -> pd.DataFrame:
    """:func:`replacement_effects` of the weighted average θ̄ on every client's own mean
    training cross-entropy: one row per (client, unit), with the client's ``weight``."""
    if len(data) != len(models):
        raise ValueError(f"Need one (x, y) per model; got {len(data)} for {len(models)} models.")
    target = weighted_average(models, weights)
    frames = []
    for i, (model, (x, y)) in enumerate(
        tqdm(list(zip(models, data, strict=True)), desc="clients", disable=not progress)
    ):
        x64 = x.to(next(model.parameters()).device)
        effects = replacement_effects(model, target, mean_cross_entropy(x64, y.to(x64.device)))
        frames.append(effects.assign(client=i, weight=float(weights[i])))
    return pd.concat(frames, ignore_index=True)


def client_averaged(effects: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Per unit (and ``by`` columns, e.g. seed): the clients' weighted mean of every measured
    column, as the server averages s_k. Keeps the units' forward order."""
    values = [c for c in COLUMNS if c not in ("unit", "n_params")]
    keys = [*by, "unit"]
    order = {u: i for i, u in enumerate(dict.fromkeys(effects["unit"]))}
    rows = []
    for key, g in effects.groupby(keys, sort=False):
        w = g["weight"] / g["weight"].sum()
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                "depth": order[g["unit"].iloc[0]] + 1,
                "n_params": int(g["n_params"].iloc[0]),
                **{c: float((g[c] * w).sum()) for c in values},
            }
        )
    return pd.DataFrame(rows)


def first_epoch_averaging_check(data, config, progress: bool = True) -> pd.DataFrame:
    """:func:`averaging_effects` on the clients' models after one local epoch from the common
    initialisation (the models PLayer-FL computes its split on), training-size weights."""
    models = first_epoch_models(data, replace(config, progress=False))
    weights = [c.n_train for c in data.clients]
    pairs = [(c.x_train, c.y_train) for c in data.clients]
    return averaging_effects(models, pairs, weights, progress)
