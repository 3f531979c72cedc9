"""An example task of your own, outside the package: the library's classifier with a focal loss, named in a config
by its class path, as a project's own ``task.py`` would be.

    python -m litstarter fit --config configs/default.yaml --model tests.examples.my_task.FocalClassifier

It imports public names only (``docs/api.md``) and keeps the classifier's ``task_name`` (``single_label``), so
export, infer, serve and cv read its outputs with the library's single-label answers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from litstarter.errors import UsageError
from litstarter.tasks import ImageClassifier


class FocalClassifier(ImageClassifier):
    """Image classification with a focal loss: cross-entropy scaled down on the images the network already gets right.

    Args:
        gamma: The focusing parameter: 0 is plain cross-entropy; higher weighs hard images more. Replaces
            ``label_smoothing`` and ``class_weights``, which this loss does not read.
        kwargs: :class:`~litstarter.tasks.ImageClassifier`'s arguments.
    """

    def __init__(self, gamma: float = 2.0, **kwargs) -> None:
        super().__init__(**kwargs)
        if gamma < 0:
            raise UsageError(f"model.gamma must be >= 0, got {gamma}")
        self.gamma = gamma

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean over the batch of ``(1 - p_true) ** gamma`` x cross-entropy; ``targets``: ``(B,)`` class indices or
        ``(B, K)`` soft targets (MixUp, CutMix)."""
        k = logits.shape[-1]
        soft = targets.float() if targets.ndim == 2 else F.one_hot(targets, k).float()  # (B, K)
        log_p = logits.float().log_softmax(dim=-1)  # (B, K)
        cross_entropy = -(soft * log_p).sum(dim=-1)  # (B,)
        p_true = (soft * log_p.exp()).sum(dim=-1)  # (B,)
        return ((1 - p_true) ** self.gamma * cross_entropy).mean()
