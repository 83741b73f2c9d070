"""Scores per split, the validation oracle, the rule's split and its regret, read from a sweep
table (:mod:`~.split_sweeps` runs or loads it); :mod:`~.split_oracle` re-exports its names."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from data_prep import load
from playerfl_core.fl.algorithms.prefix import RULE_METRIC, parse_prefix_name
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.sensitivity import (
    DEFAULT_THRESHOLD,
    federation_sensitivity,
    pooled_sensitivities,
    relative_rises,
    server_split,
)
from playerfl_core.fl.units import unit_names
from playerfl_core.measure.layer_measure import first_epoch_models
from playerfl_core.stats.metrics import client_weights, run_scores
from playerfl_core.stats.results import SERVER, client_scores
from playerfl_core.stats.seed_stats import bootstrap_interval
from playerfl_core.study.split_sweeps import RUN, check_sweepable

RULE_VARIANTS: dict[str, dict] = {
    "paper": {"aggregate": "mean", "threshold": DEFAULT_THRESHOLD},
    "median": {"aggregate": "median", "threshold": DEFAULT_THRESHOLD},
    "geomean": {"aggregate": "geomean", "threshold": DEFAULT_THRESHOLD},
}
"""The paper's rule and its robust variants (options of
:func:`playerfl_core.fl.sensitivity.server_split`): how the server pools the clients' s_k."""


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


def sweep_scores(
    table: pd.DataFrame,
    metric: str = "macro_f1",
    selection: str = "best_val",
    weighting: str = "train",
) -> pd.DataFrame:
    """Per (dataset, lr, seed, p): the run's validation and test score (each client at its
    best-validation round, averaged with ``weighting``). Columns: dataset, lr, seed, p, val, test.
    """
    rows = sweep_rows(table).drop(columns="p")
    val = run_scores(rows, metric, selection, weighting, "val").rename(columns={"value": "val"})
    test = run_scores(rows, metric, selection, weighting).rename(columns={"value": "test"})
    out = val.merge(test, on=["dataset", "algorithm", "lr", "seed"])
    out["p"] = out.pop("algorithm").map(parse_prefix_name).astype(int)
    return out[[*RUN, "p", "val", "test"]].sort_values([*RUN, "p"], ignore_index=True)


def oracle_splits(scores: pd.DataFrame, on: str = "val") -> pd.DataFrame:
    """Per (dataset, lr, seed): the split with the best score on ``on`` (validation by default),
    ties to the smaller p. Columns: dataset, lr, seed, p_oracle."""
    if on not in ("val", "test"):
        raise ValueError(f"on must be 'val' or 'test', got {on!r}.")
    order = scores.sort_values([*RUN, on, "p"], ascending=[True, True, True, False, True])
    best = order.groupby(RUN, sort=False).head(1)
    return best[[*RUN, "p"]].rename(columns={"p": "p_oracle"}).reset_index(drop=True)


# -- the rule's split, from clients' sensitivities -------------------------------------------
def table_sensitivities(table: pd.DataFrame) -> pd.DataFrame:
    """The clients' first-epoch sensitivities recorded in a sweep table, per (dataset, lr, seed).
    Columns: dataset, lr, seed, client, unit, depth, sensitivity, weight."""
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
    out = out.merge(weights, on=[*RUN, "client"]).reset_index(drop=True)
    _check_unit_order(out, table)
    return out


def _check_unit_order(sens: pd.DataFrame, table: pd.DataFrame) -> None:
    """Raise unless the split recomputed from the sensitivity rows equals the one the runs recorded
    (``rule_split_p``): depth is read from the rows' order, which re-sorting would break."""
    recorded = table[(table["metric"] == RULE_METRIC) & (table["client"] == SERVER)]
    if recorded.empty:
        return
    recorded = recorded.groupby(RUN, as_index=False)["value"].first()
    paper = rule_splits(sens, {"paper": RULE_VARIANTS["paper"]})
    both = paper.merge(recorded, on=RUN)
    wrong = both[both["p_rule"] != both["value"]]
    if not wrong.empty:
        row = wrong.iloc[0]
        raise ValueError(
            f"{len(wrong)} of {len(both)} runs' sensitivity rows are not in the model's unit "
            f"order (e.g. {row['dataset']} seed {row['seed']}: the rule recomputed from them "
            f"picks p = {row['p_rule']}, the run recorded p = {int(row['value'])}); keep each "
            "run's rows in the order the engine logged them (sort by run only, stably)."
        )


def rule_splits(
    sens: pd.DataFrame, variants: Mapping[str, Mapping] | None = None, by: Sequence[str] = RUN
) -> pd.DataFrame:
    """The split each rule variant (default :data:`RULE_VARIANTS`) picks from ``sens`` per group,
    and the margin min |rise − t| / t up to it. Columns: ``by`` + variant, p_rule, margin."""
    variants = RULE_VARIANTS if variants is None else variants
    rows = []
    for key, grp in sens.groupby(list(by), sort=False):
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
    """The clients' sensitivities after one local epoch, as :func:`table_sensitivities`."""
    rows = []
    for seed in tqdm(list(seeds), desc=f"first epoch {dataset}", disable=not progress):
        data = data_loader(seed) if data_loader else load(dataset, profile=profile, seed=seed)
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
    """Per seed: the rule's split, the validation oracle's and the regret test(p_oracle) −
    test(p_rule). Columns: dataset, lr, seed, variant, p_rule, p_oracle, test_rule, test_oracle,
    regret, margin."""
    rule = rules[rules["variant"] == variant][[*RUN, "variant", "p_rule", "margin"]]
    if rule.empty:
        raise ValueError(
            f"No rule splits for variant {variant!r}; have {sorted(set(rules['variant']))}."
        )
    out = rule.merge(oracle_splits(scores), on=RUN)
    test = scores.set_index([*RUN, "p"])["test"]
    for side in ("rule", "oracle"):
        ps = zip(out[RUN].itertuples(index=False), out[f"p_{side}"], strict=True)
        out[f"test_{side}"] = [test[(*k, p)] for k, p in ps]
    out["regret"] = out["test_oracle"] - out["test_rule"]
    cols = [*RUN, "variant", "p_rule", "p_oracle", "test_rule", "test_oracle", "regret", "margin"]
    return out[cols].reset_index(drop=True)


def variant_regrets(scores: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """:func:`regrets` for every rule variant on the same seeds (the ablation), stacked."""
    return pd.concat(
        [regrets(scores, rules, v) for v in rules["variant"].unique()], ignore_index=True
    )


def interval(values, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lower, upper): the project's seeded percentile bootstrap of the mean over seeds."""
    return bootstrap_interval(values, level=level, seed=seed)


def regret_summary(reg: pd.DataFrame, by: Sequence[str] = ("dataset", "variant")) -> pd.DataFrame:
    """Per group: mean regret with a bootstrap 95 % CI over seeds, and the shares at and within one
    unit of the oracle's split. Columns: ``by`` + mean, lo, hi, n_seeds, same, within_one."""
    rows = []
    for key, g in reg.groupby(list(by), sort=False):
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
    """Per (dataset, seed, client, p): the client's test score and its gain over Local (p = 0).
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


def split_counts(ps) -> str:
    """Every split a list holds with its number of seeds, e.g. "0×4, 1×3, 2×3"."""
    counts = pd.Series(list(ps)).value_counts().sort_index()
    return ", ".join(f"{int(p)}×{int(n)}" for p, n in counts.items())
