"""The rescores (``study.rescore``): which runs each retrains, how their scores replace a
regret's terms (only for the very runs they retrained), the pages that read them, and the
committed stores."""

import re
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from playerfl_core.fl.schema import COLUMNS
from playerfl_core.study import machine, registry, rungs, runner
from playerfl_core.study import preregistration as P
from playerfl_core.study import rescore as R
from playerfl_core.study.archive import archive_dir, stores_dir


def _run(p: int, seed: int, book: tuple, large: tuple, dataset: str = "fmnist") -> list[tuple]:
    """A rescored run's rows: two clients (training shares ¼ and ¾); client 0's validation loss
    is lowest at round 1, client 1's at round 2; test rows only at those rounds."""
    algo, lr, rows = f"prefix_p{p}", 0.003, []
    for client, n, best in ((0, 100, 1), (1, 300, 2)):
        rows.append((dataset, algo, lr, seed, client, 0, "train", "n_samples", n, n))
        for rnd in range(3):
            loss = 0.5 if rnd == best else 1.0 + rnd
            rows.append((dataset, algo, lr, seed, client, rnd, "val", "loss", loss, 16))
        test = (dataset, algo, lr, seed, client, best, "test")
        rows += [(*test, "macro_f1", large[client], 2000), (*test, R.BOOK_SCORE, book[client], 20)]
    return rows


def _table() -> pd.DataFrame:
    rows = _run(3, 0, book=(0.6, 0.8), large=(0.5, 0.7))  # book 0.75, large 0.65
    rows += _run(1, 0, book=(0.7, 0.9), large=(0.6, 0.78))  # book 0.85, large 0.735
    return pd.DataFrame(rows, columns=COLUMNS)


def test_run_scores_weigh_clients_by_training_share_and_keep_the_two_test_sets_apart():
    scores = R.run_scores(_table()).set_index("algorithm")
    assert scores.loc["prefix_p3", "book"] == pytest.approx(0.75)
    assert scores.loc["prefix_p3", "test"] == pytest.approx(0.65)
    assert scores.loc["prefix_p1", "test"] == pytest.approx(0.735)


def test_a_regret_takes_the_rescored_test_terms_only_for_the_runs_it_was_computed_from():
    regrets = pd.DataFrame(
        {
            "dataset": ["fmnist", "fmnist", "fmnist"],
            "lr": [0.003] * 3,
            "seed": [0, 0, 7],
            "p_rule": [3, 3, 3],
            "p_oracle": [1, 1, 1],
            "test_rule": [0.75, 0.70, 0.75],  # row 1: other runs of the same settings
            "test_oracle": [0.85, 0.85, 0.85],
            "regret": [0.10, 0.15, 0.10],
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = R.r1_regrets(regrets, (_table(), {}))
    assert out["rescored"].tolist() == [True, False, False]  # seed 7: not rescored, no warning
    assert out.loc[0, "regret"] == pytest.approx(0.735 - 0.65)  # test(oracle) − test(rule)
    assert out.loc[0, ["test_rule", "test_oracle"]].tolist() == pytest.approx([0.65, 0.735])
    assert out.loc[1:, "regret"].tolist() == [0.15, 0.10]
    assert len(caught) == 1 and "1 regrets name runs the committed rescore holds" in str(
        caught[0].message
    )


def test_the_rescore_retrains_the_rule_and_the_oracle_of_federations_with_images_to_spare():
    regrets = pd.DataFrame(
        {
            "dataset": ["fmnist", "fmnist_swap", "digits", "heart"],
            "lr": [0.003, 0.003, 0.005, 0.03],
            "seed": [0, 4, 0, 0],
            "p_rule": [3, 2, 3, 1],
            "p_oracle": [1, 2, 0, 2],
        }
    )
    assert R.tasks(regrets) == [("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 3),
                                 ("fmnist_swap", 0.003, 4, 2)]  # fmt: skip


def test_the_committed_rescore_is_complete_keeps_the_books_validation_and_recomputes(monkeypatch):
    """Every run the committed regrets need, each identical to its committed run; a run's
    validation rows are the standard archive's (the procedure is unchanged); one run recomputes
    (bit for bit on the machine that made the store; elsewhere its test macro-F1 within 0.03:
    ten rounds of float32 drift give another model, 0.010 apart measured here with
    ``ATEN_CPU_CAPABILITY=default``); and R1's regrets of every Fashion-MNIST federation are
    replaced."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = R.load("r1_rescore")
    assert committed is not None, "stores/ladder/r1_rescore.parquet is not committed"
    table, record = committed
    regrets = R.r1_committed_regrets()
    todo = R.tasks(regrets)
    assert record["runs"] == len(todo) == record["identical_to_committed"]
    assert record["test_per_client"] == R.TEST_PER_CLIENT
    replaced = R.r1_regrets(regrets, committed)
    held = regrets["dataset"].map(R.has_held_out)
    assert replaced["rescored"].tolist() == held.tolist() and held.sum() > 100

    task = todo[0]
    _, fresh, _ = R.rescore_run(task, archive_dir(R.PROFILE))
    dataset, lr, seed, p = task
    stored = table[(table["dataset"] == dataset) & (table["algorithm"] == f"prefix_p{p}")
                   & (table["seed"] == seed)].reset_index(drop=True)  # fmt: skip
    archive, _ = R._archive(archive_dir(R.PROFILE))
    book = archive[(archive["dataset"] == dataset) & (archive["algorithm"] == f"prefix_p{p}")
                   & (archive["seed"] == seed) & (archive["split"] == "val")]  # fmt: skip
    val = stored[stored["split"] == "val"]
    assert np.array_equal(val["value"].to_numpy(), book["value"].to_numpy())
    if record["machine"]["key"] == machine.fingerprint(threads=1)["key"]:
        pd.testing.assert_frame_equal(fresh[COLUMNS], stored[COLUMNS])
    else:
        large = R.run_scores(fresh)["test"].item()
        assert large == pytest.approx(R.run_scores(stored)["test"].item(), abs=0.03)


# -- R2's rescore --------------------------------------------------------------------------------
def _one_client_run(p: int, book: float, large: float, seed: int = 0) -> pd.DataFrame:
    """A rescored run of one client on Fashion-MNIST, best validation at round 1."""
    key = ("fmnist", f"prefix_p{p}", 0.003, seed, 0)
    rows = [(*key, 0, "train", "n_samples", 100, 100)]
    rows += [(*key, r, "val", "loss", 0.5 if r == 1 else 1.0, 16) for r in range(2)]
    rows += [(*key, 1, "test", "macro_f1", large, 2000), (*key, 1, "test", R.BOOK_SCORE, book, 20)]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_r2s_rescore_retrains_every_rules_split_of_the_tested_sets_that_r1s_did_not():
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
    done = {("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 3)}  # R1's rescore's: rule and oracle
    assert R.r2_tasks(regrets, done) == [("fmnist", 0.003, 0, 5), ("fmnist_swap", 0.003, 4, 0),
                                       ("fmnist_swap", 0.003, 4, 2)]  # fmt: skip


def test_a_regret_reads_its_runs_from_either_store():
    r1_store = (
        pd.concat(
            [_one_client_run(3, 0.70, 0.60), _one_client_run(1, 0.80, 0.75)], ignore_index=True
        ),
        {},
    )
    r2_store = (_one_client_run(5, 0.74, 0.72), {})
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
    out = R.r2_regrets(regrets, (r1_store, r2_store))
    assert out["rescored"].tolist() == [True, True, False]
    assert out["regret"].tolist() == pytest.approx([0.75 - 0.60, 0.75 - 0.72, 0.09])
    assert R.runs_in(r1_store) == {("fmnist", 0.003, 0, 3), ("fmnist", 0.003, 0, 1)}
    assert not R.r2_regrets(regrets, (None, None))["rescored"].any()


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
    c = R.family_comparison(book.assign(rescored=False), large)
    assert c["family"].unique().tolist() == ["evaluation"] and len(c) == 4
    assert (c["verdict_book"] == P.WITHIN).all()
    changed = c[c["changed"]]
    assert changed[["entry", "kind"]].values.tolist() == [[P.ENTRIES[0].label,
                                                           "feature skew (rotate)"]]  # fmt: skip
    assert changed["verdict_large"].item() == P.BEYOND
    assert changed["mean_large"].item() == pytest.approx(0.1)
    assert c.set_index("kind")["rescored"].to_dict() == {"base federation": 0,
                                                         "feature skew (rotate)": 10}  # fmt: skip


def test_r2s_committed_rescore_holds_every_run_it_needs_and_replaces_every_tested_regret(
    monkeypatch,
):
    """Every run the tested sets need and R1's rescore's store lacks, each identical to its
    committed run, with the standard archive's validation rows (the procedure is unchanged);
    with both stores, every regret of a tested Fashion-MNIST federation is replaced, no other."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = R.load("r2_rescore")
    assert committed is not None, "stores/ladder/r2_rescore.parquet is not committed"
    table, record = committed
    regrets = R.r2_committed_regrets()
    todo = R.r2_tasks(regrets, R.runs_in(R.load("r1_rescore")))
    assert record["runs"] == len(todo) == record["identical_to_committed"] > 0
    assert R.runs_in(committed) == set(todo)
    out = R.r2_regrets(regrets)
    tested = regrets["role"].isin(R.TESTED) & regrets["dataset"].map(R.has_held_out)
    assert out["rescored"].tolist() == tested.tolist()

    dataset, lr, seed, p = todo[0]
    archive, _ = R._archive(archive_dir(R.PROFILE))
    pick = (archive["dataset"] == dataset) & (archive["algorithm"] == f"prefix_p{p}")
    book = archive[pick & (archive["seed"] == seed) & (archive["split"] == "val")]
    mine = (table["dataset"] == dataset) & (table["algorithm"] == f"prefix_p{p}")
    val = table[mine & (table["seed"] == seed) & (table["split"] == "val")]
    assert np.array_equal(val["value"].to_numpy(), book["value"].to_numpy())


# -- the validation rescore ----------------------------------------------------------------------
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
    assert R.seeds(r1, r2) == [
        ("fmnist", 0.003, 0),
        ("fmnist_rotate", 0.003, 12),
        ("fmnist_swap", 0.003, 4),
    ]


def test_every_split_of_a_seed_is_retrained_unless_the_evaluation_rung_holds_the_seed():
    splits = pd.DataFrame(
        {
            "dataset": ["fmnist"] * 3 + ["fmnist_swap"] * 2,
            "lr": [0.003] * 5,
            "seed": [0, 0, 1, 4, 4],
            "p": [0, 1, 0, 0, 1],
        }
    )
    wanted = [("fmnist", 0.003, 0), ("fmnist", 0.003, 1), ("fmnist_swap", 0.003, 4)]
    assert R.split_tasks(wanted, splits, {("fmnist", 0.003, 1)}) == [
        ("fmnist", 0.003, 0, 0),
        ("fmnist", 0.003, 0, 1),
        ("fmnist_swap", 0.003, 4, 0),
        ("fmnist_swap", 0.003, 4, 1),
    ]
    with pytest.raises(ValueError, match="1 seeds have no committed split sweep"):
        R.split_tasks([*wanted, ("fmnist", 0.003, 7)], splits)


def test_the_large_sweep_reads_each_seed_from_one_store():
    def runs(*seeds):
        run = {"dataset": "fmnist", "algorithm": "prefix_p1", "lr": 0.003, "value": 0.5}
        return pd.DataFrame({**run, "seed": list(seeds)})

    both = R.large_sweep((runs(3, 4), {}), (runs(0, 1), {}))
    assert sorted(both["seed"]) == [0, 1, 3, 4]
    with pytest.raises(ValueError, match="1 seeds are in both"):
        R.large_sweep((runs(1, 4), {}), (runs(0, 1), {}))


@pytest.mark.slow
def test_a_run_scored_on_large_validation_sets_is_the_evaluation_rungs_run(monkeypatch):
    """The validation rescore's procedure on a seed of the evaluation rung gives the rung's rows:
    validation scores at every round, test scores at the rounds they choose, training rows; bit
    for bit on the machine that made the rung; elsewhere the run's validation and test scores
    within 0.02."""
    from playerfl_core.stats.results import select_rounds

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung, record = rungs.load("eval_rung")
    same_machine = record["machine"]["key"] == machine.fingerprint(threads=1)["key"]
    task = ("fmnist_rotate", 0.003, 7, 2)  # 3 of its 5 clients' rounds move with the val sets
    _, table, checked = R.rescore_run(task, large_val=True)
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
    """The validation rescore spans sessions and machines: its collected record counts the runs
    per machine, and a missing run stops the collection with the command that computes it."""

    study = registry.study("val_rescore")
    todo = [("fmnist", 0.003, 0, 0), ("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 2)]
    here = machine.fingerprint(threads=1)
    other = {**here, "cpu": "Another CPU", "key": None}
    other["key"] = machine.key(other)
    for task, facts in zip(todo[:2], (here, other), strict=True):
        row = pd.DataFrame({"dataset": ["fmnist"], "seed": [0], "p": [task[3]]})
        record = {"cpu_seconds": 50.0, "identical": True, "max_abs_diff": 0.0, "machine": facts}
        runner.keep(tmp_path, R.task_name(task), row, record)
    with pytest.raises(ValueError, match="1 of the val_rescore study's 3 runs are not computed"):
        runner.collect(study, tmp_path, todo)
    with pytest.raises(ValueError, match="playerfl study run val_rescore"):
        runner.collect(study, tmp_path, todo)
    table, totals = runner.collect(study, tmp_path, todo[:2])
    assert table["p"].tolist() == [0, 1] and totals["cpu_seconds"] == 100.0
    assert totals["machines"] == {machine.describe(here): 1, machine.describe(other): 1}


def test_the_validation_rescore_keeps_its_runs_in_the_committed_pending_folder(monkeypatch):
    """The study resumes from ``stores/pending/val_rescore`` (committed between sessions), scores
    on the large validation sets and leaves out the evaluation rung's seeds."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    study = registry.study("val_rescore")
    todo = R.study_tasks(study)
    assert study.work_dir() == stores_dir() / "pending" / "val_rescore" and R.large_val(study)
    assert not R.large_val(registry.study("r1_rescore"))
    rotated = {seed for d, _, seed, _ in todo if d == "fmnist_rotate"}
    assert rotated and min(rotated) == 10  # the evaluation rung holds its seeds 0-9
    assert len(todo) == 1020


def test_the_validation_rescores_reading_gives_the_rungs_regrets_on_its_seeds(monkeypatch):
    """The analysis declared for the validation rescore, run on the 20 seeds the evaluation rung
    holds (the same runs, read and reported already): R1's regret on each is the rung's own,
    every other regret stays as committed, and R2's paper entry gives R1's regret."""
    from playerfl_core.study import split_oracle as O

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung = rungs.load("eval_rung")
    sweep = R.large_sweep((rung[0].iloc[:0], {}), rung)
    book = R.r1_committed_regrets()
    _, rules = O.committed_scores(R.PROFILE)
    large = R.large_val_r1_regrets(book, sweep, rules)
    keys = ["dataset", "lr", "seed"]
    mine = large[large["rescored"]].merge(rungs.regrets(rung[0]), on=keys, suffixes=("", "_rung"))
    assert len(mine) == large["rescored"].sum() == 20
    assert (mine["p_oracle"] == mine["p_oracle_rung"]).all()
    assert np.array_equal(mine["regret"], mine["regret_rung"])
    kept = large[~large["rescored"]].drop(columns="rescored").reset_index(drop=True)
    assert kept.equals(book[~large["rescored"].to_numpy()].reset_index(drop=True))
    both = mine.merge(book, on=keys, suffixes=("", "_book"))
    moved = int((both["p_oracle"] != both["p_oracle_book"]).sum())
    assert len(both) == 20 and 0 < moved < 20  # the large validation sets move some oracles

    rules_table = runner.load_store(stores_dir() / "rules" / f"{R.PROFILE}.parquet")[0]
    r2 = R.large_val_r2_regrets(R.r2_committed_regrets(), sweep, rules_table)
    assert r2["rescored"].sum() == 20 * len(P.ALL_ENTRIES)
    paper = r2[r2["rescored"] & (r2["entry"] == P.ENTRIES[0].label)].merge(mine, on=keys)
    assert np.array_equal(paper["regret_x"], paper["regret_y"])


def test_a_seed_is_never_read_half_from_each_procedure():
    old = pd.DataFrame({"dataset": "fmnist", "lr": 0.003, "seed": [0, 0, 1],
                        "entry": ["a", "b", "a"], "regret": [0.1, 0.2, 0.3]})  # fmt: skip
    new = old.iloc[[0, 1]].assign(regret=[0.0, 0.05])
    out = R._replace(old, new, ["dataset", "lr", "seed", "entry"])
    assert out["regret"].tolist() == [0.0, 0.05, 0.3]
    assert out["rescored"].tolist() == [True, True, False]
    with pytest.raises(ValueError, match="holds the seed of 1 regrets it does not recompute"):
        R._replace(old, new.iloc[[0]], ["dataset", "lr", "seed", "entry"])


# -- the validation rescore's reading wired into every page (read here on the evaluation rung ---
# -- only: its runs are the rescore's, read and reported already; none of its own store) ---------
@pytest.fixture
def rung_only(monkeypatch):
    """The validation rescore's store as if it held no run of its own, so that its reading sees
    the evaluation rung."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    rung = rungs.load("eval_rung")
    record = {"runs": 0, "cpu_seconds": 0.0, "identical_to_committed": 0, "max_abs_diff": 0.0,
              "test_per_client": 2000, "val_per_client": 2000}  # fmt: skip
    committed = R.load
    monkeypatch.setattr(R, "load", lambda name: (rung[0].iloc[:0], record) if name == "val_rescore"
                        else committed(name))  # fmt: skip
    return rung


def test_r1s_family_reads_the_validation_rescore_where_it_holds_the_seed_and_r1s_elsewhere(
    rung_only, monkeypatch
):
    book = R.r1_committed_regrets()
    test_only = R.r1_regrets(book)
    family = R.r1_family(book)
    large = R.large_val_r1_regrets(test_only, R.large_sweep(), book)
    assert family["large_val"].sum() == 20 and family["large_val"].equals(large["rescored"])
    mine = family["large_val"].to_numpy()
    assert np.array_equal(family.loc[mine, "regret"], large.loc[mine, "regret"])
    assert np.array_equal(family.loc[~mine, "regret"], test_only.loc[~mine, "regret"])
    assert family["rescored"].tolist() == (test_only["rescored"] | large["rescored"]).tolist()
    assert R.large_sets_text(family) == "2,000 validation and test images per client"
    committed = R.load  # the validation rescore not committed: R1's rescore's family
    monkeypatch.setattr(R, "load", lambda name: None if name == "val_rescore" else committed(name))
    without = R.r1_family(book)
    assert without.drop(columns="large_val").equals(test_only) and not without["large_val"].any()
    assert R.large_sets_text(without) == "2,000 test images per client"


def test_chapter_04b_reads_the_validation_rescore_and_keeps_r2s_beside_it(rung_only):
    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.book.reports.rule_follow_ups import r2_tests
    from playerfl_core.study.split_sweeps import load_sweeps

    study = RF.analyse(load_sweeps(archive_dir("standard")), RF.load_rules())
    assert study.book is not None and study.test_only is not None
    assert study.test_only.regrets.equals(R.r2_regrets(study.book.regrets))  # R2's rescore's
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

    from playerfl_core.book.reports import rule_family as RF

    study = SimpleNamespace(book=SimpleNamespace(regrets=None), regrets=None, test_only=object())
    for changed, words in (([True, False, False], "1 of the 3 verdicts differs from"),
                           ([True, True, False], "2 of the 3 verdicts differ from")):  # fmt: skip
        frame = pd.DataFrame({"changed": changed})
        monkeypatch.setattr(RF, "family_comparison", lambda old, new, f=frame: f)
        sentence = RF._rescore_sentence(study)
        assert f"{words} those on the book's validation and test sets." in sentence


def test_a_rescore_of_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(
        ValueError, match="'r3_rescore'; choose one of: r1_rescore, r2_rescore, val"
    ):
        R.load("r3_rescore")
