"""MixUp and CutMix on a training batch (torchvision v2), replayable: their draws are a function of the seed, the
epoch, the step and the rank, taken from a forked RNG that leaves the global one (dropout's) untouched."""

from __future__ import annotations

import logging
import os

import torch
from torchvision.transforms import v2

from litstarter._engine.seeds import mix_seed
from litstarter.errors import UsageError

__all__ = ["BatchMix"]

log = logging.getLogger("litstarter")  # printed by every CLI run, from rank 0


class BatchMix:
    """MixUp or CutMix (one of them per batch, at random) on ``(images, labels)``, soft targets out.

    Args:
        num_classes: Number of classes (the targets' width).
        mixup_alpha: MixUp's Beta(alpha, alpha) mixing weight; 0: no MixUp.
        cutmix_alpha: CutMix's Beta(alpha, alpha) box area; 0: no CutMix.
        off_after_epoch: Stop mixing from this (0-based) epoch on, to end training on clean images; ``None``: never.
    """

    def __init__(self, num_classes: int, mixup_alpha: float, cutmix_alpha: float, off_after_epoch: int | None) -> None:
        if mixup_alpha < 0 or cutmix_alpha < 0 or (off_after_epoch is not None and off_after_epoch < 0):
            raise UsageError(
                f"model.mixup_alpha and model.cutmix_alpha must be >= 0 and model.mix_off_after_epoch >= 0 or null,"
                f" got {mixup_alpha}, {cutmix_alpha} and {off_after_epoch}"
            )
        mixes = [v2.MixUp(alpha=mixup_alpha, num_classes=num_classes)] if mixup_alpha else []
        mixes += [v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes)] if cutmix_alpha else []
        self.transform = mixes[0] if len(mixes) == 1 else v2.RandomChoice(mixes)
        self.off_after_epoch = off_after_epoch
        self._said_off = False

    def seed(self, epoch: int, step: int, rank: int) -> int:
        """The batch's seed, from ``seed_everything``'s (``PL_GLOBAL_SEED``, else 0), the epoch, step and rank."""
        base = int(os.environ.get("PL_GLOBAL_SEED", 0))
        return mix_seed(base, epoch, step, rank)

    def __call__(
        self, images: torch.Tensor, labels: torch.Tensor, epoch: int, step: int, rank: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, C, H, W)`` uint8 images and ``(B,)`` labels -> float images and ``(B, K)`` soft targets (the
        labels unchanged from ``off_after_epoch`` on)."""
        if self.off_after_epoch is not None and epoch >= self.off_after_epoch:
            if not self._said_off:
                log.info(f"MixUp/CutMix off from epoch {epoch} (model.mix_off_after_epoch)")
                self._said_off = True
            return images, labels
        with torch.random.fork_rng(devices=[]):  # torchvision draws on the CPU generator only
            torch.manual_seed(self.seed(epoch, step, rank))
            # Each image is mixed with its neighbour: shuffle first, as a class-balanced batch comes class by class.
            order = torch.randperm(len(labels)).to(labels.device)
            return self.transform(images[order].float(), labels[order])
