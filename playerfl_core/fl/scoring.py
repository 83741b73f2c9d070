"""Classification scores from one confusion matrix, computed with torch on the model's device.

Why: scoring every client, split and round with scikit-learn costs several host round trips per
split and, on small data, more time than the training itself. One ``bincount`` gives
the confusion matrix; the loss, accuracy and per-class F1 follow from it on the device, and a
caller gathers the vectors of many splits and copies them to the host *once*
(:func:`score_logits`, then :func:`summarise`).

Macro-F1 follows scikit-learn's ``f1_score(average="macro", zero_division=0)`` exactly: per class
F1 = 2·tp / (n_true + n_pred) in float64, averaged over the classes present in the labels *or*
the predictions (so a client whose split holds one class still gets a score). Every step but the
final mean is elementwise or an integer count, hence bit-identical to scikit-learn's; the mean
over the present classes is taken on the host with numpy, because its summation order (pairwise)
is what makes the last bit agree.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

METRICS = ("loss", "accuracy", "macro_f1")
"""The metrics :func:`summarise` returns, in this order."""


def flat_confusion_index(y: torch.Tensor, pred: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``y·C + pred``: the cell of each sample in a row-major C×C confusion matrix."""
    if y.shape != pred.shape or y.ndim != 1:
        raise ValueError(
            f"labels and predictions must be 1-D and of equal length; got shapes "
            f"{tuple(y.shape)} and {tuple(pred.shape)}."
        )
    return y.long() * num_classes + pred.long()


def confusion_matrix(y: torch.Tensor, pred: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``cm[i, j]`` = number of samples of true class i predicted as j (int64, on y's device)."""
    flat = flat_confusion_index(y, pred, num_classes)
    return torch.bincount(flat, minlength=num_classes * num_classes).reshape(
        num_classes, num_classes
    )


def accuracy_and_class_f1(cm: torch.Tensor) -> torch.Tensor:
    """``[..., accuracy, f1_0, …, f1_{C-1}]`` (float64, on cm's device) from confusion matrices.

    ``cm`` has shape ``[..., C, C]`` (any leading batch dimensions). A class absent from both
    labels and predictions gets NaN: it does not enter the macro mean.
    """
    cm = cm.to(torch.float64)
    tp = cm.diagonal(dim1=-2, dim2=-1)
    denom = cm.sum(-1) + cm.sum(-2)  # n_true + n_pred
    # denom = 0 only for a class absent from labels and predictions, which scikit-learn does not
    # average (its zero_division never applies to macro-F1 over the classes it infers).
    f1 = torch.where(denom > 0, 2 * tp / denom.clamp(min=1), torch.full_like(tp, float("nan")))
    accuracy = tp.sum(-1) / cm.sum((-2, -1)).clamp(min=1)
    return torch.cat([accuracy.unsqueeze(-1), f1], dim=-1)


def score_logits(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``[loss, accuracy, f1 per class]`` (float64, on the logits' device) for one split."""
    return score_many([logits], [y])[0]


def score_many(logits: list[torch.Tensor], labels: list[torch.Tensor]) -> torch.Tensor:
    """One row ``[loss, accuracy, f1 per class]`` per split (float64, on the device).

    All splits share one ``bincount`` (split k's counts sit at offset k·C²), so scoring a whole
    round costs a handful of kernels. The loss is each split's mean cross-entropy in the
    logits' precision (exactly ``F.cross_entropy``). Nothing is copied to the host: call
    :func:`summarise` on the host copy of each row.
    """
    if not logits or len(logits) != len(labels):
        raise ValueError(
            f"need one label tensor per logits tensor; got {len(logits)} logits "
            f"and {len(labels)} label tensors."
        )
    c = logits[0].shape[1]
    if any(len(y) == 0 for y in labels):
        raise ValueError("cannot score an empty split (no labels).")
    loss = torch.stack([F.cross_entropy(z, y) for z, y in zip(logits, labels, strict=True)])
    flat = torch.cat(
        [
            k * c * c + flat_confusion_index(y, z.argmax(1), c)
            for k, (z, y) in enumerate(zip(logits, labels, strict=True))
        ]
    )
    cm = torch.bincount(flat, minlength=len(logits) * c * c).reshape(len(logits), c, c)
    return torch.cat([loss.to(torch.float64).unsqueeze(1), accuracy_and_class_f1(cm)], dim=1)


def summarise(vector) -> dict[str, float]:
    """``{"loss", "accuracy", "macro_f1"}`` from one host copy of a :func:`score_logits` row."""
    row = np.asarray(vector, dtype=np.float64)
    f1 = row[2:]
    present = f1[~np.isnan(f1)]
    return {
        "loss": float(row[0]),
        "accuracy": float(row[1]),
        "macro_f1": float(np.nanmean(present)),
    }


def accuracy_and_macro_f1(y: torch.Tensor, pred: torch.Tensor, num_classes: int):
    """``(accuracy, macro_f1)`` of predictions (convenience for tests and one-off checks)."""
    row = accuracy_and_class_f1(confusion_matrix(y, pred, num_classes)).cpu().numpy()
    out = summarise(np.concatenate([[np.nan], row]))
    return out["accuracy"], out["macro_f1"]
