"""Device scores equal scikit-learn's (issue 10 item 1)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import accuracy_score, f1_score

from playerfl_core.fl.scoring import (
    accuracy_and_macro_f1,
    confusion_matrix,
    score_logits,
    score_many,
    summarise,
)


def sklearn_scores(y, pred):
    return (
        accuracy_score(y, pred),
        f1_score(y, pred, average="macro", zero_division=0),
    )


def device_scores(y, pred, num_classes):
    return accuracy_and_macro_f1(torch.as_tensor(y), torch.as_tensor(pred), num_classes)


def random_pairs(count=150):
    """Seeded label/prediction pairs: 2 to 62 classes, 1 to 500 samples, skewed and uniform."""
    rng = np.random.default_rng(0)
    for i in range(count):
        c = int(rng.integers(2, 63)) if i % 3 else int(rng.integers(2, 6))
        n = int(rng.integers(1, 501))
        used = rng.choice(c, size=int(rng.integers(1, c + 1)), replace=False)
        y = rng.choice(used, size=n)
        if i % 2:  # mostly right, as a trained model
            pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, c, size=n))
        else:
            pred = rng.integers(0, c, size=n)
        yield c, y, pred


@pytest.mark.parametrize(("c", "y", "pred"), list(random_pairs()))
def test_equals_sklearn_on_random_pairs(c, y, pred):
    assert device_scores(y, pred, c) == sklearn_scores(y, pred)


EDGE_CASES = {
    "single class, all right": (3, [1, 1, 1, 1], [1, 1, 1, 1]),
    "single class, some wrong": (3, [1, 1, 1, 1], [1, 0, 1, 2]),
    "class only in predictions": (4, [0, 0, 1, 1], [0, 3, 1, 1]),
    "class only in labels": (4, [0, 2, 1, 1], [0, 0, 1, 1]),
    "all wrong": (3, [0, 1, 2, 0], [1, 2, 0, 2]),
    "all right": (5, [0, 4, 2, 2, 3], [0, 4, 2, 2, 3]),
    "one sample right": (10, [7], [7]),
    "one sample wrong": (10, [7], [2]),
    "two classes, highest index only": (10, [9, 9], [9, 9]),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_equals_sklearn_on_edge_cases(case):
    c, y, pred = EDGE_CASES[case]
    assert device_scores(np.array(y), np.array(pred), c) == sklearn_scores(y, pred)


def test_hand_computed_macro_f1():
    # class 0: tp 1, n_true 2, n_pred 1 -> 2/3; class 1: tp 2, n_true 2, n_pred 3 -> 4/5;
    # class 2 absent everywhere -> not averaged.
    acc, f1 = device_scores(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), 3)
    assert acc == 0.75
    assert f1 == pytest.approx((2 / 3 + 4 / 5) / 2, abs=1e-15)


def test_score_logits_matches_loss_and_sklearn():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(97, 6, generator=gen)
    y = torch.randint(0, 6, (97,), generator=gen)
    out = summarise(score_logits(logits, y).numpy())
    loss, acc, f1 = out["loss"], out["accuracy"], out["macro_f1"]
    assert loss == F.cross_entropy(logits, y).item()
    assert (acc, f1) == sklearn_scores(y.numpy(), logits.argmax(1).numpy())


def test_confusion_matrix_layout():
    cm = confusion_matrix(torch.tensor([0, 0, 2]), torch.tensor([1, 0, 2]), 3)
    assert cm.tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 1]]


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="empty split"):
        score_logits(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="equal length"):
        confusion_matrix(torch.tensor([0, 1]), torch.tensor([0]), 2)


def test_many_splits_scored_together_equal_each_alone():
    gen = torch.Generator().manual_seed(2)
    sizes = [1, 5, 40, 333, 17]
    logits = [torch.randn(n, 7, generator=gen) for n in sizes]
    labels = [torch.randint(0, 3 if i % 2 else 7, (n,), generator=gen) for i, n in enumerate(sizes)]
    rows = score_many(logits, labels).numpy()
    for z, y, row in zip(logits, labels, rows, strict=True):
        out = summarise(row)
        assert out["loss"] == F.cross_entropy(z, y).item()
        assert (out["accuracy"], out["macro_f1"]) == sklearn_scores(y.numpy(), z.argmax(1).numpy())


def test_score_many_rejects_mismatched_lists():
    with pytest.raises(ValueError, match="one label tensor per logits"):
        score_many([torch.zeros(2, 3)], [])
