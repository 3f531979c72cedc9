"""The task: a LightningModule that owns the loss, the metrics and the optimiser, and no layer code."""

from __future__ import annotations

import functools
import inspect
from typing import Literal

import lightning as L
import torch
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable
from torch import nn
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from litstarter.models import Classifier, create_backbone


def _default_optimizer(params) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.05)


def _default_scheduler(optimizer: torch.optim.Optimizer, total_steps: int | None = None):
    from litstarter.schedulers import WarmupCosineLR

    return WarmupCosineLR(optimizer, warmup_steps=0.05, total_steps=total_steps)


class ImageClassifier(L.LightningModule):
    """Image classification with cross-entropy on logits.

    Args:
        backbone: Registered backbone name (see ``litstarter.models.list_backbones()``).
        num_classes: Number of classes; the CLI links it from ``data.num_classes``.
        in_channels: Image channels; the CLI links it from ``data.channels``.
        image_size: Input ``[height, width]``; linked from ``data.image_size`` and recorded for export.
        class_names: Class names in label order; linked from ``data.class_names`` so predictions can print them.
        cache_size: ``[height, width]`` the data module stores images at before the eval view centre-crops
            ``image_size`` (linked from the data module; recorded so inference on files resizes exactly as
            training did). ``null`` means ``image_size``.
        backbone_kwargs: Extra arguments for the backbone factory (e.g. ``widths`` for ``small_cnn``).
        dropout: Dropout before the linear head.
        optimizer: Optimiser factory; AdamW by default.
        lr_scheduler: Scheduler factory, stepped every optimiser step; linear warmup then cosine by default.
            A ``total_steps`` argument left unset is filled from ``trainer.estimated_stepping_batches``.
        label_smoothing: Cross-entropy label smoothing in [0, 1).
        class_weights: Cross-entropy weight per class: ``auto`` (inverse class frequency of the data module's
            train split, computed when fitting starts and saved in checkpoints), a list of ``num_classes``
            weights, or ``null`` (unweighted). A loss-side alternative to ``data.sampler``.
    """

    def __init__(
        self,
        backbone: str = "small_cnn",
        num_classes: int = 10,
        in_channels: int = 3,
        image_size: tuple[int, int] = (224, 224),
        class_names: list[str] | None = None,
        cache_size: tuple[int, int] | None = None,
        backbone_kwargs: dict | None = None,
        dropout: float = 0.0,
        optimizer: OptimizerCallable = _default_optimizer,
        lr_scheduler: LRSchedulerCallable = _default_scheduler,
        label_smoothing: float = 0.0,
        class_weights: Literal["auto"] | list[float] | None = None,
    ) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"model.num_classes must be >= 2, got {num_classes}")
        if class_names is not None and len(class_names) != num_classes:
            raise ValueError(f"model.class_names has {len(class_names)} names but num_classes is {num_classes}")
        if not 0 <= label_smoothing < 1:
            raise ValueError(f"model.label_smoothing must be in [0, 1), got {label_smoothing}")
        if isinstance(class_weights, str) and class_weights != "auto":
            raise ValueError(f"model.class_weights must be 'auto', a list of weights or null, got {class_weights!r}")
        if isinstance(class_weights, (list, tuple)) and (len(class_weights) != num_classes or min(class_weights) <= 0):
            raise ValueError(
                f"model.class_weights must be {num_classes} positive numbers (one per class), got {class_weights}"
            )
        self.save_hyperparameters()
        self.class_names = list(class_names) if class_names else [str(i) for i in range(num_classes)]
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.net = Classifier(
            create_backbone(backbone, in_channels=in_channels, **(backbone_kwargs or {})),
            num_classes=num_classes,
            mean=[0.5] * in_channels,  # placeholders until setup() copies the data's statistics
            std=[0.25] * in_channels,
            dropout=dropout,
        )
        # The weight is a buffer of the loss module, so checkpoints carry it (also the `auto` one from setup).
        weight = None
        if class_weights is not None:
            weight = torch.ones(num_classes) if class_weights == "auto" else torch.tensor(class_weights).float()
        self.criterion = nn.CrossEntropyLoss(weight=weight, label_smoothing=label_smoothing)
        metrics = MetricCollection(
            {
                "acc": MulticlassAccuracy(num_classes, average="micro"),
                "f1_macro": MulticlassF1Score(num_classes, average="macro"),
            }
        )
        # One metric object per stage: sharing one would mix train and val state.
        self.train_metrics = metrics.clone(prefix="train/")
        self.val_metrics = metrics.clone(prefix="val/")
        self.test_metrics = metrics.clone(prefix="test/")

    def setup(self, stage: str) -> None:
        """Before fitting, take the normalisation statistics from the data module (its train split)."""
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if stage == "fit" and datamodule is not None and hasattr(datamodule, "normalization"):
            # Overwritten again by a checkpoint's buffers when resuming; that is the right order.
            self.net.set_normalization(*datamodule.normalization())
        if stage == "fit" and self.hparams.get("class_weights") == "auto":
            if datamodule is None or not hasattr(datamodule, "class_counts"):
                raise ValueError("model.class_weights=auto needs a data module with class_counts()")
            self.criterion.weight.copy_(inverse_frequency_weights(datamodule.class_counts(), self.class_names))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` in 0..255 -> logits ``(B, num_classes)``."""
        return self.net(x)

    def _shared_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = batch  # (B, C, H, W) uint8, (B,) int64
        logits = self(images)  # (B, K)
        return self.criterion(logits, labels), logits

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Loss on one batch; accuracy accumulates over the epoch."""
        loss, logits = self._shared_step(batch)
        self.train_metrics.update(logits.detach(), batch[1])
        self.log("train/loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def on_train_epoch_end(self) -> None:
        """Log and reset the epoch's train metrics."""
        self.log_dict(self.train_metrics.compute())
        self.train_metrics.reset()

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate val loss and metrics; logged once per epoch."""
        loss, logits = self._shared_step(batch)
        self.val_metrics.update(logits, batch[1])
        self.log("val/loss", loss, on_epoch=True, prog_bar=True, sync_dist=True)

    def on_validation_epoch_end(self) -> None:
        """Log and reset the epoch's val metrics (torchmetrics syncs them across processes)."""
        self.log_dict(self.val_metrics.compute(), prog_bar=True)
        self.val_metrics.reset()

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate test loss and metrics."""
        loss, logits = self._shared_step(batch)
        self.test_metrics.update(logits, batch[1])
        self.log("test/loss", loss, on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log and reset the test metrics."""
        self.log_dict(self.test_metrics.compute())
        self.test_metrics.reset()

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Class probabilities ``(B, K)``."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images).softmax(dim=-1)

    def configure_optimizers(self):
        """Optimiser from ``optimizer``; ``lr_scheduler`` stepped every optimiser step."""
        optimizer = self.optimizer(self.parameters())
        scheduler = self._build_scheduler(optimizer)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def _build_scheduler(self, optimizer: torch.optim.Optimizer):
        """Call ``lr_scheduler``, filling an unset ``total_steps`` from the Trainer's estimate."""
        kwargs = {}
        if _accepts_unset_total_steps(self.lr_scheduler):
            kwargs["total_steps"] = int(self.trainer.estimated_stepping_batches)
        return self.lr_scheduler(optimizer, **kwargs)


def inverse_frequency_weights(counts, class_names: list[str]) -> torch.Tensor:
    """``total / (K * count)`` per class: 1 for every class when balanced, larger for rarer classes."""
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if len(counts) != len(class_names) or (counts == 0).any():
        missing = [name for name, n in zip(class_names, counts.tolist(), strict=False) if n == 0]
        raise ValueError(f"model.class_weights=auto: no training samples for classes {missing} ({counts.tolist()})")
    return (counts.sum() / (len(counts) * counts)).float()


def _accepts_unset_total_steps(factory) -> bool:
    """True if ``factory`` takes a ``total_steps`` argument that was not given a value.

    LightningCLI hands us ``functools.partial(instantiator, SchedulerClass, **init_args)``; a plain
    function or class works too.
    """
    given = getattr(factory, "keywords", None) or {}
    if given.get("total_steps") is not None:
        return False
    target = factory
    while isinstance(target, functools.partial):
        classes = [a for a in target.args if inspect.isclass(a)]
        target = classes[0] if classes else target.func
    try:
        return "total_steps" in inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False
