"""Item 17 (issue 34, item 5): R1's and R2's regrets with 2,000 validation images too."""

import numpy as np
import pandas as pd
import pytest

from playerfl_core.study import machine
from playerfl_core.study import val_rescore as V


def test_the_rescore_takes_every_seed_of_r1_and_of_r2s_tested_sets_with_images_to_spare():
    r1 = pd.DataFrame(
        {"dataset": ["fmnist", "fmnist", "heart"], "lr": [0.003, 0.003, 0.03], "seed": [0, 0, 1]}
    )
    r2 = pd.DataFrame(
        {
            "dataset": ["fmnist_swap", "fmnist_rotate", "digits_swap", "fmnist"],
            "lr": [0.003] * 4,
            "seed": [4, 12, 0, 9],
            "role": ["second follow-up", "confirmation", "second follow-up", "development"],
        }
    )
    assert V.seeds(r1, r2) == [
        ("fmnist", 0.003, 0),
        ("fmnist_rotate", 0.003, 12),
        ("fmnist_swap", 0.003, 4),
    ]


def test_every_split_of_a_seed_is_retrained_unless_item_14s_rung_holds_the_seed():
    splits = pd.DataFrame(
        {
            "dataset": ["fmnist"] * 3 + ["fmnist_swap"] * 2,
            "lr": [0.003] * 5,
            "seed": [0, 0, 1, 4, 4],
            "p": [0, 1, 0, 0, 1],
        }
    )
    wanted = [("fmnist", 0.003, 0), ("fmnist", 0.003, 1), ("fmnist_swap", 0.003, 4)]
    assert V.tasks(wanted, splits, {("fmnist", 0.003, 1)}) == [
        ("fmnist", 0.003, 0, 0),
        ("fmnist", 0.003, 0, 1),
        ("fmnist_swap", 0.003, 4, 0),
        ("fmnist_swap", 0.003, 4, 1),
    ]
    with pytest.raises(ValueError, match="1 seeds have no committed split sweep"):
        V.tasks([*wanted, ("fmnist", 0.003, 7)], splits)


def test_the_large_sweep_reads_each_seed_from_one_store():
    def runs(*seeds):
        return pd.DataFrame({"dataset": "fmnist", "lr": 0.003, "seed": list(seeds), "value": 0.5})

    both = V.large_sweep((runs(3, 4), {}), (runs(0, 1), {}))
    assert sorted(both["seed"]) == [0, 1, 3, 4]
    with pytest.raises(ValueError, match="1 seeds are in both"):
        V.large_sweep((runs(1, 4), {}), (runs(0, 1), {}))


@pytest.mark.slow
def test_a_run_scored_on_large_validation_sets_is_item_14s_run(monkeypatch):
    """The procedure of item 17 on a seed of item 14's rung gives the rung's rows: validation
    scores at every round, test scores at the rounds they choose, training rows; bit for bit on
    the machine that made the rung; elsewhere the run's validation and test scores within 0.02."""
    from playerfl_core.stats.results import select_rounds
    from playerfl_core.study import eval_rung
    from playerfl_core.study import r1_rescore as R1

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung, record = eval_rung.load()
    same_machine = record["machine"]["key"] == machine.fingerprint(threads=1)["key"]
    task = ("fmnist_rotate", 0.003, 7, 2)  # 3 of its 5 clients' rounds move with the val sets
    _, table, checked = R1.rescore_run(task, large_val=True)
    assert checked["identical"] or not same_machine  # the committed run, trained again
    dataset, _, seed, p = task
    mine = rung[(rung["dataset"] == dataset) & (rung["seed"] == seed)
                & (rung["algorithm"] == f"prefix_p{p}")]  # fmt: skip
    if not same_machine:  # last bits differ, and may move a client's round: compare the runs
        from playerfl_core.study.split_scores import sweep_scores

        ours, theirs = sweep_scores(table).iloc[0], sweep_scores(mine).iloc[0]
        assert ours["val"] == pytest.approx(theirs["val"], abs=0.02)
        assert ours["test"] == pytest.approx(theirs["test"], abs=0.02)
        return
    chosen = select_rounds(mine)
    expected = pd.concat([mine[mine["split"] != "test"], chosen[chosen["split"] == "test"]])
    keys = ["client", "round", "split", "metric"]
    both = expected.merge(table, on=keys, how="outer", suffixes=("_rung", ""), indicator=True)
    assert (both["_merge"] == "both").all() and len(both) == len(table)
    assert np.abs(both["value_rung"] - both["value"]).max() == 0.0


def test_the_pending_runs_are_collected_with_the_machines_that_computed_them(tmp_path):
    """Item 17 spans sessions and machines: its collected record counts the runs per machine,
    and a missing run stops the collection with the command that computes it."""
    from playerfl_core.study import registry, runner

    study = registry.study("val_rescore")
    todo = [("fmnist", 0.003, 0, 0), ("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 2)]
    here = machine.fingerprint(threads=1)
    other = {**here, "cpu": "Another CPU", "key": None}
    other["key"] = machine.key(other)
    for task, facts in zip(todo[:2], (here, other), strict=True):
        row = pd.DataFrame({"dataset": ["fmnist"], "seed": [0], "p": [task[3]]})
        record = {"cpu_seconds": 50.0, "identical": True, "max_abs_diff": 0.0, "machine": facts}
        runner.keep(tmp_path, V.task_name(task), row, record)
    with pytest.raises(ValueError, match="1 of the val_rescore study's 3 runs are not computed"):
        runner.collect(study, tmp_path, todo)
    with pytest.raises(ValueError, match="playerfl study run val_rescore"):
        runner.collect(study, tmp_path, todo)
    table, totals = runner.collect(study, tmp_path, todo[:2])
    assert table["p"].tolist() == [0, 1] and totals["cpu_seconds"] == 100.0
    assert totals["machines"] == {machine.describe(here): 1, machine.describe(other): 1}


def test_item_17s_command_keeps_its_runs_in_the_committed_pending_folder(monkeypatch):
    """The study resumes from ``stores/pending/val_rescore`` (committed between sessions), scores
    on the large validation sets and leaves out item 14's rung's seeds."""
    from playerfl_core.study import registry
    from playerfl_core.study.archive import stores_dir
    from playerfl_core.study.r1_rescore import large_val

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    study = registry.study("val_rescore")
    todo = V.study_tasks(study)
    assert study.work_dir() == stores_dir() / "pending" / "val_rescore" and large_val(study)
    assert not large_val(registry.study("r1_rescore"))
    rotated = {seed for d, _, seed, _ in todo if d == "fmnist_rotate"}
    assert rotated and min(rotated) == 10  # item 14's rung holds its seeds 0-9
    assert len(todo) == 1020


def test_item_17s_reading_gives_item_14s_regrets_on_the_seeds_of_its_rung(monkeypatch):
    """The analysis declared for item 17, run on the 20 seeds item 14's rung holds (its runs
    are item 17's, read and reported already): R1's regret on each is item 14's own, every
    other regret stays as committed, and R2's paper entry gives R1's regret."""
    from playerfl_core.study import eval_rung, rungs
    from playerfl_core.study import preregistration as P
    from playerfl_core.study import r1_rescore as R1
    from playerfl_core.study import r2_rescore as R2
    from playerfl_core.study import split_oracle as O
    from playerfl_core.study.archive import stores_dir
    from playerfl_core.study.split_rules_table import load_rules_table

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung = eval_rung.load()
    sweep = V.large_sweep((rung[0].iloc[:0], {}), rung)
    book = R1.committed_regrets()
    _, rules = O.committed_scores(R1.PROFILE)
    large = V.r1_regrets(book, sweep, rules)
    keys = ["dataset", "lr", "seed"]
    mine = large[large["rescored"]].merge(rungs.regrets(rung[0]), on=keys, suffixes=("", "_14"))
    assert len(mine) == large["rescored"].sum() == 20
    assert (mine["p_oracle"] == mine["p_oracle_14"]).all()
    assert np.array_equal(mine["regret"], mine["regret_14"])
    kept = large[~large["rescored"]].drop(columns="rescored").reset_index(drop=True)
    assert kept.equals(book[~large["rescored"].to_numpy()].reset_index(drop=True))
    moved, n = V.oracle_moves(book, large)
    assert n == 20 and 0 < moved < n  # the large validation sets move some oracles

    rules_table = load_rules_table(stores_dir() / "rules" / f"{R1.PROFILE}.parquet")[0]
    r2 = V.r2_regrets(R2.committed_regrets(), sweep, rules_table)
    assert r2["rescored"].sum() == 20 * len(P.ALL_ENTRIES)
    paper = r2[r2["rescored"] & (r2["entry"] == P.ENTRIES[0].label)].merge(mine, on=keys)
    assert np.array_equal(paper["regret_x"], paper["regret_y"])


def test_a_seed_is_never_read_half_from_each_procedure():
    old = pd.DataFrame({"dataset": "fmnist", "lr": 0.003, "seed": [0, 0, 1],
                        "entry": ["a", "b", "a"], "regret": [0.1, 0.2, 0.3]})  # fmt: skip
    new = old.iloc[[0, 1]].assign(regret=[0.0, 0.05])
    out = V._replace(old, new, ["dataset", "lr", "seed", "entry"])
    assert out["regret"].tolist() == [0.0, 0.05, 0.3]
    assert out["rescored"].tolist() == [True, True, False]
    with pytest.raises(ValueError, match="holds the seed of 1 regrets it does not recompute"):
        V._replace(old, new.iloc[[0]], ["dataset", "lr", "seed", "entry"])


# -- item 17's reading wired into every page (read here on item 14's rung only: its runs are ----
# -- item 17's, read and reported already; no run of item 17's own store is read) ---------------
@pytest.fixture
def rung_only(monkeypatch):
    """Item 17's store as if it held no run of its own, so that its reading sees item 14's rung."""
    from playerfl_core.study import eval_rung

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung = eval_rung.load()
    record = {"runs": 0, "cpu_seconds": 0.0, "identical_to_committed": 0, "max_abs_diff": 0.0,
              "test_per_client": 2000, "val_per_client": 2000}  # fmt: skip
    monkeypatch.setattr(V, "load", lambda: (rung[0].iloc[:0], record))
    return rung


def test_r1s_family_reads_item_17_where_it_holds_the_seed_and_item_15_elsewhere(
    rung_only, monkeypatch
):
    from playerfl_core.study import r1_rescore as R1

    book = R1.committed_regrets()
    test_only = R1.r1_regrets(book)
    family = V.r1_family(book)
    large = V.r1_regrets(test_only, V.large_sweep(), book)
    assert family["large_val"].sum() == 20 and family["large_val"].equals(large["rescored"])
    mine = family["large_val"].to_numpy()
    assert np.array_equal(family.loc[mine, "regret"], large.loc[mine, "regret"])
    assert np.array_equal(family.loc[~mine, "regret"], test_only.loc[~mine, "regret"])
    assert family["rescored"].tolist() == (test_only["rescored"] | large["rescored"]).tolist()
    assert V.large_sets_text(family) == "2,000 validation and test images per client"
    monkeypatch.setattr(V, "load", lambda: None)  # item 17 not committed: item 15's family
    without = V.r1_family(book)
    assert without.drop(columns="large_val").equals(test_only) and not without["large_val"].any()
    assert V.large_sets_text(without) == "2,000 test images per client"


def test_chapter_04b_reads_item_17_and_keeps_item_16_beside_it(rung_only):
    import re

    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.book.reports.rule_follow_ups import r2_tests
    from playerfl_core.study import preregistration as P
    from playerfl_core.study import r2_rescore as R2
    from playerfl_core.study.archive import archive_dir
    from playerfl_core.study.split_sweeps import load_sweeps

    study = RF.analyse(load_sweeps(archive_dir("standard")), RF.load_rules())
    assert study.book is not None and study.test_only is not None
    assert study.test_only.regrets.equals(R2.r2_regrets(study.book.regrets))  # item 16's
    rescored = study.regrets["rescored"].to_numpy()
    assert rescored.sum() == 20 * len(P.ALL_ENTRIES)  # every entry on the rung's 20 seeds
    kept = [s.regrets[~rescored].drop(columns="rescored").reset_index(drop=True)
            for s in (study, study.test_only)]  # fmt: skip
    assert kept[0].equals(kept[1])
    details = RF.result_details(study)
    assert "(the tenth and eleventh declarations)" in details
    n, verb = re.search(r"(\d+) of the \d+ verdicts (differs?) from", details).groups()
    assert (verb == "differs") == (n == "1")  # "1 of the 104 verdicts differ" read wrong
    table = r2_tests(study)
    protocols = ["book's test sets", "2,000 images", "2,000 validation too"]
    assert list(table.columns) == ["seeds", "rescored", *protocols]
    cells = table.iloc[:, 2:].to_numpy().ravel()
    assert all(re.fullmatch(r"[+−]?\d\.\d{3} [✓✗?]", c) for c in cells), cells[:3]


def test_the_result_details_say_differs_for_one_changed_verdict(monkeypatch):
    """Chapter 04b's Result details read "1 of the 104 verdicts differ"."""
    from types import SimpleNamespace

    from playerfl_core.book.reports import rule_family as RF

    study = SimpleNamespace(book=SimpleNamespace(regrets=None), regrets=None, test_only=object())
    for changed, words in (([True, False, False], "1 of the 3 verdicts differs from"),
                           ([True, True, False], "2 of the 3 verdicts differ from")):  # fmt: skip
        frame = pd.DataFrame({"changed": changed})
        monkeypatch.setattr(RF, "family_comparison", lambda old, new, f=frame: f)
        sentence = RF._rescore_sentence(study)
        assert f"{words} those on the book's validation and test sets." in sentence
