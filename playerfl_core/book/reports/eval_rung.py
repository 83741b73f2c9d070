"""Chapter 04's evaluation rung: the book's sweep of Fashion-MNIST, base and rotated, scored on
2,000 validation and 2,000 test images per client (B) beside the book's own scores (A, 64 and 80
images), R1's verdict under each (``protocol_comparison``), and what is particular to this study:
the measured standard error of one score and of one regret at both sizes."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import counted
from playerfl_core.book.reports import protocol_comparison as PC
from playerfl_core.book.reports.ladder import rung_lines
from playerfl_core.book.reports.tables import p_text
from playerfl_core.book.style import dataset_label
from playerfl_core.measure.score_noise import run_se
from playerfl_core.stats.split_verdicts import TOLERANCE
from playerfl_core.study import rungs

BOOK_WORDS = "with the book's evaluation sets"


@dataclass
class EvalRung:
    summary: pd.DataFrame
    """Both evaluation sizes on the rung's seeds (``rungs.rung_summary``, rung ``eval``)."""
    comparison: pd.DataFrame
    """Per federation: R1's verdict at the book's sizes (``a``: its family of every swept
    federation) and at 2,000 images (``b``: Holm over the rung's federations),
    :func:`protocol_comparison.r1_side_by_side`."""
    record: dict
    noise: pd.DataFrame | None
    """``rungs.measure_noise``'s table (None when not committed)."""
    regret_noise: pd.DataFrame | None = None
    """``rungs.measure_regret_noise``'s table (None when not committed)."""

    @property
    def words(self) -> str:
        return f"with {self.record['eval_per_client']:,} images per client"


def analyse(every: pd.DataFrame) -> EvalRung | None:
    """The committed rung against ``every`` (the paper's rule's regrets at the book's
    evaluation sizes on every swept federation: R1's family); None when the rung is not
    committed or ``every`` lacks its federations (a chapter run on other data)."""
    committed = rungs.load("eval_rung")
    if committed is None:
        return None
    table, record = committed
    book = every[every["dataset"].isin(record["datasets"]) & every["seed"].isin(record["seeds"])]
    if set(book["dataset"]) != set(record["datasets"]):
        return None
    rung = rungs.regrets(table)
    noise, regret_noise = rungs.load_noise(), rungs.load_regret_noise()
    return EvalRung(
        rungs.rung_summary(book, rung, "eval"),
        PC.r1_side_by_side(every, rung),
        record,
        noise[0] if noise is not None else None,
        regret_noise[0] if regret_noise is not None else None,
    )


def eval_table(ev: EvalRung) -> pd.DataFrame:
    """One row per federation: the rule's and the oracle's splits, the mean regret (the rung
    summary's, on the rung's seeds) and R1's verdict with the book's evaluation sets and with
    the rung's."""
    c = ev.comparison
    s = ev.summary.set_index(["dataset", "rung"])
    book, rung = (s.xs(r, level="rung").loc[c["dataset"]].reset_index() for r in ("book", "eval"))
    regrets = {f"{side}{part}": frame[col] for side, frame in (("a", book), ("b", rung))
               for part, col in (("", "mean"), ("_lo", "lo"), ("_hi", "hi"))}  # fmt: skip

    def moves(column: str) -> list[str]:
        return [f"{x} → {y}" for x, y in zip(book[column], rung[column], strict=True)]

    first = {"seeds": rung["n_seeds"], "rule's p, book → 2,000": moves("rule_splits"),
             "oracle's p, book → 2,000": moves("oracle_splits")}  # fmt: skip
    return PC.table(c.assign(**regrets), ("regret, book's sets", "R1, book's sets"),
                    ("regret, 2,000 images", "verdict, 2,000 images"), first)  # fmt: skip


def eval_lines(ev: EvalRung | None) -> str:
    """Markdown: what moves per federation, then each verdict."""
    if ev is None:
        return (
            "- Not computed for these federations: the evaluation rung covers Fashion-MNIST and "
            "rotated Fashion-MNIST (`playerfl study run eval_rung`)."
        )
    lines = [rung_lines(ev.summary, BOOK_WORDS, ev.words)]
    for r in ev.comparison.itertuples():
        same = "the same" if not r.changed else "a different"
        lines.append(
            f"- {dataset_label(r.dataset)}, R1: **{r.a_verdict}** in R1's family with the "
            f"book's evaluation sets, **{r.b_verdict}** {ev.words} (Holm over the rung's "
            f"{len(ev.comparison)} federations, adjusted p {p_text(r.b_p_holm)}): {same} "
            "verdict."
        )
    return "\n".join(lines)


def eval_summary(ev: EvalRung | None, book: tuple[int, int] | None = None) -> str:
    """One sentence for the Result box: how many of R1's verdicts change when the evaluation
    noise falls, with the rung's mean regrets. ``book``: the book's validation and test images
    per client on average (``evaluation_noise.mean_sizes``), read from the runs, not restated."""
    if ev is None:
        return ""
    c = ev.comparison
    moved = PC.moves(c, "{name} from {a} to {b}")
    regrets = " and ".join(
        f"{cell} on {dataset_label(d)}"
        for cell, d in zip(PC.regret_cells(c, "b"), c["dataset"], strict=True)
    )
    if moved:
        verdicts = f"{len(moved)} of R1's {len(c)} verdicts there change ({'; '.join(moved)})"
    else:  # in words, not "0 of R1's 2 verdicts there change (none)"
        none = "neither" if len(c) == 2 else "none"
        verdicts = f"{none} of R1's {counted(len(c), 'verdict')} there changes"
        if len(c) == 1:
            verdicts = "R1's verdict there does not change"
    instead = f"the book's {book[0]} and {book[1]} on average" if book else "the book's sets"
    return (
        f"Scored on {ev.record['eval_per_client']:,} validation and test images per client "
        f"instead of {instead}, the mean regret is {regrets}, and {verdicts}."
    )


def eval_cost(ev: EvalRung | None) -> str:
    """What the rung cost (its record)."""
    if ev is None:
        return "nothing here (not computed)"
    note = "; scoring 4,000 images per client every round costs more than the training"
    return PC.Cost.of(ev.record).per_run(note)


NOISE_COLUMNS = {
    "client_f1": "client's macro-F1 SE",
    "client_acc": "client's accuracy SE",
    "binomial": "binomial SE",
    "run_f1": "run's macro-F1 SE",
    "run_over_delta": "run's SE / δ",
}


def noise_frame(ev: EvalRung) -> pd.DataFrame:
    """Per federation and number of test images ``n``: a client's standard error of macro-F1
    and of accuracy (medians over clients), the binomial formula's, and a run's macro-F1 error,
    also as a multiple of δ. Columns: dataset, n and :data:`NOISE_COLUMNS`' keys."""
    rows = []
    for ds, g in ev.noise.groupby("dataset", sort=False):
        runs = run_se(g)
        for n, at in g.groupby("n"):
            rows.append(
                (ds, int(n), at["macro_f1_se"].median(), at["accuracy_se"].median(),
                 at["binomial_se"].median(), runs[n], runs[n] / TOLERANCE)
            )  # fmt: skip
    return pd.DataFrame(rows, columns=["dataset", "n", *NOISE_COLUMNS])


def noise_table(ev: EvalRung) -> pd.DataFrame:
    """:func:`noise_frame` as shown."""
    f = noise_frame(ev)
    f["dataset"] = f["dataset"].map(dataset_label)
    f = f.rename(columns={"dataset": "federation", "n": "test images per client", **NOISE_COLUMNS})
    return f.set_index(["federation", "test images per client"])


def noise_sentence(ev: EvalRung | None) -> str:
    """What the measurement says, per federation, in δ: a run's macro-F1 error at the book's
    size and at the rung's (:func:`noise_table` has the rest)."""
    if ev is None or ev.noise is None:
        return "not measured (`playerfl study run eval_rung`)"
    parts = []
    for ds, g in noise_frame(ev).groupby("dataset", sort=False):
        small, large = g.iloc[0], g.iloc[-1]
        sizes = "" if parts else f" at {small.n} test images per client and at {large.n:,}"
        parts.append(
            f"{small.run_over_delta:.2f} δ and {large.run_over_delta:.2f} δ{sizes} on "
            f"{dataset_label(ds)}"
        )
    return "a run's macro-F1 error is " + "; ".join(parts)


def regret_noise_frame(ev: EvalRung) -> pd.DataFrame:
    """Per federation and number of test images: one seed's regret error (both splits scored
    on the same images, and on different ones) and the error the test images alone leave in the
    mean over the rung's seeds (one seed's over √seeds: each seed draws its own images), also
    in δ. Columns: dataset, p_rule, p_oracle, n, seed_se, unpaired_se, mean_se,
    mean_over_delta."""
    n_seeds = len(ev.record["seeds"])
    f = ev.regret_noise.rename(columns={"regret_se": "seed_se"})
    f = f.assign(mean_se=f["seed_se"] / n_seeds**0.5)
    f["mean_over_delta"] = f["mean_se"] / TOLERANCE
    columns = ["dataset", "p_rule", "p_oracle", "n", "seed_se", "unpaired_se", "mean_se"]
    return f[[*columns, "mean_over_delta"]].reset_index(drop=True)


def regret_noise_table(ev: EvalRung) -> pd.DataFrame:
    """:func:`regret_noise_frame` as shown."""
    n_seeds = len(ev.record["seeds"])
    f = regret_noise_frame(ev)
    pairs = zip(f["dataset"], f["p_rule"], f["p_oracle"], strict=True)
    f["dataset"] = [f"{dataset_label(d)} (p = {r} vs {o})" for d, r, o in pairs]
    names = {
        "dataset": "federation (rule's p vs oracle's)",
        "n": "test images per client",
        "seed_se": "one seed's regret SE",
        "unpaired_se": "the same, splits on other images",
        "mean_se": f"SE of the mean over {n_seeds} seeds",
        "mean_over_delta": "that SE / δ",
    }
    f = f.drop(columns=["p_rule", "p_oracle"]).rename(columns=names)
    return f.set_index([names["dataset"], names["n"]])


def regret_noise_sentence(ev: EvalRung | None) -> str:
    """What the regret's noise measurement says, per federation: the error the test images
    alone leave in the mean regret over the rung's seeds, at the book's size and at the rung's,
    against δ/4 (:func:`regret_noise_table` has the rest)."""
    if ev is None or ev.regret_noise is None:
        return "not measured (`playerfl study run eval_rung`)"
    n_seeds, parts = len(ev.record["seeds"]), []
    for ds, g in regret_noise_frame(ev).groupby("dataset", sort=False):
        small, large = g.iloc[0], g.iloc[-1]
        below = "below" if large.mean_se < TOLERANCE / 4 else "not below"
        sizes = "" if parts else f" at {small.n} test images per client and at {large.n:,}"
        parts.append(
            f"{small.mean_over_delta:.2f} δ and {large.mean_over_delta:.2f} δ{sizes} on "
            f"{dataset_label(ds)} ({below} δ/4 at {large.n:,})"
        )
    return f"the error of the mean regret over {n_seeds} seeds is " + "; ".join(parts)
