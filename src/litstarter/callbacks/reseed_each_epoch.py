"""Reseed the global RNGs at the first batch of every training epoch from ``(seed, epoch, rank)``."""

from __future__ import annotations

import os
import random

import lightning as L
import numpy as np
import torch


class ReseedEachEpoch(L.Callback):
    """Make each epoch's dropout (and any other global-RNG draw in the model) a function of the seed and epoch.

    The data side already is: the train sampler seeds shuffling and augmentation from ``(seed, epoch)``
    through ``set_epoch``. The model's randomness (dropout, stochastic depth) draws from the process-global
    torch RNG, whose state depends on everything that ran before: a resumed run has skipped the earlier
    epochs but run an extra sanity check, so without this it would draw different masks. With it, a run
    resumed from an epoch-end ``last.ckpt`` trains bit for bit like the uninterrupted run.

    Each process gets its own stream (the rank is mixed in), as it does for different data.

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
        """Seed python, numpy and torch (CPU and every CUDA device) right before the epoch's first step.

        Not at epoch start: between the two, Lightning creates the loader iterator (which draws a base seed
        from the torch RNG), and a resumed run does so at another moment than an uninterrupted one.
        """
        if not self._pending:
            return
        self._pending = False
        seed = self.epoch_seed(trainer.current_epoch, trainer.global_rank)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
