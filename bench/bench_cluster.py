"""What Ray costs: the same small grid on the local backend (two worker processes) and on a
two-node Ray cluster on this machine (one CPU per node, so two runs at a time on both).

Prints each backend's wall time for the grid, the ratio Ray ÷ local, and the overhead per run:
(wall time × runs at a time − the seconds the runs themselves recorded) ÷ runs, i.e. the busy
time a run costs beyond its own computation (starting workers, importing the library, loading
data, moving rows back, writing). The cluster's start-up is timed apart (a cluster is started
once for many grids). It also checks that both stores hold the same bytes, run for run. Not a
timed test: on a shared machine the figures move with the load.

Usage: python bench/bench_cluster.py [--datasets heart] [--algorithms local,fedavg,fedprox,playerfl]
       [--seeds 0,1,2,3] [--lrs 0.01,0.03] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

SLOTS = 2  # runs at a time on both backends


def run_seconds(root: Path) -> tuple[int, float, dict[str, str]]:
    """Runs stored, the sum of their recorded seconds, and run id → SHA-256 of its rows."""
    records = [json.loads(p.read_text()) for p in (root / "runs").glob("*.json")]
    return (
        len(records),
        sum(r["seconds"] for r in records),
        {r["run_id"]: r.get("csv_sha256") for r in records},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="heart")
    parser.add_argument("--algorithms", default="local,fedavg,fedprox,playerfl")
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--lrs", default="0.01,0.03")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    import playerfl_core
    from playerfl_core.study.experiments import RayBackend, run_grid

    grid = dict(
        datasets=args.datasets,
        algorithms=args.algorithms,
        seeds=[int(s) for s in args.seeds.split(",")],
        lrs=[float(r) for r in args.lrs.split(",")],
        rounds=args.rounds,
        progress=True,
    )
    print(f"library={playerfl_core.__file__} grid={grid}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_cluster_"))

    start = time.perf_counter()
    run_grid(store=tmp / "local", workers=SLOTS, **grid)
    local_wall = time.perf_counter() - start

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        cluster = Cluster(
            initialize_head=True,
            head_node_args=dict(
                num_cpus=1, object_store_memory=100 * 2**20, include_dashboard=False
            ),
        )
        cluster.add_node(num_cpus=1, object_store_memory=100 * 2**20)
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    startup = time.perf_counter() - start
    try:
        start = time.perf_counter()
        run_grid(store=tmp / "ray", backend=RayBackend(address=cluster.address), **grid)
        ray_wall = time.perf_counter() - start
    finally:
        ray.shutdown()
        cluster.shutdown()

    n_local, busy_local, rows_local = run_seconds(tmp / "local")
    n_ray, busy_ray, rows_ray = run_seconds(tmp / "ray")
    assert n_local == n_ray, (n_local, n_ray)
    same = rows_local == rows_ray
    for label, wall, busy in (("local, 2 workers", local_wall, busy_local),
                              ("ray, 2 nodes x 1 CPU", ray_wall, busy_ray)):  # fmt: skip
        overhead = (wall * SLOTS - busy) / n_local
        print(
            f"{label:22s} {n_local} runs in {wall:6.1f} s wall; the runs' own seconds "
            f"{busy:6.1f}; overhead {overhead:5.2f} s per run",
            flush=True,
        )
    print(f"ray cluster start-up (two nodes, connect): {startup:.1f} s (not in the grid's wall)")
    print(f"wall ratio ray / local: {ray_wall / local_wall:.2f}")
    print(
        f"extra wall per run on Ray: {(ray_wall - local_wall) * SLOTS / n_local:.2f} s "
        f"(busy seconds: (ray wall − local wall) × {SLOTS} ÷ runs)"
    )
    print(f"stored rows identical run for run: {same}")


if __name__ == "__main__":
    main()
