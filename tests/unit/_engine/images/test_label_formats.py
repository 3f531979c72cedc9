"""One reader interface for every box format: the same boxes written in each format (tests/box_sets.py) read to the
same images, boxes equal to 0.01 px, the same class order and identical caches; a folder holding two formats is
refused naming both and data.box_format, which picks one; a task that trains on boxes, given a folder without any
(class folders, a labels CSV), names the formats it reads and what the folder holds, never class folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from litstarter._engine.images.annotation_files import Unreadable, read_xml, xml_root
from litstarter._engine.images.label_formats import BOX_FORMAT_NAMES, box_formats, expecting, holds
from litstarter._engine.images.layout import detect_layout
from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError, UsageError
from tests.box_sets import CLASSES, FORMS, WRITERS, data_module, pictures, write

SHOWN = pictures(18, seed=7)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """The same 18 pictures in every format: ``{writer: (root, data options)}``."""
    tmp = tmp_path_factory.mktemp("formats")
    return {form: (tmp / form, write(form, tmp / form, SHOWN)) for form in WRITERS}


def test_every_format_is_one_module_behind_the_interface_named_by_data_box_format() -> None:
    formats = box_formats()
    assert sorted(f.name for f in formats) == sorted(BOX_FORMAT_NAMES) == sorted(set(FORMS.values()))
    assert all(f.title and f.reads and f.targets == "boxes" for f in formats)
    assert {type(f).__module__.rsplit(".", 1)[1] for f in formats} == {
        "coco_json", "yolo_files", "box_csv", "voc_xml", "tf_csv", "labelme_json", "cvat_xml", "label_studio"
    }  # fmt: skip


def test_the_same_boxes_in_every_format_read_to_the_same_images_boxes_and_class_order(folders) -> None:
    expected = {(p.name, p.split): [list(b) for b in p.boxes] for p in SHOWN}
    for form, (root, options) in folders.items():
        layout = detect_layout(root, options.get("labels"))
        assert layout.form == FORMS[form] and layout.class_names == list(CLASSES), form
        got = {(path.name, split): boxes for path, split, boxes in layout.annotated.images}
        assert got.keys() == expected.keys(), form
        for key, boxes in expected.items():
            assert np.allclose(np.asarray(got[key]), np.asarray(boxes), atol=0.01, rtol=0), (form, key)
        assert layout.annotated.ids == ([1, 5, 90] if form == "coco" else None), form


def test_the_same_boxes_in_every_format_give_identical_caches(folders, tmp_path) -> None:
    cached = {}
    for form, (root, options) in folders.items():
        cache = data_module(root, tmp_path / form, **options).load_cache()
        cached[form] = {s: (np.asarray(cache.images(s)), cache.targets(s).stored) for s in cache.splits}
    first = cached["coco"]
    assert list(first) == ["train", "val", "test"]
    for form, splits in cached.items():
        for split, (images, rows) in first.items():
            assert np.array_equal(splits[split][0], images), (form, split)
            assert np.allclose(splits[split][1], rows, atol=0.01, rtol=0), (form, split)


def test_a_folder_holding_two_formats_is_refused_naming_both_and_data_box_format_picks_one(tmp_path) -> None:
    root = tmp_path / "both"
    write("coco", root, SHOWN)
    write("yolo", root, SHOWN)
    with pytest.raises(BadInputError) as refused:
        detect_layout(root)
    assert str(refused.value) == (
        f"data.root '{root}' holds boxes in 2 formats: COCO json (annotations/instances_train.json,"
        " annotations/instances_val.json, annotations/instances_test.json) and YOLO (data.yaml); choose one:"
        " data.box_format: coco or data.box_format: yolo"
    )
    assert detect_layout(root, box_format="yolo").form == "yolo"
    dm = ImageFolderDataModule(str(root), box_format="coco", image_size=64, cache_dir=str(tmp_path / "c"))
    assert dm.category_ids == [1, 5, 90] and dm.class_names == list(CLASSES)
    with pytest.raises(BadInputError, match=r"^data.box_format: voc, but data.root '.*' holds no Pascal VOC XML \("):
        detect_layout(root, box_format="voc")
    with pytest.raises(UsageError, match="data.box_format must be one of"):
        detect_layout(root, box_format="pascal")


def test_a_task_of_boxes_on_class_folders_names_the_formats_it_reads_never_class_folders(tmp_path) -> None:
    from PIL import Image

    for name in ("cats", "dogs"):
        (tmp_path / "pets" / name).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (32, 32)).save(tmp_path / "pets" / name / f"{i}.jpg")
    assert detect_layout(tmp_path / "pets").kind == "classes"  # what it is, when no task says otherwise
    with expecting("boxes", "ObjectDetector"), pytest.raises(BadInputError) as refused:
        detect_layout(tmp_path / "pets")
    message = str(refused.value)
    assert message.startswith(
        f"data.root '{tmp_path / 'pets'}' holds none of the box formats ObjectDetector reads; found there: cats/ (3"
        " .jpg), dogs/ (3 .jpg). It reads COCO json (annotations/instances_<split>.json"
    ), message
    assert all(f.title in message for f in box_formats()) and "class folder" not in message
    assert message.endswith("(docs/detection.md; data.box_format picks one)")


def test_a_task_of_boxes_on_a_labels_csv_names_the_box_files_it_reads(tmp_path) -> None:
    (tmp_path / "labels.csv").write_text("path,label\na.png,cat\n")
    with expecting("boxes", "ObjectDetector"), pytest.raises(BadInputError) as refused:
        detect_layout(tmp_path, "labels.csv")
    assert str(refused.value).startswith(
        f"data.labels '{tmp_path / 'labels.csv'}' is none of the box files ObjectDetector reads. It reads COCO json"
    )


def test_what_a_folder_holds_is_counted_by_extension(tmp_path) -> None:
    (tmp_path / "annotations").mkdir()
    for i in range(3):
        (tmp_path / "annotations" / f"{i}.xml").write_text("<x/>")
    (tmp_path / "notes.txt").write_text("")
    assert holds(tmp_path) == "annotations/ (3 .xml), files 1 .txt"


def test_xml_with_a_dtd_is_refused_and_the_root_element_is_sniffed_past_it(tmp_path) -> None:
    path = tmp_path / "a.xml"
    path.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY x "y">]>\n<!-- CVAT -->\n<annotation>&x;</annotation>'
    )
    assert xml_root(path) == "annotation"
    with pytest.raises(Unreadable, match=r"declares a DTD or an entity"):
        read_xml(path)
