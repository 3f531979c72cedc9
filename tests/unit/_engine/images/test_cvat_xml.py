"""CVAT for images 1.1: one ``annotations.xml`` of every image, ``subset`` the split, images under ``images/<subset>/``;
``occluded`` boxes trained on, a rotated box read as the box around it, a polygon, ellipse or mask read as the box
around it (counted), polylines and points left out (counted); CVAT for video refused naming what to export; a file
that does not parse, a DTD, a name outside data.root refused in one line; a bad box named by its image and shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from tests.box_sets import CLASSES, pictures, refusal, skipped, write

SHOWN = pictures(12, seed=3)
FIRST = CLASSES[SHOWN[0].boxes[0][4]]


@pytest.fixture(scope="module")
def cvat(tmp_path_factory) -> Path:
    """12 pictures as a CVAT for images 1.1 export. Copy before editing."""
    root = tmp_path_factory.mktemp("cvat") / "root"
    write("cvat", root, SHOWN)
    return root


def edited(cvat: Path, tmp_path: Path, old: str, new: str) -> Path:
    root = shutil.copytree(cvat, tmp_path / "root")
    text = (root / "annotations.xml").read_text()
    assert old in text
    (root / "annotations.xml").write_text(text.replace(old, new, 1))
    return root


def boxes_of(root: Path, name: str = "0000.png") -> list:
    return next(boxes for path, _, boxes in detect_layout(root).annotated.images if path.name == name)


def test_subsets_are_the_splits_and_every_box_is_read_occluded_ones_too(cvat) -> None:
    layout = detect_layout(cvat)
    assert layout.form == "cvat" and layout.class_names == list(CLASSES)
    assert {p.name: s for p, s, _ in layout.annotated.images} == {p.name: p.split for p in SHOWN}
    assert 'occluded="1"' in (cvat / "annotations.xml").read_text()
    assert all(
        boxes == [list(b) for b in q.boxes]
        for q in SHOWN
        for p, _, boxes in layout.annotated.images
        if p.name == q.name
    )


def test_a_rotated_box_polygon_ellipse_and_mask_are_the_boxes_around_them_the_rest_counted(cvat, tmp_path) -> None:
    shapes = (
        '<box label="bar" occluded="0" xtl="20" ytl="20" xbr="40" ybr="30" rotation="90.0" z_order="0"></box>'
        '<polygon label="dot" occluded="0" points="10.5,5;30,8;20,25.25" z_order="0"></polygon>'
        '<ellipse label="ring" occluded="0" cx="50" cy="30" rx="6" ry="4" z_order="0"></ellipse>'
        '<mask label="bar" occluded="0" rle="3, 4" left="1" top="2" width="5" height="6" z_order="0"></mask>'
        '<polyline label="dot" occluded="0" points="1,1;5,5" z_order="0"></polyline>'
        '<points label="dot" occluded="0" points="3,3" z_order="0"></points><tag label="ring" source="manual"></tag>'
    )
    root = edited(cvat, tmp_path, 'height="60">', f'height="60">{shapes}')
    assert boxes_of(root)[:4] == [[25, 15, 35, 35, 0], [10.5, 5, 30, 25.25, 1], [44, 26, 56, 34, 2], [1, 2, 6, 8, 0]]
    said = detect_layout(root).describe(root)
    assert "1 CVAT polygon(s) read as the box around them" in said and "1 CVAT mask(s)" in said
    assert "3 CVAT shape(s) that enclose no box left out (cuboid, points, polyline, skeleton, tag)" in said, said


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ('name="0000.png"', 'name="gone.png"',
         "annotations.xml image 0: 'gone.png' is not found under images/, data.root or beside the .xml"),
        (f'label="{FIRST}"', 'label=""', "annotations.xml image 0 box 0: label is empty (a box needs its class)"),
        ('xbr="', 'xbr="9', f"annotations.xml image 0 box 0 [{SHOWN[0].boxes[0][0]:g}, "),
        ('xtl="', 'xtl="a', f"annotations.xml image 0 box 0 ({FIRST}): xtl ytl xbr ybr ['a"),
        ('width="80"', 'width="8"', "annotations.xml image 0: states the size 8x60 but"
         " 'images/Train/0000.png' is 80x60"),
    ],
)  # fmt: skip
def test_a_bad_box_or_image_is_one_line_naming_the_image_and_shape_or_skipped(cvat, tmp_path, old, new, why) -> None:
    root = edited(cvat, tmp_path, old, new)
    message = refusal(root, tmp_path / "cache")
    assert message.startswith(f"'{root / 'annotations.xml'}': 1 bad box(es) or annotation(s): {why}"), message
    _, said = skipped(root, tmp_path / "skip")
    assert "left out 1 bad box(es) (data.on_bad_box: skip): annotations.xml image 0" in said, said


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("<annotations>", "<annotations><image>", "does not parse as XML: mismatched tag"),
        ("<annotations>", '<!DOCTYPE a [<!ENTITY b "c">]><annotations>', "declares a DTD or an entity"),
        ('name="0000.png"', 'name="../../etc/passwd"', "1 image(s) name a file outside data.root"),
        ('name="0000.png"', 'name="/etc/passwd"', "image 0 '/etc/passwd' (absolute)"),
    ],
)
def test_a_file_that_cannot_be_read_or_names_outside_the_folder_is_refused_whatever_on_bad_box_says(
    cvat, tmp_path, old, new, why
) -> None:
    root = edited(cvat, tmp_path, old, new)
    message = refusal(root, tmp_path / "cache", on_bad_box="skip")
    assert message.startswith(f"'{root / 'annotations.xml'}'") and why in message, message


def test_cvat_for_video_is_refused_naming_the_export_to_take(cvat, tmp_path) -> None:
    root = shutil.copytree(cvat, tmp_path / "root")
    (root / "annotations.xml").write_text(
        '<annotations><version>1.1</version><track id="0" label="bar"><box frame="0" xtl="1" ytl="1" xbr="5"'
        ' ybr="5" outside="0" occluded="0" keyframe="1"/></track></annotations>'
    )
    assert refusal(root, tmp_path / "cache") == (
        f"'{root / 'annotations.xml'}' is CVAT for video 1.1 (<track> elements): export the task as CVAT for images"
        " 1.1, whose <image> elements hold each frame's boxes"
    )


def test_named_by_data_labels_the_xml_is_read_too(cvat, tmp_path) -> None:
    root = shutil.copytree(cvat, tmp_path / "root")
    (root / "exports").mkdir()
    shutil.move(root / "annotations.xml", root / "exports" / "task_7.xml")
    assert detect_layout(root, "exports/task_7.xml").form == "cvat"
