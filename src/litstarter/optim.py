"""Optimiser helpers: parameter groups (no weight decay on norm layers and biases), the gradient norm, and the
warmup + cosine schedule that the stock ``torch.optim.lr_scheduler`` set lacks. The configured scheduler is built by
the engine (``_engine/schedulers.py``: it fills an unset ``total_steps``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

from litstarter._engine.deprecation import Deprecated, deprecated_names
from litstarter.errors import UsageError

__all__ = [
    "WarmupCosineLR",
    "default_optimizer",
    "default_scheduler",
    "layer_decay_groups",
    "param_groups",
    "total_grad_norm",
    "weight_decay_groups",
]

log = logging.getLogger("litstarter")

# Layers whose parameters are a scale and a shift: decaying them toward 0 fights the normalisation.
_NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.SyncBatchNorm,
    nn.InstanceNorm1d,
    nn.InstanceNorm2d,
    nn.InstanceNorm3d,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.LocalResponseNorm,
    nn.RMSNorm,
)


def weight_decay_groups(module: nn.Module) -> list[dict]:
    """Trainable parameters as ``[{"params": decayed}, {"params": rest, "weight_decay": 0.0}]`` (empty groups
    dropped): norm-layer parameters and biases are not decayed. Decay toward zero is a prior only where zero means
    "no effect"; for a norm scale (neutral at 1) or a bias it just biases the model.

    Args:
        module: The module whose parameters to group.
    """
    decay, no_decay, seen = [], [], set()
    for module_ in module.modules():
        for name, param in module_.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:  # shared parameters appear once
                continue
            seen.add(id(param))
            if isinstance(module_, _NORM_LAYERS) or name == "bias" or name.endswith("_bias"):
                no_decay.append(param)
            else:
                decay.append(param)
    groups = [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def _split_groups_by_module(groups: list[dict], module: nn.Module, name: str, rest: str) -> list[dict]:
    """Split every parameter group in two, ``module``'s parameters and the others, so that the backbone's can get
    their own ``lr``. Each keeps its settings and is named ``name`` / ``rest`` (``_no_decay`` appended where
    ``weight_decay`` is 0), so ``LearningRateMonitor`` logs e.g. ``lr-AdamW/backbone``.

    Args:
        groups: Parameter groups, e.g. from :func:`weight_decay_groups`.
        module: The module whose parameters to separate, e.g. the backbone.
        name: Name of the groups holding ``module``'s parameters.
        rest: Name of the groups holding the others.
    """
    inside = {id(p) for p in module.parameters()}
    split = []
    for group in groups:
        suffix = "_no_decay" if group.get("weight_decay") == 0.0 else ""
        params = list(group["params"])
        for group_name, members in (
            (rest, [p for p in params if id(p) not in inside]),
            (name, [p for p in params if id(p) in inside]),
        ):
            if members:
                split.append({**group, "params": members, "name": group_name + suffix})
    return split


def total_grad_norm(params: Iterable[nn.Parameter]) -> torch.Tensor:
    """The global L2 norm of all gradients (those without one skipped), as a device tensor: no synchronisation."""
    grads = [p.grad for p in params if p.grad is not None]
    return torch.nn.utils.get_total_norm(grads, norm_type=2.0) if grads else torch.zeros(())


class WarmupCosineLR(LRScheduler):
    """Linear warmup from ~0 to the base learning rate, then cosine decay to ``min_lr_ratio`` of it, stepped every
    optimiser step. Warmup keeps the first, noisy updates (Adam's moments are still poor) from going far astray.

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
            raise UsageError(f"{key}.warmup_steps must be >= 0, got {warmup_steps}")
        if total_steps is not None and total_steps < 1:
            raise UsageError(f"{key}.total_steps must be >= 1, got {total_steps}")
        if not 0 <= min_lr_ratio <= 1:
            raise UsageError(f"{key}.min_lr_ratio must be in [0, 1], got {min_lr_ratio}")
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
        """Scheduler state without ``total_steps``: a resume follows its current plan (a larger ``max_epochs``
        stretches the cosine instead of idling at the floor; the same plan gives exactly the same schedule)."""
        state = super().state_dict()
        state.pop("total_steps", None)
        return state

    def get_lr(self) -> list[float]:
        """Learning rates for the current step, one per parameter group."""
        f = self.factor(self.last_epoch)
        return [base * f for base in self.base_lrs]


def default_optimizer(params) -> Optimizer:
    """``model.optimizer: null``: AdamW, lr 3e-3, weight decay 0.05."""
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.05)


def default_scheduler(optimizer: Optimizer, total_steps: int | None = None) -> LRScheduler:
    """``model.lr_scheduler: null``: :class:`WarmupCosineLR` with a 5% warmup."""
    return WarmupCosineLR(optimizer, warmup_steps=0.05, total_steps=total_steps)


def param_groups(
    module: nn.Module,
    no_decay_norm_and_bias: bool,
    backbone: nn.Module,
    backbone_lr_scale: float,
    layer_decay: float | None = None,
):
    """What the task hands its optimiser: :func:`weight_decay_groups` (or every parameter), split into named
    backbone/head groups when ``backbone_lr_scale`` is not 1 (:func:`scale_backbone_groups` applies it), or, with
    ``layer_decay``, one backbone group per layer (:func:`layer_decay_groups`)."""
    if layer_decay is not None:
        return layer_decay_groups(module, backbone, layer_decay, no_decay_norm_and_bias)
    params = weight_decay_groups(module) if no_decay_norm_and_bias else module.parameters()
    if backbone_lr_scale == 1.0:
        return params
    params = list(params)
    groups = params if params and isinstance(params[0], dict) else [{"params": params}]
    return _split_groups_by_module(groups, backbone, "backbone", rest="head")


def layer_decay_groups(module: nn.Module, backbone: nn.Module, layer_decay: float, no_decay: bool) -> list[dict]:
    """Layer-wise learning-rate decay: the backbone's groups, first layer first, each with an ``lr_scale`` of
    ``layer_decay ** (last layer - layer)`` (from its ``layer_decay_groups``; timm models have it), then the rest
    of ``module`` (the head) as ``head`` groups at scale 1. :func:`apply_lr_scales` applies the scales.

    Raises:
        UsageError: ``layer_decay`` outside (0, 1], or a backbone without ``layer_decay_groups``.
    """
    if not 0 < layer_decay <= 1:
        raise UsageError(f"model.layer_decay must be in (0, 1], got {layer_decay}")
    if not hasattr(backbone, "layer_decay_groups"):
        raise UsageError(
            f"model.layer_decay needs a backbone that groups its parameters by layer (timm/<name> backbones do);"
            f" {type(backbone).__name__} does not: leave model.layer_decay null"
        )
    groups = backbone.layer_decay_groups(layer_decay, no_decay)
    inside = {id(p) for g in groups for p in g["params"]}
    rest = weight_decay_groups(module) if no_decay else [{"params": list(module.parameters())}]
    rest = [{**g, "params": [p for p in g["params"] if id(p) not in inside]} for g in rest]
    heads = [
        {**g, "lr_scale": 1.0, "name": "head" + ("_no_decay" if g.get("weight_decay") == 0.0 else "")}
        for g in rest
        if g["params"]
    ]
    return groups + heads


def apply_lr_scales(optimizer: Optimizer) -> str | None:
    """Multiply each group's ``lr`` by its ``lr_scale`` (torch optimisers and Lightning ignore the key), in place,
    before the scheduler reads the rates as its base; logs (and returns) a line naming the first, a middle and the
    last group's rate, not all thirty (``None`` when no group has a scale)."""
    scaled = [g for g in optimizer.param_groups if "lr_scale" in g]
    if not scaled:
        return None
    for group in scaled:
        group["lr"] *= group["lr_scale"]
    shown = [scaled[0], scaled[len(scaled) // 2], scaled[-1]]
    rates = ", ".join(f"{g.get('name', '?')} {g['lr']:.3g} (x{g['lr_scale']:.3g})" for g in shown)
    line = f"layer decay: {len(scaled)} parameter groups; learning rates {rates}"
    log.info(line)
    return line


def scale_backbone_groups(optimizer: Optimizer, backbone_lr_scale: float) -> None:
    """Multiply the learning rate of the groups named ``backbone*`` by ``backbone_lr_scale``, in place."""
    for group in optimizer.param_groups:
        if group.get("name", "").startswith("backbone"):
            group["lr"] *= backbone_lr_scale


def scheduler_config(scheduler, plateau_monitor: str) -> dict:
    """Lightning's ``lr_scheduler`` entry: every optimiser step, or (``ReduceLROnPlateau``) every epoch on a metric."""
    if isinstance(scheduler, ReduceLROnPlateau):
        return {"scheduler": scheduler, "interval": "epoch", "monitor": plateau_monitor}
    return {"scheduler": scheduler, "interval": "step"}


#: Names 0.1.0 exposed, private since 0.2.0 (only this module uses them).
__getattr__ = deprecated_names(
    __name__,
    {
        "NORM_LAYERS": Deprecated("_NORM_LAYERS", removed_in="0.3.0"),
        "split_groups_by_module": Deprecated(
            "_split_groups_by_module", removed_in="0.3.0", instead="param_groups splits off the backbone's groups"
        ),
    },
)
