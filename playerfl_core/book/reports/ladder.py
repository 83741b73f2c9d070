"""Chapter 04's scale ladder (``study.rungs``): the paper's rule's split at the book's
sizes and at the paper's, what the ladder cost, and what a full sweep at the paper's sizes would
cost."""

from __future__ import annotations

import pandas as pd

from playerfl_core.book.reports import protocol_comparison as PC
from playerfl_core.book.reports.evaluation_noise import noise_table
from playerfl_core.book.reports.tables import interval_text, signed
from playerfl_core.book.style import dataset_label
from playerfl_core.fl.profiles import training_settings
from playerfl_core.stats.split_verdicts import TOLERANCE
from playerfl_core.study import rungs as R
from playerfl_core.study import split_oracle as O


def ladder(table: pd.DataFrame, het: pd.DataFrame) -> pd.DataFrame | None:
    """The scale ladder (``study.rungs``): per federation and rung, the paper's rule's
    splits on the ladder's seeds, the book's rung read from this chapter's sweeps; None when the
    paper-size first epochs are not committed."""

    committed = R.load("scale_ladder")
    if committed is None:
        return None
    paper, record = committed
    book = O.table_sensitivities(pd.concat([table, het], ignore_index=True))
    book = book[book["seed"].isin(record.get("seeds", R.SCALE_LADDER.seeds))]
    if not set(R.DATASETS) <= set(book["dataset"]):
        return None  # this chapter was run on other federations
    return R.ladder_summary(R.rule_at_rungs(book, paper))


def ladder_cost() -> str:
    """What the ladder's first epochs cost per seed (the store's record), and what a full sweep
    at the paper's sizes would then cost at least: every split, every round of the paper
    profile, each round at least one such epoch (evaluation not counted)."""

    committed = R.load("scale_ladder")
    if committed is None:
        return "not measured (the paper-size first epochs are not committed)"
    table, record = committed
    per_task = record["cpu_seconds"] / (len(record["datasets"]) * len(record["seeds"]))
    rounds = training_settings(record["datasets"][0], R.PAPER)["rounds"]
    n_splits = int(table["depth"].max()) + 1
    hours = per_task * rounds * n_splits / 3600
    return (
        f"{per_task:.0f} CPU-seconds per seed here (one epoch of every client and its "
        f"sensitivities), so a full sweep at this size, {n_splits} splits × {rounds} rounds, "
        f"takes at least {hours:.0f} CPU-hours per seed and federation"
    )


def ladder_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The ladder as shown: federation and rung as rows, every split with its seeds."""

    return pd.DataFrame(
        {
            "federation": summary["dataset"].map(dataset_label),
            "sizes": summary["rung"].map(R.FIRST_EPOCH_SIZES),
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


# -- the middle rung (study.rungs): every split trained, so the oracle and the regret -----
def middle(table: pd.DataFrame, het: pd.DataFrame) -> pd.DataFrame | None:
    """The middle rung beside the book's sweeps on the rung's seeds
    (``rungs.rung_summary``); None when the rung is not committed or this chapter was run
    on other federations."""

    committed = R.load("middle_rung")
    if committed is None:
        return None
    rung, record = committed
    book = pd.concat([table, het], ignore_index=True)
    book = book[book["dataset"].isin(record["datasets"]) & book["seed"].isin(record["seeds"])]
    if set(book["dataset"]) != set(record["datasets"]):
        return None
    return R.rung_summary(R.regrets(book), R.regrets(rung))


def middle_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Both rungs as shown: federation and sizes as rows; the rule's and the oracle's splits
    (p×seeds) and the mean regret with its interval."""

    sizes = R.rung_sizes()
    return pd.DataFrame(
        {
            "federation": summary["dataset"].map(dataset_label),
            "sizes": summary["rung"].map(sizes),
            "seeds": summary["n_seeds"],
            "rule's p (p×seeds)": summary["rule_splits"],
            "oracle's p (p×seeds)": summary["oracle_splits"],
            "mean regret (95 % interval)": [
                interval_text(r.mean, r.lo, r.hi) for r in summary.itertuples()
            ],
        }
    ).set_index(["federation", "sizes"])


def middle_lines(summary: pd.DataFrame | None) -> str:
    """Markdown, per federation: what moves at the middle rung (``rungs.what_moves``)."""
    if summary is None:
        return (
            "- Not computed for these federations: the middle rung covers Fashion-MNIST and "
            "rotated Fashion-MNIST (`playerfl study run middle_rung`)."
        )
    return rung_lines(summary, "at the book's sizes", "at the middle rung")


def rung_lines(summary: pd.DataFrame, book_words: str, rung_words: str) -> str:
    """Markdown, per federation of :func:`~playerfl_core.study.rungs.rung_summary`: whether the
    rule's most frequent split, the oracle's and the mean regret move from the book
    (``book_words``: "at the book's sizes") to the other rung (``rung_words``)."""

    def ps(modal) -> str:
        return " and ".join(f"p = {p}" for p in modal)

    lines = []
    for m in R.what_moves(summary).itertuples():
        g = summary[summary["dataset"] == m.dataset].set_index("rung")
        book, other = g.loc["book"], g[g.index != "book"].iloc[0]
        moved = {True: "moves", False: "stays"}
        lines.append(
            f"- {dataset_label(m.dataset)}: the rule's most frequent split {moved[m.rule_moves]} "
            f"({ps(book.rule_modal)} {book_words}, {ps(other.rule_modal)} {rung_words}); the "
            f"oracle's {moved[m.oracle_moves]} ({ps(book.oracle_modal)}, "
            f"{ps(other.oracle_modal)}); the mean regret {moved[m.regret_moves]} "
            f"({signed(book['mean'])} {book_words}, "
            f"{interval_text(other['mean'], other.lo, other.hi)} {rung_words}, "
            f"{'above' if m.above_delta else 'not above'} δ = {TOLERANCE:g})."
        )
    return "\n".join(lines)


def middle_cost() -> str:
    """What the middle rung cost (its record) and what one of its runs costs."""

    committed = R.load("middle_rung")
    if committed is None:
        return "not computed (`playerfl study run middle_rung`)"
    return PC.Cost.of(committed[1]).per_run()


def middle_summary(summary: pd.DataFrame | None) -> str:
    """One sentence for the chapter's Result box: whether the rule's split, the oracle's and the
    regret move at the middle rung, with the rung's mean regrets and which of
    them lie above δ."""

    if summary is None:
        return ""
    moves = R.what_moves(summary)
    middle = summary[summary["rung"] == "middle"].set_index("dataset")
    book = summary[summary["rung"] == "book"].set_index("dataset")

    def which(column: str) -> str:
        moved = [dataset_label(d) for d in moves.loc[moves[column], "dataset"]]
        return f"moves on {' and '.join(moved)}" if moved else "moves on neither"

    regrets = "; ".join(  # both rungs' means, on the same seeds: not the sweep's 10 or 30
        f"{dataset_label(d)}: {signed(book.loc[d, 'mean'])} at the book's sizes, "
        f"{signed(middle.loc[d, 'mean'])} at the larger{', above δ' if above else ''}"
        for d, above in zip(moves["dataset"], moves["above_delta"], strict=True)
    )
    seeds = int(middle["n_seeds"].min())
    return (
        f"With every split trained at a larger size ({R.MIDDLE_SAMPLES_PER_CLIENT:,} images per "
        f"client, the CNN at width {R.MIDDLE_WIDTH:g}, {R.MIDDLE_ROUNDS} rounds, {seeds} seeds, no "
        "test), the rule's most frequent split "
        f"{which('rule_moves')}, the oracle's {which('oracle_moves')}, and the mean regret "
        f"{which('regret_moves')} (mean regret on those seeds: {regrets})."
    )


def middle_noise(table: pd.DataFrame, het: pd.DataFrame) -> str:
    """How noisy one score is at the middle rung against the book's sweeps of the same
    federations (``evaluation_noise.noise_table``: the accuracy's binomial standard error)."""

    committed = R.load("middle_rung")
    book = pd.concat([table, het], ignore_index=True)
    if committed is None or not set(R.DATASETS) <= set(book["dataset"]):
        return "not measured (the middle rung is not committed or this chapter ran on others)"
    at_rung = noise_table(committed[0]).set_index("dataset")
    at_book = noise_table(book[book["dataset"].isin(R.DATASETS)]).set_index("dataset")
    return "; ".join(
        f"{dataset_label(d)}: a client scores on {r.test_images:.0f} test images on average "
        f"({at_book.loc[d, 'test_images']:.0f} at the book's sizes), a run's standard error is "
        f"{r.run_se:.3f}, {r.run_se_over_delta:.2f} times δ = {TOLERANCE:g} (at the book's "
        f"sizes {at_book.loc[d, 'run_se']:.3f})"
        for d, r in at_rung.iterrows()
    )
