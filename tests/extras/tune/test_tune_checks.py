"""``litstarter tune`` refuses, in one line and before any trial, a search file without an objective, an objective
metric the task never logs (with the closest name it does log), and MLflow settings no trial could log to; and
the metric names it checks against are those a real trial's validations see."""

from __future__ import annotations

from pathlib import Path

import pytest

from litstarter.cli import main as cli_main
from litstarter.extras.tune.objective import RecordMetricNames, logged_metric_names
from tests.extras.tune.helpers import tune_args
from tests.helpers import CONFIGS, DEFAULT_CONFIG, assert_refused, free_port, run_cases

pytestmark = pytest.mark.slow

PARAMS = "params:\n  model.dropout: {type: float, low: 0.0, high: 0.5}\n"
SHORT = ["--trials", "1", "--data.init_args.num_workers=0", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
MLFLOW = ["--config", str(CONFIGS / "logger" / "mlflow.yaml")]
EMPTY_NAME = """trainer:
  logger:
    - {class_path: lightning.pytorch.loggers.CSVLogger, init_args: {save_dir: runs}}
    - {class_path: lightning.pytorch.loggers.MLFlowLogger, init_args: {experiment_name: ''}}
"""


def test_a_missing_objective_a_misspelt_metric_and_unusable_mlflow_stop_tune_before_any_trial(tmp_path: Path) -> None:
    (tmp_path / "no_objective.yaml").write_text(PARAMS)
    (tmp_path / "typo.yaml").write_text("objective: {metric: val/accuracy}\n" + PARAMS)
    (tmp_path / "good.yaml").write_text("objective: {metric: val/acc}\n" + PARAMS)
    (tmp_path / "empty_name.yaml").write_text(EMPTY_NAME)
    dead = f"http://127.0.0.1:{free_port()}"
    results = run_cases(
        tmp_path,
        [
            {"argv": tune_args(tmp_path, "no_objective.yaml", *SHORT)},
            {"argv": tune_args(tmp_path, "typo.yaml", *SHORT)},
            {"argv": [*tune_args(tmp_path, "good.yaml", *SHORT), *MLFLOW], "env": {"MLFLOW_TRACKING_URI": dead}},
            {"argv": [*tune_args(tmp_path, "good.yaml", *SHORT), "--config", "empty_name.yaml"]},
        ],
        timeout=240,  # MLflow alone retries a dead server for minutes
    )
    assert_refused(results[0], 2, "no_objective.yaml", "the objective section is missing")
    message = assert_refused(results[1], 2, "typo.yaml", "'val/accuracy'", "did you mean 'val/acc'?")
    assert "val/loss" in message, "the names the task logs are listed"
    assert_refused(results[2], 2, dead, "does not answer")
    assert_refused(results[3], 2, "experiment_name is ''")
    assert not any("trial 0" in r["stderr"] for r in results), "no trial started"
    assert not (tmp_path / "digits").exists() and not list(tmp_path.rglob("*.ckpt")), "no study folder, no run"


def test_the_names_checked_are_those_a_trials_validations_see(tmp_path: Path) -> None:
    """The check runs one batch of the trial's fit; a real two-epoch fit's validations may see no other name."""
    fit = ["fit", "--config", str(DEFAULT_CONFIG), "--data.init_args.num_workers=0"]
    fit += [f"--trainer.logger.init_args.save_dir={tmp_path}", "--trainer.enable_progress_bar=false"]
    checked = logged_metric_names(fit)
    assert not any(tmp_path.iterdir()), "the check leaves nothing behind"
    seen = RecordMetricNames()
    short = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3", "--trainer.limit_val_batches=2"]
    cli_main([*fit, *short, "--test_after_fit=false", "--trainer.enable_model_summary=false"], callbacks=[seen])
    assert {"val/acc", "val/loss", "train/loss_step"} <= set(checked)
    assert seen.names <= set(checked), sorted(seen.names - set(checked))
