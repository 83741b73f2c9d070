"""Layer analytics: per-unit measures of how clients' models agree, and of their loss curvature.

The paper's evidence (claims C1 and C2) rests on these quantities. The authors measure them on a
single mini-batch, call the nuclear norm of one Hessian-vector product a "Hessian eigenvalue sum"
and an angular Procrustes distance "CKA" (appendix §8, §10.4). Here each quantity is what its
name says. For a client with training data (x, y), L = mean cross-entropy over all of it, and a
layer unit k with n_k parameters θ (weights and biases):

``sensitivity``       s_k = (1/n_k) Σ_p (θ_p ∂L/∂θ_p)², federation sensitivity (shared with the
                      PLayer-FL split rule, :mod:`playerfl_core.fl.sensitivity`);
``cum_sensitivity``   F_k = Σ_{j≤k} s_j / s_1, its cumulative form (what the paper plots);
``grad_variance``     the variance, over the unit's parameter entries, of the full-data gradient
                      ∂L/∂θ (the paper's "gradient variance", on all the data, not one batch);
``grad_noise``        (1/n_k) Σ_p Var_B(ĝ_p): the variance of the unit's mini-batch gradient
                      across random batches of the training size B, averaged over parameters;
``hessian_trace``     tr(H_kk), the trace of the unit's diagonal Hessian block (Hutchinson);
``hessian_trace_per_param``  tr(H_kk) / n_k, on the per-parameter scale of s_k;
``hessian_top_eig``   the largest-magnitude eigenvalue of H_kk (power iteration);
``cka``               linear CKA between two clients' unit outputs on a shared probe set
                      (pairwise rows, the other client in column ``other``);
``cka_dissimilarity`` 1 − mean CKA of a client to the other clients (per client).

Every function leaves the model's parameters, ``.grad`` fields, ``requires_grad`` flags and
train/eval modes as it found them. Measuring these on trained clients, over seeds, and the
studies built on them live in :mod:`playerfl_core.measure.layer_studies`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from playerfl_core.fl.sensitivity import (
    full_gradient,
    sensitivity_from_gradient,
)
from playerfl_core.fl.units import unit_names, unit_of, unit_params


# -- state hygiene -------------------------------------------------------------------------------
@contextmanager
def preserved_state(model: nn.Module):
    """Restore every module's train/eval mode and every parameter's ``requires_grad`` and
    ``.grad`` on exit (pyhessian changes all three)."""
    modes = [(m, m.training) for m in model.modules()]
    params = list(model.parameters())
    flags = [p.requires_grad for p in params]
    grads = [p.grad for p in params]
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode
        for p, flag, g in zip(params, flags, grads, strict=True):
            p.requires_grad_(flag)
            p.grad = g


# -- first-order statistics ----------------------------------------------------------------------
def gradient_statistics(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512
) -> dict[str, dict[str, float]]:
    """``{"sensitivity": {unit: s_k}, "grad_variance": {unit: v_k}}`` from one full-data
    gradient.

    ``grad_variance`` is the unbiased variance of the entries of ∂L/∂θ over the unit's
    parameters: the authors' "gradient variance" (appendix §8.3), but with the gradient of the
    loss over all of the client's training data rather than of one mini-batch, so it measures
    how spread the unit's gradient is, not sampling noise (that is :func:`gradient_noise`).
    ``batch_size`` only sets memory use.
    """
    grads = full_gradient(model, x, y, batch_size=batch_size)
    return {
        "sensitivity": sensitivity_from_gradient(model, grads),
        "grad_variance": unit_variance(model, grads),
    }


def unit_variance(model: nn.Module, grads: Mapping[str, torch.Tensor]) -> dict[str, float]:
    flat: dict[str, list[torch.Tensor]] = {u: [] for u in unit_names(model)}
    for name, g in grads.items():
        flat[unit_of(name)].append(g.reshape(-1))
    return {u: float(torch.cat(gs).double().var()) for u, gs in flat.items() if gs}


def _unit_mean(model: nn.Module, values: Mapping[str, torch.Tensor]) -> dict[str, float]:
    sums = dict.fromkeys(unit_names(model), 0.0)
    counts = dict.fromkeys(unit_names(model), 0)
    for name, v in values.items():
        sums[unit_of(name)] += float(v.sum())
        counts[unit_of(name)] += v.numel()
    return {u: sums[u] / counts[u] for u in sums if counts[u]}


def _noise_factor(n: int, b: int, batch_size: int | None) -> float:
    """Var(ĝ_B) / Var(ĝ_b) for batches drawn without replacement from n samples:
    Var(ĝ_b) = σ²/b · (n − b)/(n − 1), so the ratio is b(n − B) / (B(n − b)); with
    ``batch_size=None`` it is σ² / Var(ĝ_b) = b(n − 1)/(n − b)."""
    if batch_size is None:
        return b * (n - 1) / (n - b)
    return b * max(n - batch_size, 0) / (batch_size * (n - b))


def gradient_noise(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int | None,
    micro_batch: int = 16,
    generator: torch.Generator | None = None,
    full_grad: Mapping[str, torch.Tensor] | None = None,
) -> dict[str, float]:
    """Gradient noise: mean over the unit's parameters of the variance of the mini-batch
    gradient across random batches of size B = ``batch_size`` (the training batch size).

    Estimated in one pass over the data: the data are shuffled (``generator``) and cut into
    m = ⌊n/b⌋ micro-batches of size b = ``micro_batch``; with ḡ the full-data gradient,
    V̂_b = (1/m) Σ_j (ĝ_j − ḡ)² is unbiased for Var(ĝ_b) (each group is a uniform sample
    without replacement, and ḡ is the exact mean, so no degree of freedom is lost). Because
    Var(ĝ_b) = σ²/b · (n − b)/(n − 1) for per-sample variance σ², the estimate is rescaled
    exactly to batches of size B. ``batch_size=None`` gives σ² itself; B ≥ n gives 0 (the
    batch is the whole data set). Many small groups make a far better estimate than the
    n/B training batches would, at the cost of about one epoch of backward passes.
    ``full_grad`` (ḡ from :func:`~playerfl_core.fl.sensitivity.full_gradient`) saves one pass.
    """
    n = len(y)
    b = min(micro_batch, n // 2)
    if b < 1:
        raise ValueError(f"Gradient noise needs at least two samples, got {n}.")
    mean = full_grad if full_grad is not None else full_gradient(model, x, y, batch_size=512)
    m = n // b
    order = torch.randperm(n, generator=generator)[: m * b].to(y.device)
    names, params = zip(
        *[(k, p) for k, p in model.named_parameters() if p.requires_grad], strict=True
    )
    dev = {k: torch.zeros_like(p, dtype=torch.float64) for k, p in zip(names, params, strict=True)}
    with preserved_state(model):
        model.eval()
        for j in range(m):
            idx = order[j * b : (j + 1) * b]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            for k, g in zip(names, torch.autograd.grad(loss, params), strict=True):
                dev[k] += (g.double() - mean[k].double()) ** 2
    factor = _noise_factor(n, b, batch_size) / m
    return _unit_mean(model, {k: v * factor for k, v in dev.items()})


def gradient_noise_exact(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int | None, chunk: int = 256
) -> dict[str, float]:
    """The exact value :func:`gradient_noise` estimates, from per-sample gradients
    (``torch.func.vmap``): σ_p² = population variance of the n per-sample gradients, then
    Var(ĝ_B,p) = σ_p²/B · (n − B)/(n − 1). Exact but slow for conv nets; a reference for tests.
    """
    n = len(y)
    if n < 2:
        raise ValueError(f"Gradient noise needs at least two samples, got {n}.")
    names = [k for k, p in model.named_parameters() if p.requires_grad]
    params = {k: p.detach() for k, p in model.named_parameters()}

    def loss_one(p, xi, yi):
        out = torch.func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = torch.func.vmap(torch.func.grad(loss_one), in_dims=(None, 0, 0))
    total = {k: torch.zeros_like(params[k], dtype=torch.float64) for k in names}
    squares = {k: torch.zeros_like(params[k], dtype=torch.float64) for k in names}
    with preserved_state(model):
        model.eval()
        for start in range(0, n, chunk):
            g = per_sample(params, x[start : start + chunk], y[start : start + chunk])
            for k in names:
                gk = g[k].double()
                total[k] += gk.sum(0)
                squares[k] += (gk**2).sum(0)
    factor = 1.0 if batch_size is None else max(n - batch_size, 0) / (batch_size * (n - 1))
    sigma2 = {k: (squares[k] / n - (total[k] / n) ** 2).clamp_min(0) * factor for k in names}
    return _unit_mean(model, sigma2)


# -- curvature -----------------------------------------------------------------------------------
def hessian_unit(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    unit: str,
    n_probes: int = 100,
    eig_iters: int = 100,
    eig_tol: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Trace and top eigenvalue of the unit's diagonal Hessian block H_kk of L on (x, y).

    Uses pyhessian restricted to the unit (the other parameters are frozen while the
    ``hessian`` object lives). Trace: Hutchinson's estimator, the mean of vᵀHv over exactly
    ``n_probes`` Rademacher vectors v (pyhessian's early stop is defeated, see below). Top
    eigenvalue: power iteration, i.e. the eigenvalue largest in *magnitude*. Probes are drawn
    from torch's RNG inside ``fork_rng`` seeded with ``seed``, so results are reproducible and
    the global RNG is untouched. pyhessian quirks handled: ``.grad`` is cleared before the
    object is built (leftovers from an earlier build double the Hessian, a pyhessian quirk), the
    model's modes are restored (it calls ``eval()``), its create_graph warning is silenced, and
    its ``trace`` stops early when the running mean is negative, so it is called until
    ``n_probes`` samples exist (one uninterrupted probe stream). ``eig_iters=0`` skips the
    eigenvalue (NaN), e.g. to time the trace alone.
    """
    from pyhessian import hessian  # deferred: about 1.2 s to import, only the Hessian needs it

    if n_probes < 1 or eig_iters < 0:
        raise ValueError(f"Need n_probes ≥ 1 and eig_iters ≥ 0, got {n_probes}, {eig_iters}.")
    own = set(unit_params(model, unit))
    devices = [x.device] if x.device.type == "cuda" else []
    with preserved_state(model), torch.random.fork_rng(devices=devices), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Using backward\(\) with create_graph=True")
        for name, p in model.named_parameters():
            p.requires_grad_(name in own)
        model.zero_grad(set_to_none=True)
        torch.manual_seed(seed)
        h = hessian(model, nn.CrossEntropyLoss(), data=(x, y), cuda=x.device.type == "cuda")
        samples: list[float] = []
        while len(samples) < n_probes:
            samples += h.trace(maxIter=n_probes - len(samples), tol=0.0)
        top = h.eigenvalues(maxIter=eig_iters, tol=eig_tol, top_n=1)[0][0] if eig_iters else np.nan
        del h
        model.zero_grad(set_to_none=True)  # drop the graph-holding gradients before restoring
    return {"hessian_trace": float(np.mean(samples)), "hessian_top_eig": float(top)}


def hessian_metrics(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, units: Iterable[str] | None = None, **kwargs
) -> dict[str, dict[str, float]]:
    """:func:`hessian_unit` for every unit: ``{metric: {unit: value}}``."""
    out: dict[str, dict[str, float]] = {"hessian_trace": {}, "hessian_top_eig": {}}
    for unit in units or unit_names(model):
        for metric, value in hessian_unit(model, x, y, unit, **kwargs).items():
            out[metric][unit] = value
    return out


# -- representations -----------------------------------------------------------------------------
def linear_cka(a: torch.Tensor, b: torch.Tensor) -> float:
    """Linear CKA (Kornblith et al., 2019) between two representations of the same n inputs.

    CKA = ‖Bᵀ A‖²_F / (‖Aᵀ A‖_F ‖Bᵀ B‖_F) with column-centred A (n×d₁), B (n×d₂); computed in
    float64 through the n×n Gram matrices when n < d. 1 for identical representations,
    invariant to orthogonal transforms and isotropic scaling; NaN if either is constant.
    """
    a = a.reshape(len(a), -1).double()
    b = b.reshape(len(b), -1).double()
    if len(a) != len(b):
        raise ValueError(f"CKA needs the same inputs: got {len(a)} and {len(b)} rows.")
    a = a - a.mean(0)
    b = b - b.mean(0)
    if len(a) < max(a.shape[1], b.shape[1]):
        ka, kb = a @ a.T, b @ b.T
        num, den = (ka * kb).sum(), ka.norm() * kb.norm()
    else:
        num, den = (b.T @ a).pow(2).sum(), (a.T @ a).norm() * (b.T @ b).norm()
    return float(num / den) if den > 0 else float("nan")


@torch.no_grad()
def unit_outputs(
    model: nn.Module, x: torch.Tensor, units: Iterable[str] | None = None, batch_size: int = 1024
) -> dict[str, torch.Tensor]:
    """Each unit's output on ``x`` (eval mode), flattened per sample, via forward hooks."""
    units = list(units or unit_names(model))
    store: dict[str, list[torch.Tensor]] = {u: [] for u in units}
    hooks = [
        getattr(model, u).register_forward_hook(
            lambda _m, _i, out, u=u: store[u].append(out.detach().flatten(1))
        )
        for u in units
    ]
    try:
        with preserved_state(model):
            model.eval()
            for start in range(0, len(x), batch_size):
                model(x[start : start + batch_size])
    finally:
        for h in hooks:
            h.remove()
    return {u: torch.cat(v) for u, v in store.items()}


def cka_matrices(
    models: Sequence[nn.Module], probe: torch.Tensor, units: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """``{unit: K×K matrix}`` of linear CKA between the K models' unit outputs on ``probe``."""
    outs = [unit_outputs(m, probe, units) for m in models]
    k = len(models)
    result = {}
    for unit in outs[0]:
        mat = np.eye(k)
        for i in range(k):
            for j in range(i + 1, k):
                mat[i, j] = mat[j, i] = linear_cka(outs[i][unit], outs[j][unit])
        result[unit] = mat
    return result


def probe_set(clients: Sequence, n_per_client: int, seed: int) -> torch.Tensor:
    """A probe set shared by all clients: ``n_per_client`` training inputs drawn without
    replacement from each client (all of a smaller client's), with a generator seeded by
    ``seed``. Accepts engine clients (``.x["train"]``) or data clients (``.x_train``)."""
    gen = torch.Generator().manual_seed(seed)
    parts = []
    for c in clients:
        x = c.x["train"] if hasattr(c, "x") else c.x_train
        idx = torch.randperm(len(x), generator=gen)[:n_per_client].to(x.device)
        parts.append(x[idx])
    return torch.cat(parts)
