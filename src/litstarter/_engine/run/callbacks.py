"""The callbacks every run gets, whatever its config lists (the CLI adds them to the Trainer's):

* :class:`ShareRunVersion`: every rank of a distributed run writes into the folder global rank 0 claimed
  (see :mod:`.claim`);
* :class:`CheckCheckpointsWritten`: a fit whose checkpoints cannot be written stops, instead of training on without
  any. Lightning 2.6 writes a checkpoint through ``fsspec`` and swallows a ``PermissionError`` on the way
  (``lightning.fabric.utilities.cloud_io._atomic_save``): a fit into a folder it may not write would exit 0 having
  saved nothing;
* :class:`WarnOnTinyValidation`: one line when the validation split is too small to select a checkpoint on;
* :class:`SayWhatAMidEpochResumeReplays`: one line when a fit resumes from a checkpoint saved mid-epoch.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import lightning as L
import numpy as np
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from litstarter.errors import UsageError

from ..atomic_io import unwritable_reason
from ..targets import target_kind

log = logging.getLogger("litstarter")

#: Below this many validation images each image is more than 2% of what a score is measured on.
MIN_VAL_IMAGES = 50
#: Below this many images of a class in validation, one image moves that class's recall by more than 20 points.
MIN_VAL_PER_CLASS = 5


def set_logger_version(logger: TensorBoardLogger | CSVLogger, version: int | str) -> None:
    """Point a file logger at ``version`` after it was built.

    Private attribute: neither logger has a public setter, and both read ``_version`` lazily (``version``,
    ``log_dir``). A Lightning release that renames it breaks this; the DDP test would then see two folders.
    """
    logger._version = version  # tests/test_compat.py: "lightning logger._version"


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


def check_writable(folder: str | os.PathLike) -> None:
    """Create ``folder`` if needed and write (then remove) a probe file in it: a real write, not ``os.access``, so
    that ACLs, read-only mounts and dropped capabilities answer too.

    Raises:
        UsageError: Naming the folder, if it cannot be created or written.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        reason = unwritable_reason(folder)[1]
    except OSError as err:
        reason = err.strerror or str(err)
    if reason is not None:
        raise UsageError(
            f"the run folder '{folder}' is not writable ({reason}): no checkpoint could be saved there. Make it"
            " writable, or choose another trainer.logger.init_args.save_dir (or ModelCheckpoint dirpath)"
        )


def _local(path: str | os.PathLike | None) -> bool:
    return bool(path) and "://" not in str(path)  # s3://, gs://: fsspec's business, not a local file


class CheckCheckpointsWritten(Callback):
    """Before training: the run folder and every ModelCheckpoint folder are writable. After each save: the file
    that ModelCheckpoint recorded (``last_model_path``, ``best_model_path``) exists. Either failure stops the
    run with a ``UsageError`` naming the folder. Global rank 0 only (it does the writing).
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


class WarnOnTinyValidation(Callback):
    """At the start of ``fit``, one line when the validation split has under :data:`MIN_VAL_IMAGES` images or a
    class under :data:`MIN_VAL_PER_CLASS`: the best checkpoint and early stopping are then chosen on a few images'
    luck (macro-F1 reaches 1.0 early and ties). Data modules whose splits are arrays (``val_set.targets``) only."""

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Count the validation split, per class (per label); targets without classes (values) by images alone."""
        datamodule = trainer.datamodule
        labels = getattr(getattr(datamodule, "val_set", None), "targets", None)
        if labels is None or not trainer.is_global_zero:
            return
        try:  # images per class, or with each label; the data's kind decides (litstarter._engine.targets)
            counts = target_kind(getattr(datamodule, "target_kind", "class")).class_counts(
                labels, int(getattr(datamodule, "num_classes", 0) or (np.max(np.asarray(labels), initial=-1) + 1))
            )
        except (KeyError, UsageError):  # values, or a kind of the project's own: no class to count
            counts = None
        smallest = int(counts.min()) if counts is not None and counts.size else 0
        if len(labels) >= MIN_VAL_IMAGES and (counts is None or smallest >= MIN_VAL_PER_CLASS):
            return
        if counts is None:
            log.warning(
                f"the validation split has {len(labels)} images: too few to select a checkpoint on (under"
                f" {MIN_VAL_IMAGES} it is mostly luck). Raise data.val_fraction, or add images to the validation"
                " folder"
            )
            return
        log.warning(
            f"the validation split has {len(labels)} images ({smallest} of its smallest class):"
            f" too few to select a checkpoint on (each image is {100 / max(len(labels), 1):.0f}% of what it is"
            f" scored on; under {MIN_VAL_IMAGES}, or under {MIN_VAL_PER_CLASS} of a class, it is mostly luck). Raise"
            " data.val_fraction, or add images to the validation folder"
        )


def resumable(loaders) -> bool:
    """Whether every train loader keeps its position (Lightning's Stateful protocol: ``state_dict`` and
    ``load_state_dict``, as torchdata's ``StatefulDataLoader`` and LitData's loaders have); Lightning then restores
    it and a mid-epoch resume continues where it stopped."""
    loaders = list(loaders.values()) if isinstance(loaders, dict) else loaders
    loaders = loaders if isinstance(loaders, list | tuple) else [loaders]
    return bool(loaders) and all(hasattr(x, "state_dict") and hasattr(x, "load_state_dict") for x in loaders)


def restores_its_own_position(datamodule) -> bool:
    """Whether the data module says a mid-epoch resume continues exactly (``resumes_mid_epoch_exactly = True``): it
    restores its train loader's position from its own state, and draws each sample's order and augmentation from
    the seed and the sample alone (``litstarter.data.StreamingDataModule``, checked by its resume test)."""
    return bool(getattr(datamodule, "resumes_mid_epoch_exactly", False))


class SayWhatAMidEpochResumeReplays(Callback):
    """One line when a fit resumes from a checkpoint saved mid-epoch (a SLURM ``hpc_ckpt_<n>.ckpt``, a
    ``val_check_interval`` save), saying what the rest of that epoch trains:

    * a plain ``DataLoader`` keeps no position, so Lightning restarts the epoch's iteration and fills the steps the
      epoch had left with its first batches again: that epoch trains those batches twice and its last ones not at
      all (a warning; epoch-end checkpoints resume exactly);
    * a data module that declares ``resumes_mid_epoch_exactly`` continues with the next batch (information);
    * any other stateful loader (:func:`resumable`) has a position, but nothing here knows that it is restored in
      time (Lightning restores it only if the loader is built after the loops, and the task's scheduler, reading
      ``estimated_stepping_batches``, builds it before) nor that its order and augmentation are seeded to replay:
      a warning that says so, not a promise."""

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Compare the restored position in the epoch with the epoch's length."""
        done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
        total = trainer.num_training_batches
        if not trainer.ckpt_path or not 0 < done < total or total == float("inf"):
            return
        at = f"resuming mid-epoch: epoch {trainer.current_epoch} had trained {done} of its {int(total)} batches."
        if restores_its_own_position(trainer.datamodule):
            log.info(
                f"{at} The data module restored its train loader's position: the epoch continues with batch"
                f" {done + 1}, in the uninterrupted run's order and views"
            )
            return
        if resumable(trainer.train_dataloader):
            log.warning(
                f"{at} The train loader keeps a position (Stateful), but nothing checks that it continues with batch"
                f" {done + 1} in the uninterrupted run's order and views: Lightning restores it only if it is built"
                " after the loops, and a learning-rate schedule may build it first. A data module that restores it"
                " itself, seeded per sample, says so with resumes_mid_epoch_exactly = True (as StreamingDataModule)"
            )
            return
        left = int(total) - done
        log.warning(
            f"{at} The train loader keeps no position, so the epoch's other"
            f" {left} steps take its first {left} batches again: this epoch trains them twice and its last {left}"
            " not at all (the next epochs are whole). Resume from an epoch-end last.ckpt to replay exactly"
        )
