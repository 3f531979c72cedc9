"""The EMA callback: its warmed-up decay is the formula's, it refuses weights-only checkpoints, and a compiled
backbone's live weights are saved under their plain names."""

from __future__ import annotations

import math
from types import SimpleNamespace

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn

from litstarter._engine.checkpoints import compile_child
from litstarter.callbacks.ema import EMA
from litstarter.errors import UsageError


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Linear(3, 4)
        self.head = nn.Linear(4, 2)


def started(ema: EMA, module: L.LightningModule, checkpoints=()) -> SimpleNamespace:
    """A stand-in trainer with what the callback reads, and the callback set up for fit on it."""
    trainer = SimpleNamespace(checkpoint_callbacks=list(checkpoints), global_step=0, current_epoch=0)
    ema.setup(trainer, module, "fit")
    return trainer


def test_the_decay_warms_up_as_the_formula_says() -> None:
    decay, warmup = 0.99, 4.0
    ema, module = EMA(decay=decay, warmup_steps=warmup), Tiny()
    trainer = started(ema, module)
    expected = None
    for step in range(1, 7):  # each optimiser step moves the live weights, then the callback averages
        with torch.no_grad():
            for p in module.parameters():
                p.add_(torch.randn_like(p))
        trainer.global_step = step
        ema.on_train_batch_end(trainer, module, None, None, step - 1)
        live = [p.detach().clone() for p in module.parameters()]
        d = decay * (1 - math.exp(-(step - 1) / warmup))  # the first update copies (n = 0)
        expected = live if expected is None else [d * e + (1 - d) * w for e, w in zip(expected, live, strict=True)]
        assert ema.decay_at(step - 1) == pytest.approx(d)
        for got, want in zip(ema._average_model.module.parameters(), expected, strict=True):
            torch.testing.assert_close(got, want)
    assert EMA(decay=0.9, warmup_steps=0).decay_at(1) == 0.9  # no warmup: the decay from the start


def test_a_weights_only_checkpoint_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="save_weights_only"):
        started(EMA(), Tiny(), [ModelCheckpoint(save_weights_only=True)])
    with pytest.raises(UsageError, match="decay"):
        EMA(decay=1.0)


def test_a_compiled_backbone_saves_both_weight_sets_under_plain_names() -> None:
    ema, module = EMA(), Tiny()
    trainer = started(ema, module)  # the average is copied before fit compiles (the task's on_fit_start)
    compile_child(module, "backbone", {"backend": "eager"})  # wrapping only: nothing compiles until a call
    checkpoint = {"state_dict": module.state_dict()}
    assert any("_orig_mod." in key for key in checkpoint["state_dict"])
    ema.on_save_checkpoint(trainer, module, checkpoint)
    assert sorted(checkpoint["current_model_state"]) == sorted(checkpoint["state_dict"])
    assert not any("_orig_mod." in key for key in checkpoint["current_model_state"])
