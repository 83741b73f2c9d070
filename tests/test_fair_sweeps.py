"""Fair sweeps (item 12 of ``preregistration``): every split at its own tuned learning rate, the
rate re-derived from the archive with the grid's own rule, the regrets paired with the one-rate
sweep's seeds, and the scorecard's R1 naming what moved."""

import numpy as np
import pandas as pd
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


def _regrets(ds, values, p_oracle=1):
    return pd.DataFrame({"dataset": ds, "lr": 0.0, "seed": range(len(values)), "p_rule": 1,
                         "p_oracle": p_oracle, "regret": values})  # fmt: skip


def test_the_cost_counts_only_runs_the_one_rate_archive_lacks():
    fair = {"runs": [{"run_id": "x", "cpu_seconds": 2.0}, {"run_id": "y", "cpu_seconds": 3.0}]}
    assert F.cost(fair, {"runs": [{"run_id": "x"}]}) == (1, 3.0)


def test_the_scorecards_r1_names_a_federation_whose_verdict_moves(monkeypatch):
    from playerfl_core.book.reports import every_protocol as EP
    from playerfl_core.book.reports import reproduction

    def row(federation, protocol, verdict):
        return {"quantity": EP.REGRET, "federation": federation, "protocol": protocol,
                "verdict": verdict, "applies": True}  # fmt: skip

    table = pd.DataFrame([row("heart", EP.BOOK, "within δ"), row("digits", EP.BOOK, "within δ"),
                          row("heart", "own rates", "beyond δ"),
                          row("digits", "own rates", "within δ")])  # fmt: skip
    monkeypatch.setattr(reproduction, "every_protocol", lambda: table)
    one = pd.concat([_regrets("digits", np.zeros(20)), _regrets("heart", np.zeros(20))])
    claim = reproduction._r1_with_own_rates(one, "standard", own_rates=True)
    assert claim.verdict.reason.endswith(
        ". With every split trained at its own tuned rate (2 federations, on the book's test "
        "sets; chapter 04), the verdict moves on Heart (from within δ to beyond δ)"
    )
    plain = reproduction._r1_with_own_rates(one, "quick", own_rates=False)
    assert "own tuned rate" not in plain.verdict.reason


def test_the_scorecards_r1_profile_says_what_its_regrets_were_scored_on(monkeypatch):
    """The scorecard's R1 row named its sweep's seeds but not that its Fashion-MNIST regrets
    were chosen and scored on 2,000 images per client (items 15 and 17)."""
    from playerfl_core.book.reports import reproduction
    from playerfl_core.study import val_rescore as V

    one = _regrets("fmnist", np.zeros(20))
    monkeypatch.setattr(V, "r1_family", lambda r: r.assign(rescored=True, large_val=True))
    claim = reproduction._r1_with_own_rates(one, "standard: 1", own_rates=False)
    assert claim.profile == (
        "standard: 1; Fashion-MNIST regrets on 2,000 validation and test images per client"
    )
    monkeypatch.setattr(V, "r1_family", lambda r: r.assign(rescored=False, large_val=False))
    claim = reproduction._r1_with_own_rates(one, "standard: 1", own_rates=False)
    assert claim.profile == "standard: 1"
