"""Stop training at the first non-finite loss or gradient, before the optimiser step can spread it."""

from __future__ import annotations

import lightning as L
import torch

from litstarter.optim import total_grad_norm

LIKELY_CAUSES = """Likely causes, most common first:
  - learning rate too high: lower model.optimizer.init_args.lr, keep a warmup, keep trainer.gradient_clip_val;
  - AMP overflow: float16 (16-mixed) overflows above 65504; use bf16-mixed, or 32-true to confirm;
  - log or division by zero in the loss or the model: add an epsilon, or take cross-entropy on logits;
  - bad data: NaN/inf inputs or labels outside [0, num_classes); check the batch at this step.
To find the operation that produced it, rerun with --config configs/trainer/debug.yaml (detect_anomaly)."""


class NonFiniteLossError(RuntimeError):
    """Raised by :class:`StopOnNonFiniteLoss`; its message names the step, the epoch and the likely causes."""


class StopOnNonFiniteLoss(L.Callback):
    """Raise :class:`NonFiniteLossError` when the loss or the gradient norm is NaN or inf, before the optimiser
    step: the weights are still the last finite ones, and the checkpoints on disk stay as they were.

    ``EarlyStopping(check_finite=True)`` acts too late: after validation, when ``last.ckpt`` already holds the
    non-finite weights. Cost: one host-device sync per step. Under ``16-mixed`` only the loss is checked (the
    GradScaler skips overflowing steps by design); under DDP the all-reduced gradients stop every rank together.
    """

    def __init__(self) -> None:
        self._loss_finite: torch.Tensor | None = None  # () bool on the device, ANDed over accumulated batches
        self._batch_idx = 0  # the epoch's batch under way, for the message

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int) -> None:
        """Remember which batch of the epoch is under way."""
        self._batch_idx = batch_idx

    def on_before_backward(self, trainer: L.Trainer, pl_module: L.LightningModule, loss: torch.Tensor) -> None:
        """Remember whether this (micro-)batch's loss is finite, without synchronising."""
        finite = torch.isfinite(loss.detach()).all()
        self._loss_finite = finite if self._loss_finite is None else self._loss_finite & finite

    def on_before_optimizer_step(
        self, trainer: L.Trainer, pl_module: L.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        """Check the loss and the (unscaled, unclipped) gradients once per optimiser step."""
        device = pl_module.device
        loss_finite = self._loss_finite if self._loss_finite is not None else torch.ones((), dtype=torch.bool)
        self._loss_finite = None
        if getattr(trainer.precision_plugin, "scaler", None) is None:
            params = (p for group in optimizer.param_groups for p in group["params"])
            grad_finite = torch.isfinite(total_grad_norm(params))
        else:
            grad_finite = torch.ones((), dtype=torch.bool)
        # One synchronisation for both checks.
        loss_ok, grad_ok = torch.stack([loss_finite.to(device), grad_finite.to(device)]).tolist()
        if getattr(trainer, "world_size", 1) > 1 and getattr(trainer.precision_plugin, "scaler", None) is not None:
            # Under 16-mixed only the loss is checked, and it is per rank: agree, or the ranks that stop would
            # leave the others blocked in the next collective. (Otherwise the all-reduced gradient norm already
            # agrees on every rank.)
            loss_ok = not trainer.strategy.reduce_boolean_decision(not loss_ok, all=False)
        if loss_ok and grad_ok:
            return
        what = "loss" if not loss_ok else "gradient norm (the loss itself was finite)"
        raise NonFiniteLossError(
            f"Non-finite {what} at global step {trainer.global_step}, epoch {trainer.current_epoch} "
            f"(batch {self._batch_idx} of the epoch). Training stopped before the "
            f"optimiser step; checkpoints saved so far are intact"
            f"{_checkpoint_paths(trainer)}.\n{LIKELY_CAUSES}"
        )


def _checkpoint_paths(trainer: L.Trainer) -> str:
    callbacks = getattr(trainer, "checkpoint_callbacks", None) or [trainer.checkpoint_callback]
    names = ("best_model_path", "last_model_path")
    paths = [p for callback in callbacks for p in (getattr(callback, name, "") for name in names) if p]
    return f" ({', '.join(dict.fromkeys(paths))})" if paths else " (none had been saved yet)"
