"""A federation declared in a file outside the repository runs through the CLI and every chapter.

The file (tests/fixtures/minidigits_federation.py) is copied to a temporary folder first, so
nothing in ``playerfl_core`` or ``data_prep`` names it; bad dataset files get one clear message
naming the file and the fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from data_prep import DataError, registry
from data_prep.federation import Federation

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "minidigits_federation.py"
NO_FEDERATION = {"04b_beyond_the_paper"}
"""Chapters that take no federation: 04b judges the pre-registered federations only (the
appendix runs the same rules on a user's federation)."""
CHAPTERS = sorted(
    p.stem for p in (REPO / "chapters").glob("[0-9]*.ipynb") if p.stem not in NO_FEDERATION
)
SMALL = {  # chapter -> papermill parameters that keep it to seconds on the tiny federation
    "00_federated_learning_in_one_hour": {"alphas": "0.3,10"},
    "01_playerfl_in_one_run": {},
    "02_layerwise_divergence": {},
    "03_federation_sensitivity": {"thresholds": "0.5,2", "batch_counts": "1", "batch_draws": 1},
    "03a_the_algorithm_and_its_metric": {"seeds": "0,1"},
    "04_does_the_rule_pick_the_right_split": {
        "profile": "quick",
        "seeds": "0,1",
        "het_base": "minidigits",
        "het_alphas": "0.3",
        "het_kinds": "rotate",
        "het_mixed": "",
        "het_seeds": "0,1",
    },
    "05_playerfl_vs_baselines": {"profile": "quick", "n_boot": 200},
    "06_reproduction_report": {
        "profile": "quick",
        "timing_algorithms": "fedavg",
        "option_algorithms": "fedavg",
        "claims_profile": "quick",
        "claims_datasets": "minidigits",
        "metric_datasets": "minidigits",
        "n_boot": 200,
    },
    "07_from_notebook_to_silos": {
        "rounds": 2,
        "algorithms": "local,fedavg,playerfl",
        "process_rounds": 1,
    },
}


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """The dataset file in a folder outside the repository."""
    folder = tmp_path_factory.mktemp("my_federation")
    assert REPO not in folder.resolve().parents
    return Path(shutil.copy(FIXTURE, folder / "my_federation.py"))


@pytest.fixture
def clean_registry(monkeypatch):
    """Register into a copy: what a test adds does not leak into other tests."""
    registry.available_datasets()  # the built-ins are discovered before the copy is made
    monkeypatch.setattr(registry, "_FEDERATIONS", dict(registry._FEDERATIONS))
    monkeypatch.setattr(registry, "_loaded_files", set())
    monkeypatch.delenv(registry.MODULES_ENV, raising=False)


def test_a_file_outside_the_package_adds_a_federation(outside, clean_registry):
    from playerfl_core import make_config, run_federated
    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.study.experiments import default_grid

    assert registry.load_dataset_module(outside) == ["minidigits"]
    assert "minidigits" in registry.available_datasets()
    assert str(outside.resolve()) in os.environ[registry.MODULES_ENV]  # workers will see it
    fd = registry.load("minidigits", seed=0)
    assert fd.model == "small_cnn" and fd.n_clients == 3
    assert registry.load("minidigits_alpha0.3").params["alpha"] == 0.3  # variants come free
    assert default_grid("minidigits", "quick")["lrs"] == (1e-2, 5e-3)
    assert default_grid("minidigits", "standard")["seeds"] == tuple(range(10))  # defaults
    run = run_federated(fd, get_algorithm("playerfl"), make_config("minidigits", seed=0))
    assert run.table()["round"].max() == 1  # the declared two rounds
    assert registry.load_dataset_module(outside) == ["minidigits"]  # loading twice is harmless


def test_the_cli_takes_a_dataset_module(outside, tmp_path):
    out = tmp_path / "run.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TQDM_DISABLE": "1"}
    env.pop(registry.MODULES_ENV, None)
    cmd = [sys.executable, "-m", "playerfl_core.cli", "run", "--dataset-module", str(outside)]
    done = subprocess.run(
        [*cmd, "--dataset", "minidigits", "--algorithms", "local,playerfl", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert out.exists()
    missing = subprocess.run(
        [*cmd[:-1], str(tmp_path / "nope.py"), "--dataset", "minidigits", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert missing.returncode == 2 and "nope.py' does not exist" in missing.stderr


def _write(folder: Path, body: str, name: str = "bad_federation.py") -> Path:
    path = folder / name
    path.write_text(body)
    return path


HEADER = "from data_prep.federation import Federation\n"


@pytest.mark.parametrize(
    "body, message",
    [
        ("import nonexistent_package\n", r"failed to import: ModuleNotFoundError.*line 1"),
        ("x = 1\n", r"declares no federation: end it with FEDERATION = Federation"),
        (HEADER + "FEDERATION = Federation(name='x')\n", r"failed to import: TypeError"),
        (HEADER + "FEDERATION = Federation(name='mine', load=3)\n", r"load must be a function"),
        (HEADER + "FEDERATION = Federation(name='my_set', load=print)\n", r"'_' is reserved"),
        (
            HEADER + "FEDERATION = Federation(name='heart', load=print)\n",
            r"'heart' is already registered \(by the library\)",
        ),  # fmt: skip
        ("import sys\nsys.exit(0)\n", r"called sys.exit\(0\) while being imported"),
        (
            HEADER + "FEDERATION = Federation(name='mine', load=print, "
            "training={'quick': {'epochs': 3}})\n",
            r"training\['quick'\] has unknown entries \['epochs'\]",
        ),
        ("FEDERATION = 3\n", r"must be a data_prep.federation.Federation, got int"),
    ],
)
def test_bad_dataset_files_name_the_file_and_the_fix(tmp_path, clean_registry, body, message):
    path = _write(tmp_path, body)
    with pytest.raises(DataError, match=message) as err:
        registry.load_dataset_module(path)
    assert "bad_federation.py" in str(err.value) or "Federation" in str(err.value)


def test_a_data_file_given_as_dataset_module_is_named_not_imported(tmp_path, clean_registry):
    path = _write(tmp_path, "a,b\n1,2\n", "results.csv")
    with pytest.raises(DataError, match=r"results.csv' is not a Python file \(.py\)"):
        registry.load_dataset_module(path)


def test_a_missing_file_in_the_environment_names_the_variable(monkeypatch, clean_registry):
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setenv(registry.MODULES_ENV, "missing_federation.py")
    with pytest.raises(DataError, match=r"PLAYERFL_DATASET_MODULES names 'missing_federation.py'"):
        registry.available_datasets()


def test_a_loader_that_returns_bad_tensors_is_refused_naming_its_file(tmp_path, clean_registry):
    path = _write(
        tmp_path,
        "import torch\n"
        "from data_prep import ClientData, FederatedData\n" + HEADER + "def load(root, seed):\n"
        "    x = torch.zeros(8, 3, dtype=torch.float64)\n"
        "    y = torch.zeros(8, dtype=torch.int64)\n"
        "    c = ClientData('a', x, y, x, y, x, y)\n"
        "    return FederatedData('mine', [c], 2, (3,), ['0', '1'])\n"
        "FEDERATION = Federation(name='mine', load=load)\n",
    )
    registry.load_dataset_module(path)
    with pytest.raises(DataError, match=r"load\(\) in .*bad_federation.py failed.*float32"):
        registry.load("mine")
    other = _write(
        tmp_path,
        HEADER + "FEDERATION = Federation(name='mine2', load=lambda root, seed: [1])\n",
        "other_federation.py",
    )
    registry.load_dataset_module(other)
    with pytest.raises(DataError, match=r"returned list; it must return data_prep.FederatedData"):
        registry.load("mine2")


def test_a_model_can_be_registered_from_the_dataset_file():
    from torch import nn

    from playerfl_core.fl import models

    class Tiny(models.UnitModel):
        units = ("fc",)

        def __init__(self, num_classes, input_shape, width=1.0):
            super().__init__()
            self.fc = nn.Linear(input_shape[0], num_classes)

    try:
        models.register_model("tiny_for_test", Tiny)
        assert models.build_model("tiny_for_test", 3, (4,), 1.0, 0).fc.in_features == 4
        with pytest.raises(ValueError, match="taken by MLP"):
            models.register_model("mlp", Tiny)
        with pytest.raises(ValueError, match="must subclass playerfl_core.fl.models.UnitModel"):
            models.register_model("plain", nn.Linear)
    finally:
        models.MODELS.pop("tiny_for_test", None)


def test_a_declaration_needs_only_a_loader():
    fed = Federation(name="smallest", load=print)
    assert fed.model == "mlp" and fed.display_name == "smallest"
    assert fed.grid("quick") == {"lrs": (3e-3, 1e-3, 1e-3 / 3), "tune_seeds": (0,), "seeds": (0, 1)}
    assert fed.analytics == {} and fed.reference_splits == {}


def _execute(chapter: str, dataset_file: Path, folder: Path) -> tuple[int, str, Path]:
    """papermill in a subprocess, with the chapter's small parameters and its own store."""
    out = folder / f"{chapter}.ipynb"
    params = {"dataset_module": str(dataset_file), "dataset": "minidigits", **SMALL[chapter]}
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        str(REPO / "chapters" / f"{chapter}.ipynb"),
        str(out),
        "--cwd",
        str(REPO / "chapters"),
        "-k",
        "python3",
        "--log-level",
        "ERROR",
    ]
    for key, value in params.items():
        cmd += ["-p", key, str(value)]
    env = {**os.environ, "PLAYERFL_RESULTS": str(folder / chapter), "TQDM_DISABLE": "1"}
    env.pop(registry.MODULES_ENV, None)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return done.returncode, done.stderr[-3000:], out


@pytest.fixture(scope="module")
def executed(outside, tmp_path_factory) -> dict[str, tuple[int, str, Path]]:
    """Every chapter executed on the outside federation, two at a time (2 CPU cores)."""
    from concurrent.futures import ThreadPoolExecutor

    folder = tmp_path_factory.mktemp("chapters")
    missing = [c for c in CHAPTERS if c not in SMALL]
    assert not missing, f"add {missing} to SMALL with parameters that keep them small"
    with ThreadPoolExecutor(2) as pool:
        futures = {c: pool.submit(_execute, c, outside, folder) for c in CHAPTERS}
        return {c: f.result() for c, f in futures.items()}


@pytest.mark.slow  # executes every chapter: 8 min
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_runs_on_a_federation_from_outside(chapter, executed):
    returncode, stderr, out = executed[chapter]
    assert returncode == 0, stderr
    errors = [
        o
        for c in nbformat.read(out, 4).cells
        for o in c.get("outputs", [])
        if o.get("output_type") == "error" or o.get("name") == "stderr" and "Error" in o["text"]
    ]
    assert not errors, errors
