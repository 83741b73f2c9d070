"""The scale ladder (``study.rungs``): the paper-size first epochs, the middle rung and the
evaluation rung; how a rung's runs are computed, collected and read, and the committed stores."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from playerfl_core.measure.score_noise import client_score_noise, regret_noise
from playerfl_core.study import machine, registry, runner
from playerfl_core.study import rungs as R
from playerfl_core.study.split_scores import first_epoch_sensitivities, rule_splits
from playerfl_core.study.verification import compare_run


def test_the_rung_trains_at_its_declared_sizes():
    """1,000 images per client in 64/16/20 splits, width 0.5, 20 rounds, the book's one sweep
    rate 0.003 and batch 32 (the quick profile's)."""
    cfg = R.MIDDLE_RUNG.config("fmnist_rotate", seed=0)
    assert (cfg.width, cfg.rounds, cfg.lr, cfg.batch_size) == (0.5, 20, 3e-3, 32)
    data = R.federation(R.MIDDLE_RUNG, "fmnist_rotate", 0)
    assert [(c.n_train, len(c.y_val), len(c.y_test)) for c in data.clients] == [(640, 160, 200)] * 5
    assert R.n_splits(R.MIDDLE_RUNG, "fmnist") == 6
    assert R.rung_sizes()["middle"].startswith("middle rung: 1,000 images per client, width 0.5")


def test_a_rung_is_collected_only_when_complete_and_never_recomputes_a_kept_run(
    tmp_path, monkeypatch
):
    rung = replace(R.MIDDLE_RUNG, loader=(("samples_per_client", 60),),
                   training=(("width", R.MIDDLE_WIDTH), ("rounds", 1)))  # fmt: skip
    tasks = R.study_tasks(rung, ["fmnist"], [0])
    with pytest.raises(ValueError, match="6 of the middle_rung study's 6 runs are not computed"):
        runner.collect(rung, tmp_path, tasks)
    for task in tasks:
        task, table, record = R.run_one(rung, task)
        runner.keep(tmp_path, R.task_name(task), table, record)
    table, totals = runner.collect(rung, tmp_path, tasks)
    assert totals["runs"] == 6 and not totals["diverged"] and totals["cpu_seconds"] > 0
    assert table["algorithm"].nunique() == 6 and set(table["round"]) == {0}
    reg = R.regrets(table)
    assert len(reg) == 1 and 0 <= reg["p_rule"].iloc[0] <= 5

    def no_run(study, task, device):
        raise AssertionError(f"recomputed a kept run: {task}")

    monkeypatch.setattr(R, "run_one", no_run)
    options = runner.RunOptions(workers=1, progress=False)
    assert runner.compute(rung, options, tmp_path, tasks) == 0


@pytest.mark.parametrize(
    "rung", [R.MIDDLE_RUNG, R.EVAL_RUNG], ids=["middle rung", "evaluation rung"]
)
def test_a_committed_rung_is_complete_and_its_first_round_recomputes(rung, monkeypatch):
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = R.load(rung)  # checks the SHA-256 of its record
    assert committed is not None, f"stores/{rung.store} is not committed"
    table, record = committed
    n_splits = R.n_splits(rung, rung.federations[0])
    assert (record["datasets"], record["seeds"]) == (list(rung.federations), list(rung.seeds))
    assert record["runs"] == len(rung.federations) * len(rung.seeds) * n_splits
    assert not record["diverged"]
    runs = table.groupby(["dataset", "seed"])["algorithm"].nunique()
    assert len(runs) == record["runs"] // n_splits and (runs == n_splits).all()
    assert table["round"].max() == rung.config(rung.federations[0], seed=0).rounds - 1
    R.regrets(table)  # raises unless each run's units are in depth order (the recorded split)
    task = ("fmnist_rotate", 3, 2)
    _, fresh, _ = R.run_one(replace(rung, training=(*rung.training, ("rounds", 1))), task)
    run = table[(table["dataset"] == task[0]) & (table["seed"] == task[1])]
    stored = run[(run["algorithm"] == f"prefix_p{task[2]}") & (run["round"] == 0)]
    diff = compare_run(R.sort_rows(fresh), stored)
    if record["machine"]["key"] == machine.fingerprint(threads=1)["key"]:
        assert diff["identical"], diff
    else:  # another machine: last bits differ, and on 200 test images one flipped image moves a
        # score by 0.005, so one run's scores need not agree to 1 % (verification judges a sample
        # of runs); what the rule reads, the first epoch's sensitivities (squared products, which
        # amplify last bits: 2.1 % on average with another ATen kernel set, measured here), must
        # agree to 5 %, and the rule's split exactly
        read = [m for m in stored["metric"].unique() if m.startswith("sensitivity/")]
        part = compare_run(*(t[t["metric"].isin(read)] for t in (R.sort_rows(fresh), stored)))
        assert diff["same_structure"] and part["round0_rel"] <= 0.05, (diff, part)
        split = [t.loc[t["metric"] == "rule_split_p", "value"].tolist() for t in (fresh, stored)]
        assert split[0] == split[1], split


def test_r2s_scope_says_where_the_deciding_federation_was_run_beyond_the_books_sizes(
    monkeypatch, tmp_path
):
    from playerfl_core.book.reports.rule_scope import scale_text

    monkeypatch.setenv("PLAYERFL_STORES", str(tmp_path))  # no rung committed: nothing to say
    assert scale_text() == ""
    monkeypatch.delenv("PLAYERFL_STORES")  # the committed stores
    text = scale_text()
    assert text.startswith(
        "on Fashion-MNIST, rotated, the paper's rule's mean regret is 0.168 on seeds 0–9 with "
        "2,000 validation and 2,000 test images per client, and "
    ), text
    assert "on seeds 0–4 when each client trains on 1,000 images with the CNN at half " in text
    assert text.endswith("(too few seeds for a test); δ = 0.02"), text


def test_the_committed_noise_measurement_is_complete_and_recomputes(monkeypatch):
    """The evaluation rung's declared measurement: both federations, every client, at 80 and
    2,000 test images; one federation's recomputes (bit for bit on the machine that made it;
    elsewhere a flipped prediction moves a standard error a little)."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = runner.committed(R.noise_path())
    assert committed is not None, "stores/ladder/eval_noise.parquet is not committed"
    noise, record = committed
    assert set(noise["dataset"]) == set(R.DATASETS) and set(noise["n"]) == {80, 2000}
    assert (noise.groupby(["dataset", "n"])["client"].nunique() == 5).all()
    stored = noise[noise["dataset"] == "fmnist_rotate"].reset_index(drop=True)
    fresh = client_score_noise(
        "fmnist_rotate", R.NOISE_SEED, int(stored["p"].iloc[0]), R.EVAL_PER_CLIENT,
        (R.BOOK_TEST_IMAGES, R.EVAL_PER_CLIENT), R.NOISE_DRAWS,
    )  # fmt: skip
    columns = ["client", "weight", "n", "accuracy_se", "binomial_se", "macro_f1_se"]
    if record["machine"]["key"] == machine.fingerprint(threads=1)["key"]:
        pd.testing.assert_frame_equal(fresh[columns], stored[columns])
    else:
        assert np.allclose(fresh["macro_f1_se"], stored["macro_f1_se"], rtol=0.15)


def test_the_committed_regret_noise_is_complete_and_recomputes(monkeypatch):
    """The regret's noise: both federations at 80 and 2,000 test images, between the rule's
    split and the rung's most frequent oracle split; one federation's recomputes."""

    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = runner.committed(R.regret_noise_path())
    assert committed is not None, "stores/ladder/eval_regret_noise.parquet is not committed"
    noise, record = committed
    assert set(noise["dataset"]) == set(R.DATASETS) and set(noise["n"]) == {80, 2000}
    oracle = (
        R.regrets(R.load("eval_rung")[0])
        .groupby("dataset")["p_oracle"]
        .agg(lambda p: p.mode().min())
    )
    assert (noise.set_index("dataset")["p_oracle"] == oracle.reindex(noise["dataset"])).all()
    assert (noise["regret_se"] <= noise["unpaired_se"]).all()
    stored = noise[noise["dataset"] == "fmnist_rotate"].reset_index(drop=True)
    fresh = regret_noise(
        "fmnist_rotate", R.NOISE_SEED, int(stored["p_rule"].iloc[0]),
        int(stored["p_oracle"].iloc[0]), R.EVAL_PER_CLIENT,
        (R.BOOK_TEST_IMAGES, R.EVAL_PER_CLIENT), R.NOISE_DRAWS,
    )  # fmt: skip
    columns = ["n", "regret_se", "unpaired_se"]
    if record["machine"]["key"] == machine.fingerprint(threads=1)["key"]:
        pd.testing.assert_frame_equal(fresh[columns], stored[columns])
    else:
        assert np.allclose(fresh["regret_se"], stored["regret_se"], rtol=0.15)


# -- the paper-size first epochs ------------------------------------------------------------------
def _first_epochs(work, datasets, seeds, profile, workers):
    """The ladder's first epochs through the study runner (what ``playerfl study run`` does)."""
    study = replace(
        registry.study("scale_ladder"), federations=datasets, seeds=seeds, profile=profile
    )
    runner.compute(study, runner.RunOptions(workers=workers, progress=False), work)
    return runner.collect(study, work)


def test_compute_is_the_first_epoch_of_each_seed_whatever_the_workers(tmp_path):
    """Each (federation, seed) is one task; the table is the same as computing the seeds one by
    one in this process, and the CPU-seconds are counted."""
    table, totals = _first_epochs(tmp_path, ("digits",), (0, 1), "quick", workers=2)
    with machine.one_thread():
        direct = first_epoch_sensitivities("digits", [0, 1], "quick", progress=False)
    pd.testing.assert_frame_equal(
        table, direct.sort_values(["dataset", "seed", "client", "depth"], ignore_index=True)
    )
    assert totals["cpu_seconds"] > 0


@pytest.mark.slow
def test_the_committed_paper_size_choice_is_reproduced_for_one_seed(monkeypatch, tmp_path):
    """One seed of the committed paper-size first epochs, recomputed here: the rule's split is
    the same (its numbers may drift in their last bits on another CPU; the split may not)."""
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)  # the committed stores
    committed = R.load("scale_ladder")
    assert committed is not None, "stores/ladder is not committed"
    table, _ = committed
    seed0 = table[(table["dataset"] == "fmnist") & (table["seed"] == 0)]
    again, _ = _first_epochs(tmp_path, ("fmnist",), (0,), R.PAPER, workers=1)
    split = rule_splits(seed0).set_index("variant")["p_rule"]
    assert rule_splits(again).set_index("variant")["p_rule"].equals(split)


def test_only_the_evaluation_rung_measures_noise_once_committed(tmp_path, monkeypatch):
    """The runner calls ``after_commit`` for every study of this module; only the evaluation
    rung has noise to measure."""
    monkeypatch.setenv("PLAYERFL_STORES", str(tmp_path))
    said = []
    for rung in (R.MIDDLE_RUNG, R.SCALE_LADDER):
        R.after_commit(rung, said.append)
    assert said == [] and not any(tmp_path.iterdir())


def test_a_rung_of_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="'top'; choose one of: eval_rung, middle_rung, scale_"):
        R.load("top")
