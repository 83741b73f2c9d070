"""The pre-registered split-rule studies through the one runner (``study.split_rule_runs``): their
sweeps through the grid, packed into the archive, then the rules table in the runner's store
format; resumable, and a study that reads only says so."""

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from playerfl_core.cli import main
from playerfl_core.fl.split_rules import RULES
from playerfl_core.study import registry, runner
from playerfl_core.study import split_rule_runs as S
from playerfl_core.study.run_spec import REPO_ROOT
from playerfl_core.study.runner import load_store
from playerfl_core.study.split_rules_table import PROBE, rules_for_sweep
from playerfl_core.study.split_sweeps import RUN, load_sweeps

COMMITTED_RULES = REPO_ROOT / "stores" / "rules" / "standard.parquet"


@pytest.fixture
def committed(monkeypatch):
    monkeypatch.delenv("PLAYERFL_STORES", raising=False)


def test_the_studies_sweep_exactly_the_seeds_of_the_committed_rules_table():
    """Heart's 50 seeds join the first test, the added development seeds are the Digits
    heterogeneity federations' alone, the confirmation's are 10-29: together, every seed the
    committed table holds and no other."""
    table = pd.read_parquet(COMMITTED_RULES, columns=RUN)
    held = set(table.drop_duplicates().itertuples(index=False, name=None))
    assert set(S._keys(registry.SPLIT_RULE_STUDIES)) == held and len(held) == 470
    first = S.sweep_seeds(registry.study("split_rule_test"))
    assert len(first["heart"]) == 50 and first["digits_alpha0.1"] == tuple(range(10))
    added = S.sweep_seeds(registry.study("split_rule_development_seeds"))
    assert "heart" not in added and added["digits_rotate"] == tuple(range(20))
    assert S.sweep_seeds(registry.study("split_rule_mean_test")) == {}


def test_a_tiny_study_computes_commits_and_resumes_computing_nothing_new(tmp_path, monkeypatch):
    study = registry.tiny("split_rule_test")
    options = runner.RunOptions(workers=1, out=tmp_path, progress=False)
    plan = S.dry_run(study, options).splitlines()
    assert len(plan) == 7 and all(line.startswith("todo  digits_noise_") for line in plan[:6])
    assert (
        "6 runs (PLayer-FL and every split), 6 to compute" in plan[-1]
        and "0 of 1 seeds held, 1 to replay" in plan[-1]
    )

    lines = []
    assert runner.run(study, options, say=lines.append) == 0
    grid = tmp_path / study.name / "grid"
    assert lines[0] == f"split_rule_test_tiny: 6 runs computed in {grid}"
    assert "6 runs new to it" in lines[1] and "of 1 of its 1 seeds" in lines[2]
    path = runner.store_file(study, tmp_path)
    assert lines[-1] == f"29 rows of 5 runs to {path}"
    table, record = load_store(path)  # its SHA-256 checked
    assert set(table["rule"]) == {*RULES, PROBE} and record["rows"] == 29
    assert record["runs"] == 5 and record["replay_same"] == [1, 1] and record["cpu_seconds"] > 0
    sweeps = load_sweeps(tmp_path / study.name / "sweeps")  # the archive, verified
    again = rules_for_sweep(sweeps, "quick", progress=False)  # `playerfl rules`' table
    pd.testing.assert_frame_equal(table, again)
    shuffled = table.sample(frac=1, random_state=0).reset_index(drop=True)
    kept, replayed = S.rules_with(sweeps, "quick", shuffled, progress=False)
    assert replayed == 0 and kept.equals(shuffled)  # a held row keeps its place

    written = path.read_bytes(), Path(f"{path}.json").read_text()
    lines = []
    assert runner.run(study, options, say=lines.append) == 0
    assert lines == [
        f"split_rule_test_tiny: 0 runs computed in {grid}",
        "split_rule_test_tiny: the rules table replayed the first epoch of 0 of its 1 seeds",
        f"{path} already holds these 5 runs: left as it is",
    ]
    assert (path.read_bytes(), Path(f"{path}.json").read_text()) == written

    lost = next((grid / "runs").glob("*prefix_p2_*.json"))
    lost.unlink()  # a run cut off before its record: the grid computes it alone
    lines = []
    assert runner.run(study, options, say=lines.append) == 0
    assert lines[0].startswith("split_rule_test_tiny: 1 runs computed")
    assert lines[-1].endswith("left as it is") and path.read_bytes() == written[0]
    plan = S.dry_run(study, options).splitlines()
    assert len(plan) == 1 and "6 runs (PLayer-FL and every split), 0 to compute" in plan[0]
    assert "1 of 1 seeds held, 0 to replay" in plan[0]

    other = replace(study, name="split_rule_other_tiny", seeds=(1,))
    monkeypatch.setattr(S, "family", lambda s: (s, other))  # a sibling not computed yet
    lines = []
    assert runner.run(study, options, say=lines.append) == 0
    assert "waits for the sweeps of split_rule_other_tiny (1 of 1 seeds)" in lines[-2]
    assert lines[-1] == "split_rule_test_tiny: not every run is finished; nothing committed yet."
    assert json.loads(Path(f"{path}.json").read_text()) == json.loads(written[1])


def test_the_mean_test_has_no_runs_and_says_so_in_one_line(committed, tmp_path, capsys):
    assert main(["study", "run", "split_rule_mean_test", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(
        "split_rule_mean_test: nothing to compute, it has no runs of its own; it reads those "
        "of split_rule_test, split_rule_follow_up"
    )
    lines = []
    study = registry.study("split_rule_mean_test")
    assert runner.run(study, runner.RunOptions(out=tmp_path), say=lines.append) == 0
    assert lines[0] == out[0] and len(lines) == 2
    copy = runner.store_file(study, tmp_path)
    assert lines[1].startswith("14960 rows of ") and lines[1].endswith(f"runs to {copy}")
    pd.testing.assert_frame_equal(load_store(copy)[0], pd.read_parquet(COMMITTED_RULES))


def test_every_run_of_a_committed_study_is_already_done(committed):
    """On the committed stores: the archive holds every sweep run, the table every seed."""
    plan = S.dry_run(registry.study("split_rule_follow_up"), runner.RunOptions())
    assert plan.startswith("split_rule_follow_up: 260 runs (PLayer-FL and every split), 0 to ")
    assert plan.endswith(
        "(with the committed archive stores/standard); the rules table "
        "stores/rules/standard.parquet: 470 of 470 seeds held, 0 to replay"
    )
