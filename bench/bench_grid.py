"""Throughput of a sample of the grid: runs per hour, per dataset and overall.

The sample is one seed of every algorithm at the profile's learning rate on each dataset: the
unit the tuning and evaluation grids are made of. Each run is timed on its own; runs per hour is
3600 ÷ the mean seconds per run of a dataset (the mix of algorithms matters: pFedMe trains K
times per batch). On the CPU the clock is the process's CPU time (one thread per run), so the
figure is runs per hour per busy core and does not depend on what else the machine runs; wall
time is printed beside it. On CUDA the clock is wall time. ``--workers N`` runs the sample in
N processes at once (CPU cores or one GPU shared), and reports wall-clock runs per hour next
to the one-at-a-time figure.

It uses only the library's public entry points, so the same script measures an older checkout:
``PYTHONPATH=/old/checkout python bench/bench_grid.py``.

Usage: python bench/bench_grid.py [--profile quick] [--datasets heart,digits,fmnist]
       [--algorithms all] [--seed 0] [--workers 1] [--device cpu|cuda] [--rounds N]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import torch
from tqdm import tqdm


def one_run(job: tuple) -> tuple[str, str, float, float]:
    """Train one (dataset, algorithm) run; return its CPU and wall seconds (loading excluded)."""
    name, algorithm, profile, seed, device, rounds, threads = job
    torch.set_num_threads(threads)
    from data_prep import load
    from playerfl_core import make_config, run_federated
    from playerfl_core.fl.algorithms import get_algorithm

    data = load(name, profile=profile, seed=seed)
    cfg = make_config(name, profile, seed=seed, device=device, rounds=rounds, progress=False)
    start, cpu = time.perf_counter(), time.process_time()
    run_federated(data, get_algorithm(algorithm), cfg)
    if cfg.device.startswith("cuda"):
        torch.cuda.synchronize()
    wall = time.perf_counter() - start
    return name, algorithm, time.process_time() - cpu if cfg.device == "cpu" else wall, wall


def jobs_for(args) -> list[tuple]:
    from playerfl_core.fl.algorithms import ALGORITHMS

    algorithms = list(ALGORITHMS) if args.algorithms == "all" else args.algorithms.split(",")
    return [
        (ds, alg, args.profile, args.seed, args.device, args.rounds, args.threads)
        for ds in args.datasets.split(",")
        for alg in algorithms
    ]


def run_jobs(jobs: list[tuple], workers: int) -> tuple[list, float]:
    start = time.perf_counter()
    if workers == 1:
        results = [one_run(j) for j in tqdm(jobs, desc="runs", unit="run")]
    else:
        with mp.get_context("spawn").Pool(workers) as pool:
            results = list(
                tqdm(pool.imap_unordered(one_run, jobs), total=len(jobs), desc="runs", unit="run")
            )
    return results, time.perf_counter() - start


def report(results: list, wall: float, label: str) -> None:
    by_dataset: dict[str, list[tuple[float, float]]] = {}
    for name, _, seconds, wall_s in results:
        by_dataset.setdefault(name, []).append((seconds, wall_s))
    for name, times in by_dataset.items():
        mean = sum(t for t, _ in times) / len(times)
        walls = sum(w for _, w in times)
        print(
            f"{label}: {name:7s} {len(times)} runs, {mean:6.2f} s/run (clock) -> "
            f"{3600 / mean:7.0f} runs/hour; wall {walls:7.1f} s in all",
            flush=True,
        )
    print(
        f"{label}: all     {len(results)} runs in {wall:.1f} s wall -> "
        f"{3600 * len(results) / wall:.0f} runs/hour",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="quick", help="a profile of playerfl_core.fl.profiles")
    parser.add_argument("--datasets", default="heart,digits,fmnist")
    parser.add_argument("--algorithms", default="all", help="comma-separated, or 'all'")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes running at once")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    parser.add_argument("--rounds", type=int, help="override the profile's rounds")
    args = parser.parse_args()
    import playerfl_core

    jobs = jobs_for(args)
    print(
        f"library={playerfl_core.__file__} profile={args.profile} seed={args.seed} "
        f"workers={args.workers} threads/worker={args.threads} torch={torch.__version__}"
    )
    results, wall = run_jobs(jobs, 1)
    report(results, wall, "one at a time")
    if args.workers > 1:
        results, wall = run_jobs(jobs, args.workers)
        report(results, wall, f"{args.workers} workers")


if __name__ == "__main__":
    main()
