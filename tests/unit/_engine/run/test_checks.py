"""The data's own facts checked before a model is built: too few classes is one line in the data's terms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from litstarter._engine.errors import UsageError
from litstarter._engine.run.checks import num_classes_of


def data(task: str, names: list[str]) -> SimpleNamespace:
    facts = {"channels": 3, "image_size": (32, 32), "class_names": names}
    return SimpleNamespace(num_classes=len(names), root="pool", task=task, **facts)


def test_too_few_classes_are_named_as_folders_or_as_labels_file_rows() -> None:
    assert num_classes_of(data("single_label", ["cat", "dog"])) == 2
    with pytest.raises(UsageError, match=r"'pool' has 1 class \['cat'\]: .*one folder per class"):
        num_classes_of(data("single_label", ["cat"]))
    with pytest.raises(UsageError) as caught:
        num_classes_of(data("multilabel", []))
    message = str(caught.value)
    assert "data.labels names 0 label(s) []" in message and "folder" not in message, message
