"""The same boxes in every box format the image folder reads, each laid out as its tool exports it: COCO json (category
ids 1, 5 and 90, as COCO's own are sparse), YOLO, the boxes CSV, Pascal VOC (``images/`` beside ``annotations/``, and
VOC's ``JPEGImages/`` + ``Annotations/`` + ``ImageSets/Main``), the TensorFlow CSV (Roboflow's ``<split>/
_annotations.csv``), LabelMe (a ``.json`` beside each image), CVAT for images 1.1 (``annotations.xml``, images under
``images/<subset>/``), and Label Studio's JSON and JSON-MIN exports (upload URLs ``/data/upload/1/<8 hex>-<name>``).

The pictures are drawn here: grey canvases 80x60 px (not square, so x and y cannot swap unseen) with 1 to 3 shapes
of three classes, ``bar`` (a filled rectangle), ``dot`` (a filled disc) and ``ring`` (an outlined square), their
boxes on quarter pixels. The class names sort as COCO's ids 1, 5, 90 do, so every format's class order is the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

CLASSES = ("bar", "dot", "ring")
COCO_IDS = (1, 5, 90)
SPLITS = {"train": 0.6, "val": 0.2, "test": 0.2}


@dataclass(frozen=True)
class Picture:
    """One canvas: its file name (unique across splits), split, pixels ``(H, W)`` and boxes ``(x1, y1, x2, y2,
    class index)``."""

    name: str
    split: str
    pixels: np.ndarray
    boxes: tuple[tuple[float, float, float, float, int], ...]

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)``."""
        return self.pixels.shape[1], self.pixels.shape[0]


def pictures(count: int = 30, seed: int = 0, size: tuple[int, int] = (80, 60), suffix: str = ".png") -> list[Picture]:
    """``count`` canvases of ``size`` (width, height), split 60/20/20 in order, to be saved as ``suffix`` files;
    the same for the same seed."""
    rng = np.random.default_rng(seed)
    width, height = size
    out = []
    for i in range(count):
        image = Image.fromarray(rng.integers(0, 40, (height, width), dtype=np.uint8))
        draw, boxes = ImageDraw.Draw(image), []
        for _ in range(int(rng.integers(1, 4))):
            cls, side = int(rng.integers(0, 3)), int(rng.integers(min(size) // 5, min(size) // 2))
            left, top = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
            shape = (left, top, left + side - 1, top + side - 1)
            if cls == 0:
                draw.rectangle((left, top + side // 3, left + side - 1, top + 2 * side // 3), fill=220)
            elif cls == 1:
                draw.ellipse(shape, fill=200)
            else:
                draw.rectangle(shape, outline=240, width=2)
            boxes.append((left + 0.25, top + 0.25, left + side - 0.25, top + side - 0.5, cls))
        split = "train" if i < 0.6 * count else "val" if i < 0.8 * count else "test"
        out.append(Picture(f"{i:04d}{suffix}", split, np.asarray(image), tuple(boxes)))
    return out


def save(root: Path, relative: str, picture: Picture) -> str:
    """Write ``picture`` to ``root/relative``; returns ``relative``."""
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    suffix = Path(relative).suffix.lower()
    Image.fromarray(picture.pixels).save(root / relative, **({"quality": 95} if suffix == ".jpg" else {}))
    return relative


def write_coco(root: Path, shown: list[Picture]) -> dict:
    """``annotations/instances_<split>.json`` of ``images/<split>/<name>``, category ids 1, 5, 90."""
    categories = [{"id": i, "name": n, "supercategory": "shape"} for i, n in zip(COCO_IDS, CLASSES, strict=True)]
    for split in SPLITS:
        images, annotations = [], []
        for image_id, p in enumerate(shown):
            if p.split != split:
                continue
            images.append({"id": image_id, "file_name": save(root, f"images/{split}/{p.name}", p), "width": p.size[0]})
            images[-1]["height"] = p.size[1]
            for x1, y1, x2, y2, c in p.boxes:
                box = [x1, y1, x2 - x1, y2 - y1]
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": image_id, "category_id": COCO_IDS[c], "bbox": box}
                )
                annotations[-1] |= {"area": box[2] * box[3], "iscrowd": 0}
        data = {"images": images, "annotations": annotations, "categories": categories}
        (root / "annotations").mkdir(parents=True, exist_ok=True)
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(data))
    return {}


def write_yolo(root: Path, shown: list[Picture]) -> dict:
    """``data.yaml`` and ``labels/<split>/<stem>.txt`` beside ``images/<split>/``."""
    for p in shown:
        save(root, f"images/{p.split}/{p.name}", p)
        w, h = p.size
        lines = [
            f"{c} {(x1 + x2) / 2 / w:.6f} {(y1 + y2) / 2 / h:.6f} {(x2 - x1) / w:.6f} {(y2 - y1) / h:.6f}"
            for x1, y1, x2, y2, c in p.boxes
        ]
        label = root / "labels" / p.split / Path(p.name).with_suffix(".txt")
        label.parent.mkdir(parents=True, exist_ok=True)
        label.write_text("\n".join(lines) + "\n")
    names = "".join(f"  - {n}\n" for n in CLASSES)
    (root / "data.yaml").write_text(f"train: images/train\nval: images/val\ntest: images/test\nnames:\n{names}")
    return {}


def write_boxes_csv(root: Path, shown: list[Picture]) -> dict:
    """``boxes.csv``: ``path,x1,y1,x2,y2,label,split``."""
    lines = ["path,x1,y1,x2,y2,label,split"]
    for p in shown:
        path = save(root, f"images/{p.split}/{p.name}", p)
        lines += [f"{path},{x1},{y1},{x2},{y2},{CLASSES[c]},{p.split}" for x1, y1, x2, y2, c in p.boxes]
    (root / "boxes.csv").write_text("\n".join(lines) + "\n")
    return {"labels": "boxes.csv"}


def voc_xml(p: Picture, folder: str) -> str:
    """One VOC ``<annotation>``; ``<path>`` names the annotator's machine (never read), some boxes truncated."""
    objects = "".join(
        f"<object><name>{CLASSES[c]}</name><pose>Unspecified</pose><truncated>{j % 2}</truncated>"
        f"<difficult>0</difficult><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax>"
        "</bndbox></object>"
        for j, (x1, y1, x2, y2, c) in enumerate(p.boxes)
    )
    return (
        f"<annotation><folder>{folder}</folder><filename>{p.name}</filename>"
        f"<path>C:\\Users\\annotator\\Desktop\\shapes\\{p.name}</path><source><database>Unknown</database></source>"
        f"<size><width>{p.size[0]}</width><height>{p.size[1]}</height><depth>1</depth></size>"
        f"<segmented>0</segmented>{objects}</annotation>"
    )


def write_voc(root: Path, shown: list[Picture]) -> dict:
    """``annotations/<split>/<stem>.xml`` beside ``images/<split>/<name>``."""
    for p in shown:
        save(root, f"images/{p.split}/{p.name}", p)
        xml = root / "annotations" / p.split / Path(p.name).with_suffix(".xml")
        xml.parent.mkdir(parents=True, exist_ok=True)
        xml.write_text(voc_xml(p, "images"))
    return {}


def write_voc_devkit(root: Path, shown: list[Picture]) -> dict:
    """VOC's own: ``JPEGImages/``, ``Annotations/`` and ``ImageSets/Main/{train,val,test}.txt``."""
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "ImageSets" / "Main").mkdir(parents=True, exist_ok=True)
    for p in shown:
        save(root, f"JPEGImages/{p.name}", p)
        (root / "Annotations" / Path(p.name).with_suffix(".xml")).write_text(voc_xml(p, "VOC2012"))
    for split in SPLITS:
        ids = [Path(p.name).stem for p in shown if p.split == split]
        (root / "ImageSets" / "Main" / f"{split}.txt").write_text("\n".join(ids) + "\n")
    return {}


ROBOFLOW = {"train": "train", "val": "valid", "test": "test"}


def write_tf_csv(root: Path, shown: list[Picture]) -> dict:
    """Roboflow's TensorFlow CSV: ``<train|valid|test>/_annotations.csv`` beside the images."""
    for split, folder in ROBOFLOW.items():
        lines = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
        for p in (p for p in shown if p.split == split):
            save(root, f"{folder}/{p.name}", p)
            w, h = p.size
            lines += [f"{p.name},{w},{h},{CLASSES[c]},{x1},{y1},{x2},{y2}" for x1, y1, x2, y2, c in p.boxes]
        (root / folder / "_annotations.csv").write_text("\n".join(lines) + "\n")
    return {}


def write_labelme(root: Path, shown: list[Picture]) -> dict:
    """A LabelMe ``.json`` beside each image in ``<train|valid|test>/``: rectangles, corners in the drawn order."""
    for p in shown:
        folder = ROBOFLOW[p.split]
        save(root, f"{folder}/{p.name}", p)
        shapes = [
            {"label": CLASSES[c], "points": [[x2, y2], [x1, y1]], "group_id": None, "description": "",
             "shape_type": "rectangle", "flags": {}}
            for x1, y1, x2, y2, c in p.boxes
        ]  # fmt: skip
        data = {"version": "5.4.1", "flags": {}, "shapes": shapes, "imagePath": p.name, "imageData": None}
        data |= {"imageHeight": p.size[1], "imageWidth": p.size[0]}
        (root / folder / Path(p.name).with_suffix(".json")).write_text(json.dumps(data, indent=2))
    return {}


CVAT_SUBSETS = {"train": "Train", "val": "Validation", "test": "Test"}


def write_cvat(root: Path, shown: list[Picture]) -> dict:
    """CVAT for images 1.1: ``annotations.xml`` with ``<meta>`` and an ``<image>`` per picture, images under
    ``images/<Subset>/``; some boxes ``occluded``."""
    labels = "".join(
        f"<label><name>{n}</name><color>#33ddff</color><type>any</type><attributes/></label>" for n in CLASSES
    )
    images = []
    for i, p in enumerate(shown):
        subset = CVAT_SUBSETS[p.split]
        save(root, f"images/{subset}/{p.name}", p)
        boxes = "".join(
            f'<box label="{CLASSES[c]}" source="manual" occluded="{j % 2}" xtl="{x1:.2f}" ytl="{y1:.2f}"'
            f' xbr="{x2:.2f}" ybr="{y2:.2f}" z_order="0"></box>'
            for j, (x1, y1, x2, y2, c) in enumerate(p.boxes)
        )
        images.append(
            f'<image id="{i}" name="{p.name}" subset="{subset}" task_id="1" width="{p.size[0]}"'
            f' height="{p.size[1]}">{boxes}</image>'
        )
    meta = f"<meta><task><id>1</id><name>shapes</name><size>{len(shown)}</size><labels>{labels}</labels></task></meta>"
    head = '<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
    text = f"{head}{meta}{''.join(images)}</annotations>"
    (root / "annotations.xml").write_text(text)
    return {}


def upload_url(i: int, name: str) -> str:
    """Label Studio's upload URL of a file: ``/data/upload/1/<8 hex>-<name>``."""
    return f"/data/upload/1/{i * 2654435761 % 2**32:08x}-{name}"


def _ls_value(p: Picture, box: tuple) -> dict:
    x1, y1, x2, y2, c = box
    w, h = p.size
    value = {"x": x1 / w * 100, "y": y1 / h * 100, "width": (x2 - x1) / w * 100, "height": (y2 - y1) / h * 100}
    return value | {"rotation": 0, "rectanglelabels": [CLASSES[c]]}


def write_label_studio(root: Path, shown: list[Picture]) -> dict:
    """Label Studio's full JSON export at the folder's top; images under ``images/<split>/``; each task's first
    annotation cancelled and an older one below the latest (the latest, not cancelled, is read)."""
    tasks = []
    for i, p in enumerate(shown):
        save(root, f"images/{p.split}/{p.name}", p)
        result = [
            {"id": f"r{i}-{j}", "type": "rectanglelabels", "from_name": "label", "to_name": "image",
             "original_width": p.size[0], "original_height": p.size[1], "image_rotation": 0,
             "value": _ls_value(p, box)}
            for j, box in enumerate(p.boxes)
        ]  # fmt: skip
        old = {"id": 3 * i + 1, "result": result[:1], "was_cancelled": False, "created_at": "2024-05-01T09:00:00Z"}
        cancelled = {"id": 3 * i + 2, "result": [], "was_cancelled": True, "created_at": "2024-05-03T09:00:00Z"}
        latest = {"id": 3 * i + 3, "result": result, "was_cancelled": False, "created_at": "2024-05-02T09:00:00Z"}
        tasks.append(
            {"id": i + 1, "data": {"image": upload_url(i, p.name)}, "annotations": [cancelled, latest, old],
             "predictions": [], "meta": {}, "project": 1}
        )  # fmt: skip
    (root / "project-1-at-2024-05-03-10-00-5f2c8e1a.json").write_text(json.dumps(tasks))
    return {}


def write_label_studio_min(root: Path, shown: list[Picture]) -> dict:
    """Label Studio's JSON-MIN export: ``image``, ``id`` and the regions under the labels' name (``label``)."""
    tasks = []
    for i, p in enumerate(shown):
        save(root, f"images/{p.split}/{p.name}", p)
        regions = [_ls_value(p, box) | {"original_width": p.size[0], "original_height": p.size[1]} for box in p.boxes]
        tasks.append(
            {"image": upload_url(i, p.name), "id": i + 1, "label": regions, "annotator": 1, "annotation_id": i + 1,
             "created_at": "2024-05-02T09:00:00Z", "updated_at": "2024-05-02T09:00:00Z", "lead_time": 3.5}
        )  # fmt: skip
    (root / "project-1-at-2024-05-03-10-00-min.json").write_text(json.dumps(tasks))
    return {}


#: Every format: ``{name: writer}``; a writer lays the pictures out as its tool does and returns the data options
#: that read them (``{"labels": "boxes.csv"}``).
WRITERS: dict[str, Callable[[Path, list[Picture]], dict]] = {
    "coco": write_coco,
    "yolo": write_yolo,
    "boxes": write_boxes_csv,
    "voc": write_voc,
    "voc_devkit": write_voc_devkit,
    "tf_csv": write_tf_csv,
    "labelme": write_labelme,
    "cvat": write_cvat,
    "label_studio": write_label_studio,
    "label_studio_min": write_label_studio_min,
}
#: The layout line's form each writer's folder is read as.
FORMS = {name: name.removesuffix("_devkit").removesuffix("_min") for name in WRITERS}


def write(form: str, root: Path, shown: list[Picture]) -> dict:
    """``shown`` in ``form`` under ``root``; the data options that read it."""
    root.mkdir(parents=True, exist_ok=True)
    return WRITERS[form](root, shown)


def written(form: str, root: Path, count: int = 12, seed: int = 3) -> tuple[Path, dict]:
    """``count`` pictures in ``form`` under ``root``: ``(root, data options)``."""
    return root, write(form, root, pictures(count, seed))


def data_module(root: Path, cache: Path, **options):
    """An image folder on ``root`` as the tests read one (64 px, whole images, no workers), its cache built."""
    from litstarter.data import ImageFolderDataModule

    dm = ImageFolderDataModule(str(root), image_size=64, crop_pct=1.0, cache_dir=str(cache), num_workers=0, **options)
    dm.load_cache()
    return dm


def refusal(root: Path, cache: Path, build=None, **options) -> str:
    """The one line reading ``root`` (with ``build``, :func:`data_module` by default) is refused with (a
    ``BadInputError``), nothing cached."""
    import pytest

    from litstarter.errors import BadInputError

    with pytest.raises(BadInputError) as refused:
        (build or data_module)(root, cache, **options)
    assert not cache.exists(), "a refused folder left a cache"
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def skipped(root: Path, cache: Path, build=None, **options) -> tuple[object, str]:
    """The data module reading ``root`` (with ``build``, :func:`data_module` by default) with ``data.on_bad_box:
    skip``, and the warning that counts what it left."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dm = (build or data_module)(root, cache, on_bad_box="skip", **options)
    said = [str(w.message) for w in caught if "left out" in str(w.message)]
    return dm, said[0] if said else ""
