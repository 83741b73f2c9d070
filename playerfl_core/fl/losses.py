"""Task losses a run can train with (``RunConfig.loss``): why a second loss exists at all.

The authors trained Heart (and ISIC, mimic) with their own "multiclass focal loss" (reference
§4.1), not with cross-entropy. :func:`authors_focal_loss` is that loss exactly as implemented,
including its unusual parts, so its effect can be measured rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

LOSSES = ("cross_entropy", "focal")
"""Valid values of ``RunConfig.loss``."""


def authors_focal_loss(
    logits: torch.Tensor, y: torch.Tensor, gamma: float, alpha: Sequence[float]
) -> torch.Tensor:
    """The authors' focal loss (appendix §4.1), as implemented, not the textbook one.

    With p = softmax(logits) and CE_i = −log p_{i,y_i}, every sample i and class c get a weight
    w_ic = α_c·(1 − p_ic)^γ for the true class c = y_i and w_ic = (1 − α_c)·p_ic^γ for every
    other class; the loss is 10 × the mean of w_ic·CE_i over all B·C entries. So non-target
    classes also scale the true-class CE, the mean runs over B·C, and there is a factor 10.
    Gradients flow through the weights too (they are not detached).
    """
    alpha_t = torch.as_tensor(alpha, dtype=logits.dtype, device=logits.device)
    if alpha_t.shape != (logits.shape[1],):
        raise ValueError(
            f"focal loss: need one alpha per class ({logits.shape[1]}), got {len(alpha_t)}."
        )
    log_p = F.log_softmax(logits, dim=1)
    p = log_p.exp()
    ce = -log_p.gather(1, y.unsqueeze(1))  # [B, 1]
    target = F.one_hot(y, logits.shape[1]).to(torch.bool)
    weights = torch.where(target, alpha_t * (1 - p) ** gamma, (1 - alpha_t) * p**gamma)
    return 10 * (weights * ce).mean()
