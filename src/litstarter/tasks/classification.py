"""Single-label classification: one class per image (the default task: ``configs/default.yaml`` names it).

* Loss: cross-entropy on the ``(B, K)`` logits (:meth:`ImageClassifier.loss`), with ``label_smoothing`` and
  ``class_weights``; MixUp and CutMix (``mixup_alpha``, ``cutmix_alpha``) train it on soft targets.
* Metrics (torchmetrics, :func:`litstarter.metrics.classification_metrics`): ``acc`` and ``f1_macro``; validation
  and test add macro precision, recall and AUROC, recall per class and the confusion matrix, test the calibration
  error ``ece``. ``val/select`` is ``f1_macro`` with ties broken by the lower loss.
* Predictions: a softmax over the classes, averaged over ``tta``'s views when asked.
* After the test after fit, a logistic regression on the raw pixels scores the same split (``test/baseline_acc``).

``litstarter new --task classification`` copies this file into a project as its ``task.py``; from then on the copy is
the project's to edit (its loss, its steps, its metrics), and it imports public names of ``litstarter`` only
(``docs/api.md``), which change only with the library's major version.
"""

from __future__ import annotations

import torch

from litstarter.baseline import add_baseline_to_metrics
from litstarter.batch_mix import BatchMix
from litstarter.errors import UsageError
from litstarter.losses import ClassWeights, cross_entropy, inverse_frequency_weights
from litstarter.metrics import classification_metrics, scalar_metrics, selection_score, split_confusion_matrix
from litstarter.tasks import ImageTask
from litstarter.tta import TTAView, check_tta, tta_logits


class ImageClassifier(ImageTask):
    """Image classification with cross-entropy on logits (the default task: ``configs/default.yaml`` names it).

    Takes :class:`~litstarter.tasks.ImageTask`'s arguments too (``--help`` lists them).

    Args:
        label_smoothing: Cross-entropy label smoothing in [0, 1).
        class_weights: Cross-entropy weight per class: ``auto`` (inverse class frequency of the train split, saved
            in checkpoints), ``num_classes`` weights, or ``null``. A loss-side alternative to ``data.sampler``.
        mixup_alpha: MixUp's Beta(alpha, alpha) on training batches (soft targets; train metrics on the dominant label).
        cutmix_alpha: CutMix's; with both set, one of the two per batch (``litstarter.batch_mix``).
        mix_off_after_epoch: Train on unmixed batches from this epoch on; ``null``: mix to the end.
        tta: Test-time views whose probabilities ``test`` and ``predict`` average: ``hflip``, ``crops`` (five shifted
            crops). Off by default: a flip changes the class of text, digits, arrows.
        kwargs: The shared arguments of :class:`~litstarter.tasks.ImageTask`.
    """

    task_name = "single_label"
    target_kind = "class"
    task_config = "configs/default.yaml"  # it names this task
    #: After the test after fit, a logistic regression on the raw pixels scores the same splits (metrics.json).
    baseline = staticmethod(add_baseline_to_metrics)

    def __init__(
        self,
        label_smoothing: float = 0.0,
        class_weights: ClassWeights = None,
        mixup_alpha: float = 0.0,
        cutmix_alpha: float = 0.0,
        mix_off_after_epoch: int | None = None,
        tta: list[TTAView] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        num_classes = self.hparams.num_classes
        if num_classes < 2:
            raise UsageError(f"model.num_classes must be >= 2, got {num_classes}")
        self.criterion = cross_entropy(num_classes, class_weights, label_smoothing)  # takes soft targets too
        mixing = mixup_alpha or cutmix_alpha
        self.batch_mix = BatchMix(num_classes, mixup_alpha, cutmix_alpha, mix_off_after_epoch) if mixing else None
        self.tta = check_tta(tta)
        # One metric object per stage: sharing one would mix train and val state.
        self.train_metrics = classification_metrics(num_classes, "train")
        self.val_metrics = classification_metrics(num_classes, "val")
        self.test_metrics = classification_metrics(num_classes, "test")
        self.confusion_matrices: dict[str, torch.Tensor] = {}  # the last (K, K) per stage, for PlotConfusionMatrix

    @classmethod
    def unsaved_arguments(cls) -> tuple[str, ...]:
        """``tta`` is an evaluation choice: ``test --ckpt_path`` takes it from the config."""
        return ("tta",)

    def setup(self, stage: str) -> None:
        """The shared setup, then ``auto`` class weights from the train split."""
        super().setup(stage)
        datamodule = self.trainer.datamodule
        if stage == "fit" and datamodule is not None and self.hparams.get("class_weights") == "auto":
            self.criterion.weight.copy_(inverse_frequency_weights(datamodule, self.class_names))

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of ``(B, K)`` logits against ``(B,)`` class indices or ``(B, K)`` soft targets (mixed)."""
        return self.criterion(logits, targets)

    def _shared_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = batch  # (B, C, H, W) uint8, (B,) int64
        logits = self(images)  # (B, K)
        return self.loss(logits, labels), logits

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Loss on one batch (mixed if asked: ``(B, K)`` soft targets); accuracy accumulates over the epoch."""
        images, targets = batch
        if self.batch_mix is not None:
            images, targets = self.batch_mix(images, targets, self.current_epoch, self.global_step, self.global_rank)
        loss, logits = self._shared_step((images, targets))
        labels = targets if targets.ndim == 1 else targets.argmax(dim=-1)  # mixed: the dominant label
        self.train_metrics.update(logits.detach().argmax(dim=-1), labels)
        self.log_train_loss(loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate val loss and metrics; logged once per epoch (reduced across processes once, at its end)."""
        loss, logits = self._shared_step(batch)
        self.val_metrics.update(logits.float().softmax(dim=-1), batch[1])  # float: bf16 blurs AUROC/ECE
        self.val_loss.update(loss.detach(), weight=len(batch[1]))  # a mean over images, as self.log's would be

    def on_validation_epoch_end(self) -> None:
        """Log and reset the epoch's val metrics (torchmetrics syncs them across processes), and ``val/select``."""
        loss = self.val_loss.compute()
        self.val_loss.reset()
        self.log("val/loss", loss, prog_bar=True)
        scalars = self._log_epoch_metrics(self.val_metrics, "val", progress_bar=("val/acc", "val/f1_macro"))
        self.log("val/select", selection_score(scalars["val/f1_macro"], loss))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate test loss and metrics (on the probabilities averaged over ``tta``'s views, if any)."""
        logits = tta_logits(self, batch[0], self.tta) if self.tta else self(batch[0])  # TTA: log mean probability
        loss = self.loss(logits, batch[1])
        self.test_metrics.update(logits.float().softmax(dim=-1), batch[1])
        self.log("test/loss", loss, on_step=False, on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log and reset the test metrics."""
        self._log_epoch_metrics(self.test_metrics, "test")

    def _log_epoch_metrics(self, metrics, stage: str, progress_bar: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
        """Compute (synchronised across processes), keep the confusion matrix, log the scalars, reset."""
        values, matrix = split_confusion_matrix(metrics.compute())
        metrics.reset()
        if matrix is not None:
            self.confusion_matrices[stage] = matrix.cpu()
        scalars = scalar_metrics(values, self.class_names)
        self.log_dict({k: v for k, v in scalars.items() if k in progress_bar}, prog_bar=True)
        self.log_dict({k: v for k, v in scalars.items() if k not in progress_bar})
        return scalars

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Class probabilities ``(B, K)`` (averaged over ``tta``'s views, if any)."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return (tta_logits(self, images, self.tta) if self.tta else self(images)).softmax(dim=-1)
