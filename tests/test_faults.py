"""Fault injection: bad input, damaged stores, divergence and killed processes (issue 14).

Every case asserts either a clear message (naming the option or file, the bad value and what
is valid) before any training, or the correct recovery. Kept fast: Heart, quick profile, one
or two rounds, grids of a few runs.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
import torch

import data_prep
from data_prep import DataError, fmnist
from playerfl_core import cli
from playerfl_core.cli import output as cli_output
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.divergence import LOSS_BOUND, divergence
from playerfl_core.fl.engine import RunConfig
from playerfl_core.study.archive import pack, unpack
from playerfl_core.study.experiments import (
    DIVERGED,
    OK,
    MissingResultsError,
    RunSpec,
    Store,
    load_grid,
    run_grid,
)
from playerfl_core.study.run_store import StoreError

REPO = Path(__file__).resolve().parent.parent
GRID = dict(seeds=(0, 1), lrs=(0.01,), rounds=1, workers=1, progress=False)
"""A two-run grid (Heart, Local, one LR so no tuning, one round): seconds."""


def _grid(store, **kw):
    return run_grid(["heart"], ["local"], "quick", store=store, **{**GRID, **kw})


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    keys = ["dataset", "algorithm", "lr", "seed", "client", "round", "split", "metric"]
    return table.sort_values(keys).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A finished two-run store and its table (copied, never modified, by the tests)."""
    root = tmp_path_factory.mktemp("reference")
    result = _grid(root)
    assert result.computed == 2
    return root, _sorted(result.table)


@pytest.fixture
def store_copy(reference, tmp_path):
    root, table = reference
    shutil.copytree(root, tmp_path / "store")
    return tmp_path / "store", table


def _run_cli(argv, capsys) -> tuple[int, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# -- 1. a self-verifying store ---------------------------------------------------------------


def _truncate_half(path: Path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _cut_at_line(path: Path):  # a clean cut at a line boundary: only the checksum sees it
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))


def _edit_one_value(path: Path):  # same length, one digit changed
    data = bytearray(path.read_bytes())
    i = data.rindex(b",", 0, len(data) - 2) - 1  # a digit of the last row's value
    data[i] = ord("1") if data[i] != ord("1") else ord("2")
    path.write_bytes(bytes(data))


DAMAGES = {
    "csv cut in half": ("csv", _truncate_half),
    "csv cut at a line": ("csv", _cut_at_line),
    "csv emptied": ("csv", lambda p: p.write_bytes(b"")),
    "csv deleted": ("csv", lambda p: p.unlink()),
    "csv value edited": ("csv", _edit_one_value),
    "csv row appended": ("csv", lambda p: p.write_bytes(p.read_bytes() + p.read_bytes()[-80:])),
    "csv random bytes": ("csv", lambda p: p.write_bytes(os.urandom(p.stat().st_size))),
    "json cut in half": ("json", _truncate_half),
    "json emptied": ("json", lambda p: p.write_text("")),
    "json is {}": ("json", lambda p: p.write_text("{}")),
    "json is a list": ("json", lambda p: p.write_text("[1, 2]")),
    "json unknown status": ("json", lambda p: _edit_json(p, status="finished")),
    "json names another run": ("json", lambda p: _edit_json(p, run_id="heart_other")),
    "json wrong row count": ("json", lambda p: _edit_json(p, rows=3)),
    "json binary garbage": ("json", lambda p: p.write_bytes(b"\xff\xfe\x00garbage")),
    "json status edited to diverged": ("json", lambda p: _edit_json(p, status="diverged")),
    "json error status with no reason": ("json", lambda p: _edit_json(p, status="error")),
}
FOLDERS = {"csv became a folder": "csv", "json became a folder": "json"}


def _edit_json(path: Path, **changes):
    rec = json.loads(path.read_text())
    rec.update(changes)
    path.write_text(json.dumps(rec))


def _victim(root: Path) -> str:
    spec = RunSpec("heart", "local", 0.01, 1, "quick", rounds=1)
    assert (root / "runs" / f"{spec.run_id}.json").exists()
    return spec.run_id


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_run_is_named_by_status_and_recomputed_by_the_grid(damage, store_copy, capsys):
    root, table = store_copy
    run_id = _victim(root)
    kind, harm = DAMAGES[damage]
    harm(root / "runs" / f"{run_id}.{kind}")

    code, out = _run_cli(["status", "--store", str(root)], capsys)
    assert code == 0 and "1 damaged runs" in out and f"damaged: {run_id}" in out, out
    assert "1 runs" in out  # the intact run still counts; the damaged one does not

    with pytest.raises(MissingResultsError, match=run_id):
        load_grid(["heart"], ["local"], "quick", store=root, **GRID)

    result = _grid(root)
    assert result.computed == 1  # exactly the damaged run
    assert any(run_id in n and "DAMAGED" in n for n in result.notes)
    pd.testing.assert_frame_equal(_sorted(result.table), table)
    assert Store(root).scan()[1] == {}


@pytest.mark.parametrize("damage", list(FOLDERS))
def test_a_run_file_that_became_a_folder_is_named_and_refused_before_any_work(
    damage, store_copy, capsys
):
    root, table = store_copy
    run_id = _victim(root)
    path = root / "runs" / f"{run_id}.{FOLDERS[damage]}"
    path.unlink()
    path.mkdir()
    code, out = _run_cli(["status", "--store", str(root)], capsys)
    assert code == 0 and f"damaged: {run_id}" in out, out
    with pytest.raises(StoreError, match=rf"folders where run files belong \({path.name}"):
        _grid(root)
    path.rmdir()  # what the message asks for; then the grid recomputes the run
    assert _grid(root).computed == 1


def test_a_deleted_manifest_means_not_finished_and_is_recomputed(store_copy):
    root, table = store_copy
    (root / "runs" / f"{_victim(root)}.json").unlink()
    result = _grid(root)
    assert result.computed == 1
    pd.testing.assert_frame_equal(_sorted(result.table), table)


def test_legacy_runs_without_checksums_still_load_and_truncation_is_caught(store_copy, capsys):
    root, table = store_copy
    for f in (root / "runs").glob("*.json"):
        rec = json.loads(f.read_text())
        for key in ("csv_sha256", "rows"):
            rec.pop(key)
        f.write_text(json.dumps(rec))
    result = _grid(root)
    assert result.computed == 0
    pd.testing.assert_frame_equal(_sorted(result.table), table)
    code, out = _run_cli(["status", "--store", str(root)], capsys)
    assert "2 finished runs were stored before checksums (legacy)" in out

    _truncate_half(root / "runs" / f"{_victim(root)}.csv")
    result = _grid(root)
    assert result.computed == 1
    pd.testing.assert_frame_equal(_sorted(result.table), table)


def test_unpacked_archive_runs_carry_checksums_and_damage_is_caught(store_copy, tmp_path):
    root, _ = store_copy
    archive = pack(Store(root), "quick", tmp_path / "archive", command="test")
    again = Store(tmp_path / "again")
    assert unpack(archive, again) == 2
    records, damaged = again.scan()
    assert damaged == {} and all(r["csv_sha256"] and r["rows"] > 0 for r in records)
    _cut_at_line(again.runs / f"{_victim(again.root)}.csv")
    assert _victim(again.root) in again.scan()[1]
    assert unpack(archive, again) == 1  # the damaged run is restored from the archive
    assert again.scan()[1] == {}


# -- store and archive paths, checked before any compute (issue 25, item 4) -------------------


@pytest.fixture(scope="module")
def archive(reference, tmp_path_factory):
    """The reference store packed as a committed archive (``<folder>/quick``)."""
    root, _ = reference
    return pack(Store(root), "quick", tmp_path_factory.mktemp("stores") / "quick", command="test")


def _drop_first_finished(manifest: dict) -> dict:
    runs = list(manifest["runs"])
    runs.remove(next(e for e in runs if e["status"] == OK))
    return {**manifest, "runs": runs}


MANIFEST_DAMAGES = {
    "no runs": (lambda m: {k: v for k, v in m.items() if k != "runs"}, 'no "runs" list'),
    "a list": (lambda m: [], "a JSON list, not an object"),
    "runs not a list": (lambda m: {**m, "runs": {}}, '"runs" is not a list'),
    "entry not an object": (lambda m: {**m, "runs": [1]}, "runs[0] is not an object"),
    "entry without checksum": (
        lambda m: {**m, "runs": [{k: v for k, v in e.items() if k != "sha256"} for e in m["runs"]]},
        "runs[0] lacks sha256",
    ),
    "not JSON": (None, "not valid JSON"),
    "entry removed": (_drop_first_finished, "have no finished entry in manifest.json"),
}


def _damage_manifest(archive: Path, dest: Path, damage: str) -> Path:
    shutil.copytree(archive, dest)
    edit, _ = MANIFEST_DAMAGES[damage]
    manifest = dest / "manifest.json"
    text = json.dumps(edit(json.loads(manifest.read_text()))) if edit else "{"
    manifest.write_text(text)
    return dest


@pytest.mark.parametrize("damage", list(MANIFEST_DAMAGES))
def test_a_damaged_archive_manifest_is_one_line_in_verify_and_every_grid(
    damage, archive, tmp_path, monkeypatch, capsys
):
    from playerfl_core.study.archive import ArchiveError

    _, expected = MANIFEST_DAMAGES[damage]
    damaged = _damage_manifest(archive, tmp_path / "stores" / "quick", damage)
    code, out = _run_cli(["archive", "verify", "--archive", str(damaged)], capsys)
    assert code == 2 and "Traceback" not in out, out
    assert expected in out and "manifest.json" in out and "playerfl archive pack" in out, out
    assert "restore it" in out, out

    monkeypatch.setenv("PLAYERFL_STORES", str(damaged.parent))  # every grid reads it first
    with pytest.raises(ArchiveError, match=re.escape(expected)):
        _grid(tmp_path / "store")
    assert not list(tmp_path.glob("store/runs/*.csv"))


BAD_PATHS = {
    "grid store is a file": (["grid", "--store", "{file}"], ["--store", "is a file"]),
    "grid store under a file": (["grid", "--store", "{file}/s"], ["--store", "is a file"]),
    "grid store empty": (["grid", "--store", ""], ["--store", "'' is empty"]),
    "status store is a file": (["status", "--store", "{file}"], ["--store", "is a file"]),
    "status store empty": (["status", "--store", ""], ["--store", "'' is empty"]),
    "pack archive is a file": (
        ["archive", "pack", "--archive", "{file}", "--store", "{store}"],
        ["--archive", "is a file, not a folder"],
    ),
    "pack archive empty": (["archive", "pack", "--archive", ""], ["--archive", "'' is empty"]),
    "pack store is a file": (
        ["archive", "pack", "--archive", "{tmp}/a", "--store", "{file}"],
        ["--store", "is a file"],
    ),
    "verify archive empty": (["archive", "verify", "--archive", ""], ["--archive", "is empty"]),
}


@pytest.mark.parametrize("case", list(BAD_PATHS))
def test_a_path_that_cannot_be_written_is_named_before_any_work(case, reference, tmp_path, capsys):
    argv, expected = BAD_PATHS[case]
    file = tmp_path / "file.txt"
    file.write_text("x")
    fill = {"{file}": str(file), "{store}": str(reference[0]), "{tmp}": str(tmp_path)}
    for key, value in fill.items():
        argv = [a.replace(key, value) for a in argv]
    if argv[0] == "grid":
        argv += ["--datasets", "heart", "--algorithms", "local", "--lrs", "0.01", "--rounds", "1"]
    start = time.process_time()
    code, out = _run_cli(argv, capsys)
    assert code == 2 and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1, out
    for text in expected:
        assert text in out, (text, out)
    assert time.process_time() - start < 5  # nothing trained, nothing packed
    assert file.read_text() == "x" and not (tmp_path / "a").exists()


def _refuse_writes(monkeypatch):
    """A read-only store, also for root (who may write anywhere): the write probe is denied."""
    from playerfl_core.stats import results

    def denied(folder):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(results, "_probe", denied)


def test_a_read_only_store_is_refused_before_any_training(tmp_path, monkeypatch, capsys):
    from playerfl_core.study.run_store import StoreError

    store = tmp_path / "store"
    _grid(store, seeds=(0,))  # a store with one finished run, then made read-only
    _refuse_writes(monkeypatch)
    start = time.process_time()
    with pytest.raises(StoreError, match="cannot hold runs: .* is not writable"):
        _grid(store)
    argv = ["grid", "--datasets", "heart", "--algorithms", "local", "--lrs", "0.01"]
    code, out = _run_cli([*argv, "--seeds", "0,1", "--rounds", "1", "--store", str(store)], capsys)
    assert code == 2 and "--store: The store" in out and "Permission denied" in out, out
    assert "chmod u+w" in out and "Traceback" not in out
    assert time.process_time() - start < 5  # refused before training seed 1
    assert len(list((store / "runs").glob("*.json"))) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_store_without_write_permission_is_refused(tmp_path):
    from playerfl_core.study.run_store import StoreError

    (tmp_path / "store" / "runs").mkdir(parents=True)
    (tmp_path / "store" / "runs").chmod(0o555)
    try:
        with pytest.raises(StoreError, match="Permission denied"):
            _grid(tmp_path / "store")
    finally:
        (tmp_path / "store" / "runs").chmod(0o755)


# -- 3. divergence -------------------------------------------------------------------------


def _table(values, metric="loss"):
    return pd.DataFrame(
        {
            "dataset": "heart",
            "algorithm": "local",
            "lr": 0.1,
            "seed": 0,
            "client": 0,
            "round": range(len(values)),
            "split": "val",
            "metric": metric,
            "value": values,
            "n_samples": 10,
        }
    )


@pytest.mark.parametrize(
    "values, diverged",
    [
        ([2.3, 51.0], False),  # the committed store's largest loss
        ([2.3, LOSS_BOUND], False),
        ([2.3, 3e23], True),  # issue 14's probe
        ([2.3, math.nan], True),
        ([2.3, math.inf], True),
    ],
)
def test_loss_bound(values, diverged):
    assert (divergence(_table(values)) is not None) == diverged


def test_a_large_accuracy_is_not_a_loss():
    assert divergence(_table([1e6], metric="n_samples")) is None


def test_divergence_is_stored_not_retried_and_excluded_visibly(tmp_path, capsys):
    kw = dict(seeds=(0,), lrs=(1e6,), rounds=1, workers=1, progress=False, store=tmp_path)
    result = run_grid(["heart"], ["local", "playerfl"], "quick", **kw)
    assert result.computed == 2
    assert set(result.status["status"]) == {DIVERGED}  # playerfl: infinite sensitivities
    assert "sensitivities" in result.status.set_index("algorithm").loc["playerfl", "error"]
    local_error = result.status.set_index("algorithm").loc["local", "error"]
    assert "above the divergence bound" in local_error or "non-finite" in local_error
    assert len(result.table) == 0 and "EXCLUDED (diverged" in result.note()
    again = run_grid(["heart"], ["local", "playerfl"], "quick", **kw)
    assert again.computed == 0  # not retried
    code, out = _run_cli(["status", "--store", str(tmp_path)], capsys)
    assert out.count("diverged: heart_") == 2


def test_playerfl_run_keeps_the_other_algorithms_rows(tmp_path, capsys):
    out = tmp_path / "run.csv"
    argv = ["run", "--dataset", "heart", "--algorithms", "local,pfedme", "--rounds", "1"]
    code, text = _run_cli([*argv, "--lr", "0.2", "--out", str(out)], capsys)
    assert code == 3 and "diverged (no rows written): pfedme" in text  # eta·lam = 3 ≥ 2
    table = pd.read_csv(out)
    assert set(table["algorithm"]) == {"local"} and len(table) > 0


# -- 4. validate before computing ------------------------------------------------------------

BAD_CLI = {
    "seeds not integers": (["grid", "--seeds", "0,abc"], ["--seeds", "'abc'"]),
    "seeds negative": (["grid", "--seeds", "-1"], ["--seeds", "-1", "≥ 0"]),
    "seeds empty entry": (["grid", "--seeds", "0,,1"], ["--seeds", "empty entry"]),
    "unknown dataset": (["grid", "--datasets", "nosuch"], ["--datasets", "unknown dataset"]),
    "unknown algorithm": (["grid", "--algorithms", "local,nosuch"], ["--algorithms", "nosuch"]),
    "lrs not numbers": (["grid", "--lrs", "0.1,abc"], ["--lrs", "'abc'"]),
    "lrs negative": (["grid", "--lrs", "0.1,-1"], ["--lrs", "'-1'", "> 0"]),
    "lrs nan": (["grid", "--lrs", "nan"], ["--lrs", "'nan'"]),
    "tune seeds bad": (["grid", "--tune-seeds", "x"], ["--tune-seeds", "'x'"]),
    "grid rounds zero": (["grid", "--rounds", "0"], ["--rounds", "0", "≥ 1"]),
    "grid workers zero": (["grid", "--workers", "0"], ["--workers", "0", "≥ 1"]),
    "grid device typo": (["grid", "--device", "gpu"], ["--device", "'gpu'"]),
    "dataset module empty": (["grid", "--dataset-module", ""], ["--dataset-module", "empty path"]),
    "store typo": (["status", "--store", "/nonexistent/storx"], ["--store", "does not exist"]),
    "run dataset unknown": (
        ["run", "--dataset", "hart", "--out", "{tmp}/o.csv"],
        ["--dataset", "unknown dataset 'hart'"],
    ),
    "run seeds bad": (
        ["run", "--dataset", "heart", "--seeds", "0,abc", "--out", "{tmp}/o.csv"],
        ["--seeds", "'abc'"],
    ),
    "run out is a folder": (
        ["run", "--dataset", "heart", "--out", "{tmp}"],
        ["--out", "directory"],
    ),
    "run out under a file": (
        ["run", "--dataset", "heart", "--out", "{tmp}/file.txt/o.csv"],
        ["--out", "is a file"],
    ),
    "run lr negative": (
        ["run", "--dataset", "heart", "--lr", "-5", "--out", "{tmp}/o.csv"],
        ["--lr", "-5", "> 0"],
    ),
    "run lr too large": (
        ["run", "--dataset", "heart", "--lr", "1e300", "--out", "{tmp}/o.csv"],
        ["--lr", "1e+300", "≤ 3.4e+38"],
    ),
    "run lr infinite": (
        ["run", "--dataset", "heart", "--lr", "inf", "--out", "{tmp}/o.csv"],
        ["--lr", "inf"],
    ),
    "run rounds negative": (
        ["run", "--dataset", "heart", "--rounds", "-2", "--out", "{tmp}/o.csv"],
        ["--rounds", "-2"],
    ),
    "run device typo": (
        ["run", "--dataset", "heart", "--device", "cdua", "--out", "{tmp}/o.csv"],
        ["--device", "'cdua'"],
    ),
    "sweep splits bad": (
        ["sweep", "--dataset", "heart", "--splits", "0,x", "--out", "{tmp}/o.csv"],
        ["--splits", "'x'"],
    ),
    "archive sample zero": (["archive", "verify", "--sample", "0"], ["--sample", "0"]),
    # an empty list is refused, never the default (issue 25, item 2)
    "grid datasets empty": (["grid", "--datasets", ""], ["--datasets", "''", "empty entry"]),
    "grid seeds empty": (["grid", "--seeds", ""], ["--seeds", "''", "empty entry"]),
    "grid lrs empty": (["grid", "--lrs", ""], ["--lrs", "''", "empty entry"]),
    "grid tune seeds empty": (["grid", "--tune-seeds", ""], ["--tune-seeds", "empty entry"]),
    "grid algorithms empty": (["grid", "--algorithms", ""], ["--algorithms", "empty entry"]),
    "run seeds empty": (
        ["run", "--dataset", "heart", "--seeds", "", "--out", "{tmp}/o.csv"],
        ["--seeds", "''", "empty entry"],
    ),
    "sweep seeds empty": (
        ["sweep", "--dataset", "heart", "--seeds", "", "--out", "{tmp}/o.csv"],
        ["--seeds", "''", "empty entry"],
    ),
    "sweep splits empty": (
        ["sweep", "--dataset", "heart", "--splits", "", "--out", "{tmp}/o.csv"],
        ["--splits", "''", "empty entry"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_CLI))
def test_bad_options_are_named_before_any_training(case, tmp_path, capsys):
    argv, expected = BAD_CLI[case]
    (tmp_path / "file.txt").write_text("x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if argv[0] == "grid":
        argv += ["--store", str(tmp_path / "store")]
    start = time.process_time()
    code, out = _run_cli(argv, capsys)
    assert code == 2, out
    assert "Traceback" not in out
    for text in expected:
        assert text in out, (text, out)
    assert time.process_time() - start < 5  # no training happened
    assert not (tmp_path / "store" / "runs").exists()
    assert not list(tmp_path.glob("**/*.tmp")) and not (tmp_path / "o.csv").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_on_a_cpu_machine_is_refused_before_training(tmp_path, capsys):
    argv = ["run", "--dataset", "heart", "--device", "cuda", "--out", str(tmp_path / "o.csv")]
    code, out = _run_cli(argv, capsys)
    assert code == 2 and "--device: 'cuda', but this machine has no CUDA" in out


def test_duplicate_seeds_are_dropped_with_a_warning(tmp_path, capsys):
    out = tmp_path / "o.csv"
    argv = ["run", "--dataset", "heart", "--algorithms", "local", "--rounds", "1"]
    code, text = _run_cli([*argv, "--seeds", "0,0", "--out", str(out)], capsys)
    assert code == 0 and "warning: --seeds: duplicate values [0] ignored" in text
    assert pd.read_csv(out).duplicated().sum() == 0


BAD_API = {
    "fedprox mu negative": (lambda: get_algorithm("fedprox", mu=-5), "mu=-5"),
    "ditto lam nan": (lambda: get_algorithm("ditto", lam=math.nan), "lam=nan"),
    "playerfl threshold nan": (lambda: get_algorithm("playerfl", threshold=math.nan), "threshold"),
    "fedlp p above 1": (lambda: get_algorithm("fedlp", p=1.5), "p=1.5"),
    "pfedme K zero": (lambda: get_algorithm("pfedme", K=0), "K=0"),
    "pfedme outer typo": (lambda: get_algorithm("pfedme", outer="sdg"), "outer='sdg'"),
    "fedlama phi fraction": (lambda: get_algorithm("fedlama", phi=1.5), "phi=1.5"),
    "pfedla hn_lr zero": (lambda: get_algorithm("pfedla", hn_lr=0), "hn_lr=0"),
    "fedbabu finetune typo": (lambda: get_algorithm("fedbabu", finetune="all"), "finetune="),
    "prefix p negative": (lambda: get_algorithm("prefix", p=-1), "p must be an integer"),
    "unknown hyper-parameter": (lambda: get_algorithm("fedprox", nu=1), "unknown hyper"),
    "config lr too large": (
        lambda: RunConfig(rounds=1, lr=1e300, batch_size=8),
        "lr must be a number in (0, 3.4e+38], got 1e+300",
    ),
    "config rounds zero": (
        lambda: RunConfig(rounds=0, lr=0.1, batch_size=8),
        "rounds must be an integer ≥ 1, got 0",
    ),
    "config seed negative": (
        lambda: RunConfig(1, 0.1, 8, seed=-1),
        "seed must be an integer in 0 … 2^63 − 1, got -1",
    ),
    "config width zero": (
        lambda: RunConfig(1, 0.1, 8, width=0.0),
        "width must be a finite number > 0, got 0.0",
    ),
    "config weight decay nan": (
        lambda: RunConfig(1, 0.1, 8, weight_decay=math.nan),
        "weight_decay must be a finite number ≥ 0, got nan",
    ),
    "config device typo": (
        lambda: RunConfig(1, 0.1, 8, device="gpu"),
        "device: 'gpu' is not a device",
    ),
    "data alpha nan": (lambda: data_prep.load("digits", alpha=math.nan), "alpha=nan"),
    "data alpha zero": (lambda: data_prep.load("digits", alpha=0), "alpha=0"),
    "data n_clients zero": (lambda: data_prep.load("digits", n_clients=0), "n_clients=0"),
    "data seed negative": (lambda: data_prep.load("heart", seed=-1), "seed must be"),
    "data unknown option": (lambda: data_prep.load("heart", alpha=1.0), "does not take"),
}


@pytest.mark.parametrize("case", list(BAD_API))
def test_bad_constructor_arguments_name_the_parameter(case):
    make, expected = BAD_API[case]
    with pytest.raises((ValueError, DataError)) as err:
        make()
    assert expected in str(err.value), str(err.value)


EMPTY_API = {
    "no datasets": (lambda kw: run_grid([], ["local"], "quick", **kw), "at least one dataset"),
    "empty dataset string": (lambda kw: run_grid("", ["local"], "quick", **kw), "one dataset"),
    "no algorithms": (lambda kw: run_grid(["heart"], [], "quick", **kw), "No algorithm given"),
    "no seeds": (lambda kw: run_grid(["heart"], ["local"], **{**kw, "seeds": []}), "seeds is"),
    "no lrs": (lambda kw: run_grid(["heart"], ["local"], **{**kw, "lrs": []}), "lrs is empty"),
    "store empty": (lambda kw: run_grid(["heart"], ["local"], **{**kw, "store": ""}), "empty"),
    "no tune seeds": (
        lambda kw: run_grid(["heart"], ["local"], **{**kw, "lrs": (0.1, 0.01), "tune_seeds": []}),
        "tune_seeds is empty",
    ),
}


@pytest.mark.parametrize("case", list(EMPTY_API))
def test_an_empty_list_to_run_grid_is_refused_not_an_empty_grid(case, tmp_path):
    make, expected = EMPTY_API[case]
    kw = dict(seeds=(0,), lrs=(0.01,), rounds=1, workers=1, progress=False, store=tmp_path)
    with pytest.raises(ValueError, match=expected):
        make(kw)
    assert not list(tmp_path.glob("runs/*.csv"))


# -- 5. data integrity -------------------------------------------------------------------------


def _fmnist_copy(tmp_path) -> Path:
    src = fmnist.raw_dir(data_prep.base.data_root())
    if not fmnist._have_raw(data_prep.base.data_root()):
        pytest.skip("Fashion-MNIST raw files absent (python -m data_prep.prepare)")
    dest = fmnist.raw_dir(tmp_path)
    dest.mkdir(parents=True)
    for f in fmnist.FILES:
        (dest / f).symlink_to(src / f)
    return dest


@pytest.mark.parametrize(
    "harm",
    [
        lambda p: p.write_bytes(os.urandom(p.stat().st_size)),  # random bytes, right size
        lambda p: p.write_bytes(p.read_bytes()[:1000]),  # truncated idx file
    ],
    ids=["random-bytes", "truncated"],
)
def test_a_corrupt_fashion_mnist_file_is_named(harm, tmp_path):
    raw = _fmnist_copy(tmp_path)
    victim = raw / "train-labels-idx1-ubyte"
    data = victim.read_bytes()
    victim.unlink()
    victim.write_bytes(data)
    harm(victim)
    with pytest.raises(DataError, match="train-labels-idx1-ubyte is corrupt or truncated"):
        data_prep.load("fmnist", seed=0, data_root=tmp_path)


def test_the_fashion_mnist_files_in_use_match_the_published_contents():
    root = data_prep.base.data_root()
    if not fmnist._have_raw(root):
        pytest.skip("Fashion-MNIST raw files absent")
    fmnist.check_raw(root)


# -- 2. processes that end together ----------------------------------------------------------


def _cli_env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TQDM_DISABLE": "1",
        "PYTHONUNBUFFERED": "1",
    }


KILL_GRID = [
    "grid", "--datasets", "heart", "--algorithms", "local,fedavg", "--profile", "quick",
    "--lrs", "0.01", "--seeds", "0,1,2,3,4,5", "--rounds", "2", "--workers", "2",
]  # fmt: skip


def _start_grid(store: Path, own_group: bool = False) -> subprocess.Popen:
    """``own_group``: in a process group of its own, as a terminal's job (see ``killpg``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "playerfl_core.cli", *KILL_GRID, "--store", str(store)],
        env=_cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=own_group,
    )


def _wait_for_runs(proc, store: Path, n: int = 1, timeout: float = 300) -> list[psutil.Process]:
    """Wait until ``n`` runs are stored; return the grid's worker processes (alive)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = list((store / "runs").glob("*.json")) if (store / "runs").exists() else []
        children = psutil.Process(proc.pid).children(recursive=True)
        if len(done) >= n and len(children) >= 2:
            return children
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the grid stored no run in time")


def _gone(procs: list[psutil.Process]) -> bool:
    alive = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            continue
    return not alive


@pytest.mark.slow  # a grid killed and restarted: 1 min
def test_kill_9_of_a_grid_leaves_no_worker_and_a_restart_gives_the_same_table(tmp_path):
    store = tmp_path / "killed"
    proc = _start_grid(store)
    children = _wait_for_runs(proc, store)
    stored_at_kill = len(list((store / "runs").glob("*.json")))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(10)
    assert _gone(children), [(p.pid, p.cmdline()) for p in children if p.is_running()]
    assert stored_at_kill < 12  # the kill came mid-grid

    restart = subprocess.run(
        [sys.executable, "-m", "playerfl_core.cli", *KILL_GRID, "--store", str(store)],
        env=_cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert restart.returncode == 0, restart.stderr
    whole = run_grid(
        ["heart"],
        ["local", "fedavg"],
        "quick",
        seeds=range(6),
        lrs=(0.01,),
        rounds=2,
        workers=1,
        progress=False,
        store=tmp_path / "whole",
    )
    resumed = pd.read_csv(store / "grid-after_aggregation.csv")
    pd.testing.assert_frame_equal(
        _sorted(resumed), _sorted(pd.read_csv(tmp_path / "whole" / "grid-after_aggregation.csv"))
    )
    assert len(whole.table) == len(resumed)


@pytest.mark.parametrize("how", ["sigterm", "sighup", "sighup to the group"])
def test_sigterm_stops_a_grid_cleanly_with_a_resume_hint(how, tmp_path):
    """'sighup to the group': a closed terminal signals every process of its job; the
    multiprocessing resource tracker died of it, and its restart printed a traceback per
    worker."""
    signum, said, exit_code = STOPS[how.split()[0]]
    store = tmp_path / "termed"
    proc = _start_grid(store, own_group=how.endswith("group"))
    children = _wait_for_runs(proc, store)
    if how.endswith("group"):
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == exit_code, err
    (line,) = _said(err)
    assert line.startswith(f"playerfl: grid {said} after ") and f"stored in {store}; " in line
    assert "run the same command again to resume" in line
    assert "Traceback" not in err
    deadline = time.monotonic() + 10
    while not _gone(children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(children)
    records, damaged = Store(store).scan()
    assert records and damaged == {}
    assert all(r["status"] == OK for r in records)


def test_a_grid_removes_temporary_files_of_killed_writes_only(tmp_path):
    """A kill -9 between writing a run's temporary file and renaming it leaves the file; the next
    grid deletes it (its writer is gone) and says so, and keeps a live writer's file."""
    from playerfl_core.study.run_store import Store

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    runs = tmp_path / "runs"
    runs.mkdir()
    stale = runs / f".heart_local_x.csv.{dead.pid}.tmp"
    live = runs / f".heart_local_y.csv.{os.getpid()}.tmp"
    stale.write_text("half a fi")
    live.write_text("being written")
    grid = run_grid(
        ["heart"], ["local"], "quick", seeds=[0], lrs=(0.01,), rounds=1, workers=1,
        progress=False, store=tmp_path,
    )  # fmt: skip
    assert not stale.exists() and live.exists()
    assert "Removed 1 temporary files of writes interrupted earlier" in grid.note()
    assert Store(tmp_path).remove_stale_temporaries() == []


# -- API: results tables on any index and any order of rows (issue 25) -----------------------

FACTS = ["dataset", "algorithm", "lr", "seed", "client", "round", "split", "metric"]


@pytest.fixture(scope="module")
def two_runs():
    """Two real Heart tables (FedAvg and Local, three rounds), as run_federated returns them."""
    from data_prep import load
    from playerfl_core import get_algorithm, make_config, run_federated

    data = load("heart", profile="quick", seed=0)
    config = make_config("heart", "quick", seed=0, rounds=3, device="cpu", progress=False)
    return [run_federated(data, get_algorithm(a), config).table() for a in ("fedavg", "local")]


def _with_ties(table: pd.DataFrame, rng) -> pd.DataFrame:
    """Copy each client's lowest validation loss to a random other round of it (a tie)."""
    table = table.copy()
    val = table[(table["split"] == "val") & (table["metric"] == "loss")]
    for _, g in val.groupby(["algorithm", "client"]):
        best = g["value"].min()
        table.loc[rng.choice(g.index.to_numpy()), "value"] = best
    return table


def _messy(parts: list[pd.DataFrame], rng) -> pd.DataFrame:
    """The same rows as ``parts`` with shuffled order, an index of one of the kinds pandas
    produces, and pieces joined by pd.concat without ignore_index."""
    pieces = []
    for part in parts:
        shuffled = part.sample(frac=1.0, random_state=rng.integers(2**31))
        a, b = np.sort(rng.choice(np.arange(1, len(part)), size=2, replace=False))
        pieces += [shuffled.iloc[:a], shuffled.iloc[a:b], shuffled.iloc[b:]]
    pieces = [pieces[i] for i in rng.permutation(len(pieces))]
    kind = rng.integers(5)
    if kind == 0:  # every piece keeps its own 0 … n−1 labels: they repeat
        pieces = [p.reset_index(drop=True) for p in pieces]
    elif kind == 1:  # one label for every row
        pieces = [p.set_axis([7] * len(p)) for p in pieces]
    elif kind == 2:  # strings, repeated across pieces
        pieces = [p.set_axis([f"r{i % 5}" for i in range(len(p))]) for p in pieces]
    elif kind == 3:  # a permuted, offset integer index
        pieces = [p.set_axis(rng.permutation(len(p)) + 1000) for p in pieces]
    if kind == 4:  # pd.concat(keys=...) gives a MultiIndex
        return pd.concat(pieces, keys=range(len(pieces)))
    return pd.concat(pieces)


def _first_best_rounds(table: pd.DataFrame) -> dict:
    """The oracle: per (algorithm, client), the earliest round with the lowest val loss."""
    val = table[(table["split"] == "val") & (table["metric"] == "loss")]
    out = {}
    for (alg, client), g in val.groupby(["algorithm", "client"]):
        rounds, losses = g["round"].to_numpy(), g["value"].to_numpy()
        out[alg, client] = int(rounds[losses == losses.min()].min())
    return out


def _canonical(frame: pd.DataFrame, keys) -> pd.DataFrame:
    return frame.sort_values(keys).reset_index(drop=True)


@pytest.mark.parametrize("seed", range(8))
def test_results_functions_ignore_the_index_and_the_order_of_rows(two_runs, seed):
    from playerfl_core.stats.results import client_scores, select_rounds

    rng = np.random.default_rng(seed)
    parts = [_with_ties(t, rng) for t in two_runs]
    clean = pd.concat(parts, ignore_index=True)
    messy = _messy(parts, rng)
    assert len(messy) == len(clean)

    for selection in ("best_val", "last"):
        want = select_rounds(clean, selection)
        got = select_rounds(messy, selection)
        pd.testing.assert_frame_equal(_canonical(got, FACTS), _canonical(want, FACTS))
        for metric, split in (("macro_f1", "test"), ("loss", "val"), ("accuracy", "test")):
            want = client_scores(clean, metric, split, selection)
            got = client_scores(messy, metric, split, selection)
            assert len(got) == 2 * 4  # one row per algorithm and client
            pd.testing.assert_frame_equal(
                _canonical(got, ["algorithm", "client"]), _canonical(want, ["algorithm", "client"])
            )
    chosen = client_scores(messy).set_index(["algorithm", "client"])["round"].to_dict()
    assert chosen == _first_best_rounds(clean)  # ties: the earliest round


def test_a_repeated_index_no_longer_returns_every_round(two_runs):
    """Issue 25's reproduction: two tables joined without ignore_index."""
    from playerfl_core.stats import metrics as M

    joined, clean = pd.concat(two_runs), pd.concat(two_runs, ignore_index=True)
    pd.testing.assert_frame_equal(M.run_scores(joined), M.run_scores(clean))


BAD_TABLE_ARGS = {
    "metric typo": (dict(metric="f1"), "Unknown metric 'f1'; this table's test metrics are"),
    "split typo": (dict(split="tset"), "Unknown split 'tset'; this table's scored splits are"),
    "train split": (dict(split="train"), "Unknown split 'train'"),
    "selection typo": (dict(selection="best"), "selection must be one of ('best_val', 'last')"),
}


@pytest.mark.parametrize("case", list(BAD_TABLE_ARGS))
def test_unknown_table_arguments_list_the_valid_ones(case, two_runs):
    from playerfl_core.stats.results import client_scores

    kwargs, expected = BAD_TABLE_ARGS[case]
    with pytest.raises(ValueError) as err:
        client_scores(pd.concat(two_runs), **kwargs)
    assert expected in str(err.value)
    if "metric" in kwargs:
        assert "'macro_f1'" in str(err.value)
    if "split" in kwargs:
        assert "['val', 'test']" in str(err.value)


def test_all_nan_validation_losses_name_the_run_and_client(two_runs):
    from playerfl_core.stats.results import client_scores

    table = pd.concat(two_runs)
    lost = (table["split"] == "val") & (table["metric"] == "loss") & (table["client"] == 2)
    table.loc[lost & (table["algorithm"] == "local"), "value"] = math.nan
    with pytest.raises(ValueError, match=r"Client 2 of the run \(dataset=heart, algorithm=local"):
        client_scores(table)
    table.loc[lost & (table["algorithm"] == "local"), "value"] = [-math.inf, math.nan, 0.5]
    one = client_scores(table).set_index(["algorithm", "client"]).loc[("local", 2)]
    assert one["round"] == 2  # a non-finite loss is never chosen


def test_a_run_held_twice_or_an_empty_table_is_refused(two_runs):
    from playerfl_core.stats import metrics as M
    from playerfl_core.stats.results import client_scores

    with pytest.raises(ValueError, match="more than once.*drop_duplicates"):
        client_scores(pd.concat([*two_runs, two_runs[0]]))
    with pytest.raises(ValueError, match="no clients' validation or test rows"):
        client_scores(two_runs[0].iloc[:0])
    other_lr = two_runs[1].assign(lr=0.02)
    with pytest.raises(ValueError, match="several learning rates"):
        M.paired_differences(pd.concat([*two_runs, other_lr]), "fedavg", "local")


def test_a_grid_whose_every_run_diverged_exits_non_zero_and_writes_nothing(tmp_path, capsys):
    """Like `run`, a grid with no finished evaluation run fails, instead of an empty table."""
    out = tmp_path / "grid.csv"
    argv = ["grid", "--datasets", "heart", "--algorithms", "fedavg", "--lrs", "1e6"]
    argv += ["--seeds", "0", "--rounds", "2", "--out", str(out), "--store", str(tmp_path / "s")]
    code, shown = _run_cli(argv, capsys)
    assert code == 3, shown
    assert "no evaluation run of this grid finished" in shown and not out.exists()


# -- interrupted or diverging work keeps what finished (issue 25, item 3) ---------------------
def _said(err: str) -> list[str]:
    """The command's own lines on stderr (not its progress bars)."""
    return [line for line in re.split(r"[\r\n]", err) if line.startswith("playerfl:")]


STOPS = {  # how the third run is stopped: the line names it, the exit code follows it
    "ctrl-c": (None, "stopped by SIGINT (Ctrl-C)", 130),  # Python's own KeyboardInterrupt
    "sigint": (signal.SIGINT, "stopped by SIGINT (Ctrl-C)", 130),
    "sigterm": (signal.SIGTERM, "stopped by SIGTERM", 130),
    "sighup": (signal.SIGHUP, "stopped by SIGHUP", 129),
}


@pytest.mark.parametrize("how", list(STOPS))
def test_an_interrupted_run_writes_the_finished_runs_and_says_so(
    how, tmp_path, monkeypatch, capsys
):
    signum, said, exit_code = STOPS[how]
    calls = []
    real = cli.run_federated

    def stop_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            if signum is None:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)  # its handler raises here
            time.sleep(5)
            raise AssertionError(f"{how} was not handled")
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "run_federated", stop_on_third)
    out = tmp_path / "run.csv"
    code = cli.main(["run", "--dataset", "heart", "--algorithms", "local,fedavg,playerfl",
                     "--rounds", "1", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == exit_code, err
    (line,) = _said(err)
    assert line.startswith(f"playerfl: {said}; "), err
    assert "wrote the 2 finished runs of 3 (" in err and str(out) in err, err
    assert sorted(pd.read_csv(out)["algorithm"].unique()) == ["fedavg", "local"]


def test_an_interrupted_sweep_writes_the_finished_splits(tmp_path, monkeypatch, capsys):
    from playerfl_core.study import split_sweeps

    real, calls = split_sweeps._sweep_run, []

    def stop_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(split_sweeps, "_sweep_run", stop_on_third)
    out = tmp_path / "sweep.csv"
    argv = ["sweep", "--dataset", "heart", "--seeds", "0,1", "--rounds", "1", "--out", str(out)]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 130, err
    # Heart's model has 4 units: splits p = 0..4 on two seeds, 10 runs planned
    assert "stopped by SIGINT (Ctrl-C); wrote the 2 finished runs of 10 (" in err, err
    assert sorted(pd.read_csv(out)["algorithm"].unique()) == ["prefix_p0", "prefix_p1"]


def test_a_diverged_split_is_named_and_the_other_splits_are_kept(tmp_path, capsys):
    """Heart at lr 1.5 for 10 rounds: Local (p = 0) diverges, the other splits do not."""
    out = tmp_path / "sweep.csv"
    args = ["sweep", "--dataset", "heart", "--lr", "1.5", "--rounds", "10", "--out", str(out)]
    code = cli.main([*args, "--rules", "all"])
    err = capsys.readouterr().err
    assert code == 3
    assert "diverged (no rows written): heart seed 0, split p = 0:" in err
    assert "no rules table" in err and not (tmp_path / "sweep.rules.csv").exists()
    kept = pd.read_csv(out)["algorithm"].unique()
    assert sorted(kept) == ["prefix_p1", "prefix_p2", "prefix_p3", "prefix_p4"]


# -- long commands keep what finished whatever stops them ------------------------------------
FLAKY = """from data_prep import DataError
from data_prep.federation import Federation
import minidigits_federation as base


def load(root, seed, **kw):
    if seed == 1:
        raise DataError("seed 1's partition is missing (a test's dataset file)")
    data = base.load(root, seed, **kw)
    data.name = "flakydigits"
    return data


FEDERATION = Federation(
    name="flakydigits", load=load, model="small_cnn",
    training={"quick": {"rounds": 1, "batch_size": 32, "lr": 5e-3}},
)
"""


def test_a_dataset_that_fails_for_a_later_seed_keeps_the_earlier_seeds_runs(
    tmp_path, monkeypatch, capsys
):
    """The loader fails for seed 1: seed 0's two finished runs were discarded (exit 2, no
    file); now they are written, and the line says so and why the rest is missing."""
    from data_prep import registry

    shutil.copy(REPO / "tests" / "fixtures" / "minidigits_federation.py", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.MODULES_ENV, "")  # --dataset-module sets it: undone after
    monkeypatch.delenv(registry.MODULES_ENV)
    module = tmp_path / "flaky_federation.py"
    module.write_text(FLAKY)
    out = tmp_path / "run.csv"
    argv = ["run", "--dataset-module", str(module), "--dataset", "flakydigits"]
    code = cli.main([*argv, "--algorithms", "local,fedavg", "--seeds", "0,1", "--out", str(out)])
    (line,) = _said(capsys.readouterr().err)
    assert code == 2, line
    assert line.startswith("playerfl: seed 1 failed: flakydigits: load() in "), line
    assert "failed: DataError: seed 1's partition is missing (a test's dataset file); " in line
    assert "wrote the 2 finished runs of 4 (" in line and str(out) in line, line
    table = pd.read_csv(out)
    assert sorted(table["algorithm"].unique()) == ["fedavg", "local"]
    assert set(table["seed"]) == {0}


def test_an_unexpected_error_in_a_run_keeps_the_other_finished_runs(tmp_path, monkeypatch, capsys):
    calls, real = [], cli.run_federated

    def fail_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("CUDA error: an illegal memory access")
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "run_federated", fail_second)
    out = tmp_path / "run.csv"
    code = cli.main(["run", "--dataset", "heart", "--algorithms", "local,fedavg,playerfl",
                     "--rounds", "1", "--out", str(out)])  # fmt: skip
    (line,) = _said(capsys.readouterr().err)
    assert code == 3
    assert line.startswith(
        "playerfl: fedavg seed 0 failed: RuntimeError: CUDA error: an illegal memory access; "
        "wrote the 1 finished run of 3 ("
    ), line
    assert list(pd.read_csv(out)["algorithm"].unique()) == ["local"]


def _disk_full_on(path: Path, real):
    """``save_table`` that fails for ``path`` as a full disk does, after writing part of it."""

    def save(table, where):
        if Path(where) == path:
            _raise_enospc(where)
        return real(table, where)

    return save


def _raise_enospc(where):
    raise OSError(errno.ENOSPC, "No space left on device", str(where))


@pytest.mark.parametrize("elsewhere", [True, False], ids=["temp-on-another-disk", "same-disk"])
def test_a_full_disk_on_out_is_one_line_and_the_rows_are_kept_elsewhere_or_said_lost(
    elsewhere, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "full" / "run.csv"
    monkeypatch.setattr(cli_output, "save_table", _disk_full_on(out, cli_output.save_table))
    rescue = tmp_path / "other-disk"
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(rescue))
    if elsewhere:
        devices = {rescue: 1}
        real_device = cli_output._device
        monkeypatch.setattr(cli_output, "_device", lambda p: devices.get(p) or real_device(p))
    code = cli.main(["run", "--dataset", "heart", "--algorithms", "local,fedavg", "--rounds",
                     "1", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    (line,) = _said(err)
    assert code == 1 and "Traceback" not in err
    assert line.startswith(f"playerfl: could not write {out} (No space left on device): free "
                           "space there or give another --out; the ")  # fmt: skip
    saved = list(rescue.glob("playerfl-*-run.csv"))
    if elsewhere:
        (kept,) = saved
        assert line.endswith(f"finished rows were written to {kept} instead."), line
        assert sorted(pd.read_csv(kept)["algorithm"].unique()) == ["fedavg", "local"]
    else:
        assert line.endswith("finished rows could not be kept."), line
        assert saved == []


def test_a_stopped_run_on_a_full_disk_says_both_in_one_line(tmp_path, monkeypatch, capsys):
    """SIGTERM, then --out cannot be written (temporary folder on the same disk)."""
    calls, real = [], cli.run_federated

    def stop_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        return real(*args, **kwargs)

    out = tmp_path / "run.csv"
    monkeypatch.setattr(cli, "run_federated", stop_on_second)
    monkeypatch.setattr(cli_output, "save_table", _disk_full_on(out, cli_output.save_table))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "same-disk"))
    code = cli.main(["run", "--dataset", "heart", "--algorithms", "local,fedavg", "--rounds",
                     "1", "--out", str(out)])  # fmt: skip
    (line,) = _said(capsys.readouterr().err)
    assert code == 1
    assert re.fullmatch(
        re.escape(f"playerfl: stopped by SIGTERM; 1 finished run of 2, but could not write {out} "
                  "(No space left on device): free space there or give another --out; the ")
        + r"\d+ finished rows could not be kept\.",
        line,
    ), line  # fmt: skip


def test_a_full_disk_mid_grid_is_one_line_and_the_store_stays_consistent(
    tmp_path, monkeypatch, capsys
):
    """The second run's record cannot be written (its rows were): one line naming the store
    and the fix; the store holds one whole run, no temporary file, nothing damaged; a second
    grid computes only the missing run."""
    from playerfl_core.study import run_store

    real, records = run_store.atomic_write, []

    def full_on_second_record(path, write):
        if path.suffix == ".json":
            records.append(path)
            if len(records) == 2:
                return real(path, lambda tmp: tmp.write_text('{"par') and _raise_enospc(tmp))
        return real(path, write)

    monkeypatch.setattr(run_store, "atomic_write", full_on_second_record)
    store = tmp_path / "store"
    argv = ["grid", "--datasets", "heart", "--algorithms", "local", "--lrs", "0.01", "--seeds",
            "0,1", "--rounds", "1", "--workers", "1", "--store", str(store)]  # fmt: skip
    code = cli.main(argv)
    err = capsys.readouterr().err
    (line,) = _said(err)
    assert code == 1 and "Traceback" not in err, line
    assert f"into the store {store} (No space left on device); the 1 runs written" in line, line
    assert "Free space there (or give another --store), then run the same command again" in line
    assert list((store / "runs").glob(".*.tmp")) == []
    stored, damaged = Store(store).scan()
    assert [r["status"] for r in stored] == [OK] and damaged == {}
    code, shown = _run_cli(["status", "--store", str(store)], capsys)
    assert code == 0 and "damaged" not in shown
    monkeypatch.setattr(run_store, "atomic_write", real)
    code, shown = _run_cli(argv, capsys)
    assert code == 0 and f"store {store}: 1 runs computed now, 2 in this grid" in shown, shown


@pytest.mark.parametrize("how", ["sigint", "sighup"])
def test_a_signal_anywhere_in_a_command_is_one_line_naming_it(how, monkeypatch, capsys):
    """Outside the runs' own handling (here: while `status` reads a store), the line said
    'playerfl: ' and nothing more, and SIGHUP ended the command silently with 129."""
    signum, said, exit_code = STOPS[how]

    def hang_up(args):
        os.kill(os.getpid(), signum)
        time.sleep(5)
        raise AssertionError(f"{how} was not handled")

    monkeypatch.setattr(cli, "cmd_status", hang_up)
    code = cli.main(["status"])
    assert code == exit_code
    assert _said(capsys.readouterr().err) == [f"playerfl: {said}."]


def test_a_file_that_cannot_be_written_is_one_line_naming_it(monkeypatch, capsys):
    """Any command's OSError (here a full disk under `status`) is one line with the path."""

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/rules.csv")

    monkeypatch.setattr(cli, "cmd_status", full)
    assert cli.main(["status"]) == 1
    assert capsys.readouterr().err == "playerfl: /data/rules.csv: No space left on device\n"


def test_a_killed_sweep_worker_is_one_line_and_the_finished_splits_are_kept(
    tmp_path, monkeypatch, capsys
):
    """`sweep --workers 2`: a worker killed (kill -9) once a split finished; the finished
    splits are written and the line names the dead worker."""
    from playerfl_core.study import split_oracle

    real, victims = split_oracle.run_sweep, []

    def kill_a_worker_after_the_first_split(*args, finished, **kwargs):
        def watch():
            while not finished:
                time.sleep(0.05)
            victim = _a_worker(psutil.Process().children())
            victims.append(victim.pid)
            victim.kill()

        threading.Thread(target=watch, daemon=True).start()
        return real(*args, finished=finished, **kwargs)

    monkeypatch.setattr(split_oracle, "run_sweep", kill_a_worker_after_the_first_split)
    out = tmp_path / "sweep.csv"
    code = cli.main(["sweep", "--dataset", "heart", "--rounds", "30", "--workers", "2",
                     "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    (line,) = _said(err)
    assert line.startswith(
        f"playerfl: the sweep failed: WorkerDied: a worker process (pid {victims[0]}) killed "
        "by SIGKILL; wrote the "
    ), line
    assert "__main__" not in line
    kept = pd.read_csv(out)["algorithm"].nunique()
    assert 1 <= kept < 5 and f"finished run{'s' if kept > 1 else ''} of 5 (" in line, line


def _a_worker(processes: list[psutil.Process]) -> psutil.Process:
    """A pool's worker among ``processes`` (not multiprocessing's resource tracker)."""
    return next(p for p in processes if "spawn_main" in " ".join(p.cmdline()))


@pytest.mark.parametrize("fault", ["silo lost", "crash"])
def test_a_flower_run_that_fails_midway_writes_the_finished_runs(
    fault, two_runs, tmp_path, monkeypatch, capsys
):
    """A silo lost, or Flower's runtime crashing, after one run finished: that run's rows
    are written (they were dropped: exit 3 and nothing written, or a traceback)."""
    from playerfl_core.flower import link

    def fails_after_one_run(jobs, silos, out_dir, finished, progress):
        finished.append(two_runs[1])  # a finished Local run's table, as the server collects it
        if fault == "silo lost":
            raise link.SiloLost("silos [2] did not answer within 600 s")
        raise RuntimeError("Simulation Runtime crashed.")

    monkeypatch.setattr(link, "simulate", fails_after_one_run)
    out = tmp_path / "flower.csv"
    code = cli.main(["run", "--dataset", "heart", "--algorithms", "local,fedavg", "--backend",
                     "flower", "--rounds", "3", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    (line,) = _said(err)
    why = {
        "silo lost": "silos [2] did not answer within 600 s",
        "crash": "the Flower run failed: RuntimeError: Simulation Runtime crashed",
    }[fault]
    assert code == 3 and "Traceback" not in err
    assert line.startswith(f"playerfl: {why}; wrote the 1 finished run of 2 ("), line
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(_csv(two_runs[1], tmp_path)))


def _csv(table: pd.DataFrame, folder: Path) -> Path:
    from playerfl_core.stats.results import save_table

    return save_table(table, folder / "expected.csv")


def _read_stderr(proc) -> list[str]:
    """Collect ``proc``'s stderr as it comes (progress bars end lines with \\r)."""
    chunks: list[str] = []

    def read():
        while chunk := os.read(proc.stderr.fileno(), 4096):
            chunks.append(chunk.decode(errors="replace"))

    threading.Thread(target=read, daemon=True).start()
    return chunks


FLOWER_RUN = [
    "run", "--dataset", "heart", "--algorithms", "local,fedavg,playerfl", "--backend",
    "flower", "--seeds", "0,1", "--rounds", "30",
]  # fmt: skip


@pytest.mark.slow  # Ray's start and the first run: 23 to 47 s a signal, by load
@pytest.mark.parametrize("how", ["sigint", "sigterm", "sighup"])
def test_a_flower_run_stopped_by_a_signal_keeps_its_finished_runs(how, tmp_path):
    """Ctrl-C hung `run --backend flower` (an empty 'playerfl: ' line, then nothing: Flower's
    server thread waited for silos that were gone) and SIGTERM ended in Ray's crash report,
    exit 134; each now stops within seconds, Ray shut down, the finished runs written."""
    signum, said, exit_code = STOPS[how]
    out = tmp_path / "flower.csv"
    env = {k: v for k, v in _cli_env().items() if k != "TQDM_DISABLE"}  # the bar shows progress
    proc = subprocess.Popen(
        [sys.executable, "-m", "playerfl_core.cli", *FLOWER_RUN, "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        chunks = _read_stderr(proc)
        deadline = time.monotonic() + 240
        while not re.search(r"\b[1-5]/6\b", "".join(chunks)):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(chunks)
            time.sleep(0.1)
        helpers = psutil.Process(proc.pid).children(recursive=True)  # Ray's processes
        proc.send_signal(signum)
        sent = time.monotonic()
        proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    err = "".join(chunks)
    assert took <= 15, f"{took:.1f} s to stop"
    assert proc.returncode == exit_code, err
    (line,) = _said(err)
    done = re.search(r"wrote the (\d) finished runs? of 6 \(\d+ rows\) to (\S+) ", line)
    assert line.startswith(f"playerfl: {said}; ") and done and done[2] == str(out), err
    assert "Traceback" not in err
    table = pd.read_csv(out)
    assert table.groupby(["algorithm", "seed"]).ngroups == int(done[1])
    deadline = time.monotonic() + 15
    while not _gone(helpers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(helpers), [p.pid for p in helpers if p.is_running()]


@pytest.mark.slow  # Ray's start: about 20 s
def test_a_flower_run_starts_its_own_ray_whatever_cluster_is_announced(tmp_path):
    """The simulation's ray.init took the cluster that RAY_ADDRESS or `ray start` announced on
    the machine: a test's cluster stopped mid-run ended every run ('received SIGTERM'), and an
    unreachable address hung it for minutes."""
    out = tmp_path / "flower.csv"
    args = ["run", "--dataset", "heart", "--algorithms", "local", "--backend", "flower",
            "--seeds", "0", "--rounds", "2", "--out", str(out)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "playerfl_core.cli", *args],
        env={**_cli_env(), "RAY_ADDRESS": "127.0.0.1:9"},  # nothing listens there
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert pd.read_csv(out)["seed"].unique().tolist() == [0]


def test_a_killed_grid_worker_is_one_line_and_the_grid_resumes(tmp_path):
    """kill -9 of one of a grid's two workers ended in concurrent.futures' traceback, whose
    advice (`if __name__ == '__main__'`) does not apply to the command line."""
    store = tmp_path / "store"
    proc = _start_grid(store)
    children = _wait_for_runs(proc, store)
    victim = _a_worker(children)
    victim.kill()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    (line,) = _said(err)
    assert f"a worker process (pid {victim.pid}) killed by SIGKILL while computing heart_" in line
    assert f"are stored in {store}; run the same command again to resume" in line, line
    assert "Traceback" not in err and "__main__" not in err
    stored, damaged = Store(store).scan()
    assert stored and damaged == {} and all(r["status"] == OK for r in stored)
    assert list((store / "runs").glob(".*.tmp")) == []
    restart = subprocess.run(
        [sys.executable, "-m", "playerfl_core.cli", *KILL_GRID, "--store", str(store)],
        env=_cli_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert restart.returncode == 0, restart.stderr
    assert f"{12 - len(stored)} runs computed now, 12 in this grid" in restart.stdout


@pytest.mark.parametrize("how", ["sigterm", "sighup"])  # a throw-away Ray: 11 s each
def test_a_grid_on_ray_stopped_by_a_signal_keeps_its_runs_and_says_so(how, tmp_path):
    """Ray's `init` installs its own SIGTERM handler (exit at once, no line); the grid keeps
    its own, so both signals stop it as on the local backend."""
    signum, said, exit_code = STOPS[how]
    store = tmp_path / "store"
    argv = [*KILL_GRID[: KILL_GRID.index("--workers")], "--backend", "ray", "--address", "local"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "playerfl_core.cli", *argv, "--store", str(store)],
        env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not list(store.glob("runs/heart_*.json")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == exit_code, err
    (line,) = _said(err)
    assert line.startswith(f"playerfl: grid {said} after ") and f"stored in {store}; " in line
    stored, damaged = Store(store).scan()
    assert stored and damaged == {} and all(r["status"] == OK for r in stored)


# -- two grids on one store (issue 25, item 5) --------------------------------------------------
def test_a_second_grid_on_a_busy_store_waits_and_a_dead_ones_lock_is_taken_over(tmp_path, capsys):
    """The CI failure of stop 31: two chapters computing into one store at once; the second
    was refused. It now waits for the first (which here releases after 2 s), then computes."""
    from playerfl_core.study.run_store import LOCK_FILE

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    try:
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / LOCK_FILE).write_text(str(other.pid))
        started = time.monotonic()
        result = _grid(tmp_path, progress=True)
        assert other.poll() is not None, "computed while the other grid held the lock"
        assert time.monotonic() - started >= 1.5
    finally:
        other.kill()
        other.wait()
    assert f"Waiting for another grid (process {other.pid})" in capsys.readouterr().err
    assert result.computed == 2
    assert not (tmp_path / "runs" / LOCK_FILE).exists()  # released at the end
    (tmp_path / "runs" / LOCK_FILE).write_text(str(other.pid))  # its process is gone
    assert _grid(tmp_path, fresh=True).computed == 2  # the lock is taken over
    assert not (tmp_path / "runs" / LOCK_FILE).exists()


def test_a_grid_that_waited_computes_only_what_the_other_left_missing(tmp_path, capsys):
    """Runs the first grid stored while the second waited are read, not computed again; a grid
    without progress (a chapter's, whose stderr nbval may compare) waits without a word."""
    from playerfl_core.study.run_store import LOCK_FILE

    _grid(tmp_path)  # what the first grid computes
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    try:
        (tmp_path / "runs" / LOCK_FILE).write_text(str(other.pid))
        for manifest in (tmp_path / "runs").glob("*.json"):  # not yet stored when planned ...
            manifest.rename(manifest.with_suffix(".hidden"))
        threading.Timer(0.3, _unhide, [tmp_path / "runs"]).start()  # ... stored meanwhile
        assert _grid(tmp_path).computed == 0
        assert "Waiting" not in capsys.readouterr().err
    finally:
        other.kill()
        other.wait()


def _unhide(folder):
    for hidden in folder.glob("*.hidden"):
        hidden.rename(hidden.with_suffix(".json"))


def test_settings_made_for_another_federation_are_refused_before_training():
    """Issue 25: make_config('heart') applied to Digits ran without a word; a variant still
    trains with its base's settings."""
    from playerfl_core import make_config, run_federated

    digits = data_prep.load("digits", profile="quick", seed=0)
    with pytest.raises(ValueError, match=r"made for 'heart' .* use make_config\('digits'"):
        run_federated(digits, get_algorithm("local"), make_config("heart", rounds=1))
    rotated = data_prep.load("digits_rotate", profile="quick", seed=0)
    config = make_config("digits", rounds=1, progress=False, device="cpu")
    assert len(run_federated(rotated, get_algorithm("local"), config).table())


def test_every_test_the_readme_reliability_table_names_exists():
    text = (REPO / "README.md").read_text()
    named = re.findall(r"`(test_\w+\.py)::(test_\w+)`", text)
    assert len(named) >= 10
    for file, name in named:
        source = (REPO / "tests" / file).read_text()
        assert f"def {name}(" in source, f"README names {file}::{name}, which does not exist"


def test_a_stopped_simulation_ends_the_processes_it_started(monkeypatch):
    """Ray's silo workers left running after a stopped `run --backend flower` had exited (their
    raylet gone, they noticed late): the command ends what it started, asking first, then
    terminating, and killing one that ignores SIGTERM."""
    from playerfl_core.flower import processes

    monkeypatch.setattr(processes, "ENDS_WITHIN_S", 0.5)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ignoring', flush=True); time.sleep(60)"
    )
    before = set(processes.descendants())
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for code in ("import time; time.sleep(60)", stubborn, "pass")
    ]
    started = set(processes.descendants()) - before
    assert {p.pid for p in started} == {p.pid for p in procs}
    assert procs[1].stdout.readline() == "ignoring\n"  # its handler is set
    t = time.monotonic()
    processes.end_processes(started)
    assert time.monotonic() - t < 6
    assert [p.wait(timeout=5) for p in procs] == [-signal.SIGTERM, -signal.SIGKILL, 0]
