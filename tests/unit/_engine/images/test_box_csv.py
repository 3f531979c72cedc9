"""A boxes CSV loses nothing without a word: an empty label beside a box, a coordinate that is not a finite number,
an unknown split and an image given two splits are refused naming the file, the line and the column; a header that
is almost a boxes CSV's is named as such; ``./a.png`` and ``a.png`` are one image; the all-empty row stays a
negative image."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from litstarter.data import ImageFolderDataModule
from litstarter.data.digit_boxes import write_box_csv, write_canvases
from litstarter.errors import BadInputError


@pytest.fixture(scope="module")
def boxes(tmp_path_factory) -> Path:
    """12 canvases with ``boxes.csv`` (``path,x1,y1,x2,y2,label,split``). Copy before editing."""
    root = tmp_path_factory.mktemp("boxes") / "root"
    write_box_csv(root, write_canvases(root, 12, seed=8))
    return root


def with_rows(boxes: Path, tmp_path: Path, edit) -> Path:
    root = shutil.copytree(boxes, tmp_path / "root")
    lines = (root / "boxes.csv").read_text().splitlines()
    (root / "boxes.csv").write_text("\n".join(edit(lines)) + "\n")
    return root


def module(root: Path, cache: Path) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(root), labels="boxes.csv", image_size=64, crop_pct=1.0, cache_dir=str(cache))


def cell(line: int, column: str, value: str):
    """An edit that sets ``column`` of the CSV's ``line`` (1: the header) to ``value``."""
    columns = ["path", "x1", "y1", "x2", "y2", "label", "split"]

    def edit(lines: list[str]) -> list[str]:
        fields = lines[line - 1].split(",")
        fields[columns.index(column)] = value
        lines[line - 1] = ",".join(fields)
        return lines

    return edit


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [("label", "", "empty beside a box (a box needs its class)"), ("y1", "nan", "'nan' is not a finite number"),
     ("x2", "inf", "'inf' is not a finite number"), ("x1", "3px", "'3px' is not a finite number"),
     ("y2", "", "empty"), ("split", "holdout", "'holdout' is not one of")],
)  # fmt: skip
def test_a_bad_cell_is_refused_naming_the_file_the_line_and_the_column(boxes, tmp_path, column, value, why) -> None:
    root = with_rows(boxes, tmp_path, cell(4, column, value))
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path / "cache")
    message = str(refused.value)
    assert message.startswith(f"data.labels '{root / 'boxes.csv'}': 1 bad cell(s): line 4 column {column}: {why}")
    assert "\n" not in message and not (tmp_path / "cache").exists()


def test_an_image_in_two_splits_is_refused_naming_both_lines(boxes, tmp_path) -> None:
    root = with_rows(boxes, tmp_path, cell(3, "split", "val"))  # line 2 is the same image, in train
    with pytest.raises(
        BadInputError, match=r"line 3 column split: 'images/train/0000.png' is in split val, but line 2"
    ):
        module(root, tmp_path / "cache")


@pytest.mark.parametrize(
    ("header", "lacks", "has"), [("y_2", "['y2']", "['y_2']"), ("class", "['label']", "['class']")]
)
def test_a_header_almost_a_boxes_csvs_is_named_not_read_as_another_labels_file(boxes, tmp_path, header, lacks, has):
    column = "y2" if header == "y_2" else "label"
    root = with_rows(boxes, tmp_path, lambda lines: [lines[0].replace(column, header), *lines[1:]])
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path / "cache")
    message = str(refused.value)
    assert message == (
        f"data.labels '{root / 'boxes.csv'}' has the header {(root / 'boxes.csv').read_text().splitlines()[0]}: it"
        f" lacks {lacks} and has {has} instead; a boxes CSV's header is path,x1,y1,x2,y2,label[,split] (line 1)"
    )


def test_two_spellings_of_one_path_are_one_image_and_the_all_empty_row_a_negative(boxes, tmp_path) -> None:
    def respell(lines: list[str]) -> list[str]:  # every other row spelt ./images/...: an image's rows both ways
        return [
            lines[0],
            *(f"./{line}" if n % 2 else line for n, line in enumerate(lines[1:])),
            "images/test/0011.png,,,,,,test",
        ]

    root = with_rows(boxes, tmp_path, respell)
    plain = module(boxes, tmp_path / "plain")
    again = module(root, tmp_path / "again")
    assert again.folder.listing().layout.split(" (")[1] == plain.folder.listing().layout.split(" (")[1]
    assert "(12 images," in again.folder.listing().layout and "0 image(s) without" in plain.folder.listing().layout


def test_one_image_under_two_names_is_refused(boxes, tmp_path) -> None:
    root = shutil.copytree(boxes, tmp_path / "root")
    (root / "alias.png").symlink_to(root / "images" / "train" / "0000.png")
    with open(root / "boxes.csv", "a") as f:
        f.write("alias.png,1,1,9,9,3,train\n")
    with pytest.raises(BadInputError, match=r"names 1 image\(s\) that another entry names too .*'.*alias.png' \(= "):
        module(root, tmp_path / "cache").load_cache()
