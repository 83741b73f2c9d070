"""Fair sweeps (item 12 of ``preregistration``): every split at its own tuned learning rate, the
rate re-derived from the archive with the grid's own rule, the regrets paired with the one-rate
sweep's seeds, and the scorecard's R1 naming what moved."""

import pytest

from playerfl_core.study import fair_sweeps as F
from playerfl_core.study.archive import load_archive, pack
from playerfl_core.study.grid import run_grid
from playerfl_core.study.grid_plan import split_algorithms
from playerfl_core.study.run_store import Store

SEEDS = (0, 1)


@pytest.fixture(scope="module")
def heart_fair(tmp_path_factory):
    """A small fair grid on Heart (three rates, one of the declared tuning seeds), packed as the
    study packs it: the grid's result and the archive's (table, manifest)."""
    root = tmp_path_factory.mktemp("fair")
    result = run_grid("heart", split_algorithms("heart", "standard"), "standard", seeds=SEEDS,
                      lrs=(0.01, 0.03, 0.1), tune_seeds=(100,), store=root / "store", workers=1,
                      progress=False)  # fmt: skip
    out = pack(Store(root / "store"), "standard", root / "archive", "test",
               run_ids=set(result.status["run_id"]))  # fmt: skip
    return result, load_archive(out)


def test_each_split_gets_the_rate_the_grid_chose(heart_fair):
    result, (table, manifest) = heart_fair
    rates = F.own_rates(table, manifest)
    chosen = result.chosen.assign(p=result.chosen["algorithm"].str.removeprefix("prefix_p"))
    expected = dict(zip(chosen["p"].astype(int), chosen["lr"], strict=True))
    assert dict(zip(rates["p"], rates["lr"], strict=True)) == expected
    assert len(set(rates["lr"])) >= 1 and set(rates["dataset"]) == {"heart"}


def test_the_archive_holds_only_the_runs_the_grid_used(heart_fair):
    result, (table, manifest) = heart_fair
    assert {e["run_id"] for e in manifest["runs"]} == set(result.status["run_id"])


def test_a_rate_with_a_failed_tuning_run_is_ineligible(heart_fair):
    _, (table, manifest) = heart_fair
    rates = F.own_rates(table, manifest)
    p, lr = int(rates["p"].iloc[0]), float(rates["lr"].iloc[0])
    victim = next(e for e in manifest["runs"]
                  if (e["algorithm"], e["lr"], e["seed"]) == (f"prefix_p{p}", lr, 100))  # fmt: skip
    failed = {**manifest, "runs": [dict(e, status="diverged") if e is victim else e
                                   for e in manifest["runs"]]}  # fmt: skip
    moved = F.own_rates(table, failed)
    assert float(moved.set_index("p").loc[p, "lr"]) != lr


def test_own_rate_scores_pair_with_the_one_rate_sweep(heart_fair):
    _, (table, manifest) = heart_fair
    rates = F.own_rates(table, manifest)
    scores = F.own_rate_scores(table, rates, seeds={"heart": SEEDS})
    assert set(scores["lr"]) == {F.sweep_lr("heart")}  # keyed like the one-rate sweep
    own = dict(zip(rates["p"], rates["lr"], strict=True))
    assert all(own[p] == lr for p, lr in zip(scores["p"], scores["lr_own"], strict=True))
    assert len(scores) == len(rates) * len(SEEDS)
    with pytest.raises(ValueError, match="seeds stored"):
        F.own_rate_scores(table, rates, seeds={"heart": (0, 1, 2)})


def test_the_cost_counts_only_runs_the_one_rate_archive_lacks():
    fair = {"runs": [{"run_id": "x", "cpu_seconds": 2.0}, {"run_id": "y", "cpu_seconds": 3.0}]}
    assert F.cost(fair, {"runs": [{"run_id": "x"}]}) == (1, 3.0)
