"""Stop a fit whose checkpoints cannot be written, instead of training on without any.

Lightning 2.6 writes a checkpoint through ``fsspec`` and swallows a ``PermissionError`` on the way
(``lightning.fabric.utilities.cloud_io._atomic_save``): a fit into a folder it may not write exits 0 having saved
nothing. This callback checks the run's folders are writable before training, and that each checkpoint
ModelCheckpoint reports as saved exists afterwards.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Callback

from ..errors import UsageError


def check_writable(folder: str | os.PathLike) -> None:
    """Create ``folder`` if needed and write (then remove) a probe file in it.

    A real write, not ``os.access``: it answers for ACLs, read-only mounts and dropped capabilities too.

    Raises:
        UsageError: Naming the folder, if it cannot be created or written.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UsageError(
            f"the run folder '{folder}' is not writable ({err.strerror}): no checkpoint could be saved there. Make it"
            " writable, or choose another trainer.logger.init_args.save_dir (or ModelCheckpoint dirpath)"
        ) from err


def _local(path: str | os.PathLike | None) -> bool:
    return bool(path) and "://" not in str(path)  # s3://, gs://: fsspec's business, not a local file


class CheckCheckpointsWritten(Callback):
    """Before training: the run folder and every ModelCheckpoint folder are writable. After each save: the file
    that ModelCheckpoint recorded (``last_model_path``, ``best_model_path``) exists. Either failure stops the
    run with a :class:`~litstarter._engine.errors.UsageError` naming the folder. Global rank 0 only (it does the writing).
    """

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Check the folders the run will write to."""
        log_dir = trainer.log_dir  # on every rank: it broadcasts rank 0's (a collective call)
        if not trainer.is_global_zero:
            return
        folders = [log_dir] + [cb.dirpath for cb in trainer.checkpoint_callbacks]
        for folder in dict.fromkeys(f for f in folders if _local(f)):
            check_writable(folder)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Check the saves of the previous epoch (ModelCheckpoint may save in its own epoch-end hook)."""
        self.check_saved(trainer)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Check the saves made after this epoch's validation."""
        self.check_saved(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Check the last epoch's saves."""
        self.check_saved(trainer)

    def check_saved(self, trainer: L.Trainer) -> None:
        """Raise if a checkpoint ModelCheckpoint recorded as saved is not on disk."""
        if not trainer.is_global_zero:
            return
        for callback in trainer.checkpoint_callbacks:
            for path in dict.fromkeys((callback.last_model_path, callback.best_model_path)):
                if _local(path) and not os.path.isfile(path):
                    raise UsageError(
                        f"checkpoint '{path}' was not written: the folder '{Path(path).parent}' is not writable (or"
                        " was removed) while training. Make it writable, or choose another"
                        " trainer.logger.init_args.save_dir"
                    )
