"""Draw the confusion matrix: to TensorBoard after validation and test, and to ``<run>/confusion_matrix.png``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import lightning as L
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_info

from litstarter._engine.atomic_io import atomic_write
from litstarter.errors import UsageError
from litstarter.plots import confusion_matrix_figure

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not when a fit starts
    from matplotlib.figure import Figure


class PlotConfusionMatrix(L.Callback):
    """Log the confusion-matrix figure to TensorBoard after every validation and test, and save the test one; from
    ``pl_module.confusion_matrices[stage]`` (the task's, synchronised across processes). Rank 0 draws; not under
    ``fast_dev_run``.

    Args:
        filename: File name of the test figure inside the run directory.
        every_n_val_epochs: Draw the validation figure every this many validation epochs (drawing takes
            ~0.1 s, noticeable next to a sub-second epoch).
    """

    def __init__(self, filename: str = "confusion_matrix.png", every_n_val_epochs: int = 1) -> None:
        if every_n_val_epochs < 1:
            raise UsageError(f"every_n_val_epochs must be >= 1, got {every_n_val_epochs}")
        self.filename = filename
        self.every_n_val_epochs = every_n_val_epochs
        self._val_epochs = 0

    def _figure(self, pl_module: L.LightningModule, stage: str) -> Figure | None:
        matrix = getattr(pl_module, "confusion_matrices", {}).get(stage)
        if matrix is None:
            return None
        return confusion_matrix_figure(matrix, pl_module.class_names, f"{stage} confusion matrix")

    @staticmethod
    def _log(trainer: L.Trainer, tag: str, fig: Figure) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger):
                logger.experiment.add_figure(tag, fig, global_step=trainer.global_step, close=False)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Log the validation figure (not during the sanity check)."""
        if trainer.sanity_checking or trainer.fast_dev_run or not trainer.is_global_zero:
            return
        self._val_epochs += 1
        if (self._val_epochs - 1) % self.every_n_val_epochs:
            return
        if (fig := self._figure(pl_module, "val")) is not None:
            self._log(trainer, "val/confusion_matrix", fig)

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Log the test figure and write it to ``<run>/<filename>`` atomically."""
        if trainer.fast_dev_run:
            return
        run_dir = trainer.log_dir  # a collective under DDP (rank 0 broadcasts it): every rank must ask
        if not trainer.is_global_zero or (fig := self._figure(pl_module, "test")) is None:
            return
        self._log(trainer, "test/confusion_matrix", fig)
        path = Path(run_dir or trainer.default_root_dir) / self.filename
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
        rank_zero_info(f"Confusion matrix written to {path}")
