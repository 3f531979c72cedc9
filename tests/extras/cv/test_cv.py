"""``litstarter cv`` through the real CLI, on a tiny generated image folder (2 epochs a fold).

One uninterrupted study with ``--refit``, and one killed during fold 3 and run again: every claim about the folds,
the predictions, the metrics, the resume and the refit is checked on those two studies.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, REPO, make_image_folder, run_litstarter

pytestmark = pytest.mark.slow
FOLDS = 5
COUNTS = {"train": {"a": 10, "b": 10, "c": 10}, "test": {"a": 3, "b": 3, "c": 3}}


def cv_args(root: Path, save_dir: Path, *extra: str) -> list[str]:
    return ["cv", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--folds", str(FOLDS),
            f"--data.init_args.root={root}", f"--trainer.logger.init_args.save_dir={save_dir}",
            "--trainer.max_epochs=2", "--data.init_args.num_workers=0", "--data.init_args.batch_size=16",
            "--baseline=false", *extra]  # fmt: skip


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = make_image_folder(tmp_path_factory.mktemp("cv") / "data", COUNTS, colours="distinct", spread=25, noise=20)
    shutil.copy(root / "train/b/004.png", root / "train/b/copy_of_004.png")  # two names, the same bytes
    return root


@pytest.fixture(scope="module")
def study(folder: Path, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    save_dir = tmp_path_factory.mktemp("runs")
    proc = run_litstarter(cv_args(folder, save_dir, "--refit"), timeout=900)
    return save_dir / "image_folder" / f"cv-{FOLDS}", proc


def test_folds_are_disjoint_keep_copies_together_and_leave_test_out(study) -> None:
    study_dir, _ = study
    held_out = [{r["path"] for r in rows(study_dir / "folds" / f"fold_{i}.csv") if r["split"] == "val"}
                for i in range(1, FOLDS + 1)]  # fmt: skip
    everything = set().union(*held_out)
    assert sum(len(v) for v in held_out) == len(everything) == 31  # no image in two folds' validation sets
    assert all(len(v) >= 5 for v in held_out)
    (together,) = [v for v in held_out if "train/b/004.png" in v]
    assert "train/b/copy_of_004.png" in together
    for i in range(1, FOLDS + 1):
        assert not any(r["path"].startswith("test/") for r in rows(study_dir / "folds" / f"fold_{i}.csv"))
        config = (study_dir / f"fold_{i}" / "config.yaml").read_text()  # the fold reruns from its own config
        assert str((study_dir / "folds" / f"fold_{i}.csv").resolve()) in config


def test_oof_has_every_training_image_once_and_matches_pooled_accuracy(study) -> None:
    study_dir, proc = study
    oof = rows(study_dir / "oof_predictions.csv")
    paths = [r["path"] for r in oof]
    assert len(paths) == len(set(paths)) == 31 and all(p.startswith("train/") for p in paths)
    assert all(abs(sum(float(r[f"prob_{c}"]) for c in "abc") - 1) < 1e-4 for r in oof)
    metrics = json.loads((study_dir / "cv_metrics.json").read_text())
    correct = sum(f["metrics"]["val/acc"] * f["n_val"] for f in metrics["folds"])
    oof_acc = sum(r["label"] == r["predicted"] for r in oof) / len(oof)
    assert oof_acc == pytest.approx(correct / 31, abs=1e-6) == pytest.approx(metrics["oof"]["acc"])
    assert "out-of-fold accuracy" in proc.stdout and "mean±std" in proc.stdout


def test_metrics_hold_each_fold_and_mean_and_std(study) -> None:
    import numpy as np

    metrics = json.loads((study[0] / "cv_metrics.json").read_text())
    assert [f["fold"] for f in metrics["folds"]] == list(range(1, FOLDS + 1))
    for name, summary in metrics["summary"].items():
        values = [f["metrics"][name] for f in metrics["folds"]]
        assert summary["mean"] == pytest.approx(np.mean(values))
        assert summary["std"] == pytest.approx(np.std(values, ddof=1))
    assert {"val/acc", "val/loss"} <= set(metrics["summary"])


def test_refit_trains_on_all_training_images_and_tests_once(study) -> None:
    import yaml

    study_dir, _ = study
    metrics = json.loads((study_dir / "cv_metrics.json").read_text())
    refit = metrics["refit"]
    assert refit["n_test"] == 9 and refit["epochs"] == metrics["chosen_epochs"]
    split = rows(study_dir / "folds" / "refit.csv")
    assert sum(r["split"] == "train" for r in split) == 31
    assert sorted(r["path"].split("/")[0] for r in split if r["split"] != "train") == ["test"] * 9
    config = yaml.safe_load((study_dir / "refit" / "config.yaml").read_text())
    assert config["trainer"]["limit_val_batches"] == 0  # never evaluated while training: once, at the end
    assert config["trainer"]["max_epochs"] == refit["epochs"]
    assert not any("EarlyStopping" in c["class_path"] for c in config["trainer"]["callbacks"])
    assert 0 <= refit["metrics"]["test/acc"] <= 1


def test_killed_study_resumes_skipping_finished_folds(study, folder: Path, tmp_path: Path) -> None:
    save_dir = tmp_path / "runs"
    study_dir = save_dir / "image_folder" / f"cv-{FOLDS}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-m", "litstarter", *cv_args(folder, save_dir)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 600
    while not (study_dir / "fold_3" / "checkpoints" / "last.ckpt").exists() and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (study_dir / "fold_3" / "cv_fold.json").exists()
    again = run_litstarter(cv_args(folder, save_dir), timeout=900)
    assert "fold 1 finished earlier: skipped" in again.stderr and "fold 2 finished earlier: skipped" in again.stderr
    assert "fold 3 finished earlier" not in again.stderr
    uninterrupted = json.loads((study[0] / "cv_metrics.json").read_text())
    uninterrupted.pop("refit")
    assert json.loads((study_dir / "cv_metrics.json").read_text()) == uninterrupted
