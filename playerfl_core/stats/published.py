"""The published PLayer-FL numbers (the authors' ``results/README.md``, appendix §9), as data.

Copied verbatim from the authors' tables so the reproduction report can set our numbers
beside them; nothing here is computed. Accuracy is in %, fairness is a variance of client
medians, IPR is in %, and the loss scale is doubtful (the README header says "×1e-4"). Cells
are "median ± CI half-width" where the README prints one.
"""

from __future__ import annotations

import pandas as pd

from data_prep.base import data_root
from data_prep.prepare import statuses
from data_prep.registry import declarations

NAMES = {
    "Local": "local",
    "FedAvg": "fedavg",
    "FedProx": "fedprox",
    "pFedMe": "pfedme",
    "Ditto": "ditto",
    "LocalAdaptation": "finetune",
    "BABU": "fedbabu",
    "FedBABU": "fedbabu",
    "FedLP": "fedlp",
    "FedLAMA": "fedlama",
    "pFedLA": "pfedla",
    "PLayer-FL": "playerfl",
    "PLayer-FL-Random": "playerfl_random",
    "PLayer-FL-1": "playerfl-1",
    "PLayer-FL+1": "playerfl+1",
}
"""The README's algorithm names → this library's (``LocalAdaptation`` is our ``finetune``)."""


def paper_columns() -> dict[str, str]:
    """The published tables' column names -> registered federations (each declaration's
    ``paper_name``): which of our federations each published column describes."""
    return {f.paper_name: f.name for f in declarations() if f.paper_name}


def paper_datasets() -> list[str]:
    """Registered federations the paper reports, in the tables' column order."""
    return list(published_wide("accuracy").columns)


FRIEDMAN_P = {
    "accuracy": "< 5e-3",
    "loss": "< 5e-3",
    "fairness_accuracy": "< 5e-3",
    "ipr_accuracy": "< 5e-3",
    "fairness_f1": "< 5e-3",
    "ipr_f1": "0.043",
    "fairness_loss": "< 5e-3",
    "ipr_loss": "0.084",
}
"""Friedman p-values as printed (computed with datasets as treatments: appendix §7)."""

AUTHORS_DEFAULT_LR = {
    "FMNIST": 1e-3,
    "EMNIST": 1e-3,
    "CIFAR": 1e-3,
    "ISIC": 1e-3,
    "Sent140": 1e-3,
    "Heart": 5e-2,
    "MIMIC": 1e-4,
}
"""The authors' default learning rate per dataset (``code/configs.py``, appendix §1.1): their
fallback for an algorithm without a tuned rate (FedLP, FedLAMA, pFedLA, PLayer-FL-Random have
no published one)."""

_LEARNING_RATES = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC
Local|1e-3|1e-3|1e-3|1e-3|5e-2|5e-4|8e-5
FedAvg|5e-4|1e-3|1e-3|1e-3|1e-1|1e-3|5e-4
FedProx|5e-4|5e-3|1e-3|1e-3|5e-2|1e-3|5e-4
pFedMe|5e-2|5e-2|5e-2|5e-3|1e-1|1e-2|1e-3
Ditto|5e-4|1e-3|1e-3|1e-3|5e-2|1e-3|5e-4
LocalAdaptation|5e-4|1e-3|1e-3|1e-3|1e-2|1e-3|5e-4
BABU|1e-3|1e-3|5e-4|1e-3|1e-1|8e-5|5e-4
PLayer-FL|1e-3|1e-3|1e-3|5e-4|1e-2|8e-5|3e-4
PLayer-FL-1|1e-3|5e-4|1e-3|5e-4|5e-2|8e-5|8e-5
PLayer-FL+1|1e-3|1e-3|5e-4|1e-3|5e-2|1e-4|5e-4
"""

_ACCURACY = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
Local|88.7±0.9|84.2±0.9|79.4±1.3|68.9±1.8|53.7±1.0|79.8±0.3|74.7±2.1|6.7
FedAvg|89.1±0.5|86.5±0.6|80.0±0.6|66.4±1.2|54.1±0.7|78.8±0.2|74.7±0.6|6.4
FedProx|89.2±0.4|86.2±0.9|80.2±0.6|66.5±1.6|52.9±1.6|78.8±0.2|75.7±1.7|6.4
pFedMe|88.2±0.8|85.7±0.9|67.4±1.1|66.8±0.6|55.0±1.0|80.0±0.2|73.3±0.9|6.9
Ditto|89.0±0.6|85.6±1.1|67.8±0.8|66.0±1.0|55.5±1.0|80.3±0.6|73.5±0.9|7.0
LocalAdaptation|89.3±0.8|86.3±0.6|80.0±1.1|66.9±0.2|53.8±0.8|78.9±0.3|74.0±2.2|6.3
FedBABU|89.2±0.6|86.4±0.7|80.7±1.4|67.3±1.6|54.2±0.7|81.0±0.2|74.9±0.6|3.4
FedLP|89.1±0.6|86.3±0.9|78.6±1.6|66.6±0.7|54.1±0.7|79.4±0.3|74.6±1.3|7.0
FedLAMA|86.3±0.8|83.3±0.6|63.4±2.0|62.4±1.5|54.7±0.8|78.0±0.1|75.2±1.2|8.9
pFedLA|70.8±0.2|41.2±2.7|37.1±2.3|56.7±1.6|52.6±1.4|78.0±0.0|74.7±2.6|11.1
PLayer-FL|89.8±0.7|86.1±0.8|81.5±1.1|68.6±0.8|55.4±1.2|80.7±0.7|75.7±0.6|2.2
PLayer-FL-Random|89.2±0.7|84.1±0.8|81.2±1.2|68.6±0.8|54.4±1.2|79.0±0.4|74.5±2.0|5.8
"""

_LOSS = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
Local|34.7±2.0|58.6±3.7|60.7±4.3|111.2±0.3|29.6±0.8|43.7±0.3|71.4±0.8|8.3
FedAvg|30.7±1.1|42.2±2.8|57.4±3.1|121.8±1.6|27.5±0.5|44.1±0.2|65.8±0.9|6.1
FedProx|31.5±1.9|41.6±2.9|56.3±1.3|121.6±1.1|28.4±0.9|43.9±0.2|65.8±1.1|6.3
pFedMe|30.4±2.3|42.9±2.7|90.9±2.8|118.0±1.0|26.4±0.9|42.2±0.6|67.4±0.8|5.1
Ditto|30.8±0.2|45.0±3.0|89.9±3.9|120.6±2.5|26.2±0.4|42.5±0.6|67.3±0.1|5.9
LocalAdaptation|30.5±1.9|41.1±3.4|57.0±3.0|121.4±1.3|28.1±0.6|43.6±0.1|65.7±0.6|4.9
FedBABU|30.0±1.9|42.2±3.5|55.2±2.8|120.6±1.5|29.1±1.0|41.8±0.2|65.5±0.7|3.8
FedLP|30.1±1.0|43.1±3.2|61.4±3.6|128.7±1.5|27.3±0.5|42.9±0.2|65.8±0.6|6.7
FedLAMA|37.6±2.0|53.2±2.3|102.4±3.0|133.0±1.8|27.2±0.5|45.0±0.3|65.2±0.5|8.3
pFedLA|88.6±6.9|253.4±11.2|176.2±10.6|151.2±1.8|36.1±4.9|47.2±0.6|75.4±0.6|12.0
PLayer-FL|27.7±2.0|45.4±3.9|52.6±2.6|113.4±0.6|26.7±0.6|41.4±0.4|66.2±0.7|3.4
PLayer-FL-Random|33.3±2.3|58.2±1.8|55.6±3.7|113.1±1.6|27.9±1.0|44.6±0.7|69.9±1.2|7.4
"""

_FAIRNESS_ACCURACY = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
FedProx|1.0e-4|3.0e-4|1.0e-4|3.5e-2|6.7e-2|2.4e-2|1.1e-2|5.7
pFedMe|1.0e-5|3.0e-4|4.0e-4|3.3e-2|4.6e-2|2.1e-2|1.4e-2|5.0
Ditto|1.0e-4|2.0e-4|3.0e-4|3.5e-2|5.7e-2|2.3e-2|1.3e-2|5.3
LocalAdaptation|1.0e-4|2.0e-4|2.0e-4|3.2e-2|5.7e-2|2.4e-2|1.4e-2|5.5
FedBABU|1.0e-4|2.0e-4|1.0e-4|3.3e-2|6.0e-2|1.8e-2|1.2e-2|4.9
FedLP|1.0e-4|2.0e-4|1.0e-4|3.6e-2|5.7e-2|2.2e-2|1.5e-2|5.3
FedLAMA|1.0e-4|2.0e-4|3.0e-4|4.2e-3|6.3e-2|2.6e-2|1.3e-2|7.1
pFedLA|9.0e-4|6.0e-4|2.3e-3|6.3e-2|5.1e-2|2.6e-2|2.5e-2|8.9
PLayer-FL|1.0e-4|1.0e-4|1.0e-4|2.9e-2|4.7e-2|1.9e-2|1.3e-2|2.5
PLayer-FL-Random|1.0e-4|3.0e-4|1.0e-4|2.9e-2|5.7e-2|2.5e-2|9.7e-3|4.9
"""

_IPR_ACCURACY = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
FedProx|20.0|40.0|40.0|0.0|0.0|0.0|50.0|5.6
pFedMe|40.0|40.0|0.0|0.0|25.0|6.7|0.0|5.6
Ditto|60.0|0.0|0.0|0.0|0.0|6.7|0.0|6.8
LocalAdaptation|60.0|40.0|60.0|0.0|0.0|0.0|25.0|5.3
FedBABU|80.0|20.0|60.0|0.0|0.0|20.0|25.0|4.3
FedLP|60.0|20.0|20.0|0.0|0.0|6.7|25.0|5.4
FedLAMA|0.0|0.0|0.0|0.0|0.0|0.0|0.0|8.1
pFedLA|0.0|0.0|0.0|0.0|25.0|0.0|50.0|6.5
PLayer-FL|80.0|0.0|100.0|25.0|25.0|20.0|75.0|2.4
PLayer-FL-Random|40.0|0.0|100.0|25.0|0.0|6.7|25.0|4.9
"""

_FAIRNESS_F1 = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Rank
FedProx|3.0e-4|8.0e-4|4.0e-4|1.1e-2|9.0e-2|4.1e-3|1.7e-3|7.7
pFedMe|3.0e-4|6.0e-4|5.0e-4|4.2e-3|7.1e-2|3.7e-2|1.4e-3|4.3
Ditto|5.0e-4|6.0e-4|2.0e-4|3.6e-3|8.2e-2|3.6e-2|1.6e-3|5.0
LocalAdaptation|1.0e-4|7.0e-4|4.0e-4|9.0e-3|8.3e-2|4.1e-2|2.2e-3|6.4
FedBABU|2.0e-4|4.0e-4|4.0e-4|2.1e-3|8.4e-2|3.5e-2|2.0e-3|4.4
FedLP|3.0e-4|4.0e-4|1.0e-3|1.1e-2|8.5e-2|3.7e-2|1.6e-3|6.1
FedLAMA|2.0e-4|6.0e-4|5.0e-4|4.7e-3|8.7e-2|4.1e-2|2.0e-3|5.6
pFedLA|4.0e-4|1.0e-4|1.0e-4|3.5e-3|7.4e-2|4.1e-2|2.1e-3|5.1
PLayer-FL|4.0e-4|5.0e-4|6.0e-4|1.3e-3|7.3e-2|3.3e-2|1.5e-3|3.8
PLayer-FL-Random|8.0e-4|3.0e-4|1.0e-3|7.0e-4|7.3e-2|3.4e-2|1.9e-3|6.5
"""

_IPR_F1 = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Rank
FedProx|0.0|20.0|40.0|0.0|0.0|6.7|50.0|5.4
pFedMe|80.0|20.0|0.0|0.0|50.0|6.7|0.0|5.1
Ditto|60.0|0.0|0.0|0.0|0.0|26.7|25.0|5.6
LocalAdaptation|0.0|40.0|40.0|0.0|0.0|0.0|75.0|5.2
FedBABU|0.0|40.0|80.0|0.0|0.0|20.0|50.0|4.4
FedLP|0.0|60.0|0.0|0.0|0.0|6.7|50.0|6.2
FedLAMA|0.0|0.0|0.0|0.0|0.0|0.0|0.0|7.3
pFedLA|0.0|0.0|0.0|0.0|0.0|0.0|0.0|7.7
PLayer-FL|100.0|0.0|100.0|0.0|25.0|20.0|50.0|3.4
PLayer-FL-Random|60.0|0.0|80.0|0.0|25.0|6.7|25.0|4.8
"""

_FAIRNESS_LOSS = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
FedProx|1.1e-3|1.7e-3|1.1e-3|3.8e-1|1.8e-2|5.5e-2|4.7e-2|6.4
pFedMe|5.0e-4|2.3e-3|1.8e-3|3.6e-1|1.3e-2|5.2e-2|3.5e-2|4.1
Ditto|6.0e-4|2.2e-3|2.3e-4|3.8e-1|1.7e-2|5.2e-2|3.8e-2|4.6
LocalAdaptation|1.0e-3|2.1e-3|1.2e-3|4.0e-1|1.9e-2|5.5e-2|4.8e-2|7.1
FedBABU|4.0e-4|1.2e-3|7.0e-4|4.1e-1|2.1e-2|4.6e-2|4.5e-2|4.4
FedLP|7.0e-4|1.9e-3|8.0e-4|4.3e-1|1.7e-2|5.2e-2|4.3e-2|5.1
FedLAMA|2.0e-4|2.9e-3|2.4e-3|4.6e-1|1.8e-2|5.3e-2|4.3e-2|6.7
pFedLA|1.0e-3|2.3e-2|5.1e-2|5.7e-1|2.6e-1|5.1e-2|3.2e-2|7.6
PLayer-FL|7.0e-4|2.5e-3|4.0e-4|3.2e-1|1.4e-2|5.1e-2|4.2e-2|3.6
PLayer-FL-Random|8.0e-4|4.1e-3|1.0e-4|3.2e-1|1.6e-2|6.1e-2|4.0e-2|5.2
"""

_IPR_LOSS = """
Algorithm|FMNIST|EMNIST|CIFAR|ISIC|Heart|Sent140|MIMIC|Avg rank
FedProx|40.0|80.0|40.0|0.0|25.0|33.3|25.0|5.1
pFedMe|40.0|40.0|0.0|0.0|100.0|33.3|0.0|5.7
Ditto|40.0|0.0|0.0|0.0|75.0|33.3|0.0|6.5
LocalAdaptation|20.0|60.0|80.0|0.0|25.0|40.0|25.0|4.8
FedBABU|80.0|40.0|60.0|0.0|0.0|40.0|25.0|4.6
FedLP|60.0|80.0|20.0|0.0|75.0|40.0|50.0|3.6
FedLAMA|0.0|0.0|0.0|0.0|50.0|20.0|75.0|6.7
pFedLA|0.0|0.0|0.0|0.0|0.0|6.7|0.0|8.5
PLayer-FL|80.0|0.0|100.0|50.0|100.0|40.0|0.0|3.5
PLayer-FL-Random|0.0|0.0|100.0|50.0|50.0|20.0|0.0|6.0
"""

_TABLES = {
    "learning_rate": _LEARNING_RATES,
    "accuracy": _ACCURACY,
    "loss": _LOSS,
    "fairness_accuracy": _FAIRNESS_ACCURACY,
    "ipr_accuracy": _IPR_ACCURACY,
    "fairness_f1": _FAIRNESS_F1,
    "ipr_f1": _IPR_F1,
    "fairness_loss": _FAIRNESS_LOSS,
    "ipr_loss": _IPR_LOSS,
}
TABLES = tuple(_TABLES)


def _parse(text: str) -> pd.DataFrame:
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.strip().splitlines()
    ]
    header, body = rows[0], rows[1:]
    columns = paper_columns()
    records = []
    for cells in body:
        alg = NAMES[cells[0]]
        for col, cell in zip(header[1:], cells[1:], strict=True):
            if col in columns:
                value, _, half = cell.partition("±")
                records.append(
                    (
                        alg,
                        columns[col],
                        float(value),
                        float(half) if half.strip() else float("nan"),
                    )
                )
            else:  # the README's own average-rank column
                records.append((alg, "avg_rank", float(cell), float("nan")))
    return pd.DataFrame(records, columns=["algorithm", "dataset", "value", "ci_half"])


def published(name: str) -> pd.DataFrame:
    """One published table in long form: algorithm, dataset, value, ci_half.

    ``dataset == "avg_rank"`` rows hold the README's own average-rank column. ``name`` is one
    of :data:`TABLES`.
    """
    if name not in _TABLES:
        raise ValueError(f"Unknown published table {name!r}; choose from {TABLES}.")
    return _parse(_TABLES[name])


def published_wide(name: str, datasets: list[str] | None = None) -> pd.DataFrame:
    """Algorithms × datasets matrix of a published table (without the rank column)."""
    long = published(name)
    long = long[long["dataset"] != "avg_rank"]
    wide = long.pivot(index="algorithm", columns="dataset", values="value")
    wide = wide.reindex(list(dict.fromkeys(long["algorithm"])))
    order = list(dict.fromkeys(long["dataset"]))  # the published column order
    cols = [d for d in order if d in wide.columns]
    wide = wide[cols]
    return wide if datasets is None else wide[datasets]


def published_beside_missing(
    name: str, ran: list[str], present: dict[str, bool] | None = None
) -> pd.DataFrame:
    """The published column of table ``name`` for each paper federation not in ``ran``, beside
    an "ours" column saying why it was not run here (for a reproduction chapter).

    ``ran``: the federations run here (registered names);
    ``present``: registered name → whether its files are on this machine (default: asked of
    ``data_prep.prepare.statuses``, which prepares nothing that is absent).
    """
    if present is None:
        present = {k: ok for k, (ok, _) in statuses(data_root()).items()}
    theirs = published_wide(name)
    cols = {}
    for key in theirs.columns:
        if key in ran:
            continue
        why = "files present, not run" if present.get(key) else "files not present"
        cols[(key, "ours")] = pd.Series(f"not run here: {why}", index=theirs.index)
        cols[(key, "published")] = theirs[key]
    return pd.DataFrame(cols)
