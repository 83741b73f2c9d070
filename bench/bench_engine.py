"""Engine overhead and sensitivity cost, as ratios measured in one run (not a timed test).

1. FedAvg through the engine ÷ a bare PyTorch loop doing the same optimizer steps, the same
   averaging and the same per-round evaluation on the same preloaded tensors (FMNIST CNN,
   5 clients). Target: ≤ 1.05.
2. Computing federation sensitivity on a client's training data ÷ one local epoch.

Usage: python bench/bench_engine.py [--profile quick|paper] [--rounds N] [--repeats K]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from sklearn.metrics import f1_score
from tqdm import tqdm

from data_prep import load
from playerfl_core import make_config, run_federated
from playerfl_core.engine import Client
from playerfl_core.models import build_model
from playerfl_core.sensitivity import federation_sensitivity


def bare_fedavg(data, cfg) -> None:
    """The same work as the engine's FedAvg, written as one plain loop."""
    dev = cfg.device
    tensors = [
        {
            s: (getattr(c, f"x_{s}").to(dev), getattr(c, f"y_{s}").to(dev))
            for s in ("train", "val", "test")
        }
        for c in data.clients
    ]
    models = [
        build_model(data.model, data.num_classes, data.input_shape, cfg.width, cfg.seed).to(dev)
        for _ in data.clients
    ]
    opts = [
        torch.optim.Adam(m.parameters(), lr=cfg.lr, amsgrad=True, weight_decay=cfg.weight_decay)
        for m in models
    ]
    gens = [torch.Generator().manual_seed(i) for i in range(len(models))]
    sizes = torch.tensor([len(t["train"][1]) for t in tensors], dtype=torch.float32)
    w = (sizes / sizes.sum()).tolist()
    for _ in range(cfg.rounds):
        for m, opt, t, g in zip(models, opts, tensors, gens, strict=True):
            x, y = t["train"]
            order = torch.randperm(len(y), generator=g).to(dev)
            for i in range(0, len(y), cfg.batch_size):
                idx = order[i : i + cfg.batch_size]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(m(x[idx]), y[idx]).backward()
                opt.step()
        with torch.no_grad():
            params = [dict(m.named_parameters()) for m in models]
            for name in params[0]:
                avg = sum(wk * p[name] for wk, p in zip(w, params, strict=True))
                for p in params:
                    p[name].copy_(avg)
            for m, t in zip(models, tensors, strict=True):
                m.eval()
                for s in ("val", "test"):
                    x, y = t[s]
                    logits = m(x)
                    F.cross_entropy(logits, y).item()
                    pred = logits.argmax(1)
                    (pred == y).float().mean().item()
                    f1_score(y.cpu().numpy(), pred.cpu().numpy(), average="macro", zero_division=0)
                m.train()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="quick", choices=["quick", "paper"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = load("fmnist", profile=args.profile, seed=0)
    cfg = make_config("fmnist", args.profile, rounds=args.rounds, progress=False)
    engine, bare = [], []
    for _ in tqdm(range(args.repeats), desc="engine vs bare loop"):  # interleave: fair to both
        engine.append(timed(lambda: run_federated(data, "fedavg", cfg)))
        bare.append(timed(lambda: bare_fedavg(data, cfg)))
    e, b = min(engine), min(bare)
    print(
        f"device={cfg.device} profile={args.profile} rounds={args.rounds} (best of {args.repeats})"
    )
    print(f"engine FedAvg {e:.2f} s, bare loop {b:.2f} s -> ratio {e / b:.3f} (target <= 1.05)")

    client = Client(
        0,
        data.clients[0],
        build_model(data.model, data.num_classes, data.input_shape, cfg.width, 0),
        cfg,
    )
    epoch = min(timed(client.train_epoch) for _ in range(args.repeats))
    sens = min(
        timed(lambda: federation_sensitivity(client.model, client.x["train"], client.y["train"]))
        for _ in range(args.repeats)
    )
    print(f"one local epoch {epoch:.3f} s, sensitivity {sens:.3f} s -> ratio {sens / epoch:.2f}")


if __name__ == "__main__":
    main()
