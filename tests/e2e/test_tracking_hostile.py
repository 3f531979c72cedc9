"""MLflow settings that cannot work are refused in one line before training, through the real CLI: a tracking
server that is down, one that accepts connections but never answers, an empty experiment name. And CSV logs in
a folder the run shares or continues: Lightning's writer is replaced by one that continues ``metrics.csv``."""

from __future__ import annotations

import csv
import socket
import warnings
from pathlib import Path

import lightning as L
import pytest
from lightning.pytorch.demos.boring_classes import BoringModel
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from litstarter._engine.run.tracking import continue_csv_logs
from tests.helpers import CONFIGS, DEFAULT_CONFIG, assert_refused, free_port, run_cases

pytestmark = pytest.mark.slow

FIT = ["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "logger" / "mlflow.yaml")]
FIT += ["--data.init_args.num_workers=0", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1"]
EMPTY_NAME = """trainer:
  logger:
    - class_path: lightning.pytorch.loggers.CSVLogger
      init_args: {save_dir: runs, name: digits}
    - class_path: lightning.pytorch.loggers.MLFlowLogger
      init_args: {experiment_name: "", save_dir: runs, tracking_uri: null}
"""


def test_a_dead_or_silent_tracking_server_and_an_empty_experiment_name_are_refused_before_training(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty_name.yaml").write_text(EMPTY_NAME)
    dead = f"http://127.0.0.1:{free_port()}"
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent_uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        results = run_cases(
            tmp_path,
            [
                {"argv": FIT, "env": {"MLFLOW_TRACKING_URI": dead}},
                {"argv": FIT, "env": {"MLFLOW_TRACKING_URI": silent_uri, "MLFLOW_HTTP_REQUEST_TIMEOUT": "2"}},
                {"argv": [*FIT, "--config", "empty_name.yaml"], "env": {"MLFLOW_TRACKING_URI": ""}},
            ],
            timeout=240,  # MLflow alone retries a dead server for minutes
        )
    assert_refused(results[0], 2, dead, "does not answer (cannot connect)")
    assert_refused(results[1], 2, silent_uri, "no answer within 2 s")
    assert_refused(results[2], 2, "experiment_name is ''")
    assert not list(tmp_path.rglob("*.ckpt")) and not list(tmp_path.rglob("metrics.csv")), "nothing trained"


class LoggingModel(BoringModel):
    """BoringModel, logging its losses."""

    def training_step(self, batch, batch_idx):
        out = super().training_step(batch, batch_idx)
        self.log("train_loss", out["loss"])
        return out

    def validation_step(self, batch, batch_idx):
        out = super().validation_step(batch, batch_idx)
        self.log("val_loss", out["x"])
        return out


def fit_boring(run_dir: Path, epochs: int, ckpt_path: str | None = None) -> None:
    """A tiny fit with TensorBoard and CSV sharing ``run_dir``, as RunCLI points them, with continue_csv_logs."""
    loggers = [
        TensorBoardLogger(run_dir.parent, name="", version=run_dir.name),
        CSVLogger(run_dir.parent, name="", version=run_dir.name),
    ]
    trainer = L.Trainer(
        max_epochs=epochs,
        limit_train_batches=2,
        limit_val_batches=1,
        logger=loggers,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=run_dir,
    )
    continue_csv_logs(trainer)
    trainer.fit(LoggingModel(), ckpt_path=ckpt_path)


def test_csv_logs_continue_in_a_shared_folder_without_the_deletion_warning(tmp_path: Path) -> None:
    run = tmp_path / "version_0"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_boring(run, epochs=1)
        (ckpt,) = run.rglob("*.ckpt")
        fit_boring(run, epochs=2, ckpt_path=str(ckpt))  # a resume into the same folder
    assert not [w for w in caught if "will be deleted" in str(w.message)], [str(w.message) for w in caught]
    assert list(run.glob("events.out.tfevents.*"))
    with open(run / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted({int(r["epoch"]) for r in rows}) == [0, 1], "the resumed epoch is added to the first one's rows"
    assert [int(r["step"]) for r in rows] == sorted(int(r["step"]) for r in rows)
