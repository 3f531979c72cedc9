"""Is the image mirrored? A toy task of its own target kind, added to the template as new files only.

``MirroredDigits`` mirrors half of each split of the digits (seeded) and labels each image 1 if mirrored;
``MirrorDetector`` learns that with one logit and binary cross-entropy.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torchmetrics.classification import BinaryAccuracy

from litstarter._engine.images.stats import channel_stats
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.metrics import selection_score
from litstarter.tasks.base import ImageTask


class MirroredDigits(ArrayDataModule):
    """scikit-learn's digits, half of them mirrored left to right (seeded), split 70/15/15; the target is ``(N, 1)``:
    1.0 where mirrored.

    Args:
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores.
        seed: Seed for which images are mirrored, the split and the shuffling.
    """

    target_kind = "mirrored"

    def __init__(self, batch_size: int = 64, num_workers: int | None = None, seed: int = 42) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        self.class_names, self.channels, self.image_size = ["mirrored"], 1, (8, 8)

    def setup(self, stage: str | None = None) -> None:
        """Mirror half the digits and split them (about a second)."""
        if self.train_set is not None:
            return
        from sklearn.datasets import load_digits

        images = np.round(load_digits().images * (255.0 / 16.0)).astype(np.uint8)[:, None]  # (N, 1, 8, 8)
        rng = np.random.default_rng(self.seed)
        flip = rng.random(len(images)) < 0.5
        images = np.ascontiguousarray(np.where(flip[:, None, None, None], images[..., ::-1], images))
        targets = flip.astype(np.float32)[:, None]  # (N, 1)
        order = rng.permutation(len(images))
        train, val, test = np.split(order, [int(0.7 * len(order)), int(0.85 * len(order))])
        self.train_set = ArrayImageDataset(images[train], targets[train], self.image_size)
        self.val_set = ArrayImageDataset(images[val], targets[val], self.image_size)
        self.test_set = ArrayImageDataset(images[test], targets[test], self.image_size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's own statistics."""
        self.setup()
        return channel_stats(self.train_set.images)


class MirrorDetector(ImageTask):
    """One logit: is the image mirrored? Binary cross-entropy; accuracy at 0.5, ``val/select`` on it.

    Takes :class:`~litstarter.tasks.base.ImageTask`'s arguments (``--help`` lists them).

    Args:
        kwargs: The shared arguments of :class:`~litstarter.tasks.base.ImageTask`.
    """

    task_name = "mirrored"
    target_kind = "mirrored"
    task_config = "configs/task/mirrored.yaml"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.criterion = nn.BCEWithLogitsLoss()
        self.val_acc, self.test_acc = BinaryAccuracy(), BinaryAccuracy()

    def _step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, targets = batch  # (B, 1, 8, 8) uint8, (B, 1) float32
        logits = self(images).float()  # (B, 1)
        return self.criterion(logits, targets), logits.sigmoid(), targets.int()

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        """The loss on one batch."""
        loss, _, _ = self._step(batch)
        self.log_train_loss(loss)
        return loss

    def validation_step(self, batch, batch_idx: int) -> None:
        """Accumulate the val loss and accuracy."""
        loss, probabilities, targets = self._step(batch)
        self.val_loss.update(loss.detach(), weight=len(targets))
        self.val_acc.update(probabilities, targets)

    def on_validation_epoch_end(self) -> None:
        """Log ``val/loss``, ``val/acc`` and ``val/select``."""
        loss, acc = self.val_loss.compute(), self.val_acc.compute()
        self.val_loss.reset()
        self.val_acc.reset()
        self.log_dict({"val/loss": loss, "val/acc": acc, "val/select": selection_score(acc, loss)}, prog_bar=True)

    def test_step(self, batch, batch_idx: int) -> None:
        """Accumulate the test accuracy."""
        loss, probabilities, targets = self._step(batch)
        self.test_acc.update(probabilities, targets)
        self.log("test/loss", loss, on_step=False, on_epoch=True)

    def on_test_epoch_end(self) -> None:
        """Log ``test/acc``."""
        self.log("test/acc", self.test_acc.compute())
        self.test_acc.reset()

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """The probability that each image is mirrored, ``(B, 1)``."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images).sigmoid()
