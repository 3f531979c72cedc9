"""Reseed the global RNGs before every training batch from ``(seed, epoch, batch, rank)``."""

from __future__ import annotations

import os
import random

import lightning as L
import numpy as np
import torch

from litstarter._engine.seeds import mix_seed


class ReseedEachEpoch(L.Callback):
    """Make dropout's masks (any global-RNG draw in the training step) a function of the seed, the epoch, the batch
    and the rank, as the data already is. A resumed run skipped the earlier batches and ran an extra sanity check,
    so it would otherwise draw other masks. With it, a resume trains bit for bit like the uninterrupted run, from an
    epoch-end ``last.ckpt`` and from a mid-epoch one alike (there the epoch's first reseed alone would not do).

    Args:
        seed: Base seed; ``null`` takes the one ``seed_everything`` set (``PL_GLOBAL_SEED``), else 0.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def batch_seed(self, epoch: int, batch_idx: int, rank: int) -> int:
        """The seed for batch ``batch_idx`` of ``epoch`` on process ``rank``: distinct for every triple."""
        base = self.seed if self.seed is not None else int(os.environ.get("PL_GLOBAL_SEED", 0))
        return mix_seed(base, epoch, batch_idx, rank)

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int) -> None:
        """Seed python, numpy and torch right before the step (about 5 us: the CPU generator, and on CUDA the
        device's own, rather than ``torch.manual_seed``'s every backend at 70 us)."""
        seed = self.batch_seed(trainer.current_epoch, batch_idx, trainer.global_rank)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.default_generator.manual_seed(seed)
        device = pl_module.device
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)  # the current device's generator
        elif device.type != "cpu":
            torch.manual_seed(seed)
