"""FedAvg written out in a dozen lines (chapter 00), to be checked against the library's engine.

The chapter shows this file's source; the engine (:mod:`playerfl_core.fl.engine`) must give the
same models, so the hand-written loop is also a test of the engine's FedAvg.
"""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm import tqdm

from playerfl_core.fl.engine import client_seed
from playerfl_core.fl.models import build_model

# fmt: off
# The three functions below are printed in the book, whose code boxes hold about 70 characters.


def local_epoch(model, optimizer, x, y, generator, batch_size):
    """A client's round: one pass over its shuffled training data,
    one optimiser step per mini-batch."""
    model.train()
    order = torch.randperm(len(y), generator=generator)
    for start in range(0, len(y), batch_size):
        idx = order[start : start + batch_size]
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        optimizer.step()


def server_average(models, shares):
    """The server: a weighted average of every parameter,
    weights = the clients' shares of the training data."""
    total = sum(shares)
    params = [dict(m.named_parameters()) for m in models]
    return {
        name: sum(p[name].detach() * (w / total)
                  for p, w in zip(params, shares, strict=True))
        for name in params[0]
    }


def fedavg_from_scratch(fd, config, weighted: bool = True):
    """FedAvg on federation ``fd``. Every client starts from the
    same model (same seed), trains one local epoch per round with
    its own Adam optimiser, and the server's average is copied
    back into every client's model. ``weighted=False`` averages
    the clients equally instead of by training-set size.

    Returns the final global model and every client's test
    accuracy after every round."""
    device = config.device

    def build():
        return build_model(fd.model, fd.num_classes, fd.input_shape,
                           config.width, config.seed).to(device)

    models = [build() for _ in fd.clients]  # identical weights
    optimizers = [
        torch.optim.Adam(m.parameters(), lr=config.lr, amsgrad=True,
                         weight_decay=config.weight_decay)
        for m in models
    ]
    seeds = [client_seed(config.seed, i) for i in range(len(fd.clients))]
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    data = [(c.x_train.to(device), c.y_train.to(device))
            for c in fd.clients]
    sizes = [c.n_train for c in fd.clients]
    shares = ([n / sum(sizes) for n in sizes] if weighted
              else [1.0] * len(sizes))
    accuracy = []
    for rnd in tqdm(range(config.rounds), desc="FedAvg from scratch"):
        clients = zip(models, optimizers, generators, data, strict=True)
        for model, opt, gen, (x, y) in clients:
            local_epoch(model, opt, x, y, gen, config.batch_size)
        global_params = server_average(models, shares)
        with torch.no_grad():
            for model in models:
                for name, p in model.named_parameters():
                    p.copy_(global_params[name])
        accuracy += [(rnd, i, test_accuracy(models[0], c, device))
                     for i, c in enumerate(fd.clients)]
    columns = ["round", "client", "scratch"]
    return models[0], pd.DataFrame(accuracy, columns=columns)


# fmt: on


@torch.no_grad()
def test_accuracy(model, client, device):
    """Share of a client's test samples the model classifies right."""
    model.eval()
    x, y = client.x_test.to(device), client.y_test.to(device)
    return int((model(x).argmax(1) == y).sum()) / len(y)


def compare_with_engine(scratch_model, scratch_acc: pd.DataFrame, engine_run) -> dict:
    """How far the hand-written FedAvg is from the engine's run of the same federation and
    config: the largest parameter difference of the final global models, the largest difference
    of a client's test accuracy in any round, and the engine's final mean test accuracy."""
    engine_model = engine_run.clients[0].model
    max_diff = max(
        float((p - q).abs().max().detach())
        for p, q in zip(scratch_model.parameters(), engine_model.parameters(), strict=True)
    )
    table = engine_run.table()
    engine_acc = table[(table["split"] == "test") & (table["metric"] == "accuracy")]
    both = scratch_acc.merge(
        engine_acc.rename(columns={"value": "engine"})[["round", "client", "engine"]],
        on=["round", "client"],
    )
    acc_diff = float((both["scratch"] - both["engine"]).abs().max())
    final = both[both["round"] == both["round"].max()]
    return {
        "max_param_diff": max_diff,
        "max_acc_diff": acc_diff,
        "identical": max_diff == 0 and acc_diff == 0,
        "final_acc_mean": float(final["engine"].mean()),
    }
