"""The task's loss: cross-entropy on logits, optionally weighted per class and label-smoothed."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from litstarter.errors import UsageError

__all__ = ["ClassWeights", "check_class_weights", "cross_entropy", "inverse_frequency_weights"]

ClassWeights = Literal["auto"] | list[float] | None


def check_class_weights(class_weights: ClassWeights, num_classes: int) -> None:
    """Refuse anything but ``auto``, ``num_classes`` positive numbers or ``None``, naming ``model.class_weights``."""
    if isinstance(class_weights, str) and class_weights != "auto":
        raise UsageError(f"model.class_weights must be 'auto', a list of weights or null, got {class_weights!r}")
    if isinstance(class_weights, (list, tuple)) and (len(class_weights) != num_classes or min(class_weights) <= 0):
        raise UsageError(
            f"model.class_weights must be {num_classes} positive numbers (one per class), got {class_weights}"
        )


def cross_entropy(num_classes: int, class_weights: ClassWeights, label_smoothing: float) -> nn.CrossEntropyLoss:
    """The loss module; its class weight is a buffer, so checkpoints carry it (``auto`` starts at ones and is
    filled by :func:`inverse_frequency_weights` when fitting starts).

    Args:
        num_classes: Number of classes.
        class_weights: ``auto``, a weight per class, or ``None`` (unweighted).
        label_smoothing: In ``[0, 1)``.
    """
    if not 0 <= label_smoothing < 1:
        raise UsageError(f"model.label_smoothing must be in [0, 1), got {label_smoothing}")
    check_class_weights(class_weights, num_classes)
    weight = None
    if class_weights is not None:
        weight = torch.ones(num_classes) if class_weights == "auto" else torch.tensor(class_weights).float()
    return nn.CrossEntropyLoss(weight=weight, label_smoothing=label_smoothing)


def inverse_frequency_weights(counts, class_names: list[str]) -> torch.Tensor:
    """``total / (K * count)`` per class: 1 for every class when balanced, larger for rarer classes.

    Args:
        counts: Training samples per class, or a data module whose ``class_counts()`` gives them.
        class_names: The classes, in label order.
    """
    if hasattr(counts, "class_counts"):
        counts = counts.class_counts()
    elif counts is None or not hasattr(counts, "__len__"):
        raise UsageError("model.class_weights=auto needs a data module with class_counts()")
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if len(counts) != len(class_names) or (counts == 0).any():
        missing = [name for name, n in zip(class_names, counts.tolist(), strict=False) if n == 0]
        raise UsageError(f"model.class_weights=auto: no training samples for classes {missing} ({counts.tolist()})")
    return (counts.sum() / (len(counts) * counts)).float()
