"""The ``ray`` backend on one machine (issue 36): the same runs, byte for byte, as the local
backend; the same progress bar and ``playerfl status``; a cluster that cannot be used is one
line; and ``playerfl grid --dry-run``, which sizes a grid before it runs.

Multi-node faults (a node lost mid-grid, the driver killed) and the README's cluster recipe are
in ``tests/test_ray_cluster.py`` (slow).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from playerfl_core.cli import main
from playerfl_core.study.experiments import ClusterError, RayBackend, dry_run, run_grid
from playerfl_core.study.grid_cost import cost_report, size_factor

GRID = dict(
    datasets="heart",
    algorithms="local,fedavg",
    rounds=2,
    lrs=[1e-2, 3e-2],
    seeds=[0, 1, 2],
    progress=False,
)
N_RUNS = 2 * (2 + 2)  # per algorithm: 2 LRs on tuning seed 0, then seeds 1 and 2


def _cli(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens


def stored_rows(root: Path) -> dict[str, bytes]:
    """run id → the exact bytes of its stored rows (every run must be finished and ok)."""
    runs = Path(root) / "runs"
    records = {p.stem: json.loads(p.read_text()) for p in runs.glob("*.json")}
    assert {r["status"] for r in records.values()} == {"ok"}
    return {run_id: (runs / f"{run_id}.csv").read_bytes() for run_id in records}


# -- a cluster that cannot be used: one line, no traceback, nothing computed --------------------
GRID_ARGV = ["grid", "--datasets", "heart", "--algorithms", "local", "--rounds", "1",
             "--seeds", "0", "--lrs", "0.01"]  # fmt: skip


@pytest.mark.parametrize("how", ["--address", "RAY_ADDRESS"])
def test_an_unreachable_cluster_is_one_clear_line(how, tmp_path, capsys, monkeypatch):
    address = f"127.0.0.1:{_closed_port()}"
    argv = [*GRID_ARGV, "--store", str(tmp_path / "s"), "--backend", "ray"]
    if how == "--address":
        argv += ["--address", address]
    else:  # --address auto reads RAY_ADDRESS, as Ray's own tools do
        monkeypatch.setenv("RAY_ADDRESS", address)
    start = time.perf_counter()
    code, out, err = _cli(argv, capsys)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"playerfl: cannot reach the Ray cluster at {address}"), err
    assert "ray start --head" in lines[0] and "--backend local" in lines[0]
    assert time.perf_counter() - start < 30  # Ray alone retries for minutes
    assert not list((tmp_path / "s" / "runs").glob("*.json"))


def test_no_cluster_found_is_one_line(monkeypatch):
    import ray._private.services as services

    def none_running(*args, **kwargs):
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "canonicalize_bootstrap_address", none_running)
    from playerfl_core.study.ray_cluster import resolve

    with pytest.raises(ClusterError, match=r"^no running Ray cluster found \(--address auto\)"):
        resolve("auto")


def test_without_the_ray_package_the_backend_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ClusterError, match="needs the ray package.*--backend local"):
        RayBackend(address="local").open(1)


BAD = {
    "ray option without ray": (["--cpus", "2"], "--cpus: options of --backend ray"),
    "workers on ray": (["--backend", "ray", "--workers", "2"], "--workers: a setting of"),
    "cuda without a gpu": (["--backend", "ray", "--device", "cuda"], "needs --gpus > 0"),
    "negative gpus": (["--backend", "ray", "--gpus", "-1"], "--gpus: -1.0 is not a number ≥ 0"),
    "no cpu nor gpu": (["--backend", "ray", "--cpus", "0"], "--cpus and --gpus are both 0"),
    "retries": (["--backend", "ray", "--max-retries", "-1"], "--max-retries: -1 is not"),
    "list without dry run": (["--list-runs"], "--list-runs: only with --dry-run"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_backend_options_are_one_line_before_anything_starts(case, tmp_path, capsys):
    extra, expected = BAD[case]
    code, out, err = _cli([*GRID_ARGV, "--store", str(tmp_path / "s"), *extra], capsys)
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert not (tmp_path / "s").exists()


def test_a_fractional_gpu_runs_on_cuda():
    backend = RayBackend(gpus=0.25)
    assert backend.default_device() == "cuda" and backend.check_device("cuda:0") == "cuda:0"
    assert RayBackend().default_device() == "cpu"


def test_the_local_backend_never_imports_ray(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        from playerfl_core.cli import main
        from playerfl_core.study.experiments import run_grid
        grid = {GRID | dict(algorithms="local", rounds=1)!r}
        run_grid(store={str(tmp_path)!r}, workers=1, **grid)
        print("ray" in sys.modules)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "False", out.stderr


# -- the dry run -------------------------------------------------------------------------------
def test_dry_run_counts_the_runs_and_their_cost_and_computes_nothing(tmp_path, capsys):
    argv = ["grid", "--datasets", "heart", "--algorithms", "local,fedavg", "--rounds", "2",
            "--lrs", "0.01,0.03", "--seeds", "0,1,2", "--store", str(tmp_path / "s"),
            "--dry-run"]  # fmt: skip
    code, out, _ = _cli(argv, capsys)
    assert code == 0 and not (tmp_path / "s").exists()
    assert f"{N_RUNS} runs to compute (4 tuning, 4 evaluation), 0 already stored" in out
    line = next(x for x in out.splitlines() if x.split()[:2] == ["heart", "fedavg"])
    tuning, evaluation, stored, seconds, hours = line.split()[2:7]
    assert (tuning, evaluation, stored) == ("2", "2", "0")
    assert float(seconds) == 0.8 and float(hours) == round(4 * 0.8 / 3600, 2)
    assert "declared 0.8 s" in line and "seconds_per_run" in out

    run_grid(store=tmp_path / "s", workers=1, **GRID | {"algorithms": "fedavg"})
    code, out, _ = _cli([*argv, "--list-runs"], capsys)
    assert "4 runs to compute (2 tuning, 2 evaluation), 4 already stored" in out
    fedavg = next(x for x in out.splitlines() if x.split()[:2] == ["heart", "fedavg"])
    assert fedavg.split()[2:5] == ["0", "0", "4"] and "measured (4 runs)" in fedavg
    local = next(x for x in out.splitlines() if x.split()[:2] == ["heart", "local"])
    assert "measured, other algorithms (4 runs)" in local  # this store's timings, not a guess
    listed = [x for x in out.splitlines() if x.startswith("heart_local_lr")]
    assert len(listed) == 4 and not any(x.startswith("heart_fedavg") for x in out.splitlines())


def test_dry_run_states_what_an_estimate_at_the_paper_sizes_assumes(tmp_path):
    text = dry_run("digits", "fedavg,pfedme", "paper", store=tmp_path / "s")
    # paper digits: the quick data and model, 30 rounds instead of 10
    assert size_factor("digits", "paper") == pytest.approx(3.0)
    assert size_factor("digits", "standard") == 1.0
    rows = {x.split()[1]: x for x in text.splitlines() if x.startswith(" digits") or
            x.startswith("digits")}  # fmt: skip
    assert "declared 2 s × 3 (paper sizes)" in rows["fedavg"]
    assert "declared 2 s × 4 × 3 (paper sizes)" in rows["pfedme"]
    assert float(rows["pfedme"].split()[5]) == 24.0
    assert "errs on the high side" in text and "CPU-hours" in text


def test_a_long_dry_run_is_shown_per_dataset():
    cost = pd.DataFrame(
        [[ds, f"a{i}", 1, 2, 0, 3600.0, 3.0, "declared"] for ds in "xy" for i in range(40)],
        columns=["dataset", "algorithm", "tuning", "evaluation", "stored", "s/run",
                 "CPU-hours", "basis"],
    )  # fmt: skip
    text = cost_report(cost, "paper", widen=6)
    assert len(text.splitlines()) < 12 and "40 algorithms" in text
    assert "about 240 CPU-hours" in text and "up to 6 more runs" in text


# -- through Ray, on this machine -----------------------------------------------------------
@pytest.fixture(scope="module")
def ray_here():
    """A two-CPU Ray in this process, small and without a dashboard; shut down afterwards."""
    ray = pytest.importorskip("ray")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(
            address="local",  # a new one, whatever `ray start` left behind
            num_cpus=2,
            object_store_memory=100 * 2**20,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=False,
        )
    yield ray
    ray.shutdown()


def test_a_grid_through_ray_is_byte_identical_to_the_local_backend(ray_here, tmp_path, capsys):
    """Same runs, same bytes: every stored run's rows, through Ray or local worker processes;
    the same progress bar; the same ``playerfl status`` (less the compute time)."""
    local = run_grid(store=tmp_path / "local", workers=1, **GRID | {"progress": True})
    local_err = capsys.readouterr().err
    on_ray = run_grid(store=tmp_path / "ray", backend="ray", **GRID | {"progress": True})
    ray_err = capsys.readouterr().err
    assert local.computed == on_ray.computed == N_RUNS
    rows_local, rows_ray = stored_rows(tmp_path / "local"), stored_rows(tmp_path / "ray")
    assert len(rows_ray) == N_RUNS and rows_ray.keys() == rows_local.keys()
    different = [run for run in rows_local if rows_local[run] != rows_ray[run]]
    assert not different, f"runs computed differently through Ray: {different}"
    pd.testing.assert_frame_equal(local.table, on_ray.table)
    pd.testing.assert_frame_equal(local.chosen, on_ray.chosen)
    for err in (local_err, ray_err):
        assert f"{N_RUNS}/{N_RUNS} runs" in err  # the bar reached the end, over Ray too

    def status(root):
        code, out, _ = _cli(["status", "--store", str(root)], capsys)
        assert code == 0
        return [x for x in out.splitlines()[1:] if "computed on" not in x]

    assert status(tmp_path / "local") == status(tmp_path / "ray")
    assert run_grid(store=tmp_path / "ray", backend="ray", **GRID).computed == 0


def test_a_sweep_through_ray_equals_the_local_sweep(ray_here, tmp_path, capsys):
    from playerfl_core.study.split_oracle import run_sweep

    sweep = dict(seeds=[0], rounds=1, splits=[0, 2, 4], progress=False)
    local = run_sweep("heart", **sweep)
    on_ray = run_sweep("heart", **sweep, backend=RayBackend())
    key = ["algorithm", "seed", "client", "round", "split", "metric"]
    pd.testing.assert_frame_equal(
        local.sort_values(key, ignore_index=True), on_ray.sort_values(key, ignore_index=True)
    )
    out = tmp_path / "sweep.csv"
    argv = ["sweep", "--dataset", "heart", "--seeds", "0", "--rounds", "1", "--splits", "0,4",
            "--lr", "1e12", "--backend", "ray", "--out", str(out)]  # fmt: skip
    code, _, err = _cli(argv, capsys)  # every split diverges: each named, nothing written
    assert code == 3 and "Traceback" not in err and not out.exists()
    assert err.count("diverged (no rows written): heart seed 0, split p = ") == 2, err


def test_a_users_federation_file_reaches_the_ray_workers(ray_here, tmp_path, monkeypatch):
    """``--dataset-module``: a Ray worker is a fresh process that knows only the built-in
    federations; the driver passes ``PLAYERFL_DATASET_MODULES`` with each task."""
    from data_prep.registry import MODULES_ENV, load_dataset_module

    monkeypatch.setenv(MODULES_ENV, "")  # restored afterwards: the loader adds the file here
    example = Path(__file__).parents[1] / "examples" / "cancer_by_texture.py"
    (name,) = load_dataset_module(example)
    grid = run_grid(datasets=name, algorithms="local", rounds=1, lrs=[1e-2], seeds=[0],
                    store=tmp_path / "s", backend="ray", progress=False)  # fmt: skip
    assert grid.computed == 1 and set(grid.table["dataset"]) == {name}
    assert len(stored_rows(tmp_path / "s")) == 1


def test_a_node_with_other_code_stops_the_grid(ray_here):
    executor = RayBackend().open(1, code="000000000000")
    try:
        fut = executor.submit(abs, -1)
        with pytest.raises(ClusterError, match=r"runs other code .* than the driver"):
            executor.result(fut)
    finally:
        executor.close()
    assert ray_here.is_initialized()  # a Ray this process started itself is left running


def test_a_run_no_node_can_hold_is_one_line(ray_here):
    with pytest.raises(ClusterError, match=r"no node of the Ray cluster has 3 CPUs"):
        RayBackend(cpus=3).open(1)


def test_capacity_follows_the_cluster(ray_here):
    executor = RayBackend(cpus=0.5).open(1)
    assert executor.capacity() == 4 and executor.in_flight() == 8
    executor.close()


@pytest.mark.slow  # a tiny study's six runs on Ray: about a minute
def test_a_study_runs_on_ray_as_it_runs_here(ray_here, tmp_path, monkeypatch, capsys):
    """``playerfl study run NAME --backend ray``: every run submitted as a Ray task, the
    committed table equal to the one the local backend computed; ``--dry-run`` shows the plan
    without computing."""
    from playerfl_core.study import ray_cluster
    from playerfl_core.study.ray_cluster import RayExecutor

    fixtures = Path(__file__).parent / "fixtures" / "study_runner"
    argv = ["study", "run", "middle_rung", "--tiny", "--out", str(tmp_path), "--backend", "ray"]
    code, out, _ = _cli([*argv, "--dry-run"], capsys)
    assert code == 0 and out.splitlines()[-1].startswith("middle_rung_tiny: 6 runs, 6 to compute")
    submitted, real_submit = [], RayExecutor.submit
    monkeypatch.setattr(
        ray_cluster.RayExecutor,
        "submit",
        lambda self, fn, *a: submitted.append(a[1]) or real_submit(self, fn, *a),
    )
    code, out, err = _cli(argv, capsys)
    assert code == 0, err
    assert sorted(submitted) == [("fmnist", 0, p) for p in range(6)]
    path = tmp_path / "middle_rung_tiny" / "middle_sweep.parquet"
    pd.testing.assert_frame_equal(
        pd.read_parquet(path), pd.read_parquet(fixtures / "middle_tiny.parquet")
    )
    assert json.loads(Path(f"{path}.json").read_text())["runs"] == 6
    code, out, _ = _cli([*argv, "--dry-run"], capsys)
    assert code == 0 and out.splitlines()[-1].startswith("middle_rung_tiny: 6 runs, 0 to compute")
