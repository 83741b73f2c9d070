"""The split the federation-sensitivity metric gives (chapter 03): beside the published ones,
where it is the rule's fallback, its stability, its mini-batches, and the thresholds t that
reproduce the published splits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from playerfl_core.book.reports.table_text import and_list
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.fl.profiles import make_config
from playerfl_core.measure import layer_studies as S

REFERENCE_NAMES = {
    "paper_transition": "the paper's transition layers",
    "authors_config": "the authors' hard-coded splits",
}

REFERENCE_SHORT = {"paper_transition": "paper's transition", "authors_config": "authors' code"}
"""The same references as table rows (short, so a table of thresholds fits the column)."""


def split_table(splits: pd.DataFrame, units_of: dict) -> pd.DataFrame:
    """Per dataset: the split per seed, the most frequent one, its units and the published ones."""
    rows = []
    for name, units in units_of.items():
        ps = splits[splits["dataset"] == name]["p"].tolist()
        modal = max(set(ps), key=ps.count)
        refs = S.REFERENCE_SPLITS.get(name, {})
        rows.append(
            {
                "dataset": dataset_label(name),
                "p per seed": ", ".join(str(p) for p in ps),
                "federated units (most frequent p)": ", ".join(units[:modal]),
                "paper's transition": refs.get("paper_transition", "–"),
                "authors' code": refs.get("authors_config", "–"),
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def split_numbers(splits: pd.DataFrame, units_of: dict) -> dict:
    """Glue values: the modal split per dataset, its units, a Markdown list, and the fallbacks."""
    out, lines = {}, []
    for name, units in units_of.items():
        rows = splits[splits["dataset"] == name]
        ps = rows["p"]
        modal = int(ps.mode().iloc[0])
        out[f"{name}_p"] = modal
        out[f"{name}_L"] = len(units)
        out[f"{name}_p_units"] = ", ".join(units[:modal])
        fallback = ""  # in plain words: the Result box uses it
        if "fallback" in rows and rows["fallback"].any():
            fallback = (
                f"; no rise above t in {_seeds(rows)}, so the rule federates every unit but "
                "the head"
            )
        lines.append(
            f"- {dataset_label(name)}: p = {modal} of {len(units)} units "
            f"(federate {', '.join(units[:modal])}; per seed: {', '.join(map(str, ps.tolist()))}"
            f"{fallback})"
        )
    out["split_lines"] = "\n".join(lines)
    out["split_fallback"] = fallback_text(splits, units_of)
    return out


def _seeds(rows: pd.DataFrame) -> str:
    """ "any seed" when every seed's split is the fallback, else "k of n seeds"."""
    k, n = int(rows["fallback"].sum()), len(rows)
    return "any seed" if k == n else f"{k} of {n} seeds"


def fallback_text(splits: pd.DataFrame, units_of: dict) -> str:
    """One sentence: on which datasets (in how many seeds) the split is the rule's fallback (no
    relative rise exceeds t), and on which it is a rise the rule found."""
    t = ", ".join(f"{v:g}" for v in sorted(splits["threshold"].unique()))
    fell, found = [], []
    for name in units_of:
        rows = splits[splits["dataset"] == name]
        if rows["fallback"].any():
            fell.append(f"{dataset_label(name)} in {_seeds(rows)}")
        else:
            found.append(dataset_label(name))
    if not fell:
        return f"At t = {t} every split above is the first rise above t; none is the fallback."
    text = (
        f"At t = {t} no relative rise exceeds t on {and_list(fell)}: there the split is the "
        "rule's fallback, every unit but the head (p = units − 1), not a rise the rule found"
    )
    return text + (f"; on {and_list(found)} it is the first rise above t." if found else ".")


def fallback_thresholds(by_t: pd.DataFrame) -> str:
    """One sentence: per dataset, the thresholds at which every seed's split is the fallback."""
    every = by_t.groupby(["dataset", "threshold"], sort=False)["fallback"].all()
    parts = [
        f"{_ts(ts)} on {dataset_label(name)}"
        for name, g in every.groupby(level="dataset", sort=False)
        if (ts := sorted(g[g].index.get_level_values("threshold")))
    ]
    if not parts:
        return "At no threshold of the grid is any dataset's split the fallback in every seed."
    where = and_list(parts)
    return f"The split is the rule's fallback (every unit but the head) in every seed at {where}."


def splits_by_epoch(table: pd.DataFrame, weights, units_of: dict, threshold: float):
    """The server's split from the sensitivities after every epoch, per algorithm and seed."""
    sens = table[table["metric"] == "sensitivity"]
    by = ["dataset", "algorithm", "round", "seed"]
    by_epoch = S.server_splits(sens, [threshold], weights=weights, by=by)
    by_epoch["epoch"] = by_epoch["round"] + 1
    by_epoch["n_units"] = by_epoch["dataset"].map({n: len(u) for n, u in units_of.items()})
    return by_epoch


def split_stability(by_epoch: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and algorithm: the share of later (epoch, seed) splits equal to epoch 1's."""
    base = by_epoch[by_epoch["round"] == 0][["dataset", "seed", "algorithm", "p"]]
    merged = by_epoch.merge(base, on=["dataset", "seed", "algorithm"], suffixes=("", "_epoch1"))
    later = merged[merged["round"] > 0]
    same = later.assign(same=later["p"] == later["p_epoch1"])
    return same.groupby(["dataset", "algorithm"], sort=False)["same"].mean().reset_index()


def stability_numbers(stability: pd.DataFrame, datasets) -> dict:
    same = stability.set_index(["dataset", "algorithm"])["same"]
    return {
        f"{name}_stable_{a}": float(same.get((name, a), np.nan))
        for name in datasets
        for a in ("local", "fedavg")
    }


def stability_caption(stability: pd.DataFrame) -> str:
    """Caption line: per dataset, the share of later epochs giving epoch 1's split."""
    parts = []
    for name, g in stability.groupby("dataset", sort=False):
        s = g.set_index("algorithm")["same"]
        algorithms = [a for a in ("local", "fedavg") if a in s]
        shares = " and ".join(f"{s[a]:.0%} ({algorithm_label(a)})" for a in algorithms)
        parts.append(f"{dataset_label(name)} {shares}")
    return "Later epochs give epoch 1's split in " + "; ".join(parts)


def batch_studies(datasets, plan, data, profile, device, counts, draws):
    """The split from m random mini-batches per client against the full-data split, per dataset
    and seed; and the first-epoch models (the cost study reuses them)."""
    studies, models_by_key = [], {}
    for name in datasets:
        for s in plan[name].seeds:
            config = make_config(name, profile, seed=s, device=device, progress=False)
            models = S.first_epoch_models(data[(name, s)], config)
            models_by_key[(name, s)] = models
            clients = [
                replace(c, x_train=c.x_train.to(device), y_train=c.y_train.to(device))
                for c in data[(name, s)].clients
            ]
            study = S.batch_study(models, clients, config.batch_size, counts, draws, s)
            studies.append(study.assign(dataset=name, seed=s))
    return pd.concat(studies, ignore_index=True), models_by_key


def batch_numbers(batches: pd.DataFrame, counts) -> dict:
    few, most = min(counts), max(counts)
    return {
        "batch_few": few,
        "batch_most": most,
        "batch_agree_few": float(batches[batches["batches"] == few]["agree"].mean()),
        "batch_agree_most": float(batches[batches["batches"] == most]["agree"].mean()),
    }


def batch_agreement(batches: pd.DataFrame) -> pd.DataFrame:
    """Share of draws whose split equals the full-data split, per dataset and m."""
    return batches.groupby(["dataset", "batches"], sort=False)["agree"].mean().reset_index()


def batch_table(agreement: pd.DataFrame) -> pd.DataFrame:
    """dataset × m ("m = 1", …): the share of draws equal to the full-data split."""
    table = agreement.pivot_table(index="dataset", columns="batches", values="agree", sort=False)
    table.columns = [f"m = {m}" for m in table.columns]
    return table.round(2)


def _ts(ts) -> str:
    return "t ∈ {" + ", ".join(f"{t:g}" for t in ts) + "}"


def threshold_numbers(agreement: pd.DataFrame, datasets) -> dict:
    """Glue values: the thresholds reproducing each published split in every seed."""
    lines = []
    for name in [n for n in datasets if n in S.REFERENCE_SPLITS]:
        refs = S.REFERENCE_SPLITS[name]

        def agree(ref, name=name):
            a = agreement[(agreement["dataset"] == name) & (agreement["reference"] == ref)]
            ok = a[a["agreement"] == 1.0]["threshold"].tolist()
            return _ts(ok) if ok else "no t of the grid"

        lines.append(
            f"- {dataset_label(name)}: the paper's transition (p = {refs['paper_transition']}) is "
            f"reproduced in every seed by {agree('paper_transition')}; the authors' code (p = "
            f"{refs['authors_config']}) by {agree('authors_config')}."
        )
    common = {
        ref: sorted(g.groupby("threshold")["agreement"].min().loc[lambda a: a == 1.0].index)
        for ref, g in agreement.groupby("reference", sort=False)
    }
    text = "; ".join(
        f"{_ts(ts) if ts else 'no threshold of the grid'} reproduces "
        f"{REFERENCE_NAMES.get(ref, ref)} on every dataset in every seed"
        for ref, ts in common.items()
    )
    return {
        "threshold_lines": "\n".join(lines) or "- (no dataset with a published split)",
        "threshold_common": text or "no dataset has a published split",
    }


def agreement_table(agreement: pd.DataFrame) -> pd.DataFrame:
    """threshold × (dataset, reference): the share of seeds reproducing the reference."""
    if not len(agreement):
        return pd.DataFrame()
    shown = agreement.assign(
        dataset=agreement["dataset"].map(dataset_label),
        reference=agreement["reference"].map(lambda r: REFERENCE_SHORT.get(r, r)),
    )
    wide = shown.pivot_table(
        index="threshold", columns=["dataset", "reference"], values="agreement", sort=False
    )
    return wide.round(2)
