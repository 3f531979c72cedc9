"""The callbacks every run gets: a line when the validation split is too small to select a checkpoint on."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest

from litstarter._engine.run.callbacks import WarnOnTinyValidation


def fit_start(labels, num_classes: int, caplog) -> str:
    trainer = SimpleNamespace(
        is_global_zero=True,
        datamodule=SimpleNamespace(val_set=SimpleNamespace(labels=np.asarray(labels)), num_classes=num_classes),
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


def test_a_validation_split_of_fifty_with_five_a_class_says_nothing(caplog) -> None:
    assert fit_start([c for c in range(10) for _ in range(5)], 10, caplog) == ""
