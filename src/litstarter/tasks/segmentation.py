"""Semantic segmentation: a class per pixel (``configs/task/segmentation.yaml``).

* Network: the backbone's stages and a U-Net decoder (``models/segmenter.py``): ``(B, K, H, W)`` logits. The
  encoder is the backbone a classifier has, so ``model.init_from`` a classification checkpoint starts it.
* Loss: cross-entropy over the pixels (``ignore_index`` skipped, ``class_weights`` per class) plus
  ``dice_weight`` x the soft Dice loss, which weighs each class by its overlap rather than its pixel count.
* Metrics (torchmetrics, ignored pixels aside): ``miou`` (mean IoU over the classes) and ``iou/<class>``,
  ``pixel_acc`` and ``dice`` (macro). ``val/select`` is ``miou`` with ties broken by the lower loss. A few
  validation images are drawn with their predicted and true masks to TensorBoard (``val/masks``).
* The data gives the masks (``target_kind: mask``) and the ignore index (``data.ignore_index``, 255).

``litstarter new --task segmentation`` copies this file into a project as its ``task.py``; from then on the copy is
the project's to edit (its loss, its steps, its metrics), and it imports public names of ``litstarter`` only
(``docs/api.md``), which change only with the library's major version.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import TensorBoardLogger
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score, MulticlassJaccardIndex

from litstarter.errors import UsageError
from litstarter.losses import ClassWeights, check_class_weights, inverse_frequency_weights
from litstarter.metrics import selection_score
from litstarter.plots import mask_overlays
from litstarter.tasks import ImageTask


class SemanticSegmenter(ImageTask):
    """Semantic segmentation: per-pixel cross-entropy plus Dice, scored by mean IoU.

    Takes :class:`~litstarter.tasks.ImageTask`'s arguments too (``--help`` lists them); ``num_classes`` and
    ``class_names`` are the mask's classes (linked from the data), the background among them.

    Args:
        decoder_channels: The U-Net decoder's width per step up from the coarsest stage; ``null``: the encoder's
            own widths of the finer stages.
        dice_weight: The weight of the soft Dice loss added to the cross-entropy (0: cross-entropy alone).
        class_weights: Cross-entropy weight per class: ``auto`` (inverse pixel frequency of the train split, saved
            in checkpoints), ``num_classes`` weights, or ``null``.
        overlays: Validation images drawn with their masks to TensorBoard after each validation (0: none).
        kwargs: The shared arguments of :class:`~litstarter.tasks.ImageTask`.
    """

    task_name = "segmentation"
    target_kind = "mask"
    task_config = "configs/task/segmentation.yaml"

    def __init__(
        self,
        decoder_channels: list[int] | None = None,
        dice_weight: float = 0.5,
        class_weights: ClassWeights = None,
        overlays: int = 4,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        k = self.hparams.num_classes
        if k < 2:
            raise UsageError(f"model.num_classes must be >= 2 (the background and a class), got {k}")
        if dice_weight < 0:
            raise UsageError(f"model.dice_weight must be >= 0, got {dice_weight}")
        if overlays < 0:
            raise UsageError(f"model.overlays must be >= 0, got {overlays}")
        check_class_weights(class_weights, k)
        weight = None if class_weights is None else torch.ones(k)
        if isinstance(class_weights, (list, tuple)):
            weight = torch.tensor(class_weights, dtype=torch.float32)
        self.register_buffer("class_weight", weight)  # None is a buffer too: absent from checkpoints
        self.ignore_index = 255  # the data's (data.ignore_index), read in setup
        self.val_metrics, self.test_metrics = segmentation_metrics(k, "val"), segmentation_metrics(k, "test")
        self.shown: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # the overlays' batch

    def setup(self, stage: str) -> None:
        """The shared setup, the data's ignore index, and ``class_weights: auto`` from the train split's pixels."""
        super().setup(stage)
        datamodule = self.trainer.datamodule
        if datamodule is None:
            return
        self.ignore_index = int(getattr(datamodule, "ignore_index", 255))
        for metric in [*self.val_metrics.values(), *self.test_metrics.values()]:
            metric.ignore_index = self.ignore_index
        if stage == "fit" and self.hparams.get("class_weights") == "auto" and self.trainer.ckpt_path is None:
            self.class_weight.copy_(inverse_frequency_weights(datamodule, self.class_names))

    def answers_state(self) -> dict:
        """The ignore index, which ``model.json`` records (and export's mIoU skips)."""
        return {"ignore_index": self.ignore_index}

    def loss(self, logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Cross-entropy over the pixels plus ``dice_weight`` x soft Dice, ignored pixels aside."""
        ce = F.cross_entropy(logits, masks, weight=self.class_weight, ignore_index=self.ignore_index)
        weight = self.hparams.get("dice_weight", 0.0)
        return ce + weight * soft_dice_loss(logits, masks, self.ignore_index) if weight else ce

    def _step(self, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, masks = batch  # (B, C, H, W) uint8, (B, H, W) uint8
        logits = self(images).float()  # (B, K, H, W)
        masks = masks.long()
        return self.loss(logits, masks), logits, masks

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        """The loss on one batch."""
        loss, _, _ = self._step(batch)
        self.log_train_loss(loss)
        return loss

    def validation_step(self, batch, batch_idx: int) -> None:
        """Accumulate the val loss and metrics; keep the first batch for the overlays."""
        loss, logits, masks = self._step(batch)
        predicted = logits.argmax(dim=1)
        self.val_metrics.update(predicted, masks)
        self.val_loss.update(loss.detach(), weight=len(masks))
        if batch_idx == 0 and self.hparams.get("overlays", 0):
            n = self.hparams.overlays
            self.shown = (batch[0][:n].detach().cpu(), predicted[:n].cpu(), masks[:n].cpu())

    def on_validation_epoch_end(self) -> None:
        """Log the val metrics and ``val/select`` (mean IoU, ties broken by the lower loss); draw the overlays."""
        loss = self.val_loss.compute()
        self.val_loss.reset()
        scalars = self._epoch_metrics(self.val_metrics, "val")
        miou = scalars.pop("val/miou")
        self.log("val/loss", loss, prog_bar=True)
        self.log("val/miou", miou, prog_bar=True)
        self.log_dict(scalars)
        self.log("val/select", selection_score(miou, loss))
        self._draw_overlays()

    def test_step(self, batch, batch_idx: int) -> None:
        """Accumulate the test loss and metrics."""
        loss, logits, masks = self._step(batch)
        self.test_metrics.update(logits.argmax(dim=1), masks)
        self.log("test/loss", loss, on_step=False, on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log the test metrics."""
        self.log_dict(self._epoch_metrics(self.test_metrics, "test"))

    def _epoch_metrics(self, metrics: MetricCollection, stage: str) -> dict[str, torch.Tensor]:
        """``miou``, ``iou/<class>``, ``pixel_acc`` and ``dice`` of the stage, then reset (synchronised across
        processes by torchmetrics). A class absent from both masks and predictions has no IoU: left out."""
        values = metrics.compute()
        metrics.reset()
        iou = values.pop(f"{stage}/iou")  # (K,)
        scored = ~torch.isnan(iou)
        out = {f"{stage}/miou": iou[scored].mean() if scored.any() else torch.tensor(0.0, device=iou.device)}
        out |= {f"{stage}/iou/{str(n).replace('/', '_')}": iou[i] for i, n in enumerate(self.class_names) if scored[i]}
        return out | values

    def _draw_overlays(self) -> None:
        """The kept validation images with their predicted and true masks, to each TensorBoard logger."""
        if self.shown is None or self.trainer.sanity_checking or not self.trainer.is_global_zero:
            return
        grid = mask_overlays(*self.shown, len(self.class_names))
        for logger in self.loggers:
            if isinstance(logger, TensorBoardLogger):
                logger.experiment.add_image("val/masks", grid, self.global_step)
        self.shown = None

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """The class of every pixel, ``(B, H, W)``."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images).argmax(dim=1)


def segmentation_metrics(num_classes: int, stage: str) -> MetricCollection:
    """Per-class IoU (``iou``: the mean is taken over the scored classes), pixel accuracy and macro Dice for one
    stage, updated with ``(B, H, W)`` predicted classes; keys ``<stage>/<name>``."""
    metrics = {
        "iou": MulticlassJaccardIndex(num_classes, average="none", ignore_index=255, zero_division=float("nan")),
        "pixel_acc": MulticlassAccuracy(num_classes, average="micro", ignore_index=255),
        "dice": MulticlassF1Score(num_classes, average="macro", ignore_index=255),
    }
    return MetricCollection(metrics, prefix=f"{stage}/")


def soft_dice_loss(logits: torch.Tensor, masks: torch.Tensor, ignore_index: int, eps: float = 1.0) -> torch.Tensor:
    """``1 - mean over the classes of 2|P∩T| / (|P| + |T|)``, on the softmax over ``(B, K, H, W)`` logits against
    the ``(B, H, W)`` class indices, the ignored pixels taken out of both."""
    k = logits.shape[1]
    valid = (masks != ignore_index).unsqueeze(1)  # (B, 1, H, W)
    probabilities = logits.softmax(dim=1) * valid
    truth = F.one_hot(torch.where(valid[:, 0], masks, 0), k).permute(0, 3, 1, 2) * valid  # (B, K, H, W)
    overlap = (probabilities * truth).sum(dim=(0, 2, 3))
    sizes = probabilities.sum(dim=(0, 2, 3)) + truth.sum(dim=(0, 2, 3))
    return 1 - ((2 * overlap + eps) / (sizes + eps)).mean()
