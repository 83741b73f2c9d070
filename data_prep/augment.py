"""Training-time image augmentation on the device, drawn from a caller-supplied generator.

Every function here transforms a whole batch ``[B, C, H, W]`` at once with a few kernels on the
batch's device (no per-image CPU work, no Python loop over images), drawing its random numbers
only from ``generator``: the same generator state gives the same batch. The datasets compose
them into the authors' pipelines (Fashion-MNIST, CIFAR-10, Fed-ISIC-2019; appendix §2.2–2.5).

The authors augment Fashion-MNIST training images (appendix §2.2) with torchvision's PIL
transforms: a random rotation in [−10°, +10°], a random affine (translation up to 10 % of the
size in x and y, scale in [0.9, 1.1]) and, with probability 0.5, a random perspective warp
(distortion 0.2). :func:`random_affine_perspective` draws the same kinds of transforms for a
whole batch at once and applies them with one ``grid_sample`` on the batch's device, so the
augmentation costs a few kernels per mini-batch instead of per-image CPU work.

Differences from the authors' pipeline, all deliberate and small: one bilinear resampling of
the composed transform instead of three successive resamplings (nearest, nearest, bilinear);
continuous translations and corner shifts instead of whole pixels; transforms act on the
normalised image, so the area uncovered by a shift is filled with the normalised value of a
black pixel (``fill``), which is what the authors' pipeline produces after normalisation.
Reflect crops, flips and coarse dropout are exact; the colour jitter uses torchvision's tensor
formulas on float pixels, without the PIL pipeline's rounding to 8 bits.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

CORNERS = ((-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0))


def homography(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Batched 3×3 matrices H with H·src_k ∝ dst_k for the four point pairs ``[B, 4, 2]``."""
    b = src.shape[0]
    x, y = src[..., 0], src[..., 1]
    u, v = dst[..., 0], dst[..., 1]
    zero, one = torch.zeros_like(x), torch.ones_like(x)
    rows_u = torch.stack([x, y, one, zero, zero, zero, -u * x, -u * y], -1)
    rows_v = torch.stack([zero, zero, zero, x, y, one, -v * x, -v * y], -1)
    a = torch.cat([rows_u, rows_v], 1)  # [B, 8, 8]
    rhs = torch.cat([u, v], 1).unsqueeze(-1)
    h, _ = torch.linalg.solve_ex(a, rhs)  # no validity check: no host synchronisation
    return torch.cat([h.squeeze(-1), torch.ones(b, 1, device=h.device, dtype=h.dtype)], 1).view(
        b, 3, 3
    )


def random_affine_perspective(
    x: torch.Tensor,
    generator: torch.Generator,
    *,
    degrees: float = 10.0,
    translate: float = 0.1,
    scale: tuple[float, float] = (0.9, 1.1),
    distortion: float = 0.2,
    p_perspective: float = 0.5,
    fill: float = 0.0,
) -> torch.Tensor:
    """Randomly rotated, shifted, scaled and (with probability ``p_perspective``) perspective-
    warped copies of the square images ``x`` ``[B, C, H, W]``, drawn from ``generator``.

    ``generator`` must live on ``x``'s device. Coordinates are normalised to [−1, 1], so a
    shift of ``translate`` of the image size is ``2·translate`` and a corner moves inwards by
    up to ``distortion`` of half the size, as torchvision's ``RandomPerspective``.
    """
    b, _, h, w = x.shape
    dev, dt = x.device, x.dtype
    u = torch.rand(b, 13, generator=generator, device=dev, dtype=dt)
    angle = (2 * u[:, 0] - 1) * math.radians(degrees)
    tx, ty = (2 * u[:, 1] - 1) * 2 * translate, (2 * u[:, 2] - 1) * 2 * translate
    s = scale[0] + u[:, 3] * (scale[1] - scale[0])
    cos, sin = torch.cos(angle), torch.sin(angle)
    zero, one = torch.zeros_like(s), torch.ones_like(s)
    # Output → input of the affine step: p_in = Rᵀ(p_out − t) / s.
    affine_inv = torch.stack(
        [
            torch.stack([cos / s, sin / s, -(cos * tx + sin * ty) / s], -1),
            torch.stack([-sin / s, cos / s, (sin * tx - cos * ty) / s], -1),
            torch.stack([zero, zero, one], -1),
        ],
        1,
    )
    corners = torch.tensor(CORNERS, device=dev, dtype=dt).expand(b, 4, 2)
    warp = (u[:, 4] < p_perspective).to(dt)[:, None, None]
    moved = corners - corners.sign() * u[:, 5:13].view(b, 4, 2) * distortion * warp
    # The warped image shows the original corners at ``moved``: output → input maps moved → corners.
    sample = affine_inv @ homography(moved, corners)
    ys = (torch.arange(h, device=dev, dtype=dt) + 0.5) * 2 / h - 1
    xs = (torch.arange(w, device=dev, dtype=dt) + 0.5) * 2 / w - 1
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    points = torch.stack([gx, gy, torch.ones_like(gx)], -1).view(1, h * w, 3)
    src = points @ sample.transpose(1, 2)  # [B, H·W, 3]
    grid = (src[..., :2] / src[..., 2:]).view(b, h, w, 2)
    out = F.grid_sample(x - fill, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return out + fill


def random_flips_light(
    x: torch.Tensor,
    generator: torch.Generator,
    *,
    mean: tuple[float, ...],
    std: tuple[float, ...],
    brightness: float = 0.15,
    contrast: float = 0.1,
) -> torch.Tensor:
    """Per image: a horizontal, vertical or both-axis flip with probability 0.5 (the three
    equally likely, as albumentations' ``Flip``), then pixel' = a·pixel + b with contrast
    a ∈ [1 − contrast, 1 + contrast] and brightness b ∈ [−brightness, brightness] (pixels in
    [0, 1]), applied to normalised images ``x = (pixel − mean)/std``."""
    b = x.shape[0]
    dev, dt = x.device, x.dtype
    u = torch.rand(b, 4, generator=generator, device=dev, dtype=dt)
    flip = u[:, 0] < 0.5
    kind = (u[:, 1] * 3).floor()  # 0: horizontal, 1: vertical, 2: both
    h_flip = (flip & (kind != 1))[:, None, None, None]
    v_flip = (flip & (kind != 0))[:, None, None, None]
    x = torch.where(h_flip, x.flip(-1), x)
    x = torch.where(v_flip, x.flip(-2), x)
    a = (1 + (2 * u[:, 2] - 1) * contrast)[:, None, None, None]
    shift = ((2 * u[:, 3] - 1) * brightness)[:, None, None, None]
    m = torch.tensor(mean, device=dev, dtype=dt).view(1, -1, 1, 1)
    s = torch.tensor(std, device=dev, dtype=dt).view(1, -1, 1, 1)
    return a * x + (a * m - m + shift) / s


def random_reflect_crop(x: torch.Tensor, generator: torch.Generator, padding: int = 4):
    """Crops of the original size from ``x`` reflect-padded by ``padding`` on every side, at a
    per-image integer offset uniform in ``0..2·padding`` per axis: exactly torchvision's
    ``RandomCrop(size, padding, padding_mode="reflect")``, gathered by indexing, no resampling."""
    b, _, h, w = x.shape
    padded = F.pad(x, (padding,) * 4, mode="reflect").permute(0, 2, 3, 1)  # [B, H+2p, W+2p, C]
    offset = torch.randint(0, 2 * padding + 1, (b, 2), generator=generator, device=x.device)
    rows = (offset[:, 0:1] + torch.arange(h, device=x.device))[:, :, None]  # [B, H, 1]
    cols = (offset[:, 1:2] + torch.arange(w, device=x.device))[:, None, :]  # [B, 1, W]
    batch = torch.arange(b, device=x.device)[:, None, None]
    return padded[batch, rows, cols].permute(0, 3, 1, 2).contiguous()


def random_hflip(x: torch.Tensor, generator: torch.Generator, p: float = 0.5) -> torch.Tensor:
    """Each image mirrored left-right with probability ``p`` (torchvision's
    ``RandomHorizontalFlip``)."""
    flip = torch.rand(x.shape[0], generator=generator, device=x.device) < p
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


# -- colour jitter on RGB pixels in [0, 1], with torchvision's tensor formulas ------------------
def grayscale(p: torch.Tensor) -> torch.Tensor:
    """Luma ``[B, 1, H, W]`` with torchvision's weights (0.2989, 0.587, 0.114)."""
    r, g, b = p.unbind(1)
    return r.mul(0.2989).add(g, alpha=0.587).add(b, alpha=0.114).unsqueeze(1)


def _blend(p: torch.Tensor, other: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    f = factor[:, None, None, None]
    return (p * f + other * (1 - f)).clamp(0, 1)


JITTER_OPS = (  # (pixels [B, 3, H, W], per-image factors [B]) -> pixels, as torchvision's
    lambda p, f: (p * f[:, None, None, None]).clamp(0, 1),  # brightness: blend with black
    lambda p, f: _blend(p, grayscale(p).mean((1, 2, 3), keepdim=True), f),  # contrast
    lambda p, f: _blend(p, grayscale(p), f),  # saturation
)


def colour_jitter(p: torch.Tensor, factors: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Brightness, contrast and saturation (``JITTER_OPS``) with per-image ``factors [B, 3]``,
    applied to image i in the order ``order[i]`` (a permutation of 0, 1, 2). All three results
    are computed at each step and one is picked per image, so the batch needs no loop."""
    batch = torch.arange(p.shape[0], device=p.device)
    for step in range(len(JITTER_OPS)):
        outcomes = torch.stack([op(p, factors[:, k]) for k, op in enumerate(JITTER_OPS)])
        p = outcomes[order[:, step], batch]
    return p


def jitter_draws(b: int, generator: torch.Generator, strengths, device=None, dtype=None):
    """Per image: factors uniform in [1 − s, 1 + s] for s in ``strengths`` (brightness, contrast,
    saturation; s ≤ 1) and a uniformly random order of the three, as torchvision's
    ``ColorJitter`` draws per call (once per image in the authors' per-image pipeline)."""
    u = torch.rand(b, 6, generator=generator, device=device, dtype=dtype)
    s = torch.tensor(strengths, device=device, dtype=u.dtype)
    return 1 + (2 * u[:, :3] - 1) * s, u[:, 3:].argsort(1)


def random_colour_jitter(
    p: torch.Tensor, generator: torch.Generator, strengths=(0.2, 0.2, 0.2)
) -> torch.Tensor:
    """``ColorJitter(brightness, contrast, saturation)`` on RGB pixels ``p`` in [0, 1]."""
    factors, order = jitter_draws(p.shape[0], generator, strengths, p.device, p.dtype)
    return colour_jitter(p, factors, order)


# -- coarse dropout ---------------------------------------------------------------------------
def random_boxes(
    b: int, h: int, w: int, generator: torch.Generator, max_boxes=8, max_side=16, device=None
) -> torch.Tensor:
    """``[B, max_boxes, 4]`` int64 rows (top, left, height, width): per image a count uniform in
    1..max_boxes of boxes with sides uniform in 1..max_side (capped by the image), each wholly
    inside the image; the unused rows have height = width = 0."""
    count = torch.randint(1, max_boxes + 1, (b, 1), generator=generator, device=device)
    used = torch.arange(max_boxes, device=device) < count
    sides = [
        torch.randint(1, min(max_side, n) + 1, (b, max_boxes), generator=generator, device=device)
        for n in (h, w)
    ]
    u = torch.rand(b, max_boxes, 2, generator=generator, device=device, dtype=torch.float64)
    room = torch.stack([h - sides[0], w - sides[1]], -1)  # the largest top / left
    corner = torch.minimum((u * (room + 1)).floor().long(), room)
    return torch.cat([corner, torch.stack(sides, -1)], -1) * used[..., None]


def boxes_mask(boxes: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """``[B, H, W]`` bool: the pixels covered by any of the ``boxes`` of each image."""
    top, left, height, width = boxes.unbind(-1)  # each [B, K]
    ys, xs = torch.arange(h, device=boxes.device), torch.arange(w, device=boxes.device)
    in_rows = (ys >= top[..., None]) & (ys < (top + height)[..., None])  # [B, K, H]
    in_cols = (xs >= left[..., None]) & (xs < (left + width)[..., None])  # [B, K, W]
    return (in_rows.transpose(1, 2).float() @ in_cols.float()) > 0


def coarse_dropout(
    x: torch.Tensor, generator: torch.Generator, max_holes: int = 8, max_side: int = 16, fill=0.0
) -> torch.Tensor:
    """``x`` with the ``random_boxes`` of each image set to ``fill`` (a value or one per
    channel), like albumentations' ``CoarseDropout``; every other pixel is left exactly as is."""
    b, _, h, w = x.shape
    boxes = random_boxes(b, h, w, generator, max_holes, max_side, x.device)
    fill = torch.as_tensor(fill, device=x.device, dtype=x.dtype).view(1, -1, 1, 1)
    return torch.where(boxes_mask(boxes, h, w)[:, None], fill, x)
