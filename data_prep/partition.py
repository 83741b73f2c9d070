"""Splitting a pool of samples into clients and each client into train/val/test.

All randomness comes from an explicit `np.random.Generator`, so a seed fully determines a
federation and nothing depends on global RNG state or call order elsewhere.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from .base import ClientData, DataError


def dirichlet_label_skew(
    labels: np.ndarray,
    n_clients: int,
    alpha: float,
    rng: np.random.Generator,
    min_per_client: int = 20,
    max_redraws: int = 100,
) -> list[np.ndarray]:
    """Label-skewed partition: each class is spread over clients by Dirichlet(alpha) shares.

    Small `alpha` concentrates each class on few clients (strong heterogeneity); large
    `alpha` approaches an IID split. Returns one sorted index array (into `labels`) per
    client; the arrays are disjoint and together cover every index. A draw that leaves a
    client with fewer than `min_per_client` samples is redrawn (the authors enforce no
    minimum, which can leave a client unable to form val/test splits).
    """
    labels = np.asarray(labels)
    if (
        isinstance(n_clients, bool)
        or int(n_clients) != n_clients
        or n_clients < 1
        or not (isinstance(alpha, numbers.Real) and math.isfinite(alpha) and alpha > 0)
    ):
        raise DataError(
            f"need n_clients >= 1 and a Dirichlet alpha > 0 (valid range: alpha > 0; 0.05 is "
            f"strong label skew, 10 nearly IID), got n_clients={n_clients}, alpha={alpha}"
        )
    if n_clients * min_per_client > len(labels):
        raise DataError(
            f"{len(labels)} samples cannot give {n_clients} clients {min_per_client} each; "
            "lower n_clients or min_per_client"
        )
    classes = np.unique(labels)
    for _ in range(max_redraws):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            shares = rng.dirichlet(np.full(n_clients, float(alpha)))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).round().astype(int)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].append(chunk)
        out = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(p) for p in out) >= min_per_client:
            return out
    raise DataError(
        f"after {max_redraws} Dirichlet draws (alpha={alpha}) some client still had fewer than "
        f"{min_per_client} of {len(labels)} samples; raise alpha, lower n_clients, add samples "
        "or lower min_per_client"
    )


def train_val_test_split(
    n: int,
    rng: np.random.Generator,
    fractions: tuple[float, float, float] = (0.64, 0.16, 0.20),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shuffled, unstratified split of `range(n)` as the paper does it.

    First the test fraction is taken, then val is taken from the remainder (20 % then 20 %
    of the rest gives 64/16/20). Sizes round up like scikit-learn's `train_test_split`, so
    even tiny clients get at least one test and one validation sample.
    """
    f_train, f_val, f_test = fractions
    if min(fractions) < 0 or not math.isclose(f_train + f_val + f_test, 1.0, abs_tol=1e-6):
        raise DataError(f"fractions must be non-negative and sum to 1, got {fractions}")
    perm = rng.permutation(n)
    n_test = math.ceil(round(n * f_test, 9))
    rest = n - n_test
    n_val = math.ceil(round(rest * f_val / (f_train + f_val), 9)) if f_train + f_val else 0
    test, val, train = perm[:n_test], perm[n_test : n_test + n_val], perm[n_test + n_val :]
    return np.sort(train), np.sort(val), np.sort(test)


def label_distribution(labels: np.ndarray, num_classes: int) -> np.ndarray:
    counts = np.bincount(np.asarray(labels), minlength=num_classes).astype(float)
    return counts / max(counts.sum(), 1.0)


def label_skew(partitions: list[np.ndarray], labels: np.ndarray) -> float:
    """Heterogeneity of a partition: mean total-variation distance to the pooled labels.

    0 means every client has the pooled label mix (IID); values near 1 mean clients hold
    almost disjoint sets of classes. Sample counts do not enter, only label proportions.
    """
    labels = np.asarray(labels)
    num_classes = int(labels.max()) + 1
    pooled = label_distribution(labels[np.concatenate(partitions)], num_classes)
    tv = [
        0.5 * np.abs(label_distribution(labels[p], num_classes) - pooled).sum() for p in partitions
    ]
    return float(np.mean(tv))


def split_clients(
    x, y, partitions: list[np.ndarray], rng: np.random.Generator, names: list[str] | None = None
):
    """Turn index partitions of tensors `x`, `y` into ClientData with 64/16/20 splits."""
    names = names or [f"client_{k + 1}" for k in range(len(partitions))]
    clients = []
    for name, part in zip(names, partitions, strict=True):
        tr, va, te = (torch.from_numpy(part[s]) for s in train_val_test_split(len(part), rng))
        clients.append(ClientData(name, x[tr], y[tr], x[va], y[va], x[te], y[te]))
    return clients


def iid_partition(n: int, n_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Labels IID: a seeded permutation of `range(n)` cut into `n_clients` near-equal parts.

    The baseline of a feature-skew federation: every client draws from the same label mix, so
    whatever heterogeneity there is comes from the inputs alone.
    """
    if isinstance(n_clients, bool) or int(n_clients) != n_clients or not 1 <= n_clients <= n:
        raise DataError(
            f"n_clients must be in 1..{n} (the number of samples) for an IID split, got {n_clients}"
        )
    return [np.sort(part) for part in np.array_split(rng.permutation(n), n_clients)]


AUTHORS_SPLIT_SEED = 42
"""The authors' fixed train/val/test split seed (reference §1.3, §2.1), the same in every run."""

PROTOCOLS = ("book", "authors")
"""How a loader builds a federation: the book's pipeline, or the authors' (``protocol="authors"``,
where a declaration's loader has it: Heart and Fashion-MNIST)."""


def check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise DataError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")


def authors_split(n: int, seed: int = AUTHORS_SPLIT_SEED) -> tuple[np.ndarray, ...]:
    """The authors' per-client split: 20 % test, then 20 % of the rest validation (reference §2.1).

    The reference says only "shuffled, not stratified, split seed 42"; scikit-learn's
    ``train_test_split(test_size=0.2, random_state=42)``, applied twice, is how their code
    does it, so that is what is called here (the indices, not the sizes, depend on it).
    """
    from sklearn.model_selection import train_test_split  # deferred: seconds to import, one caller

    idx = np.arange(n)
    rest, test = train_test_split(idx, test_size=0.2, random_state=seed, shuffle=True)
    train, val = train_test_split(rest, test_size=0.2, random_state=seed, shuffle=True)
    return train, val, test


def authors_dirichlet(
    labels: np.ndarray, n_clients: int, alpha: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """The authors' label-skew partition (reference §2.1), with an explicit generator.

    For each class in ascending order: shares ~ Dirichlet(alpha); client k gets
    floor(share_k × class count) samples, the last client also the rounding remainder; the
    class's samples, in stored order, are cut into consecutive slices for clients 1 … K. No
    minimum size (unlike :func:`dirichlet_label_skew`): an empty or tiny client is refused by
    the loader, naming the seed. Their draws came from numpy's global RNG; here from ``rng``.
    """
    labels = np.asarray(labels)
    parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        counts = np.floor(rng.dirichlet(np.full(n_clients, float(alpha))) * len(idx)).astype(int)
        counts[-1] += len(idx) - counts.sum()
        for k, chunk in enumerate(np.split(idx, np.cumsum(counts)[:-1])):
            parts[k].append(chunk)
    return [np.concatenate(p) for p in parts]
