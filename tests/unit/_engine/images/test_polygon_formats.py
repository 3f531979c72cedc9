"""Segmentation read by what a folder holds: the same shapes written as index PNGs, LabelMe, CVAT (boxes, polygons,
z_order), COCO polygons and COCO RLE (compressed and not) give the same masks, pixel for pixel, at the images' own
size and in the cache, with the same classes and splits; an edited annotation rebuilds the cache; a folder holding
no masks, or shapes in two formats, is refused in one line naming what segmentation reads and what is there."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from litstarter._engine.images.drawn_masks import drawn_indices
from litstarter._engine.images.label_formats import expecting
from litstarter._engine.images.layout import detect_layout
from tests.polygon_sets import CLASSES, WRITERS, data_module, pictures, refusal, write

pytestmark = pytest.mark.filterwarnings("ignore:data leakage:UserWarning")  # the drawn canvases look alike
SHOWN = pictures(12, seed=4)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """The 12 pictures in every format, each in a folder of its own. Copy before editing."""
    tmp = tmp_path_factory.mktemp("polygons")
    return {form: tmp / form for form in WRITERS if not write(form, tmp / form, SHOWN)}


def test_every_format_draws_the_index_pngs_masks_pixel_for_pixel(folders, tmp_path) -> None:
    reference = {p.name: p.mask for p in SHOWN}
    assert any(len(p.shapes) > 1 and len(np.unique(p.mask)) > 2 for p in SHOWN)  # overlaps and both classes occur
    cached = {}
    for form, root in folders.items():
        dm = data_module(root, tmp_path / form)
        assert dm.class_names == list(CLASSES), form
        listing = dm.folder.listing()
        assert {s: sorted(Path(f.path).name for f in files) for s, files in listing.sources.items()} == {
            s: sorted(p.name for p in SHOWN if p.split == s) for s in ("train", "val", "test")
        }, form
        for files in listing.sources.values():
            for f in files:
                if form != "masks":
                    assert (drawn_indices(f.target, 255) == reference[Path(f.path).name]).all(), (form, f.path)
        cache = dm.load_cache()
        cached[form] = {split: np.asarray(cache.targets(split)) for split in cache.splits}
    for form, splits in cached.items():
        for split, masks in splits.items():
            assert np.array_equal(masks, cached["masks"][split]), (form, split)


def test_the_layout_line_names_the_format_its_shapes_and_classes(folders, tmp_path) -> None:
    layout = data_module(folders["cvat"], tmp_path / "c").folder.listing().layout
    shapes = sum(len(p.shapes) for p in SHOWN)
    assert layout.startswith(f"cvat shapes {folders['cvat'] / 'annotations.xml'} (12 images, {shapes} shapes,")
    assert layout.endswith("classes background, bar, blob)")


def test_cvat_draws_by_z_order_not_the_files_order(folders, tmp_path) -> None:
    root = shutil.copytree(folders["cvat"], tmp_path / "root")
    xml = root / "annotations.xml"
    text = xml.read_text()
    for z in range(3):
        text = text.replace(f'z_order="{z}"', 'z_order="0"')  # one depth: the file's (reversed) order decides
    xml.write_text(text)
    dm = data_module(root, tmp_path / "cache")
    by_name = {Path(f.path).name: f.target for files in dm.folder.listing().sources.values() for f in files}
    overlapping = [p for p in SHOWN if (p.mask != reversed_mask(p)).any()]
    assert overlapping
    for p in overlapping:
        assert (drawn_indices(by_name[p.name], 255) == reversed_mask(p)).all()


def reversed_mask(p) -> np.ndarray:
    from tests.polygon_sets import reference_mask

    return reference_mask(list(reversed(p.shapes)), p.size)


def drawn_of(root: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """The classes and each image's drawn mask at its own size, as the segmentation task's layout reads ``root``."""
    with expecting("mask", "SemanticSegmenter"):
        layout = detect_layout(root)
    return layout.class_names, {path.name: drawn_indices(t, 200) for path, _, t in layout.annotated.images}


SQUARE, INNER = [4, 4, 20, 4, 20, 20, 4, 20], [8, 8, 12, 8, 12, 12, 8, 12]


@pytest.mark.parametrize("first", ["wall", "door"])
def test_labelme_and_coco_draw_the_later_shape_over_the_earlier(tmp_path, first) -> None:
    second = {"wall": "door", "door": "wall"}[first]
    labelme, coco = tmp_path / "labelme", tmp_path / "coco"
    write("labelme", labelme, [SHOWN[0]])
    json_path = labelme / "train" / "0000.json"
    shapes = [{"label": first, "points": [SQUARE[i : i + 2] for i in range(0, 8, 2)], "shape_type": "polygon"},
              {"label": second, "points": [[8, 8], [12, 12]], "shape_type": "rectangle"}]  # fmt: skip
    json_path.write_text(json.dumps(json.loads(json_path.read_text()) | {"shapes": shapes}))
    write("coco_polygons", coco, [SHOWN[0]])
    json_path = coco / "annotations" / "instances_train.json"
    data = json.loads(json_path.read_text())
    data["categories"] = [{"id": 1, "name": "door"}, {"id": 2, "name": "wall"}]
    data["annotations"] = [
        {"id": k + 1, "image_id": 0, "category_id": 1 + (name == "wall"), "segmentation": [points], "iscrowd": 0}
        for k, (name, points) in enumerate(((first, SQUARE), (second, INNER)))
    ]
    json_path.write_text(json.dumps(data))
    for other in json_path.parent.glob("instances_*.json"):  # every split names the same categories
        other.write_text(json.dumps(json.loads(other.read_text()) | {"categories": data["categories"]}))
    for root in (labelme, coco):
        names, masks = drawn_of(root)
        assert names == ["background", "door", "wall"]  # sorted (LabelMe), by id (COCO): never by appearance
        mask = masks["0000.png"]
        assert (mask[10, 10], mask[5, 5], mask[30, 30]) == (names.index(second), names.index(first), 0), root


def test_coco_classes_follow_the_category_ids_and_classes_txt_replaces_them(folders, tmp_path) -> None:
    root = shutil.copytree(folders["coco_polygons"], tmp_path / "root")
    for path in (root / "annotations").glob("*.json"):
        data = json.loads(path.read_text())
        data["categories"] = [{"id": 9, "name": "bar"}, {"id": 2, "name": "blob"}]  # blob's id first
        for ann in data["annotations"]:
            ann["category_id"] = {3: 9, 7: 2}[ann["category_id"]]
        path.write_text(json.dumps(data))
    assert data_module(root, tmp_path / "a").class_names == ["background", "blob", "bar"]
    (root / "classes.txt").write_text("void\nbar\nblob\nunused\n")
    dm = data_module(root, tmp_path / "b")
    assert dm.class_names == ["void", "bar", "blob", "unused"]


def test_background_and_ignore_labels_draw_0_and_the_ignore_index(tmp_path) -> None:
    root = tmp_path / "root"
    write("labelme", root, [SHOWN[0]])
    json_path = root / "train" / "0000.json"
    data = json.loads(json_path.read_text())
    data["shapes"] = [
        {"label": "cat", "points": [[0, 0], [30, 0], [30, 30], [0, 30]], "shape_type": "polygon"},
        {"label": "_background_", "points": [[2, 2], [6, 6]], "shape_type": "rectangle"},
        {"label": "__ignore__", "points": [[10, 10], [14, 14]], "shape_type": "rectangle"},
    ]
    json_path.write_text(json.dumps(data))
    names, masks = drawn_of(root)
    mask = masks["0000.png"]
    assert names == ["background", "cat"]
    assert (mask[3, 3], mask[12, 12], mask[20, 20], mask[40, 40]) == (0, 200, 1, 0)


def test_an_edited_annotation_rebuilds_the_cache(folders, tmp_path) -> None:
    root = shutil.copytree(folders["labelme"], tmp_path / "root")
    first = data_module(root, tmp_path / "cache")
    before = np.asarray(first.load_cache().targets("train")).copy()
    json_path = root / "train" / "0000.json"
    data = json.loads(json_path.read_text())
    data["shapes"] = []
    json_path.write_text(json.dumps(data))
    stat = json_path.stat()
    os.utime(json_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    after = np.asarray(data_module(root, tmp_path / "cache").load_cache().targets("train"))
    assert not np.array_equal(before, after) and not after[0].any()


def test_a_folder_of_no_masks_is_refused_naming_what_segmentation_reads_and_what_is_there(tmp_path) -> None:
    classes = tmp_path / "classes"
    for name in ("cats", "dogs"):
        (classes / name).mkdir(parents=True)
    message = refusal(classes, tmp_path / "cache")
    assert message.startswith(f"data.root '{classes}' holds none of the layouts SemanticSegmenter reads")
    assert "found there: cats/ (empty), dogs/ (empty)" in message
    for named in ("images/ beside masks/", "LabelMe JSON", "CVAT for images 1.1 XML", "COCO json (polygons or RLE"):
        assert named in message
    from tests.box_sets import pictures as box_pictures
    from tests.box_sets import write as write_boxes

    voc = tmp_path / "voc"
    write_boxes("voc", voc, box_pictures(4))
    message = refusal(voc, tmp_path / "cache")
    assert "It holds boxes, Pascal VOC XML (annotations/" in message and "configs/task/detection.yaml" in message


def test_shapes_in_two_formats_are_refused_naming_both_and_box_format_picks_one(folders, tmp_path) -> None:
    root = shutil.copytree(folders["labelme"], tmp_path / "root")
    write("coco_polygons", root, SHOWN)
    message = refusal(root, tmp_path / "cache")
    assert "holds shapes in 2 formats: LabelMe JSON" in message and "data.box_format: coco" in message
    assert data_module(root, tmp_path / "cache", box_format="coco").folder.layout.annotated.format == "coco"


def test_a_detection_task_still_reads_labelme_polygons_as_boxes(folders) -> None:
    assert detect_layout(folders["labelme"]).kind == "boxes"  # no task of masks said: the box readers decide
