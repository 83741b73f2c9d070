"""Larger evaluation sets (``data_prep.eval_sets``, issue 34 item 5): training data untouched,
each client's label mix, no image scored that any client trains on."""

import numpy as np
import pytest
import torch

from data_prep import DataError, load
from data_prep.eval_sets import allocate

SMALL = {"samples_per_client": 120}


def _rows(x: torch.Tensor) -> set[bytes]:
    return {row.numpy().tobytes() for row in x.reshape(len(x), -1)}


def test_allocate_rounds_shares_to_whole_images_that_sum_to_n():
    assert allocate(np.array([1, 1, 2]), 8).tolist() == [2, 2, 4]
    assert allocate(np.array([1, 1, 1]), 10).tolist() == [4, 3, 3]  # ties to the smaller class
    counts = allocate(np.array([5, 0, 3, 11]), 2000)
    assert counts.sum() == 2000 and counts[1] == 0
    assert np.allclose(counts / 2000, np.array([5, 0, 3, 11]) / 19, atol=1 / 2000)


@pytest.mark.parametrize("name", ["fmnist", "fmnist_alpha0.1", "fmnist_swap", "fmnist_quantity"])
def test_training_data_stays_and_evaluation_follows_the_clients_label_mix(name):
    book = load(name, "quick", seed=2, **SMALL)
    big = load(name, "quick", seed=2, eval_per_client=500, **SMALL)
    assert big.params["eval_per_client"] == 500 and "500 validation" in big.notes
    for a, b in zip(book.clients, big.clients, strict=True):
        assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)
        assert len(b.y_val) == len(b.y_test) == 500
        own = torch.cat([a.y_train, a.y_val, a.y_test])
        want = allocate(np.bincount(own.numpy(), minlength=10), 500)
        for split in (b.y_val, b.y_test):
            assert np.bincount(split.numpy(), minlength=10).tolist() == want.tolist()


def test_no_evaluation_image_is_trained_on_and_validation_never_meets_test():
    big = load("fmnist", "quick", seed=1, eval_per_client=400, **SMALL)
    trained = set().union(*(_rows(c.x_train) for c in big.clients))
    for c in big.clients:
        val, test = _rows(c.x_val), _rows(c.x_test)
        assert not val & trained and not test & trained
        assert not val & test
        assert len(val) == len(test) == 400  # no image drawn twice within a split


def test_a_rotated_clients_evaluation_images_are_turned_as_its_training_images_are():
    """Client 5 of 5 sees every image turned by 180°: its mean test image is client 1's mean
    test image upside down (labels IID, 1,000 images each)."""
    big = load("fmnist_rotate", "quick", seed=0, eval_per_client=1000, **SMALL)
    first, last = (c.x_test.mean(0).squeeze() for c in (big.clients[0], big.clients[-1]))

    def corr(a, b):
        return float(np.corrcoef(a.flatten().numpy(), b.flatten().numpy())[0, 1])

    assert corr(last, torch.flip(first, (0, 1))) > 0.98
    assert corr(last, first) < 0.9


def test_bad_sizes_and_federations_without_held_out_images_get_one_line():
    with pytest.raises(DataError, match="eval_per_client must be a whole number"):
        load("fmnist", "quick", eval_per_client=0, **SMALL)
    with pytest.raises(DataError, match="no held-out images.*federations with them: fmnist"):
        load("heart", "quick", eval_per_client=100)
    with pytest.raises(DataError, match=r"only \d+ exist; choose eval_per_client ≤ \d+"):
        load("fmnist_rotate", "quick", eval_per_client=50_000, **SMALL)
