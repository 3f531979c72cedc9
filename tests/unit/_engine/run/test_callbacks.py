"""The callbacks every run gets: a line when the validation split is too small to select a checkpoint on, and the
line on what a mid-epoch resume trains."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest

from litstarter._engine.run.callbacks import SayWhatAMidEpochResumeReplays, WarnOnTinyValidation


def fit_start(labels, num_classes: int, caplog) -> str:
    trainer = SimpleNamespace(
        is_global_zero=True,
        datamodule=SimpleNamespace(val_set=SimpleNamespace(targets=np.asarray(labels)), num_classes=num_classes),
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="litstarter"):
        WarnOnTinyValidation().on_fit_start(trainer, None)
    return caplog.text


@pytest.mark.parametrize(
    ("labels", "num_classes", "said"),
    [
        ([0] * 8 + [1] * 8, 2, "16 images (8 of its smallest class)"),  # the tiny-photos case: val/acc saturates
        ([0] * 100 + [1] * 3, 2, "103 images (3 of its smallest class)"),  # enough images, a class too thin
        ([0] * 100 + [1] * 100, 3, "200 images (0 of its smallest class)"),  # a class missing from validation
    ],
)
def test_a_small_or_thin_validation_split_gets_one_line(labels, num_classes: int, said: str, caplog) -> None:
    text = fit_start(labels, num_classes, caplog)
    assert said in text and "data.val_fraction" in text and text.count("\n") == 1


def test_the_line_names_each_images_share_in_words_that_hold_for_every_task(caplog) -> None:
    text = fit_start([0] * 8 + [1] * 8, 2, caplog)  # a segmentation split is counted the same way, per image
    assert "each image is 6% of what it is scored on" in text and "accuracy" not in text


def test_a_validation_split_of_fifty_with_five_a_class_says_nothing(caplog) -> None:
    assert fit_start([c for c in range(10) for _ in range(5)], 10, caplog) == ""


class StatefulLoader:
    """A loader with Lightning's Stateful protocol and nothing behind it."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def resume_line(loader, datamodule, caplog) -> list[tuple[int, str]]:
    """``(level, message)`` of what a resume at batch 4 of 10 says."""
    progress = SimpleNamespace(epoch_loop=SimpleNamespace(batch_progress=SimpleNamespace(current=SimpleNamespace(
        completed=4))))  # fmt: skip
    trainer = SimpleNamespace(fit_loop=progress, num_training_batches=10, ckpt_path="last.ckpt", current_epoch=1,
                              train_dataloader=loader, datamodule=datamodule)  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="litstarter"):
        SayWhatAMidEpochResumeReplays().on_train_start(trainer, None)
    return [(r.levelno, r.getMessage()) for r in caplog.records]


def test_a_mid_epoch_resume_says_what_the_rest_of_the_epoch_trains(caplog) -> None:
    ((level, said),) = resume_line([1, 2], SimpleNamespace(), caplog)  # a plain loader: the first batches again
    assert level == logging.WARNING and "keeps no position" in said and "first 6 batches again" in said
    ((level, said),) = resume_line(StatefulLoader(), SimpleNamespace(), caplog)  # a position, not a promise
    assert level == logging.WARNING and "nothing checks that it continues with batch 5" in said
    assert "resumes_mid_epoch_exactly" in said
    exact = SimpleNamespace(resumes_mid_epoch_exactly=True)  # as StreamingDataModule declares
    ((level, said),) = resume_line(StatefulLoader(), exact, caplog)
    assert level == logging.INFO and "continues with batch 5" in said
