"""Chapter 04's scale ladder (``study.scale_ladder``): the paper's rule's split at the book's
sizes and at the paper's, what the ladder cost, and what a full sweep at the paper's sizes would
cost."""

from __future__ import annotations

import pandas as pd

from playerfl_core.book.style import dataset_label
from playerfl_core.study import split_oracle as O


def ladder(table: pd.DataFrame, het: pd.DataFrame) -> pd.DataFrame | None:
    """The scale ladder (``study.scale_ladder``): per federation and rung, the paper's rule's
    splits on the ladder's seeds, the book's rung read from this chapter's sweeps; None when the
    paper-size first epochs are not committed."""
    from playerfl_core.study import scale_ladder as L

    committed = L.load()
    if committed is None:
        return None
    paper, record = committed
    book = O.table_sensitivities(pd.concat([table, het], ignore_index=True))
    book = book[book["seed"].isin(record.get("seeds", L.SEEDS))]
    if not set(L.DATASETS) <= set(book["dataset"]):
        return None  # this chapter was run on other federations
    return L.ladder_summary(L.rule_at_rungs(book, paper))


def ladder_cost() -> str:
    """What the ladder's first epochs cost per seed (the store's record), and what a full sweep
    at the paper's sizes would then cost at least: every split, every round of the paper
    profile, each round at least one such epoch (evaluation not counted)."""
    from playerfl_core.fl.profiles import training_settings
    from playerfl_core.study import scale_ladder as L

    committed = L.load()
    if committed is None:
        return "not measured (the paper-size first epochs are not committed)"
    table, record = committed
    per_task = record["cpu_seconds"] / (len(record["datasets"]) * len(record["seeds"]))
    rounds = training_settings(record["datasets"][0], L.PAPER)["rounds"]
    n_splits = int(table["depth"].max()) + 1
    hours = per_task * rounds * n_splits / 3600
    return (
        f"{per_task:.0f} CPU-seconds per seed here (one epoch of every client and its "
        f"sensitivities), so a full sweep at this size, {n_splits} splits × {rounds} rounds, "
        f"takes at least {hours:.0f} CPU-hours per seed and federation"
    )


def ladder_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The ladder as shown: federation and rung as rows, every split with its seeds."""
    from playerfl_core.study.scale_ladder import RUNGS

    return pd.DataFrame(
        {
            "federation": summary["dataset"].map(dataset_label),
            "sizes": summary["rung"].map(RUNGS),
            "rule's p (p×seeds)": summary["splits"],
            "most frequent p": [_modal(splits, share) for splits, share in
                                zip(summary["splits"], summary["modal_share"], strict=True)],
        }
    ).set_index(["federation", "sizes"])  # fmt: skip


def _modal(splits: str, share: float) -> str:
    """ "3 (90%)", or every tied split: "3, 4 (50% each)"."""
    counts = {p: int(n) for p, n in (part.split("×") for part in splits.split(", "))}
    top = [p for p, n in counts.items() if n == max(counts.values())]
    return f"{', '.join(top)} ({share:.0%}{' each' if len(top) > 1 else ''})"


def ladder_lines(summary: pd.DataFrame) -> str:
    """Markdown, per federation: the rule's splits at the book's sizes and at the paper's, and on
    how many of the paper-size seeds it picks another split than its most frequent one at the
    book's sizes."""
    lines = []
    for ds, g in summary.groupby("dataset", sort=False):
        book, paper = (g[g["rung"] == r].iloc[0] for r in ("book", "paper"))
        counts = dict(part.split("×") for part in paper.splits.split(", "))
        other = paper.n_seeds - int(counts.get(str(book.modal_p), 0))
        lines.append(
            f"- {dataset_label(ds)}: at the book's sizes {book.splits}, at the paper's "
            f"{paper.splits} ({book.n_seeds} and {paper.n_seeds} seeds): at the paper's sizes the "
            f"rule picks another split than p = {book.modal_p} on {other} of {paper.n_seeds} seeds."
        )
    return "\n".join(lines)
