"""What every logger receives besides metrics: the full resolved config, and for MLflow the run's files.

- :class:`SaveConfigAndLogIt` writes ``config.yaml`` as LightningCLI always does, then logs the resolved config,
  flattened to dotted keys (``model.optimizer.init_args.lr``), as hyperparameters to every logger.
- :func:`record_mlflow_runs` writes ``<run>/mlflow.json`` (the MLflow run id), so a resume continues that run
  (set back to RUNNING: Lightning's SLURM requeue finalises the loggers, marking it FINISHED, before it saves).
- :func:`log_run_files_to_mlflow` uploads ``config.yaml`` and ``metrics.json`` as MLflow artifacts.
- :func:`check_mlflow_settings` refuses, in one line and before training, an empty ``experiment_name`` and a
  tracking server that does not answer within :data:`SERVER_TIMEOUT_S` (MLflow itself would retry for minutes).
- :func:`continue_csv_logs` starts each CSV logger's writer before Lightning does. The run folder is shared
  (TensorBoard's events and ``config.yaml`` are already in it) or continued (a resume), and Lightning's own
  writer then warns that "previous log files in this directory will be deleted", and on a resume does delete
  ``metrics.csv``; ours appends to it.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

import lightning as L
import yaml
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import CSVLogger, MLFlowLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from litstarter.errors import UsageError

from ..atomic_io import write_json
from .folder import MLFLOW_RUN_FILE

# Not hyperparameters: where this run writes (it differs between a run and its resume) and what it resumes from.
NOT_LOGGED = ("ckpt_path", "resume", "config", "trainer.logger")
RUN_FILES = ("config.yaml", "config.resume.yaml", "metrics.json")
# How long the check before training waits for an MLflow server (less if MLFLOW_HTTP_REQUEST_TIMEOUT says so).
SERVER_TIMEOUT_S = 10.0


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"model": {"dropout": 0.1}}`` -> ``{"model.dropout": 0.1}``; lists stay values."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


class SaveConfigAndLogIt(SaveConfigCallback):
    """LightningCLI's config saving, plus the resolved config as hyperparameters for every logger.

    TensorBoard and CSV keep them in ``hparams.yaml``; MLflow keeps them as run params. MLflow params cannot
    change once logged, so on a resume into the same MLflow run only keys it lacks are logged.

    This is the one set of hyperparameters: Lightning's own (the model's and data module's ``__init__``
    arguments under their bare names, ``lr_scheduler/init_args/...``, ``_instantiator``) is switched off. The
    dotted keys are what the command line, the config files and ``tune`` use, and they hold the trainer's and the
    data's settings too; Lightning's set repeats the model's part under other names.
    """

    def save_config(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Log the flattened config (rank 0; LightningCLI calls this once, at setup, before Lightning logs its
        own set, which it then skips)."""
        # tests/test_compat.py: "lightning _log_hyperparams"
        pl_module._log_hyperparams = False  # what save_hyperparameters(logger=False) sets: Lightning logs nothing
        if trainer.datamodule is not None:
            trainer.datamodule._log_hyperparams = False
        config = yaml.safe_load(self.parser.dump(self.config, skip_unset=False)) or {}
        params = {
            k: v for k, v in flatten(config).items() if not any(k == n or k.startswith(n + ".") for n in NOT_LOGGED)
        }
        for logger in trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                known = logger.experiment.get_run(logger.run_id).data.params
                # Lightning logs a list under key/<i>/...: a key the run has in any form is the run's already.
                logged = {name.split("/", 1)[0] for name in known}
                logger.log_hyperparams({k: v for k, v in params.items() if k not in logged})
            else:
                logger.log_hyperparams(params)


def mlflow_loggers(trainer: L.Trainer) -> list[MLFlowLogger]:
    """The trainer's MLflow loggers (empty on ranks other than 0, where loggers do nothing)."""
    if not trainer.is_global_zero:
        return []
    return [logger for logger in trainer.loggers if isinstance(logger, MLFlowLogger)]


def shown_uri(uri: str) -> str:
    """``uri`` without a password (``http://user:secret@host`` -> ``http://user:***@host``)."""
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", uri)


def server_timeout() -> float:
    """:data:`SERVER_TIMEOUT_S`, or ``$MLFLOW_HTTP_REQUEST_TIMEOUT`` (MLflow's own per-request limit) if lower."""
    try:
        return min(SERVER_TIMEOUT_S, float(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", SERVER_TIMEOUT_S)))
    except ValueError:
        return SERVER_TIMEOUT_S


def speaks_mlflow(response) -> bool:
    """Whether an answer to MLflow's experiments search is MLflow's: a JSON object (its result, or its
    ``{"error_code": ...}``), or a 401 / 403 (its authentication, MLflow's to explain)."""
    if response.status_code in (401, 403):
        return True
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and (response.ok or "error_code" in body)


def check_tracking_server(uri: str) -> None:
    """An ``http(s)://`` tracking URI must answer within :func:`server_timeout` seconds, and answer as MLflow does
    (:func:`speaks_mlflow`). Other stores (``sqlite:///``, a folder) are local: nothing to wait for.

    Raises:
        UsageError: One line naming the URI and what happened.
    """
    if not uri.lower().startswith(("http://", "https://")):
        return
    import requests  # mlflow's own HTTP client, so proxies and certificates are read the same way

    timeout, api = server_timeout(), "/api/2.0/mlflow/experiments/search"
    try:
        response = requests.get(f"{uri.rstrip('/')}{api}", params={"max_results": 1}, timeout=timeout)
    except requests.Timeout:
        reason = f"no answer within {timeout:g} s"
    except requests.ConnectionError:  # refused, or no such host
        reason = "cannot connect"
    except requests.RequestException as err:
        reason = type(err).__name__
    else:
        if speaks_mlflow(response):
            return
        raise UsageError(
            f"{shown_uri(uri)} answers HTTP but is not an MLflow tracking server ({api} gave {response.status_code}"
            f" {response.headers.get('content-type') or 'without a Content-Type'}); set MLFLOW_TRACKING_URI (or"
            " trainer.logger's tracking_uri) to the MLflow server's address"
        )
    raise UsageError(
        f"the MLflow tracking server {shown_uri(uri)} does not answer ({reason}); start it, or set "
        "MLFLOW_TRACKING_URI (or trainer.logger's tracking_uri) to one that runs"
    )


def check_mlflow_settings(tracking_uri: str | None, experiment_name: Any) -> None:
    """Before training: an MLflow logger names its experiment, and its tracking server answers.

    Args:
        tracking_uri: The logger's store (``None``: ``$MLFLOW_TRACKING_URI``, then MLflow's default, local).
        experiment_name: The logger's ``experiment_name``.

    Raises:
        UsageError: One line naming the setting.
    """
    if not isinstance(experiment_name, str) or not experiment_name.strip():
        raise UsageError(
            f"trainer.logger: MLFlowLogger's experiment_name is {experiment_name!r}; give the experiment a name, "
            "e.g. experiment_name: digits"
        )
    check_tracking_server(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "")


def check_mlflow_loggers(trainer: L.Trainer) -> None:
    """:func:`check_mlflow_settings` for each of the trainer's MLflow loggers, before any of them connects."""
    for logger in mlflow_loggers(trainer):  # the logger keeps both private; reading them connects to nothing
        # tests/test_compat.py: "lightning MLFlowLogger._tracking_uri and _experiment_name"
        check_mlflow_settings(getattr(logger, "_tracking_uri", None), getattr(logger, "_experiment_name", None))


def record_mlflow_runs(trainer: L.Trainer) -> None:
    """Check the MLflow loggers (:func:`check_mlflow_loggers`), then write ``<run>/mlflow.json`` with the MLflow
    run id (creating the run now), for resumes to continue it."""
    loggers = mlflow_loggers(trainer)
    if not loggers:
        return
    check_mlflow_loggers(trainer)
    import mlflow  # only with an MLflow logger: mlflow is an extra

    run_dir = trainer.log_dir
    for logger in loggers:
        run_id = logger.run_id  # starts the run, and sets mlflow's tracking URI to the logger's
        if logger.experiment.get_run(run_id).info.status != "RUNNING":  # a resume of a run Lightning finalised
            logger.experiment.update_run(run_id, status="RUNNING")  # (the FINISHED a SLURM requeue's save wrote)
        record = {"run_id": run_id, "tracking_uri": mlflow.get_tracking_uri(), "experiment_id": logger.experiment_id}
        write_json(Path(run_dir) / MLFLOW_RUN_FILE, record)


def log_run_files_to_mlflow(trainer: L.Trainer) -> None:
    """Upload the run directory's ``config.yaml`` (and the resume's) and ``metrics.json`` to each MLflow run."""
    loggers = mlflow_loggers(trainer)
    if not loggers or trainer.log_dir is None:  # no MLflow, or no run folder (fast_dev_run, logger: false)
        return
    run_dir = Path(trainer.log_dir)
    for logger in loggers:
        for name in RUN_FILES:
            if (run_dir / name).is_file():
                logger.experiment.log_artifact(logger.run_id, str(run_dir / name))


class ContinuedCSVWriter(ExperimentWriter):
    """Lightning's CSV writer for a folder that is this run's own: an existing ``metrics.csv`` is continued
    (its columns read back, new rows appended) rather than deleted with a warning."""

    def _check_log_dir_exists(self) -> None:  # tests/test_compat.py: "lightning ExperimentWriter._check_log_dir_exists"
        if self._fs.isfile(self.metrics_file_path):
            with self._fs.open(self.metrics_file_path, "r", newline="") as file:
                self.metrics_keys = next(csv.reader(file), [])


def continue_csv_logs(trainer: L.Trainer) -> None:
    """Give each CSV logger a :class:`ContinuedCSVWriter` before Lightning starts the loggers (it creates every
    logger's writer before any callback's ``setup``). Call it once the Trainer exists, before ``fit``,
    ``validate``, ``test`` or ``predict``; a logger whose writer exists already is left alone.

    Private attributes (``_experiment``, ``_fs``): CSVLogger has no public way to choose its writer. A Lightning
    release that renames them makes this a no-op, and tests/e2e/test_tracking.py sees the warning again."""
    if not trainer.is_global_zero:  # other ranks write no files
        return
    # tests/test_compat.py: "lightning CSVLogger._fs and _experiment"
    for logger in trainer.loggers:
        if isinstance(logger, CSVLogger) and getattr(logger, "_experiment", True) is None:
            logger._fs.makedirs(logger.root_dir, exist_ok=True)  # what CSVLogger.experiment does first
            logger._experiment = ContinuedCSVWriter(log_dir=logger.log_dir)
