"""``litstarter cv`` on a task defined outside the library (``tests/examples/my_task.py``): the fit config names it,
and the folds' predictions are read by its answers, looked up by the task's name (never by its class)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from litstarter.extras.cv.command import resolved_config
from litstarter.extras.cv.fold_run import task_probabilities
from tests.examples.my_task import FocalClassifier
from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, make_image_folder, run_litstarter

OWN = "tests.examples.my_task.FocalClassifier"


def test_the_fit_config_cv_resolves_keeps_the_task_of_ones_own() -> None:
    config = resolved_config(["fit", "--config", str(DEFAULT_CONFIG), "--model", OWN, "--model.gamma", "1.5"])
    assert config["model"]["class_path"] == OWN and config["model"]["init_args"]["gamma"] == 1.5


def test_a_folds_predictions_are_read_by_the_answers_of_the_tasks_name() -> None:
    model = FocalClassifier(num_classes=3, in_channels=3, image_size=(8, 8), class_names=["a", "b", "c"])
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    probabilities = task_probabilities(model, logits)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-6)


@pytest.mark.slow
def test_cv_runs_a_study_of_a_task_of_ones_own(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "data", {"a": 6, "b": 6}, colours="distinct", spread=25, noise=20)
    args = ["cv", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--folds", "2",
            "--model", OWN, "--model.gamma", "1.0", f"--data.init_args.root={root}",
            f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}", "--trainer.max_epochs=1",
            "--data.init_args.num_workers=0", "--data.init_args.batch_size=8", "--baseline=false"]  # fmt: skip
    run_litstarter(args, timeout=600)
    study = tmp_path / "runs" / "image_folder" / "cv-2"
    metrics = json.loads((study / "cv_metrics.json").read_text())
    assert [f["fold"] for f in metrics["folds"]] == [1, 2] and 0 <= metrics["oof"]["acc"] <= 1
    with open(study / "oof_predictions.csv", newline="") as handle:
        oof = list(csv.DictReader(handle))
    assert len(oof) == sum(f["n_val"] for f in metrics["folds"]) >= 8 and all(
        abs(float(r["prob_a"]) + float(r["prob_b"]) - 1) < 1e-4 for r in oof
    )
    assert OWN in (study / "fold_1" / "config.yaml").read_text()
