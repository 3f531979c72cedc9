"""The data's own facts checked before a model is built: too few classes is one line in the data's terms; a
checkpoint that does not fit the model names the shape keys to set."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from litstarter._engine.checkpoints import CheckpointError
from litstarter._engine.run.checks import num_classes_of
from litstarter.errors import UsageError


def data(target_kind: str, names: list[str]) -> SimpleNamespace:
    facts = {"channels": 3, "image_size": (32, 32), "class_names": names}
    return SimpleNamespace(num_classes=len(names), root="pool", target_kind=target_kind, **facts)


def test_too_few_classes_are_named_as_folders_or_as_labels_file_rows() -> None:
    assert num_classes_of(data("class", ["cat", "dog"])) == 2
    with pytest.raises(UsageError, match=r"'pool' has 1 class \['cat'\]: .*one folder per class"):
        num_classes_of(data("class", ["cat"]))
    with pytest.raises(UsageError) as caught:
        num_classes_of(data("label_set", []))
    message = str(caught.value)
    assert "data.labels names 0 label(s) []" in message and "folder" not in message, message


def test_one_class_of_boxes_is_a_detectors_data_and_no_class_is_refused_in_plain_words() -> None:
    """The background is implicit in detection: one class (pedestrians, defects) is valid; masks need two."""
    assert num_classes_of(data("boxes", ["person"])) == 1
    with pytest.raises(UsageError, match=r"^'pool' has 0 classes \[\]: the data needs at least 1$"):
        num_classes_of(data("boxes", []))
    with pytest.raises(UsageError, match=r"^'pool' has 1 class \['a'\]: the data needs at least 2$"):
        num_classes_of(data("mask", ["a"]))


def test_a_fit_validating_nothing_is_refused_while_a_callback_monitors_validation() -> None:
    from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint

    from litstarter._engine.run.checks import check_validation_runs

    monitoring = [EarlyStopping("val/select", mode="max"), ModelCheckpoint(monitor="val/select"), LearningRateMonitor()]
    with pytest.raises(UsageError) as caught:
        check_validation_runs(SimpleNamespace(limit_val_batches=0, callbacks=monitoring))
    message = str(caught.value)
    assert (
        message.startswith("trainer.limit_val_batches 0 runs no validation") and "EarlyStopping (val/select)" in message
    )
    for runs in (
        SimpleNamespace(limit_val_batches=0.0, callbacks=monitoring[2:]),
        SimpleNamespace(limit_val_batches=1.0, callbacks=monitoring),
    ):
        check_validation_runs(runs)  # nothing monitors validation, or validation runs
    with pytest.raises(UsageError):
        check_validation_runs(SimpleNamespace(limit_val_batches=0.0, callbacks=monitoring[:1]))


def test_a_detection_checkpoint_from_before_head_convs_names_the_key_to_set(tmp_path) -> None:
    """A checkpoint written before ``model.head_convs`` has FCOS's four convolutions a branch; resumed with two it is
    refused in one line naming the key and both values, not a list of keys alone."""
    import torch

    from litstarter._engine.run.checks import check_checkpoint_fits
    from litstarter.tasks.detection import ObjectDetector

    shape = {"num_classes": 3, "image_size": [48, 48], "in_channels": 1}
    old = ObjectDetector(**shape)
    hparams = {k: v for k, v in dict(old.hparams).items() if k != "head_convs"}  # as written before the key
    path = tmp_path / "old.ckpt"
    torch.save({"state_dict": old.state_dict(), "hyper_parameters": hparams}, path)
    check_checkpoint_fits(path, ObjectDetector(**shape))  # the default head is the old one: it fits
    with pytest.raises(CheckpointError) as refused:
        check_checkpoint_fits(path, ObjectDetector(head_convs=2, **shape))
    said = str(refused.value)
    assert "unexpected net.detector.head.classification_head.conv.6.weight" in said and "\n" not in said
    assert "Its shape keys differ: model.head_convs 4 there, 2 here; set them as in the run that saved it" in said
