"""``litstarter cv`` on multi-label data: folds stratified on label sets (every label's frequency close to the
pool's), split files that keep each image's label set, and an out-of-fold file with every image once."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from litstarter.errors import BadInputError
from litstarter.extras.cv.folds import assign_folds
from tests.helpers import CONFIGS, DEFAULT_CONFIG, FOLDER_CONFIG, run_litstarter, write_digit_composites


def composite_label_sets(images: int, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """The ``(N, 10)`` label sets of a composite folder's labels.csv, and its label names."""
    rng = np.random.default_rng(seed)
    names = [str(d) for d in range(10)]
    targets = np.zeros((images, 10), dtype=np.float32)
    for row in targets:  # 1-3 digits, skewed towards the low ones (as examples/multilabel_digits.py skews them)
        row[rng.choice(10, size=rng.integers(1, 4), replace=False, p=np.linspace(2, 1, 10) / 15)] = 1
    return targets, names


def test_label_set_folds_keep_every_labels_frequency_within_two_points_and_copies_together() -> None:
    targets, names = composite_label_sets(600)
    groups = np.arange(len(targets))
    groups[1::50] = groups[0::50][: len(groups[1::50])]  # some copies: pairs that must share a fold
    folds = assign_folds(targets, groups, 5, seed=3, names=names)
    assert sorted(np.unique(folds)) == list(range(5))
    pool = targets.mean(axis=0)
    for fold in range(5):
        held = targets[folds == fold]
        assert abs(len(held) / len(targets) - 0.2) < 0.02
        assert np.abs(held.mean(axis=0) - pool).max() <= 0.02, (fold, held.mean(axis=0) - pool)
    for group in np.unique(groups):
        assert len(np.unique(folds[groups == group])) == 1
    rare = np.zeros((20, 2), dtype=np.float32)
    rare[:, 0], rare[:3, 1] = 1, 1
    with pytest.raises(BadInputError, match="label 'owl' is on 3 distinct image"):
        assign_folds(rare, np.arange(20), 5, seed=0, names=["cat", "owl"])


@pytest.mark.slow
def test_cv_on_a_multilabel_labels_file_trains_every_fold_and_writes_label_sets(tmp_path: Path) -> None:
    root = write_digit_composites(tmp_path / "composites", 120)
    save_dir = tmp_path / "runs"
    args = ["cv", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG),
            "--config", str(CONFIGS / "task" / "multilabel.yaml"), "--folds", "2",
            f"--data.init_args.root={root}", "--data.init_args.labels=labels.csv", "--data.init_args.image_size=32",
            f"--trainer.logger.init_args.save_dir={save_dir}", "--trainer.max_epochs=1",
            "--data.init_args.num_workers=0", "--data.init_args.batch_size=32", "--baseline=false"]  # fmt: skip
    proc = run_litstarter(args, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (study,) = save_dir.rglob("cv-2")
    with open(root / "labels.csv", newline="") as handle:
        given = {row["path"]: set(filter(None, row["labels"].split(";"))) for row in csv.DictReader(handle)}
    with open(study / "folds" / "fold_1.csv", newline="") as handle:
        split = list(csv.DictReader(handle))
    assert {r["path"]: set(filter(None, r["labels"].split(";"))) for r in split} == {
        r["path"]: given[r["path"]] for r in split
    }
    with open(study / "oof_predictions.csv", newline="") as handle:
        oof = list(csv.DictReader(handle))
    assert len(oof) == len({r["path"] for r in oof}) == len(split)  # every pool image once
    assert all(set(filter(None, r["labels"].split(";"))) == given[r["path"]] for r in oof)
    probabilities = np.array([[float(r[f"prob_{d}"]) for d in range(10)] for r in oof])
    assert not np.allclose(probabilities.sum(axis=1), 1.0)  # a sigmoid per label, not a softmax
