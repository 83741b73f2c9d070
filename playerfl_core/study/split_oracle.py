"""Does the rule pick the right split? The split sweep, its oracle and the rule's regret.

A **split sweep** runs the prefix federation (:mod:`playerfl_core.fl.algorithms.prefix`) at every
split p = 0 … L on the same seeds and learning rate, so p is the only thing that changes; p = 0
is Local and p = L FedAvg. Each run is an ordinary long results table (``algorithm`` =
``prefix_p{p}``) that also carries the clients' first-epoch sensitivities, from which the rule's
split is recomputed (any variant of the rule, see :func:`rule_splits`).

From a sweep table:

* :func:`sweep_scores`: per seed and p, the run's validation and test score (each client's
  best-validation round, training-share weights: the book's headline protocol);
* :func:`oracle_splits`: the **oracle** p of each seed, the best on *validation* data only;
* :func:`regrets`: the rule's **regret** per seed, test(oracle p) − test(rule's p);
* :func:`client_curves`: which clients win or lose against Local at each p;
* :func:`c5_table`: PLayer-FL against every other split and against PLayer-FL-Random at the
  same learning rate (claim C5 without the learning-rate confound).

Studies that need only the first epoch (the rule's p over many seeds) are in
:func:`first_epoch_sensitivities` and :func:`rule_splits`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.playerfl_random import random_split
from playerfl_core.fl.algorithms.prefix import parse_prefix_name, prefix_name
from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    pooled_sensitivities,
    relative_rises,
    server_split,
)
from playerfl_core.stats.claims import interval_verdict
from playerfl_core.stats.metrics import client_weights
from playerfl_core.stats.results import COLUMNS, SERVER, client_scores
from playerfl_core.stats.seed_stats import bootstrap_interval

RUN = ["dataset", "lr", "seed"]
"""A sweep's run keys besides the split: every p of one (dataset, lr, seed) shares its data,
initial weights and first epoch."""

RULE_VARIANTS: dict[str, dict] = {
    "paper": {"aggregate": "mean", "threshold": DEFAULT_THRESHOLD},
    "median": {"aggregate": "median", "threshold": DEFAULT_THRESHOLD},
    "geomean": {"aggregate": "geomean", "threshold": DEFAULT_THRESHOLD},
}
"""The paper's rule and its robust variants (options of
:func:`playerfl_core.fl.sensitivity.server_split`): how the server pools the clients' s_k."""


# -- running a sweep ------------------------------------------------------------------------
def sweep_algorithms(n_units: int) -> list[str]:
    """``prefix_p0`` … ``prefix_pL``: the algorithm names of a sweep over a model with L units."""
    return [prefix_name(p) for p in range(n_units + 1)]


def model_units(data, width: float = 1.0) -> tuple[str, ...]:
    """The layer units of the model ``data`` trains (no training, no data needed)."""
    from playerfl_core.fl.models import model_for
    from playerfl_core.fl.units import unit_names

    return unit_names(model_for(data, width, 0))


def check_sweepable(units: Sequence[str], dataset: str) -> None:
    """A sweep needs an interior split for the rule to choose: at least two units."""
    if len(units) < 2:
        raise ValueError(
            f"A split sweep of {dataset!r} needs a model with at least 2 layer units (valid "
            f"splits p = 0..L with the rule choosing in 1..L−1); its model has {len(units)} "
            f"({', '.join(units) or 'none'}), so p = 0 (Local) and p = {len(units)} (FedAvg) "
            "are the only splits and there is no split rule to test."
        )


def run_sweep(
    dataset: str,
    seeds: Iterable[int],
    profile: str = "quick",
    lr: float | None = None,
    rounds: int | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    splits: Iterable[int] | None = None,
    progress: bool = True,
    workers: int = 1,
) -> pd.DataFrame:
    """Every split p = 0 … L (or ``splits``) on every seed, at one learning rate (the
    profile's unless ``lr``): the long results table, one ``prefix_p{p}`` run per (seed, p).

    The data of seed s is ``data_loader(s)`` (default ``data_prep.load(dataset, profile,
    seed=s)``). Same arguments, same machine: the same table (see :func:`run_sweeps`).
    """
    return run_sweeps(
        [dataset], seeds, profile, lr, rounds, device, data_loader, splits, progress, workers
    )


def run_sweeps(
    datasets: Iterable[str],
    seeds: Iterable[int],
    profile: str = "quick",
    lr: float | None = None,
    rounds: int | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    splits: Iterable[int] | None = None,
    progress: bool = True,
    workers: int = 1,
) -> pd.DataFrame:
    """:func:`run_sweep` for several datasets, with ``workers`` CPU processes sharing the runs.

    Every run uses one CPU thread, in a worker or not, so the table does not depend on
    ``workers`` (CNN kernels differ in the last bits across thread counts). ``data_loader``
    (seed → data) works with one dataset and ``workers=1`` only.
    """
    import torch

    from playerfl_core.fl.profiles import make_config

    datasets, seeds = list(datasets), [int(s) for s in seeds]
    if data_loader is not None and (len(datasets) != 1 or workers > 1):
        raise ValueError("data_loader needs exactly one dataset and workers=1.")
    jobs = []
    for ds in datasets:
        for seed in seeds:
            data = data_loader(seed) if data_loader else _sweep_data(ds, profile, seed)
            width = make_config(ds, profile, seed=seed, lr=lr, rounds=rounds).width
            units = model_units(data, width)
            check_sweepable(units, ds)
            ps = range(len(units) + 1) if splits is None else [int(p) for p in splits]
            bad = [p for p in ps if not 0 <= p <= len(units)]
            if bad:
                raise ValueError(
                    f"splits {bad} are outside the valid range 0..{len(units)} for {ds!r} "
                    f"(units {', '.join(units)})."
                )
            jobs += [(ds, profile, seed, p, lr, rounds, device) for p in ps]
    bar = tqdm(total=len(jobs), desc="sweep", unit="run", disable=not progress)
    tables: list = [None] * len(jobs)
    if workers <= 1:
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for i, job in enumerate(jobs):
                loader = data_loader or (lambda s, ds=job[0]: _sweep_data(ds, profile, s))
                tables[i] = _sweep_run(*job, data=loader(job[2]))
                bar.update()
        finally:
            torch.set_num_threads(previous)
    else:
        import concurrent.futures as cf
        import multiprocessing
        import os

        from playerfl_core.study.workers import init_worker, interrupts_as_keyboard, stop_workers

        ctx = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=init_worker, initargs=(1, os.getpid())
        )
        try:
            with interrupts_as_keyboard():
                futures = {pool.submit(_sweep_run, *job): i for i, job in enumerate(jobs)}
                for fut in cf.as_completed(futures):
                    tables[futures[fut]] = fut.result()
                    bar.update()
        except BaseException:  # Ctrl-C, SIGTERM or a failed run: no worker outlives the sweep
            stop_workers(pool)
            raise
        pool.shutdown()
    bar.close()
    return pd.concat(tables, ignore_index=True)


def _sweep_data(dataset: str, profile: str, seed: int):
    """The federation of one seed, from the grid's small per-process cache."""
    from playerfl_core.study.run_store import load_data_cached

    return load_data_cached(dataset, profile, seed)


def _sweep_run(dataset, profile, seed, p, lr, rounds, device, data=None) -> pd.DataFrame:
    """One prefix run of a sweep (a module-level function so worker processes can run it).
    Raises :class:`~playerfl_core.fl.engine.DivergenceError` when the run diverged (a non-finite
    value or a loss above :data:`~playerfl_core.fl.divergence.LOSS_BOUND`)."""
    from playerfl_core.fl.divergence import check_table
    from playerfl_core.fl.engine import run_federated
    from playerfl_core.fl.profiles import make_config

    data = data if data is not None else _sweep_data(dataset, profile, seed)
    config = make_config(
        dataset, profile, seed=seed, lr=lr, rounds=rounds, device=device, progress=False
    )
    return check_table(run_federated(data, get_algorithm(prefix_name(p)), config).table())


# -- scores per split ----------------------------------------------------------------------
def sweep_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of prefix runs, with their split as an integer column ``p``."""
    p = table["algorithm"].map(parse_prefix_name)
    rows = table[p.notna()]
    if rows.empty:
        raise ValueError(
            "The table holds no split-sweep runs (algorithm values prefix_p0 … prefix_pL); "
            "compute one with split_oracle.run_sweep or `playerfl sweep`."
        )
    return rows.assign(p=p[p.notna()].astype(int))


def _split_scores(
    table: pd.DataFrame, split: str, metric: str, selection: str, weighting: str
) -> pd.DataFrame:
    scores = client_scores(table, metric, split, selection)
    merged = scores.merge(
        client_weights(table, weighting), on=["dataset", "algorithm", "lr", "seed", "client"]
    )
    merged["wv"] = merged["value"] * merged["weight"]
    out = merged.groupby(["dataset", "algorithm", "lr", "seed"], as_index=False).agg(
        wv=("wv", "sum"), w=("weight", "sum")
    )
    return out.assign(value=out["wv"] / out["w"]).drop(columns=["wv", "w"])


def sweep_scores(
    table: pd.DataFrame,
    metric: str = "macro_f1",
    selection: str = "best_val",
    weighting: str = "train",
) -> pd.DataFrame:
    """Per (dataset, lr, seed, p): the run's validation and test score.

    Each client keeps its best-validation round (``selection``); the run's score is the
    clients' mean with ``weighting`` (training shares by default), the book's headline.
    Columns: dataset, lr, seed, p, val, test.
    """
    rows = sweep_rows(table).drop(columns="p")
    val = _split_scores(rows, "val", metric, selection, weighting).rename(columns={"value": "val"})
    test = _split_scores(rows, "test", metric, selection, weighting)
    out = val.merge(
        test.rename(columns={"value": "test"}), on=["dataset", "algorithm", "lr", "seed"]
    )
    out["p"] = out.pop("algorithm").map(parse_prefix_name).astype(int)
    return out[[*RUN, "p", "val", "test"]].sort_values([*RUN, "p"], ignore_index=True)


def oracle_splits(scores: pd.DataFrame, on: str = "val") -> pd.DataFrame:
    """Per (dataset, lr, seed): the split with the best score on ``on`` (validation by
    default: the oracle a practitioner could run, never looking at test data). Ties go to the
    smaller p (fewer units shared). Columns: dataset, lr, seed, p_oracle."""
    if on not in ("val", "test"):
        raise ValueError(f"on must be 'val' or 'test', got {on!r}.")
    order = scores.sort_values([*RUN, on, "p"], ascending=[True, True, True, False, True])
    best = order.groupby(RUN, sort=False).head(1)
    return best[[*RUN, "p"]].rename(columns={"p": "p_oracle"}).reset_index(drop=True)


# -- the rule's split, from clients' sensitivities -------------------------------------------
def table_sensitivities(table: pd.DataFrame) -> pd.DataFrame:
    """The clients' first-epoch sensitivities recorded in a sweep (or PLayer-FL) table, one
    set per (dataset, lr, seed). Columns: dataset, lr, seed, client, unit, depth, sensitivity,
    weight (the client's training share)."""
    sens = table[table["metric"].str.startswith("sensitivity/") & (table["client"] != SERVER)]
    if sens.empty:
        raise ValueError("The table holds no clients' sensitivity rows (sensitivity/<unit>).")
    first_alg = sens.groupby(RUN)["algorithm"].transform("first")
    sens = sens[sens["algorithm"] == first_alg]
    weights = client_weights(table)
    weights = weights.groupby(["dataset", "lr", "seed", "client"], as_index=False)["weight"].first()
    out = sens.assign(unit=sens["metric"].str.removeprefix("sensitivity/"))
    out = out[[*RUN, "client", "unit", "value"]].rename(columns={"value": "sensitivity"})
    out["depth"] = out.groupby([*RUN, "client"]).cumcount() + 1
    return out.merge(weights, on=[*RUN, "client"]).reset_index(drop=True)


def rule_splits(
    sens: pd.DataFrame,
    variants: Mapping[str, Mapping] | None = None,
    by: Sequence[str] = RUN,
) -> pd.DataFrame:
    """The split each rule variant picks from the clients' sensitivities of each group.

    ``sens``: :func:`table_sensitivities` or :func:`first_epoch_sensitivities`. ``variants``
    maps a name to options of :func:`~playerfl_core.fl.sensitivity.server_split` (default
    :data:`RULE_VARIANTS`, whose ``"paper"`` entry is PLayer-FL's rule). Also returns, per
    group, the server's relative rises under the paper's pooling and the smallest relative
    distance |rise − t| / t of the rises up to the chosen split (how close the decision was).
    Columns: ``by`` + variant, p_rule, margin.
    """
    variants = RULE_VARIANTS if variants is None else variants
    rows = []
    for key, grp in sens.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        grp = grp.sort_values(["client", "depth"])
        per_client = {
            c: dict(zip(g["unit"], g["sensitivity"], strict=True)) for c, g in grp.groupby("client")
        }
        weights = grp.groupby("client")["weight"].first().to_dict()
        for name, options in variants.items():
            p = server_split(per_client, weights, **options)
            t = float(options.get("threshold", DEFAULT_THRESHOLD))
            rows.append((*key, name, p, _decision_margin(per_client, weights, t, p)))
    return pd.DataFrame(rows, columns=[*by, "variant", "p_rule", "margin"])


def _decision_margin(per_client, weights, threshold: float, p: int) -> float:
    """min over the rises the rule looked at (l ≤ p) of |rise − t| / t (paper's pooling)."""
    pooled = pooled_sensitivities(per_client, weights)
    rises = relative_rises(list(pooled.values()))[:p]
    finite = rises[np.isfinite(rises)]
    if not len(finite) or threshold <= 0:
        return float("nan")
    return float(np.min(np.abs(finite - threshold)) / threshold)


def first_epoch_sensitivities(
    dataset: str,
    seeds: Iterable[int],
    profile: str = "quick",
    lr: float | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """The clients' sensitivities after one local epoch, for many seeds (one epoch each: the
    rule's whole input, without training further). Same columns as
    :func:`table_sensitivities`, so :func:`rule_splits` reads both."""
    from playerfl_core.fl.profiles import make_config
    from playerfl_core.fl.sensitivity import federation_sensitivity
    from playerfl_core.fl.units import unit_names
    from playerfl_core.measure.layer_measure import first_epoch_models

    if data_loader is None:
        from data_prep import load

        def data_loader(s):
            return load(dataset, profile=profile, seed=s)

    rows = []
    for seed in tqdm(list(seeds), desc=f"first epoch {dataset}", disable=not progress):
        data = data_loader(seed)
        config = make_config(dataset, profile, seed=seed, lr=lr, device=device, progress=False)
        models = first_epoch_models(data, config)
        check_sweepable(unit_names(models[0]), dataset)
        total = sum(c.n_train for c in data.clients)
        for i, (model, c) in enumerate(zip(models, data.clients, strict=True)):
            dev = next(model.parameters()).device
            s = federation_sensitivity(model, c.x_train.to(dev), c.y_train.to(dev))
            for depth, (unit, value) in enumerate(s.items(), start=1):
                rows.append((data.name, config.lr, seed, i, unit, value, depth, c.n_train / total))
    return pd.DataFrame(rows, columns=[*RUN, "client", "unit", "sensitivity", "depth", "weight"])


# -- the rule against the oracle -----------------------------------------------------------
def regrets(scores: pd.DataFrame, rules: pd.DataFrame, variant: str = "paper") -> pd.DataFrame:
    """Per seed: the rule's split, the validation oracle's, and the regret
    test(p_oracle) − test(p_rule) (0 when they agree; negative when the rule did better on test
    than the validation oracle). Columns: dataset, lr, seed, variant, p_rule, p_oracle,
    test_rule, test_oracle, regret, margin."""
    rule = rules[rules["variant"] == variant][[*RUN, "variant", "p_rule", "margin"]]
    if rule.empty:
        raise ValueError(
            f"No rule splits for variant {variant!r}; have {sorted(set(rules['variant']))}."
        )
    out = rule.merge(oracle_splits(scores), on=RUN)
    test = scores.set_index([*RUN, "p"])["test"]
    out["test_rule"] = [
        test[(*k, p)] for k, p in zip(out[RUN].itertuples(index=False), out["p_rule"], strict=True)
    ]
    out["test_oracle"] = [
        test[(*k, p)]
        for k, p in zip(out[RUN].itertuples(index=False), out["p_oracle"], strict=True)
    ]
    out["regret"] = out["test_oracle"] - out["test_rule"]
    cols = [*RUN, "variant", "p_rule", "p_oracle", "test_rule", "test_oracle", "regret", "margin"]
    return out[cols].reset_index(drop=True)


def interval(values, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lower, upper): the project's seeded percentile bootstrap of the mean over seeds."""
    return bootstrap_interval(values, level=level, seed=seed)


def regret_summary(reg: pd.DataFrame, by: Sequence[str] = ("dataset", "variant")) -> pd.DataFrame:
    """Per group: mean regret with a seeded bootstrap 95 % CI over seeds, the share of seeds
    where the rule picked the oracle's split and where it landed within one unit of it.
    Columns: ``by`` + mean, lo, hi, n_seeds, same, within_one."""
    rows = []
    for key, g in reg.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        m, lo, hi = interval(g["regret"])
        gap = (g["p_rule"] - g["p_oracle"]).abs()
        rows.append((*key, m, lo, hi, len(g), float((gap == 0).mean()), float((gap <= 1).mean())))
    return pd.DataFrame(rows, columns=[*by, "mean", "lo", "hi", "n_seeds", "same", "within_one"])


def sweep_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and p: mean test and validation score over seeds, bootstrap CI of the test
    mean. Columns: dataset, p, mean, lo, hi, val, n_seeds."""
    rows = []
    for (ds, p), g in scores.groupby(["dataset", "p"], sort=True):
        m, lo, hi = interval(g["test"])
        rows.append((ds, int(p), m, lo, hi, float(g["val"].mean()), len(g)))
    return pd.DataFrame(rows, columns=["dataset", "p", "mean", "lo", "hi", "val", "n_seeds"])


def client_curves(table: pd.DataFrame, metric: str = "macro_f1") -> pd.DataFrame:
    """Per (dataset, seed, client, p): the client's test score and its gain over Local
    (p = 0) on the same seed: who wins and who loses from sharing the first p units.
    Columns: dataset, lr, seed, client, p, value, gain."""
    rows = sweep_rows(table).drop(columns="p")
    scores = client_scores(rows, metric, "test")
    scores["p"] = scores["algorithm"].map(parse_prefix_name).astype(int)
    local = scores[scores["p"] == 0].set_index([*RUN, "client"])["value"].rename("local")
    out = scores.join(local, on=[*RUN, "client"])
    out["gain"] = out["value"] - out["local"]
    return out[[*RUN, "client", "p", "value", "gain"]].sort_values(
        [*RUN, "client", "p"], ignore_index=True
    )


def client_curve_summary(curves: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, client, p): mean gain over Local across seeds and the share of seeds in
    which the client gains (> 0). Columns: dataset, client, p, gain, wins, n_seeds."""
    g = curves.groupby(["dataset", "client", "p"])["gain"]
    out = g.mean().rename("gain").to_frame()
    out["wins"] = g.apply(lambda v: float((v > 0).mean()))
    out["n_seeds"] = g.size()
    return out.reset_index()


# -- PLayer-FL against Local, FedAvg, every other split and the random split ---------------
def c5_table(scores: pd.DataFrame, rules: pd.DataFrame, variant: str = "paper") -> pd.DataFrame:
    """Per seed and comparison: test(rule's p) − test(other), at the same learning rate.

    Comparisons: ``p=<q>`` for every other split q (p = 0 is Local, p = L FedAvg);
    ``random (drawn)``: the split PLayer-FL-Random draws on this seed
    (:func:`~playerfl_core.fl.algorithms.playerfl_random.random_split`, never the rule's) and
    ``random (expected)``: the mean over the splits it can draw, {1..L−1} minus the rule's.
    Columns: dataset, lr, seed, p_rule, other, p_other, diff.
    """
    rule = rules[rules["variant"] == variant].set_index(RUN)["p_rule"]
    rows = []
    for key, g in scores.groupby(RUN, sort=False):
        test = g.set_index("p")["test"]
        p_rule, n_units = int(rule[key]), int(g["p"].max())
        mine = test[p_rule]
        for q in test.index:
            if q != p_rule:
                rows.append((*key, p_rule, f"p={q}", int(q), mine - test[q]))
        candidates = [q for q in range(1, n_units) if q != p_rule]
        if candidates:
            drawn = random_split(int(key[2]), n_units, p_rule)
            rows.append((*key, p_rule, "random (drawn)", drawn, mine - test[drawn]))
            rows.append(
                (*key, p_rule, "random (expected)", -1, mine - float(test[candidates].mean()))
            )
    return pd.DataFrame(rows, columns=[*RUN, "p_rule", "other", "p_other", "diff"])


def c5_summary(c5: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and comparison: mean difference with a bootstrap CI over seeds.
    Columns: dataset, other, mean, lo, hi, n_seeds, verdict."""
    rows = []
    for (ds, other), g in c5.groupby(["dataset", "other"], sort=False):
        m, lo, hi = interval(g["diff"])
        rows.append((ds, other, m, lo, hi, len(g), interval_verdict(lo, hi, len(g)).verdict))
    return pd.DataFrame(
        rows, columns=["dataset", "other", "mean", "lo", "hi", "n_seeds", "verdict"]
    )


def reference_table(
    scores: pd.DataFrame, rules: pd.DataFrame, variant: str = "paper"
) -> pd.DataFrame:
    """Per seed: PLayer-FL (the rule's p), Local (p = 0) and FedAvg (p = L) test scores, all
    read from the sweep. Columns: dataset, lr, seed, playerfl, local, fedavg."""
    rule = rules[rules["variant"] == variant].set_index(RUN)["p_rule"]
    rows = []
    for key, g in scores.groupby(RUN, sort=False):
        test = g.set_index("p")["test"]
        rows.append((*key, test[int(rule[key])], test[0], test[int(g["p"].max())]))
    return pd.DataFrame(rows, columns=[*RUN, "playerfl", "local", "fedavg"])


# -- stability ------------------------------------------------------------------------------
def stability_summary(splits: pd.DataFrame, oracle: pd.Series | Mapping) -> pd.DataFrame:
    """Per dataset and rule variant, over seeds: the modal p and its share, the number of
    distinct splits, and the share within one unit of the dataset's oracle split (``oracle``:
    dataset → p, e.g. :func:`dataset_oracle`).
    Columns: dataset, variant, n_seeds, modal_p, modal_share, distinct, p_oracle, same,
    within_one."""
    rows = []
    for (ds, var), g in splits.groupby(["dataset", "variant"], sort=False):
        counts = g["p_rule"].value_counts()
        po = oracle.get(ds, np.nan) if hasattr(oracle, "get") else np.nan
        gap = (g["p_rule"] - po).abs()
        rows.append(
            (
                ds,
                var,
                len(g),
                int(counts.idxmax()),
                float(counts.max() / len(g)),
                int(len(counts)),
                po,
                float((gap == 0).mean()),
                float((gap <= 1).mean()),
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "dataset",
            "variant",
            "n_seeds",
            "modal_p",
            "modal_share",
            "distinct",
            "p_oracle",
            "same",
            "within_one",
        ],
    )


def dataset_oracle(scores: pd.DataFrame, on: str = "val") -> dict[str, int]:
    """Per dataset: the split with the best mean ``on`` score over the sweep's seeds (ties to
    the smaller p)."""
    mean = scores.groupby(["dataset", "p"])[on].mean().reset_index()
    best = mean.sort_values(["dataset", on, "p"], ascending=[True, False, True])
    return best.groupby("dataset").head(1).set_index("dataset")["p"].astype(int).to_dict()


def near_threshold_regret(reg: pd.DataFrame, margin: float = 0.25) -> pd.DataFrame:
    """Regret of seeds whose decision was close (a rise within ``margin``·t of t) against the
    others. Columns: dataset, near, mean, lo, hi, n_seeds."""
    reg = reg.assign(near=reg["margin"] <= margin)
    rows = []
    for (ds, near), g in reg.groupby(["dataset", "near"], sort=False):
        rows.append((ds, bool(near), *interval(g["regret"]), len(g)))
    return pd.DataFrame(rows, columns=["dataset", "near", "mean", "lo", "hi", "n_seeds"])


def variant_regrets(scores: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """:func:`regrets` for every rule variant on the same seeds (the ablation), stacked."""
    return pd.concat(
        [regrets(scores, rules, v) for v in rules["variant"].unique()], ignore_index=True
    )


# -- heterogeneity --------------------------------------------------------------------------
ALPHAS = (0.05, 0.1, 0.3, 1.0, 10.0)
FEATURE_KINDS = ("rotate", "invert")
MIXED = (("rotate", 0.1),)


def heterogeneity_federations(
    bases: Sequence[str] | None = None,
    alphas: Sequence[float] = ALPHAS,
    kinds: Sequence[str] = FEATURE_KINDS,
    mixed: Sequence[tuple[str, float]] = MIXED,
) -> pd.DataFrame:
    """The controlled-heterogeneity federations (registered names, see ``data_prep.skew``),
    in the order a figure shows them: label skew from strong (small alpha) to nearly IID,
    then feature skew, then mixed. ``bases``: default every federation declared with
    ``skew_variants``. Columns: dataset, base, family, level, order."""
    from data_prep.registry import skew_bases
    from data_prep.skew import variant_name

    bases = skew_bases() if bases is None else bases
    rows = []
    for base in bases:
        order = 0
        for a in alphas:
            rows.append((variant_name(base, None, a), base, "label skew", f"α={a:g}", order))
            order += 1
        for k in kinds:
            rows.append((variant_name(base, k, None), base, "feature skew", k, order))
            order += 1
        for k, a in mixed:
            rows.append((variant_name(base, k, a), base, "mixed", f"{k}+α={a:g}", order))
            order += 1
    return pd.DataFrame(rows, columns=["dataset", "base", "family", "level", "order"])


def heterogeneity_summary(
    scores: pd.DataFrame, rules: pd.DataFrame, federations: pd.DataFrame, variant: str = "paper"
) -> pd.DataFrame:
    """Per federation: the rule's and the oracle's p (modal, and per seed as lists), the mean
    regret with CI, and PLayer-FL, Local and FedAvg mean test scores (all from the sweep).
    Columns: federations' + p_rule, p_oracle, rule_ps, oracle_ps, regret, lo, hi, playerfl,
    local, fedavg, n_seeds."""
    reg = regrets(scores, rules, variant)
    refs = reference_table(scores, rules, variant)
    rows = []
    for _, f in federations.iterrows():
        r = reg[reg["dataset"] == f["dataset"]]
        if r.empty:
            continue
        ref = refs[refs["dataset"] == f["dataset"]]
        m, lo, hi = interval(r["regret"])
        rows.append(
            {
                **f.to_dict(),
                "p_rule": int(r["p_rule"].mode().iloc[0]),
                "p_oracle": int(r["p_oracle"].mode().iloc[0]),
                "rule_ps": r["p_rule"].tolist(),
                "oracle_ps": r["p_oracle"].tolist(),
                "regret": m,
                "lo": lo,
                "hi": hi,
                "playerfl": ref["playerfl"].mean(),
                "local": ref["local"].mean(),
                "fedavg": ref["fedavg"].mean(),
                "n_seeds": len(r),
            }
        )
    return pd.DataFrame(rows)


# -- stored or computed ---------------------------------------------------------------------
def load_sweeps(path) -> pd.DataFrame | None:
    """A stored sweep table (CSV or parquet, the long results table, or a committed archive
    folder, verified on loading) or None when absent, so a chapter uses stored results when
    they exist and computes a small version otherwise."""
    from pathlib import Path

    from playerfl_core.stats.results import load_table
    from playerfl_core.study.archive import MANIFEST_FILE, load_archive

    if path is None or not Path(path).exists():
        return None
    if Path(path).is_dir() and (Path(path) / MANIFEST_FILE).exists():
        return load_archive(path)[0]
    if str(path).endswith(".parquet"):
        table = pd.read_parquet(path)
        missing = set(COLUMNS) - set(table.columns)
        if missing:
            raise ValueError(f"{path} is not a results table: columns {sorted(missing)} missing.")
        return table
    return load_table(path)


def sweeps(
    datasets: Iterable[str],
    seeds: Iterable[int],
    profile: str = "quick",
    stored: pd.DataFrame | None = None,
    progress: bool = True,
    **run_options,
) -> pd.DataFrame:
    """The sweep rows of ``datasets`` from ``stored`` where it has them (every seed it holds),
    the others computed with :func:`run_sweeps` on ``seeds``. Returns one long table."""
    parts, missing = [], []
    for ds in datasets:
        have = None
        if stored is not None:
            rows = stored[stored["dataset"] == ds]
            have = rows[rows["algorithm"].map(parse_prefix_name).notna()]
        if have is not None and len(have):
            parts.append(have)
        else:
            missing.append(ds)
    if missing:
        parts.append(run_sweeps(missing, seeds, profile, progress=progress, **run_options))
    return pd.concat(parts, ignore_index=True)
