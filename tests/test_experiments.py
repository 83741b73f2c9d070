"""Reliability of the experiment grid: resume after a kill, divergence, odd clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from data_prep import ClientData, FederatedData
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import RunConfig, run_federated
from playerfl_core.stats.metrics import run_scores, summarize
from playerfl_core.stats.results import RUN_KEYS
from playerfl_core.study.experiments import (
    DIVERGED,
    OK,
    MissingResultsError,
    RunSpec,
    Store,
    default_store,
    execute,
    run_grid,
)

GRID = dict(
    datasets="heart",
    algorithms="local,fedavg,fedprox,playerfl",
    rounds=2,
    lrs=[1e-2, 3e-2],
    seeds=[0, 1, 2],
    workers=1,
    progress=False,
)
N_RUNS = 4 * (2 + 2)  # per algorithm: 2 LRs on tuning seed 0, then seeds 1 and 2


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    keys = [*RUN_KEYS, "client", "round", "split", "metric"]
    return table.sort_values(keys, ignore_index=True)


def test_default_store_is_under_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("PLAYERFL_RESULTS", raising=False)
    root = Path(__file__).resolve().parents[1]
    assert default_store("quick") == root / "results" / "quick"
    monkeypatch.setenv("PLAYERFL_RESULTS", str(tmp_path))
    assert default_store("paper") == tmp_path / "paper"


@pytest.mark.slow  # a grid killed and resumed: 1 min
def test_resume_after_kill_recomputes_nothing_and_matches_uninterrupted(tmp_path):
    killed_store = tmp_path / "killed"
    script = textwrap.dedent(f"""
        from playerfl_core.study.experiments import run_grid
        if __name__ == "__main__":
            run_grid(store={str(killed_store)!r}, **{GRID!r})
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    runs = killed_store / "runs"
    deadline = time.time() + 45
    try:
        while time.time() < deadline and proc.poll() is None:
            if runs.exists() and len(list(runs.glob("*.json"))) >= 5:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"grid ended before it could be killed: {proc.stderr.read()}"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    before = {f.name: f.stat().st_mtime_ns for f in runs.glob("*.json")}
    assert 5 <= len(before) < N_RUNS

    resumed = run_grid(store=killed_store, **GRID)
    assert resumed.computed == N_RUNS - len(before)
    for name, mtime in before.items():  # finished runs were not rewritten
        assert (runs / name).stat().st_mtime_ns == mtime
    assert len(list(runs.glob("*.json"))) == N_RUNS
    assert len(list(runs.glob("*.csv"))) == N_RUNS

    again = run_grid(store=killed_store, **GRID)
    assert again.computed == 0

    whole = run_grid(store=tmp_path / "whole", **GRID)
    assert whole.computed == N_RUNS
    keys = [*RUN_KEYS, "client", "round", "split", "metric"]
    assert not resumed.table.duplicated(keys).any()
    pd.testing.assert_frame_equal(_sorted(resumed.table), _sorted(whole.table))
    pd.testing.assert_frame_equal(resumed.chosen, whole.chosen)
    # the tuning seed is reused as evaluation seed 0: 3 seeds per algorithm
    assert resumed.table.groupby("algorithm")["seed"].nunique().eq(3).all()


def test_half_written_run_counts_as_unfinished(tmp_path):
    spec = RunSpec("heart", "local", 1e-2, 0, rounds=1)
    store = Store(tmp_path)
    store.runs.mkdir(parents=True)
    (store.runs / f"{spec.run_id}.csv").write_text("garbage from a killed write")
    assert store.record(spec) is None  # no manifest: not finished
    rec = execute(spec, str(tmp_path))
    assert rec["status"] == OK and store.record(spec)["status"] == OK
    assert len(store.table(spec)) > 0


def test_diverging_run_is_recorded_and_excluded_visibly(tmp_path):
    grid = dict(rounds=2, lrs=[1e-2, 1e12], seeds=[0, 1], store=tmp_path, workers=1)
    result = run_grid("heart", "local,fedavg", progress=False, **grid)
    failed = result.failures
    assert set(failed["status"]) == {DIVERGED}
    assert set(failed["lr"]) == {1e12} and len(failed) == 2
    assert "nan" in failed["error"].iloc[0].lower()
    assert "EXCLUDED (diverged" in result.note()
    assert (result.table["lr"] == 1e-2).all()  # the diverged LR was not chosen, not averaged
    assert not result.tuning.loc[result.tuning["lr"] == 1e12, "chosen"].any()
    assert np.isinf(result.tuning.loc[result.tuning["lr"] == 1e12, "score"]).all()
    edges = result.lr_at_edges().loc["heart"]
    assert edges["at smallest"] == 2 and edges["at largest"] == 0
    s = summarize(result.table, "macro_f1")
    assert s["n_seeds"].eq(2).all() and np.isfinite(s["median"]).all()
    # a diverged run is final: a restart does not retry it
    assert run_grid("heart", "local,fedavg", progress=False, **grid).computed == 0


def test_all_learning_rates_diverging_excludes_the_algorithm(tmp_path):
    result = run_grid(
        "heart",
        "fedavg",
        rounds=1,
        lrs=[1e11, 1e12],
        seeds=[0],
        store=tmp_path,
        workers=1,
        progress=False,
    )
    assert result.table.empty
    assert "every learning rate failed" in result.note()


def test_compute_false_names_the_missing_runs_and_the_command(tmp_path):
    with pytest.raises(MissingResultsError, match="playerfl grid --datasets heart"):
        run_grid(
            "heart",
            "local",
            rounds=1,
            lrs=[1e-2],
            seeds=[0],
            store=tmp_path,
            compute=False,
            progress=False,
        )


def test_crashed_run_is_retried_on_restart(tmp_path):
    spec = RunSpec("heart", "local", 1e-2, 0, rounds=1)
    store = Store(tmp_path)
    store.write(spec, None, {"run_id": spec.run_id, "status": "error", "error": "boom"})
    result = run_grid(
        "heart", "local", rounds=1, lrs=[1e-2], seeds=[0], store=tmp_path, workers=1, progress=False
    )
    assert result.computed == 1 and result.failures.empty


def test_cli_grid_writes_table_and_status(tmp_path):
    from playerfl_core.cli import main

    out = tmp_path / "t.csv"
    rc = main(
        [
            "grid",
            "--datasets",
            "heart",
            "--algorithms",
            "local,fedavg",
            "--rounds",
            "1",
            "--seeds",
            "0",
            "--lrs",
            "0.01",
            "--store",
            str(tmp_path / "s"),
            "--workers",
            "1",
            "--out",
            str(out),
        ]
    )
    assert rc == 0 and out.exists()
    assert set(pd.read_csv(out)["algorithm"]) == {"local", "fedavg"}
    manifests = list((tmp_path / "s" / "runs").glob("*.json"))
    assert {json.loads(m.read_text())["status"] for m in manifests} == {OK}


def _single_class_federation() -> FederatedData:
    g = torch.Generator().manual_seed(0)

    def client(name, n, test_labels):
        x = {s: torch.randn(k, 10, generator=g) for s, k in (("tr", n), ("va", 20), ("te", 15))}
        return ClientData(
            name,
            x["tr"],
            torch.randint(0, 3, (n,), generator=g),
            x["va"],
            torch.randint(0, 3, (20,), generator=g),
            x["te"],
            test_labels,
        )

    return FederatedData(
        name="toy",
        clients=[
            client("mixed", 60, torch.randint(0, 3, (15,), generator=g)),
            client("one_class", 40, torch.full((15,), 2)),
        ],
        num_classes=3,
        input_shape=(10,),
        model="mlp",
        class_names=["a", "b", "c"],
    )


def test_single_class_test_split_gives_defined_macro_f1():
    run = run_federated(
        _single_class_federation(),
        get_algorithm("fedavg"),
        RunConfig(rounds=3, lr=1e-2, batch_size=16, progress=False),
    )
    t = run.table()
    one = t[(t["client"] == 1) & (t["split"] == "test")]
    f1 = one[one["metric"] == "macro_f1"].set_index("round")["value"]
    acc = one[one["metric"] == "accuracy"].set_index("round")["value"]
    assert np.isfinite(f1).all() and ((f1 >= 0) & (f1 <= 1)).all()
    # documented form: F1 of the true class, 2a/(1+a), averaged with an F1 of 0 for each of
    # the m wrongly predicted classes present, m in 0..2
    for rnd in f1.index:
        a, f = acc[rnd], f1[rnd]
        assert any(abs(f * (1 + m) - 2 * a / (1 + a)) < 1e-6 for m in range(3)), (a, f)
    headline = run_scores(t, "macro_f1")
    assert np.isfinite(headline["value"]).all()


def test_stale_runs_are_flagged_and_recomputed_on_request(tmp_path):
    kw = dict(rounds=1, lrs=[1e-2], seeds=[0], store=tmp_path, workers=1, progress=False)
    run_grid("heart", "local", **kw)
    manifest = next((tmp_path / "runs").glob("*.json"))
    rec = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**rec, "code": "older-code"}))
    kept = run_grid("heart", "local", **kw)
    assert kept.computed == 0 and kept.status["stale_code"].all()
    assert "stale_code" in kept.note()
    redone = run_grid("heart", "local", recompute_stale=True, **kw)
    assert redone.computed == 1 and not redone.status["stale_code"].any()


def test_runs_of_a_version_checked_to_be_the_same_are_not_recomputed(tmp_path, monkeypatch):
    """The CI failure of stop 31: the quick archive's runs came from a version of the code
    checked bit for bit against today's, yet chapter 06's ``recompute_stale`` recomputed them
    all (on CI's CPU, so every number moved)."""
    from playerfl_core.study.run_store import code_fingerprint

    stores = tmp_path / "stores"
    stores.mkdir()
    monkeypatch.setenv("PLAYERFL_STORES", str(stores))
    kw = dict(rounds=1, lrs=[1e-2], seeds=[0], store=tmp_path / "s", workers=1, progress=False)
    run_grid("heart", "local", **kw)
    manifest = next((tmp_path / "s" / "runs").glob("*.json"))
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "code": "older-code"}))
    check = {"earlier": "older-code", "current": code_fingerprint(), "identical": True}
    (stores / "code_versions.json").write_text(json.dumps({"checks": [check]}))
    kept = run_grid("heart", "local", recompute_stale=True, **kw)
    assert kept.computed == 0 and not kept.status["stale_code"].any()
    changed = {**check, "identical": False}
    (stores / "code_versions.json").write_text(json.dumps({"checks": [changed]}))
    assert run_grid("heart", "local", recompute_stale=True, **kw).computed == 1


def test_grid_plan_counts_tuning_then_evaluation_runs(tmp_path):
    """The plan before any run: every tuning run can start; evaluation waits for the rate,
    and the tuning seed that is also an evaluation seed is not counted twice."""
    from playerfl_core.study.grid_plan import GridPlan

    plan = GridPlan(Store(tmp_path), "quick", rounds=1)
    settings = {"lrs": (1e-2, 1e-3), "seeds": (0, 1, 2), "tune_seeds": (0,), "widen": 0}
    plan.add_dataset("heart", ["local", "fedavg"], settings, fixed_lr={("heart", "fedavg"): 0.05})
    plan.resolve()
    ready, n_left = plan.todo()
    tune = [sp for sp in ready if sp.algorithm == "local"]
    assert sorted(sp.lr for sp in tune) == [1e-3, 1e-2] and {sp.seed for sp in tune} == {0}
    fixed = [sp for sp in ready if sp.algorithm == "fedavg"]
    assert [(sp.lr, sp.seed) for sp in fixed] == [(0.05, 0), (0.05, 1), (0.05, 2)]
    assert n_left == 2 + 2 + 3  # local: 2 tuning runs + seeds 1, 2 later; fedavg: 3 seeds
    assert plan.pairs[("heart", "local")].lr is None
    assert plan.undecided_tuning() == tune
