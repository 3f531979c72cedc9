"""Fold assignment without training: copies grouped, classes stratified, seeded; cv's one-line refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from litstarter.errors import BadInputError
from litstarter.extras.cv.folds import assign_folds, copy_groups
from tests.helpers import DEFAULT_CONFIG, assert_refused, run_cases


def _hashes(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{int(v):016x}" for v in rng.integers(0, 2**63, size=n, dtype=np.int64)]


def test_exact_and_near_copies_and_their_chains_share_a_fold() -> None:
    n = 60
    sha = [f"file{i}" for i in range(n)]
    phash = _hashes(n)
    sha[7] = sha[3]  # the same bytes under two names
    phash[20] = f"{int(phash[10], 16) ^ 0b111:016x}"  # 3 bits apart: a near-duplicate
    phash[30] = f"{int(phash[20], 16) ^ (0b1111 << 8):016x}"  # near 20, not near 10: joined through it
    phash[40] = ""  # flat: pairs with nothing
    labels = np.arange(n) % 3
    groups = copy_groups(sha, phash)
    assert groups[3] == groups[7] and groups[10] == groups[20] == groups[30]
    assert len(np.unique(groups)) == n - 3
    for seed in range(5):
        folds = assign_folds(labels, groups, 5, seed, ["a", "b", "c"])
        assert folds[3] == folds[7] and folds[10] == folds[20] == folds[30]
        for fold in range(5):  # stratified: each fold holds each class about equally
            counts = np.bincount(labels[folds == fold], minlength=3)
            assert counts.max() - counts.min() <= 2, counts
    assert (assign_folds(labels, groups, 5, 1, list("abc")) == assign_folds(labels, groups, 5, 1, list("abc"))).all()
    assert (assign_folds(labels, groups, 5, 1, list("abc")) != assign_folds(labels, groups, 5, 2, list("abc"))).any()


def test_exact_copies_only_without_phash() -> None:
    groups = copy_groups(["x", "y", "x", "z"], None)
    assert groups.tolist() == [0, 1, 0, 3]


def test_a_class_with_fewer_distinct_images_than_folds_is_named() -> None:
    labels = np.array([0] * 10 + [1] * 4)
    with pytest.raises(BadInputError, match="class 'cat' has 4 distinct"):
        assign_folds(labels, np.arange(14), 5, 0, ["dog", "cat"])


@pytest.mark.slow
def test_cv_refuses_bad_options_in_one_line(tmp_path: Path) -> None:
    base = ["cv", "--config", str(DEFAULT_CONFIG), f"--trainer.logger.init_args.save_dir={tmp_path}"]
    results = run_cases(tmp_path, [
        {"argv": [*base, "--folds", "1"]},
        {"argv": [*base, "--ckpt_path", "x.ckpt"]},
        {"argv": [*base, "--data.init_args.split_file=missing.csv"]},
    ])  # fmt: skip
    assert_refused(results[0], 2, "--folds", "1")
    assert_refused(results[1], 2, "--ckpt_path")
    assert_refused(results[2], 1, "missing.csv")


def test_mlflow_runs_get_the_study_and_fold_tags() -> None:
    from litstarter.extras.cv.fold_run import TagMlflowRuns

    class Client:
        tags: list = []

        def set_tag(self, run_id, key, value):
            self.tags.append((run_id, key, value))

    MLFlowLogger = type("MLFlowLogger", (), {"experiment": Client(), "run_id": "r1"})  # noqa: N806
    TensorBoardLogger = type("TensorBoardLogger", (), {})  # noqa: N806
    trainer = type("Trainer", (), {"loggers": [TensorBoardLogger(), MLFlowLogger()], "is_global_zero": True})()
    TagMlflowRuns({"cv_study": "runs/x/cv-5", "cv_fold": "2"}).on_fit_start(trainer, None)
    assert Client.tags == [("r1", "cv_study", "runs/x/cv-5"), ("r1", "cv_fold", "2")]
