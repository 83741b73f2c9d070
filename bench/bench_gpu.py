"""GPU throughput of the paper-size Fashion-MNIST runs (issue 10 item 3, GPU part).

1. Seconds per round of FedAvg on the paper profile (full-width CNN, paper data size), median
   over ``--repeats`` runs of ``--rounds`` rounds after one warm-up run (CUDA kernels, cuDNN
   autotuning and the allocator are warm by then).
2. Runs per hour with several runs sharing the GPU: the same ``--jobs`` runs (all algorithms by
   default, ``--rounds`` rounds each) one at a time and then in ``--workers`` processes at once;
   both figures are extrapolated to full paper runs (the profile's rounds) from the measured
   rounds, and printed as such.

Without CUDA it prints "not measured: no GPU" and exits 0: there are no CPU stand-in numbers.

Usage: python bench/bench_gpu.py [--rounds 3] [--repeats 3] [--workers 4] [--algorithms all]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from bench_grid import run_jobs  # bench/ is on sys.path when run as a script


def seconds_per_round(rounds: int, repeats: int) -> float:
    from data_prep import load
    from playerfl_core import make_config, run_federated
    from playerfl_core.fl.algorithms import get_algorithm

    data = load("fmnist", profile="paper", seed=0)
    cfg = make_config("fmnist", "paper", rounds=rounds, device="cuda", progress=False)
    run_federated(
        data, get_algorithm("fedavg"), make_config("fmnist", "paper", rounds=1, progress=False)
    )
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run_federated(data, get_algorithm("fedavg"), cfg)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / rounds)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--algorithms", default="all")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("not measured: no GPU")
        return
    from playerfl_core.fl.algorithms import ALGORITHMS
    from playerfl_core.fl.profiles import training_settings

    paper_rounds = training_settings("fmnist", "paper")["rounds"]
    print(f"{torch.cuda.get_device_name()} torch={torch.__version__}")
    spr = seconds_per_round(args.rounds, args.repeats)
    print(
        f"FedAvg, FMNIST paper profile: {spr:.3f} s/round (median of {args.repeats} runs of "
        f"{args.rounds} rounds) -> {spr * paper_rounds:.0f} s per {paper_rounds}-round run"
    )
    names = list(ALGORITHMS) if args.algorithms == "all" else args.algorithms.split(",")
    jobs = [("fmnist", a, "paper", 0, "cuda", args.rounds, 1) for a in names]
    scale = args.rounds / paper_rounds  # a measured run is this fraction of a paper run
    for workers in (1, args.workers):
        _, wall = run_jobs(jobs, workers)
        per_hour = 3600 * len(jobs) / wall
        print(
            f"{workers} process(es) sharing the GPU: {len(jobs)} runs of {args.rounds} rounds in "
            f"{wall:.1f} s -> {per_hour:.0f} such runs/hour, ~{per_hour * scale:.1f} paper runs"
            f"/hour (extrapolated from {args.rounds} of {paper_rounds} rounds)",
            flush=True,
        )


if __name__ == "__main__":
    main()
