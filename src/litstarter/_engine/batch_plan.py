"""The effective global batch (devices x nodes x accumulation) and the learning rate scaled to it."""

from __future__ import annotations

from typing import Literal

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_info

ScaleMode = Literal["none", "linear", "sqrt"]


def batch_plan(trainer: L.Trainer) -> dict[str, int]:
    """World size, nodes, devices, per-device batch, accumulation and the effective global batch.

    Args:
        trainer: The Trainer; the per-device batch is its data module's ``batch_size`` (0 when it has none).
    """
    datamodule = trainer.datamodule
    per_device = getattr(datamodule, "batch_size", None) if datamodule is not None else None
    plan = {
        "world_size": trainer.world_size,
        "num_nodes": trainer.num_nodes,
        "devices": trainer.num_devices,
        "per_device_batch": int(per_device or 0),
        "accumulate_grad_batches": trainer.accumulate_grad_batches,
    }
    plan["global_batch"] = plan["per_device_batch"] * plan["world_size"] * plan["accumulate_grad_batches"]
    return plan


def lr_factor(mode: ScaleMode, global_batch: int, reference: int) -> float:
    """The learning-rate multiplier for ``global_batch`` against ``reference``: ``linear`` (the ratio), ``sqrt``
    (its square root) or ``none`` (1). An unknown batch (0) leaves the rate alone."""
    if mode == "none" or global_batch <= 0:
        return 1.0
    ratio = global_batch / reference
    return ratio if mode == "linear" else ratio**0.5


def scale_lr(optimizer: torch.optim.Optimizer, plan: dict[str, int], mode: ScaleMode, reference: int) -> float:
    """Print the batch plan and multiply every group's learning rate by :func:`lr_factor`; returns the factor.

    Args:
        optimizer: The optimiser whose groups to scale (before the scheduler reads their base rates).
        plan: From :func:`batch_plan`.
        mode: ``model.scale_lr_with_batch``.
        reference: ``model.reference_batch_size``: the global batch the configured rate was tuned for.
    """
    factor = lr_factor(mode, plan["global_batch"], reference)
    for group in optimizer.param_groups:
        group["lr"] *= factor
    rank_zero_info(
        f"batch plan: world size {plan['world_size']} = {plan['num_nodes']} node(s) x {plan['devices']} device(s); "
        f"per-device batch {plan['per_device_batch']} x accumulation {plan['accumulate_grad_batches']} "
        f"-> effective global batch {plan['global_batch']}"
    )
    if mode != "none":
        rank_zero_info(
            f"scale_lr_with_batch={mode}: lr x {factor:.4g} (global batch {plan['global_batch']} vs reference "
            f"{reference}) -> lr {optimizer.param_groups[0]['lr']:.4g}"
        )
    return factor
