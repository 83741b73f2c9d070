"""What the layer analytics cost, as ratios measured in one run (a benchmark, not a timed test).

For the FMNIST CNN (quick width) and the heart MLP, on client 0's model after one local epoch:

1. federation sensitivity of every unit on the client's training data ÷ one local epoch of that
   client (what PLayer-FL's split decision adds to a round);
2. the Hutchinson trace of every unit's Hessian block ÷ the sensitivity, on the same model and
   the same samples (what the curvature measure the metric stands in for would cost).

Each timing is the median of ``--repeats`` runs. Usage:
    python bench/bench_analytics.py [--profile quick|paper] [--probes N] [--samples N] [--repeats K]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from data_prep import load
from playerfl_core import make_config
from playerfl_core.fl.engine import Client
from playerfl_core.fl.sensitivity import federation_sensitivity
from playerfl_core.measure.analytics import hessian_metrics
from playerfl_core.measure.layer_studies import first_epoch_models


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(name: str, profile: str, probes: int, samples: int | None, repeats: int) -> dict:
    data = load(name, profile=profile, seed=0)
    config = make_config(name, profile, seed=0, progress=False)
    model = first_epoch_models(data, config)[0]
    client = Client(0, data.clients[0], model, config)
    x, y = client.x["train"], client.y["train"]
    n = len(y) if samples is None else min(samples, len(y))
    xs, ys = x[:n], y[:n]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    opt_state = client.optimizer.state_dict()

    def one_epoch():
        client.train_epoch()
        model.load_state_dict(state)  # every repeat trains the same epoch from the same model
        client.optimizer.load_state_dict(opt_state)

    epoch = median_time(one_epoch, repeats)
    sens_full = median_time(lambda: federation_sensitivity(model, x, y), repeats)
    sens_same = median_time(lambda: federation_sensitivity(model, xs, ys), repeats)
    trace = median_time(
        lambda: hessian_metrics(model, xs, ys, n_probes=probes, eig_iters=0), repeats
    )
    return {
        "dataset": name,
        "n_train": len(y),
        "hessian_samples": n,
        "probes": probes,
        "epoch_s": epoch,
        "sensitivity_s": sens_full,
        "sensitivity_over_epoch": sens_full / epoch,
        "trace_over_sensitivity": trace / sens_same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick", choices=["quick", "paper"])
    parser.add_argument("--probes", type=int, default=10, help="Hutchinson probes per unit")
    parser.add_argument(
        "--samples",
        type=int,
        default=128,
        help="samples for the trace and its sensitivity comparison (0: all)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, profile {args.profile}")
    for name in ("fmnist", "heart"):
        r = bench(name, args.profile, args.probes, args.samples or None, args.repeats)
        print(
            f"{r['dataset']:>7}: one local epoch ({r['n_train']} samples) {r['epoch_s']:.3f} s; "
            f"sensitivity / epoch = {r['sensitivity_over_epoch']:.2f}; "
            f"Hessian trace ({r['probes']} probes per unit, {r['hessian_samples']} samples) / "
            f"sensitivity on the same samples = {r['trace_over_sensitivity']:.1f}"
        )


if __name__ == "__main__":
    main()
