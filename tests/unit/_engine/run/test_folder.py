"""One run, one directory, whatever the loggers (_engine/run/folder.py), checked on configs as LightningCLI parses
them. The fits themselves (events, metrics.csv and an MLflow run side by side, a resume) are in
tests/e2e/test_tracking.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from jsonargparse import Namespace

from litstarter.__main__ import main as litstarter_main
from litstarter._engine.run.claim import claim_run_directory, end_claim
from litstarter._engine.run.folder import check_loggers, resume_in_the_checkpoints_run, share_one_run_directory
from litstarter.errors import UsageError
from tests.helpers import CONFIGS, DEFAULT_CONFIG

TB = "lightning.pytorch.loggers.TensorBoardLogger"
CSV = "lightning.pytorch.loggers.CSVLogger"
MLFLOW = "lightning.pytorch.loggers.MLFlowLogger"


def logger(class_path: str, **init_args) -> Namespace:
    return Namespace(class_path=class_path, init_args=Namespace(**init_args))


def config(*loggers: Namespace, **top) -> Namespace:
    return Namespace(trainer=Namespace(logger=list(loggers)), **top)


def test_every_file_logger_writes_into_the_first_ones_next_version(tmp_path: Path) -> None:
    (tmp_path / "digits" / "version_0").mkdir(parents=True)
    (tmp_path / "digits" / "version_4").mkdir()
    cfg = config(
        logger(TB, save_dir=str(tmp_path), name="digits", version=None),
        logger(CSV, save_dir=str(tmp_path), name="digits", version=None),
    )
    try:
        claim_run_directory(cfg)  # as LitStarterCLI does first
        share_one_run_directory(cfg)
    finally:
        end_claim()
    tb, csv = cfg.trainer.logger
    assert tb.init_args.version == csv.init_args.version == "version_5"
    assert (
        Path(csv.init_args.save_dir) / csv.init_args.name / csv.init_args.version == tmp_path / "digits" / "version_5"
    )


def test_mlflow_defaults_to_a_sqlite_store_under_the_save_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    cfg = config(
        logger(CSV, save_dir=str(tmp_path), name="d", version=None),
        logger(MLFLOW, save_dir=str(tmp_path), tracking_uri=None),
    )
    cfg.trainer.logger[0].init_args.version = "version_0"  # as claimed
    share_one_run_directory(cfg)
    mlflow = cfg.trainer.logger[1].init_args
    assert mlflow.tracking_uri == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert mlflow.artifact_location == str(tmp_path / "mlartifacts") and mlflow.run_name == str(
        tmp_path / "d" / "version_0"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    cfg = config(
        logger(CSV, save_dir=str(tmp_path), name="d", version=None),
        logger(MLFLOW, save_dir=str(tmp_path), tracking_uri=None),
    )
    share_one_run_directory(cfg)
    assert cfg.trainer.logger[1].init_args.tracking_uri == "http://mlflow.example:5000"


def test_a_logger_without_a_folder_cannot_come_first(tmp_path: Path) -> None:
    cfg = config(
        logger(MLFLOW, save_dir=str(tmp_path), tracking_uri=None),
        logger(TB, save_dir=str(tmp_path), name="d", version=None),
    )
    with pytest.raises(UsageError, match="put a TensorBoardLogger or CSVLogger first"):
        check_loggers(cfg)


def test_a_resume_from_last_keeps_the_run_for_a_list_of_loggers(tmp_path: Path, monkeypatch) -> None:
    # mlflow.set_tracking_uri exports MLFLOW_TRACKING_URI: an earlier in-process MLflow fit must not pick the store
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run = tmp_path / "digits" / "version_2"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"")
    (run / "mlflow.json").write_text('{"run_id": "abc", "tracking_uri": "sqlite:///%s"}' % (tmp_path / "mlflow.db"))
    cfg = config(
        logger(TB, save_dir=str(tmp_path), name="digits", version=None),
        logger(CSV, save_dir=str(tmp_path), name="digits", version=None),
        logger(MLFLOW, save_dir=str(tmp_path), tracking_uri=None, run_id=None),
        ckpt_path=str(run / "checkpoints" / "last.ckpt"),
    )
    assert resume_in_the_checkpoints_run(cfg)
    share_one_run_directory(cfg)
    tb, csv, mlflow = cfg.trainer.logger
    assert tb.init_args.version == csv.init_args.version == "version_2" and mlflow.init_args.run_id == "abc"


def test_mlflow_selected_but_not_installed_is_one_line_saying_how_to_install(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if the extra were not installed
    monkeypatch.chdir(tmp_path)  # the config writes under ./runs
    args = ["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "logger" / "mlflow.yaml")]
    code = litstarter_main([*args, "--data.init_args.num_workers=0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == (
        "litstarter fit: error: trainer.logger selects MLFlowLogger, but mlflow is not installed: "
        "pip install -e '.[mlflow]'"
    )
    assert not list(tmp_path.iterdir()), "nothing may run before the message"
