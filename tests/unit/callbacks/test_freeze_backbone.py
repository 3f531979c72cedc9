"""Freezing the backbone for the first epochs: it and its BN statistics stay put, then it trains at the scaled LR."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import Callback, LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger

from litstarter.data import DigitsDataModule
from litstarter.tasks.classification import ImageClassifier


class RecordBackbone(Callback):
    """Snapshots of the backbone's state per epoch, its modes, and the LR and size of each optimiser step."""

    def __init__(self) -> None:
        self.start: dict[int, dict[str, torch.Tensor]] = {}
        self.end: dict[int, dict[str, torch.Tensor]] = {}
        self.backbone_training: dict[int, set[bool]] = {}
        self.lrs: list[dict[str, float]] = []
        self.first_unfrozen_step: float | None = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.start[trainer.current_epoch] = _clone(pl_module.net.backbone.state_dict())

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        modes = {m.training for m in pl_module.net.backbone.modules()}
        self.backbone_training.setdefault(trainer.current_epoch, set()).update(modes)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.lrs.append({g["name"]: g["lr"] for g in optimizer.param_groups})

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.current_epoch == 1 and batch_idx == 0:
            before, after = self.start[1], pl_module.net.backbone.state_dict()
            weights = [k for k in after if k.endswith("weight") and after[k].ndim == 4]  # conv weights: decayed group
            self.first_unfrozen_step = max((after[k] - before[k]).abs().max().item() for k in weights)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.end[trainer.current_epoch] = _clone(pl_module.net.backbone.state_dict())


def _clone(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in state.items()}


def _changed(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], keys) -> list[str]:
    return [k for k in keys if not torch.equal(a[k], b[k])]


def test_frozen_epochs_keep_the_backbone_and_its_bn_stats_then_it_trains_at_the_scaled_lr(tmp_path: Path) -> None:
    L.seed_everything(0)
    model = ImageClassifier(num_classes=10, in_channels=1, freeze_backbone_epochs=1, backbone_lr_scale=0.1)
    recorder, lr_monitor = RecordBackbone(), LearningRateMonitor(logging_interval="step")
    trainer = L.Trainer(
        max_epochs=2, limit_train_batches=3, limit_val_batches=1, callbacks=[recorder, lr_monitor],
        logger=CSVLogger(tmp_path), enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    head_before = model.net.head.weight.detach().clone()
    trainer.fit(model, datamodule=DigitsDataModule(num_workers=0))

    keys = list(recorder.start[0])
    params = {k for k, _ in model.net.backbone.named_parameters()}
    running = [k for k in keys if "running_" in k]
    assert running and params
    # Frozen epoch (validation ran in between): nothing of the backbone moved, it stayed in eval mode.
    assert _changed(recorder.start[0], recorder.end[0], keys) == []
    assert recorder.backbone_training[0] == {False}
    assert not torch.equal(head_before, model.net.head.weight)  # while the head trained
    # Unfrozen epoch: parameters and running statistics move, in train mode.
    assert set(_changed(recorder.start[1], recorder.end[1], params)) == params
    assert set(_changed(recorder.start[1], recorder.end[1], running)) == set(running)
    assert recorder.backbone_training[1] == {True}
    # Own parameter groups at 0.1 x the head's learning rate at every step, the no-decay split kept.
    assert set(recorder.lrs[0]) == {"head", "head_no_decay", "backbone", "backbone_no_decay"}
    for lrs in recorder.lrs:
        assert lrs["backbone"] == pytest.approx(0.1 * lrs["head"]) and lrs["backbone_no_decay"] == lrs["backbone"]
    # AdamW's first step moves each weight by about its group's lr (sign of the gradient): the scaled one.
    lr_backbone = recorder.lrs[3]["backbone"]  # the first step of epoch 1
    assert 0.5 * lr_backbone < recorder.first_unfrozen_step < 1.5 * lr_backbone
    # Both learning rates are logged.
    assert {"lr-AdamW/head", "lr-AdamW/backbone"} <= set(lr_monitor.lrs)
