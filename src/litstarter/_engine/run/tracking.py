"""What every logger receives besides metrics: the full resolved config, and for MLflow the run's files.

- :class:`SaveConfigAndLogIt` writes ``config.yaml`` as LightningCLI always does, then logs the resolved config,
  flattened to dotted keys (``model.optimizer.init_args.lr``), as hyperparameters to every logger.
- :func:`record_mlflow_runs` writes ``<run>/mlflow.json`` (the MLflow run id), so a resume continues that run.
- :func:`log_run_files_to_mlflow` uploads ``config.yaml`` and ``metrics.json`` as MLflow artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import yaml
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import MLFlowLogger

from ..atomic_io import write_json
from .folder import MLFLOW_RUN_FILE

# Not hyperparameters: where this run writes (it differs between a run and its resume) and what it resumes from.
NOT_LOGGED = ("ckpt_path", "config", "trainer.logger")
RUN_FILES = ("config.yaml", "config.resume.yaml", "metrics.json")


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
    """

    def save_config(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Log the flattened config (rank 0; LightningCLI calls this once, at setup)."""
        config = yaml.safe_load(self.parser.dump(self.config, skip_none=False)) or {}
        params = {
            k: v for k, v in flatten(config).items() if not any(k == n or k.startswith(n + ".") for n in NOT_LOGGED)
        }
        for logger in trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                known = logger.experiment.get_run(logger.run_id).data.params
                logger.log_hyperparams({k: v for k, v in params.items() if k not in known})
            else:
                logger.log_hyperparams(params)


def mlflow_loggers(trainer: L.Trainer) -> list[MLFlowLogger]:
    """The trainer's MLflow loggers (empty on ranks other than 0, where loggers do nothing)."""
    if not trainer.is_global_zero:
        return []
    return [logger for logger in trainer.loggers if isinstance(logger, MLFlowLogger)]


def record_mlflow_runs(trainer: L.Trainer) -> None:
    """Write ``<run>/mlflow.json`` with the MLflow run id (creating the run now), for resumes to continue it."""
    loggers = mlflow_loggers(trainer)
    if not loggers:
        return
    import mlflow  # only with an MLflow logger: mlflow is an extra

    run_dir = trainer.log_dir
    for logger in loggers:
        run_id = logger.run_id  # starts the run, and sets mlflow's tracking URI to the logger's
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
