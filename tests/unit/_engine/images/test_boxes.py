"""Boxes: the same canvases as COCO json, YOLO txt and a CSV give identical caches; each box goes through its
image's geometry (a box the crop cuts away is dropped); every bad box or annotation is refused naming the file and
the box, or left out and counted; and augmentation moves boxes with their image."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from litstarter.data import ArrayImageDataset, FastAugmentation, ImageFolderDataModule
from litstarter.data.augmentation import augment_with_boxes
from litstarter.data.digit_boxes import write_box_csv, write_canvases, write_coco, write_yolo
from litstarter.errors import BadInputError


def module(root: Path, cache: Path, **options) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(root), image_size=64, crop_pct=1.0, cache_dir=str(cache), num_workers=0, **options)


def cached(dm: ImageFolderDataModule) -> dict[str, tuple[list[str], np.ndarray]]:
    cache = dm.load_cache()
    return {s: (list(cache.column(s, "path")), cache.targets(s).stored) for s in cache.splits}


@pytest.fixture(scope="module")
def three_ways(tmp_path_factory) -> dict[str, Path]:
    """One set of 40 canvases as COCO json, as YOLO txt and as a boxes CSV."""
    tmp = tmp_path_factory.mktemp("boxes")
    roots = {}
    for form, write in (("coco", write_coco), ("yolo", write_yolo), ("csv", write_box_csv)):
        roots[form] = tmp / form
        write(roots[form], write_canvases(roots[form], 40, seed=5))
    return {**roots, "tmp": tmp}


def test_coco_yolo_and_a_csv_of_the_same_boxes_give_identical_caches(three_ways) -> None:
    results = {}
    for form, labels in (("coco", None), ("yolo", None), ("csv", "boxes.csv")):
        dm = module(three_ways[form], three_ways["tmp"] / f"cache-{form}", labels=labels)
        assert dm.target_kind == "boxes" and dm.class_names == [str(d) for d in range(10)]
        results[form] = cached(dm)
    assert list(results["coco"]) == ["train", "val", "test"]
    for split, (paths, rows) in results["coco"].items():
        assert len(paths) and rows.shape[1] == 6  # image index, x1, y1, x2, y2, class
        for other in ("yolo", "csv"):
            assert results[other][split][0] == paths and np.array_equal(results[other][split][1], rows), (other, split)


def test_a_box_the_crop_cuts_away_is_dropped_and_the_rest_follow_the_geometry(tmp_path: Path) -> None:
    root = tmp_path / "wide"
    (root / "images").mkdir(parents=True)
    for i in range(10):
        Image.new("L", (128, 64), 30).save(root / "images" / f"{i}.png")
    rows = ["path,x1,y1,x2,y2,label"]
    rows += [f"images/{i}.png,2,10,20,30,a\nimages/{i}.png,60,8,80,40,b" for i in range(10)]
    (root / "boxes.csv").write_text("\n".join(rows) + "\n")
    dm = module(root, tmp_path / "cache", labels="boxes.csv")  # 128x64 covers 64x64 at scale 1: crop x 32..96
    for _, stored in cached(dm).values():
        assert np.array_equal(stored[:, 1:], np.tile([[28, 8, 48, 40, 1]], (len(stored), 1)))  # "a" dropped


def bad_annotations(root: Path, problem: str) -> tuple[dict, str]:
    """Plant ``problem`` in a COCO or YOLO copy; the options to read it and what the refusal must name."""
    if problem == "yolo-fields":
        label = next((root / "labels" / "train").glob("*.txt"))
        label.write_text("3 0.5 0.5 0.2\n")
        return {}, f"labels/train/{label.name} line 1: 4 fields"
    path = root / "annotations" / "instances_train.json"
    data = json.loads(path.read_text())
    ann = data["annotations"][0]
    name = next(i["file_name"] for i in data["images"] if i["id"] == ann["image_id"])
    if problem == "outside":
        ann["bbox"] = [50, 50, 30, 10]
        named = f"{name} box 0 [50, 50, 80, 60]"
    elif problem == "zero-area":
        ann["bbox"] = [5, 5, 0, 10]
        named = f"{name} box 0 [5, 5, 5, 15]"
    elif problem == "category":
        ann["category_id"] = 99
        named = f"annotation {ann['id']}: category_id 99"
    elif problem == "missing-image":
        data["images"][0]["file_name"] = "images/train/nope.png"
        named = "'images/train/nope.png' is not found"
    path.write_text(json.dumps(data))
    return {}, named


@pytest.mark.parametrize("problem", ["outside", "zero-area", "category", "missing-image", "yolo-fields"])
def test_each_bad_box_is_refused_naming_the_file_and_the_box_or_skipped_and_counted(three_ways, tmp_path, problem):
    root = shutil.copytree(three_ways["yolo" if problem.startswith("yolo") else "coco"], tmp_path / "copy")
    options, named = bad_annotations(root, problem)
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path / "cache", **options).load_cache()
    message = str(refused.value)
    assert named in message and "on_bad_box: skip" in message and "\n" not in message, message
    with pytest.warns(UserWarning, match=r"left out 1 bad box"):
        module(root, tmp_path / "cache", on_bad_box="skip").load_cache()


def test_an_image_without_boxes_is_kept_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "some_empty"
    write_box_csv(root, write_canvases(root, 20, seed=1))
    with open(root / "boxes.csv", "a") as f:
        for i in range(3):
            Image.new("L", (64, 64), 10).save(root / "images" / "train" / f"empty{i}.png")
            f.write(f"images/train/empty{i}.png,,,,,,train\n")
    dm = module(root, tmp_path / "cache", labels="boxes.csv")
    assert "3 image(s) without" in dm.folder.listing().layout
    train = dm.load_cache().targets("train")
    assert sum(train.row_count(i) == 0 for i in range(len(train))) == 3


def planted(n: int = 4) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Black images ``(n, 1, 48, 56)`` with white boxes, and those boxes as rows."""
    rng = np.random.default_rng(0)
    images, boxes = torch.zeros((n, 1, 48, 56), dtype=torch.uint8), []
    for i in range(n):
        rows = []
        for label in range(3):
            w, h = (int(v) for v in rng.integers(10, 20, size=2))
            x, y = int(rng.integers(0, 56 - w)), int(rng.integers(0, 48 - h))
            images[i, 0, y : y + h, x : x + w] = 255
            rows.append([x, y, x + w, y + h, label])
        boxes.append(torch.tensor(rows, dtype=torch.float32))
    return images, boxes


GEOMETRIC = {
    "fast": FastAugmentation(crop_scale=(0.4, 1.0), hflip=0.5, color_jitter=0.0),
    "zoom_out": v2.RandomZoomOut(fill=0, side_range=(1.0, 2.0), p=1.0),
    "iou_crop": v2.RandomIoUCrop(),
    "flip": v2.RandomHorizontalFlip(p=1.0),
    "affine": v2.RandomAffine(degrees=0, translate=(0.1, 0.1), scale=(0.8, 1.2)),
    "resized_crop": v2.RandomResizedCrop((40, 40), scale=(0.5, 1.0), antialias=True),
}


@pytest.mark.parametrize("name", list(GEOMETRIC))
def test_boxes_stay_on_their_objects_under_every_geometric_transform(name: str) -> None:
    images, boxes = planted()
    out_images, out_boxes = augment_with_boxes(images, boxes, (40, 40), GEOMETRIC[name], [3, 4, 5, 6])
    assert out_images.shape == (4, 1, 40, 40)
    for image, rows in zip(out_images, out_boxes, strict=True):
        white = image[0].float() > 127
        covered = torch.zeros_like(white)
        for x1, y1, x2, y2, _ in rows.tolist():
            inner = image[0, int(np.ceil(y1)) + 1 : int(y2) - 1, int(np.ceil(x1)) + 1 : int(x2) - 1].float()
            assert inner.numel() == 0 or inner.mean() > 200, (name, rows)  # the box is on its white object
            covered[int(y1) : int(np.ceil(y2)), int(x1) : int(np.ceil(x2))] = True
        # no white object without its box (v2's affine maps box corners and pixel centres a pixel apart at most)
        assert (white & ~covered).float().mean() < 0.02, name


def test_the_dataset_serves_boxes_as_dicts_and_the_loader_lists_them() -> None:
    from litstarter.data.digit_boxes import _ragged

    images, boxes = planted()
    dataset = ArrayImageDataset(images.numpy(), _ragged([b.numpy() for b in boxes]), (48, 48))
    image, target = dataset[1]
    assert image.shape == (1, 48, 48) and set(target) == {"boxes", "labels"} and target["labels"].dtype == torch.int64
    expected = boxes[1][:, :4] - torch.tensor([4.0, 0, 4, 0])  # the eval view crops 56 px to 48: 4 off the left
    expected[:, [0, 2]] = expected[:, [0, 2]].clamp(0, 48)
    assert torch.allclose(target["boxes"], expected)
    batch = dataset.collate([dataset[0], dataset[1]])
    assert batch[0].shape == (2, 1, 48, 48) and len(batch[1]) == 2
