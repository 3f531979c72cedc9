"""LabelMe JSON, a ``.json`` beside each image: rectangles are boxes (corners in either order), a polygon, circle or
mask is read as the box around it and counted, a point or a line is left out and counted; ``imagePath`` relative to
the ``.json`` (``\\`` as LabelMe writes it on Windows), confined to data.root; each bad file or shape one line naming
the ``.json`` and the shape, or skipped and counted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from tests.box_sets import CLASSES, pictures, refusal, skipped, write

SHOWN = pictures(12, seed=3)
FIRST = CLASSES[SHOWN[0].boxes[0][4]]


@pytest.fixture(scope="module")
def labelme(tmp_path_factory) -> Path:
    """12 pictures with a LabelMe ``.json`` each, in ``train/``, ``valid/``, ``test/``. Copy before editing."""
    root = tmp_path_factory.mktemp("labelme") / "root"
    write("labelme", root, SHOWN)
    return root


def edited(labelme: Path, tmp_path: Path, edit, name: str = "train/0000.json") -> Path:
    root = shutil.copytree(labelme, tmp_path / "root")
    data = json.loads((root / name).read_text())
    edit(data)
    (root / name).write_text(json.dumps(data))
    return root


def boxes_of(root: Path) -> dict[str, list]:
    return {path.name: boxes for path, _, boxes in detect_layout(root).annotated.images}


def test_the_folders_give_the_splits_and_the_rectangles_the_boxes(labelme) -> None:
    layout = detect_layout(labelme)
    assert layout.form == "labelme" and layout.class_names == list(CLASSES) and layout.labels == labelme
    assert {path.name: split for path, split, _ in layout.annotated.images} == {p.name: p.split for p in SHOWN}
    assert boxes_of(labelme)["0000.png"] == [list(b) for b in SHOWN[0].boxes]


def test_a_polygon_circle_and_mask_are_read_as_the_box_around_them_points_and_lines_left_out(labelme, tmp_path):
    def shapes(data: dict) -> None:
        data["shapes"] = [
            {"label": "bar", "shape_type": "polygon", "points": [[10, 5], [30, 8], [20, 25]]},
            {"label": "dot", "shape_type": "circle", "points": [[40, 30], [40, 36]]},
            {"label": "ring", "shape_type": "mask", "points": [[50, 10], [60, 20]], "mask": "..."},
            {"label": "bar", "points": [[1, 1], [5, 1], [5, 5], [1, 5]]},  # no shape_type: LabelMe's polygon
            {"label": "dot", "shape_type": "point", "points": [[3, 3]]},
            {"label": "dot", "shape_type": "linestrip", "points": [[3, 3], [9, 9], [12, 3]]},
        ]

    root = edited(labelme, tmp_path, shapes)
    assert boxes_of(root)["0000.png"] == [[10, 5, 30, 25, 0], [34, 24, 46, 36, 1], [50, 10, 60, 20, 2], [1, 1, 5, 5, 0]]
    said = detect_layout(root).describe(root)
    assert "2 LabelMe polygon(s) read as the box around them; 1 LabelMe circle(s) read as the box around them" in said
    assert "2 LabelMe shape(s) that enclose no box left out (line, linestrip, point, points)" in said, said


def test_a_windows_image_path_beside_the_json_in_another_folder_is_read(labelme, tmp_path) -> None:
    root = shutil.copytree(labelme, tmp_path / "root")
    (root / "pictures").mkdir()
    shutil.move(root / "train" / "0000.png", root / "pictures" / "0000.png")
    data = json.loads((root / "train" / "0000.json").read_text())
    (root / "train" / "0000.json").write_text(json.dumps({**data, "imagePath": "..\\pictures\\0000.png"}))
    assert "0000.png" in boxes_of(root)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: d.update(imagePath="gone.png"),
         "train/0000.json: imagePath 'gone.png' is not found (imageData is not read)"),
        (lambda d: d["shapes"][0].update(label=" "), "train/0000.json shape 0: label is empty (a box needs its class)"),
        (lambda d: d["shapes"][0].update(shape_type="polygon", points=[[1, 1], [9, 9]]),
         f"train/0000.json shape 0 ({FIRST}): a polygon of 2 point(s) (it needs 3)"),
        (lambda d: d["shapes"][0].update(points=[[1, "a"], [9, 9]]),
         f"train/0000.json shape 0 ({FIRST}): points [[1, 'a'], [9, 9]] are not [x, y] numbers"),
        (lambda d: d["shapes"][0].update(points=[[1, 1], [99, 9]]),
         f"train/0000.json shape 0 [1, 1, 99, 9] ({FIRST}): outside the 80x60 image"),
        (lambda d: d.update(imageWidth=800), "train/0000.json: states the size 800x60 but 'train/0000.png' is 80x60"),
        (lambda d: d.pop("shapes"), "train/0000.json: not a LabelMe file (no list of shapes)"),
    ],
)  # fmt: skip
def test_each_bad_file_or_shape_is_one_line_naming_the_json_or_skipped_and_counted(labelme, tmp_path, edit, why):
    root = edited(labelme, tmp_path, edit)
    message = refusal(root, tmp_path / "cache")
    assert message.startswith(f"'{root}': 1 bad box(es) or annotation(s): {why}"), message
    _, said = skipped(root, tmp_path / "skip")
    assert f"left out 1 bad box(es) (data.on_bad_box: skip): {why}" in said, said


def test_a_json_that_does_not_parse_is_one_line_or_skipped(labelme, tmp_path) -> None:
    root = shutil.copytree(labelme, tmp_path / "root")
    (root / "train" / "0001.json").write_text('{"version": "5.4.1", "shapes": [')
    assert "train/0001.json: does not parse as JSON: Expecting value: line 1 column 33" in refusal(root, tmp_path / "c")
    dm, said = skipped(root, tmp_path / "skip")
    assert "left out 1 bad box(es)" in said and "0001.png" not in str(dm.load_cache().column("train", "path"))


@pytest.mark.parametrize("name", ["../../outside.png", "/etc/passwd"])
def test_an_image_path_outside_the_data_folder_is_refused_before_any_image_is_opened(labelme, tmp_path, name) -> None:
    root = edited(labelme, tmp_path, lambda d: d.update(imagePath=name))
    why = "absolute" if name.startswith("/") else "leaves data.root"
    assert refusal(root, tmp_path / "cache", on_bad_box="skip").startswith(
        f"LabelMe '{root}': 1 file(s) name a file outside data.root '{root}': train/0000.json imagePath '{name}'"
        f" ({why})."
    )
