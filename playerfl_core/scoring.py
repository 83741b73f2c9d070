"""Classification scores from one confusion matrix, computed with torch on the model's device.

Why: scoring every client, split and round with scikit-learn costs several host round trips per
split and, on small data, more time than the training itself (issue 10). One ``bincount`` gives
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


def confusion_matrix(y: torch.Tensor, pred: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``cm[i, j]`` = number of samples of true class i predicted as j (int64, on y's device)."""
    if y.shape != pred.shape or y.ndim != 1:
        raise ValueError(
            f"labels and predictions must be 1-D and of equal length; got shapes "
            f"{tuple(y.shape)} and {tuple(pred.shape)}."
        )
    flat = y.long() * num_classes + pred.long()
    return torch.bincount(flat, minlength=num_classes * num_classes).reshape(
        num_classes, num_classes
    )


def accuracy_and_class_f1(cm: torch.Tensor) -> torch.Tensor:
    """``[accuracy, f1_0, …, f1_{C-1}]`` (float64, on cm's device) from a confusion matrix.

    A class absent from both labels and predictions gets NaN: it does not enter the macro mean.
    """
    cm = cm.to(torch.float64)
    tp = cm.diagonal()
    denom = cm.sum(1) + cm.sum(0)  # n_true + n_pred
    # denom = 0 only for a class absent from labels and predictions, which scikit-learn does not
    # average (its zero_division never applies to macro-F1 over the classes it infers).
    f1 = torch.where(denom > 0, 2 * tp / denom.clamp(min=1), torch.full_like(tp, float("nan")))
    accuracy = tp.sum() / cm.sum().clamp(min=1)
    return torch.cat([accuracy.reshape(1), f1])


def score_logits(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``[loss, accuracy, f1 per class]`` (float64, on the logits' device) for one split.

    The loss is the mean cross-entropy in the logits' precision (as ``F.cross_entropy``).
    Nothing is copied to the host: stack the vectors of many splits and call :func:`summarise`.
    """
    if len(y) == 0:
        raise ValueError("cannot score an empty split (no labels).")
    loss = F.cross_entropy(logits, y).to(torch.float64)
    cm = confusion_matrix(y, logits.argmax(1), logits.shape[1])
    return torch.cat([loss.reshape(1), accuracy_and_class_f1(cm)])


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
