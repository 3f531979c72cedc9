"""Weight EMA: Lightning's ``WeightAveraging`` with a decaying average that warms up, and our checkpoint conventions.

Lightning's own ``EMAWeightAveraging`` has a fixed decay (its ``avg_fn`` is a callable YAML cannot hold), so this
subclasses its parent, as ``EMAWeightAveraging`` does, with a decay that depends on the number of updates.
"""

from __future__ import annotations

import math

import lightning as L
import torch
from lightning.pytorch.callbacks import WeightAveraging
from torch.optim.swa_utils import get_ema_multi_avg_fn

from litstarter._engine.checkpoints import uncompiled_keys
from litstarter.errors import UsageError


class EMA(WeightAveraging):
    """An exponential moving average of the weights (and buffers), updated after every optimiser step.

    Validation, the best checkpoint, test-after-fit, ``export`` and ``infer`` all get the averaged weights; a
    checkpoint keeps the live ones beside them (``current_model_state``) so that a resume continues both.

    Args:
        decay: The decay once warmed up: the average spans about ``1 / (1 - decay)`` steps.
        warmup_steps: The decay after ``n`` updates is ``decay * (1 - exp(-n / warmup_steps))`` (YOLOv5/timm
            style), so early averages follow the fast-moving weights; 0: ``decay`` from the first step.
        update_starting_at_step: First optimiser step to average from (``null``: the first).
    """

    def __init__(self, decay: float = 0.999, warmup_steps: float = 100.0, update_starting_at_step: int | None = None):
        if not 0 <= decay < 1 or warmup_steps < 0:
            raise UsageError(f"EMA: decay must be in [0, 1) and warmup_steps >= 0, got {decay} and {warmup_steps}")
        super().__init__(multi_avg_fn=self._average)  # AveragedModel's arguments; buffers averaged too
        self.decay, self.warmup_steps, self.update_starting_at_step = decay, warmup_steps, update_starting_at_step

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        """After every optimiser step from ``update_starting_at_step`` on (not at epoch ends)."""
        return step_idx is not None and step_idx >= (self.update_starting_at_step or 0)

    def decay_at(self, updates: int) -> float:
        """The decay applied at the ``updates``-th update (1 after the copy that starts the average)."""
        return self.decay * (1 - math.exp(-updates / self.warmup_steps)) if self.warmup_steps else self.decay

    @torch.no_grad()
    def _average(self, averaged: list[torch.Tensor], current: list[torch.Tensor], updates: torch.Tensor) -> None:
        get_ema_multi_avg_fn(self.decay_at(int(updates)))(averaged, current, updates)  # one foreach lerp

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Refuse a weights-only checkpoint (Lightning then skips the hook that saves the average in it)."""
        if stage == "fit" and any(getattr(c, "save_weights_only", False) for c in trainer.checkpoint_callbacks):
            raise UsageError("EMA with ModelCheckpoint(save_weights_only=true) saves the live weights, not the average")
        super().setup(trainer, pl_module, stage)

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Drop the average after fit: a later ``test``/``validate`` loads the checkpoint's weights, the average."""
        if stage == "fit":  # tests/test_compat.py: "lightning WeightAveraging._average_model"
            self._average_model = None

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        """The parent's layout, with the live weights under their uncompiled names too (``model.compile``)."""
        super().on_save_checkpoint(trainer, pl_module, checkpoint)
        if "current_model_state" in checkpoint:
            checkpoint["current_model_state"] = uncompiled_keys(checkpoint["current_model_state"])

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        """Resume both models when fitting; otherwise the checkpoint's ``state_dict`` (the average) is what is
        wanted, and the parent's "loading a checkpoint outside the fit stage" warning says nothing useful."""
        if self._average_model is not None:
            super().on_load_checkpoint(trainer, pl_module, checkpoint)
