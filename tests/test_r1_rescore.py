"""R1's rescore (item 15 of ``study.preregistration``): which runs it retrains, how its scores
replace a regret's test terms (only for the very runs it retrained), and the committed store."""

import warnings

import numpy as np
import pandas as pd
import pytest

from playerfl_core.fl.schema import COLUMNS
from playerfl_core.study import machine
from playerfl_core.study import r1_rescore as RS


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
        rows += [(*test, "macro_f1", large[client], 2000), (*test, RS.BOOK_SCORE, book[client], 20)]
    return rows


def _table() -> pd.DataFrame:
    rows = _run(3, 0, book=(0.6, 0.8), large=(0.5, 0.7))  # book 0.75, large 0.65
    rows += _run(1, 0, book=(0.7, 0.9), large=(0.6, 0.78))  # book 0.85, large 0.735
    return pd.DataFrame(rows, columns=COLUMNS)


def test_run_scores_weigh_clients_by_training_share_and_keep_the_two_test_sets_apart():
    scores = RS.run_scores(_table()).set_index("algorithm")
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
        out = RS.r1_regrets(regrets, (_table(), {}))
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
    assert RS.tasks(regrets) == [("fmnist", 0.003, 0, 1), ("fmnist", 0.003, 0, 3),
                                 ("fmnist_swap", 0.003, 4, 2)]  # fmt: skip


def test_the_committed_rescore_is_complete_keeps_the_books_validation_and_recomputes(monkeypatch):
    """Every run the committed regrets need, each identical to its committed run; a run's
    validation rows are the standard archive's (the procedure is unchanged); one run recomputes
    (bit for bit on the machine that made the store; elsewhere its test macro-F1 within 0.03:
    ten rounds of float32 drift give another model, 0.010 apart measured here with
    ``ATEN_CPU_CAPABILITY=default``); and R1's regrets of every Fashion-MNIST federation are
    replaced."""
    from playerfl_core.study.archive import archive_dir

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = RS.load()
    assert committed is not None, "stores/ladder/r1_rescore.parquet is not committed"
    table, record = committed
    regrets = RS.committed_regrets()
    todo = RS.tasks(regrets)
    assert record["runs"] == len(todo) == record["identical_to_committed"]
    assert record["test_per_client"] == RS.TEST_PER_CLIENT
    replaced = RS.r1_regrets(regrets, committed)
    held = regrets["dataset"].map(RS.has_held_out)
    assert replaced["rescored"].tolist() == held.tolist() and held.sum() > 100

    task = todo[0]
    _, fresh, _ = RS.rescore_run(task, archive_dir(RS.PROFILE))
    dataset, lr, seed, p = task
    stored = table[(table["dataset"] == dataset) & (table["algorithm"] == f"prefix_p{p}")
                   & (table["seed"] == seed)].reset_index(drop=True)  # fmt: skip
    archive, _ = RS._archive(archive_dir(RS.PROFILE))
    book = archive[(archive["dataset"] == dataset) & (archive["algorithm"] == f"prefix_p{p}")
                   & (archive["seed"] == seed) & (archive["split"] == "val")]  # fmt: skip
    val = stored[stored["split"] == "val"]
    assert np.array_equal(val["value"].to_numpy(), book["value"].to_numpy())
    if record["machine"]["key"] == machine.fingerprint(threads=1)["key"]:
        pd.testing.assert_frame_equal(fresh[COLUMNS], stored[COLUMNS])
    else:
        large = RS.run_scores(fresh)["test"].item()
        assert large == pytest.approx(RS.run_scores(stored)["test"].item(), abs=0.03)
