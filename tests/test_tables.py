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


def test_float_index_labels_without_trailing_zeros():
    """Chapter 00's Dirichlet α (0.050000 ... 100.000000) and chapter 03's thresholds (0.125000
    ... 16.000000): float labels as short as they are exact, whole numbers as integers."""
    skew = pd.DataFrame({"α": [0.05, 0.5, 5.0, 100.0], "label skew": [0.744, 0.41, 0.16, 0.039]})
    html = captioned(skew.set_index("α"), "c", decimals=3)._repr_html_()
    for label in ("0.05", "0.5", "5", "100"):
        assert f">{label}</th>" in html, label
    assert "0.050000" not in html and "100.000000" not in html and ">5.0<" not in html
    wide = pd.DataFrame(
        [[1.0, 0.0]], index=pd.Index([0.125], name="threshold"), columns=[0.25, 16.0]
    )
    html = captioned(wide, "c")._repr_html_()
    assert ">0.125</th>" in html and ">0.25</th>" in html and ">16</th>" in html
    assert "0.125000" not in html and "16.000000" not in html


def test_whole_number_counts_are_integers_and_shares_keep_their_places():
    """Chapter 03a's "measurements 80.000": a float column of whole counts is shown as integers;
    a share that happens to be 0 or 1 keeps the table's decimals."""
    quality = pd.DataFrame(
        {"measurements": [80.0, 100.0], "share": [0.9125, 1.0], "sign right": [1.0, 0.0]},
        index=pd.Index(["Heart", "Digits"], name="dataset"),
    )
    html = captioned(quality, "c", decimals=3)._repr_html_()
    assert ">80<" in html and ">100<" in html and "80.000" not in html
    assert ">0.912<" in html or ">0.913<" in html
    assert ">1.000<" in html and ">0.000<" in html
    html = show(quality, sig=2)._repr_html_()
    assert ">80<" in html and ">100<" in html and "1e+02" not in html


def test_negative_numbers_have_a_true_minus_sign():
    frame = pd.DataFrame(
        {"regret": [-0.012, 0.03], "rank": [-2.0, 3.0]}, index=pd.Index([-0.5, 1.0], name="t")
    )
    for table in (show(frame, decimals=3, index=True), captioned(frame, "c"), show(frame)):
        html = table._repr_html_()
        body = html.split("</style>")[-1]
        assert "\u22120.012" in body and ">\u22122<" in body, body
        assert "-0.012" not in body and ">-2<" not in body
    assert ">\u22120.5</th>" in captioned(frame, "c")._repr_html_()


def test_a_value_that_rounds_to_zero_has_no_minus_sign():
    from playerfl_core.book.reports.tables import interval_text, signed, signed_change

    assert signed(-0.0004) == "0.000" and signed(-0.0006) == "\u22120.001"
    assert signed_change(-0.0004) == "+0.000" and signed_change(-0.02) == "\u22120.020"
    assert interval_text(-0.0002, -0.006, -0.0004) == "0.000 (\u22120.006 to 0.000)"
    # the separator follows the printed bounds: 04b's "0.008 (0.000 to 0.020)" beside
    # "0.013 (0.007–0.022)" had a lower bound of −0.0002
    assert interval_text(0.0076, -0.0002, 0.0199) == "0.008 (0.000–0.020)"
    from playerfl_core.stats.split_verdicts import _interval  # the stats layer's copy

    for args in [(0.0076, -0.0002, 0.0199), (-0.0002, -0.006, -0.0004), (-0.02, -0.036, 0.01)]:
        assert _interval(*args) == interval_text(*args), args


def test_p_values_read_as_prose_writes_them():
    from playerfl_core.book.reports.tables import p_text
    from playerfl_core.stats.p_values import p_value_text

    assert p_text(8.1e-05) == "8.1\u00a0×\u00a010⁻⁵"  # no-break spaces: a cell never splits it
    assert p_value_text(3.14e-11, 3) == "3.14\u00a0×\u00a010⁻¹¹"
    assert p_text(float("nan")) == "not run"


def test_p_values_keep_their_digits_and_switch_to_powers_of_ten_below_a_thousandth():
    """Issue 35: 0.1 beside 0.39 and 0.00029 beside 3.5 × 10⁻⁶ in one column (chapters 02, 05)."""
    from playerfl_core.stats.p_values import p_value_text

    assert [p_value_text(p) for p in (0.1, 0.39, 0.6, 1.0)] == ["0.10", "0.39", "0.60", "1.0"]
    assert p_value_text(0.0013) == "0.0013" and p_value_text(0.00029) == "2.9\u00a0×\u00a010⁻⁴"
    assert p_value_text(0.000999) == "0.0010" and p_value_text(0.000994) == "9.9\u00a0×\u00a010⁻⁴"
    assert p_value_text(0.05, 3) == "0.0500" and p_value_text(0.00097, 3) == "9.70\u00a0×\u00a010⁻⁴"


def test_few_significant_digits_keep_trailing_zeros_and_large_numbers_their_digits():
    """04b's upload column read 0.016 beside 0.02 (two significant digits each)."""
    from playerfl_core.book.reports.tables import number_text

    assert number_text(0.02, ".2g") == "0.020" and number_text(0.016, ".2g") == "0.016"
    assert number_text(8420, ".3g") == "8420" and number_text(19.6, ".3g") == "19.6"
    assert number_text(1.2e-5, ".2g") == "1.2\u00a0×\u00a010⁻⁵"
    assert number_text(-3e-7, ".3g") == "−3.00\u00a0×\u00a010⁻⁷"
    assert number_text(0.02, ".6g") == "0.02"  # six: as short as the number is


def test_true_and_false_read_yes_and_no():
    """Chapter 07's equivalence table showed Python's True/False (issue 35)."""
    frame = pd.DataFrame({"identical": [True, False], "rows": [3, 4]}, index=["a", "b"])
    body = captioned(frame, "c")._repr_html_().split("</style>")[-1]
    assert ">yes<" in body and ">no<" in body and "True" not in body and "False" not in body


def test_rule_variant_and_published_table_names_are_words():
    """Chapters 04, 04b and the appendix showed rule codes (paper_median, geomean), chapter 06
    the published tables' (fairness_f1, ipr_accuracy)."""
    from playerfl_core.book import style

    rules = pd.DataFrame(
        {"rule": ["paper", "paper_median", "paper_geomean", "cost2", "a reader's rule"], "x": 1}
    )
    shown = named(rules.set_index("rule"))
    assert list(shown.index) == [
        "paper",
        "paper, median pooling",
        "paper, geometric-mean pooling",
        "averaging cost, second order",
        "a reader's rule",
    ]
    variants = named(pd.DataFrame({"variant": ["paper", "median", "geomean"], "x": 1}))
    assert list(variants["rule"]) == ["mean (paper)", "median", "geometric mean"]
    for code in ("fairness_f1", "ipr_accuracy", "fairness_loss", "ipr_f1", "macro_f1"):
        assert "_" not in style.score_label(code), code
    assert style.score_label("fairness_f1") == "fairness (macro-F1)"
    assert style.score_label("ipr_accuracy") == "IPR (accuracy)"


def test_generated_client_names_read_as_words_in_tables():
    """Chapters 00 and 01 showed client_1 … client_5 as index labels and column names."""
    scores = pd.DataFrame(
        {"client": ["client_1", "client_12", "cleveland", "texture_q1"], "local": [0.9] * 4}
    ).set_index("client")
    assert list(named(scores).index) == ["client 1", "client 12", "Cleveland", "texture q1"]
    wide = pd.DataFrame([[1, 2]], columns=pd.Index(["client_1", "client_2"], name="client"))
    assert list(named(wide).columns) == ["client 1", "client 2"]
    by_name = pd.DataFrame({"client_name": ["client_3"], "x": [1]}).set_index("client_name")
    assert list(named(by_name).index) == ["client 3"] and named(by_name).index.name == "client"
    assert "client_1" not in captioned(scores, "c")._repr_html_()


def test_a_named_index_heads_its_column_in_the_one_header_row():
    """pandas gives a named index a header row of its own (a row with nothing but "dataset");
    the book writes the names in the row of column names instead."""
    frame = pd.DataFrame(
        {"regret": [0.01, 0.02, 0.03]},
        index=pd.MultiIndex.from_tuples(
            [("heart", 80), ("heart", 2000), ("digits", 80)], names=["dataset", "images"]
        ),
    )
    html = captioned(frame, "c")._repr_html_()
    head = html.split("<thead>")[1].split("</thead>")[0]
    assert head.count("<tr>") == 1, head
    assert '<th class="index_name level0" >dataset</th>' in head, head
    assert '<th class="index_name level1" >images</th>' in head and "&nbsp;" not in head, head
    assert 'rowspan="2">Heart</th>' in html  # the outer level still spans its rows
    unnamed = captioned(frame.rename_axis([None, None]), "c")._repr_html_()
    assert unnamed.split("</thead>")[0].count("&nbsp;") == 2  # nothing to write: left blank
    # two rows of column names (chapter 06: dataset over ours/published): the last row's corner
    wide = pd.DataFrame(
        [[0.1, 0.2]], index=pd.Index(["FedAvg"], name="algorithm"),
        columns=pd.MultiIndex.from_tuples([("Heart", "ours"), ("Heart", "published")]),
    )  # fmt: skip
    rows = captioned(wide, "c")._repr_html_().split("<thead>")[1].split("</thead>")[0]
    assert rows.count("<tr>") == 2, rows
    assert rows.split("<tr>")[2].strip().startswith('<th class="index_name level0" >algorithm'), (
        rows
    )
    # a crosstab (chapter 05: algorithm × dataset, both axes named): the index's name heads the
    # one row of column names; the column axis's name gives way (the caption says it)
    cross = pd.DataFrame(
        [[0.001, 0.1]], index=pd.Index(["local"], name="algorithm"),
        columns=pd.Index(["fmnist", "heart"], name="dataset"),
    )  # fmt: skip
    rows = captioned(cross, "c")._repr_html_().split("<thead>")[1].split("</thead>")[0]
    assert rows.count("<tr>") == 1 and "&nbsp;" not in rows, rows
    assert rows.split("<tr>")[1].strip().startswith('<th class="index_name level0" >algorithm'), (
        rows
    )


def test_a_columns_decimals_line_up():
    """Shown to significant digits, 0.925, 0.91 and 0.9 read 0.925, 0.910, 0.900; a column that
    needs an exponent keeps it, as a power of ten."""
    frame = pd.DataFrame({"score": [0.925, 0.91, 0.9], "rate": [1e-5, 0.2, 0.5]})
    html = captioned(frame, "c")._repr_html_()
    assert all(f">{v}<" in html for v in ("0.925", "0.910", "0.900")), html
    assert ">1\u00a0×\u00a010⁻⁵<" in html and ">0.2<" in html
    ps = pd.DataFrame({"p": [0.004015, 0.193287], "Holm-adjusted p": [0.00803, float("nan")]})
    ps_html = captioned(ps, "c")._repr_html_()
    assert all(f">{v}<" in ps_html for v in ("0.0040", "0.19", "0.0080", "–")), ps_html
    seconds = captioned(pd.DataFrame({"s": [0.0186, 0.000926, 0.00443]}), "c")._repr_html_()
    assert all(f">{v}<" in seconds for v in ("0.0186", "0.000926", "0.00443")), seconds
    shares = captioned(pd.DataFrame({"a": [0.67, 1.0], "b": [1.0, 0.0]}), "c")._repr_html_()
    assert all(f">{v}<" in shares for v in ("0.67", "1.00", "0.00")), shares  # not 1 and 0


def test_lining_up_decimals_never_shows_a_digit_rounding_removed():
    """Chapter 03's timings at three significant digits read 0.0228, 0.0624 and 0.1666: lined up
    to four decimals, the last gained a fourth digit. Padding zeros (0.910) is fine, digits not;
    and its columns say seconds, not "(s)", on the page where s is the sensitivity."""
    frame = pd.DataFrame(
        {"hessian_trace_s": [0.022814, 0.062435, 0.166584], "x": [0.91, 0.925, 0.9]}
    )
    html = show(frame, sig=3)._repr_html_()
    assert all(f">{v}<" in html for v in ("0.0228", "0.0624", "0.167")), html
    assert ">0.1666<" not in html
    assert all(f">{v}<" in html for v in ("0.910", "0.925", "0.900")), html
    assert ">Hessian trace (seconds)<" in html and "(s)" not in html


def test_a_caption_written_as_prose_shows_emphasis_and_code_not_asterisks():
    from playerfl_core.book.reports.tables import caption_html, captioned

    assert caption_html("can stand beside *undecided*: p < 0.05 & `make test`") == (
        "can stand beside <em>undecided</em>: p &lt; 0.05 &amp; <code>make test</code>"
    )
    assert caption_html("(* at an edge), 2*3*4") == "(* at an edge), 2*3*4"  # marks stay
    html = captioned(pd.DataFrame({"a": [1]}), "beside *undecided*")._repr_html_()
    assert "<caption>beside <em>undecided</em></caption>" in html


def test_a_quantity_at_a_split_p_is_not_read_as_a_p_value():
    """Review: chapter 01's "rise at p" of 1.03 read 1.0 and chapter 04's stability shares 0,
    0.060, 0.20, 1.0 and 1.00 in one column: named "… at p", they were formatted as p-values."""
    frame = pd.DataFrame(
        {"rise at p": [2.75, 1.03], "share at that p": [0.06, 1.0], "Holm-adjusted p": [0.2, 0.01]},
        index=pd.Index(["Fashion-MNIST", "Heart"], name="dataset"),
    )
    body = captioned(frame, "c", decimals=2)._repr_html_().split("</style>")[-1]
    assert ">1.03<" in body and ">2.75<" in body and ">1.0<" not in body, body
    assert ">0.06<" in body and ">1.00<" in body and ">0.060<" not in body, body
    assert ">0.20<" in body and ">0.010<" in body  # a p-value column is still one


def test_grid_notes_say_when_every_run_came_from_the_store():
    """Chapter 06 read "132 runs (0 computed now)"; a grid read from its store says so."""
    from types import SimpleNamespace

    from playerfl_core.book.reports.tables import grid_notes

    def grid(computed):
        return SimpleNamespace(
            status=pd.DataFrame({"run": range(3)}), computed=computed, failures=[], note=lambda: ""
        )

    assert "3 runs (every one read from the store)" in grid_notes(grid(0)).data
    assert "3 runs (2 computed now)" in grid_notes(grid(2)).data


def test_grid_notes_fold_the_widened_grids_of_one_dataset_and_rate_into_one_line():
    """Chapter 05's notes listed 21 widened grids in 21 sentences, most of the page's words:
    one line per (dataset, rate) now, every algorithm named, the count unchanged."""
    from types import SimpleNamespace

    from playerfl_core.book.reports.tables import grid_notes

    def widened(ds, alg, lr):
        return (f"WIDENED: {ds}/{alg}: the chosen rate sat at an edge of the grid, so tuning "
                f"also tried lr={lr}.")  # fmt: skip

    excluded = "EXCLUDED (diverged, tune): heart/pfedme lr=0.333 seed=100: why"
    note = "\n".join([widened("heart", "local", 0.333), widened("heart", "fedavg", 0.333),
                      widened("digits", "pfedme", 0.02), widened("digits", "pfedme", 0.04),
                      excluded])  # fmt: skip
    grid = SimpleNamespace(
        note=lambda: note, failures=[1], computed=0, status=pd.DataFrame(index=range(9))
    )
    html = grid_notes(grid).data
    assert "4 widened learning-rate grids, 1 excluded runs" in html
    assert html.count("<li>") == 5  # why once, then one line per (dataset, rate)
    assert html.count("an edge of the grid") == 1
    assert "<li>WIDENED lr=0.333 on heart: local, fedavg</li>" in html
    assert "<li>WIDENED lr=0.02 on digits: pfedme</li>" in html
    assert "<li>WIDENED lr=0.04 on digits: pfedme</li>" in html
    assert "EXCLUDED (diverged, tune): heart/pfedme" in html
