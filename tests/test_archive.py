"""The committed results archive: packs, verifies itself, and re-computes exactly."""

import json
from pathlib import Path

import pandas as pd
import pytest

from data_prep.registry import is_registered
from playerfl_core.algorithms import ALGORITHMS
from playerfl_core.archive import (
    ArchiveError,
    load_archive,
    pack,
    recompute_sample,
    spec_of,
    unpack,
)
from playerfl_core.experiments import (
    Store,
    default_grid,
    run_grid,
    split_algorithms,
    widened_lr,
)
from playerfl_core.results import COLUMNS

TINY = dict(seeds=[0, 1], lrs=[1e-2], rounds=2, workers=1, progress=False)


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    grid = run_grid("heart", "local,fedavg", "quick", store=root / "store", **TINY)
    out = pack(Store(root / "store"), "quick", root / "stores" / "quick", command="test")
    return grid, out


def test_pack_round_trip_loads_the_same_grid(packed, tmp_path):
    grid, out = packed
    table, manifest = load_archive(out)
    assert manifest["profile"] == "quick" and manifest["code"] and manifest["versions"]["torch"]
    assert len(manifest["runs"]) == 4 and table["run_id"].nunique() == 4
    assert unpack(out, Store(tmp_path / "again")) == 4
    again = run_grid(
        "heart", "local,fedavg", "quick", store=tmp_path / "again", compute=False, **TINY
    )
    key = [*COLUMNS]
    pd.testing.assert_frame_equal(
        grid.table.sort_values(key).reset_index(drop=True),
        again.table.sort_values(key).reset_index(drop=True),
        check_exact=True,
    )


def test_an_empty_store_starts_from_the_committed_archive(packed, tmp_path, monkeypatch):
    _, out = packed
    monkeypatch.setenv("PLAYERFL_STORES", str(out.parent))
    grid = run_grid("heart", "local,fedavg", "quick", store=tmp_path / "s", compute=False, **TINY)
    assert grid.computed == 0 and len(grid.table)


def test_a_store_written_by_something_else_first_still_gets_the_archive(
    packed, tmp_path, monkeypatch
):
    """A fresh clone's store may already hold another chapter's runs when a grid first looks
    at it: the archive's runs are added all the same, and nothing is recomputed."""
    from playerfl_core.run_store import RunSpec, execute

    grid, out = packed
    monkeypatch.setenv("PLAYERFL_STORES", str(out.parent))
    other = RunSpec("heart", "local", 1e-2, 5, rounds=2)  # written without any grid
    assert execute(other, str(tmp_path))["status"] == "ok"
    again = run_grid("heart", "local,fedavg", "quick", store=tmp_path, **TINY)
    assert again.computed == 0 and len(again.table) == len(grid.table)


def test_an_edited_value_is_caught_and_named(packed, tmp_path):
    _, out = packed
    copy = tmp_path / "a"
    copy.mkdir()
    (copy / "manifest.json").write_text((out / "manifest.json").read_text())
    table = pd.read_parquet(out / "runs.parquet")
    victim = str(table["run_id"].iloc[7])
    table.loc[7, "value"] += 1e-12
    table.to_parquet(copy / "runs.parquet", index=False)
    with pytest.raises(ArchiveError, match=victim):
        load_archive(copy)


def test_missing_files_say_how_to_restore(tmp_path):
    with pytest.raises(ArchiveError, match="runs.parquet, manifest.json missing"):
        load_archive(tmp_path)


def test_recompute_sample_is_identical_and_catches_a_consistent_forgery(packed, tmp_path):
    _, out = packed
    report = recompute_sample(out, n=2, seed=0)
    assert report["identical"].all() and report["same_spec"].all()
    # A forged archive whose manifest agrees with its rows still fails re-computation.
    from playerfl_core.archive import table_digest

    table = pd.read_parquet(out / "runs.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    table["value"] = table["value"] * (1 + 1e-9)
    for entry in manifest["runs"]:
        rows = table[table["run_id"] == entry["run_id"]].astype(
            {c: str for c in ("dataset", "algorithm")}
        )
        entry["sha256"] = table_digest(rows)
    forged = tmp_path / "forged"
    forged.mkdir()
    table.to_parquet(forged / "runs.parquet", index=False)
    (forged / "manifest.json").write_text(json.dumps(manifest))
    report = recompute_sample(forged, n=2, seed=0)
    assert not report["identical"].any() and (report["max_abs_diff"] > 0).all()


def test_widened_lr_repeats_the_edge_ratio():
    assert widened_lr(3e-2, [3e-2, 1e-2, 3e-3]) == pytest.approx(9e-2)
    assert widened_lr(3e-3, [3e-2, 1e-2, 3e-3]) == pytest.approx(9e-4)
    assert widened_lr(1e-2, [3e-2, 1e-2, 3e-3]) is None
    assert widened_lr(float("nan"), [3e-2, 1e-2]) is None
    assert widened_lr(1e-2, [1e-2]) is None


def test_tuning_widens_the_grid_at_an_edge_and_says_so(tmp_path):
    # Rates far too small for Heart: the best one is always the largest tried, so tuning walks up.
    grid = run_grid(
        "heart",
        "fedavg",
        "standard",
        seeds=[0],
        lrs=[1e-4, 3e-5],
        tune_seeds=[100],
        rounds=2,
        workers=1,
        progress=False,
        store=tmp_path,
    )
    tried = sorted(grid.tuning["lr"])
    widen = default_grid("heart", "standard")["widen"]
    assert len(tried) == 2 + widen and grid.tuning["added"].sum() == widen
    assert tried[-1] == pytest.approx(1e-4 * (1e-4 / 3e-5) ** widen, rel=1e-2)
    assert grid.note().count("WIDENED: heart/fedavg") == widen
    assert grid.lr_at_edges().loc["heart", "widened"] == widen
    # Loading the stored grid replays the widening without computing anything.
    loaded = run_grid(
        "heart",
        "fedavg",
        "standard",
        seeds=[0],
        lrs=[1e-4, 3e-5],
        tune_seeds=[100],
        rounds=2,
        workers=1,
        progress=False,
        store=tmp_path,
        compute=False,
    )
    assert loaded.chosen["lr"].tolist() == grid.chosen["lr"].tolist()


COMMITTED = Path(__file__).resolve().parents[1] / "stores"
"""The committed archives (tests otherwise see none: conftest.no_committed_archives)."""


def test_committed_quick_archive_recomputes_exactly():
    """Chapter 06's quick grid, committed so that a fresh clone does not recompute it."""
    table, manifest = load_archive(COMMITTED / "quick")
    assert manifest["profile"] == "quick"
    assert set(table["run_id"]) == {e["run_id"] for e in manifest["runs"] if e["status"] == "ok"}
    report = recompute_sample(COMMITTED / "quick", n=2, seed=20261130, max_seconds=20)
    assert report["same_spec"].all() and report["identical"].all(), report


def test_committed_standard_archive_is_complete_and_recomputes_exactly():
    """The book's standard-profile evidence: every claimed run is there and re-computes."""
    path = COMMITTED / "standard"
    table, manifest = load_archive(path)
    specs = [spec_of(e) for e in manifest["runs"]]
    assert manifest["profile"] == "standard"
    for dataset in {s.dataset for s in specs}:
        runs = {(s.algorithm, s.seed) for s in specs if s.dataset == dataset}
        splits = split_algorithms(dataset, "standard")
        present = {a for a, _ in runs}
        if is_registered(dataset):  # a grid dataset: every evaluation seed of what it has,
            claimed = set(default_grid(dataset, "standard")["seeds"])  # all algorithms if compared
            wanted = {*ALGORITHMS, *splits} if len(present) > 1 else present
        else:  # a heterogeneity federation: every split on every seed it was run on
            wanted, claimed = {"playerfl", *splits}, {seed for _, seed in runs}
        for algorithm in wanted:
            seeds = {seed for a, seed in runs if a == algorithm}
            assert claimed <= seeds, (dataset, algorithm, sorted(claimed - seeds))
    assert set(table["run_id"]) == {e["run_id"] for e in manifest["runs"] if e["status"] == "ok"}
    report = recompute_sample(path, n=3, seed=20261129, max_seconds=20)
    assert report["same_spec"].all(), report
    assert report["identical"].all(), report
