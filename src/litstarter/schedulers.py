"""Learning-rate schedules that the stock ``torch.optim.lr_scheduler`` set lacks."""

from __future__ import annotations

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler


class WarmupCosineLR(LRScheduler):
    """Linear warmup from ~0 to the base learning rate, then cosine decay to ``min_lr_ratio`` of it.

    Stepped once per optimiser step. Warmup keeps the first, large and noisy updates (Adam's second-moment
    estimates are still poor, BN statistics are still moving) from throwing the weights somewhere bad.

    Args:
        optimizer: The wrapped optimiser.
        warmup_steps: Warmup length: optimiser steps if >= 1, else a fraction of ``total_steps``.
        total_steps: Total optimiser steps; ``null`` lets the task fill in ``trainer.estimated_stepping_batches``.
        min_lr_ratio: Final learning rate as a fraction of the base one.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        warmup_steps: float = 0.05,
        total_steps: int | None = None,
        min_lr_ratio: float = 0.01,
        last_epoch: int = -1,
    ) -> None:
        key = "model.lr_scheduler.init_args"
        if warmup_steps < 0:
            raise ValueError(f"{key}.warmup_steps must be >= 0, got {warmup_steps}")
        if total_steps is not None and total_steps < 1:
            raise ValueError(f"{key}.total_steps must be >= 1, got {total_steps}")
        if not 0 <= min_lr_ratio <= 1:
            raise ValueError(f"{key}.min_lr_ratio must be in [0, 1], got {min_lr_ratio}")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_lr_ratio = min_lr_ratio
        super().__init__(optimizer, last_epoch)

    def factor(self, step: int) -> float:
        """Multiplier of the base learning rate at optimiser step ``step``."""
        if self.total_steps is None:
            raise RuntimeError(
                "WarmupCosineLR.total_steps is unset; pass it, or let ImageClassifier fill it from the Trainer"
            )
        warmup = self.warmup_steps if self.warmup_steps >= 1 else self.warmup_steps * self.total_steps
        if step < warmup:
            return (step + 1) / (warmup + 1)
        progress = min(1.0, (step - warmup) / max(1.0, self.total_steps - warmup))
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    def state_dict(self) -> dict:
        """Scheduler state without ``total_steps``: a resumed run follows its *current* plan.

        Resuming with a larger ``--trainer.max_epochs`` then stretches the cosine over the new length
        instead of idling at the floor; resuming with the same plan gives exactly the same schedule.
        """
        state = super().state_dict()
        state.pop("total_steps", None)
        return state

    def get_lr(self) -> list[float]:
        """Learning rates for the current step, one per parameter group."""
        f = self.factor(self.last_epoch)
        return [base * f for base in self.base_lrs]
