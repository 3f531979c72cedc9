"""Train only the head for the first epochs: the backbone's parameters take no gradient and it stays in eval mode."""

from __future__ import annotations

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info

from litstarter._engine.errors import UsageError


class FreezeBackbone(Callback):
    """Freeze the backbone for the first ``epochs`` epochs, then unfreeze it.

    While frozen, the backbone's parameters have ``requires_grad=False`` (the optimiser skips parameters without
    a gradient, so neither the step nor weight decay moves them) and the backbone is in eval mode: batch norm
    uses and keeps its running statistics, and dropout inside it is off. A new head thus learns on the features
    the backbone had. From epoch ``epochs`` on, the backbone trains again, at whatever learning rate its
    parameter groups have (``model.backbone_lr_scale`` puts them in their own groups from the start, so the
    learning-rate schedule and a resumed optimiser state cover them).

    Lightning's ``BackboneFinetuning`` does not fit here: it adds the backbone's parameter group only at unfreeze
    time, so the schedule built before does not scale it; it keeps batch norm in training mode; and it ramps the
    backbone's learning rate by its own rule.

    The state follows from the epoch alone, so resuming inside or after the frozen epochs does the right thing.
    Under DDP, parameters without gradients need ``trainer.strategy: ddp_find_unused_parameters_true``.

    Args:
        epochs: Number of epochs, from the first, to keep the backbone frozen.
        module: Path of the backbone inside the LightningModule (``get_submodule``).
    """

    def __init__(self, epochs: int, module: str = "net.backbone") -> None:
        if epochs < 0:
            raise UsageError(f"FreezeBackbone epochs must be >= 0, got {epochs}")
        self.epochs = epochs
        self.module = module

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Freeze (epoch < ``epochs``) or unfreeze the backbone for this epoch."""
        backbone = pl_module.get_submodule(self.module)
        frozen = trainer.current_epoch < self.epochs
        was_frozen = not any(p.requires_grad for p in backbone.parameters())
        backbone.requires_grad_(not frozen)
        backbone.train(not frozen and pl_module.training)
        if frozen and not was_frozen:
            rank_zero_info(
                f"FreezeBackbone: {self.module} frozen (eval mode, no gradients) for the first {self.epochs}"
                " epoch(s); only the rest trains"
            )
        elif was_frozen and not frozen:
            rank_zero_info(f"FreezeBackbone: epoch {trainer.current_epoch}: {self.module} unfrozen and training")
