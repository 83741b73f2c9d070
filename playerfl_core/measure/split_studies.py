"""Studies of the PLayer-FL split: the split from the clients' models, how much data it needs,
how it moves with the threshold, how it compares to published splits, and what it costs.

Every split here comes from :func:`playerfl_core.fl.sensitivity.server_split`, the rule PLayer-FL
itself runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from data_prep.registry import declarations
from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    federation_sensitivity,
    full_gradient,
    pooled_sensitivities,
    relative_rises,
    server_split,
)
from playerfl_core.fl.units import unit_params
from playerfl_core.measure.analytics import hessian_metrics, preserved_state


class _DeclaredReferenceSplits(Mapping):
    """Dataset -> {source: number of federated units p}, from the registered declarations
    (``Federation.reference_splits``; e.g. the authors' hard-coded lists, appendix §6.11, and
    the paper's transition layer, §8.6). Datasets without published splits are absent."""

    def _table(self) -> dict:
        return {f.name: dict(f.reference_splits) for f in declarations() if f.reference_splits}

    def __getitem__(self, name: str) -> dict:
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


REFERENCE_SPLITS = _DeclaredReferenceSplits()


def split_from_models(
    models: Sequence[nn.Module],
    clients: Sequence,
    threshold: float = DEFAULT_THRESHOLD,
    batch_size: int = 512,
    max_batches: int | None = None,
    generator: torch.Generator | None = None,
) -> tuple[int, dict[str, float]]:
    """The PLayer-FL server's decision from the clients' models: each client computes s_k on
    its training data (only ``max_batches`` random batches of ``batch_size`` if given), the
    server averages them with training-size weights and applies
    :func:`~playerfl_core.fl.sensitivity.choose_split`. Returns (p, averaged s_k)."""
    per_client, weights = {}, {}
    for i, (model, c) in enumerate(zip(models, clients, strict=True)):
        x, y = (c.x["train"], c.y["train"]) if hasattr(c, "x") else (c.x_train, c.y_train)
        with preserved_state(model):
            per_client[i] = federation_sensitivity(model, x, y, batch_size, max_batches, generator)
        weights[i] = len(y)
    return server_split(per_client, weights, threshold), pooled_sensitivities(per_client, weights)


def batch_study(
    models: Sequence[nn.Module],
    clients: Sequence,
    batch_size: int,
    batch_counts: Iterable[int],
    draws: int,
    seed: int,
    threshold: float = DEFAULT_THRESHOLD,
) -> pd.DataFrame:
    """How much data the split decision needs: the split from sensitivities measured on only m
    random mini-batches per client, ``draws`` times per m, against the full-data split.
    Columns: batches, draw, p, p_full, agree."""
    p_full, _ = split_from_models(models, clients, threshold)
    rows = []
    for m in batch_counts:
        for d in range(draws):
            gen = torch.Generator().manual_seed(1_000_003 * seed + 1_009 * m + d)
            p, _ = split_from_models(models, clients, threshold, batch_size, m, gen)
            rows.append((m, d, p, p_full, p == p_full))
    return pd.DataFrame(rows, columns=["batches", "draw", "p", "p_full", "agree"])


def server_splits(
    table: pd.DataFrame,
    thresholds: Iterable[float],
    weights: Callable[[dict], Mapping] | Mapping | None = None,
    by: Sequence[str] = ("dataset", "algorithm", "stage", "seed"),
) -> pd.DataFrame:
    """The split p the PLayer-FL rule picks from the clients' sensitivities of each group, for
    every threshold t. The server averages the clients' s_k with ``weights``: a mapping
    client → weight, or a function of the group (a dict of the ``by`` values) returning one,
    e.g. the clients' training sizes of that dataset and seed; default equal weights.
    Columns: ``by`` + threshold, p, fallback: True where no relative rise F_{l+1}/F_l − 1 of
    the pooled sensitivities exceeds t, so that p is the rule's fallback L − 1 (every unit but
    the head) rather than a rise the rule found; the two can give the same p."""
    by = list(by)
    sub = table[table["metric"] == "sensitivity"]
    out = []
    for key, grp in sub.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        per_client = {
            c: dict(zip(g["unit"], g["value"], strict=True))
            for c, g in grp.sort_values("depth").groupby("client")
        }
        w = weights(dict(zip(by, key, strict=True))) if callable(weights) else weights or {}
        w = {c: w.get(c, 1.0) for c in per_client}
        rises = relative_rises(list(pooled_sensitivities(per_client, w).values()))
        out.extend(
            (*key, float(t), server_split(per_client, w, t), not bool((rises > t).any()))
            for t in thresholds
        )
    return pd.DataFrame(out, columns=[*by, "threshold", "p", "fallback"])


def reference_agreement(
    splits: pd.DataFrame, references: Mapping[str, Mapping[str, int]] = REFERENCE_SPLITS
) -> pd.DataFrame:
    """For each dataset with published splits and each threshold: the share of seeds whose
    split equals each reference (:data:`REFERENCE_SPLITS`). Columns: dataset, threshold,
    reference, p_ref, agreement, n_seeds."""
    rows = []
    for (name, t), g in splits.groupby(["dataset", "threshold"], sort=False):
        for ref, p_ref in references.get(name, {}).items():
            rows.append((name, t, ref, p_ref, float((g["p"] == p_ref).mean()), len(g)))
    return pd.DataFrame(
        rows, columns=["dataset", "threshold", "reference", "p_ref", "agreement", "n_seeds"]
    )


MIN_TIMING_REPEATS = 5
"""Fewest timed repeats :func:`timed` and :func:`metric_cost` accept."""


def timed(fns: Sequence[Callable[[], object]], repeats: int = 21, warmup: int = 2) -> np.ndarray:
    """Wall-clock seconds, shape (repeats, len(fns)): each repeat calls every function of
    ``fns`` once, back to back, so the timings of one repeat share the machine's state; the
    ``warmup`` untimed rounds before absorb one-off costs (allocator growth, lazy
    initialisation, caches)."""
    if repeats < MIN_TIMING_REPEATS:
        raise ValueError(
            f"repeats must be ≥ {MIN_TIMING_REPEATS} for a stable median, got {repeats}."
        )
    if warmup < 0:
        raise ValueError(f"warmup must be ≥ 0, got {warmup}.")
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = np.empty((repeats, len(fns)))
    for i in range(repeats):
        for j, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i, j] = time.perf_counter() - start
    return times


def metric_cost(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    n_probes: int,
    repeats: int = 21,
    warmup: int = 2,
) -> dict[str, float]:
    """What the split rule costs against the curvature measure it stands in for: wall-clock
    seconds of federation sensitivity (all units, full data) and of the Hutchinson trace of every
    unit's Hessian block (``n_probes`` probes each), same model and data.

    Each is timed ``repeats`` times after ``warmup`` rounds (:func:`timed`); a single
    sub-millisecond timing is mostly noise. Returns the medians (``sensitivity_s``,
    ``hessian_trace_s``), their quartiles (``*_q1``, ``*_q3``), the ratio of the medians
    (``ratio``) with the quartiles of the per-repeat ratios (``ratio_q1``, ``ratio_q3``) and
    ``repeats``."""
    times = timed(
        [
            lambda: federation_sensitivity(model, x, y),
            lambda: hessian_metrics(model, x, y, n_probes=n_probes, eig_iters=0),
        ],
        repeats,
        warmup,
    )
    sens, trace = times[:, 0], times[:, 1]
    ratios = trace / sens
    q = np.quantile
    return {
        "sensitivity_s": float(np.median(sens)),
        "sensitivity_q1": float(q(sens, 0.25)),
        "sensitivity_q3": float(q(sens, 0.75)),
        "hessian_trace_s": float(np.median(trace)),
        "hessian_trace_q1": float(q(trace, 0.25)),
        "hessian_trace_q3": float(q(trace, 0.75)),
        "ratio": float(np.median(trace) / np.median(sens)),
        "ratio_q1": float(q(ratios, 0.25)),
        "ratio_q3": float(q(ratios, 0.75)),
        "repeats": repeats,
    }


def pruning_check(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, unit: str, max_params: int = 200
) -> pd.DataFrame:
    """Why (θ·g)² measures importance: for up to ``max_params`` parameters of ``unit`` (the
    first ones in order), the actual change of the mean loss when that single parameter is set
    to 0, next to its first-order prediction −θ·∂L/∂θ. Columns: param, index, theta, grad,
    predicted, actual. The model is restored afterwards."""
    grads = full_gradient(model, x, y, batch_size=512)
    rows = []
    with preserved_state(model), torch.no_grad():
        model.eval()
        base = float(F.cross_entropy(model(x), y))
        budget = max_params
        for name, p in unit_params(model, unit).items():
            flat, g = p.view(-1), grads[name].view(-1)
            for i in range(min(budget, flat.numel())):
                theta = float(flat[i])
                flat[i] = 0.0
                actual = float(F.cross_entropy(model(x), y)) - base
                flat[i] = theta
                rows.append((name, i, theta, float(g[i]), -theta * float(g[i]), actual))
            budget -= min(budget, flat.numel())
            if budget == 0:
                break
    return pd.DataFrame(rows, columns=["param", "index", "theta", "grad", "predicted", "actual"])
