"""Tables as the reader sees them: one rename map for column names, intervals as one cell, the
best value in bold."""

import pandas as pd
import pytest

from playerfl_core.book.reports.tables import (
    COLUMN_NAMES,
    best_cells,
    captioned,
    interval_text,
    named,
    show,
    with_intervals,
)


def test_code_names_become_reader_names_in_columns_and_index_levels():
    frame = pd.DataFrame(
        {"dataset": ["heart"], "p_holm": [0.01], "n_seeds": [10], "rho_per_seed": ["1, 1"]}
    ).set_index("dataset")
    frame.index.name = "client_name"
    shown = named(frame)
    assert list(shown.columns) == ["Holm-adjusted p", "seeds", "ρ per seed"]
    assert shown.index.name == "client"
    wide = pd.DataFrame(
        [[0.5, 0.6]],
        columns=pd.MultiIndex.from_tuples(
            [("macro_f1", "heart"), ("P(rope)", "heart")], names=["metric", "dataset"]
        ),
    )
    shown = named(wide)
    assert list(shown.columns.get_level_values(0)) == ["macro-F1", "P(practically equal)"]
    assert list(shown.columns.get_level_values(1)) == ["Heart", "Heart"]
    text = show(frame)._repr_html_()
    assert "Holm-adjusted p" in text and "p_holm" not in text and "n_seeds" not in text


def test_the_map_names_every_code_name_the_readers_complained_about():
    for code in [
        "p_rule",
        "p_oracle",
        "n_seeds",
        "modal_share",
        "within_one",
        "rho_per_seed",
        "rho_mean",
        "p_holm",
        "min_p",
        "mean_rank",
        "P(rope)",
        "P(claim)",
        "near",
        "median_diff",
        "batch_size",
        "sensitivity_s",
        "hessian_trace_s",
        "ratio_q1",
        "client_name",
        "macro_f1",
        "chi2",
        "diff",
        "lo",
        "hi",
    ]:
        assert COLUMN_NAMES[code] != code or code in {"P(opposite)"}, code
        assert "_" not in COLUMN_NAMES[code], code


def test_an_interval_is_one_cell_in_place_of_the_value():
    frame = pd.DataFrame(
        {
            "dataset": ["a", "b"],
            "mean": [0.9251, -0.02],
            "lo": [0.9063, -0.036],
            "hi": [0.9489, -0.006],
            "n_seeds": [10, 20],
        }
    )
    out = with_intervals(frame, decimals=3)
    assert list(out.columns) == ["dataset", "mean (95 % CI)", "n_seeds"]
    assert out["mean (95 % CI)"].iloc[0] == "0.925 (0.906–0.949)"
    assert out["mean (95 % CI)"].iloc[1] == "−0.020 (−0.036 to −0.006)"
    assert interval_text(float("nan"), 0, 1) == "–"
    renamed = with_intervals(frame, value="mean", name="mean regret (95 % CI)", decimals=2)
    assert renamed["mean regret (95 % CI)"].iloc[0] == "0.93 (0.91–0.95)"


def test_the_best_value_of_a_column_is_bold_and_only_it():
    frame = pd.DataFrame(
        {
            "algorithm": ["local", "fedavg", "playerfl"],
            "macro_f1": [0.8, 0.9, 0.85],
            "mean_rank": [3.0, 1.5, 1.5],
            "interval": ["0.8 (0.7–0.9)", "0.95 (0.9–1.0)", "0.7 (0.6–0.8)"],
        }
    )
    marks = best_cells(named(frame), {"macro_f1": "max", "mean_rank": "min", "interval": "max"})
    assert marks["macro-F1"].tolist() == [False, True, False]
    assert marks["mean rank"].tolist() == [False, True, True]  # a tie: both best
    assert marks["interval"].tolist() == [False, True, False]
    assert not marks["algorithm"].any()
    html = show(frame, best={"macro_f1": "max"})._repr_html_()
    assert html.count("font-weight: bold") == 1
    bold_id = html.split("font-weight: bold")[0].rsplit("#T_", 1)[1].split(" ")[0].split("_", 1)[1]
    assert bold_id == "row1_col1"  # FedAvg's macro-F1
    assert "font-weight" not in show(frame)._repr_html_()
    lowest = captioned(frame.set_index("algorithm"), "c", best="min").marks
    assert lowest["macro-F1"].tolist() == [True, False, False]
    with pytest.raises(KeyError):
        show(frame, best={"nonexistent": "max"})
