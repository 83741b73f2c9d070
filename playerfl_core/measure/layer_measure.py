"""The layer-measurement driver: train, and measure every client's model per unit.

Built on the per-unit measures of :mod:`playerfl_core.measure.analytics` (whose docstring defines
each metric). :func:`layer_analytics` trains Local and FedAvg and measures every metric on each
client's model after its local epoch (before aggregation, through the engine's
:class:`~playerfl_core.fl.engine.Observer` hook), after the first epoch and at the end, over
several seeds, into one long tidy table (columns :data:`COLUMNS`). Summaries over seeds are in
:mod:`playerfl_core.stats.seed_stats`; the PLayer-FL split studies in
:mod:`playerfl_core.measure.split_studies`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from data_prep import load
from data_prep.registry import federation
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import Observer, run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.sensitivity import (
    cumulative_sensitivity,
    full_gradient,
    sensitivity_from_gradient,
)
from playerfl_core.fl.units import unit_names, unit_sizes
from playerfl_core.measure.analytics import (
    cka_matrices,
    gradient_noise,
    hessian_metrics,
    probe_set,
    unit_variance,
)
from playerfl_core.stats.seed_stats import NO_OTHER

METRICS = (
    "sensitivity",
    "cum_sensitivity",
    "grad_variance",
    "grad_noise",
    "hessian_trace",
    "hessian_trace_per_param",
    "hessian_top_eig",
    "cka",
    "cka_dissimilarity",
)


COLUMNS = [
    "dataset",
    "algorithm",
    "seed",
    "client",
    "stage",
    "round",
    "unit",
    "depth",
    "metric",
    "value",
    "other",
]


@dataclass(frozen=True)
class AnalyticsSettings:
    """Sizes of the measurements (the ``paper`` profile's are the defaults)."""

    metrics: tuple[str, ...] = METRICS
    hutchinson_probes: int = 100
    eig_iters: int = 100
    eig_tol: float = 1e-3
    hessian_samples: int | None = None
    """Samples of the client's training data the Hessian is taken on (None: all of it)."""
    probe_per_client: int = 100
    sensitivity_batch_size: int = 512
    noise_micro_batch: int = 16

    def __post_init__(self):
        unknown = set(self.metrics) - set(METRICS)
        if unknown:
            raise ValueError(f"Unknown metrics {sorted(unknown)}; known: {METRICS}.")


ANALYTICS_PROFILES = {
    "quick": AnalyticsSettings(
        hutchinson_probes=12, eig_iters=12, hessian_samples=128, probe_per_client=40
    ),
    "paper": AnalyticsSettings(),
}


@dataclass(frozen=True)
class AnalyticsPlan:
    seeds: list[int]
    rounds: int | None
    """None: the training profile's rounds."""
    settings: AnalyticsSettings


def analytics_plan(
    dataset: str, profile: str, seeds: Sequence[int] | None = None, rounds: int | None = None
) -> AnalyticsPlan:
    """Seeds, rounds and measurement settings for ``dataset`` under ``profile``: explicit seeds
    and rounds win, else the dataset's declared ``analytics`` plan (default: 3 seeds, the
    training profile's rounds) on top of :data:`ANALYTICS_PROFILES`."""
    if profile not in ANALYTICS_PROFILES:
        raise ValueError(f"Unknown profile {profile!r}; use one of {list(ANALYTICS_PROFILES)}.")
    plan = federation(dataset).analytics.get(profile, {})
    return AnalyticsPlan(
        seeds=list(seeds) if seeds is not None else list(range(plan.get("seeds", 3))),
        rounds=rounds if rounds is not None else plan.get("rounds"),
        settings=replace(ANALYTICS_PROFILES[profile], **plan.get("settings", {})),
    )


def measure_model(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    settings: AnalyticsSettings = ANALYTICS_PROFILES["paper"],
    seed: int = 0,
) -> list[tuple[str, str, float]]:
    """Every per-client metric of ``settings.metrics`` (all but the CKA ones) for one model on
    one client's training data, as ``(unit, metric, value)`` triples; ``batch_size`` is the
    training batch size B that sets the gradient noise."""
    wanted = set(settings.metrics)
    rows: list[tuple[str, str, float]] = []

    def add(metric: str, values: Mapping[str, float]):
        rows.extend((u, metric, float(v)) for u, v in values.items())

    units = unit_names(model)
    grads = None
    if wanted & {"sensitivity", "cum_sensitivity", "grad_variance", "grad_noise"}:
        grads = full_gradient(model, x, y, batch_size=settings.sensitivity_batch_size)
    if wanted & {"sensitivity", "cum_sensitivity"}:
        s = sensitivity_from_gradient(model, grads)
        if "sensitivity" in wanted:
            add("sensitivity", s)
        if "cum_sensitivity" in wanted:
            cum = cumulative_sensitivity([s[u] for u in units])
            add("cum_sensitivity", dict(zip(units, cum, strict=True)))
    if "grad_variance" in wanted:
        add("grad_variance", unit_variance(model, grads))
    if "grad_noise" in wanted:
        gen = torch.Generator().manual_seed(seed)
        noise = gradient_noise(model, x, y, batch_size, settings.noise_micro_batch, gen, grads)
        add("grad_noise", noise)
    if wanted & {"hessian_trace", "hessian_trace_per_param", "hessian_top_eig"}:
        xh, yh = x, y
        if settings.hessian_samples is not None and settings.hessian_samples < len(y):
            gen = torch.Generator().manual_seed(seed)
            idx = torch.randperm(len(y), generator=gen)[: settings.hessian_samples].to(y.device)
            xh, yh = x[idx], y[idx]
        h = hessian_metrics(
            model,
            xh,
            yh,
            n_probes=settings.hutchinson_probes,
            eig_iters=settings.eig_iters,
            eig_tol=settings.eig_tol,
            seed=seed,
        )
        for metric in ("hessian_trace", "hessian_top_eig"):
            if metric in wanted:
                add(metric, h[metric])
        if "hessian_trace_per_param" in wanted:
            sizes = unit_sizes(model)
            add("hessian_trace_per_param", {u: v / sizes[u] for u, v in h["hessian_trace"].items()})
    return rows


def cka_rows(
    models: Sequence[nn.Module], probe: torch.Tensor, wanted: Iterable[str]
) -> list[tuple[int, int, str, str, float]]:
    """``(client, other, unit, metric, value)`` rows: pairwise ``cka`` and per-client
    ``cka_dissimilarity`` = 1 − mean CKA to the other clients."""
    wanted = set(wanted)
    rows = []
    for unit, mat in cka_matrices(models, probe).items():
        k = len(mat)
        for i in range(k):
            if "cka" in wanted:
                rows.extend((i, j, unit, "cka", float(mat[i, j])) for j in range(k) if j != i)
            if "cka_dissimilarity" in wanted and k > 1:
                rows.append(
                    (
                        i,
                        NO_OTHER,
                        unit,
                        "cka_dissimilarity",
                        1.0 - float(np.mean(np.delete(mat[i], i))),
                    )
                )
    return rows


class StageObserver(Observer):
    """Calls ``on_measure(run, round, stage)`` after every client's local epoch and before the
    server step (the authors' measurement point, §8.2), on the rounds of ``stages``
    (round → stage label)."""

    def __init__(self, stages: Mapping[int, str], on_measure: Callable):
        self.stages, self.on_measure = dict(stages), on_measure

    def after_local_updates(self, run, rnd: int) -> None:
        if rnd in self.stages:
            self.on_measure(run, rnd, self.stages[rnd])


def layer_analytics(
    dataset,
    seeds: Iterable[int] = (0,),
    profile: str = "quick",
    algorithms: Sequence[str] = ("local", "fedavg"),
    stages: Mapping[int, str] | None = None,
    settings: AnalyticsSettings | Mapping[int, AnalyticsSettings] | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    progress: bool = False,
    **config_overrides,
) -> pd.DataFrame:
    """Train each algorithm on ``dataset`` for every seed and measure every client's model
    after its local epoch, before aggregation, at the rounds of ``stages``.

    ``stages`` maps a round index to a label; default ``{0: "first", R−1: "final"}``: after the
    first epoch from the common initialisation and at the end of training. The data of seed s is
    ``data_loader(s)`` (default ``data_prep.load(dataset, profile, seed=s)``) and the training
    configuration ``make_config(dataset, profile, seed=s, **config_overrides)``. Round-0 models
    are identical for algorithms that train every unit locally from the same initialisation
    (local and FedAvg: same weights, same batch order); when they are bit-identical the
    measurement is reused instead of repeated. ``settings`` (default: the profile's) may map
    a round to its own settings, e.g. every metric after epoch 1 and only the cheap
    sensitivity later; by default the dataset's :func:`analytics_plan` settings. Returns the
    long table of :data:`COLUMNS`.
    """
    if data_loader is None:

        def data_loader(s):
            return load(dataset, profile=profile, seed=s)

    settings = settings or analytics_plan(dataset, profile).settings
    rows: list[tuple] = []
    for seed in seeds:
        data = data_loader(seed)
        config = make_config(
            dataset, profile, seed=seed, device=device, progress=progress, **config_overrides
        )
        stage_of = dict(stages) if stages is not None else {0: "first", config.rounds - 1: "final"}
        bad = [r for r in stage_of if not 0 <= r < config.rounds]
        if bad:
            raise ValueError(f"Stage rounds {bad} are outside 0..{config.rounds - 1}.")
        measurer = _SeedMeasurer(data.name, seed, settings, rows)
        for name in algorithms:
            observer = StageObserver(stage_of, measurer.hook(name))
            run_federated(data, get_algorithm(name), config, observers=[observer])
    return pd.DataFrame(rows, columns=COLUMNS)


class _SeedMeasurer:
    """Measures the runs of one seed into ``rows``; shares one probe set across algorithms
    and reuses a measurement when a round's client models are bit-identical to one already
    measured (round 0 of local and FedAvg)."""

    def __init__(self, dataset: str, seed: int, settings, rows: list):
        self.dataset, self.seed, self.settings, self.rows = dataset, seed, settings, rows
        self.probe = None
        self.cache: dict[int, tuple[list[torch.Tensor], list[tuple]]] = {}

    def _settings(self, rnd: int) -> AnalyticsSettings:
        if isinstance(self.settings, AnalyticsSettings):
            return self.settings
        if rnd not in self.settings:
            raise ValueError(f"No analytics settings for round {rnd}.")
        return self.settings[rnd]

    def hook(self, algorithm_name: str) -> Callable:
        return lambda run, rnd, stage: self.measure(run, rnd, stage, algorithm_name)

    def measure(self, run, rnd: int, stage: str, algorithm_name: str) -> None:
        if self.probe is None:
            self.probe = probe_set(run.clients, self._settings(rnd).probe_per_client, self.seed)
        snapshot = [
            torch.cat([p.detach().reshape(-1) for p in c.model.parameters()]) for c in run.clients
        ]
        cached = self.cache.get(rnd)
        if cached is not None and all(
            torch.equal(a, b) for a, b in zip(cached[0], snapshot, strict=True)
        ):
            measured = cached[1]
        else:
            measured = _measure_run(run, self.probe, self._settings(rnd), self.seed)
            self.cache[rnd] = (snapshot, measured)
        depth = {u: i + 1 for i, u in enumerate(unit_names(run.clients[0].model))}
        for client, other, unit, metric, value in measured:
            self.rows.append(
                (
                    self.dataset,
                    algorithm_name,
                    self.seed,
                    client,
                    stage,
                    rnd,
                    unit,
                    depth[unit],
                    metric,
                    value,
                    other,
                )
            )


def _measure_run(run, probe, settings: AnalyticsSettings, seed: int) -> list[tuple]:
    out = []
    for c in run.clients:
        for unit, metric, value in measure_model(
            c.model, c.x["train"], c.y["train"], run.config.batch_size, settings, seed
        ):
            out.append((c.id, NO_OTHER, unit, metric, value))
    if set(settings.metrics) & {"cka", "cka_dissimilarity"}:
        out.extend(cka_rows([c.model for c in run.clients], probe, settings.metrics))
    return out


def first_epoch_models(data, config) -> list[nn.Module]:
    """Every client's model after one local epoch from the common initialisation: the models
    the PLayer-FL split is computed on (identical for local and FedAvg)."""
    run = run_federated(data, get_algorithm("local"), replace(config, rounds=1))
    return [c.model for c in run.clients]
