"""Runs per hour of the split sweep batched (K runs as one computation,
``playerfl_core.fl.batched``) ÷ the same runs one by one (``run_federated``), in one invocation.

1. CPU, Heart quick (MLP): ``--heart-seeds`` seeds × every split, the profile's rounds.
2. CPU, Fashion-MNIST quick (CNN3 at width 0.25, 400 images per client, batch 32):
   ``--fmnist-seeds`` seeds × every split, ``--fmnist-rounds`` rounds.
   On the CPU both clocks are process CPU time with one thread.
3. CUDA, when present: paper-profile Fashion-MNIST (CNN3 at width 1.0, 2,000 images per client,
   batch 128), ``--k`` runs (seeds × every split) batched for ``--gpu-rounds`` rounds, against
   ``--gpu-single`` of them one by one, deterministic kernels as the engine uses them; wall
   clock after a warm-up. Prints runs per GPU-hour and the implied seconds per 100-round run.

Each line also says how far the batched numbers of the runs computed both ways are from the
one-by-one numbers (largest difference per metric; split choices; best rounds).
   Without CUDA it prints "CUDA: not measured: no GPU".

Usage: python bench/bench_batched.py [--heart-seeds 2] [--fmnist-seeds 1] [--fmnist-rounds 2]
       [--k 30] [--gpu-rounds 3] [--gpu-single 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import pandas as pd
import torch

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.batched import run_prefix_batch
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.stats.results import select_rounds
from playerfl_core.study.split_sweeps import model_units


def sweep(dataset: str, profile: str, seeds: int):
    """Every (data, seed, p) of ``seeds`` seeds × every split."""
    data = {s: load(dataset, profile=profile, seed=s) for s in range(seeds)}
    width = make_config(dataset, profile).width
    n_splits = len(model_units(data[0], width)) + 1
    return [(data[s], s, p) for s in range(seeds) for p in range(n_splits)]


def clock(device: str) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def one_by_one(tasks, cfg) -> tuple[float, pd.DataFrame]:
    start = clock(cfg.device)
    tables = [
        run_federated(
            data, get_algorithm(prefix_name(p)), dataclasses.replace(cfg, seed=seed)
        ).table()
        for data, seed, p in tasks
    ]
    return clock(cfg.device) - start, pd.concat(tables, ignore_index=True)


def batched(tasks, cfg) -> tuple[float, pd.DataFrame]:
    start = clock(cfg.device)
    table = run_prefix_batch(tasks, cfg)
    return clock(cfg.device) - start, table


def agreement(single: pd.DataFrame, batch: pd.DataFrame) -> str:
    """How far the batched rows of the runs computed both ways are from the one-by-one rows:
    the largest |difference| per metric, and whether split choices and best rounds agree."""
    batch = batch.iloc[: len(single)].reset_index(drop=True)
    keys = [c for c in single.columns if c != "value"]
    if not batch[keys].equals(single[keys]):
        return "rows differ in their keys (a bug)"
    diff = (batch["value"] - single["value"]).abs().groupby(single["metric"]).max()
    splits = single["metric"].isin(["split_p", "rule_split_p"])
    same_splits = bool((batch.loc[splits, "value"] == single.loc[splits, "value"]).all())
    cols = ["algorithm", "seed", "client", "split", "metric", "round"]
    best = [select_rounds(t)[cols].sort_values(cols, ignore_index=True) for t in (batch, single)]
    shown = ", ".join(f"{m} {diff[m]:.1e}" for m in ("loss", "accuracy", "macro_f1"))
    return (
        f"max |batched - one by one|: {shown}; split choices equal: {same_splits}; "
        f"best rounds equal: {best[0].equals(best[1])}"
    )


def compare(label: str, tasks, cfg, single_tasks=None) -> tuple[float, float]:
    """Seconds per run both ways (one-by-one on ``single_tasks``, a prefix of ``tasks``,
    default all), the ratio, and how far the two ways' numbers are apart."""
    single_tasks = single_tasks or tasks
    t_single, single = one_by_one(single_tasks, cfg)
    t_batch, batch = batched(tasks, cfg)
    t_single, t_batch = t_single / len(single_tasks), t_batch / len(tasks)
    per_hour = 3600 / t_single, 3600 / t_batch
    print(
        f"{label}: K={len(tasks)} runs, {cfg.rounds} rounds: one by one {t_single:.3f} s/run "
        f"({per_hour[0]:.0f} runs/h), batched {t_batch:.3f} s/run ({per_hour[1]:.0f} runs/h); "
        f"batched ÷ one by one = {t_single / t_batch:.2f}\n  {agreement(single, batch)}"
    )
    return t_single, t_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heart-seeds", type=int, default=2)
    parser.add_argument("--fmnist-seeds", type=int, default=1)
    parser.add_argument("--fmnist-rounds", type=int, default=2)
    parser.add_argument("--k", type=int, default=30, help="runs batched on CUDA")
    parser.add_argument("--gpu-rounds", type=int, default=3)
    parser.add_argument("--gpu-single", type=int, default=2, help="runs timed one by one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch={torch.__version__}, CPU clocks: process time, 1 thread")
    cfg = make_config("heart", "quick", device="cpu", progress=False)
    compare("CPU Heart quick (MLP)", sweep("heart", "quick", args.heart_seeds), cfg)
    cfg = make_config("fmnist", "quick", rounds=args.fmnist_rounds, device="cpu", progress=False)
    compare(
        "CPU Fashion-MNIST quick (CNN3 width 0.25, 400 images/client, batch 32)",
        sweep("fmnist", "quick", args.fmnist_seeds),
        cfg,
    )
    if not torch.cuda.is_available():
        print("CUDA: not measured: no GPU")
        return
    paper = make_config("fmnist", "paper", device="cuda", progress=False)
    rounds = paper.rounds
    cfg = make_config("fmnist", "paper", rounds=args.gpu_rounds, device="cuda", progress=False)
    seeds = -(-args.k // 6)
    tasks = sweep("fmnist", "paper", seeds)[: args.k]
    warm = make_config("fmnist", "paper", rounds=1, device="cuda", progress=False)
    run_prefix_batch(tasks[:2], warm)  # kernels, allocator
    print(f"CUDA: {torch.cuda.get_device_name()}, deterministic kernels, paper FMNIST")
    t_single, t_batch = compare(
        "CUDA paper Fashion-MNIST (CNN3 width 1.0, 2,000 images/client, batch 128)",
        tasks,
        cfg,
        tasks[: args.gpu_single],
    )
    scale = rounds / args.gpu_rounds
    for label, t in (("one by one", t_single), ("batched", t_batch)):
        print(
            f"CUDA {label}: {3600 / (t * scale):.0f} {rounds}-round runs per GPU-hour "
            f"({t * scale:.1f} s per {rounds}-round run, extrapolated from {args.gpu_rounds})"
        )


if __name__ == "__main__":
    main()
