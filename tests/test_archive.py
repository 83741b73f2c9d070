"""The committed results archive: packs, verifies itself, and re-computes exactly."""

import json
from pathlib import Path

import pandas as pd
import pytest

from data_prep.registry import is_registered
from playerfl_core.fl.algorithms import ALGORITHMS
from playerfl_core.stats.results import COLUMNS
from playerfl_core.study import machine
from playerfl_core.study.archive import (
    ArchiveError,
    load_archive,
    pack,
    recompute_sample,
    spec_of,
    unpack,
    verify,
)
from playerfl_core.study.experiments import (
    Store,
    default_grid,
    run_grid,
    split_algorithms,
    widened_lr,
)
from playerfl_core.study.verification import BITWISE, STATISTICAL

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
    from playerfl_core.study.run_store import RunSpec, execute

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


def test_a_sealed_archive_loads_without_per_run_checksums_and_any_change_breaks_the_seal(
    packed, tmp_path, monkeypatch
):
    """The seal lets a load skip the per-run checksums; a change to the table's bytes or to a
    run's recorded checksum breaks it, and then every run is checked and the damaged one named."""
    import playerfl_core.study.archive as archive

    _, out = packed
    assert json.loads((out / "manifest.json").read_text())["seal"]
    calls = []
    monkeypatch.setattr(archive, "table_digest", lambda t: calls.append(1) or "x")
    load_archive(out)  # sealed: no checksum per run (they would all mismatch "x")
    assert calls == []
    monkeypatch.undo()
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["runs"][1]["sha256"] = "0" * 64  # a recorded checksum edited, rows untouched
    copy = tmp_path / "b"
    copy.mkdir()
    (copy / "runs.parquet").write_bytes((out / "runs.parquet").read_bytes())
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match=manifest["runs"][1]["run_id"]):
        load_archive(copy)


def test_missing_files_say_how_to_restore(tmp_path):
    with pytest.raises(ArchiveError, match="runs.parquet, manifest.json missing"):
        load_archive(tmp_path)


def test_recompute_sample_is_identical_and_catches_a_consistent_forgery(packed, tmp_path):
    _, out = packed
    report = recompute_sample(out, n=2, seed=0)
    assert report["identical"].all() and report["same_spec"].all()
    # A forged archive whose manifest agrees with its rows still fails re-computation.
    from playerfl_core.study.archive import table_digest

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


def expected_case(report) -> str:
    """What this machine may promise: bit for bit for runs it computed itself (same machine
    key with one thread), statistical consistency for runs from any other machine."""
    here = machine.fingerprint(threads=1)["key"]
    cases = {BITWISE if key == here else STATISTICAL for key in report["stored_on"]}
    return cases.pop() if len(cases) == 1 else "mixed"


def test_committed_quick_archive_recomputes():
    """Chapter 06's quick grid, committed so that a fresh clone does not recompute it."""
    table, manifest = load_archive(COMMITTED / "quick")
    assert manifest["profile"] == "quick"
    assert set(table["run_id"]) == {e["run_id"] for e in manifest["runs"] if e["status"] == "ok"}
    found = verify(COMMITTED / "quick", n=6, seed=20261130, max_seconds=20)
    assert found.case == expected_case(found.report), found.report
    assert found.consistent, found.summary()


def test_committed_standard_archive_is_complete_and_recomputes():
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
    found = verify(path, n=8, seed=20261129, max_seconds=20)
    assert found.case == expected_case(found.report), found.report
    assert found.consistent, found.summary()


def test_committed_fair_archive_is_complete_and_recomputes():
    """The fair sweep (item 12): for each federation it holds, every split's tuning runs and its
    evaluation runs at the rate the grid's rule picks, and a sample re-computes."""
    from playerfl_core.study import fair_sweeps as F

    path = COMMITTED / "fair"
    table, manifest = load_archive(path)
    assert manifest["profile"] == "standard"
    held = set(table["dataset"])
    assert held and held <= set(F.DATASETS), held
    rates = F.own_rates(table, manifest)
    for dataset in held:
        assert set(rates.loc[rates["dataset"] == dataset, "p"]) == {
            int(a.removeprefix("prefix_p")) for a in split_algorithms(dataset, "standard")
        }
    F.own_rate_scores(table, rates)  # raises when a split lacks a seed at its own rate
    found = verify(path, n=8, seed=20261202, max_seconds=20)
    assert found.case == expected_case(found.report), found.report
    assert found.consistent, found.summary()


# -- which machine computed what -------------------------------------------------------------
def test_runs_and_archives_record_the_machine_that_computed_them(packed, tmp_path):
    _, out = packed
    here = machine.fingerprint(threads=1)
    table, manifest = load_archive(out)
    assert {e["machine"] for e in manifest["runs"]} == {here["key"]}
    facts = manifest["machines"][here["key"]]
    assert facts["cpu"] == here["cpu"] and facts["threads"] == 1
    assert manifest["machine"]["torch_cpu_capability"] == here["torch_cpu_capability"]
    assert manifest["machine"]["cpu"] != "unknown" and manifest["machine"]["mkl"]
    unpack(out, Store(tmp_path / "s"))
    records, _ = Store(tmp_path / "s").scan()
    assert {machine.key(r["machine"]) for r in records} == {here["key"]}


def test_the_machine_key_changes_with_what_decides_last_bits():
    one, two = machine.fingerprint(threads=1), machine.fingerprint(threads=2)
    assert one["key"] == machine.key(one) and one["key"] != two["key"]
    assert machine.key({**one, "torch_cpu_capability": "another kernel set"}) != one["key"]
    assert machine.key({**one, "env": {"MKL_CBWR": "COMPATIBLE"}}) != one["key"]
    assert machine.key({**one, "executed": "later"}) == one["key"]  # other facts do not count
    assert machine.key(None) == machine.UNKNOWN and machine.key("abc") == "abc"
    assert "1 thread [" in machine.describe(one) and "2 threads" in machine.describe(two)


def test_verify_here_is_bitwise_and_catches_a_last_bit_change(packed, tmp_path):
    _, out = packed
    found = verify(out, n=2, seed=0)
    assert found.case == BITWISE and found.consistent, found.summary()
    nudged = _forged(out, tmp_path / "nudged", lambda t: t.assign(value=t["value"] * (1 + 1e-7)))
    found = verify(nudged, n=2, seed=0)
    assert found.case == BITWISE and not found.consistent, found.summary()


def test_verify_from_another_machine_is_statistical_and_tolerates_drift(packed, tmp_path):
    """The same last-bit change, stored as if by another machine: drift, not a defect."""
    _, out = packed
    nudged = _forged(
        out,
        tmp_path / "other",
        lambda t: t.assign(value=t["value"] * (1 + 1e-7)),
        machine_key="another-machine",
    )
    found = verify(nudged, n=4, seed=0)
    assert found.case == STATISTICAL and found.consistent, found.summary()
    assert "another machine" in found.reason
    # Recomputed with two threads, this machine is another machine too.
    found = verify(out, n=2, seed=0, threads=2)
    assert found.case == STATISTICAL and found.consistent, found.summary()


def test_statistical_verification_catches_a_wrong_algorithm(packed, tmp_path):
    """Local's rows stored under FedAvg's names (checksums forged to match) fail on any
    machine: FedAvg's round 0 scores the averaged model, Local's each client's own."""
    _, out = packed
    table = pd.read_parquet(out / "runs.parquet")
    table["run_id"] = table["run_id"].astype(str)
    local = table[table["algorithm"] == "local"]

    def swap(t):
        pieces = []
        for run_id, rows in t.groupby("run_id", sort=False):
            if "_fedavg_" in run_id:
                seed = rows["seed"].iloc[0]
                rows = local[local["seed"] == seed].assign(algorithm="fedavg", run_id=run_id)
            pieces.append(rows)
        return pd.concat(pieces, ignore_index=True)

    wrong = _forged(out, tmp_path / "wrong", swap, machine_key="another-machine")
    found = verify(wrong, n=4, seed=0)
    assert found.case == STATISTICAL and not found.consistent, found.summary()
    assert "round 0" in found.reason


def _forged(out, dest, change, machine_key=None):
    """A copy of archive ``out`` with ``change`` applied to its rows and the manifest's
    checksums forged to match (optionally claiming another machine computed every run)."""
    from playerfl_core.study.archive import table_digest

    table = pd.read_parquet(out / "runs.parquet")
    for col in ("dataset", "algorithm", "split", "metric", "run_id"):
        table[col] = table[col].astype(str)
    table = change(table)
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["runs"]:
        entry["sha256"] = table_digest(table[table["run_id"] == entry["run_id"]])
        entry["machine"] = machine_key or entry["machine"]
    dest.mkdir()
    table.to_parquet(dest / "runs.parquet", index=False)
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def test_the_statistical_verdict_needs_structure_round_zero_and_no_shift():
    from playerfl_core.study.verification import statistical_verdict

    drift = pd.DataFrame(
        {
            "run_id": list("abcde"),
            "same_structure": True,
            "round0_agrees": [True, True, True, True, False],
            "selected_diff": [0.11, -0.03, 0.0, 0.004, -0.01],
        }
    )
    assert statistical_verdict(drift)[0]  # one odd round 0 in five, changes both ways
    assert not statistical_verdict(drift.assign(selected_diff=drift["selected_diff"] + 0.03))[0]
    assert not statistical_verdict(drift.assign(round0_agrees=[True, True, True, False, False]))[0]
    broken = drift.assign(same_structure=[True, True, True, True, False])
    assert "other rows" in statistical_verdict(broken)[1]


def test_a_grid_that_mixes_machines_says_so(packed, tmp_path, capsys):
    _, out = packed
    store = Store(tmp_path / "s")
    unpack(out, store)
    grid = run_grid("heart", "local,fedavg", "quick", store=store.root, compute=False, **TINY)
    assert grid.status["machine"].nunique() == 1 and "machines" not in grid.note()
    record = sorted(store.runs.glob("*.json"))[0]
    edited = json.loads(record.read_text())
    edited["machine"] = {**edited["machine"], "cpu": "Some Other CPU"}
    record.write_text(json.dumps(edited))
    grid = run_grid("heart", "local,fedavg", "quick", store=store.root, compute=False, **TINY)
    assert grid.computed == 0 and "computed on 2 machines" in grid.note(), grid.note()
    from playerfl_core.cli import main

    assert main(["status", "--store", str(store.root)]) == 0
    shown = capsys.readouterr().out
    here = machine.fingerprint(threads=1)["key"]
    assert f"{len(grid.status) - 1} runs on {here} (this machine, one thread)" in shown, shown
    assert "1 run on " in shown


def test_pack_refuses_runs_it_could_not_recompute_elsewhere(packed, tmp_path):
    """A store that also holds a user federation's runs (the appendix declares one in a file):
    the archive takes the package's datasets only when told so, never silently."""
    import hashlib

    from playerfl_core.cli import main
    from playerfl_core.study.run_store import OK

    _, out = packed
    store = Store(tmp_path / "s")
    unpack(out, store)
    record = json.loads(sorted(store.runs.glob("*.json"))[0].read_text())
    mine = {**record, "run_id": "mine_local_lr0.01_s0_00000000", "dataset": "mine"}
    rows = store.rows(record["run_id"]).assign(dataset="mine")
    assert mine["status"] == OK
    data = rows.to_csv(index=False).encode()
    (store.runs / f"{mine['run_id']}.csv").write_bytes(data)
    mine.update(rows=len(rows), csv_sha256=hashlib.sha256(data).hexdigest())
    (store.runs / f"{mine['run_id']}.json").write_text(json.dumps(mine))
    with pytest.raises(ArchiveError, match="holds runs of mine, which no federation"):
        pack(store, "quick", tmp_path / "a")
    assert (
        main(
            [
                "archive",
                "pack",
                "--profile",
                "quick",  # the store's runs' profile (an archive holds one)
                "--store",
                str(store.root),
                "--archive",
                str(tmp_path / "b"),
                "--datasets",
                "heart",
            ]
        )
        == 0
    )
    _, manifest = load_archive(tmp_path / "b")
    assert {e["dataset"] for e in manifest["runs"]} == {"heart"}
    assert main(["archive", "pack", "--store", str(store.root), "--datasets", ""]) == 2


# -- earlier versions of the code ------------------------------------------------------------
def _relabelled(out, dest, code, change=None):
    """A copy of archive ``out`` whose runs claim to come from code version ``code`` (and whose
    rows are changed by ``change``, checksums forged to match)."""
    if change is not None:
        dest = _forged(out, dest, change)
    else:
        dest.mkdir()
        (dest / "runs.parquet").write_bytes((out / "runs.parquet").read_bytes())
        (dest / "manifest.json").write_text((out / "manifest.json").read_text())
    manifest = json.loads((dest / "manifest.json").read_text())
    for entry in manifest["runs"]:
        entry["code"] = code
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def test_an_earlier_code_version_is_the_same_only_if_its_runs_recompute_bit_for_bit(
    packed, tmp_path
):
    from playerfl_core.study.code_versions import (
        check_code_versions,
        equivalent_codes,
        record_checks,
    )
    from playerfl_core.study.run_store import code_fingerprint

    _, out = packed
    code, record = code_fingerprint(), tmp_path / "code_versions.json"
    assert equivalent_codes(code, record) == {code}  # nothing checked yet
    same = _relabelled(out, tmp_path / "same", "aaaaaaaaaaaa")
    report = check_code_versions(same, code)
    assert len(report) == 1 and set(report["earlier"]) == {"aaaaaaaaaaaa"}  # one per dataset
    changed = _relabelled(
        out, tmp_path / "changed", "bbbbbbbbbbbb", lambda t: t.assign(value=t["value"] * 1.001)
    )
    checks = record_checks(report, code, record)
    checks += record_checks(check_code_versions(changed, code), code, record)
    assert [(c["earlier"], c["identical"]) for c in checks] == [
        ("aaaaaaaaaaaa", True),
        ("bbbbbbbbbbbb", False),
    ]
    assert equivalent_codes(code, record) == {code, "aaaaaaaaaaaa"}
    assert check_code_versions(same, code, record=record).empty  # settled: not checked again
    assert equivalent_codes("aaaaaaaaaaaa", record) == {code, "aaaaaaaaaaaa"}  # either way
    assert check_code_versions(out, code).empty  # today's runs need no check
    # versions already shown to be the same as one another are checked as one: one run a dataset
    record.write_text(json.dumps({"checks": [
        {"earlier": "cccccccccccc", "current": "dddddddddddd", "identical": True}]}))  # fmt: skip
    both = _relabelled(out, tmp_path / "both", "cccccccccccc")
    manifest = json.loads((both / "manifest.json").read_text())
    manifest["runs"][0]["code"] = "dddddddddddd"
    (both / "manifest.json").write_text(json.dumps(manifest))
    assert len({e["dataset"] for e in manifest["runs"]}) == 1 and len(manifest["runs"]) > 1
    assert len(check_code_versions(both, code, record=record)) == 1
    assert len(check_code_versions(both, code, record=tmp_path / "none.json")) == 2


def test_equivalence_follows_a_chain_of_checks(tmp_path):
    from playerfl_core.study.code_versions import equivalent_codes

    record = tmp_path / "code_versions.json"
    checks = [("a", "b", True), ("b", "c", True), ("c", "d", False)]
    record.write_text(
        json.dumps({"checks": [dict(earlier=e, current=c, identical=i) for e, c, i in checks]})
    )
    assert equivalent_codes("c", record) == {"a", "b", "c"}
    assert equivalent_codes("d", record) == {"d"}
    record.write_text("[]")
    with pytest.raises(ValueError, match="not a record of code-version checks"):
        equivalent_codes("c", record)


def test_a_grid_flags_runs_of_unchecked_code_only(packed, tmp_path, monkeypatch, capsys):
    from playerfl_core.cli import main
    from playerfl_core.study.run_store import code_fingerprint

    _, out = packed
    stores = tmp_path / "stores"
    stores.mkdir()
    _relabelled(out, stores / "quick", "aaaaaaaaaaaa")
    monkeypatch.setenv("PLAYERFL_STORES", str(stores))
    grid = run_grid("heart", "local,fedavg", "quick", store=tmp_path / "s", compute=False, **TINY)
    assert grid.status["stale_code"].all() and "never checked" in grid.note()
    assert main(["status", "--store", str(tmp_path / "s")]) == 0
    assert "0 by earlier versions checked to give the same runs bit for bit, 4 by versions not" in (
        capsys.readouterr().out
    )
    check = {"earlier": "aaaaaaaaaaaa", "current": code_fingerprint(), "identical": True}
    (stores / "code_versions.json").write_text(json.dumps({"checks": [check]}))
    again = run_grid("heart", "local,fedavg", "quick", store=tmp_path / "s", compute=False, **TINY)
    assert not again.status["stale_code"].any() and "never checked" not in again.note()
    assert main(["status", "--store", str(tmp_path / "s")]) == 0
    assert "4 by earlier versions checked to give the same runs bit for bit, 0 by" in (
        capsys.readouterr().out
    )
