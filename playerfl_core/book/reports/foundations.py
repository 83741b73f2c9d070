"""Tables of chapter 00 ("Federated learning in one hour"): Local against FedAvg client by
client, and the table of the twelve algorithms with display names."""

from __future__ import annotations

import pandas as pd
from tqdm import tqdm

from playerfl_core.book.reports import one_run
from playerfl_core.book.style import algorithm_label, hyperparameter_label
from playerfl_core.fl.algorithms import describe_algorithms, get_algorithm
from playerfl_core.fl.engine import run_federated


def per_client_scores(fd, config, algorithms=("local", "fedavg")) -> pd.DataFrame:
    """Each client's test macro-F1 at its best-validation round under each algorithm (one run
    each, same seed), with the client's name; long format, clients in federation order."""
    runs = [
        run_federated(fd, get_algorithm(name), config).table()
        for name in tqdm(algorithms, desc="runs")
    ]
    return one_run.per_client_scores(pd.concat(runs, ignore_index=True), {fd.name: fd})


def wide_scores(scores: pd.DataFrame, algorithms=("local", "fedavg")) -> pd.DataFrame:
    """Clients × algorithms (internal names as columns, for comparisons)."""
    return scores.pivot(index="client_name", columns="algorithm", values="value")[list(algorithms)]


def _default_text(value) -> str:
    """A default as a reader writes it: ``1`` not ``1.0``, text as it is."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def algorithm_table(names=None) -> pd.DataFrame:
    """What each algorithm shares, deploys, its key hyper-parameter (default) and its paper,
    indexed by display name; read from the algorithm classes, so it cannot drift from the code."""
    rows = pd.DataFrame(describe_algorithms(names))
    rows["key hyper-parameter (default)"] = [
        "none" if pd.isna(k) else f"{hyperparameter_label(k)} = {_default_text(v)}"
        for k, v in zip(rows["key_hyperparameter"], rows["default"], strict=True)
    ]
    names = {
        "algorithm": "Algorithm",
        "shares": "What a client shares",
        "deploys": "What a client deploys",
        "paper": "Paper",
    }
    table = rows.assign(algorithm=rows["algorithm"].map(algorithm_label)).rename(columns=names)
    columns = ["What a client shares", "What a client deploys", "key hyper-parameter (default)"]
    return table[["Algorithm", *columns, "Paper"]].set_index("Algorithm")
