"""Tables as the reader sees them: display names, reader-facing column names (one map for the
whole book), intervals as one cell, the best value in bold, numbers rounded to what the data
support, and a caption. How one number is written is in :mod:`.table_text` (re-exported here)."""

from __future__ import annotations

import hashlib
import re
from html import escape

import pandas as pd
from IPython.display import HTML

from playerfl_core.book.analysis_plots import metric_label
from playerfl_core.book.reports.table_text import (  # noqa: F401 (imported from here by the book)
    MISSING,
    interval_text,
    label_text,
    leading_number,
    number_text,
    p_text,
    signed,
    signed_change,
)
from playerfl_core.book.style import (
    algorithm_label,
    client_label,
    dataset_label,
    rule_label,
    rule_variant_label,
)

_NAMERS = {
    "client": client_label,
    "client_name": client_label,
    "algorithm": algorithm_label,
    "dataset": dataset_label,
    "metric": metric_label,
    "rule": rule_label,
    "variant": rule_variant_label,
}

#: Code names of columns and index levels -> the names a reader sees. One place: :func:`named`
#: (and so :func:`show` and :func:`captioned`) applies it to every table in the book.
COLUMN_NAMES = {
    # tests and verdicts
    "p_holm": "Holm-adjusted p",
    "p (Holm)": "Holm-adjusted p",
    "Holm p": "Holm-adjusted p",
    "min_p": "smallest attainable p",
    "P(rope)": "P(practically equal)",
    "P(claim)": "P(as claimed)",
    "n": "sample size",
    "n_seeds": "seeds",
    "chi2": "χ²",
    "diff": "difference",
    "median_diff": "median difference",
    "rho_per_seed": "ρ per seed",
    "rho_mean": "mean ρ",
    "mean_rank": "mean rank",
    # splits
    "p_rule": "rule's p",
    "p_oracle": "oracle's p",
    "split_p": "p",
    "modal_p": "most frequent p",
    "modal_share": "share at most frequent p",
    "distinct": "distinct p",
    "same": "share equal to oracle",
    "within_one": "share within 1 of oracle",
    "near": "decision near the threshold",
    "other": "compared with",
    "variant": "rule",
    "agree": "share agreeing",
    "rises": "share of seeds rising",
    # costs and settings ("sensitivity (seconds)", not "(s)": s is the sensitivity on its page)
    "batch_size": "batch size",
    "lr": "learning rate",
    "sensitivity_s": "sensitivity (seconds)",
    "hessian_trace_s": "Hessian trace (seconds)",
    "ratio_q1": "ratio, 1st quartile",
    "ratio_q3": "ratio, 3rd quartile",
    # scores and clients
    "client_name": "client",
    "macro_f1": "macro-F1",
    "lo": "lower 95 % bound",
    "hi": "upper 95 % bound",
}


def in_order(frame: pd.DataFrame, datasets) -> pd.DataFrame:
    """``frame``'s rows of ``datasets``, in that order, rows within a dataset as they were."""
    datasets = list(datasets)
    kept = frame[frame["dataset"].isin(datasets)]
    rank = kept["dataset"].map({d: i for i, d in enumerate(datasets)})
    return kept.iloc[rank.argsort(kind="stable")].reset_index(drop=True)


def reader_name(name):
    """The reader-facing name of a column or index level (itself when it has none)."""
    return COLUMN_NAMES.get(name, name) if isinstance(name, str) else name


def _rename_axis_names(index: pd.Index) -> pd.Index:
    return index.set_names([reader_name(n) for n in index.names])


def named(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy with display names (:data:`_NAMERS`) and reader names (:data:`COLUMN_NAMES`)."""
    out = frame.copy()
    for column, namer in _NAMERS.items():
        if column in out.columns:
            out[column] = out[column].map(namer)
        if column in (out.index.names or []):
            out = out.rename(index=namer, level=column)
        if column in (out.columns.names or []):
            level = column if out.columns.nlevels > 1 else None
            out = out.rename(columns=namer, level=level)
    out = out.rename(columns=reader_name)
    out.index = _rename_axis_names(out.index)
    out.columns = _rename_axis_names(out.columns)
    return out


def with_intervals(
    frame: pd.DataFrame,
    value: str = "mean",
    lo: str = "lo",
    hi: str = "hi",
    decimals: int = 3,
    name: str | None = None,
) -> pd.DataFrame:
    """A copy in which ``value``, ``lo`` and ``hi`` are one text column, ``0.925 (0.906–0.949)``,
    named ``name`` (default "<value> (95 % CI)"); a value without interval reads ``0.052 (–)``."""
    out = frame.copy()
    label = name or f"{reader_name(value)} (95 % CI)"
    text = [
        interval_text(v, a, b, decimals)
        + (f" ({MISSING})" if pd.notna(v) and (pd.isna(a) or pd.isna(b)) else "")
        for v, a, b in zip(out[value], out[lo], out[hi], strict=True)
    ]
    position = list(out.columns).index(value)
    out = out.drop(columns=[value, lo, hi])
    out.insert(position, label, text)
    return out


def best_cells(frame: pd.DataFrame, best) -> pd.DataFrame:
    """True where a cell holds its column's best value (ties all best): ``best`` is "max"/"min"
    for every column, or a dict from column (code or reader name) to "max"/"min"."""
    marks = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    if best is None:
        return marks
    if isinstance(best, str):
        wanted = {c: best for c in frame.columns}
    else:
        wanted = {reader_name(c): how for c, how in best.items()}
        missing = [c for c in wanted if c not in frame.columns]
        if missing:
            raise KeyError(f"best: no column {missing} in {list(frame.columns)}")
    for column, how in wanted.items():
        if how not in ("max", "min"):
            raise ValueError(f"best: {how!r} is neither 'max' nor 'min'")
        numbers = frame[column].map(leading_number).astype(float)
        if numbers.notna().sum() < 2:
            continue
        target = numbers.max() if how == "max" else numbers.min()
        marks[column] = numbers == target
    return marks


_CORNER = re.compile(r'<th class="blank(?: level\d+)?" >&nbsp;</th>')


def _names_in_header_row(html: str, names: list[str]) -> str:
    """The blank corner cells of the last header row replaced by the index's names."""
    head, sep, rest = html.partition("</thead>")
    before, row, last = head.rpartition("<tr>")
    cells = iter(f'<th class="index_name level{k}" >{escape(n)}</th>' for k, n in enumerate(names))
    last = _CORNER.sub(lambda m: next(cells, m.group()), last, count=len(names))
    return before + row + last + sep + rest


class Shown:
    """A table for ``display``: a Styler's HTML with a stable id (nbval compares it), a caption."""

    def __init__(self, frame: pd.DataFrame, style, caption: str | None = None, marks=None):
        self.frame, self.style, self.caption = frame, style, caption
        self.marks = marks  # True where a cell is shown in bold as its column's best

    def set_caption(self, caption: str) -> Shown:
        self.caption = caption
        return self

    def _repr_html_(self) -> str:
        uid = hashlib.sha1(self.frame.to_csv().encode()).hexdigest()[:10]
        style = self.style.set_uuid(uid).set_table_attributes('class="dataframe"')  # theme
        html = (style.set_caption(caption_html(self.caption)) if self.caption else style).to_html()
        if self.style.hide_index_names and not all(self.style.hide_index_):
            html = _names_in_header_row(html, list(self.frame.index.names))
        return html

    def __repr__(self) -> str:
        text = self.frame.to_string()
        return f"{self.caption}\n{text}" if self.caption else text


_EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:[^*]*\S)?)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")


def caption_html(text: str) -> str:
    """A caption's ``*emphasis*`` and backticked names as HTML; a lone ``*`` stays, rest escaped."""
    text = _EMPHASIS.sub(r"<em>\1</em>", escape(text, quote=False))
    return _CODE.sub(r"<code>\1</code>", text)


def _column_spec(values: pd.Series, spec: str) -> str:
    """For a column shown at ``spec`` ".Ng", the fixed decimals (at most 6) that line its values
    up; ``spec`` itself where a value needs an exponent, values lie an order of magnitude apart,
    or lining up would add a digit beyond N significant ones."""
    if not spec.endswith("g"):
        return spec
    kept = values.dropna()
    texts = [format(v, spec) for v in kept]
    if not texts or any(c in t for t in texts for c in "ein"):  # 1e-05, inf, nan
        return spec
    sizes = kept.abs()
    if (sizes > 0).any() and sizes.max() >= 10 * sizes[sizes > 0].min():
        return spec  # orders of magnitude apart: lined up, 0.0186 would read 0.018600
    aligned = f".{min(max(len(t.partition('.')[2]) for t in texts), 6)}f"
    if any(
        format(v, aligned) != format(float(t), aligned) for v, t in zip(kept, texts, strict=True)
    ):
        return spec  # lined up, a value would gain a digit beyond N significant ones
    return aligned


def _is_p_column(column) -> bool:
    """A column of p-values by its name ("p", "Holm-adjusted p"); "rise at p" is not one."""
    name = column[-1] if isinstance(column, tuple) else column
    if not isinstance(name, str) or " at " in name:
        return False
    return name == "p" or name.endswith(" p") or name.startswith("p ")


def _column_specs(out: pd.DataFrame, spec: str) -> dict:
    """Each column's format: "yes/no", "p", "d", ".0f" for counts, else :func:`_column_spec`; a
    float column of only 0 and 1 takes the fewest decimals of the other float columns."""
    specs, binary = {}, []
    for k, column in enumerate(out.columns):
        values = out.iloc[:, k]
        if pd.api.types.is_bool_dtype(values):
            specs[column] = "yes/no"
        elif pd.api.types.is_float_dtype(values) and _is_p_column(column):
            specs[column] = "p"
        elif pd.api.types.is_integer_dtype(values):
            specs[column] = "d"
        elif pd.api.types.is_float_dtype(values):
            kept = values.dropna()
            # whole counts: all whole, one beyond ±1 (a share of 0 or 1 is not)
            counts = len(kept) and (kept % 1 == 0).all() and (kept.abs() > 1).any()
            specs[column] = ".0f" if counts else _column_spec(values, spec)
            if len(kept) and kept.isin([0, 1]).all():
                binary.append(column)
    decimals = {c: f for c, f in specs.items() if c not in binary and f[0] == "." and f[-1] == "f"}
    others = [int(f[1:-1]) for f in decimals.values() if f != ".0f"]
    for column in binary if others else []:
        specs[column] = f".{min(others)}f"
    return specs


def show(
    frame: pd.DataFrame,
    sig: int | None = 2,
    decimals: int | None = None,
    index: bool = False,
    caption: str | None = None,
    best=None,
) -> Shown:
    """A table for ``display``: :func:`named`, floats to ``sig`` significant digits (or
    ``decimals`` places; neither: six significant digits), columns formatted by
    :func:`_column_specs`, the index hidden unless ``index``, and each column's best value in
    bold where ``best`` says which is best (:func:`best_cells`)."""
    out = named(frame)
    if index and any(out.index.names) and any(out.columns.names):
        # a crosstab's column-axis name ("dataset" over the datasets) would push the index's
        # name into a header row of its own; the caption says what the columns are
        out = out.rename_axis(columns=[None] * out.columns.nlevels)
    spec = f".{decimals}f" if decimals is not None else f".{sig}g" if sig is not None else ".6g"
    style = out.style
    if not index:
        style = style.hide(axis="index")
    elif not out.columns.names[-1] and all(isinstance(n, str) and n for n in out.index.names):
        # every index level named, the columns' last unnamed: the index's names can head its
        # columns in the last header row rather than in a row of their own (Shown writes them)
        style = style.hide(axis="index", names=True)
    for column, own in _column_specs(out, spec).items():
        if own == "yes/no":  # not Python's True/False
            style = style.format(lambda v: "yes" if v else "no", subset=[column])
        elif own == "p":
            style = style.format(lambda v: p_text(v, "–"), subset=[column])
        else:
            style = style.format(lambda v, own=own: number_text(v, own), subset=[column])
    for axis, labels in ((0, out.index), (1, out.columns)):
        for level in range(labels.nlevels):
            kind = labels.get_level_values(level)
            if pd.api.types.is_numeric_dtype(kind) and not pd.api.types.is_bool_dtype(kind):
                style = style.format_index(label_text, axis=axis, level=level)
    marks = best_cells(out, best) if best is not None else None
    if marks is not None:
        bold = marks.replace({True: "font-weight: bold", False: ""})
        style = style.apply(lambda _: bold, axis=None)
    return Shown(out, style, caption, marks=marks)


def captioned(frame: pd.DataFrame, caption: str, best=None, **options) -> Shown:
    """:func:`show` with the index and six significant digits, and a caption above."""
    options = {"sig": 6, "index": True, **options}
    return show(frame, caption=caption, best=best, **options)


def run_notes(title: str, lines) -> object:
    """A collapsed "details" box (IPython HTML) for what a computation reports about itself."""
    lines = [str(line) for line in (lines if not isinstance(lines, str) else lines.splitlines())]
    body = "".join(f"<li>{escape(line)}</li>" for line in lines if line.strip())
    return HTML(
        f'<details class="run-notes"><summary>{escape(title)}</summary><ul>{body}</ul></details>'
    )


WIDENED = re.compile(r"WIDENED: (\S+)/(\S+): .* tried lr=(\S+?)\.?$")
"""A grid's note that tuning tried one more rate beyond an edge: dataset, algorithm, rate."""


def grid_notes(grid, label: str = "the grid") -> object:
    """:func:`run_notes` for a grid: its size and what was computed now, every note inside, each
    (dataset, rate)'s "WIDENED" lines folded into one."""
    grouped: dict[tuple[str, str], list[str]] = {}
    rest = []
    for line in grid.note().splitlines():
        found = WIDENED.match(line)
        if found:
            grouped.setdefault((found[1], found[3]), []).append(found[2])
        else:
            rest.append(line)
    folded = [f"WIDENED lr={lr} on {ds}: {', '.join(a)}" for (ds, lr), a in grouped.items()]
    if folded:
        why = "the chosen rate sat at an edge of the grid, so tuning also tried the next one"
        folded.insert(0, f"WIDENED: {why}")
    widened = sum(len(a) for a in grouped.values())
    fresh = f"{grid.computed} computed now" if grid.computed else "every one read from the store"
    title = (
        f"Notes on {label}: {len(grid.status)} runs ({fresh}); "
        f"{widened} widened learning-rate grids, {len(grid.failures)} excluded runs"
    )
    return run_notes(title, folded + rest)


def transposed(frame: pd.DataFrame) -> pd.DataFrame:
    """A wide table on its side to fit the page, every cell as text (a column mixes kinds)."""
    out = named(frame)

    def text(v):
        if isinstance(v, float):
            return "–" if v != v else f"{v:.4g}"
        return str(v)

    return out.T.map(text)
