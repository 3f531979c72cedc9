"""Pascal VOC XML, in both layouts (``images/`` beside ``annotations/``, VOC's ``JPEGImages/`` + ``Annotations/`` +
``ImageSets/Main``): images found by ``<filename>``, never by ``<path>``; ``difficult`` boxes left out and counted,
``truncated`` ones trained on; each bad input one line naming the ``.xml`` and the entry, or left out and counted
under ``data.on_bad_box: skip``; nothing outside data.root opened."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from tests.box_sets import CLASSES, data_module, pictures, refusal, skipped, write

SHOWN = pictures(12, seed=3)
FIRST = CLASSES[SHOWN[0].boxes[0][4]]  # the class of the first box of 0000.png


@pytest.fixture(scope="module")
def sets(tmp_path_factory) -> dict[str, Path]:
    """12 pictures as ``voc`` (annotations/<split>/) and ``voc_devkit``. Copy before editing."""
    tmp = tmp_path_factory.mktemp("voc")
    for form in ("voc", "voc_devkit"):
        write(form, tmp / form, SHOWN)
    return {"voc": tmp / "voc", "voc_devkit": tmp / "voc_devkit"}


def edited(source: Path, tmp_path: Path, xml: str, old: str, new: str) -> Path:
    root = shutil.copytree(source, tmp_path / "root")
    path = root / xml
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))
    return root


def test_both_layouts_read_the_splits_the_classes_and_every_box(sets) -> None:
    folders = {form: detect_layout(root) for form, root in sets.items()}
    for form, layout in folders.items():
        assert layout.form == "voc" and layout.class_names == ["bar", "dot", "ring"], form
        assert sorted({split for _, split, _ in layout.annotated.images}) == ["test", "train", "val"], form
    shown = {p.name: p for p in SHOWN}
    truncated = 0
    for path, split, boxes in folders["voc_devkit"].annotated.images:
        assert path.parent.name == "JPEGImages" and split == shown[path.name].split
        assert boxes == [list(b) for b in shown[path.name].boxes]  # truncated ones (every second) among them
        truncated += len(boxes) // 2
    assert truncated > 0
    assert "ImageSets" not in folders["voc"].describe(sets["voc"])


def test_the_image_is_found_by_filename_never_by_path(sets, tmp_path) -> None:
    root = edited(sets["voc"], tmp_path, "annotations/train/0000.xml", "C:\\Users", "/etc/passwd\\Users")
    images = {p.name for p, _, _ in detect_layout(root).annotated.images}
    assert "0000.png" in images and "passwd" not in str(images)


def test_a_difficult_box_is_left_out_and_counted_in_the_layout_line_a_truncated_one_kept(sets, tmp_path) -> None:
    root = edited(sets["voc"], tmp_path, "annotations/train/0000.xml", "<difficult>0", "<difficult>1")
    layout = detect_layout(root)
    boxes = dict((p.name, b) for p, _, b in layout.annotated.images)
    assert len(boxes["0000.png"]) == len(SHOWN[0].boxes) - 1
    assert "1 difficult box(es) left out (VOC's <difficult>1: neither trained on nor scored)" in layout.describe(root)


def test_a_box_outside_its_image_is_named_by_its_xml_and_object_or_skipped_and_counted(sets, tmp_path) -> None:
    root = edited(sets["voc"], tmp_path, "annotations/train/0000.xml", "<xmax>", "<xmax>9")
    x1, y1, x2, y2, _ = SHOWN[0].boxes[0]
    message = refusal(root, tmp_path / "cache")
    assert message == (
        f"'{root / 'annotations'}': 1 bad box(es) or annotation(s): annotations/train/0000.xml object 0 [{x1:g},"
        f" {y1:g}, 9{x2:g}, {y2:g}] ({FIRST}): outside the 80x60 image (fix them, or data.on_bad_box: skip leaves them"
        " out, counted)"
    )
    dm, said = skipped(root, tmp_path / "skip")
    assert "left out 1 bad box(es) (data.on_bad_box: skip): annotations/train/0000.xml object 0" in said


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("<filename>0000.png", "<filename>gone.png",
         "<filename> 'gone.png' is not found in images/train/ or beside the .xml"),
        ("<annotation>", "<annotation><object>", "does not parse as XML: mismatched tag: line 1, column"),
        ("<annotation>", '<!DOCTYPE a [<!ENTITY x "y">]><annotation>',
         "declares a DTD or an entity (<!DOCTYPE, <!ENTITY)"),
        ("<name>bar</name>", "<name> </name>", "object 0: <name> is empty (a box needs its class)"),
        ("<xmin>", "<xmin>x", "object 0 (bar): <bndbox> xmin ymin xmax ymax 'x"),
        ("<filename>0000.png</filename>", "", "<filename> is empty or missing (the image is found by it; <path>"),
    ],
)  # fmt: skip
def test_each_bad_annotation_is_one_line_naming_the_xml_or_skipped(sets, tmp_path, old, new, why) -> None:
    old, why = old.replace("<name>bar", f"<name>{FIRST}"), why.replace("(bar)", f"({FIRST})")
    root = edited(sets["voc"], tmp_path, "annotations/train/0000.xml", old, new)
    message = refusal(root, tmp_path / "cache")
    assert message.startswith(f"'{root / 'annotations'}': 1 bad box(es) or annotation(s): annotations/train/0000.xml")
    assert why in message, message
    _, said = skipped(root, tmp_path / "skip")
    assert "left out 1 bad box(es)" in said and "annotations/train/0000.xml" in said, said


@pytest.mark.parametrize("name", ["../../../outside.png", "/etc/passwd"])
def test_a_filename_that_leaves_the_data_folder_is_refused_before_any_image_is_opened(sets, tmp_path, name) -> None:
    root = edited(sets["voc"], tmp_path, "annotations/train/0001.xml", "<filename>0001.png", f"<filename>{name}")
    why = "absolute" if name.startswith("/") else "leaves data.root"
    assert refusal(root, tmp_path / "cache", on_bad_box="skip").startswith(
        f"Pascal VOC '{root / 'annotations'}': 1 annotation(s) name a file outside data.root '{root}':"
        f" annotations/train/0001.xml <filename> '{name}' ({why})."
    )


def test_a_size_that_is_not_the_images_is_refused_naming_both(sets, tmp_path) -> None:
    root = edited(sets["voc"], tmp_path, "annotations/train/0002.xml", "<width>80", "<width>640")
    assert (
        "annotations/train/0002.xml: states the size 640x60 but 'images/train/0002.png' is 80x60 (as shown, after its"
        " EXIF orientation): not its image, or a resized copy" in refusal(root, tmp_path / "cache")
    )


def test_image_sets_split_the_devkit_and_an_id_without_its_xml_or_in_two_splits_is_named(sets, tmp_path) -> None:
    root = shutil.copytree(sets["voc_devkit"], tmp_path / "root")
    main = root / "ImageSets" / "Main"
    (main / "val.txt").write_text((main / "val.txt").read_text() + "9999\n")
    assert "ImageSets/Main/val.txt line 3: '9999' has no Annotations/9999.xml" in refusal(root, tmp_path / "cache")
    (main / "val.txt").write_text((main / "val.txt").read_text().replace("9999", "0000"))
    assert refusal(root, tmp_path / "cache2").startswith(
        f"'{main / 'val.txt'}' line 3: '0000' is in split val, but ImageSets/Main/train.txt lists it too"
    )
    (main / "val.txt").write_text("0008\n")  # 0009 in no split file
    layout = detect_layout(root)
    assert "1 annotation(s) in no ImageSets/Main split file, not read" in layout.describe(root)


def test_a_trainval_list_alone_is_train_and_val_is_carved(sets, tmp_path) -> None:
    root = shutil.copytree(sets["voc_devkit"], tmp_path / "root")
    main = root / "ImageSets" / "Main"
    ids = "".join((main / f"{s}.txt").read_text() for s in ("train", "val", "test"))
    for split in ("train", "val", "test"):
        (main / f"{split}.txt").unlink()
    (main / "trainval.txt").write_text(ids)
    dm = data_module(root, tmp_path / "cache")
    assert set(dm.load_cache().splits) == {"train", "val"}
