"""The authors'-mode report, on a slice of the committed comparison (real runs, no fakes)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playerfl_core.book.reports import authors_mode as A
from playerfl_core.stats import published as P
from playerfl_core.study.authors_mode import TABLE_FILE, load_comparison

ALGORITHMS = ["fedavg", "fedbabu", "playerfl", "local"]


COMMITTED = Path(__file__).resolve().parents[1] / "stores" / "authors_mode" / TABLE_FILE
"""The committed comparison, read by path (the tests' PLAYERFL_STORES is an empty folder)."""


@pytest.fixture(scope="module")
def heart_slice():
    table = load_comparison(COMMITTED)
    keep = table["dataset"].eq("heart") & table["algorithm"].isin(ALGORITHMS)
    return table[keep & table["seed"].lt(10)].reset_index(drop=True)


def direct_accuracy(runs: pd.DataFrame) -> pd.Series:
    """Per seed: the clients' training-share-weighted test accuracy at each client's round of
    lowest validation selection loss (training_loss where logged, else loss), by hand."""
    out = {}
    for seed, run in runs.groupby("seed"):
        metric = "training_loss" if (run["metric"] == "training_loss").any() else "loss"
        val = run[(run["split"] == "val") & (run["metric"] == metric)].sort_values("round")
        rounds = val.loc[val.groupby("client")["value"].idxmin()].set_index("client")["round"]
        test = run[(run["split"] == "test") & (run["metric"] == "accuracy")]
        acc = {
            c: test[(test["client"] == c) & (test["round"] == r)]["value"].item()
            for c, r in rounds.items()
        }
        n = run[(run["split"] == "train") & (run["metric"] == "n_samples")]
        n = n.set_index("client")["value"]
        out[seed] = sum(acc[c] * n[c] for c in acc) / n[list(acc)].sum()
    return pd.Series(out)


def test_each_cell_is_the_median_of_the_runs_selected_their_own_way(heart_slice):
    frame = A.comparison(heart_slice, "heart", n_boot=200).set_index("algorithm")
    for alg in ALGORITHMS:
        for protocol, column in (("authors", "authors"), ("book", "book")):
            runs = heart_slice[
                (heart_slice["algorithm"] == alg) & (heart_slice["protocol"] == protocol)
            ]
            expected = 100 * np.median(direct_accuracy(runs))
            assert frame.loc[alg, column] == pytest.approx(expected, abs=1e-9)
            low, high = frame.loc[alg, f"{column}_low"], frame.loc[alg, f"{column}_high"]
            assert low <= frame.loc[alg, column] <= high


def test_a_remaining_difference_is_a_published_value_outside_the_interval(heart_slice):
    frame = A.comparison(heart_slice, "heart", n_boot=200)
    pub = P.published("accuracy").query("dataset == 'heart'").set_index("algorithm")
    for row in frame.itertuples():
        v, h = pub.loc[row.algorithm, "value"], pub.loc[row.algorithm, "ci_half"]
        apart = v + h < row.authors_low or v - h > row.authors_high
        assert row.remains == apart
        assert bool(row.explained_by) == apart
        if apart:
            assert row.explained_by == A.DOCUMENTED_CHOICES.get(
                row.algorithm, "no documented choice"
            )
    assert 0 < frame["remains"].sum() < len(frame)  # the slice holds both cases


def test_the_gap_sentence_says_the_computed_shares(heart_slice):
    frame = A.comparison(heart_slice, "heart", n_boot=200)
    shares = A.gap_shares(frame)
    assert shares["authors_vs_book"] == pytest.approx(
        (frame["authors"] - frame["book"]).abs().mean()
    )
    assert shares["published_vs_authors"] == pytest.approx(
        (frame["published"] - frame["authors"]).abs().mean()
    )
    sentence = A.gap_sentence(frame, "heart")
    for key in ("published_vs_book", "published_vs_authors", "authors_vs_book", "half_width"):
        assert f"{shares[key]:.1f}" in sentence
    table = A.comparison_table(frame)
    assert list(table.columns[:3]) == ["Published", "Authors' mode", "Book's protocol"]


def test_the_table_fits_a_phone_and_the_sentence_says_what_its_marks_mean(heart_slice):
    """Chapter 06's authors'-mode table cut its last column ("Remaining difference") at 420 px:
    three columns now, a † on each algorithm whose published value stays outside its
    authors'-mode interval, and the sentence under it names the documented choice for each."""
    frame = A.comparison(heart_slice, "heart", n_boot=200)
    table = A.comparison_table(frame)
    assert list(table.columns) == ["Published", "Authors' mode", "Book's protocol"]
    marked = [name.removesuffix(" †") for name in table.index if name.endswith(" †")]
    assert marked == [A.algorithm_label(a) for a in frame.loc[frame["remains"], "algorithm"]]
    sentence = A.gap_sentence(frame, "heart")
    for why in frame.loc[frame["remains"], "explained_by"]:
        assert why in sentence
    assert not any(n.endswith("†") for n in A.comparison_table(frame, paper_sizes=False).index)
