"""Layer studies: the measurement driver, the chapters' plans and the summaries over seeds.

Built on the per-unit measures of :mod:`playerfl_core.analytics` (whose docstring defines each
metric). :func:`layer_analytics` trains Local and FedAvg and measures every metric on each
client's model after its local epoch (before aggregation), after the first epoch and at the end,
over several seeds, into one long tidy table (columns :data:`COLUMNS`). The other functions
study the PLayer-FL split (stability, number of batches, threshold, cost) and summarise over
seeds (t-intervals, seeded bootstrap, Spearman trends); verdicts live in
:mod:`playerfl_core.claims`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn

from data_prep.registry import declarations, federation
from playerfl_core.analytics import (
    cka_matrices,
    gradient_noise,
    hessian_metrics,
    preserved_state,
    probe_set,
    unit_variance,
)
from playerfl_core.engine import Observer
from playerfl_core.sensitivity import (
    DEFAULT_THRESHOLD,
    cumulative_sensitivity,
    federation_sensitivity,
    full_gradient,
    pooled_sensitivities,
    sensitivity_from_gradient,
    server_split,
)
from playerfl_core.units import unit_names, unit_params, unit_sizes

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
NO_OTHER = -1
"""Value of the ``other`` column for rows that are not pairwise."""


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


# -- one measurement -----------------------------------------------------------------------------
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


# -- chapter plans -------------------------------------------------------------------------------
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


# -- the driver ----------------------------------------------------------------------------------
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
    from playerfl_core.algorithms import get_algorithm
    from playerfl_core.engine import run_federated
    from playerfl_core.profiles import make_config

    if data_loader is None:
        from data_prep import load

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
    from playerfl_core.algorithms import get_algorithm
    from playerfl_core.engine import run_federated

    run = run_federated(data, get_algorithm("local"), replace(config, rounds=1))
    return [c.model for c in run.clients]


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
    :func:`~playerfl_core.sensitivity.choose_split`. Returns (p, averaged s_k)."""
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


MIN_TIMING_REPEATS = 5
"""Fewest timed repeats :func:`timed` and :func:`metric_cost` accept."""


def timed(fns: Sequence[Callable[[], object]], repeats: int = 21, warmup: int = 2) -> np.ndarray:
    """Wall-clock seconds, shape (repeats, len(fns)): each repeat calls every function of
    ``fns`` once, back to back, so the timings of one repeat share the machine's state; the
    ``warmup`` untimed rounds before absorb one-off costs (allocator growth, lazy
    initialisation, caches)."""
    import time

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


# -- summaries over seeds ------------------------------------------------------------------------
def t_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lower, upper): Student-t interval of the mean (NaN bounds with < 2 values)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return (float("nan"),) * 3
    m = float(v.mean())
    if len(v) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - half, m + half


def bootstrap_interval(
    values: Iterable[float], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """(mean, lower, upper): seeded percentile bootstrap of the mean."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return float(v.mean()), float(lo), float(hi)


def seed_summary(
    table: pd.DataFrame,
    by: Sequence[str],
    value: str = "value",
    level: float = 0.95,
    method: str = "t",
    bounds: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Mean and confidence interval over seeds of ``value``, after averaging over clients
    within each seed (clients of one run are not independent replicates; seeds are).

    Columns: ``by`` + mean, lo, hi, n_seeds. ``method``: "t" or "bootstrap". ``bounds`` clips
    the interval to the quantity's range (e.g. (−1, 1) for a correlation).
    """
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}.")
    interval = t_interval if method == "t" else bootstrap_interval
    by = list(by)
    per_seed = table.groupby([*by, "seed"], sort=False)[value].mean().reset_index()
    out = []
    for key, grp in per_seed.groupby(by, sort=False):
        m, lo, hi = interval(grp[value], level)
        if bounds is not None:
            lo, hi = float(np.clip(lo, *bounds)), float(np.clip(hi, *bounds))
        key = key if isinstance(key, tuple) else (key,)
        out.append((*key, m, lo, hi, int(grp[value].notna().sum())))
    return pd.DataFrame(out, columns=[*by, "mean", "lo", "hi", "n_seeds"])


def cka_matrix_from_table(
    table: pd.DataFrame, dataset: str, algorithm: str, stage: str
) -> dict[str, np.ndarray]:
    """``{unit: K×K}`` linear CKA of one dataset, algorithm and stage, averaged over seeds."""
    sub = table[
        (table["metric"] == "cka")
        & (table["dataset"] == dataset)
        & (table["algorithm"] == algorithm)
        & (table["stage"] == stage)
    ]
    k = int(max(sub["client"].max(), sub["other"].max())) + 1
    out = {}
    for unit, g in sub.sort_values("depth").groupby("unit", sort=False):
        mat = np.eye(k)
        for (i, j), v in g.groupby(["client", "other"])["value"].mean().items():
            mat[int(i), int(j)] = v
        out[unit] = mat
    return out


def stage_agreement(
    table: pd.DataFrame,
    metric: str,
    a: str = "first",
    b: str = "final",
    by: Sequence[str] = ("dataset", "algorithm"),
) -> pd.DataFrame:
    """Per seed: Spearman ρ across units between the client-averaged ``metric`` profile at
    stage ``a`` and at stage ``b`` (does the ordering seen early persist?). Columns: ``by`` +
    seed, rho."""
    by = list(by)
    sub = table[(table["metric"] == metric) & (table["other"] == NO_OTHER)]
    prof = sub.groupby([*by, "seed", "stage", "depth"], sort=False)["value"].mean().unstack("stage")
    out = [
        (*k, _spearman(g[a], g[b]))
        for k, g in prof.reset_index().groupby([*by, "seed"], sort=False)
    ]
    return pd.DataFrame(out, columns=[*by, "seed", "rho"])


def adjacent_rises(
    table: pd.DataFrame, metric: str, by: Sequence[str] = ("dataset", "algorithm", "stage")
) -> pd.DataFrame:
    """For each adjacent pair of units (k, k+1): the fraction of seeds in which the
    client-averaged ``metric`` rises from k to k+1. Columns: ``by`` + pair, rises, n_seeds."""
    by = list(by)
    sub = table[(table["metric"] == metric) & (table["other"] == NO_OTHER)]
    prof = sub.groupby([*by, "seed", "depth", "unit"], sort=False)["value"].mean().reset_index()
    out = []
    for key, g in prof.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        wide = g.pivot_table(index="seed", columns="depth", values="value")
        units = dict(zip(g["depth"], g["unit"], strict=True))
        for d in wide.columns[:-1]:
            rises = (wide[d + 1] > wide[d]).mean()
            out.append((*key, f"{units[d]}→{units[d + 1]}", float(rises), len(wide)))
    return pd.DataFrame(out, columns=[*by, "pair", "rises", "n_seeds"])


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


def _spearman(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def depth_trend(
    table: pd.DataFrame, metric: str, by: Sequence[str] = ("dataset", "algorithm", "stage")
) -> pd.DataFrame:
    """Per seed: Spearman ρ between unit depth and the client-averaged ``metric``.

    ρ > 0 means the metric grows with depth (for ``cka_dissimilarity``: late units diverge
    more). Columns: ``by`` + seed, rho. Summarise with :func:`seed_summary` (value="rho").
    """
    by = list(by)
    sub = table[(table["metric"] == metric) & (table["other"] == NO_OTHER)]
    prof = sub.groupby([*by, "seed", "depth"], sort=False)["value"].mean().reset_index()
    out = [
        (*k, _spearman(g["depth"], g["value"])) for k, g in prof.groupby([*by, "seed"], sort=False)
    ]
    return pd.DataFrame(out, columns=[*by, "seed", "rho"])


def metric_correlation(
    table: pd.DataFrame, x: str, y: str, by: Sequence[str] = ("dataset", "algorithm", "stage")
) -> pd.DataFrame:
    """Per seed: Spearman ρ across units between metrics ``x`` and ``y``, computed per client
    and averaged over clients. Columns: ``by`` + seed, rho."""
    by = list(by)
    sub = table[table["metric"].isin([x, y]) & (table["other"] == NO_OTHER)]
    wide = sub.pivot_table(
        index=[*by, "seed", "client", "depth"], columns="metric", values="value"
    ).reset_index()
    per_client = [
        (*k, _spearman(g[x], g[y])) for k, g in wide.groupby([*by, "seed", "client"], sort=False)
    ]
    df = pd.DataFrame(per_client, columns=[*by, "seed", "client", "rho"])
    return df.groupby([*by, "seed"], sort=False)["rho"].mean().reset_index()


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
    Columns: ``by`` + threshold, p."""
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
        out.extend((*key, float(t), server_split(per_client, w, t)) for t in thresholds)
    return pd.DataFrame(out, columns=[*by, "threshold", "p"])


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
