"""Larger evaluation sets: each client's validation and test images drawn afresh, from images of
the same source that no client of the federation trains on.

At the book's sizes a client scores on 64 validation and 80 test images, so one run's score moves
by about δ from the draw of those images alone. ``load(name, eval_per_client=n)`` keeps every
client's training images bit for bit and replaces its validation and test sets by ``n`` images
each, drawn without replacement from the declaration's ``held_out`` images with the client's own
label mix (its share of each class over all its samples, rounded to whole images by largest
remainder). A variant's per-client transformation or relabelling then applies to them as it does
to the rest of the client's data (``skew.build``). A client's validation and test images never
overlap and never appear in any client's training set; two clients draw independently, so they
may score some of the same images.
"""

from __future__ import annotations

import numbers
import zlib
from dataclasses import replace

import numpy as np
import torch

from .base import DataError


def check_size(n, name: str) -> int:
    """``n`` as an int ≥ 1, or one line saying what is wrong."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise DataError(
            f"{name}: eval_per_client must be a whole number of images ≥ 1 (e.g. 2000), got {n!r}"
        )
    return int(n)


def allocate(shares: np.ndarray, n: int) -> np.ndarray:
    """``n`` images split over classes in proportion to ``shares`` (largest remainder; ties to
    the smaller class index), so the counts sum to ``n`` exactly."""
    exact = np.asarray(shares, dtype=float) / np.sum(shares) * n
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: n - counts.sum()]] += 1
    return counts


def with_eval_sets(clients, pool: tuple[torch.Tensor, torch.Tensor], n: int, seed: int, name: str):
    """``clients`` with validation and test sets of ``n`` images each drawn from ``pool``
    (inputs, labels) with each client's label mix; the training sets are the same objects."""
    x_pool, y_pool = pool
    labels = y_pool.numpy()
    num_classes = int(max(labels.max(), *(int(c.y_train.max()) for c in clients))) + 1
    by_class = [np.flatnonzero(labels == k) for k in range(num_classes)]
    out = []
    for i, c in enumerate(clients):
        own = torch.cat([c.y_train, c.y_val, c.y_test]).numpy()
        counts = allocate(np.bincount(own, minlength=num_classes), n)
        rng = np.random.default_rng([seed, zlib.crc32(b"eval_sets"), i])
        val, test = [], []
        for k, m in enumerate(counts):
            if m == 0:
                continue
            if 2 * m > len(by_class[k]):
                raise DataError(
                    f"{name}: client {c.name} needs {2 * m} held-out images of class {k} for "
                    f"eval_per_client={n}, but only {len(by_class[k])} exist; choose "
                    f"eval_per_client ≤ {len(by_class[k]) * n // (2 * m)}"
                )
            pick = rng.choice(by_class[k], size=2 * m, replace=False)
            val.append(pick[:m])
            test.append(pick[m:])
        v, t = (torch.from_numpy(np.sort(np.concatenate(s))) for s in (val, test))
        out.append(replace(c, x_val=x_pool[v], y_val=y_pool[v], x_test=x_pool[t], y_test=y_pool[t]))
    return out
