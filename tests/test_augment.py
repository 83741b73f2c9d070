"""The CIFAR-10 and Fed-ISIC-2019 training augmentations (issue 11): each piece against a direct
per-image reference, and the composed pipelines seeded and shape-preserving."""

import pytest
import torch
import torch.nn.functional as F
from torchvision.transforms.v2 import functional as TF

from data_prep import cifar10, isic2019
from data_prep.augment import (
    boxes_mask,
    coarse_dropout,
    colour_jitter,
    jitter_draws,
    random_affine_perspective,
    random_boxes,
    random_colour_jitter,
    random_flips_light,
    random_hflip,
    random_reflect_crop,
)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def pixels(b=8, size=32, seed=3):
    """Random RGB pixels in (0, 1]: never exactly 0, so a zero marks a hole."""
    return 1 - torch.rand(b, 3, size, size, generator=gen(seed))


def normalised(b=8, size=32, mean=cifar10.MEAN, std=cifar10.STD):
    m, s = (torch.tensor(v).view(1, 3, 1, 1) for v in (mean, std))
    return (pixels(b, size) - m) / s


# -- reflect crop and flip --------------------------------------------------------------------
def test_reflect_crop_is_a_window_of_the_reflect_padded_image():
    x = pixels(64, size=12)
    out = random_reflect_crop(x, gen(0), padding=4)
    assert out.shape == x.shape and out.dtype == x.dtype
    offsets = set()
    for i in range(len(x)):
        padded = F.pad(x[i : i + 1], (4, 4, 4, 4), mode="reflect")[0]
        hits = [
            (r, c)
            for r in range(9)
            for c in range(9)
            if torch.equal(out[i], padded[:, r : r + 12, c : c + 12])
        ]
        assert len(hits) == 1, (i, hits)  # exactly one integer offset, no resampling
        offsets.add(hits[0])
    rows, cols = {r for r, _ in offsets}, {c for _, c in offsets}
    assert {0, 8} <= rows and {0, 8} <= cols and len(offsets) > 20  # the full 0..8 range, varied


def test_hflip_mirrors_about_half_the_images():
    x = pixels(2000, size=4)
    out = random_hflip(x, gen(0))
    flipped = (out == x.flip(-1)).flatten(1).all(1)
    kept = (out == x).flatten(1).all(1)
    assert (flipped ^ kept).all()
    assert 0.45 < flipped.float().mean().item() < 0.55


# -- colour jitter ----------------------------------------------------------------------------
TORCHVISION_OPS = (TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation)


def test_colour_jitter_equals_torchvision_per_image():
    p = pixels(12)
    factors = 0.5 + torch.rand(12, 3, generator=gen(1))  # wide, so clamping happens
    orders = torch.tensor([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] * 2)
    out = colour_jitter(p, factors, orders)
    for i in range(len(p)):
        ref = p[i]
        for k in orders[i].tolist():
            ref = TORCHVISION_OPS[k](ref, factors[i, k].item())
        torch.testing.assert_close(out[i], ref, rtol=0, atol=2e-6)


def test_colour_jitter_with_factor_one_is_the_identity():
    p = pixels(6)
    out = colour_jitter(p, torch.ones(6, 3), torch.tensor([[2, 0, 1]] * 6))
    torch.testing.assert_close(out, p, rtol=0, atol=1e-6)


def test_jitter_draws_factor_ranges_and_every_order():
    factors, order = jitter_draws(3000, gen(0), (0.2, 0.1, 0.3))
    for k, s in enumerate((0.2, 0.1, 0.3)):
        assert factors[:, k].min() >= 1 - s and factors[:, k].max() <= 1 + s
        assert factors[:, k].min() < 1 - 0.9 * s and factors[:, k].max() > 1 + 0.9 * s
    assert torch.equal(order.sort(1).values, torch.arange(3).expand(3000, 3))
    _, counts = order.unique(dim=0, return_counts=True)
    assert len(counts) == 6 and counts.min() > 400  # each of the 6 orders about 1/6 of the time


def test_random_colour_jitter_applies_its_draws():
    p = pixels(10)
    out = random_colour_jitter(p, gen(5), (0.2, 0.2, 0.2))
    torch.testing.assert_close(out, colour_jitter(p, *jitter_draws(10, gen(5), (0.2,) * 3)))
    assert not torch.allclose(out, p)


# -- coarse dropout ---------------------------------------------------------------------------
def test_random_boxes_counts_sizes_and_placement():
    boxes = random_boxes(4000, 40, 30, gen(0), max_boxes=8, max_side=16)
    top, left, height, width = boxes.unbind(-1)
    used = height > 0
    assert torch.equal(used, width > 0)
    count = used.sum(1)
    assert count.min() == 1 and count.max() == 8
    assert torch.bincount(count, minlength=9)[1:].min() > 400  # 1..8 about equally often
    assert torch.equal(used, torch.arange(8) < count[:, None])  # the first `count` rows
    for side in (height[used], width[used]):
        assert side.min() == 1 and side.max() == 16
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + height <= 40).all() and (left + width <= 30).all()
    assert top[used].max() == 39 and left[used].max() == 29  # the whole image is reachable


def test_boxes_never_exceed_a_small_image():
    boxes = random_boxes(500, 10, 12, gen(1), max_boxes=8, max_side=16)
    assert boxes[..., 2].max() == 10 and boxes[..., 3].max() == 12
    assert (boxes[..., 0] + boxes[..., 2] <= 10).all() and (
        boxes[..., 1] + boxes[..., 3] <= 12
    ).all()


def test_coarse_dropout_paints_exactly_its_boxes():
    x, fill = pixels(50, size=24), (-0.5, 0.25, 2.0)
    out = coarse_dropout(x, gen(2), max_holes=8, max_side=16, fill=fill)
    assert out.shape == x.shape and out.dtype == x.dtype
    boxes = random_boxes(50, 24, 24, gen(2), max_boxes=8, max_side=16)
    for i in range(len(x)):
        ref = x[i].clone()
        for top, left, h, w in boxes[i].tolist():
            for c, v in enumerate(fill):
                ref[c, top : top + h, left : left + w] = v
        assert torch.equal(out[i], ref), i  # holes get the fill, every other pixel untouched
    mask = boxes_mask(boxes, 24, 24)
    assert mask.any((1, 2)).all() and (mask.sum((1, 2)) <= 8 * 16 * 16).all()


def test_isic_pipeline_ends_with_black_holes_and_leaves_other_pixels():
    m, s = (torch.tensor(v).view(1, 3, 1, 1) for v in (isic2019.MEAN, isic2019.STD))
    x = (pixels(40, size=48) - m) / s
    out = isic2019._augment(x, gen(0))
    g = gen(0)  # the published order: geometry, flips and light, then dropout
    pairs = zip(isic2019.MEAN, isic2019.STD, strict=True)
    black = torch.tensor([-a / b for a, b in pairs]).view(1, 3, 1, 1)
    before = random_affine_perspective(
        x - black, g, degrees=50, translate=0.06, scale=(0.93, 1.07), p_perspective=0
    )
    before = random_flips_light(before + black, g, mean=isic2019.MEAN, std=isic2019.STD)
    holes = boxes_mask(random_boxes(40, 48, 48, g, 8, 16), 48, 48)[:, None].expand_as(x)
    assert torch.equal(out[~holes], before[~holes])
    torch.testing.assert_close((out * s + m)[holes], torch.zeros(int(holes.sum())))  # pixel 0
    assert holes.any((1, 2, 3)).all()


# -- the composed pipelines -------------------------------------------------------------------
@pytest.mark.parametrize("module", [cifar10, isic2019])
def test_pipeline_is_seeded_and_keeps_shape_and_dtype(module):
    x = normalised(8, 32, module.MEAN, module.STD)
    a = module._augment(x, gen(0))
    assert a.shape == x.shape and a.dtype == x.dtype and a.isfinite().all()
    assert torch.equal(a, module._augment(x, gen(0)))
    assert not torch.equal(a, module._augment(x, gen(1)))
    assert not torch.allclose(a, x)


def test_cifar_pipeline_is_the_authors_steps_in_their_order():
    x = normalised(16)
    m, s = (torch.tensor(v).view(1, 3, 1, 1) for v in (cifar10.MEAN, cifar10.STD))
    g = gen(7)
    p = random_hflip(random_reflect_crop(x * s + m, g, padding=4), g)
    p = random_affine_perspective(p, g, degrees=15, translate=0.1, p_perspective=0, fill=0)
    expected = (random_colour_jitter(p, g, (0.2, 0.2, 0.2)) - m) / s
    torch.testing.assert_close(cifar10._augment(x, gen(7)), expected, rtol=0, atol=1e-5)
