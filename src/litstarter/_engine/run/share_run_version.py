"""Every rank of a distributed run uses the run folder global rank 0 claimed (see :mod:`litstarter._engine.run.claim`)."""

from __future__ import annotations

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger


def set_logger_version(logger: TensorBoardLogger | CSVLogger, version: int | str) -> None:
    """Point a file logger at ``version`` after it was built.

    Private attribute: neither logger has a public setter, and both read ``_version`` lazily (``version``,
    ``log_dir``). A Lightning release that renames it breaks this; the DDP test would then see two folders.
    """
    logger._version = version


class ShareRunVersion(Callback):
    """At setup, broadcast rank 0's logger version to the other ranks, which never claim a folder themselves.

    Lightning's launcher re-runs inherit the folder through the environment already; this covers ranks started by
    an external launcher (``torchrun``, SLURM), which would otherwise compute a version of their own.
    """

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Make every rank's file logger name rank 0's folder."""
        logger = trainer.logger
        if trainer.world_size < 2 or not isinstance(logger, (TensorBoardLogger, CSVLogger)):
            return
        version = trainer.strategy.broadcast(logger.version if trainer.is_global_zero else None, src=0)
        if version is not None and logger.version != version:
            set_logger_version(logger, version)
