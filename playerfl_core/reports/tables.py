"""Tables as the reader sees them: display names for algorithms, datasets and metrics, numbers
rounded to what the data support, no index column when it carries nothing."""

from __future__ import annotations

import pandas as pd

from playerfl_core.analysis_plots import metric_label
from playerfl_core.style import algorithm_label, dataset_label

_NAMERS = {"algorithm": algorithm_label, "dataset": dataset_label, "metric": metric_label}


def named(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy with the ``algorithm``, ``dataset`` and ``metric`` columns and index levels (where
    present) in display names; columns named after algorithms become display names too."""
    out = frame.copy()
    for column, namer in _NAMERS.items():
        if column in out.columns:
            out[column] = out[column].map(namer)
        if column in (out.index.names or []):
            out = out.rename(index=namer, level=column)
    if out.columns.name == "algorithm":
        out = out.rename(columns=algorithm_label)
    return out


def show(frame: pd.DataFrame, sig: int | None = 2, decimals: int | None = None, index=False):
    """A Styler for ``display``: display names, floats to ``sig`` significant digits (or
    ``decimals`` places), the default integer index hidden unless ``index``."""
    out = named(frame)
    floats = [c for c in out.columns if pd.api.types.is_float_dtype(out[c])]
    style = out.style
    if not index:
        style = style.hide(axis="index")
    if decimals is not None:
        return style.format(f"{{:.{decimals}f}}", subset=floats, na_rep="–")
    if sig is not None:
        return style.format(f"{{:.{sig}g}}", subset=floats, na_rep="–")
    return style
