"""Engine overhead and sensitivity cost, as ratios measured in one run (not a timed test).

1. A FedAvg run through the engine ÷ the same optimizer steps alone: the same models, the same
   Adam, the same mini-batches in the same order, and nothing else (no evaluation, no
   aggregation, no logging). What is left above 1 is the price of scoring, averaging and
   bookkeeping. Target: ≤ 1.3 (issue 10), per dataset.
2. Federation sensitivity on one client's training data ÷ one local epoch (no target; it tells
   what PLayer-FL's split costs).

Times are medians over ``--repeats``, engine and bare loop interleaved so background load hits
both alike. On the CPU the clock is the process's CPU time (one thread), which other processes
on a shared machine barely disturb; on CUDA it is wall time. Works with older checkouts of
the library too (``PYTHONPATH=/old/checkout``), which
is how the "before" column in the README was measured.

Usage: python bench/bench_engine.py [--profile quick] [--datasets heart,digits,fmnist]
       [--rounds N] [--repeats K] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from tqdm import tqdm

from data_prep import load
from playerfl_core import make_config, run_federated
from playerfl_core.fl import engine
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import Client, client_seed
from playerfl_core.fl.models import build_model
from playerfl_core.fl.sensitivity import federation_sensitivity

TARGET = 1.3


def optimizer_steps_only(data, cfg) -> None:
    """The optimizer steps of a FedAvg run and nothing else: what the engine cannot avoid."""
    dev = cfg.device
    impl = getattr(engine, "adam_implementation", lambda device: {})(dev)
    clients = []
    for cid, c in enumerate(data.clients):
        model = build_model(data.model, data.num_classes, data.input_shape, cfg.width, cfg.seed)
        model = model.to(dev)
        opt = torch.optim.Adam(
            model.parameters(), lr=cfg.lr, amsgrad=True, weight_decay=cfg.weight_decay, **impl
        )
        gen = torch.Generator().manual_seed(client_seed(cfg.seed, cid))
        clients.append((model, opt, gen, c.x_train.to(dev), c.y_train.to(dev)))
    for _ in range(cfg.rounds):
        for model, opt, gen, x, y in clients:
            order = torch.randperm(len(y), generator=gen).to(dev)
            for start in range(0, len(y), cfg.batch_size):
                idx = order[start : start + cfg.batch_size]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x[idx]), y[idx]).backward()
                opt.step()
    if dev.startswith("cuda"):
        torch.cuda.synchronize()


CLOCK = time.process_time


def timed(fn) -> float:
    start = CLOCK()
    fn()
    return CLOCK() - start


def overhead(name: str, profile: str, rounds: int | None, repeats: int, device: str | None):
    data = load(name, profile=profile, seed=0)
    cfg = make_config(name, profile, rounds=rounds, device=device, progress=False)
    engine_s, steps_s = [], []
    for _ in tqdm(range(repeats), desc=f"{name}: engine vs optimizer steps", leave=False):
        engine_s.append(timed(lambda: run_federated(data, get_algorithm("fedavg"), cfg)))
        steps_s.append(timed(lambda: optimizer_steps_only(data, cfg)))
    e, s = statistics.median(engine_s), statistics.median(steps_s)
    verdict = "ok" if e / s <= TARGET else "ABOVE TARGET"
    print(
        f"{name:7s} {cfg.device} rounds={cfg.rounds}: engine FedAvg {e:.3f} s, optimizer steps "
        f"alone {s:.3f} s -> ratio {e / s:.2f} (target <= {TARGET}) {verdict}",
        flush=True,
    )
    return data, cfg


def sensitivity_cost(data, cfg, repeats: int) -> None:
    client = Client(
        0,
        data.clients[0],
        build_model(data.model, data.num_classes, data.input_shape, cfg.width, cfg.seed),
        cfg,
    )
    epoch = statistics.median(timed(client.train_epoch) for _ in range(repeats))
    x, y = client.x["train"], client.y["train"]
    sens = statistics.median(
        timed(lambda: federation_sensitivity(client.model, x, y)) for _ in range(repeats)
    )
    print(
        f"{data.name:7s} one local epoch {epoch:.3f} s, sensitivity {sens:.3f} s -> ratio "
        f"{sens / epoch:.2f} (no target)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="quick", help="a profile of playerfl_core.fl.profiles")
    parser.add_argument("--datasets", default="heart,digits,fmnist")
    parser.add_argument("--rounds", type=int, help="override the profile's rounds")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    global CLOCK
    on_cuda = (args.device or ("cuda" if torch.cuda.is_available() else "cpu")) != "cpu"
    CLOCK = time.perf_counter if on_cuda or args.threads > 1 else time.process_time
    print(
        f"profile={args.profile} repeats={args.repeats} (medians) torch={torch.__version__} "
        f"threads={args.threads} clock={CLOCK.__name__}"
    )
    for name in args.datasets.split(","):
        data, cfg = overhead(name, args.profile, args.rounds, args.repeats, args.device)
        sensitivity_cost(data, cfg, args.repeats)


if __name__ == "__main__":
    main()
