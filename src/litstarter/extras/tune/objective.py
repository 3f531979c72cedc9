"""Before the first trial: is ``objective.metric`` one the task logs?

No list of names is kept here (it would drift from the task): the names come from running the trial's own fit
for one training and one validation batch (Lightning's ``fast_dev_run``), with its loggers swapped for one
CSV logger in a throwaway folder. What the trainer holds after that validation, and at the end of that fit, is
what :class:`~litstarter.extras.tune.trial.ReportToTrial` can read in a trial (the task's metrics, the
learning rates, anything a callback logs). Nothing is kept: no run folder, no checkpoint, no MLflow run.
"""

from __future__ import annotations

import difflib
import io
import json
import logging
import sys
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Callback

from litstarter.errors import UsageError
from litstarter.extras.tune.search_space import SearchSpace

SHOWN = 20  # names listed in the refusal; the rest are counted
QUIET = ("lightning.pytorch", "lightning.fabric", "litstarter")  # loggers whose info lines the dry run hides


class RecordMetricNames(Callback):
    """Keep the names in ``trainer.callback_metrics`` after each validation and when the fit ends."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """After a validation: what ReportToTrial sees."""
        if not trainer.sanity_checking:
            self.names |= set(trainer.callback_metrics)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """At the end of the fit: the epoch-end train metrics too, which later validations see."""
        self.names |= set(trainer.callback_metrics)


@contextmanager
def quiet_logs():
    """Only warnings from Lightning's and our loggers while the dry run runs."""
    saved = {name: logging.getLogger(name).level for name in QUIET}
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def logged_metric_names(fit_args: list[str]) -> list[str]:
    """The metric names a fit with ``fit_args`` logs, from one batch of training and one of validation.

    Args:
        fit_args: ``fit`` and its arguments, as a trial runs it (no drawn values needed).
    """
    from litstarter.cli import main as cli_main

    record = RecordMetricNames()
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory(prefix="litstarter-tune-") as tmp:
        logger = json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": tmp}})
        args = [
            *fit_args,
            f"--trainer.logger={logger}",  # not the user's: no MLflow run, no folder under their save_dir
            "--trainer.fast_dev_run=1",
            "--trainer.log_every_n_steps=1",  # what is logged only on logging steps (learning rates, grad norm)
            f"--trainer.default_root_dir={tmp}",
            "--test_after_fit=false",
        ]
        try:
            with quiet_logs(), redirect_stdout(out), redirect_stderr(err):
                cli_main(args, callbacks=[record], run_dir=Path(tmp) / "dry_run")
        except BaseException:
            sys.stderr.write(err.getvalue())  # what the fit said, then its error as it would in a trial
            raise
    return sorted(record.names)


def check_objective(space: SearchSpace, fit_args: list[str]) -> None:
    """``objective.metric`` must be among :func:`logged_metric_names`.

    Raises:
        UsageError: One line with the closest logged name (``did you mean``) and the names logged.
    """
    names = logged_metric_names(fit_args)
    if space.metric in names:
        return
    close = difflib.get_close_matches(space.metric, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    raise UsageError(
        f"search space {space.path}: objective.metric {space.metric!r} is not a metric the task logs{hint} "
        f"(it logs {shown or 'nothing'})"
    )
