"""Training-time image augmentation on the device, drawn from a caller-supplied generator.

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
Random numbers come only from ``generator``: the same generator state gives the same batch.
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
