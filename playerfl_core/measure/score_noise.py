"""How far one client's test macro-F1 moves from the draw of its test images alone (issue 34,
item 5): the standard error of the score at ``n`` images, measured, not assumed.

A trained model's predictions on a large test set drawn from the client's distribution
(``data_prep.eval_sets``) stand in for that distribution: resampling ``n`` of them with
replacement, many times, gives the spread of the score a client with ``n`` test images would
report. Accuracy's spread is also the binomial formula's (a check of the method); macro-F1,
the book's headline, averages per-class F1 over a few images per class and has no such formula.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from playerfl_core.fl.scoring import accuracy_and_class_f1


def resampled_scores(
    labels: torch.Tensor, preds: torch.Tensor, n: int, draws: int, seed: int, num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and macro-F1 (the book's: over the classes present in labels or predictions) of
    ``draws`` resamples of ``n`` (label, prediction) pairs, drawn with replacement."""
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(labels), (draws, n), generator=gen)
    cells = labels[idx].long() * num_classes + preds[idx].long()
    offset = torch.arange(draws).unsqueeze(1) * num_classes**2
    cm = torch.bincount((cells + offset).flatten(), minlength=draws * num_classes**2)
    scores = accuracy_and_class_f1(cm.reshape(draws, num_classes, num_classes)).numpy()
    return scores[:, 0], np.nanmean(scores[:, 1:], axis=1)


def score_noise(
    labels: torch.Tensor,
    preds: torch.Tensor,
    sizes: Sequence[int],
    num_classes: int,
    draws: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per test-set size ``n``: the standard deviation of accuracy and macro-F1 over resamples,
    and the binomial formula's standard error of accuracy at the full set's accuracy.
    Columns: n, accuracy_se, binomial_se, macro_f1_se."""
    if len(labels) != len(preds) or len(labels) == 0:
        raise ValueError(
            f"need as many predictions as labels (> 0); got {len(preds)}, {len(labels)}"
        )
    acc = float((labels == preds).double().mean())
    rows = []
    for i, n in enumerate(sizes):
        a, f1 = resampled_scores(labels, preds, int(n), draws, seed + i, num_classes)
        rows.append((int(n), float(a.std()), float(np.sqrt(acc * (1 - acc) / n)), float(f1.std())))
    return pd.DataFrame(rows, columns=["n", "accuracy_se", "binomial_se", "macro_f1_se"])


def client_score_noise(
    dataset: str,
    seed: int,
    p: int,
    eval_per_client: int,
    sizes: Sequence[int],
    draws: int = 2000,
) -> pd.DataFrame:
    """Train the book's run of split ``p`` on ``dataset`` (quick sizes, one thread), then measure
    :func:`score_noise` on each client's ``eval_per_client`` test images drawn from its own
    distribution, with the model it deploys after the last round. Columns: client, weight (its
    share of the training samples), n, accuracy_se, binomial_se, macro_f1_se."""
    from data_prep import load
    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.fl.algorithms.prefix import prefix_name
    from playerfl_core.fl.engine import run_federated
    from playerfl_core.fl.profiles import make_config

    big = load(dataset, "quick", seed=seed, eval_per_client=eval_per_client)
    algorithm = get_algorithm(prefix_name(p))
    config = make_config(dataset, "quick", seed=seed, device="cpu", progress=False)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = run_federated(load(dataset, "quick", seed=seed), algorithm, config)
        frames = []
        for i, (client, data) in enumerate(zip(run.clients, big.clients, strict=True)):
            model = algorithm.deployed_model(run, client).eval()
            with torch.no_grad():
                preds = model(data.x_test).argmax(1)
            noise = score_noise(data.y_test, preds, sizes, big.num_classes, draws, seed + 97 * i)
            frames.append(noise.assign(client=data.name, weight=data.n_train))
    finally:
        torch.set_num_threads(previous)
    out = pd.concat(frames, ignore_index=True)
    out["weight"] /= out.groupby("n")["weight"].transform("sum")
    return out[["client", "weight", "n", "accuracy_se", "binomial_se", "macro_f1_se"]]


def run_se(noise: pd.DataFrame, column: str = "macro_f1_se") -> pd.Series:
    """Per size ``n``: the standard error of a run's score, the clients' training-share-weighted
    mean (clients draw their test images independently): sqrt(Σ w² se²)."""
    var = noise["weight"] ** 2 * noise[column] ** 2
    return var.groupby(noise["n"]).sum().pow(0.5)
