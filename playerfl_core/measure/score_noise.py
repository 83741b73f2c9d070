"""How far one client's test macro-F1 moves from the draw of its test images alone: the
standard error of the score at ``n`` images, measured, not assumed.

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

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import prefix_name
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.profiles import make_config
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


def client_predictions(dataset: str, seed: int, p: int, eval_per_client: int):
    """Train the book's run of split ``p`` on ``dataset`` (quick sizes, one thread) and predict
    each client's ``eval_per_client`` test images drawn from its own distribution with the model
    it deploys after the last round. Returns (the large federation, per client its predictions)."""
    big = load(dataset, "quick", seed=seed, eval_per_client=eval_per_client)
    algorithm = get_algorithm(prefix_name(p))
    config = make_config(dataset, "quick", seed=seed, device="cpu", progress=False)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = run_federated(load(dataset, "quick", seed=seed), algorithm, config)
        preds = []
        for client, data in zip(run.clients, big.clients, strict=True):
            model = algorithm.deployed_model(run, client).eval()
            with torch.no_grad():
                preds.append(model(data.x_test).argmax(1))
    finally:
        torch.set_num_threads(previous)
    return big, preds


def training_shares(big) -> list[float]:
    """Each client's share of the federation's training samples (a run's score weights)."""
    total = sum(c.n_train for c in big.clients)
    return [c.n_train / total for c in big.clients]


def client_score_noise(
    dataset: str,
    seed: int,
    p: int,
    eval_per_client: int,
    sizes: Sequence[int],
    draws: int = 2000,
) -> pd.DataFrame:
    """:func:`score_noise` of each client of the book's run of split ``p``
    (:func:`client_predictions`). Columns: client, weight (its share of the training samples), n,
    accuracy_se, binomial_se, macro_f1_se."""
    big, preds = client_predictions(dataset, seed, p, eval_per_client)
    shares = training_shares(big)
    frames = [
        score_noise(data.y_test, pred, sizes, big.num_classes, draws, seed + 97 * i).assign(
            client=data.name, weight=shares[i]
        )
        for i, (data, pred) in enumerate(zip(big.clients, preds, strict=True))
    ]
    out = pd.concat(frames, ignore_index=True)
    return out[["client", "weight", "n", "accuracy_se", "binomial_se", "macro_f1_se"]]


def paired_regret_se(
    clients: Sequence[tuple[float, torch.Tensor, torch.Tensor, torch.Tensor]],
    n: int,
    num_classes: int,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """The standard error of one seed's regret, test(oracle's split) − test(rule's split) in a
    run's macro-F1, from the draw of ``n`` test images per client alone. ``clients``: per client
    (training share, labels, the rule's model's predictions, the oracle's). Both models score
    the same resampled images, as a regret scores both on one test set, so what they get right
    or wrong alike cancels. Returns (paired, unpaired): the unpaired error is what independent
    test sets would give, sqrt(se_rule² + se_oracle²)."""
    regret, var = np.zeros(draws), 0.0
    for i, (weight, labels, rule, oracle) in enumerate(clients):
        f1_rule = resampled_scores(labels, rule, n, draws, seed + 97 * i, num_classes)[1]
        f1_oracle = resampled_scores(labels, oracle, n, draws, seed + 97 * i, num_classes)[1]
        regret += weight * (f1_oracle - f1_rule)
        var += weight**2 * (f1_rule.var() + f1_oracle.var())
    return float(regret.std()), float(np.sqrt(var))


def regret_noise(
    dataset: str,
    seed: int,
    p_rule: int,
    p_oracle: int,
    eval_per_client: int,
    sizes: Sequence[int],
    draws: int = 2000,
) -> pd.DataFrame:
    """:func:`paired_regret_se` of one seed's regret between the book's runs of two splits, at
    each test-set size. Columns: n, regret_se, unpaired_se."""
    big, rule = client_predictions(dataset, seed, p_rule, eval_per_client)
    _, oracle = client_predictions(dataset, seed, p_oracle, eval_per_client)
    clients = [
        (w, c.y_test, r, o)
        for w, c, r, o in zip(training_shares(big), big.clients, rule, oracle, strict=True)
    ]
    rows = [(int(n), *paired_regret_se(clients, int(n), big.num_classes, draws, seed + j))
            for j, n in enumerate(sizes)]  # fmt: skip
    return pd.DataFrame(rows, columns=["n", "regret_se", "unpaired_se"])


def run_se(noise: pd.DataFrame, column: str = "macro_f1_se") -> pd.Series:
    """Per size ``n``: the standard error of a run's score, the clients' training-share-weighted
    mean (clients draw their test images independently): sqrt(Σ w² se²)."""
    var = noise["weight"] ** 2 * noise[column] ** 2
    return var.groupby(noise["n"]).sum().pow(0.5)
