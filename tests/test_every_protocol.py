"""The answer under every protocol: which value a page prints (the headline), the narrow display
and the sentences computed from the table (the values themselves: test_evidence_snapshot)."""

import pandas as pd
import pytest

from playerfl_core.book import prose
from playerfl_core.book.reports import every_protocol as EP
from playerfl_core.book.reports import protocol_sentences as PS

BOOK, TEST, BOTH, OWN = EP.BOOK, "2,000 test", "2,000 val + test", "own rates"


def _row(federation, protocol, value, verdict, applies=True, quantity=EP.REGRET, seeds=10):
    lo, hi = (None, None) if value is None else (value - 0.01, value + 0.01)
    return {"quantity": quantity, "federation": federation, "protocol": protocol, "value": value,
            "lo": lo, "hi": hi, "verdict": verdict,
            "detail": "strong" if quantity == EP.CLAIM else None,
            "seeds": seeds, "applies": applies, "runs": 1, "cpu_hours": 0.1}  # fmt: skip


def _table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows).reindex(columns=EP.COLUMNS)


@pytest.fixture
def table():
    """Heart: the book's and own rates (the rescores leave it as the book scores it);
    Fashion-MNIST: every evaluation protocol; rotated Fashion-MNIST at the middle rung too."""
    return _table([
        _row("heart", BOOK, 0.008, "within δ"), _row("heart", TEST, 0.008, "within δ", False),
        _row("heart", BOTH, 0.008, "within δ", False), _row("heart", OWN, 0.010, "undecided"),
        _row("fmnist", BOOK, 0.010, "undecided"), _row("fmnist", TEST, 0.029, "undecided"),
        _row("fmnist", BOTH, 0.033, "undecided"), _row("fmnist", OWN, 0.018, "undecided"),
        _row("fmnist_rotate", BOOK, 0.182, "beyond δ"),
        {**_row("fmnist_rotate", BOTH, 0.183, "beyond δ", seeds=30), "detail": "seeds 0–29"},
        _row("fmnist_rotate", "middle rung", 0.073, None, seeds=5),
        _row("R1", BOTH, None, "contradicted", quantity=EP.CLAIM),
    ])  # fmt: skip


def test_the_best_protocol_has_the_largest_evaluation_sets_then_own_rates():
    assert EP.BEST_FIRST[:3] == (BOTH, "evaluation rung", TEST)
    assert EP.BEST_FIRST.index(OWN) < EP.BEST_FIRST.index(BOOK)
    assert not {"middle rung", "paper's sizes"} & set(EP.BEST_FIRST)  # another federation size
    assert "sign-flip test alone" not in EP.BEST_FIRST  # another test: never a headline


def test_the_sign_flip_row_decides_with_the_test_it_names(monkeypatch):
    """The row that records the change of test reads the headline's regrets and decides them
    with the sign-flip test alone; every other row with the book's test."""
    from playerfl_core.stats.split_verdicts import OLD_TEST, TEST

    used = []

    def family(regrets, test):
        used.append(test)
        return []

    monkeypatch.setattr(EP, "r1_family", family)
    regrets = pd.DataFrame({"dataset": ["heart"] * 3, "regret": 0.0, "p_rule": 1,
                            "applies": True})  # fmt: skip
    for name in ("sign-flip test alone", BOTH):
        EP._regret_rows(EP.protocol(name), regrets)
    assert used == [OLD_TEST, TEST] and OLD_TEST != TEST
    assert EP.READERS["sign-flip test alone"] is EP.READERS[BOTH]


def test_the_headline_is_the_best_protocol_that_changes_the_row(table):
    fmnist = EP.headline(EP.REGRET, "fmnist", table)
    assert (fmnist.value, fmnist.protocol) == (0.033, BOTH)
    assert str(fmnist) == "0.033 (0.023–0.043), undecided (2,000 val + test)"
    heart = EP.headline(EP.REGRET, "heart", table)  # the rescores left Heart as the book's
    assert (heart.value, heart.verdict, heart.protocol) == (0.010, "undecided", OWN)
    rotated = EP.headline(EP.REGRET, "fmnist_rotate", table)  # never the middle rung's 0.073
    assert rotated.protocol == BOTH
    assert str(EP.headline(EP.CLAIM, "R1", table)) == "contradicted (strong) (2,000 val + test)"
    assert PS.claim_text(table, "R1") == (
        "R1 is contradicted, with strong evidence, with 2,000 validation and test images per "
        "client."
    )
    with pytest.raises(ValueError, match="No protocol measures 'mean regret' of 'digits'; held"):
        EP.headline(EP.REGRET, "digits", table)


def test_the_intro_prints_the_headline_and_the_sets_it_was_scored_on(table):
    assert PS.regret_text(table, "fmnist_rotate") == (
        "0.183 (seeds 0–29, 2,000 validation and test images per client)"
    )
    assert PS.regret_text(table, "heart") == "0.010 (10 seeds, each split at its own tuned rate)"
    assert PS.largest(table) == (
        "Fashion-MNIST, rotated: 0.183 (0.173–0.193), beyond δ, on seeds 0–29 with 2,000 "
        "validation and test images per client"
    )
    assert PS.headline_lines(["heart", "fmnist"], table).splitlines() == [
        "- Heart: 0.010 (0.000–0.020), undecided (each split at its own tuned rate)",
        "- Fashion-MNIST: 0.033 (0.023–0.043), undecided (2,000 validation and test images per "
        "client)",
    ]
    frame = pd.DataFrame({"seed": [0, 1, 2], "regret": 0.0})
    assert prose.seed_span(frame) == "seeds 0–2"
    assert prose.seed_span(frame.assign(seed=[0, 1, 5])) == "seeds 0–1, 5"  # a gap: named
    assert prose.seed_span(frame.assign(seed=[0, 0, 1])) == "3 seeds"  # two rates per seed
    assert PS.regret_text(None, "heart") == PS.regret_text(table, "digits") == "not measured here"
    assert PS.sets_text(TEST) == "2,000 test images per client"
    assert PS.sets_text(BOOK) == "the book's evaluation sets"


def test_the_wide_display_is_short_and_blank_where_a_protocol_did_not_measure(table):
    shown = EP.wide(table, EP.REGRET)
    assert list(shown.columns) == ["book", "test 2k", "val+test 2k", "own lr", "middle"]
    assert shown.loc["Heart", "test 2k"] == "" and shown.loc["Heart", "own lr"] == "0.010 ?"
    assert shown.loc["Fashion-MNIST, rotated", "val+test 2k"] == "0.183 ✗"
    assert shown.loc["Fashion-MNIST, rotated", "middle"] == "0.073"  # no verdict, no mark
    only_book = EP.wide(table[table["federation"] != "fmnist_rotate"], EP.REGRET, (BOOK, OWN))
    assert list(only_book.columns) == ["book", "own lr"]
    claims = EP.wide(table, EP.CLAIM)
    assert claims.loc["val+test 2k", "R1"] == "contradicted (strong)"  # a protocol per row


def test_the_wide_display_lists_the_base_first_and_alpha_as_a_number():
    names = ["fmnist_swap", "fmnist_alpha10", "fmnist_rotate_alpha0.1", "fmnist", "fmnist_alpha1",
             "fmnist_rotate", "fmnist_alpha0.05"]  # fmt: skip
    shown = EP.wide(_table([_row(n, BOOK, 0.0, None) for n in names]
                           + [_row(n, OWN, 0.0, None) for n in names]), EP.REGRET)  # fmt: skip
    assert list(shown.index) == [
        "Fashion-MNIST", "Fashion-MNIST, α = 0.05", "Fashion-MNIST, α = 1", "Fashion-MNIST, α = 10",
        "Fashion-MNIST, rotated", "Fashion-MNIST, rotated, α = 0.1", "Fashion-MNIST, swap",
    ]  # fmt: skip


def test_a_mean_regret_names_its_seeds():
    assert prose.seeds_text(range(30)) == "seeds 0–29"
    assert prose.seeds_text([*range(10), *range(20, 30), 40]) == "seeds 0–9, 20–29, 40"
    regrets = pd.DataFrame({"dataset": "heart", "seed": [2, 0, 1], "regret": 0.0, "p_rule": 1,
                            "applies": True})  # fmt: skip
    rows = EP._regret_rows(EP.protocol("own rates"), regrets)
    assert [r["detail"] for r in rows if r["quantity"] == EP.REGRET] == ["seeds 0–2"]


def test_a_protocol_without_runs_of_its_own_says_so_and_costs_are_measured(table):
    rows = [_row("fmnist", name, 0.01, None) for name in (BOTH, "sign-flip test alone")]
    text = EP.notes(_table(rows)).split("\n\n")
    assert text[0].endswith("Cost, measured (the store's record): 1 runs, 0.1 CPU-hours.")
    assert text[1].endswith("No runs of its own: it re-tests the val+test 2k regrets.")
    assert "Cost" not in text[1] and "pre-registration" not in text[1]


def test_what_r1_rests_on_is_read_from_the_table(table):
    text = PS.r1_parts(table)
    assert text.startswith("The one federation within δ is on Heart, whose oracle is chosen on "
                           "small validation sets.")  # fmt: skip
    assert "The one federation beyond δ has feature skew, not label skew alone." in text
    assert text.endswith("These verdicts were decided at the book's sizes (Fashion-MNIST: 400 "
                         "images per client, width 0.25, 10 rounds).")  # fmt: skip
    sized = pd.concat([table, _table([_row("fmnist", "middle rung", 0.0, "within δ")])])
    assert PS.decided_at(sized).endswith("10 rounds) and at middle rung.")
    more = [_row("fmnist_alpha0.1", BOTH, 0.1, "beyond δ"),
            _row("fmnist_alpha10", BOTH, 0.0, "within δ")]  # fmt: skip
    labelled = pd.concat([table, _table(more)])
    text = PS.r1_parts(labelled)
    assert "not label skew" not in text and "strong label skew" in text
    mixed = pd.concat([table, _table([_row("fmnist_rotate_alpha0.1", BOTH, 0.1, "beyond δ")])])
    assert "have feature skew and mixed skew; none has label skew alone." in PS.r1_parts(mixed)
    assert ("The 2 federations within δ are on Heart and Fashion-MNIST; 1 of them has an oracle "
            "chosen on small validation sets.") in text  # fmt: skip
    assert "The 2 federations beyond δ have feature skew and strong label skew." in text
    digits = _table([_row("digits", BOTH, 0.0, "within δ", False),
                     _row("digits_noise", BOTH, 0.0, "within δ", False),
                     _row("R1", BOTH, None, "contradicted", quantity=EP.CLAIM)])  # fmt: skip
    assert PS.r1_parts(digits).startswith(
        "All 2 within δ are on Digits, whose oracle is chosen on small validation sets. None is "
    )


def test_the_scorecards_note_names_the_verdicts_own_rates_move(table):
    assert PS.own_rate_note(table) == (
        "With every split trained at its own tuned rate (2 federations, on the book's test "
        "sets; chapter 04), the verdict moves on Heart (from within δ to undecided)"
    )
    assert PS.own_rate_note(table, where="").startswith("With every split trained at its own "
                                                       "tuned rate (2 federations, on the book's "
                                                       "test sets), the verdict moves")  # fmt: skip
    assert PS.own_rate_note(table[table["protocol"] != OWN]) == ""
    same = table.assign(verdict=table["verdict"].where(table["federation"] != "heart", "undecided"))
    assert PS.own_rate_note(same).endswith(" no verdict changes")


def test_an_unknown_protocol_is_refused_naming_the_valid_ones():
    assert EP.protocol(OWN).own_rates
    with pytest.raises(ValueError, match="Unknown protocol 'own rate'; choose one of: book's sets"):
        EP.protocol("own rate")
