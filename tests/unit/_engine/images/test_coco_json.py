"""COCO json read before any image is opened: a ``file_name`` outside data.root, an image id or a file given twice,
a category id or name given twice and an unknown split are each refused in one line naming the json and the
entries; a ``bbox`` that is not four finite numbers is a bad annotation, never a crash or a silent drop."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from litstarter.data import ImageFolderDataModule
from litstarter.data.digit_boxes import write_canvases, write_coco
from litstarter.errors import BadInputError


@pytest.fixture(scope="module")
def coco(tmp_path_factory) -> Path:
    """12 canvases with ``annotations/instances_{train,val,test}.json``. Copy before editing."""
    root = tmp_path_factory.mktemp("coco") / "root"
    write_coco(root, write_canvases(root, 12, seed=4))
    return root


def edited(coco: Path, tmp_path: Path, edit) -> tuple[Path, Path]:
    """A copy of ``coco`` whose train json ``edit(data)`` changed: ``(root, json)``."""
    root = shutil.copytree(coco, tmp_path / "root")
    path = root / "annotations" / "instances_train.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return root, path


def refusal(root: Path, tmp_path: Path) -> str:
    with pytest.raises(BadInputError) as refused:
        ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "cache")).load_cache()
    assert not (tmp_path / "cache").exists()
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def test_file_names_outside_the_root_are_refused_each_named_with_its_image_id(coco, tmp_path) -> None:
    def escape(data: dict) -> None:
        names = ["../outside/secret.png", str(tmp_path / "x.png"), "/etc/passwd"]
        for image, name in zip(data["images"][:3], names, strict=True):
            image["file_name"] = name

    root, path = edited(coco, tmp_path, escape)
    message = refusal(root, tmp_path)
    assert message.startswith(f"'{path}': 3 image(s) name a file outside data.root '{root}'"), message
    named = ["image 0 '../outside/secret.png' (leaves data.root)", "image 1 '", "image 2 '/etc/passwd' (absolute)"]
    assert all(n in message for n in named), message


def test_an_image_id_given_twice_is_refused_naming_both_file_names(coco, tmp_path) -> None:
    def twice(data: dict) -> None:
        data["images"][1]["id"] = data["images"][0]["id"]

    root, path = edited(coco, tmp_path, twice)
    assert refusal(root, tmp_path) == (
        f"'{path}': image id 0 is given twice, for 'images/train/0000.png' and 'images/train/0001.png'; give each"
        " image its own id (an annotation's image_id would name either)"
    )


def test_one_file_under_two_image_ids_is_refused(coco, tmp_path) -> None:
    def same_file(data: dict) -> None:
        data["images"][1]["file_name"] = "./" + data["images"][0]["file_name"]

    root, _ = edited(coco, tmp_path, same_file)
    assert "images 0 and 1 both name 'images/train/0000.png'" in refusal(root, tmp_path)


@pytest.mark.parametrize("twice", ["name", "id"])
def test_a_category_name_or_id_given_twice_is_refused_naming_both(coco, tmp_path, twice: str) -> None:
    def repeat(data: dict) -> None:
        data["categories"][1][twice] = data["categories"][0][twice]

    root, path = edited(coco, tmp_path, repeat)
    said = "category name '0' is given twice, ids 1 and 2" if twice == "name" else "category id 1 is given twice"
    message = refusal(root, tmp_path)
    assert message.startswith(f"'{path}': {said}"), message


def test_an_unknown_split_is_refused_and_an_alias_is_read(coco, tmp_path) -> None:
    def splits(data: dict) -> None:
        data["images"][0]["split"], data["images"][1]["split"] = "Valid", "holdout"

    root, _ = edited(coco, tmp_path, splits)
    assert "image 1: split 'holdout' is not one of" in refusal(root, tmp_path)
    path = root / "annotations" / "instances_train.json"
    data = json.loads(path.read_text())
    data["images"][1]["split"] = "testing"
    path.write_text(json.dumps(data))
    images = detect_layout(root).annotated.images
    assert [split for _, split, _ in images[:2]] == ["val", "test"]


@pytest.mark.parametrize("bbox", [[1, 2, "w", 4], [1, 2, 3], None, [1, float("nan"), 3, 4]])
def test_a_bbox_that_is_not_four_finite_numbers_is_a_bad_annotation(coco, tmp_path, bbox) -> None:
    def bad(data: dict) -> None:
        data["annotations"][0]["bbox"] = bbox

    root, _ = edited(coco, tmp_path, bad)
    message = refusal(root, tmp_path)
    assert "1 bad box(es) or annotation(s)" in message and "on_bad_box: skip" in message, message
    finite = isinstance(bbox, list) and all(isinstance(v, (int, float)) for v in bbox) and len(bbox) == 4
    assert ("not a finite number" if finite else "annotation 1: bbox") in message, message
    kept = ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "skip"), image_size=64, on_bad_box="skip")
    with pytest.warns(UserWarning, match=r"left out 1 bad box"):
        kept.load_cache()


def test_category_ids_of_any_value_are_kept_in_class_order_and_must_agree_across_splits(tmp_path) -> None:
    from tests.box_sets import CLASSES, pictures, write

    root = tmp_path / "sparse"
    write("coco", root, pictures(12, seed=2))
    layout = detect_layout(root)
    assert layout.class_names == list(CLASSES) and layout.annotated.ids == [1, 5, 90]
    path = root / "annotations" / "instances_val.json"
    data = json.loads(path.read_text())
    data["categories"][2]["id"] = 91
    data["annotations"] = [
        {**a, "category_id": 91 if a["category_id"] == 90 else a["category_id"]} for a in data["annotations"]
    ]
    path.write_text(json.dumps(data))
    assert refusal(root, tmp_path) == (
        f"'{path}' has the categories {{1: 'bar', 5: 'dot', 91: 'ring'}}; another split's file has {{1: 'bar', 5:"
        " 'dot', 90: 'ring'}"
    )
