"""Does the rule pick the right split? The split sweep, its oracle and the rule's regret.

A split sweep runs the prefix federation at every split p = 0 … L (Local … FedAvg) on the same
seeds and rate, so p is the only thing that changes. Running and loading sweeps is in
:mod:`~playerfl_core.study.split_sweeps`, scores, the oracle and the regret in
:mod:`~playerfl_core.study.split_scores`; here the judgements (C5, stability, heterogeneity).
This module re-exports the other two (:data:`__all__`), so a chapter needs one import.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from playerfl_core.fl.algorithms.playerfl_random import random_split
from playerfl_core.study.archive import archive_dir
from playerfl_core.study.split_scores import (
    RULE_VARIANTS,
    client_curve_summary,
    client_curves,
    first_epoch_sensitivities,
    interval,
    oracle_splits,
    regret_summary,
    regrets,
    rule_splits,
    sweep_rows,
    sweep_scores,
    sweep_summary,
    table_sensitivities,
    variant_regrets,
)
from playerfl_core.study.split_sweeps import (
    RUN,
    heterogeneity_federations,
    load_sweeps,
    run_sweep,
    run_sweeps,
    sweeps,
)

__all__ = [  # chapters read the split study through this one module (``split_oracle as O``)
    "RULE_VARIANTS",
    "c5_summary",
    "c5_table",
    "client_curve_summary",
    "client_curves",
    "dataset_oracle",
    "first_epoch_sensitivities",
    "heterogeneity_federations",
    "heterogeneity_summary",
    "interval",
    "load_sweeps",
    "near_threshold_regret",
    "oracle_splits",
    "reference_table",
    "regret_summary",
    "regrets",
    "rule_splits",
    "run_sweep",
    "run_sweeps",
    "stability_summary",
    "sweep_rows",
    "sweep_scores",
    "sweep_summary",
    "sweeps",
    "table_sensitivities",
    "variant_regrets",
]


# -- PLayer-FL against Local, FedAvg, every other split and the random split ---------------
def c5_table(scores: pd.DataFrame, rules: pd.DataFrame, variant: str = "paper") -> pd.DataFrame:
    """Per seed and comparison: test(rule's p) − test(other) at the same rate, the other being every
    split ``p=<q>``, ``random (drawn)`` and ``random (expected)``.
    Columns: dataset, lr, seed, p_rule, other, p_other, diff."""
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
            expected = float(test[candidates].mean())
            rows.append((*key, p_rule, "random (expected)", -1, mine - expected))
    return pd.DataFrame(rows, columns=[*RUN, "p_rule", "other", "p_other", "diff"])


def committed_scores(profile: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(scores, the paper's rule's splits) of every sweep in ``profile``'s committed archive,
    or None when it holds none: what the scorecard and chapter 05 read C5 and R1 from."""
    sweep = load_sweeps(archive_dir(profile))
    if sweep is None:
        return None
    try:
        rows = sweep_rows(sweep)
    except ValueError:
        return None
    return sweep_scores(rows), rule_splits(table_sensitivities(rows))


def c5_summary(c5: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and comparison: mean difference with a bootstrap CI over seeds (descriptive).
    Columns: dataset, other, mean, lo, hi, n_seeds."""
    rows = []
    for (ds, other), g in c5.groupby(["dataset", "other"], sort=False):
        rows.append((ds, other, *interval(g["diff"]), len(g)))
    out = pd.DataFrame(rows, columns=["dataset", "other", "mean", "lo", "hi", "n_seeds"])
    return out.sort_values(  # splits in order, then the random ones, whichever seed came first
        ["dataset", "other"],
        key=lambda c: (
            c.map(_comparison_order)
            if c.name == "other"
            else c.map({d: i for i, d in enumerate(dict.fromkeys(c5["dataset"]))})
        ),
        ignore_index=True,
    )


def _comparison_order(other: str) -> tuple[int, int]:
    if other.startswith("p="):
        return (0, int(other[2:]))
    return (1, 0) if other == "random (drawn)" else (2, 0)


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
    """Per dataset and rule variant, over seeds: modal p and its share, distinct splits, and
    agreement with ``oracle`` (dataset → p). Columns: dataset, variant, n_seeds, modal_p,
    modal_share, distinct, p_oracle, same, within_one."""
    rows = []
    for (ds, var), g in splits.groupby(["dataset", "variant"], sort=False):
        counts = g["p_rule"].value_counts()
        po = oracle.get(ds, np.nan) if hasattr(oracle, "get") else np.nan
        gap = (g["p_rule"] - po).abs()
        share = float(counts.max() / len(g))
        same, within = float((gap == 0).mean()), float((gap <= 1).mean())
        rows.append((ds, var, len(g), int(counts.idxmax()), share, len(counts), po, same, within))
    columns = ["dataset", "variant", "n_seeds", "modal_p", "modal_share", "distinct", "p_oracle"]
    return pd.DataFrame(rows, columns=[*columns, "same", "within_one"])


def dataset_oracle(scores: pd.DataFrame, on: str = "val") -> dict[str, int]:
    """Per dataset: the split of best mean ``on`` score over the sweep's seeds (ties: smaller)."""
    mean = scores.groupby(["dataset", "p"])[on].mean().reset_index()
    best = mean.sort_values(["dataset", on, "p"], ascending=[True, False, True])
    return best.groupby("dataset").head(1).set_index("dataset")["p"].astype(int).to_dict()


def near_threshold_regret(reg: pd.DataFrame, margin: float = 0.25) -> pd.DataFrame:
    """Regret of seeds whose decision was close (a rise within ``margin``·t of t) against the others
    (one seed: no interval). Columns: dataset, near, mean, lo, hi, n_seeds."""
    reg = reg.assign(near=reg["margin"] <= margin)
    rows = []
    for (ds, near), g in reg.groupby(["dataset", "near"], sort=False):
        m, lo, hi = interval(g["regret"])
        if len(g) < 2:
            lo = hi = float("nan")
        rows.append((ds, bool(near), m, lo, hi, len(g)))
    return pd.DataFrame(rows, columns=["dataset", "near", "mean", "lo", "hi", "n_seeds"])


# -- heterogeneity --------------------------------------------------------------------------
def heterogeneity_summary(
    scores: pd.DataFrame, rules: pd.DataFrame, federations: pd.DataFrame, variant: str = "paper"
) -> pd.DataFrame:
    """Per federation: the rule's and the oracle's p, the mean regret with CI, and PLayer-FL, Local
    and FedAvg mean test scores. Columns: federations' + p_rule, p_oracle, rule_ps, oracle_ps,
    regret, lo, hi, playerfl, local, fedavg, n_seeds."""
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
