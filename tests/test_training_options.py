"""Training options that reproduce the authors' choices: focal loss, augmentation (issue 9)."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from data_prep import load
from data_prep.augment import random_affine_perspective
from playerfl_core import RunConfig, get_algorithm, run_federated
from playerfl_core.fl.engine import Client
from playerfl_core.fl.losses import authors_focal_loss
from playerfl_core.fl.models import build_model


def config(**kw):
    return RunConfig(**{"rounds": 2, "lr": 1e-2, "batch_size": 32, "progress": False, **kw})


# -- the authors' focal loss ------------------------------------------------------------------
def focal_by_loops(logits, y, gamma, alpha):
    """§4.1 written out entry by entry, as a second, independent implementation."""
    p = torch.softmax(logits, 1)
    b, c = logits.shape
    total = 0.0
    for i in range(b):
        ce = -torch.log(p[i, y[i]])
        for k in range(c):
            if k == y[i]:
                w = alpha[k] * (1 - p[i, k]) ** gamma
            else:
                w = (1 - alpha[k]) * p[i, k] ** gamma
            total = total + w * ce
    return 10 * total / (b * c)


def test_focal_loss_hand_computed_value():
    # Equal logits: p = 1/3, CE = ln 3; weights 0.2·(2/3), 0.7·(1/3), 0.5·(1/3); mean over 3.
    loss = authors_focal_loss(torch.zeros(1, 3), torch.tensor([0]), 1.0, [0.2, 0.3, 0.5])
    expected = 10 * math.log(3) * (0.2 * 2 / 3 + 0.7 / 3 + 0.5 / 3) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_focal_loss_with_gamma_zero_is_scaled_cross_entropy():
    gen = torch.Generator().manual_seed(0)
    logits, y = torch.randn(20, 5, generator=gen), torch.randint(0, 5, (20,), generator=gen)
    a = 0.3  # γ = 0, α_c = a: every entry weighs a (true class) or 1 − a (others)
    loss = authors_focal_loss(logits, y, 0.0, [a] * 5)
    scale = 10 * (a + 4 * (1 - a)) / 5
    assert loss.item() == pytest.approx(scale * F.cross_entropy(logits, y).item(), rel=1e-6)


@pytest.mark.parametrize("gamma", [1.0, 3.0])
def test_focal_loss_and_its_gradient_equal_the_entrywise_definition(gamma):
    gen = torch.Generator().manual_seed(1)
    alpha = [0.12939189, 0.18108108, 0.22331081, 0.22364865, 0.24256757]
    logits = torch.randn(7, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 5, (7,), generator=gen)
    ours = authors_focal_loss(logits, y, gamma, alpha)
    reference = focal_by_loops(logits, y, gamma, alpha)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-12)
    g_ours = torch.autograd.grad(ours, logits)[0]
    g_ref = torch.autograd.grad(reference, logits)[0]
    torch.testing.assert_close(g_ours, g_ref, rtol=1e-10, atol=1e-12)


def test_focal_loss_rejects_wrong_alpha_length():
    with pytest.raises(ValueError, match="one alpha per class"):
        authors_focal_loss(torch.zeros(2, 3), torch.tensor([0, 1]), 1.0, [0.5, 0.5])


def test_focal_option_trains_with_the_focal_loss(heart):
    ce = run_federated(heart, get_algorithm("fedavg"), config(rounds=1)).table()
    focal_run = run_federated(heart, get_algorithm("fedavg"), config(rounds=1, loss="focal"))
    focal = focal_run.table()
    pick = lambda t: t[(t.metric == "loss") & (t.split == "train")]["value"].to_numpy()  # noqa: E731
    assert not (pick(ce) == pick(focal)).any()
    # The logged training loss is the focal loss of the batches the client trained on.
    c = focal_run.clients[0]
    assert c.loss(torch.zeros(2, 5), torch.tensor([0, 1])).item() == pytest.approx(
        authors_focal_loss(torch.zeros(2, 5), torch.tensor([0, 1]), **heart.focal_loss).item()
    )


def test_focal_and_augment_are_validated(heart, digits):
    with pytest.raises(ValueError, match="loss must be one of"):
        config(loss="mse")
    with pytest.raises(ValueError, match="augment must be True or False"):
        config(augment="yes")
    with pytest.raises(ValueError, match="loss='focal'.*'digits'"):
        run_federated(digits, get_algorithm("fedavg"), config(loss="focal"))
    with pytest.raises(ValueError, match="augment=True.*'heart'"):
        run_federated(heart, get_algorithm("fedavg"), config(augment=True))


# -- the Fashion-MNIST augmentation -----------------------------------------------------------
def images(b=6, value=None):
    gen = torch.Generator().manual_seed(3)
    if value is not None:
        return torch.full((b, 1, 28, 28), float(value))
    return torch.rand(b, 1, 28, 28, generator=gen)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_augmentation_is_seeded():
    x = images()
    a = random_affine_perspective(x, gen(0))
    assert torch.equal(a, random_affine_perspective(x, gen(0)))
    assert not torch.equal(a, random_affine_perspective(x, gen(1)))
    assert not torch.equal(a, x)


def test_augmentation_without_transforms_is_the_identity():
    x = images()
    out = random_affine_perspective(
        x, gen(0), degrees=0, translate=0, scale=(1, 1), p_perspective=0
    )
    torch.testing.assert_close(out, x, rtol=0, atol=1e-5)


def test_uncovered_area_gets_the_fill_value():
    fill = -0.81
    out = random_affine_perspective(images(value=fill), gen(0), fill=fill)
    torch.testing.assert_close(out, torch.full_like(out, fill), rtol=0, atol=1e-5)


def test_shrinking_and_perspective_move_the_image_inwards():
    ones = images(value=1.0)
    for kw in (
        {"scale": (0.5, 0.5), "p_perspective": 0},  # scale 0.5 shows the whole image, smaller
        {"scale": (1, 1), "p_perspective": 1, "distortion": 0.5},  # corners pulled inwards
    ):
        out = random_affine_perspective(ones, gen(0), degrees=0, translate=0, **kw)
        assert (out[:, :, 0, 0] < 0.5).all(), kw  # the corner is now background (fill 0)
        assert (out[:, :, 14, 14] == 1).all(), kw  # the centre is still image


@pytest.fixture(scope="module")
def digits_augmented(digits):
    """Small images with the Fashion-MNIST augmentation attached: fast, same code path."""
    return dataclasses.replace(digits, augmentation=random_affine_perspective)


def test_fmnist_carries_the_authors_augmentation_and_heart_the_focal_loss(heart):
    data = load("fmnist", profile="quick", seed=0, n_clients=2, samples_per_client=40)
    assert data.augmentation.func is random_affine_perspective
    assert data.augmentation.keywords["fill"] == pytest.approx(-0.2860 / 0.3530)
    assert heart.focal_loss["gamma"] == 3.0 and len(heart.focal_loss["alpha"]) == 5
    assert heart.augmentation is None and data.focal_loss is None


def client(data, **kw):
    model = build_model(data.model, data.num_classes, data.input_shape, 1.0, 0)
    return Client(0, data.clients[0], model, config(**kw), data.focal_loss, data.augmentation)


def test_client_augments_training_batches_reproducibly(digits_augmented):
    plain, a, b = (client(digits_augmented, augment=aug) for aug in (False, True, True))
    other = client(digits_augmented, augment=True, seed=1)
    batches = [list(c.batches()) for c in (plain, a, b, other)]
    for (xp, yp), (xa, ya), (xb, _yb) in zip(*batches[:3], strict=True):
        assert torch.equal(ya, yp)  # same shuffle order: augmentation does not change it
        assert torch.equal(xa, xb) and not torch.equal(xa, xp)
    assert not torch.equal(batches[1][0][0], batches[3][0][0])  # another seed, other batches
    assert torch.equal(a.x["train"], digits_augmented.clients[0].x_train)  # stored data untouched


def test_evaluation_data_is_never_augmented(digits_augmented):
    plain, aug = client(digits_augmented), client(digits_augmented, augment=True)
    model = plain.model
    for split in ("val", "test"):
        assert plain.evaluate(model, split) == aug.evaluate(model, split)


def test_augmented_run_is_reproducible_and_differs(digits_augmented):
    runs = [
        run_federated(
            digits_augmented, get_algorithm("fedavg"), config(rounds=1, augment=aug)
        ).table()
        for aug in (True, True, False)
    ]
    assert runs[0].equals(runs[1])
    assert not runs[0]["value"].equals(runs[2]["value"])
