"""Reading the long results table: round selection, per-client scores, save/load (atomic writes,
writability checked before any compute).

The table's schema (:data:`COLUMNS`, :data:`SERVER`) lives in :mod:`playerfl_core.fl.schema`,
below the engine that writes it; it is re-exported here for readers of tables.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from playerfl_core.fl.schema import COLUMNS, RUN_KEYS, SERVER, TRAINING_LOSS

__all__ = [
    "COLUMNS",
    "RUN_KEYS",
    "SCORED_SPLITS",
    "SELECTIONS",
    "SERVER",
    "TABLE_FORMATS",
    "atomic_write",
    "chosen_splits",
    "client_scores",
    "env_folder",
    "folder_problem",
    "load_table",
    "not_a_file",
    "read_table_file",
    "save_table",
    "select_rounds",
    "selection_losses",
    "sensitivities",
    "table_format",
]


SELECTIONS = ("best_val", "last")
"""How :func:`select_rounds` picks each client's round."""

SCORED_SPLITS = ("val", "test")
"""The splits a client is scored on (rows of other splits are never selected)."""


def _run_name(row) -> str:
    return ", ".join(f"{k}={row[k]}" for k in RUN_KEYS)


def _scored_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The clients' val/test rows with a fresh 0 … n−1 index: every later step picks rows by
    value or position, never by the caller's labels (which may repeat after ``pd.concat``)."""
    scored = table[table["split"].isin(SCORED_SPLITS) & (table["client"] != SERVER)]
    scored = scored.reset_index(drop=True)
    if scored.empty:
        raise ValueError(
            "The table holds no clients' validation or test rows, so there is nothing to score; "
            "pass a results table of finished runs (an empty grid, or one whose runs all "
            "diverged, has none: see GridResult.note())."
        )
    facts = [*RUN_KEYS, "client", "round", "split", "metric"]
    repeated = scored.duplicated(facts)
    if repeated.any():
        r = scored[repeated].iloc[0]
        raise ValueError(
            f"The table holds the run ({_run_name(r)}) more than once (client {r['client']}, "
            f"round {r['round']}, {r['split']} {r['metric']} repeats): the same table "
            "concatenated twice, or runs that differ only in options the table's keys do not "
            "hold (e.g. two variants of a grid). Drop exact repeats with "
            "table.drop_duplicates(), or score each run's table separately."
        )
    return scored


def select_rounds(table: pd.DataFrame, selection: str = "best_val") -> pd.DataFrame:
    """Each client's test (and val) scores at its selected round.

    ``best_val``: the round with the lowest validation loss (first such round on ties), as the
    paper's per-client model selection; for a run that logged ``training_loss`` (the authors'
    protocol) the validation value of that loss, the one their code selects by (reference
    §5.3), else cross-entropy; ``last``: the final round. Returns the rows of the
    selected rounds with an extra column ``selection`` and a fresh 0 … n−1 index.

    Any index and any order of rows give the same answer (rows are chosen by value, never by
    index label). Non-finite validation losses are never chosen; a client without any finite
    one raises a ValueError naming the run and client (such a run diverged: the library never
    stores one, see :mod:`playerfl_core.fl.divergence`). A table without clients' val/test rows,
    or holding one run's facts twice, raises too.
    """
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}.")
    keys = [*RUN_KEYS, "client"]
    scored = _scored_rows(table)
    if selection == "best_val":
        val_loss = selection_losses(scored[scored["split"] == "val"])
        if val_loss.empty:
            raise ValueError(
                "The table holds no validation losses ('val' split, 'loss' metric), so "
                "selection='best_val' cannot choose rounds; use selection='last'."
            )
        finite = np.isfinite(val_loss["value"].astype(float))
        none_finite = ~finite.groupby([val_loss[k] for k in keys]).any()
        if none_finite.any():
            r = dict(zip(keys, none_finite[none_finite].index[0], strict=True))
            raise ValueError(
                f"Client {r['client']} of the run ({_run_name(r)}) has no finite validation "
                "loss in any round, so no round can be selected: the run diverged or its rows "
                "are damaged. Drop its rows (or recompute it) before scoring."
            )
        # lowest loss first, then the earliest round; the first row of each client is its pick
        ordered = val_loss[finite].sort_values([*keys, "value", "round"], kind="stable")
        chosen = ordered.drop_duplicates(keys)[[*keys, "round"]]
    else:
        chosen = scored.groupby(keys, as_index=False)["round"].max()
    out = scored.merge(chosen, on=[*keys, "round"])
    return out.assign(selection=selection)


def selection_losses(val: pd.DataFrame) -> pd.DataFrame:
    """Each run's validation rows of the loss it is selected by: ``training_loss`` where the
    run logged it, ``loss`` (cross-entropy) otherwise."""
    trained = val["metric"] == TRAINING_LOSS
    runs_with = val.loc[trained, RUN_KEYS].drop_duplicates().assign(_trained=True)
    marked = val.merge(runs_with, on=RUN_KEYS, how="left")
    by_training = marked["_trained"].eq(True).to_numpy()
    wanted = np.where(by_training, TRAINING_LOSS, "loss")
    return val[(val["metric"] == wanted).to_numpy()]


def client_scores(
    table: pd.DataFrame, metric: str = "macro_f1", split: str = "test", selection: str = "best_val"
) -> pd.DataFrame:
    """Wide per-client scores: one row per run and client, the chosen metric as ``value``.

    ``split`` and ``metric`` must name rows the table holds: an unknown one raises a
    ValueError that lists the valid ones (never an empty frame).
    """
    sel = select_rounds(table, selection)
    splits = [s for s in SCORED_SPLITS if s in set(sel["split"])]
    if split not in splits:
        raise ValueError(f"Unknown split {split!r}; this table's scored splits are {splits}.")
    sel = sel[sel["split"] == split]
    metrics = sorted(set(sel["metric"]))
    if metric not in metrics:
        raise ValueError(f"Unknown metric {metric!r}; this table's {split} metrics are {metrics}.")
    sel = sel[sel["metric"] == metric]
    return sel[[*RUN_KEYS, "client", "round", "value", "n_samples"]].reset_index(drop=True)


TABLE_FORMATS = (".csv", ".parquet")
"""The file formats of a results or rules table; the extension of the path decides."""


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is when something other than a regular file stands there (a directory, a
    symbolic link, a device, a named pipe, a socket), or None (a regular file or nothing).
    Writers refuse such paths: renaming a new file over them would replace a device or a link
    with a plain file. A symbolic link is refused, never followed: give its target's path."""
    path = Path(path)
    if path.is_symlink():
        return f"a symbolic link (to {os.readlink(path)})"
    if not path.exists():
        return None
    mode = path.stat().st_mode
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    )
    for test, kind in kinds:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def write_fix(kind: str) -> str:
    """How to fix a write refused by :func:`not_a_file` because ``path`` is ``kind``."""
    if kind.startswith("a symbolic link"):
        return "give its target's path or another file (symbolic links are not followed)"
    return "give a file path"


def table_format(path: str | Path) -> str:
    """The format of a table file, from its extension (``.csv`` or ``.parquet``); any other
    extension is refused, so a table is never written as CSV under another format's name."""
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise ValueError(
            f"{path}: a table file must end in {' or '.join(TABLE_FORMATS)} (the format follows "
            f"the extension), not {suffix or 'no extension'}; rename it, e.g. "
            f"{Path(path).with_suffix('.csv').name}."
        )
    return suffix


def atomic_write(path: str | Path, write) -> Path:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it over ``path``, so a
    crash or a kill never leaves half a file under the real name. Refuses a ``path`` that is
    not a regular file (:func:`not_a_file`): the rename would replace a device or a symbolic
    link itself with a plain file."""
    path = Path(path)
    kind = not_a_file(path)
    if kind:
        raise ValueError(f"cannot write {path}: it is {kind}; {write_fix(kind)}.")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _probe(folder: Path) -> None:
    """Create and remove a file in ``folder`` (OSError when that is not allowed)."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=".playerfl-probe-")
    os.close(fd)
    os.unlink(name)


def folder_problem(path: str | Path) -> str | None:
    """Why files could not be written into the folder ``path`` (made when missing), with how to
    fix it, or None: a file in its way, or no write permission (probed by creating and removing
    a file in the nearest folder that exists). Creates nothing, so it is free before compute."""
    path = Path(path).expanduser()
    for folder in [path, *path.parents]:
        if folder.exists():
            if not folder.is_dir():
                kind = not_a_file(folder) or "a file"
                fix = "move it or choose" if kind == "a file" else "choose"
                return f"{folder} is {kind}, not a folder; {fix} another folder"
            break
    try:
        _probe(folder)
    except OSError as err:
        return (
            f"{folder} is not writable ({err.strerror}); make it writable (chmod u+w {folder}) "
            "or choose another folder"
        )
    return None


def env_folder(variable: str) -> Path | None:
    """The folder the environment variable ``variable`` names (None when unset), refused with a
    ValueError naming the variable when something other than a folder stands there."""
    value = os.environ.get(variable)
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if path.exists() and not path.is_dir():
        kind = not_a_file(path) or "a file"
        raise ValueError(
            f"{variable}={value!r} is {kind}, not a folder; set {variable} to a folder, or unset "
            "it to use the repository's default."
        )
    return path


def save_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write the table atomically (temp file + rename), so a crash never leaves half a file, in
    the format its extension names (:data:`TABLE_FORMATS`)."""
    path = Path(path)
    fmt = table_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == ".parquet":
        return atomic_write(path, lambda p: table.to_parquet(p, index=False))
    return atomic_write(path, lambda p: table.to_csv(p, index=False))


def read_table_file(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet table file, by its extension; a file that cannot be read (cut off,
    damaged, not a table) raises ValueError naming it and the fix, never a parser's trace."""
    path = Path(path)
    fmt = table_format(path)
    kind = not_a_file(path.resolve())  # reading through a symbolic link is harmless
    if kind:
        raise ValueError(f"{path} is {kind}, not a table file; give the table's path.")
    try:
        if fmt == ".parquet":
            return pd.read_parquet(path)
        _check_csv_complete(path)
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError, ImportError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"{path} is cut off or damaged and cannot be read ({first}); write it again (re-run "
            "the command that made it) or restore it from git."
        ) from None


def _check_csv_complete(path: Path) -> None:
    """A CSV whose last line has no newline was cut mid-row: pandas would read it silently."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            raise ValueError("the file is empty")
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            raise ValueError("its last line is incomplete")


def load_table(path: str | Path) -> pd.DataFrame:
    """Read a results table written by :func:`save_table` (CSV or Parquet), checking its
    columns."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No results table at {path}; create it with `playerfl run`.")
    table = read_table_file(path)
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
