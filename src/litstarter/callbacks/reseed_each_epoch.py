"""Reseed the global RNGs at the first batch of every training epoch from ``(seed, epoch, rank)``."""

from __future__ import annotations

import os
import random

import lightning as L
import numpy as np
import torch


class ReseedEachEpoch(L.Callback):
    """Make each epoch's dropout (any global-RNG draw in the model) a function of the seed, the epoch and the rank,
    as the data already is: a resumed run skipped the earlier epochs but ran an extra sanity check, so it would
    otherwise draw other masks. With it, a resume from an epoch-end ``last.ckpt`` trains bit for bit alike.

    Args:
        seed: Base seed; ``null`` takes the one ``seed_everything`` set (``PL_GLOBAL_SEED``), else 0.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._pending = False

    def epoch_seed(self, epoch: int, rank: int) -> int:
        """The seed for ``epoch`` on process ``rank``: distinct for every pair, fits in 32 bits for numpy."""
        base = self.seed if self.seed is not None else int(os.environ.get("PL_GLOBAL_SEED", 0))
        return (base * 1_000_003 + epoch * 8_191 + rank) % 2**32

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Arm the reseed for this epoch's first batch."""
        self._pending = True

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int) -> None:
        """Seed python, numpy and torch right before the epoch's first step (not at epoch start: the loader's
        iterator draws from torch's generator in between, at another moment in a resumed run)."""
        if not self._pending:
            return
        self._pending = False
        seed = self.epoch_seed(trainer.current_epoch, trainer.global_rank)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
