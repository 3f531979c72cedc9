"""Build the configured learning-rate scheduler: fill an unset ``total_steps`` from the Trainer, and give
``OneCycleLR`` one peak per parameter group."""

from __future__ import annotations

import functools
import inspect

from torch.optim import Optimizer
from torch.optim.lr_scheduler import OneCycleLR


def factory_target(factory) -> tuple[object, dict]:
    """The scheduler class (or function) a scheduler factory builds, and the keyword arguments it was given.

    Why this reads a ``functools.partial``: LightningCLI turns ``model.lr_scheduler: {class_path, init_args}`` into
    ``functools.partial(<LightningCLI's instantiator>, SchedulerClass, **init_args)``, and no public API says which
    class is inside. We need it to fill an unset ``total_steps`` and to give ``OneCycleLR`` one ``max_lr`` per group.
    What breaks it: LightningCLI building scheduler callables another way (not a ``partial``, or the class not among
    its positional arguments). Then this returns the factory itself and no keywords: ``total_steps`` stays unset and
    the scheduler raises for it, naming the argument. A plain function or class as the factory works as is.
    """
    target, keywords = factory, {}
    while isinstance(target, functools.partial):
        keywords = {**(target.keywords or {}), **keywords}
        classes = [a for a in target.args if inspect.isclass(a)]
        target = classes[0] if classes else target.func
    return target, keywords


def build_scheduler(factory, optimizer: Optimizer, estimated_steps: int):
    """Call the scheduler ``factory``, filling an unset ``total_steps`` with ``estimated_steps``.

    ``OneCycleLR`` sets every group's rate from one ``max_lr``; to keep the groups' ratios (``backbone_lr_scale``,
    ``scale_lr_with_batch``) each group gets ``max_lr`` x its rate / the optimiser's configured rate.

    Args:
        factory: ``model.lr_scheduler``: takes the optimiser (and keyword arguments), returns a scheduler.
        optimizer: The optimiser, its groups' rates already scaled.
        estimated_steps: ``trainer.estimated_stepping_batches``.
    """
    target, given = factory_target(factory)
    kwargs = {}
    if given.get("total_steps") is None and _takes(target, "total_steps"):
        kwargs["total_steps"] = int(estimated_steps)
    max_lr = given.get("max_lr")
    if target is OneCycleLR and isinstance(max_lr, (int, float)):
        base = optimizer.defaults["lr"]
        kwargs["max_lr"] = [max_lr * group["lr"] / base for group in optimizer.param_groups]
    return factory(optimizer, **kwargs)


def _takes(target, argument: str) -> bool:
    try:
        return argument in inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False
