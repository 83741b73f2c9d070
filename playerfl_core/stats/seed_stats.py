"""Statistics over seeds of the layer-measurement table: intervals (Student-t and the
project's one seeded percentile bootstrap), depth trends, stage agreement, metric correlations.

Seeds are the replicates: clients of one run are averaged within a seed first. Verdicts live in
:mod:`playerfl_core.stats.claims`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

NO_OTHER = -1
"""Value of the analytics table's ``other`` column for rows that are not pairwise (here, not in
:mod:`~playerfl_core.measure.layer_measure` that writes the table, so statistics need not import
measurements)."""


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
    values: Iterable[float],
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    statistic: str = "mean",
) -> tuple[float, float, float]:
    """(statistic, lower, upper): seeded percentile bootstrap of the mean or the median of the
    finite ``values``; the project's one bootstrap (:func:`playerfl_core.stats.metrics.summarize`
    uses it for medians over seeds).

    With one value the interval is that value; with none, NaNs. With few values (3 seeds) the
    interval is essentially [min, max]: report the number of seeds beside it.
    """
    if statistic not in BOOTSTRAP_STATISTICS:
        raise ValueError(
            f"statistic must be one of {sorted(BOOTSTRAP_STATISTICS)}, got {statistic!r}."
        )
    stat = BOOTSTRAP_STATISTICS[statistic]
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (float("nan"),) * 3
    point = float(stat(v))
    if v.size == 1:
        return point, point, point
    rng = np.random.default_rng(seed)
    draws = stat(v[rng.integers(0, v.size, size=(n_boot, v.size))], axis=1)
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    return point, float(lo), float(hi)


BOOTSTRAP_STATISTICS = {"mean": np.mean, "median": np.median}


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


def rises_by_stage(rises: pd.DataFrame) -> pd.DataFrame:
    """:func:`adjacent_rises` as a table: (dataset, pair) rows in depth order, one column per
    stage (a pivot would sort the pairs by name across datasets: fc1→fc2 before conv1→conv2)."""
    rows = pd.MultiIndex.from_frame(rises[["dataset", "pair"]].drop_duplicates())
    stages = list(dict.fromkeys(rises["stage"]))
    wide = rises.set_index(["dataset", "pair", "stage"])["rises"].unstack("stage")
    return wide.reindex(index=rows, columns=stages).rename_axis(columns="stage")


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
