"""The ``ray`` backend on a multi-node cluster on this machine (issue 36, slow): a worker node
lost mid-grid, the driver killed and started again, and the README's cluster recipe run as
written (with small sizes).

Each cluster is small (one CPU and 100 MB of object store per node, no dashboard) and shut down
in its fixture's teardown; the nodes the README test starts with ``ray start`` are stopped by
killing their process groups (never ``ray stop``, which stops every Ray on the machine).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
from test_ray_backend import stored_rows

from playerfl_core.study.experiments import RayBackend, run_grid

pytestmark = pytest.mark.slow  # clusters started and nodes lost: minutes

REPO = Path(__file__).resolve().parents[1]
MB100 = 100 * 2**20
GRID = dict(  # runs of a few seconds each, so a node removed mid-grid is computing one
    datasets="heart",
    algorithms="local,fedavg",
    rounds=100,
    lrs=[1e-2, 3e-2],
    seeds=[0, 1, 2],
    progress=False,
)
N_RUNS = 2 * (2 + 2)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, bytes]:
    """The same grid, uninterrupted, on the local backend: every run's stored rows."""
    root = tmp_path_factory.mktemp("reference")
    run_grid(store=root, workers=1, **GRID)
    return stored_rows(root)


@pytest.fixture
def cluster():
    """A head node and a second node on this machine, one CPU each; this process connected."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nodes = Cluster(
            initialize_head=True,
            head_node_args=dict(num_cpus=1, object_store_memory=MB100, include_dashboard=False),
        )
        worker = nodes.add_node(num_cpus=1, object_store_memory=MB100)
        ray.init(address=nodes.address, logging_level="ERROR", log_to_driver=False)
    try:
        yield nodes, worker
    finally:
        ray.shutdown()
        nodes.shutdown()


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _finished(root: Path) -> int:
    return len(list((root / "runs").glob("*.json"))) if (root / "runs").is_dir() else 0


def test_losing_a_node_mid_grid_keeps_every_run_once_and_the_same_table(
    cluster, reference, tmp_path
):
    import ray

    nodes, worker = cluster
    store = tmp_path / "ray"
    result: dict = {}

    def grid():
        try:
            result["grid"] = run_grid(
                store=store, backend=RayBackend(address=nodes.address), **GRID
            )
        except BaseException as err:  # noqa: BLE001 - reported by the test below
            result["error"] = err

    thread = threading.Thread(target=grid)
    thread.start()
    # both nodes computing a run (no CPU free) after at least one run is stored: the second
    # node is then lost in the middle of a run, which Ray must re-run on the head node
    _wait_for(
        lambda: _finished(store) >= 1 and ray.available_resources().get("CPU", 0) == 0,
        300,
        "both nodes busy",
    )
    before = _finished(store)
    nodes.remove_node(worker)
    thread.join(timeout=900)
    assert not thread.is_alive() and "error" not in result, result.get("error")
    assert before < N_RUNS and result["grid"].computed == N_RUNS
    assert len([n for n in ray.nodes() if n["Alive"]]) == 1
    runs = store / "runs"
    assert len(list(runs.glob("*.json"))) == len(list(runs.glob("*.csv"))) == N_RUNS
    assert not list(runs.glob(".*.tmp"))
    rows = stored_rows(store)
    assert rows.keys() == reference.keys()
    assert [r for r in rows if rows[r] != reference[r]] == []
    table = result["grid"].table
    assert not table.duplicated(
        ["algorithm", "lr", "seed", "client", "round", "split", "metric"]
    ).any()


def test_killing_the_driver_and_starting_again_recomputes_nothing_that_finished(
    cluster, reference, tmp_path
):
    nodes, _ = cluster
    store = tmp_path / "ray"
    script = textwrap.dedent(f"""
        from playerfl_core.study.experiments import RayBackend, run_grid
        if __name__ == "__main__":
            run_grid(store={str(store)!r}, backend=RayBackend(address={nodes.address!r}),
                     **{GRID!r})
    """)
    driver = subprocess.Popen(
        [sys.executable, "-c", script],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(lambda: _finished(store) >= 3 or driver.poll() is not None, 600, "3 runs")
        assert driver.poll() is None, f"the grid ended before it was killed: {driver.stderr.read()}"
        os.killpg(driver.pid, signal.SIGKILL)
    finally:
        driver.wait()
    runs = store / "runs"
    before = {f.name: f.stat().st_mtime_ns for f in runs.glob("*.json")}
    assert 3 <= len(before) < N_RUNS

    again = run_grid(store=store, backend=RayBackend(address=nodes.address), **GRID)
    assert again.computed == N_RUNS - len(before)
    for name, mtime in before.items():  # nothing that finished was written again
        assert (runs / name).stat().st_mtime_ns == mtime
    rows = stored_rows(store)
    assert rows == reference
    assert run_grid(store=store, backend=RayBackend(address=nodes.address), **GRID).computed == 0


# -- the README's recipe ---------------------------------------------------------------------
def readme_cluster_commands() -> list[str]:
    """The commands of the README's 'Running on a cluster' block, comments dropped."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Running on a cluster", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#")[0]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SMALL = "--datasets heart --algorithms local,fedavg --rounds 1 --seeds 0,1 --lrs 0.01"
"""What replaces the paper profile's grid in the test: the same commands on four small runs."""


def test_the_readme_cluster_recipe_runs_as_written(tmp_path):
    commands = readme_cluster_commands()
    kinds = [c.split()[1:3] for c in commands]
    assert kinds[:2] == [["start", "--head"], ["start", "--address=HEAD:6379"]], commands
    assert all(c.startswith(".venv/bin/") for c in commands)
    grid = [c for c in commands if " grid " in f"{c} " and "--backend ray" in c]
    assert grid and "--profile paper" in grid[0], "the README runs the paper profile on Ray"

    port, bin_dir = _free_port(), Path(sys.executable).parent
    temp = tempfile.mkdtemp(prefix="r", dir="/tmp")  # short: Ray's socket paths have a limit
    small_node = ["--num-cpus=1", f"--object-store-memory={MB100}", "--disable-usage-stats"]

    def as_test(command: str) -> list[str]:
        command = command.replace(".venv/bin/", f"{bin_dir}/").replace("6379", str(port))
        command = command.replace("HEAD", "127.0.0.1")
        args = shlex.split(command)
        if args[1] == "start":  # stays in the foreground, so the test can stop it
            extra = ["--include-dashboard=false", f"--temp-dir={temp}"] if "--head" in args else []
            return [*args, *small_node, *extra, "--block"]
        if args[1] in ("grid", "status"):  # the paper profile's grid → four small runs
            args = [a.replace("paper", "quick") for a in args]
            args += ["--store", str(tmp_path / "store")]
            args += SMALL.split() if args[1] == "grid" else []
        return args

    env = {**os.environ, "RAY_ADDRESS": ""}
    started, outputs = [], []
    try:
        for command in commands:
            args = as_test(command)
            if args[1] == "start":
                started.append(subprocess.Popen(args, start_new_session=True, env=env,
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))  # fmt: skip
                time.sleep(20 if "--head" in args else 10)
                assert started[-1].poll() is None, f"{command} ended"
                continue
            done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr
            outputs.append((command, done.stdout))
    finally:
        for proc in started[::-1]:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    text = "\n".join(out for _, out in outputs)
    assert "Grid, profile quick: 4 runs to compute" in text and "CPU-hours" in text  # dry run
    assert "4 runs computed now, 4 in this grid, 0 failed" in text  # through the cluster
    assert f"{tmp_path / 'store'}: 4 runs," in text  # playerfl status
    assert len(stored_rows(tmp_path / "store")) == 4
