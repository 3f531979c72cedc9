"""Callbacks that tests inject into a run (``--trainer.callbacks+=...``) to make faults happen on cue."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import lightning as L
import torch


class KillAtStep(L.Callback):
    """SIGKILL this process when the batch that would become optimiser step ``step`` starts.

    The same uncatchable signal an OOM killer or a pre-empted node delivers, at a step chosen by the test.

    Args:
        step: ``trainer.global_step`` at which to die.
    """

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


class PoisonWeightsAtStep(L.Callback):
    """At ``step``, copy the checkpoint folder to ``snapshot`` and set one head weight to NaN.

    The copy records the checkpoints as they were just before the fault, for a byte-wise comparison later.

    Args:
        step: ``trainer.global_step`` at which to poison the weights.
        snapshot: Where to copy ``<run>/checkpoints`` to.
    """

    def __init__(self, step: int, snapshot: str) -> None:
        self.step = step
        self.snapshot = snapshot

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            shutil.copytree(Path(trainer.checkpoint_callback.dirpath), self.snapshot)
            with torch.no_grad():
                pl_module.net.head.weight[0, 0] = float("nan")


class DumpRankMetrics(L.Callback):
    """At the end of fit, write this rank's view of a few metrics to ``<folder>/rank<r>.json``.

    Args:
        folder: Where to write (outside the run directory, which only rank 0 may write to).
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.train_loss_steps: list[float] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        # The value as logged (after any sync_dist reduction), not the raw loss of this rank's batch.
        self.train_loss_steps.append(float(trainer.callback_metrics["train/loss_step"]))

    def on_fit_end(self, trainer, pl_module) -> None:
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1}
        data = {
            "metrics": metrics,
            "train_loss_steps": self.train_loss_steps,
            "global_step": trainer.global_step,
            "pid": os.getpid(),
        }
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        (Path(self.folder) / f"rank{trainer.global_rank}.json").write_text(json.dumps(data))


class MakeCheckpointsReadOnly(L.Callback):
    """When epoch ``epoch`` starts, make the run's checkpoint folder read-only (``chmod 555``).

    Run the process without root's override rights (``setpriv --bounding-set=-dac_override,...``): the next
    checkpoint save then fails with a PermissionError, which Lightning's atomic save swallows.

    Args:
        epoch: The epoch at whose start the folder turns read-only.
    """

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        if trainer.current_epoch == self.epoch and trainer.is_global_zero:
            os.chmod(trainer.checkpoint_callback.dirpath, 0o555)


class StallMetric(L.Callback):
    """Overwrite a logged metric with one constant after every validation, as a run whose metric has stopped
    improving. Runs before ModelCheckpoint and EarlyStopping read it (Lightning moves those to the end).

    Args:
        name: The metric, e.g. ``val/acc``.
        value: The constant it reads as.
    """

    def __init__(self, name: str, value: float = 0.5) -> None:
        self.name, self.value = name, value

    def on_validation_end(self, trainer, pl_module) -> None:
        trainer.callback_metrics[self.name] = torch.tensor(self.value)


class SignalAtStep(L.Callback):
    """Send this process ``signum`` (SIGUSR1 by default: what SLURM sends before a time limit) when the batch that
    would become optimiser step ``step`` starts.

    Args:
        step: ``trainer.global_step`` at which to signal.
        signum: The signal's number.
    """

    def __init__(self, step: int, signum: int = int(signal.SIGUSR1)) -> None:
        self.step, self.signum = step, signum

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), self.signum)


class RecordMlflowStatus(L.Callback):
    """When training starts, write each MLflow logger's run status to ``path`` (one per line): what a resume set
    it to before its first step.

    Args:
        path: The file to write.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def on_train_start(self, trainer, pl_module) -> None:
        from lightning.pytorch.loggers import MLFlowLogger

        runs = [lg for lg in trainer.loggers if isinstance(lg, MLFlowLogger)]
        statuses = [lg.experiment.get_run(lg.run_id).info.status for lg in runs]
        Path(self.path).write_text("".join(f"{s}\n" for s in statuses))
