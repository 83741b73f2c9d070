"""R2's rescore (item 16 of ``study.preregistration``): which runs it retrains (only those item 15
did not), how both stores replace a regret's test terms, the side by side chapter 04b shows, and
the committed store."""

import numpy as np
import pandas as pd
import pytest

from playerfl_core.fl.schema import COLUMNS
from playerfl_core.study import preregistration as P
from playerfl_core.study import r1_rescore as R1
from playerfl_core.study import r2_rescore as R2


def _run(p: int, book: float, large: float, seed: int = 0) -> pd.DataFrame:
    """A rescored run of one client on Fashion-MNIST, best validation at round 1."""
    key = ("fmnist", f"prefix_p{p}", 0.003, seed, 0)
    rows = [(*key, 0, "train", "n_samples", 100, 100)]
    rows += [(*key, r, "val", "loss", 0.5 if r == 1 else 1.0, 16) for r in range(2)]
    rows += [(*key, 1, "test", "macro_f1", large, 2000), (*key, 1, "test", R1.BOOK_SCORE, book, 20)]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_the_rescore_retrains_every_rules_split_of_the_tested_sets_that_item_15_did_not():
    regrets = pd.DataFrame(
        {
            "dataset": ["fmnist", "fmnist", "fmnist_swap", "digits_swap", "fmnist"],
            "lr": [0.003, 0.003, 0.003, 0.005, 0.003],
            "seed": [0, 0, 4, 4, 1],
            "p_rule": [3, 5, 2, 1, 4],
            "p_oracle": [1, 1, 0, 0, 2],
            "role": ["evaluation", "evaluation", "second follow-up", "second follow-up",
                     "development"],  # a development row is never rescored
        }
    )  # fmt: skip
    done = {("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 3)}  # item 15's: rule and oracle
    assert R2.tasks(regrets, done) == [("fmnist", 0.003, 0, 5), ("fmnist_swap", 0.003, 4, 0),
                                       ("fmnist_swap", 0.003, 4, 2)]  # fmt: skip


def test_a_regret_reads_its_runs_from_either_store():
    item15 = (pd.concat([_run(3, 0.70, 0.60), _run(1, 0.80, 0.75)], ignore_index=True), {})
    item16 = (_run(5, 0.74, 0.72), {})
    regrets = pd.DataFrame(
        {
            "dataset": ["fmnist", "fmnist", "fmnist"],
            "lr": [0.003] * 3,
            "seed": [0, 0, 0],
            "p_rule": [3, 5, 4],  # p = 4 is in neither store
            "p_oracle": [1, 1, 1],
            "test_rule": [0.70, 0.74, 0.71],
            "test_oracle": [0.80, 0.80, 0.80],
            "regret": [0.10, 0.06, 0.09],
        }
    )
    out = R2.r2_regrets(regrets, (item15, item16))
    assert out["rescored"].tolist() == [True, True, False]
    assert out["regret"].tolist() == pytest.approx([0.75 - 0.60, 0.75 - 0.72, 0.09])
    assert R2.runs_in(item15) == {("fmnist", 0.003, 0, 3), ("fmnist", 0.003, 0, 1)}
    assert not R2.r2_regrets(regrets, (None, None))["rescored"].any()


def _regrets(value_of) -> pd.DataFrame:
    """Ten seeds per (entry, kind) of the evaluation set, regret ``value_of(entry, kind)``."""
    rows = []
    for entry in (P.ENTRIES[0].label, P.ENTRIES[4].label):
        for dataset in ("fmnist", "fmnist_rotate"):
            for seed in range(10):
                rows.append((dataset, 0.003, seed, entry, value_of(entry, dataset), "evaluation",
                             P.kind_of(dataset), dataset == "fmnist_rotate"))  # fmt: skip
    cols = ["dataset", "lr", "seed", "entry", "regret", "role", "kind", "rescored"]
    return pd.DataFrame(rows, columns=cols)


def test_the_side_by_side_names_the_verdicts_the_large_test_sets_change():
    book = _regrets(lambda e, d: 0.0)  # every mean regret 0: within δ on all four
    large = _regrets(lambda e, d: 0.1 if (e, d) == (P.ENTRIES[0].label, "fmnist_rotate") else 0.0)
    c = R2.family_comparison(book.assign(rescored=False), large)
    assert c["family"].unique().tolist() == ["evaluation"] and len(c) == 4
    assert (c["verdict_book"] == P.WITHIN).all()
    changed = c[c["changed"]]
    assert changed[["entry", "kind"]].values.tolist() == [[P.ENTRIES[0].label,
                                                           "feature skew (rotate)"]]  # fmt: skip
    assert changed["verdict_large"].item() == P.BEYOND
    assert changed["mean_large"].item() == pytest.approx(0.1)
    assert c.set_index("kind")["rescored"].to_dict() == {"base federation": 0,
                                                         "feature skew (rotate)": 10}  # fmt: skip


def test_the_committed_rescore_holds_every_run_item_16_needs_and_replaces_every_tested_regret(
    monkeypatch,
):
    """Every run the tested sets need and item 15's store lacks, each identical to its committed
    run, with the standard archive's validation rows (the procedure is unchanged); with both
    stores, every regret of a tested Fashion-MNIST federation is replaced, no other."""
    from playerfl_core.study.archive import archive_dir

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = R2.load()
    assert committed is not None, "stores/ladder/r2_rescore.parquet is not committed"
    table, record = committed
    regrets = R2.committed_regrets()
    todo = R2.tasks(regrets, R2.runs_in(R1.load()))
    assert record["runs"] == len(todo) == record["identical_to_committed"] > 0
    assert R2.runs_in(committed) == set(todo)
    out = R2.r2_regrets(regrets)
    tested = regrets["role"].isin(R2.TESTED) & regrets["dataset"].map(R1.has_held_out)
    assert out["rescored"].tolist() == tested.tolist()

    dataset, lr, seed, p = todo[0]
    archive, _ = R1._archive(archive_dir(R1.PROFILE))
    pick = (archive["dataset"] == dataset) & (archive["algorithm"] == f"prefix_p{p}")
    book = archive[pick & (archive["seed"] == seed) & (archive["split"] == "val")]
    mine = (table["dataset"] == dataset) & (table["algorithm"] == f"prefix_p{p}")
    val = table[mine & (table["seed"] == seed) & (table["split"] == "val")]
    assert np.array_equal(val["value"].to_numpy(), book["value"].to_numpy())
