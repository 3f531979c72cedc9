"""Loggers by config: TensorBoard + CSV + MLflow in one run directory, read back with MLflow's own client,
and a resume that keeps the run directory, the MLflow run and the rows of ``metrics.csv``."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml

from tests.helpers import CONFIGS, DEFAULT_CONFIG, run_cli

pytestmark = pytest.mark.slow


def test_tensorboard_csv_and_mlflow_share_one_run_and_a_resume_continues_the_mlflow_run(
    tmp_path: Path, monkeypatch, recwarn
) -> None:
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)  # configs/logger/all.yaml writes under ./runs; nothing may land in ./mlruns
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    args = [
        "fit",
        "--config",
        str(DEFAULT_CONFIG),
        "--config",
        str(CONFIGS / "logger/all.yaml"),
        "--data.init_args.num_workers=0",
    ]
    run_cli([*args, "--trainer.max_epochs=2", "--model.optimizer.init_args.lr=0.0042"])
    run = tmp_path / "runs" / "digits" / "version_0"
    assert sorted(p.name for p in (tmp_path / "runs" / "digits").iterdir()) == ["version_0"]  # no sibling for CSV
    assert list(run.glob("events.out.tfevents.*")) and (run / "metrics.csv").is_file()
    with open(run / "metrics.csv", newline="") as f:
        assert "val/acc" in next(csv.reader(f))
    run_id = json.loads((run / "mlflow.json").read_text())["run_id"]

    run_cli(
        [
            *args,
            "--trainer.max_epochs=3",
            "--model.optimizer.init_args.lr=0.0042",
            f"--ckpt_path={run / 'checkpoints' / 'last.ckpt'}",
        ]
    )
    assert not [w for w in recwarn if "will be deleted" in str(w.message)], "the CSV logger shares the run's folder"
    with open(run / "metrics.csv", newline="") as f:
        epochs = {int(row["epoch"]) for row in csv.DictReader(f) if row["epoch"]}
    assert {0, 1, 2} <= epochs, "the resume continues metrics.csv (the first fit trained epochs 0 and 1)"
    assert sorted(p.name for p in (tmp_path / "runs" / "digits").iterdir()) == ["version_0"]
    assert json.loads((run / "mlflow.json").read_text())["run_id"] == run_id

    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "digits"]
    runs = client.search_runs([experiment.experiment_id])
    assert [r.info.run_id for r in runs] == [run_id], "the resume must log into the same MLflow run"
    mlflow_run = client.get_run(run_id)
    params = mlflow_run.data.params
    assert params["model.init_args.optimizer.init_args.lr"] == "0.0042"  # the task is a class_path now
    # One set: the config's dotted keys, not also Lightning's (``lr``, ``optimizer/init_args/lr``, ``_instantiator``)
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert {key.split(".")[0] for key in params} <= set(config), sorted(k for k in params if "." not in k)
    assert [m.step for m in client.get_metric_history(run_id, "val/acc")][-1] > 0
    assert len(client.get_metric_history(run_id, "val/acc")) == 3  # two epochs, then the resumed third
    assert "test/acc" in mlflow_run.data.metrics
    # The linear baseline beside the network's test scores, in each reader as in metrics.json.
    baseline = json.loads((run / "metrics.json").read_text())["test/baseline_acc"]
    assert mlflow_run.data.metrics["test/baseline_acc"] == pytest.approx(baseline)
    assert {"test/acc", "test/baseline_acc", "test/baseline_f1_macro"} <= tensorboard_scalars(run)
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"config.yaml", "metrics.json", "config.resume.yaml"} <= artifacts
    assert not (tmp_path / "mlruns").exists()
    assert os.path.commonpath([mlflow_run.info.artifact_uri.removeprefix("file://"), str(tmp_path / "runs")]) == str(
        tmp_path / "runs"
    )


def tensorboard_scalars(run: Path) -> set[str]:
    """The scalar tags of every TensorBoard event file in ``run``, as TensorBoard's own reader sees them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    return {
        tag
        for events in run.glob("events.out.tfevents.*")
        for tag in EventAccumulator(str(events)).Reload().Tags()["scalars"]
    }
