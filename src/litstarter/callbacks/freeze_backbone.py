"""Train only the head for the first epochs: the backbone's parameters take no gradient and it stays in eval mode."""

from __future__ import annotations

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info

from litstarter.errors import UsageError


class FreezeBackbone(Callback):
    """Freeze the backbone for the first ``epochs`` epochs (no gradients, eval mode: batch norm keeps its running
    statistics), so that a new head learns on the features the backbone had; then it trains at its parameter
    groups' rate (``model.backbone_lr_scale``). The state follows from the epoch alone, so a resume does the right
    thing. Under DDP, frozen parameters need ``trainer.strategy: ddp_find_unused_parameters_true``.

    Not Lightning's ``BackboneFinetuning``: it adds the backbone's parameter group only at unfreeze time (the
    schedule built before never scales it), keeps batch norm training, and ramps the rate by its own rule.

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
