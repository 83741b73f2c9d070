"""How noisy one test score is at the book's sizes, beside the tolerance δ.

A client's test accuracy at its best-validation round is a share of ``n`` test images, so its
binomial standard error is sqrt(a(1 − a)/n); a run's score is the training-share-weighted mean
over clients, with standard error sqrt(Σ w² a(1 − a)/n). These are the accuracy's, a guide to
the size of macro-F1's (the book's headline metric), not a bound on it: macro-F1 averages
per-class F1 scores over fewer images each, which adds noise where a client holds a few images
of a class, while its errors on balanced clients can be smaller than accuracy's. The evaluation
rung measures macro-F1's error by resampling (``book.reports.eval_rung.noise_table``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.book.prose import listed
from playerfl_core.stats.results import client_scores
from playerfl_core.stats.split_verdicts import TOLERANCE

RUN = ["dataset", "algorithm", "lr", "seed"]


def noise_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, over its runs (a sweep's or a grid's long table): the clients' test images
    (mean: the book's "80 per client" is an average, label skew makes clients' sizes differ), a
    client's accuracy standard error (median) and a run's (median), and the run's as a multiple
    of δ. Columns: dataset, test_images, client_se, run_se, run_se_over_delta."""

    acc = client_scores(table, "accuracy", "test", "best_val")
    weights = table[(table["split"] == "train") & (table["metric"] == "weight")]
    weights = weights[[*RUN, "client", "value"]].rename(columns={"value": "w"})
    both = acc.merge(weights, on=[*RUN, "client"])
    both["var"] = both["value"] * (1 - both["value"]) / both["n_samples"]
    both["run_var"] = both["w"] ** 2 * both["var"]
    runs = both.groupby(RUN, sort=False)["run_var"].sum().pow(0.5).rename("run_se").reset_index()
    rows = []
    for ds, g in both.groupby("dataset", sort=False):
        run_se = float(runs.loc[runs["dataset"] == ds, "run_se"].median())
        rows.append((ds, float(g["n_samples"].mean()), float(np.sqrt(g["var"]).median()),
                     run_se, run_se / TOLERANCE))  # fmt: skip
    return pd.DataFrame(
        rows, columns=["dataset", "test_images", "client_se", "run_se", "run_se_over_delta"]
    )


def noise_summary(noise: pd.DataFrame, label=str) -> str:
    """One sentence from :func:`noise_table`: on which datasets a run's standard error reaches
    δ, and on which it is below δ/4 (the target a referee asked for); an empty group in words,
    "on no dataset" (": none" read as an unfilled template)."""

    def names(rows) -> str:
        return listed(label(d) for d in rows["dataset"]) if len(rows) else "no dataset"

    noisy = noise[noise["run_se_over_delta"] >= 1]
    quiet = noise[noise["run_se_over_delta"] < 0.25]
    return (
        f"A run's score is at least as noisy as δ = {TOLERANCE:g} itself on {names(noisy)}; "
        f"its standard error is below δ/4 on {names(quiet)}."
    )


def mean_sizes(tables, datasets) -> tuple[int, int] | None:
    """The validation and test images a client of ``datasets`` holds on average over clients
    and runs of ``tables`` (long tables): the book's sizes as the runs hold them, not restated
    (Fashion-MNIST's 400 images per client are an average, 64/16/20); None without their runs."""
    held = [t[t["dataset"].isin(list(datasets))] for t in tables]
    if not any(len(t) for t in held):
        return None
    sizes = []
    for split, metric in (("val", "loss"), ("test", "accuracy")):  # what every run logs there
        n = pd.concat([client_scores(t, metric, split, "best_val") for t in held if len(t)],
                      ignore_index=True)["n_samples"]  # fmt: skip
        sizes.append(int(round(float(n.mean()))))
    return sizes[0], sizes[1]
