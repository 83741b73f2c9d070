"""Tables as the reader sees them: display names for algorithms, datasets and metrics, numbers
rounded to what the data support, no index column when it carries nothing."""

from __future__ import annotations

import hashlib

import pandas as pd

from playerfl_core.book.analysis_plots import metric_label
from playerfl_core.book.style import algorithm_label, dataset_label

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


class Shown:
    """A table for ``display``: HTML from a pandas Styler with a stable element id (the
    Styler's own is random, which nbval would see as a changed output), plain text without a
    memory address, and an optional caption."""

    def __init__(self, frame: pd.DataFrame, style, caption: str | None = None):
        self.frame, self.style, self.caption = frame, style, caption

    def set_caption(self, caption: str) -> Shown:
        self.caption = caption
        return self

    def _repr_html_(self) -> str:
        uid = hashlib.sha1(self.frame.to_csv().encode()).hexdigest()[:10]
        style = self.style.set_uuid(uid).set_table_attributes('class="dataframe"')  # theme
        return (style.set_caption(self.caption) if self.caption else style).to_html()

    def __repr__(self) -> str:
        text = self.frame.to_string()
        return f"{self.caption}\n{text}" if self.caption else text


def show(
    frame: pd.DataFrame,
    sig: int | None = 2,
    decimals: int | None = None,
    index: bool = False,
    caption: str | None = None,
) -> Shown:
    """A table for ``display``: display names, floats to ``sig`` significant digits (or
    ``decimals`` places; neither: as they are), the index hidden unless ``index``."""
    out = named(frame)
    floats = [c for c in out.columns if pd.api.types.is_float_dtype(out[c])]
    style = out.style
    if not index:
        style = style.hide(axis="index")
    if decimals is not None:
        style = style.format(f"{{:.{decimals}f}}", subset=floats, na_rep="–")
    elif sig is not None:
        style = style.format(f"{{:.{sig}g}}", subset=floats, na_rep="–")
    return Shown(out, style, caption)


def captioned(frame: pd.DataFrame, caption: str) -> Shown:
    """A table shown as it is (index included, numbers without trailing zeros), with a caption
    above it."""
    return show(frame, sig=6, index=True, caption=caption)


def run_notes(title: str, lines) -> object:
    """A collapsed "details" box for what a computation reports about itself (runs computed now,
    widened tuning grids, excluded runs, machines): on the page for whoever wants it, not as a
    log above the results. Returns an IPython HTML object to ``display``."""
    import html

    from IPython.display import HTML

    lines = [str(line) for line in (lines if not isinstance(lines, str) else lines.splitlines())]
    body = "".join(f"<li>{html.escape(line)}</li>" for line in lines if line.strip())
    return HTML(
        f'<details class="run-notes"><summary>{html.escape(title)}</summary><ul>{body}</ul>'
        "</details>"
    )


def grid_notes(grid, label: str = "the grid") -> object:
    """:func:`run_notes` for a grid: its size and what was computed now in the summary line,
    every note (widened rates, exclusions, machines, code versions) inside."""
    widened = sum(line.startswith("WIDENED") for line in grid.note().splitlines())
    excluded = len(grid.failures)
    title = (
        f"Notes on {label}: {len(grid.status)} runs ({grid.computed} computed now); "
        f"{widened} widened learning-rate grids, {excluded} excluded runs"
    )
    return run_notes(title, grid.note())
