"""Every split rule on a sweep's seeds: the tidy rules table, the validation probe, regrets.

The sweep's first local epoch is replayed (:func:`first_epoch_state`, bit for bit on the machine
that made the sweep; :func:`check_replay`) and every rule of :mod:`playerfl_core.fl.split_rules`
applied to it (:func:`rules_table`: per dataset, lr, seed, rule and unit, what the rule read and
the split it chose). Thresholds re-apply from the table (:func:`rethreshold`); regrets come from
the sweep's scores (:func:`rule_regrets`). The validation probe (:func:`probe_splits`), every p
trained ``rounds`` rounds and chosen on validation, is read from the sweep itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from data_prep import load
from playerfl_core.fl.algorithms.prefix import RULE_METRIC
from playerfl_core.fl.models import model_for
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.sensitivity import diagonal_fisher, full_gradient, sensitivity_from_gradient
from playerfl_core.fl.split_rules import RULES, FirstEpoch, get_rule
from playerfl_core.fl.units import unit_names
from playerfl_core.measure.layer_measure import first_epoch_models
from playerfl_core.stats.metrics import client_weights
from playerfl_core.stats.results import SERVER
from playerfl_core.study.machine import one_thread
from playerfl_core.study.split_scores import sweep_rows, variant_regrets
from playerfl_core.study.split_sweeps import RUN, check_sweeps_complete

COLUMNS = [*RUN, "rule", "threshold", "p", "unit", "depth", "quantity", "value"]
"""The rules table: one row per (dataset, lr, seed, rule, unit)."""
PROBE = "probe"
"""The validation probe's name in rule columns (not a first-epoch rule)."""


def first_epoch_state(data, config) -> FirstEpoch:
    """The federation after its first local epoch, as every run of the seed sees it."""
    models = first_epoch_models(data, config)
    init = model_for(data, config.width, config.seed)
    total = sum(c.n_train for c in data.clients)
    params, grads, fisher, sens, weights = {}, {}, {}, {}, {}
    for i, (model, c) in enumerate(zip(models, data.clients, strict=True)):
        dev = next(model.parameters()).device
        x, y = c.x_train.to(dev), c.y_train.to(dev)
        g = full_gradient(model, x, y)
        grads[i] = {n: v.detach().cpu() for n, v in g.items()}
        fisher[i] = {n: v.cpu() for n, v in diagonal_fisher(model, x, y).items()}
        params[i] = {n: p.detach().cpu().clone() for n, p in model.named_parameters()}
        sens[i] = sensitivity_from_gradient(model, g)
        weights[i] = c.n_train / total
    return FirstEpoch(
        units=tuple(unit_names(init)),
        weights=weights,
        sensitivities=sens,
        init={n: p.detach().clone() for n, p in init.named_parameters()},
        params=params,
        grads=grads,
        fisher=fisher,
    )


def state_rows(key: tuple, state: FirstEpoch, rules: Sequence[str] | None = None) -> list[tuple]:
    """The rules table's rows of one seed (``key`` = (dataset, lr, seed))."""
    rows = []
    for name in rules or RULES:
        rule = get_rule(name)
        result = rule(state)
        for depth, (unit, value) in enumerate(result.values.items(), start=1):
            rows.append(
                (*key, name, rule.default_threshold, result.p, unit, depth, result.quantity, value)
            )
    return rows


def rules_table(
    dataset: str,
    seeds: Iterable[int],
    profile: str = "quick",
    lr: float | None = None,
    device: str | None = None,
    data_loader: Callable | None = None,
    rules: Sequence[str] | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Every rule (default: all) on the first epoch of each seed of ``dataset``, at the
    profile's learning rate unless ``lr`` (the sweep's). Columns: :data:`COLUMNS`."""
    rows = []
    with one_thread():  # the sweep's runs use one thread: the same last bits
        for seed in tqdm(list(seeds), desc=f"rules {dataset}", disable=not progress):
            data = data_loader(seed) if data_loader else load(dataset, profile=profile, seed=seed)
            config = make_config(dataset, profile, seed=seed, lr=lr, device=device, progress=False)
            state = first_epoch_state(data, config)
            rows += state_rows((data.name, config.lr, seed), state, rules)
    return pd.DataFrame(rows, columns=COLUMNS)


def rules_for_sweep(
    sweep: pd.DataFrame,
    profile: str,
    rules: Sequence[str] | None = None,
    data_loader: Callable | None = None,
    probe_rounds: int | None = 2,
    progress: bool = True,
) -> pd.DataFrame:
    """The rules table of every (dataset, lr, seed) of a sweep: first epochs replayed, every rule
    applied, and the probe (``probe_rounds``; None: left out) read from the sweep."""
    check_sweeps_complete(sweep)
    keys = sweep_rows(sweep)[RUN].drop_duplicates().sort_values(RUN)
    parts = [
        rules_table(ds, g["seed"].tolist(), profile, float(lr), None, data_loader, rules, progress)
        for (ds, lr), g in keys.groupby(["dataset", "lr"], sort=False)
    ]
    if probe_rounds is not None:
        parts.append(probe_rows(sweep, probe_rounds))
    return pd.concat(parts, ignore_index=True)


def probe_rows(sweep: pd.DataFrame, rounds: int = 2) -> pd.DataFrame:
    """The validation probe in the rules table's shape: one row per split, and its pick."""
    every = _probe_scores(sweep, rounds)
    best = probe_splits(sweep, rounds).set_index(RUN)["p"]
    picks = [int(best[k]) for k in every[RUN].itertuples(index=False, name=None)]
    out = every.assign(
        rule=PROBE,
        threshold=float(rounds),
        p=picks,
        unit="p=" + every["p_unit"].astype(str),
        depth=every["p_unit"] + 1,
        quantity=f"val_macro_f1_round{rounds - 1}",
        value=every["val"],
    )
    return out[COLUMNS].reset_index(drop=True)


def rethreshold(table: pd.DataFrame, rule: str, threshold: float) -> pd.DataFrame:
    """The split ``rule`` picks at ``threshold`` on each seed, from the table's quantities
    alone. Columns: dataset, lr, seed, rule, threshold, p."""
    split_rule = get_rule(rule)
    t = split_rule.check_threshold(threshold)
    rows = table[table["rule"] == rule]
    if rows.empty:
        raise ValueError(f"The rules table has no rows of rule {rule!r}.")
    out = []
    for key, g in rows.sort_values("depth").groupby(RUN, sort=True):
        out.append((*key, rule, t, split_rule.split(g["value"].tolist(), t)))
    return pd.DataFrame(out, columns=[*RUN, "rule", "threshold", "p"])


def splits(table: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, lr, seed, rule): the split at the table's threshold (the probe's too)."""
    first = table.groupby([*RUN, "rule"], sort=False, as_index=False).first()
    return first[[*RUN, "rule", "threshold", "p"]].reset_index(drop=True)


def check_replay(table: pd.DataFrame, sweep: pd.DataFrame) -> pd.DataFrame:
    """Per seed: the paper's split from the replayed first epoch and the one the sweep recorded.
    Columns: dataset, lr, seed, replayed, recorded, same."""
    rec = sweep[(sweep["metric"] == RULE_METRIC) & (sweep["client"] == SERVER)]
    rec = rec.groupby(RUN, as_index=False)["value"].first().rename(columns={"value": "recorded"})
    mine = splits(table)
    mine = mine[mine["rule"] == "paper"][[*RUN, "p"]].rename(columns={"p": "replayed"})
    out = mine.merge(rec, on=RUN, how="left")
    out["same"] = out["replayed"] == out["recorded"]
    return out


def probe_splits(sweep: pd.DataFrame, rounds: int = 2, metric: str = "macro_f1") -> pd.DataFrame:
    """The validation probe: the p with the best validation score at round ``rounds`` − 1 (ties to
    the smaller). Columns: dataset, lr, seed, rule, threshold, p, val."""
    per = _probe_scores(sweep, rounds, metric).rename(columns={"p_unit": "p"})
    best = per.sort_values([*RUN, "val", "p"], ascending=[True, True, True, False, True])
    best = best.groupby(RUN, sort=False).head(1)
    return best.assign(rule=PROBE, threshold=float(rounds))[
        [*RUN, "rule", "threshold", "p", "val"]
    ].reset_index(drop=True)


def _probe_scores(sweep: pd.DataFrame, rounds: int, metric: str = "macro_f1") -> pd.DataFrame:
    """Per (dataset, lr, seed, p): the weighted validation score at round ``rounds`` − 1.
    Columns: dataset, lr, seed, p_unit, val."""
    if not (isinstance(rounds, int) and rounds >= 1):
        raise ValueError(f"rounds must be an integer ≥ 1, got {rounds!r}.")
    rows = sweep_rows(sweep)
    last = int(rows["round"].max())
    if rounds - 1 > last:
        raise ValueError(f"The sweep has rounds 0..{last}; a {rounds}-round probe needs more.")
    val = rows[
        (rows["metric"] == metric)
        & (rows["split"] == "val")
        & (rows["round"] == rounds - 1)
        & (rows["client"] != SERVER)
    ]
    w = client_weights(sweep).groupby([*RUN, "client"], as_index=False)["weight"].first()
    val = val.merge(w, on=[*RUN, "client"])
    val = val.assign(wv=val["value"] * val["weight"])
    per = val.groupby([*RUN, "p"], as_index=False).agg(wv=("wv", "sum"), w=("weight", "sum"))
    per["val"] = per["wv"] / per["w"]
    return per.rename(columns={"p": "p_unit"})[[*RUN, "p_unit", "val"]]


def rule_regrets(scores: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    """Every rule's regret against the validation oracle; ``chosen``: stacked rule rows. Columns:
    dataset, lr, seed, rule, p_rule, p_oracle, test_rule, test_oracle, regret."""
    frame = chosen.rename(columns={"rule": "variant", "p": "p_rule"}).assign(margin=np.nan)
    return variant_regrets(scores, frame).rename(columns={"variant": "rule"}).drop(columns="margin")
