"""Reading the long results table: round selection, per-client scores, save/load.

The table's schema (:data:`COLUMNS`, :data:`SERVER`) lives in :mod:`playerfl_core.fl.schema`,
below the engine that writes it; it is re-exported here for readers of tables.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from playerfl_core.fl.schema import COLUMNS, RUN_KEYS, SERVER

__all__ = [
    "COLUMNS",
    "RUN_KEYS",
    "SERVER",
    "atomic_write",
    "chosen_splits",
    "client_scores",
    "load_table",
    "save_table",
    "select_rounds",
    "sensitivities",
]


def select_rounds(table: pd.DataFrame, selection: str = "best_val") -> pd.DataFrame:
    """Each client's test (and val) scores at its selected round.

    ``best_val``: the round with the lowest validation loss (first such round on ties), as the
    paper's per-client model selection; ``last``: the final round. Returns the rows of the
    selected rounds with an extra column ``selection``.
    """
    if selection not in ("best_val", "last"):
        raise ValueError(f"selection must be 'best_val' or 'last', got {selection!r}.")
    keys = [*RUN_KEYS, "client"]
    scored = table[table["split"].isin(["val", "test"]) & (table["client"] != SERVER)]
    if selection == "best_val":
        val_loss = scored[(scored["split"] == "val") & (scored["metric"] == "loss")]
        val_loss = val_loss.sort_values([*keys, "round"])
        chosen = val_loss.loc[val_loss.groupby(keys)["value"].idxmin(), [*keys, "round"]]
    else:
        chosen = scored.groupby(keys, as_index=False)["round"].max()
    out = scored.merge(chosen, on=[*keys, "round"])
    return out.assign(selection=selection)


def client_scores(
    table: pd.DataFrame, metric: str = "macro_f1", split: str = "test", selection: str = "best_val"
) -> pd.DataFrame:
    """Wide per-client scores: one row per run and client, the chosen metric as ``value``."""
    sel = select_rounds(table, selection)
    sel = sel[(sel["split"] == split) & (sel["metric"] == metric)]
    return sel[[*RUN_KEYS, "client", "round", "value", "n_samples"]].reset_index(drop=True)


def atomic_write(path: str | Path, write) -> Path:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it over ``path``, so a
    crash or a kill never leaves half a file under the real name."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def save_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write the table atomically (temp file + rename), so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda p: table.to_csv(p, index=False))


def load_table(path: str | Path) -> pd.DataFrame:
    """Read a results table written by :func:`save_table`, checking its columns."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No results table at {path}; create it with `playerfl run`.")
    table = pd.read_csv(path)
    missing = set(COLUMNS) - set(table.columns)
    if missing:
        raise ValueError(f"{path} is not a results table: columns {sorted(missing)} are missing.")
    return table


def sensitivities(table: pd.DataFrame, client: int | None = SERVER) -> pd.DataFrame:
    """Per-unit federation sensitivities recorded by PLayer-FL after epoch 1.

    ``client=SERVER`` gives the server's weighted average; ``None`` gives every client's own.
    Columns: dataset, seed, client, unit, unit_index (forward order), sensitivity, cumulative
    (F_l normalised by the first unit, the paper's plotted form).
    """
    rows = table[table["metric"].str.startswith("sensitivity/")]
    rows = rows[rows["algorithm"] == "playerfl"]
    if client is not None:
        rows = rows[rows["client"] == client]
    out = rows.assign(unit=rows["metric"].str.removeprefix("sensitivity/"))
    out = out[["dataset", "seed", "client", "unit", "value"]].rename(
        columns={"value": "sensitivity"}
    )
    keys = ["dataset", "seed", "client"]
    out = out.assign(unit_index=out.groupby(keys).cumcount() + 1)
    first = out.groupby(keys)["sensitivity"].transform("first")
    out["cumulative"] = out.groupby(keys)["sensitivity"].cumsum() / first
    return out.reset_index(drop=True)


def chosen_splits(table: pd.DataFrame) -> pd.DataFrame:
    """The split p each PLayer-FL-style run chose (one row per run)."""
    rows = table[(table["metric"] == "split_p") & (table["client"] == SERVER)]
    return (
        rows[RUN_KEYS + ["value"]]
        .rename(columns={"value": "split_p"})
        .astype({"split_p": int})
        .reset_index(drop=True)
    )
