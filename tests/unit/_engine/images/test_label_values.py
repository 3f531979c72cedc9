"""Numeric labels files: a target beyond float32 is refused when the file is read, naming its cell; a stray number
in a 0/1 label column, which makes the whole file numbers, is named when a multi-label task is given it."""

from __future__ import annotations

from pathlib import Path

import pytest

from litstarter._engine.images.labels_csv import read_labels_file
from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError, UsageError
from litstarter.tasks.multilabel import MultilabelClassifier
from litstarter.tasks.regression import ImageRegressor
from tests.helpers import write_image


def labels_root(tmp_path: Path, header: str, cells: list[str]) -> Path:
    """``root/img/<i>.png`` and ``root/labels.csv``: ``header``, then one row per image with its ``cells``."""
    root = tmp_path / "root"
    rows = [header]
    for i, cell in enumerate(cells):
        write_image(root / "img" / f"{i}.png", seed=i)
        rows.append(f"img/{i}.png,{cell}")
    (root / "labels.csv").write_text("\n".join(rows) + "\n")
    return root


@pytest.mark.parametrize("value", ["3.9e39", "-1e300"])
def test_a_target_beyond_float32_is_refused_naming_the_file_line_column_and_value(tmp_path, value) -> None:
    root = labels_root(tmp_path, "path,age", [str(i) for i in range(11)] + [value])
    with pytest.raises(BadInputError) as refused:
        read_labels_file(root / "labels.csv", root)
    message = str(refused.value)
    assert f"labels.csv' line 13: column 'age' is '{value}', beyond the float32 range" in message, message
    assert "\n" not in message


def test_the_largest_float32_targets_are_read(tmp_path) -> None:
    root = labels_root(tmp_path, "path,age", ["3.4e38", "-3.4e38", "1e-50", "7"])
    rows, form, _ = read_labels_file(root / "labels.csv", root)
    assert form == "values" and [row.values[0] for row in rows] == [3.4e38, -3.4e38, 1e-50, 7.0]


def test_a_stray_number_in_a_0_1_label_column_is_named_when_a_multilabel_task_gets_the_file(tmp_path) -> None:
    cells = [f"{i % 2},{(i // 2) % 2}" for i in range(11)] + ["2,1"]
    root = labels_root(tmp_path, "path,cat,dog", cells)
    dm = ImageFolderDataModule(str(root), labels="labels.csv", image_size=16, cache_dir=str(tmp_path / "c"))
    assert dm.target_kind == "value"  # one cell of 2 makes the file numbers
    with pytest.raises(UsageError) as refused:
        MultilabelClassifier.check_targets(dm)
    message = str(refused.value)
    assert message.startswith(f"data.labels '{root / 'labels.csv'}' line 13: column 'cat' is 2, where"), message
    assert "0 or 1" in message and "\n" not in message
    ImageRegressor.check_targets(dm)  # numbers are a regression's: no complaint


def test_a_single_value_column_given_to_a_multilabel_task_keeps_the_kinds_message(tmp_path) -> None:
    root = labels_root(tmp_path, "path,age", [str(i) for i in range(12)])
    dm = ImageFolderDataModule(str(root), labels="labels.csv", image_size=16, cache_dir=str(tmp_path / "c"))
    with pytest.raises(UsageError, match="holds value targets but the task is MultilabelClassifier"):
        MultilabelClassifier.check_targets(dm)
