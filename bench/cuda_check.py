"""The engine on CUDA: what the CPU test suite cannot see (run on a GPU machine).

1. Scores: the confusion matrix and macro-F1 computed on the GPU equal scikit-learn's on
   seeded label/prediction pairs (the CPU suite checks the same on the CPU,
   ``tests/test_scoring.py``).
2. Repeatability: every algorithm run twice on CUDA with the same seed gives the identical
   results table (fused Adam, device-side augmentation and evaluation are meant to be
   deterministic run to run; the book promises "same seed, same machine, same numbers").
3. CUDA vs CPU, same seed: the largest difference of each score. Float32 kernels differ between
   devices, so this is measured and printed, not required to be zero.
4. CUDA vs CPU over seeds (``--seeds``): each run's headline score (the clients' weighted mean
   test macro-F1 at their best-validation round) on both devices, full rounds of the profile;
   the mean paired difference beside the seed-to-seed spread says whether the devices differ
   more than seeds do (printed, not required).

Without CUDA it prints "not checked: no GPU" and exits 0. Exits 1 if check 1 or 2 fails.

Usage: python bench/cuda_check.py [--rounds 3] [--profile quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from scipy.stats import t as t_dist


def scores_match_sklearn(count: int = 300, device: str = "cuda") -> list[str]:
    """Seeded pairs (2 to 62 classes, 1 to 2,000 samples) scored on ``device`` vs scikit-learn."""
    from sklearn.metrics import accuracy_score, f1_score

    from playerfl_core.fl.scoring import accuracy_and_macro_f1

    rng = np.random.default_rng(0)
    wrong = []
    for i in range(count):
        c = int(rng.integers(2, 63))
        n = int(rng.integers(1, 2001))
        y = rng.integers(0, c, size=n)
        pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, c, size=n))
        on_gpu = accuracy_and_macro_f1(
            torch.as_tensor(y, device=device), torch.as_tensor(pred, device=device), c
        )
        expected = (accuracy_score(y, pred), f1_score(y, pred, average="macro", zero_division=0))
        if tuple(on_gpu) != expected:
            wrong.append(f"pair {i} ({c} classes, {n} samples): {on_gpu} vs {expected}")
    return wrong


def one_table(dataset: str, algorithm: str, profile: str, rounds: int, device: str, augment=False):
    from data_prep import load
    from playerfl_core import make_config, run_federated
    from playerfl_core.fl.algorithms import get_algorithm

    data = load(dataset, profile=profile, seed=0)
    cfg = make_config(
        dataset, profile, rounds=rounds, device=device, seed=0, augment=augment, progress=False
    )
    start = time.perf_counter()
    table = run_federated(data, get_algorithm(algorithm), cfg).table()
    return table, time.perf_counter() - start


def headline(dataset: str, algorithm: str, profile: str, seed: int, device: str) -> float:
    from data_prep import load
    from playerfl_core import make_config, run_federated
    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.stats.metrics import run_scores

    data = load(dataset, profile=profile, seed=seed)
    cfg = make_config(dataset, profile, device=device, seed=seed, progress=False)
    return float(run_scores(run_federated(data, get_algorithm(algorithm), cfg).table())["value"][0])


def devices_over_seeds(dataset: str, algorithm: str, profile: str, seeds: int) -> str:
    cuda = np.array([headline(dataset, algorithm, profile, s, "cuda") for s in range(seeds)])
    cpu = np.array([headline(dataset, algorithm, profile, s, "cpu") for s in range(seeds)])
    gap = cuda - cpu
    half = t_dist.ppf(0.975, seeds - 1) * gap.std(ddof=1) / np.sqrt(seeds)
    return (
        f"4. {dataset} {algorithm}, {seeds} seeds: mean score CUDA {cuda.mean():.4f}, CPU "
        f"{cpu.mean():.4f}; CUDA − CPU {gap.mean():+.4f} (95 % t-interval ±{half:.4f}; largest "
        f"|gap| of a seed {np.abs(gap).max():.4f}); seed-to-seed SD {cpu.std(ddof=1):.4f}"
    )


def largest_differences(a, b) -> str:
    """The largest |difference| of each metric's values, rows matched by position."""
    gap = (a["value"] - b["value"]).abs().groupby(a["metric"]).max()
    return ", ".join(f"{metric} {value:.1e}" for metric, value in gap.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--datasets", default="heart,digits,fmnist")
    parser.add_argument("--algorithms", default="all")
    parser.add_argument("--cpu-algorithms", default="fedavg,playerfl")
    parser.add_argument("--augment", action="store_true", help="the authors' augmentation on")
    parser.add_argument("--seeds", type=int, default=0, help="check 4 on seeds 0..N-1 (N ≥ 2)")
    parser.add_argument("--seed-algorithms", default="fedavg,playerfl")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("not checked: no GPU")
        return 0
    from playerfl_core.fl.algorithms import ALGORITHMS

    print(f"{torch.cuda.get_device_name()} torch={torch.__version__} cuda={torch.version.cuda}")
    failed = False
    wrong = scores_match_sklearn()
    print(f"1. scores on CUDA vs scikit-learn: {len(wrong)} of 300 pairs differ", flush=True)
    for line in wrong[:5]:
        print("   ", line)
    failed |= bool(wrong)

    names = list(ALGORITHMS) if args.algorithms == "all" else args.algorithms.split(",")
    for dataset in args.datasets.split(","):
        for name in names:
            first, seconds = one_table(
                dataset, name, args.profile, args.rounds, "cuda", args.augment
            )
            second, _ = one_table(dataset, name, args.profile, args.rounds, "cuda", args.augment)
            same = first.equals(second)
            failed |= not same
            line = f"2. {dataset} {name}: CUDA twice {'identical' if same else 'DIFFERENT'}"
            line += f" ({len(first)} rows, {seconds:.1f} s)"
            if name in args.cpu_algorithms.split(","):
                on_cpu, cpu_seconds = one_table(
                    dataset, name, args.profile, args.rounds, "cpu", args.augment
                )
                line += (
                    f"; 3. vs CPU, largest |difference|: {largest_differences(first, on_cpu)}"
                    f" (CPU {cpu_seconds:.1f} s)"
                )
            print(line, flush=True)
    if args.seeds:
        for dataset in args.datasets.split(","):
            for name in args.seed_algorithms.split(","):
                print(devices_over_seeds(dataset, name, args.profile, args.seeds), flush=True)
    print("FAILED" if failed else "all CUDA checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
