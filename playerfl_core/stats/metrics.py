"""Headline scores, fairness, incentives, ranks and tests, computed from the results table only.

The protocol, stated once (chapter 05 repeats it in prose):

* **Per client and run.** A client's score is its *test* metric at the round with its lowest
  *validation* loss (:func:`playerfl_core.stats.results.select_rounds`,
  ``selection="best_val"``), as each silo would keep its best-validated model;
  ``selection="last"`` gives the final round.
* **Per run (headline).** The clients' weighted mean with **training-set shares** as weights
  (``weighting="train"``), the weights FedAvg aggregates with and the authors' code uses
  (appendix §7). In our splits every client's test set is a fixed fraction of its data, so
  test-size weights give nearly the same number; ``weighting="test"`` and ``"uniform"`` exist
  to show that.
* **Per algorithm and dataset.** The median over seeds, with a seeded percentile-bootstrap 95 %
  CI of the median (the authors' CI is unseeded and collapses to the median below 5 runs).
* **Fairness.** For each client the median over seeds of its score; fairness is the population
  variance (``ddof=0``) of these medians across clients (appendix §7). Lower is fairer.
* **IPR** (incentivized participation rate). The share of clients whose median score is
  strictly better than both their median under ``local`` and under ``fedavg`` (for the loss:
  strictly lower). It is undefined (NaN) for the two reference algorithms themselves.
* **Ranks.** Within each dataset, rank 1 is best, ties get the average rank; the mean rank
  over datasets summarises. The **Friedman test** treats algorithms as treatments and datasets
  (or seeds) as blocks; the authors' code transposes it (``orientation="authors"``, §7, §10).

Macro-F1 for a client whose test split holds a single class: the engine uses scikit-learn's
``f1_score(average="macro", zero_division=0)``, which averages over the classes present in the
labels *or* the predictions. It is 1.0 when every prediction is right; one wrong prediction
adds a class with F1 = 0, so such a client's macro-F1 falls to at most 0.5 while its accuracy
stays high. The value is always defined (never NaN); read it with that in mind.

Every metric a chapter reads comes through ``metrics as M``; ranks and rank tests live in
:mod:`playerfl_core.stats.rank_tests` and are re-exported here.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from playerfl_core.stats.rank_tests import (  # noqa: F401 (re-exported: chapters read M.friedman, ...)
    FriedmanResult,
    friedman,
    holm,
    nemenyi_cd,
    nemenyi_pairs,
    nemenyi_pvalues,
    rank_table,
    to_wide,
    wilcoxon_holm,
)
from playerfl_core.stats.results import RUN_KEYS, SERVER, client_scores, selection_losses
from playerfl_core.stats.seed_stats import bootstrap_interval

HIGHER_IS_BETTER = {"accuracy": True, "macro_f1": True, "loss": False}
"""Direction of every metric the engine logs on val/test splits."""

REFERENCES = ("local", "fedavg")
"""The two models a client could have without personalised federation (IPR's yardsticks)."""


def higher_is_better(metric: str) -> bool:
    """True for scores (accuracy, macro-F1), False for the loss; unknown names raise."""
    if metric not in HIGHER_IS_BETTER:
        raise ValueError(f"Unknown metric {metric!r}; known: {sorted(HIGHER_IS_BETTER)}.")
    return HIGHER_IS_BETTER[metric]


# -- per client and per run -----------------------------------------------------------------


def client_weights(table: pd.DataFrame, weighting: str = "train") -> pd.DataFrame:
    """Each client's weight within its run: columns ``RUN_KEYS + [client, weight]``.

    ``train``: training-set share (from the engine's ``n_samples`` rows); ``test``: test-set
    share; ``uniform``: 1/K.
    """
    keys = [*RUN_KEYS, "client"]
    clients = table[table["client"] != SERVER]
    if weighting == "train":
        rows = clients[(clients["split"] == "train") & (clients["metric"] == "n_samples")]
        size = rows.groupby(keys)["value"].first()
    elif weighting == "test":
        rows = clients[clients["split"] == "test"]
        size = rows.groupby(keys)["n_samples"].first().astype(float)
    elif weighting == "uniform":
        rows = clients[clients["split"] == "test"]
        size = rows.groupby(keys)["n_samples"].first().astype(float) * 0.0 + 1.0
    else:
        raise ValueError(f"weighting must be 'train', 'test' or 'uniform', got {weighting!r}.")
    if size.empty:
        raise ValueError(f"The table has no rows to derive {weighting!r} weights from.")
    weight = size / size.groupby(level=list(RUN_KEYS)).transform("sum")
    return weight.rename("weight").reset_index()


def run_scores(
    table: pd.DataFrame,
    metric: str = "macro_f1",
    selection: str = "best_val",
    weighting: str = "train",
    split: str = "test",
) -> pd.DataFrame:
    """Headline per run: the clients' weighted mean score on ``split`` (the test split). Columns
    ``RUN_KEYS + [value]``."""
    higher_is_better(metric)
    scores = client_scores(table, metric, split, selection)
    merged = scores.merge(client_weights(table, weighting), on=[*RUN_KEYS, "client"], how="left")
    if merged["weight"].isna().any():
        raise ValueError("Some clients have scores but no weight (missing n_samples rows).")
    merged["wv"] = merged["value"] * merged["weight"]
    out = merged.groupby(RUN_KEYS, as_index=False).agg(wv=("wv", "sum"), w=("weight", "sum"))
    out["value"] = out["wv"] / out["w"]
    return out[[*RUN_KEYS, "value"]]


# -- medians and bootstrap ------------------------------------------------------------------


def bootstrap_median_ci(
    values, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Median and percentile-bootstrap CI of the median, from a seeded generator: the project's
    one bootstrap (:func:`playerfl_core.stats.seed_stats.bootstrap_interval`) on the median.

    With one value the CI is that value; with none, NaNs. With few values (3 seeds) the CI is
    essentially [min, max]: report the number of seeds beside it.
    """
    return bootstrap_interval(values, level, n_boot, seed, statistic="median")


def _cell_seed(seed: int, *parts) -> int:
    """A stable per-cell bootstrap seed, so adding a dataset never changes another's CI."""
    return zlib.crc32("/".join(map(str, (seed, *parts))).encode())


def _one_lr(table: pd.DataFrame) -> None:
    lrs = table.groupby(["dataset", "algorithm"])["lr"].nunique()
    several = lrs[lrs > 1]
    if len(several):
        raise ValueError(
            f"The table holds several learning rates for {list(several.index)}; pass the "
            "evaluation table (one tuned LR per algorithm and dataset), e.g. GridResult.table."
        )


def summarize(
    table: pd.DataFrame,
    metric: str = "macro_f1",
    selection: str = "best_val",
    weighting: str = "train",
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Median over seeds of the headline score with its bootstrap CI.

    Columns: dataset, algorithm, lr, n_seeds, median, ci_low, ci_high; the datasets in the
    order ``table`` first lists them (the order a reader asked for them), so every table built
    from a summary shows them in one order.
    """
    _one_lr(table)
    runs = run_scores(table, metric, selection, weighting)
    rows = []
    for (ds, alg), g in runs.groupby(["dataset", "algorithm"], sort=False):
        med, lo, hi = bootstrap_median_ci(g["value"], n_boot, level, _cell_seed(seed, ds, alg))
        rows.append((ds, alg, g["lr"].iloc[0], g["seed"].nunique(), med, lo, hi))
    out = pd.DataFrame(
        rows, columns=["dataset", "algorithm", "lr", "n_seeds", "median", "ci_low", "ci_high"]
    )
    first = {d: k for k, d in enumerate(dict.fromkeys(table["dataset"]))}
    return out.sort_values("dataset", key=lambda d: d.map(first), kind="stable", ignore_index=True)


# -- fairness and incentives ----------------------------------------------------------------


def client_medians(
    table: pd.DataFrame, metric: str = "macro_f1", selection: str = "best_val"
) -> pd.DataFrame:
    """Each client's median test score over seeds: dataset, algorithm, client, median, n_seeds."""
    _one_lr(table)
    scores = client_scores(table, metric, "test", selection)
    out = scores.groupby(["dataset", "algorithm", "client"], sort=False).agg(
        median=("value", "median"), n_seeds=("seed", "nunique")
    )
    return out.reset_index()


def fairness(
    table: pd.DataFrame, metric: str = "macro_f1", selection: str = "best_val"
) -> pd.DataFrame:
    """Variance (ddof=0) across clients of their median scores: dataset, algorithm, variance."""
    med = client_medians(table, metric, selection)
    out = med.groupby(["dataset", "algorithm"], sort=False).agg(
        variance=("median", lambda s: float(np.var(s.to_numpy(), ddof=0))),
        n_clients=("client", "nunique"),
    )
    return out.reset_index()


def ipr(
    table: pd.DataFrame,
    metric: str = "macro_f1",
    selection: str = "best_val",
    references: tuple[str, ...] = REFERENCES,
) -> pd.DataFrame:
    """Incentivized participation rate per dataset and algorithm (a share in [0, 1]).

    A client counts if its median score beats its median under *every* reference strictly
    (direction-aware). Columns: dataset, algorithm, ipr, n_better, n_clients. The reference
    algorithms get NaN. A dataset without all references raises, naming what is missing.
    """
    better = np.greater if higher_is_better(metric) else np.less
    med = client_medians(table, metric, selection)
    rows = []
    for ds, g in med.groupby("dataset", sort=False):
        ref = {}
        for r in references:
            rg = g[g["algorithm"] == r].set_index("client")["median"]
            if rg.empty:
                raise ValueError(
                    f"IPR on {ds!r} needs the reference algorithm {r!r}, absent from the table "
                    "(did its runs fail? see the grid's status)."
                )
            ref[r] = rg
        for alg, a in g.groupby("algorithm", sort=False):
            a = a.set_index("client")["median"]
            if alg in references:
                rows.append((ds, alg, np.nan, 0, len(a)))
                continue
            ok = np.ones(len(a), dtype=bool)
            for rg in ref.values():
                ok &= better(a.to_numpy(), rg.reindex(a.index).to_numpy())
            rows.append((ds, alg, float(ok.mean()), int(ok.sum()), len(a)))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "ipr", "n_better", "n_clients"])


# -- paired comparisons, LR tuning ----------------------------------------------------------


def paired_differences(
    table: pd.DataFrame,
    a: str,
    b: str,
    metric: str = "macro_f1",
    selection: str = "best_val",
    weighting: str = "train",
) -> pd.DataFrame:
    """Per dataset and seed: headline(a) − headline(b), direction-aware (positive: a better).

    Within a seed both algorithms share the data split and initial weights, so the difference
    is a paired comparison. Columns: dataset, seed, diff.
    """
    sign = 1.0 if higher_is_better(metric) else -1.0
    _one_lr(table[table["algorithm"].isin([a, b])])  # one run per (dataset, seed) label below
    runs = run_scores(table, metric, selection, weighting)
    wa = runs[runs["algorithm"] == a].set_index(["dataset", "seed"])["value"]
    wb = runs[runs["algorithm"] == b].set_index(["dataset", "seed"])["value"]
    both = wa.index.intersection(wb.index)
    diff = sign * (wa.loc[both] - wb.loc[both])
    return diff.rename("diff").reset_index().sort_values(["dataset", "seed"], ignore_index=True)


def best_val_loss(table: pd.DataFrame, weighting: str = "train") -> pd.DataFrame:
    """Per run: the clients' weighted mean of their lowest validation loss over rounds.

    This is the LR-tuning criterion: it uses validation data only, and it scores exactly the
    model each client would keep (its best-validation round): by the loss rounds are selected
    by (the training loss under the authors' protocol, else cross-entropy). Columns
    ``RUN_KEYS + [value]``.
    """
    keys = [*RUN_KEYS, "client"]
    val = selection_losses(table[(table["split"] == "val") & (table["client"] != SERVER)])
    best = val.groupby(keys, as_index=False)["value"].min()
    best = best.merge(client_weights(table, weighting), on=keys, how="left")
    best["wv"] = best["value"] * best["weight"]
    out = best.groupby(RUN_KEYS, as_index=False).agg(wv=("wv", "sum"), w=("weight", "sum"))
    out["value"] = out["wv"] / out["w"]
    return out[[*RUN_KEYS, "value"]]


def choose_lr(scores: pd.DataFrame) -> pd.DataFrame:
    """The learning rate with the lowest mean tuning score per dataset and algorithm.

    ``scores`` has columns dataset, algorithm, lr, score (NaN or inf = ineligible, e.g. a run
    diverged). Ties go to the smaller learning rate. A pair without any eligible LR is
    returned with lr NaN.
    """
    rows = []
    for (ds, alg), g in scores.groupby(["dataset", "algorithm"], sort=False):
        ok = g[np.isfinite(g["score"].astype(float))]
        if ok.empty:
            rows.append((ds, alg, np.nan, np.nan))
            continue
        best = ok.sort_values(["score", "lr"], kind="stable").iloc[0]
        rows.append((ds, alg, float(best["lr"]), float(best["score"])))
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "lr", "score"])


# -- claims ---------------------------------------------------------------------------------


def best_mean_rank(ranks: pd.DataFrame, algorithm: str) -> dict:
    """Is ``algorithm``'s mean rank the (possibly shared) best? Returns the facts for a verdict;
    ``best_others`` lists every other algorithm that shares the best rank among the others (a
    page that names one of them would hide the tie)."""
    mr = ranks["mean_rank"].dropna()
    if algorithm not in mr.index:
        raise ValueError(f"{algorithm!r} has no mean rank (is it in the table?).")
    best = float(mr.min())
    others = mr.drop(algorithm)
    return {
        "holds": bool(mr[algorithm] <= best),
        "mean_rank": float(mr[algorithm]),
        "position": int((mr < mr[algorithm]).sum()) + 1,
        "best_other": str(others.idxmin()) if len(others) else "",
        "best_others": [str(a) for a in others.index[others == others.min()]],
        "best_other_rank": float(others.min()) if len(others) else np.nan,
        "n_algorithms": int(len(mr)),
    }
