"""No number changes: the answer under every protocol (``every_protocol``), computed from the
committed stores, holds every value chapters 04 and 04b showed before their before/after
sections were replaced (``evidence_snapshot.json``, written by the old code): each mean regret
with its interval, each verdict, each split, claim R2 and each protocol's cost."""

import evidence_snapshot as E
import pytest

from playerfl_core.book.reports import every_protocol as EP
from playerfl_core.book.reports.tables import interval_text
from playerfl_core.book.style import dataset_label


@pytest.fixture(scope="module")
def committed():
    """The committed stores (the tests' default store is an empty folder)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLAYERFL_STORES", str(E.ROOT / "stores"))
        yield


@pytest.fixture(scope="module")
def table(committed):
    """The long table from the committed stores."""
    return EP.every_protocol()


def _row(table, label: str, protocol: str, quantity: str):
    by_label = table.assign(label=table["federation"].map(dataset_label))
    rows = by_label[(by_label["label"] == label) & (by_label["protocol"] == protocol)
                    & (by_label["quantity"] == quantity)]  # fmt: skip
    assert len(rows) == 1, f"{label}, {protocol}, {quantity}: {len(rows)} rows"
    return rows.iloc[0]


def test_every_old_regret_and_verdict_is_in_the_table(table):
    compared = 0
    for key, label, protocol, cell, verdict, seeds in E.regret_cells():
        row = _row(table, label, protocol, EP.REGRET)
        if row["seeds"] != seeds:
            continue  # that side read the protocol on another table's seeds
        shown = (interval_text(row["value"], row["lo"], row["hi"]), row["verdict"])
        assert shown == (cell, verdict), f"{key}, {label}, {protocol}"
        compared += 1
    assert compared >= 40  # 13 + 13 + 13 rescored federations, the fair sweep, the rung


def test_the_rungs_splits_and_regrets_are_in_the_table(table):
    compared = 0
    for label, protocol, quantity, cell, seeds in E.rung_cells():
        row = _row(table, label, protocol, quantity)
        if row["seeds"] != seeds:
            continue
        shown = (
            row["detail"] if quantity == EP.SPLIT else interval_text(*row[["value", "lo", "hi"]])
        )
        assert shown == cell, f"{label}, {protocol}, {quantity}"
        compared += 1
    assert compared >= 6  # both rungs' two federations, and the book's Fashion-MNIST splits


def test_claim_r2_and_every_cost_are_as_before(table):
    claims = table[(table["quantity"] == EP.CLAIM) & (table["federation"] == "R2")]
    shown = {r.protocol: f"{r.verdict} ({r.detail})" for r in claims.itertuples()}
    assert shown == E.claim_r2()
    for protocol, (runs, hours) in E.costs().items():
        row = table[table["protocol"] == protocol].iloc[0]
        assert row["runs"] == runs, protocol
        assert row["cpu_hours"] == pytest.approx(hours, abs=0.1), protocol


def test_every_test_of_r2_is_as_before_under_each_evaluation_protocol(committed):
    """The pre-registration appendix's table of R2's 104 tests, cell for cell."""
    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.book.reports.rule_follow_ups import r2_tests
    from playerfl_core.study.archive import archive_dir
    from playerfl_core.study.split_sweeps import load_sweeps

    study = RF.analyse(load_sweeps(archive_dir("standard")), RF.load_rules())
    shown = r2_tests(study).reset_index()
    columns, rows = E.r2_test_rows()
    assert list(shown.columns) == columns
    assert [list(r) for r in shown.itertuples(index=False)] == rows
