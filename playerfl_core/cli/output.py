"""What every long command does with its rows: save them (elsewhere when the disk is full),
keep what finished when it stops, and the exit code of a failure."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

from playerfl_core.stats.results import save_table
from playerfl_core.study.workers import WorkerDied


def _failure_code(err: Exception) -> int:
    """Exit code of a run that raised ``err``: 2 bad settings or data (as when refused before
    any run), 1 the machine (a dead worker, a full disk), 3 the run itself failed."""
    if isinstance(err, ValueError):
        return 2
    return 1 if isinstance(err, (WorkerDied, OSError)) else 3


class RowsNotWritten(OSError):
    """The results could not be written where asked (a full disk): where they went instead, or
    that they are lost."""


def _keep_finished(tables, out, n_jobs: int, why: str, code: int, diverged=()) -> int:
    """``run`` or ``sweep`` stopped early (a signal, a failing dataset, a failed run): write the
    runs that finished, and say in one line why it stopped, how many of how many finished and
    where they are. Returns ``code``, the exit code of what stopped it."""
    why = why.rstrip(". ")  # the reason is followed by what was kept
    for line in diverged:
        print(f"playerfl: diverged (no rows written): {line}", file=sys.stderr)
    if not tables:
        print(f"playerfl: {why}; no run had finished, nothing written.", file=sys.stderr)
        return code
    runs = f"{len(tables)} finished run{'s' if len(tables) != 1 else ''} of {n_jobs}"
    try:
        path = _save_rows(pd.concat(tables, ignore_index=True), out)
    except RowsNotWritten as err:
        print(f"playerfl: {why}; {runs}, but {err.strerror}", file=sys.stderr)
        return 1
    again = "run again" if code in (129, 130) else "fix that and run again"
    print(
        f"playerfl: {why}; wrote the {runs} ({sum(len(t) for t in tables)} rows) to {path} "
        f"({again} to compute all of them).",
        file=sys.stderr,
    )
    return code


def _save_rows(table: pd.DataFrame, out) -> str:
    """:func:`save_table` to ``out``; when that fails (a full disk, a quota), once to a file in
    the temporary folder, if it is on another file system or the failure was not lack of space,
    and :class:`RowsNotWritten` says where the rows are, or that they could not be kept."""
    try:
        return str(save_table(table, out))
    except OSError as err:
        problem = (
            f"could not write {out} ({err.strerror or err}): free space there or give "
            f"another --out; the {len(table)} finished rows"
        )
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        folder = Path(tempfile.gettempdir())
        if not full or _device(folder) != _device(Path(out).resolve().parent):
            rescue = folder / f"playerfl-{os.getpid()}-{Path(out).name}"
            try:
                saved = save_table(table, rescue)
            except OSError:
                pass
            else:
                raise RowsNotWritten(
                    err.errno, f"{problem} were written to {saved} instead."
                ) from None
        raise RowsNotWritten(err.errno, f"{problem} could not be kept.") from None


def _device(path) -> int | None:
    """The file system of ``path`` or of its nearest existing folder."""

    for folder in (path, *path.parents):
        try:
            return os.stat(folder).st_dev
        except OSError:
            continue
    return None
