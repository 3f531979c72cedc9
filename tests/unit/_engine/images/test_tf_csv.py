"""The TensorFlow Object Detection CSV, as Roboflow exports it (``<split>/_annotations.csv`` beside the images) and
named by ``data.labels``: splits from the folders (``valid`` is val) or the file's name, ``width,height`` checked
against the image, every cell checked before any image is opened, a header almost this one named as such, a missing
image or a box outside it named by its line (or skipped and counted), a filename outside data.root refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from tests.box_sets import CLASSES, pictures, refusal, skipped, write

SHOWN = pictures(12, seed=3)


@pytest.fixture(scope="module")
def tf(tmp_path_factory) -> Path:
    """12 pictures as Roboflow's TensorFlow CSV export. Copy before editing."""
    root = tmp_path_factory.mktemp("tf") / "root"
    write("tf_csv", root, SHOWN)
    return root


def with_line(tf: Path, tmp_path: Path, line: int, column: str, value: str, csv: str = "train/_annotations.csv"):
    """A copy whose ``csv`` has ``column`` of ``line`` (1: the header) set to ``value``."""
    root = shutil.copytree(tf, tmp_path / "root")
    lines = (root / csv).read_text().splitlines()
    columns = lines[0].split(",")
    fields = lines[line - 1].split(",")
    fields[columns.index(column) if column in columns else int(column)] = value
    lines[line - 1] = ",".join(fields)
    (root / csv).write_text("\n".join(lines) + "\n")
    return root


def test_roboflows_export_reads_its_splits_and_classes(tf) -> None:
    layout = detect_layout(tf)
    assert layout.form == "tf_csv" and layout.class_names == list(CLASSES) and layout.labels == tf
    splits = {path.name: split for path, split, _ in layout.annotated.images}
    assert splits == {p.name: p.split for p in SHOWN}


def test_one_csv_named_by_data_labels_finds_its_images_and_takes_its_name_as_split(tf, tmp_path) -> None:
    root = tmp_path / "tutorial"
    for p in SHOWN[:8]:
        (root / "images" / "train").mkdir(parents=True, exist_ok=True)
        shutil.copy(tf / "train" / p.name, root / "images" / "train" / p.name)
    (root / "data").mkdir()
    shutil.copy(tf / "train" / "_annotations.csv", root / "data" / "train_labels.csv")
    layout = detect_layout(root, "data/train_labels.csv")
    assert layout.form == "tf_csv" and {split for _, split, _ in layout.annotated.images} == {"train"}
    assert all(path.parent == root / "images" / "train" for path, _, _ in layout.annotated.images)


def test_a_width_that_is_not_the_images_is_refused_naming_the_line(tf, tmp_path) -> None:
    root = with_line(tf, tmp_path, 2, "width", "640")
    message = refusal(root, tmp_path / "cache")
    assert (
        f"'{root}': 1 bad box(es) or annotation(s): train/_annotations.csv line 2: states the size 640x60 but"
        f" 'train/{SHOWN[0].name}' is 80x60 (as shown, after its EXIF orientation)" in message
    ), message


def test_a_box_outside_its_image_is_named_by_its_line_or_skipped_and_counted(tf, tmp_path) -> None:
    root = with_line(tf, tmp_path, 2, "xmax", "95")
    x1, y1, _, y2, c = SHOWN[0].boxes[0]
    said = f"train/_annotations.csv line 2 [{x1:g}, {y1:g}, 95, {y2:g}] ({CLASSES[c]}): outside the 80x60 image"
    assert said in refusal(root, tmp_path / "cache")
    dm, warning = skipped(root, tmp_path / "skip")
    assert f"left out 1 bad box(es) (data.on_bad_box: skip): {said}" in warning, warning


def test_a_missing_image_is_named_by_its_line(tf, tmp_path) -> None:
    root = with_line(tf, tmp_path, 2, "filename", "gone.png")
    assert (
        "_annotations.csv line 2: filename 'gone.png' is not found beside the CSV, under data.root, images/ or the"
        " split's folder" in refusal(root, tmp_path / "cache")
    )


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [("class", "", "class: empty beside a box (a box needs its class)"),
     ("ymin", "nan", "ymin: 'nan' is not a finite number"),
     ("height", "tall", "height: 'tall' is not a number"), ("filename", "", "filename: empty")],
)  # fmt: skip
def test_a_bad_cell_is_refused_naming_the_line_and_column_whatever_on_bad_box_says(tf, tmp_path, column, value, why):
    root = with_line(tf, tmp_path, 3, column, value)
    message = refusal(root, tmp_path / "cache", on_bad_box="skip")
    assert message.startswith(f"'{root / 'train' / '_annotations.csv'}': 1 bad cell(s): line 3 column {why}"), message


@pytest.mark.parametrize("name", ["../../outside.png", "/etc/passwd"])
def test_a_filename_outside_the_data_folder_is_refused_before_any_image_is_opened(tf, tmp_path, name) -> None:
    root = with_line(tf, tmp_path, 2, "filename", name)
    why = "absolute" if name.startswith("/") else "leaves data.root"
    assert refusal(root, tmp_path / "cache").startswith(
        f"'{root / 'train' / '_annotations.csv'}': 1 row(s) name a file outside data.root '{root}': line 2 '{name}'"
        f" ({why})."
    )


def test_a_header_almost_the_tensorflow_csvs_is_named_as_such(tf, tmp_path) -> None:
    root = with_line(tf, tmp_path, 1, "4", "x_min")
    assert refusal(root, tmp_path / "cache") == (
        f"'{root / 'train' / '_annotations.csv'}' has the header filename,width,height,class,x_min,ymin,xmax,ymax: it"
        " lacks ['xmin'] and has ['x_min'] instead; the TensorFlow CSV's header is"
        " filename,width,height,class,xmin,ymin,xmax,ymax (line 1)"
    )


def test_two_csvs_of_one_split_are_refused_naming_both(tf, tmp_path) -> None:
    root = shutil.copytree(tf, tmp_path / "root")
    shutil.copy(root / "train" / "_annotations.csv", root / "train" / "more.csv")
    message = refusal(root, tmp_path / "cache")
    assert "are both TensorFlow CSVs of split train: name the one to read with data.labels" in message, message
