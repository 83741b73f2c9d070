"""Fault injection at the edges where files come in and go out: output paths that are not
files, table formats, incomplete or cut-off tables, archives of two profiles, folders where data
files go, one-class federations, environment variables and wrong argument types.

Each case asserts one clear line naming the option, path or variable and the fix, given before
any training, and that nothing that was there is replaced. Kept fast: Heart, quick profile, one
round; committed archives are only read (copied to a temporary folder before any damage).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

import data_prep
from data_prep import DataError, registry
from playerfl_core import cli, get_algorithm, make_config, run_federated
from playerfl_core.stats.results import atomic_write, load_table, save_table
from playerfl_core.study.archive import ArchiveError, load_archive, pack
from playerfl_core.study.run_store import Store
from playerfl_core.study.split_rules_table import rules_for_sweep
from playerfl_core.study.split_sweeps import load_sweeps

REPO = Path(__file__).resolve().parent.parent
COMMITTED = [REPO / "stores" / p for p in ("quick", "standard", "fair")]


def _run_cli(argv, capsys) -> tuple[int, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _one_line(code: int, out: str, *expected: str) -> None:
    assert code == 2 and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1, out
    for text in expected:
        assert text in out, (text, out)


def _stamp(folder: Path) -> list:
    return [(f.stat().st_mtime_ns, f.stat().st_size) for f in sorted(folder.iterdir())]


@pytest.fixture(autouse=True)
def committed_archives_stay_intact():
    """No fault touches the committed archives' files (the last test re-verifies them)."""
    before = {p: _stamp(p) for p in COMMITTED}
    yield
    assert {p: _stamp(p) for p in COMMITTED} == before


# -- output paths -----------------------------------------------------------------------------
def _special(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A path of ``kind`` that writing a file would replace, and the word the refusal uses."""
    if kind == "device":
        return Path("/dev/null"), "a character device"
    if kind == "pipe":
        path = tmp_path / "pipe.csv"
        os.mkfifo(path)
        return path, "a named pipe"
    target = tmp_path / "target.csv"
    target.write_text("kept\n")
    path = tmp_path / "link.csv"
    path.symlink_to(target)
    return path, "a symbolic link"


OUT_OPTIONS = {  # subcommand: its argv with the output path as {out}
    "run": ["run", "--dataset", "heart", "--rounds", "1", "--out", "{out}"],
    "sweep": ["sweep", "--dataset", "heart", "--rounds", "1", "--out", "{out}"],
    "grid": "grid --datasets heart --algorithms local --lrs 0.01 --rounds 1 --store {tmp}/store "
    "--out {out}".split(),
    "rules": ["rules", "--sweep", str(COMMITTED[1]), "--out", "{out}"],
}


def _is_intact(path: Path, kind: str) -> bool:
    if kind == "device":
        return path.is_char_device()
    if kind == "pipe":
        return path.is_fifo()
    return path.is_symlink() and (path.parent / "target.csv").read_text() == "kept\n"


@pytest.mark.parametrize("kind", ["device", "pipe", "link"])
@pytest.mark.parametrize("command", list(OUT_OPTIONS))
def test_an_out_that_is_not_a_file_is_refused_and_left_alone(command, kind, tmp_path, capsys):
    path, word = _special(tmp_path, kind)
    argv = [
        a.replace("{out}", str(path)).replace("{tmp}", str(tmp_path)) for a in OUT_OPTIONS[command]
    ]
    start = time.process_time()
    code, out = _run_cli(argv, capsys)
    _one_line(code, out, f"--out {path} is {word}", "give")
    assert time.process_time() - start < 5  # refused before any training
    assert _is_intact(path, kind) and not (tmp_path / "store" / "runs").exists()


@pytest.mark.parametrize("kind", ["pipe", "link"])
def test_a_sweeps_rules_file_that_is_not_a_file_is_refused(kind, tmp_path, capsys):
    special, word = _special(tmp_path, kind)
    rules = tmp_path / "sweep.rules.csv"
    special.rename(rules) if kind == "pipe" else rules.symlink_to(tmp_path / "target.csv")
    argv = ["sweep", "--dataset", "heart", "--rounds", "1", "--rules", "all"]
    code, out = _run_cli([*argv, "--out", str(tmp_path / "sweep.csv")], capsys)
    _one_line(code, out, f"--out {rules} is {word}")
    assert not (tmp_path / "sweep.csv").exists()


def test_the_archive_destination_that_is_a_device_is_named(capsys):
    code, out = _run_cli(["archive", "pack", "--archive", "/dev/null"], capsys)
    _one_line(code, out, "--archive", "/dev/null is a character device, not a folder")


@pytest.mark.parametrize("kind", ["pipe", "link"])
def test_the_atomic_writer_never_replaces_a_link_or_a_pipe(kind, tmp_path):
    path, word = _special(tmp_path, kind)
    with pytest.raises(ValueError, match=f"cannot write {path}: it is {word}"):
        atomic_write(path, lambda p: p.write_text("new\n"))
    assert _is_intact(path, kind) and not list(tmp_path.glob(".*.tmp"))


# -- the format follows the extension --------------------------------------------------------
def test_the_format_follows_the_extension(tmp_path, capsys):
    parquet = tmp_path / "run.parquet"
    argv = ["run", "--dataset", "heart", "--algorithms", "local", "--rounds", "1"]
    code, out = _run_cli([*argv, "--out", str(parquet)], capsys)
    assert code == 0, out
    table = pd.read_parquet(parquet)  # Parquet, not CSV text under a Parquet name
    assert len(table) and set(table["algorithm"]) == {"local"}
    pd.testing.assert_frame_equal(load_table(parquet), table)
    csv = save_table(table, tmp_path / "run.csv")
    assert csv.read_text().startswith("dataset,")
    pd.testing.assert_frame_equal(load_table(csv), table, check_dtype=False)
    with pytest.raises(ValueError, match=r"must end in \.csv or \.parquet.*not \.json"):
        save_table(table, tmp_path / "run.json")
    for command in (argv, ["rules", "--sweep", str(COMMITTED[1])]):
        code, out = _run_cli([*command, "--out", str(tmp_path / "r.json")], capsys)
        _one_line(code, out, "--out", "ends in .json", ".csv or .parquet")
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "run.json").exists()


def test_a_sweeps_rules_file_takes_the_sweeps_format():
    assert cli._rules_path("out/s.parquet") == "out/s.rules.parquet"
    assert cli._rules_path("out/s.csv") == "out/s.rules.csv"


# -- incomplete and cut-off tables -----------------------------------------------------------
@pytest.fixture(scope="module")
def heart_sweep() -> pd.DataFrame:
    """Five seeds of the committed standard sweep of Heart (real rows, read-only)."""
    table = pd.read_parquet(
        COMMITTED[1] / "runs.parquet", filters=[("dataset", "==", "heart"), ("seed", "<", 5)]
    )
    table = table[table["algorithm"].astype(str).str.startswith("prefix_p")]
    for col in ("dataset", "algorithm", "split", "metric"):
        table[col] = table[col].astype(str)
    table = table.drop(columns="run_id").sort_values(["seed", "algorithm", "round"])
    assert table["seed"].nunique() == 5 and table["algorithm"].nunique() == 5
    return table.reset_index(drop=True)


CUTS = {
    "cut in half": lambda t: t.iloc[: len(t) // 2],
    "a split dropped on one seed": lambda t: t[
        ~((t["seed"] == 3) & (t["algorithm"] == "prefix_p2"))
    ],
    "last rounds dropped on one seed": lambda t: t[~((t["seed"] == 1) & (t["round"] > 10))],
    "a client dropped on one seed": lambda t: t[~((t["seed"] == 4) & (t["client"] == 2))],
}
CUT_SAYS = {
    "cut in half": ["dataset heart", "lack splits"],
    "a split dropped on one seed": ["dataset heart", "seeds 3 (p = 2) lack splits"],
    "last rounds dropped on one seed": ["dataset heart", "seeds 1 end before round"],
    "a client dropped on one seed": ["dataset heart", "seeds 4 score fewer clients"],
}


@pytest.mark.parametrize("cut", list(CUTS))
def test_an_incomplete_sweep_table_is_refused_naming_the_seeds(cut, heart_sweep, tmp_path, capsys):
    path = tmp_path / "sweep.parquet"
    save_table(CUTS[cut](heart_sweep), path)
    with pytest.raises(ValueError, match="is incomplete") as err:
        load_sweeps(path)
    for text in [*CUT_SAYS[cut], "Re-run the sweep for those seeds"]:
        assert text in str(err.value), (text, str(err.value))
    with pytest.raises(ValueError, match=re.escape(CUT_SAYS[cut][1])):  # a table, too
        rules_for_sweep(CUTS[cut](heart_sweep), "standard", progress=False)
    argv = [
        "rules",
        "--sweep",
        str(path),
        "--profile",
        "standard",
        "--out",
        str(tmp_path / "r.csv"),
    ]
    start = time.process_time()
    code, out = _run_cli(argv, capsys)
    _one_line(code, out, *CUT_SAYS[cut])
    assert time.process_time() - start < 10 and not (tmp_path / "r.csv").exists()


def test_a_folder_that_holds_no_sweep_is_named(tmp_path):
    with pytest.raises(ValueError, match="neither an archive .* nor a grid store"):
        load_sweeps(tmp_path)


def test_a_complete_sweep_table_loads(heart_sweep, tmp_path):
    path = save_table(heart_sweep, tmp_path / "sweep.csv")
    assert len(load_sweeps(path)) == len(heart_sweep)


@pytest.mark.parametrize("name", ["sweep.csv", "sweep.parquet"])
def test_a_cut_off_table_file_is_named_as_damaged(name, heart_sweep, tmp_path, capsys):
    path = save_table(heart_sweep, tmp_path / name)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 7])  # mid-line, mid-column
    with pytest.raises(ValueError, match="is cut off or damaged.*re-run the command that made it"):
        load_sweeps(path)
    argv = [
        "rules",
        "--sweep",
        str(path),
        "--profile",
        "standard",
        "--out",
        str(tmp_path / "r.csv"),
    ]
    code, out = _run_cli(argv, capsys)
    _one_line(code, out, str(path), "cut off or damaged", "restore it from git")


# -- archives hold one profile ---------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_store(tmp_path_factory) -> Path:
    """A finished quick-profile store of two one-round Heart runs."""
    from playerfl_core.study.experiments import run_grid

    root = tmp_path_factory.mktemp("quick_store")
    run_grid(
        ["heart"], ["local"], "quick", store=root, seeds=(0, 1), lrs=(0.01,), rounds=1,
        workers=1, progress=False,
    )  # fmt: skip
    return root


def test_pack_refuses_runs_of_another_profile(quick_store, tmp_path, capsys):
    argv = ["archive", "pack", "--profile", "standard", "--store", str(quick_store)]
    code, out = _run_cli([*argv, "--archive", str(tmp_path / "a")], capsys)
    _one_line(code, out, "2 of profile 'quick'", "not 'standard' (--profile)", "--profile quick")
    assert not (tmp_path / "a" / "manifest.json").exists()


def test_verify_fails_an_archive_whose_runs_have_another_profile(quick_store, tmp_path, capsys):
    folder = pack(Store(quick_store), "quick", tmp_path / "a")
    assert len(load_archive(folder)[0])  # packed with its own profile, it reads
    manifest = folder / "manifest.json"
    said = manifest.read_text().replace('"profile": "quick",\n', '"profile": "standard",\n', 1)
    manifest.write_text(said)  # the manifest's profile comes before its runs' (sorted keys)
    capsys.readouterr()  # pack's progress bar
    with pytest.raises(
        ArchiveError, match="2 of profile 'quick'.*manifest says profile 'standard'"
    ):
        load_archive(folder)
    code, out = _run_cli(["archive", "verify", "--archive", str(folder), "--sample", "1"], capsys)
    _one_line(code, out, str(manifest), "manifest says profile 'standard'")


def test_a_datasets_filter_that_matches_nothing_lists_what_is_there(quick_store, tmp_path, capsys):
    argv = ["archive", "pack", "--profile", "quick", "--store", str(quick_store), "--datasets"]
    code, out = _run_cli([*argv, "digits", "--archive", str(tmp_path / "a")], capsys)
    _one_line(code, out, "--datasets digits matched none", "(heart)")


def test_a_damaged_archive_table_is_named_with_the_fix(tmp_path, capsys):
    folder = tmp_path / "quick"
    shutil.copytree(COMMITTED[0], folder)
    data = (folder / "runs.parquet").read_bytes()
    (folder / "runs.parquet").write_bytes(data[: len(data) // 2])
    code, out = _run_cli(["archive", "verify", "--archive", str(folder), "--sample", "1"], capsys)
    _one_line(code, out, f"{folder / 'runs.parquet'} is damaged", "git checkout --", "re-pack")


# -- data ------------------------------------------------------------------------------------
ONE_CLASS = """
import numpy as np
import torch

from data_prep import FederatedData
from data_prep.federation import Federation
from data_prep.partition import split_clients


def load(root, seed: int) -> FederatedData:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    keep = bunch.target == 3  # real images, all of one class
    x = torch.from_numpy((bunch.data[keep] / 16.0).astype(np.float32)).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(bunch.target[keep].astype(np.int64))
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(len(y)), 2)
    return FederatedData(
        name="threes", clients=split_clients(x, y, parts, rng), num_classes=10,
        input_shape=(1, 8, 8), class_names=[str(d) for d in range(10)],
    )


FEDERATION = Federation(name="threes", load=load, model="small_cnn",
                        training={"quick": {"rounds": 1, "batch_size": 32, "lr": 5e-3}})
"""


@pytest.fixture
def clean_registry(monkeypatch):
    registry.available_datasets()
    monkeypatch.setattr(registry, "_FEDERATIONS", dict(registry._FEDERATIONS))
    monkeypatch.setattr(registry, "_loaded_files", set())
    monkeypatch.delenv(registry.MODULES_ENV, raising=False)


def test_a_one_class_federation_is_refused(tmp_path, clean_registry, capsys):
    module = tmp_path / "threes.py"
    module.write_text(ONE_CLASS)
    argv = ["run", "--dataset-module", str(module), "--dataset", "threes", "--out"]
    code, out = _run_cli([*argv, str(tmp_path / "o.csv")], capsys)
    assert code == 2 and "Traceback" not in out, out
    assert "federation 'threes': every label of every client and split is class 3 ('3')" in out
    assert "at least two classes" in out and not (tmp_path / "o.csv").exists()
    with pytest.raises(DataError, match="'threes'.*class 3.*every score would be 1.0"):
        registry.load("threes", seed=0)


# -- a folder where a data file goes ---------------------------------------------------------
def test_a_folder_where_a_heart_file_goes_is_named(tmp_path):
    shutil.copytree(data_prep.data_root() / "heart", tmp_path / "heart")
    victim = tmp_path / "heart" / "processed.va.data"
    victim.unlink()
    victim.mkdir()
    with pytest.raises(DataError, match=f"heart: {victim} is a folder.*remove it \\(rm -r"):
        data_prep.load("heart", seed=0, data_root=tmp_path)
    assert not list((tmp_path / "heart").glob("*.part")) and victim.is_dir()


@pytest.mark.parametrize(
    "dataset, where",
    [
        ("fmnist", "FashionMNIST/raw/train-images-idx3-ubyte"),
        ("emnist", "EMNIST/raw/emnist-byclass-train-labels-idx1-ubyte"),
        ("emnist", "EMNIST/raw/emnist-byclass-train-labels-idx1-ubyte.gz"),
        ("cifar10", "cifar-10-batches-py/data_batch_1"),
        ("cifar10", "cifar-10-python.tar.gz"),
        ("sent140", "sent140/training.1600000.processed.noemoticon.csv"),
    ],
)
def test_a_folder_where_a_data_file_goes_is_named(dataset, where, tmp_path):
    (tmp_path / where).mkdir(parents=True)
    module = importlib.import_module(f"data_prep.{dataset}")
    with pytest.raises(DataError, match=f"{dataset}: {tmp_path / where} is a folder"):
        module.prepare(tmp_path)
    assert not list(tmp_path.rglob("*.part"))


# -- environment variables and argument types ------------------------------------------------
@pytest.mark.parametrize(
    "variable, argv",
    [
        ("PLAYERFL_RESULTS", ["status"]),
        ("PLAYERFL_STORES", ["archive", "verify", "--profile", "quick"]),
        ("PLAYERFL_DATA", ["run", "--dataset", "heart", "--rounds", "1", "--out", "{tmp}/o.csv"]),
    ],
)
def test_a_variable_naming_a_file_is_named(variable, argv, tmp_path, monkeypatch, capsys):
    file = tmp_path / "a_file"
    file.write_text("x")
    monkeypatch.setenv(variable, str(file))
    code, out = _run_cli([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2 and "Traceback" not in out, out
    assert f"{variable}='{file}' is a file, not a folder; set {variable}" in out


@pytest.fixture(scope="module")
def heart():
    return data_prep.load("heart", seed=0)


@pytest.mark.parametrize(
    "arguments, says",
    [
        (lambda d: (d, get_algorithm("fedavg"), None), "takes a RunConfig as config, got NoneType"),
        (lambda d: (d, get_algorithm("fedavg"), {"lr": 0.1}), "RunConfig as config, got dict"),
        (lambda d: (d, 3, make_config("heart")), "takes an algorithm object, got int"),
        (
            lambda d: ("heart", get_algorithm("fedavg"), make_config("heart")),
            "federation as data, got str",
        ),
    ],
)
def test_wrong_argument_types_name_what_was_expected(arguments, says, heart):
    with pytest.raises(TypeError, match=says) as err:
        run_federated(*arguments(heart))
    assert any(fix in str(err.value) for fix in ("make_config(", "get_algorithm(", "load("))


def test_names_that_are_not_text_are_a_type_error():
    with pytest.raises(TypeError, match="get_algorithm takes an algorithm's name.*got list"):
        get_algorithm(["fedavg"])
    with pytest.raises(TypeError, match="make_config takes the dataset by name.*got list"):
        make_config(["heart"])


def test_the_committed_archives_still_verify(capsys):
    """After every fault above: the committed archives load and one run re-computes."""
    for path in COMMITTED[1:]:
        assert len(load_archive(path)[0])
    code, out = _run_cli(
        ["archive", "verify", "--archive", str(COMMITTED[0]), "--sample", "1"], capsys
    )
    assert code == 0, out
