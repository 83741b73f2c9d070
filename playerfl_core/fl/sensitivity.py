"""Federation sensitivity and the PLayer-FL split rule.

Federation sensitivity of layer unit k (the paper's metric, a pruning-importance score):

    s_k = (1 / n_k) · Σ_{p ∈ unit k} (θ_p · ∂L/∂θ_p)²

where L is the mean loss over the client's training data and n_k the number of parameters
(weights and biases) in the unit. (θ·g)² is the first-order change of the loss when θ_p is
set to zero, so a unit with high sensitivity is one whose exact values matter: averaging it with
other clients' values is expected to hurt. The cumulative form F_l = Σ_{k≤l} s_k / s_1 is what
the paper plots; the split rule looks for the first sharp relative rise of F.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from playerfl_core.fl.units import unit_names, unit_of

DEFAULT_THRESHOLD = 1.0
"""Default t: split where the next unit alone is more sensitive than all earlier units together
(F_{l+1}/F_l − 1 > 1, i.e. the cumulative curve more than doubles)."""


def full_gradient(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int = 512,
    max_batches: int | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Gradient of the mean cross-entropy over (x, y), accumulated batch by batch.

    With ``max_batches`` only that many batches (of a permutation drawn from ``generator``) are
    used, to study how many batches the metric needs. Uses ``torch.autograd.grad``, so the
    model's ``.grad`` fields and parameters are untouched; every module's train/eval mode is
    restored on exit.
    """
    names, params = zip(
        *[(n, p) for n, p in model.named_parameters() if p.requires_grad], strict=True
    )
    order = torch.arange(len(y))
    if max_batches is not None:
        order = torch.randperm(len(y), generator=generator)[: max_batches * batch_size]
    order = order.to(y.device)
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total = [torch.zeros_like(p) for p in params]
    try:
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx], reduction="sum") / len(order)
            for acc, g in zip(total, torch.autograd.grad(loss, params), strict=True):
                acc += g
    finally:
        for module, mode in modes:
            module.training = mode
    return dict(zip(names, total, strict=True))


def diagonal_fisher(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 256
) -> dict[str, torch.Tensor]:
    """The diagonal empirical Fisher: per parameter, the mean over (x, y) of the squared
    gradient of each sample's cross-entropy, a positive stand-in for the Hessian's diagonal
    (the second-order averaging-cost rule reads it). Per-sample gradients come from
    ``torch.func`` in batches, with the model in eval mode (dropout off), as
    :func:`full_gradient`; parameters and modes are untouched."""
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = dict(model.named_buffers())
    modes = [(m, m.training) for m in model.modules()]
    model.eval()

    def sample_loss(theta, xi, yi):
        out = functional_call(model, (theta, buffers), (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))
    total = {n: torch.zeros_like(p) for n, p in params.items()}
    try:
        for start in range(0, len(y), batch_size):
            grads = per_sample(params, x[start : start + batch_size], y[start : start + batch_size])
            for n, g in grads.items():
                total[n] += (g.detach() ** 2).sum(0)
    finally:
        for module, mode in modes:
            module.training = mode
    return {n: t / max(len(y), 1) for n, t in total.items()}


def federation_sensitivity(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int = 512,
    max_batches: int | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """s_k for every layer unit of ``model`` on the data (x, y), in forward order."""
    return sensitivity_from_gradient(
        model, full_gradient(model, x, y, batch_size, max_batches, generator)
    )


def sensitivity_from_gradient(
    model: nn.Module, grads: Mapping[str, torch.Tensor]
) -> dict[str, float]:
    """s_k from an already computed gradient ``{parameter name: ∂L/∂θ}`` (e.g. of
    :func:`full_gradient`), so other per-unit statistics can share one pass over the data."""
    sums = dict.fromkeys(unit_names(model), 0.0)
    counts = dict.fromkeys(unit_names(model), 0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in grads:
                sums[unit_of(name)] += float(((p * grads[name]) ** 2).sum())
                counts[unit_of(name)] += p.numel()
    return {u: sums[u] / counts[u] for u in sums}


def cumulative_sensitivity(s: Sequence[float]) -> np.ndarray:
    """F_l = Σ_{k≤l} s_k / s_1 (monotone non-decreasing for s ≥ 0)."""
    s = _checked(s)
    return np.cumsum(s) / s[0] if s[0] > 0 else np.cumsum(s)


def relative_rises(s: Sequence[float]) -> np.ndarray:
    """F_{l+1}/F_l − 1 = s_{l+1} / Σ_{k≤l} s_k for l = 1 … L−1 (inf where F_l = 0)."""
    s = _checked(s)
    cum = np.cumsum(s)[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cum > 0, s[1:] / np.where(cum > 0, cum, 1), np.inf)


def choose_split(s: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> int:
    """The transition point p: the first l < L with F_{l+1}/F_l − 1 > t, else L − 1.

    Units 1..p are federated; the classifier head (unit L) never is, so 1 ≤ p ≤ L − 1.
    """
    if not (threshold >= 0 and np.isfinite(threshold)):
        raise ValueError(f"The split threshold t must be a finite number ≥ 0, got {threshold}.")
    rises = relative_rises(s)
    above = np.flatnonzero(rises > threshold)
    return int(above[0]) + 1 if len(above) else len(rises)


def average_sensitivities(
    per_client: Mapping[int, Mapping[str, float]], weights: Mapping[int, float]
) -> dict[str, float]:
    """Server side: weighted mean of the clients' per-unit sensitivities."""
    total = sum(weights[c] for c in per_client)
    units = next(iter(per_client.values())).keys()
    return {u: sum(weights[c] * s[u] for c, s in per_client.items()) / total for u in units}


def _checked(s: Sequence[float]) -> np.ndarray:
    s = np.asarray(list(s), dtype=float)
    if s.ndim != 1 or len(s) < 2:
        raise ValueError(f"Need sensitivities for at least two units, got {s.tolist()}.")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"Sensitivities must be finite and ≥ 0, got {s.tolist()}.")
    return s


SERVER_AGGREGATES = ("mean", "median", "geomean")
"""How the server pools the clients' s_k before the split rule (``"mean"`` is the paper's)."""


def pooled_sensitivities(
    per_client: Mapping[int, Mapping[str, float]],
    weights: Mapping[int, float],
    aggregate: str = "mean",
) -> dict[str, float]:
    """The server's per-unit s_k pooled from the clients' reports, in the clients' unit order.

    * ``"mean"``: the training-size weighted mean (:func:`average_sensitivities`, the paper's);
    * ``"median"``: the per-unit median over clients, so no single client moves the split;
    * ``"geomean"``: the weighted geometric mean (mean of log s_k), so a client whose
      sensitivities are on a larger scale (e.g. a small, badly fitted client) does not dominate.
    """
    if aggregate not in SERVER_AGGREGATES:
        raise ValueError(f"aggregate must be one of {SERVER_AGGREGATES}, got {aggregate!r}.")
    if aggregate == "mean":
        return average_sensitivities(per_client, weights)
    units = list(next(iter(per_client.values())))
    values = np.array([[per_client[c][u] for u in units] for c in per_client], dtype=float)
    if aggregate == "median":
        pooled = np.median(values, axis=0)
    else:
        w = np.array([weights[c] for c in per_client], dtype=float)
        logs = np.log(np.maximum(values, np.finfo(float).tiny))
        pooled = np.exp((w[:, None] * logs).sum(0) / w.sum())
    return dict(zip(units, pooled.tolist(), strict=True))


def server_split(
    per_client: Mapping[int, Mapping[str, float]],
    weights: Mapping[int, float],
    threshold: float = DEFAULT_THRESHOLD,
    aggregate: str = "mean",
) -> int:
    """The server's split from the clients' per-unit sensitivities: pool
    (:func:`pooled_sensitivities`), then :func:`choose_split`. The one place the split is
    computed from clients' reports: PLayer-FL, the split studies and the split oracle all call
    it; the default is the paper's rule (weighted mean, threshold 1).
    """
    pooled = pooled_sensitivities(per_client, weights, aggregate)
    return choose_split(list(pooled.values()), threshold)
