"""``litstarter convert``: a folder in each format the library reads, written as COCO, YOLO or index PNGs, reads back
through the library's own readers as the same images (by name and split), the same boxes (within 0.01 px) or the
same masks (pixel for pixel), the same classes in the same order, COCO's category ids kept; and what it refuses, it
refuses in one line, writing nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter import convert
from litstarter._engine.convert.output import into_place
from litstarter._engine.images.drawn_masks import drawn_indices
from litstarter._engine.images.label_formats import expecting
from litstarter._engine.images.layout import detect_layout
from litstarter._engine.images.listing import Walker
from litstarter._engine.images.mask_files import MaskOptions, mask_indices
from litstarter._engine.images.mask_folders import list_mask_folders
from litstarter.errors import BadInputError, UsageError
from tests import box_sets, polygon_sets

BOX_SOURCES = tuple(box_sets.WRITERS)  # COCO (ids 1, 5, 90), YOLO, VOC, LabelMe, CVAT, Label Studio, CSVs
MASK_SOURCES = ("masks", "labelme", "cvat", "coco_polygons", "coco_rle")


def run(root: Path, out: Path, targets: str, to: str, *extra: str) -> None:
    """``litstarter convert`` in this process."""
    assert convert.main(["--data.root", str(root), "--targets", targets, "--to", to, "--out", str(out), *extra]) == 0


def read_boxes(root: Path, **options) -> tuple[list[str], list | None, dict]:
    """``(classes, COCO ids, {(split, name): boxes})`` as the detection task reads ``root``."""
    with expecting("boxes"):
        layout = detect_layout(root, **options)
    images = {(split or "train", path.name): boxes for path, split, boxes in layout.annotated.images}
    return layout.annotated.names, layout.annotated.ids, images


def read_masks(root: Path) -> tuple[list[str], dict]:
    """``(classes, {(split, name): (H, W) indices})`` as the segmentation task reads ``root``."""
    with expecting("mask"):
        layout = detect_layout(root)
    if layout.kind == "polygons":
        masks = {(s or "-", p.name): drawn_indices(t, 255) for p, s, t in layout.annotated.images}
        return layout.class_names, masks
    listed = list_mask_folders(root, layout.split_dirs, Walker(root))
    options = MaskOptions(len(layout.class_names))
    masks = {
        (split or "-", Path(f.path).name): mask_indices(root / f.target[0], options)
        for split, files in listed.items()
        for f in files
    }
    return layout.class_names, masks


def boxes_equal(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, boxes in want.items():
        assert len(got[key]) == len(boxes), key
        for a, b in zip(got[key], boxes, strict=True):
            assert a[4] == b[4], key
            assert np.allclose(a[:4], b[:4], atol=0.01), (key, a, b)


@pytest.mark.parametrize("to", ["coco", "yolo"])
@pytest.mark.parametrize("form", BOX_SOURCES)
def test_boxes_read_back_the_same_from_every_box_format(tmp_path: Path, form: str, to: str, capsys) -> None:
    shown = box_sets.pictures(12, seed=3)
    options = box_sets.write(form, tmp_path / "source", shown)
    names, ids, want = read_boxes(tmp_path / "source", **options)
    extra = ["--data.labels", options["labels"]] if "labels" in options else []
    run(tmp_path / "source", tmp_path / "out", "boxes", to, *extra)
    got_names, got_ids, got = read_boxes(tmp_path / "out")
    assert got_names == names == list(box_sets.CLASSES)
    boxes_equal(got, want)
    assert {key: [b[4] for b in boxes] for key, boxes in want.items()} == {
        (p.split, p.name): [float(b[4]) for b in p.boxes] for p in shown
    }
    if to == "coco":
        assert got_ids == (list(box_sets.COCO_IDS) if form == "coco" else [1, 2, 3])
    said = capsys.readouterr().out
    read = "boxes CSV" if form == "boxes" else box_sets.FORMS[form]
    assert said.count("\n") == 1 and f"read {read} boxes (12 images" in said and f"wrote {to} to" in said


@pytest.mark.parametrize("to", ["masks", "coco"])
@pytest.mark.parametrize("form", MASK_SOURCES)
def test_masks_read_back_pixel_for_pixel_from_every_mask_format(tmp_path: Path, form: str, to: str) -> None:
    shown = polygon_sets.pictures(9, seed=4)
    polygon_sets.write(form, tmp_path / "source", shown)
    run(tmp_path / "source", tmp_path / "out", "masks", to)
    names, masks = read_masks(tmp_path / "out")
    assert names == list(polygon_sets.CLASSES)
    assert sorted(masks) == sorted((p.split, p.name) for p in shown)
    for p in shown:
        assert np.array_equal(masks[(p.split, p.name)], p.mask), p.name
    assert sorted(f.name for f in (tmp_path / "out").rglob("*.png") if "images" in f.parts) == sorted(
        p.name for p in shown
    )


def test_coco_masks_are_one_uncompressed_rle_per_class_without_background(tmp_path: Path) -> None:
    import json

    shown = polygon_sets.pictures(5, seed=1)
    polygon_sets.write("masks", tmp_path / "source", shown)
    run(tmp_path / "source", tmp_path / "out", "masks", "coco")
    data = json.loads((tmp_path / "out" / "annotations" / "instances_train.json").read_text())
    assert [c["id"] for c in data["categories"]] == [1, 2]
    by_image = {image["id"]: image["file_name"] for image in data["images"]}
    masks = {p.name: p.mask for p in shown}
    for annotation in data["annotations"]:
        mask = masks[by_image[annotation["image_id"]]]
        counts = annotation["segmentation"]["counts"]
        assert isinstance(counts, list) and annotation["segmentation"]["size"] == list(mask.shape)
        assert annotation["area"] == int((mask == annotation["category_id"]).sum()) == sum(counts[1::2])
        assert annotation["iscrowd"] == 0
    held = {(a["image_id"], a["category_id"]) for a in data["annotations"]}
    assert held == {(i, c) for i, name in by_image.items() for c in np.unique(masks[name]).tolist() if c}


def unsplit_masks(root: Path, shown: list) -> None:
    """``root/images`` beside ``root/masks`` (no splits), ``classes.txt``."""
    polygon_sets.write("masks", root, shown)
    for p in shown:
        for folder in ("images", "masks"):
            (root / folder).mkdir(exist_ok=True)
            (root / p.split / folder / p.name).rename(root / folder / p.name)
    for split in polygon_sets.SPLITS:
        shutil.rmtree(root / split, ignore_errors=True)


def test_unsplit_masks_stay_unsplit(tmp_path: Path, capsys) -> None:
    shown = polygon_sets.pictures(6, seed=2)
    unsplit_masks(tmp_path / "source", shown)
    run(tmp_path / "source", tmp_path / "out", "masks", "masks")
    with expecting("mask"):
        assert detect_layout(tmp_path / "out").split_dirs == {}
    _, masks = read_masks(tmp_path / "out")
    assert all(np.array_equal(masks[("-", p.name)], p.mask) for p in shown)
    assert "without a split" not in capsys.readouterr().out


def test_unsplit_images_go_to_train_in_coco_and_the_summary_says_so(tmp_path: Path, capsys) -> None:
    shown = polygon_sets.pictures(6, seed=2)
    unsplit_masks(tmp_path / "source", shown)
    run(tmp_path / "source", tmp_path / "out", "masks", "coco")
    _, masks = read_masks(tmp_path / "out")
    assert sorted(masks) == sorted(("train", p.name) for p in shown)
    assert "6 image(s) without a split written as train" in capsys.readouterr().out


def test_two_images_of_one_split_and_name_are_refused_naming_both(tmp_path: Path) -> None:
    shown = polygon_sets.pictures(2, seed=2)
    root = tmp_path / "source"
    for sub, p in zip(("a", "b"), shown, strict=True):
        for folder in ("images", "masks"):
            (root / folder / sub).mkdir(parents=True)
        Image.fromarray(p.pixels).save(root / "images" / sub / "same.png")
        Image.fromarray(p.mask).save(root / "masks" / sub / "same.png")
    with pytest.raises(BadInputError, match=r"'images/a/same.png' and 'images/b/same.png' .* masks/same.png"):
        run(root, tmp_path / "out", "masks", "masks")
    assert not (tmp_path / "out").exists()


def test_masks_of_a_turned_jpeg_stay_on_their_pixels(tmp_path: Path) -> None:
    """A mask file is stored as its image is (before the EXIF turn); written back the same way."""
    (p,) = polygon_sets.pictures(1, seed=5)
    root = tmp_path / "source"
    for folder in ("images", "masks"):
        (root / folder).mkdir(parents=True)
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise
    Image.fromarray(p.pixels).save(root / "images" / "turned.jpg", exif=exif)
    Image.fromarray(p.mask).save(root / "masks" / "turned.png")
    (root / "classes.txt").write_text("\n".join(polygon_sets.CLASSES))
    run(root, tmp_path / "out", "masks", "masks")
    assert np.array_equal(np.asarray(Image.open(tmp_path / "out" / "masks" / "turned.png")), p.mask)
    run(root, tmp_path / "coco", "masks", "coco")
    _, masks = read_masks(tmp_path / "coco")
    assert np.array_equal(masks[("train", "turned.jpg")], np.rot90(p.mask, k=-1))


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()

    def fail(folder: Path) -> None:
        (folder / "half.json").write_text("{")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        into_place(tmp_path / "out", fail)
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any((tmp_path / "out").iterdir())


def test_an_empty_out_folder_is_written_into(tmp_path: Path) -> None:
    box_sets.write("voc", tmp_path / "source", box_sets.pictures(6, seed=1))
    (tmp_path / "out").mkdir()
    run(tmp_path / "source", tmp_path / "out", "boxes", "yolo")
    assert (tmp_path / "out" / "data.yaml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "source"]


@pytest.mark.parametrize(
    ("targets", "to", "refused"),
    [("boxes", "masks", "--targets boxes cannot be written --to masks"), ("masks", "yolo", "--to yolo")],
)
def test_a_target_is_written_only_as_its_formats(tmp_path: Path, targets: str, to: str, refused: str) -> None:
    box_sets.write("voc", tmp_path / "source", box_sets.pictures(3, seed=1))
    with pytest.raises(UsageError, match=refused) as raised:
        run(tmp_path / "source", tmp_path / "out", targets, to)
    assert "boxes as coco or yolo; masks as masks or coco" in str(raised.value)


def refusal_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """``{case: (arguments, what the line says)}``, their folders written under ``tmp``."""
    voc = tmp / "voc"
    box_sets.write("voc", voc, box_sets.pictures(3, seed=1))
    full = tmp / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    classes = tmp / "classes"
    for name in ("cat", "dog"):
        (classes / name).mkdir(parents=True)
        Image.new("L", (8, 8)).save(classes / name / "a.png")
    out = str(tmp / "out")

    def args(root: Path | None, targets: str, to: str, into: str = out) -> list[str]:
        return [*(["--data.root", str(root)] if root else []), "--targets", targets, "--to", to, "--out", into]

    return {
        "non-empty out": (args(voc, "boxes", "coco", str(full)), "is not empty"),
        "boxes as masks": (args(voc, "boxes", "masks"), "boxes as coco or yolo"),
        "missing root": (args(tmp / "nope", "boxes", "coco"), "does not exist"),
        "no data.root": (args(None, "boxes", "coco"), "--data.root"),
        "no boxes": (args(classes, "boxes", "yolo"), "holds none of the box formats"),
        "no masks": (args(voc, "masks", "masks"), "holds none of the layouts"),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["non-empty out", "boxes as masks", "missing root", "no data.root", "no boxes", "no masks"]
)
def test_each_refusal_is_one_line_through_the_command_line(tmp_path: Path, case: str) -> None:
    arguments, said = refusal_cases(tmp_path)[case]
    done = subprocess.run(
        [sys.executable, "-m", "litstarter", "convert", *arguments], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("litstarter convert: error: ") and said in lines[0], done.stderr
    assert not (tmp_path / "out").exists() and done.stdout == ""
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
