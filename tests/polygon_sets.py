"""The same shapes in every segmentation format the image folder reads, each laid out as its tool exports it: index
PNGs (``{train,val,test}/{images,masks}/`` with ``classes.txt``), LabelMe (a ``.json`` beside each image in
``train/``, ``valid/``, ``test/``; polygons, rectangles), CVAT for images 1.1 (``annotations.xml``, ``<polygon>`` and
``<box>``, images under ``images/<Subset>/``), and COCO json as polygons, as compressed RLE and as uncompressed RLE
(``annotations/instances_<split>.json``, images under ``images/<split>/``).

The pictures are drawn here: grey canvases 64x48 px (not square, so x and y cannot swap unseen) with 1 to 3 shapes
of two classes, ``bar`` (an axis-aligned rectangle) and ``blob`` (a star-shaped polygon of 5 to 8 points), on quarter
pixels (CVAT's two decimals spell them exactly), overlapping at times: the later shape is drawn over the earlier. The
index PNGs are drawn by :func:`reference_mask`, the stated rule written out independently of the library's scanline
fill: a pixel is a polygon's when its centre ``(x + 0.5, y + 0.5)`` is inside by the even-odd rule, a centre on an
edge inside on a left or top edge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from tests import box_sets

CLASSES = ("background", "bar", "blob")
SIZE = (64, 48)
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Picture:
    """One canvas: its file name, split, pixels ``(H, W)`` and shapes ``(class index, [x0, y0, x1, y1, ...])`` in
    drawing order (a ``bar`` is its 4 corners, clockwise from the top left)."""

    name: str
    split: str
    pixels: np.ndarray
    shapes: tuple[tuple[int, tuple[float, ...]], ...]

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)``."""
        return self.pixels.shape[1], self.pixels.shape[0]

    @property
    def mask(self) -> np.ndarray:
        """The ``(H, W)`` class indices by the stated rule (:func:`reference_mask`)."""
        return reference_mask(self.shapes, self.size)


def quarter(rng: np.random.Generator, low: float, high: float) -> float:
    """A random multiple of 0.25 in ``[low, high]``."""
    return float(rng.integers(int(low * 4), int(high * 4) + 1)) / 4


def pictures(count: int = 30, seed: int = 0) -> list[Picture]:
    """``count`` canvases, split 60/20/20 in order; the same for the same seed."""
    rng = np.random.default_rng(seed)
    width, height = SIZE
    out = []
    for i in range(count):
        shapes = []
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.5:
                x1, y1 = quarter(rng, 0, width - 14), quarter(rng, 0, height - 10)
                x2, y2 = x1 + quarter(rng, 6, 14), y1 + quarter(rng, 4, 10)
                shapes.append((1, (x1, y1, x2, y1, x2, y2, x1, y2)))
            else:
                cx, cy, n = quarter(rng, 12, width - 12), quarter(rng, 10, height - 10), int(rng.integers(5, 9))
                angles = np.sort(rng.uniform(0, 2 * np.pi, n))
                radii = rng.uniform(4, 10, n)
                points = [(cx + r * np.cos(a), cy + r * np.sin(a)) for a, r in zip(angles, radii, strict=True)]
                shapes.append((2, tuple(round(v * 4) / 4 for point in points for v in point)))
        mask = reference_mask(shapes, SIZE)
        noise = rng.integers(0, 50, (height, width))
        pixels = (np.choose(mask, [40, 200, 120]) + noise).clip(0, 255).astype(np.uint8)
        split = "train" if i < 0.6 * count else "val" if i < 0.8 * count else "test"
        out.append(Picture(f"{i:04d}.png", split, pixels, tuple(shapes)))
    return out


def reference_mask(shapes, size: tuple[int, int]) -> np.ndarray:
    """``(H, W)`` uint8: each shape's class over the earlier ones, a pixel a polygon's when its centre is inside
    (even-odd; on a left or top edge inside), tested centre by centre against every edge."""
    width, height = size
    cx, cy = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    out = np.zeros((height, width), dtype=np.uint8)
    for cls, xy in shapes:
        points = list(zip(xy[0::2], xy[1::2], strict=True))
        inside = np.zeros((height, width), dtype=bool)
        for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True):
            if y0 == y1:
                continue
            spans = (np.minimum(y0, y1) <= cy) & (cy < np.maximum(y0, y1))
            at = x0 + (cy - y0) * (x1 - x0) / (y1 - y0)
            inside ^= spans & (at <= cx)
        out[inside] = cls
    return out


def save(root: Path, relative: str, picture: Picture) -> str:
    """Write ``picture`` to ``root/relative``; returns ``relative``."""
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(picture.pixels).save(root / relative)
    return relative


def write_masks(root: Path, shown: list[Picture]) -> dict:
    """``<split>/images/<name>`` beside ``<split>/masks/<name>`` (index PNGs), ``classes.txt``."""
    for p in shown:
        save(root, f"{p.split}/images/{p.name}", p)
        (root / p.split / "masks").mkdir(parents=True, exist_ok=True)
        Image.fromarray(p.mask).save(root / p.split / "masks" / p.name)
    (root / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    return {}


ROBOFLOW = {"train": "train", "val": "valid", "test": "test"}


def write_labelme(root: Path, shown: list[Picture]) -> dict:
    """A LabelMe ``.json`` beside each image in ``<train|valid|test>/``: bars as rectangles (corners in the drawn
    order, bottom right first), blobs as polygons; ``imagePath`` as LabelMe on Windows writes it beside the file."""
    for p in shown:
        folder = ROBOFLOW[p.split]
        save(root, f"{folder}/{p.name}", p)
        shapes = []
        for cls, xy in p.shapes:
            corners = [list(pt) for pt in zip(xy[0::2], xy[1::2], strict=True)]
            points = [[xy[4], xy[5]], [xy[0], xy[1]]] if cls == 1 else corners
            shapes.append({"label": CLASSES[cls], "points": points, "group_id": None, "description": "",
                           "shape_type": "rectangle" if cls == 1 else "polygon", "flags": {}})  # fmt: skip
        data = {"version": "5.4.1", "flags": {}, "shapes": shapes, "imagePath": f"..\\{folder}\\{p.name}"}
        data |= {"imageData": None, "imageHeight": p.size[1], "imageWidth": p.size[0]}
        (root / folder / Path(p.name).with_suffix(".json")).write_text(json.dumps(data, indent=2))
    return {}


CVAT_SUBSETS = {"train": "Train", "val": "Validation", "test": "Test"}


def write_cvat(root: Path, shown: list[Picture]) -> dict:
    """CVAT for images 1.1: ``annotations.xml``, bars as ``<box>``, blobs as ``<polygon>``; the drawing order by
    ``z_order`` (the elements written in reverse, so the file's order alone would draw them wrong)."""
    labels = "".join(f"<label><name>{n}</name><type>polygon</type><attributes/></label>" for n in CLASSES[1:])
    images = []
    for i, p in enumerate(shown):
        subset = CVAT_SUBSETS[p.split]
        save(root, f"images/{subset}/{p.name}", p)
        elements = []
        for z, (cls, xy) in enumerate(p.shapes):
            if cls == 1:
                corners = f'xtl="{xy[0]:.2f}" ytl="{xy[1]:.2f}" xbr="{xy[4]:.2f}" ybr="{xy[5]:.2f}"'
                elements.append(f'<box label="bar" source="manual" occluded="0" {corners} z_order="{z}"></box>')
            else:
                points = ";".join(f"{x:.2f},{y:.2f}" for x, y in zip(xy[0::2], xy[1::2], strict=True))
                elements.append(
                    f'<polygon label="blob" source="manual" occluded="0" points="{points}" z_order="{z}"></polygon>'
                )
        images.append(
            f'<image id="{i}" name="{p.name}" subset="{subset}" width="{p.size[0]}" height="{p.size[1]}">'
            f"{''.join(reversed(elements))}</image>"
        )
    meta = f"<meta><task><id>1</id><name>shapes</name><labels>{labels}</labels></task></meta>"
    head = '<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
    (root / "annotations.xml").write_text(f"{head}{meta}{''.join(images)}</annotations>")
    return {}


def runs(mask: np.ndarray) -> list[int]:
    """COCO's uncompressed RLE counts of a bool mask: column-major runs, 0s first."""
    flat = np.asarray(mask, dtype=bool).ravel(order="F")
    out, value, length = [], False, 0
    for pixel in flat:
        if pixel == value:
            length += 1
        else:
            out.append(length)
            value, length = pixel, 1
    return [*out, length]


def _coco(root: Path, shown: list[Picture], segmentation: Callable[[Picture, int], object]) -> dict:
    """``annotations/instances_<split>.json`` of ``images/<split>/<name>``, one annotation per shape in drawing
    order; category ids 3 and 7 (sparse, as COCO's are)."""
    categories = [{"id": 3, "name": "bar", "supercategory": "shape"}, {"id": 7, "name": "blob", "supercategory": ""}]
    for split in SPLITS:
        images, annotations = [], []
        for image_id, p in enumerate(shown):
            if p.split != split:
                continue
            name = save(root, f"images/{split}/{p.name}", p)
            images.append({"id": image_id, "file_name": p.name, "width": p.size[0], "height": p.size[1]})
            assert name.endswith(p.name)
            for k, (cls, _) in enumerate(p.shapes):
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": image_id, "category_id": (3, 7)[cls - 1],
                     "segmentation": segmentation(p, k), "iscrowd": 0, "bbox": [0, 0, 1, 1], "area": 1}
                )  # fmt: skip
        data = {"images": images, "annotations": annotations, "categories": categories}
        (root / "annotations").mkdir(parents=True, exist_ok=True)
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(data))
    return {}


def _shape_mask(p: Picture, k: int) -> np.ndarray:
    cls, xy = p.shapes[k]
    return reference_mask([(1, xy)], p.size).astype(bool)


def write_coco_polygons(root: Path, shown: list[Picture]) -> dict:
    """COCO with each shape a polygon."""
    return _coco(root, shown, lambda p, k: [list(p.shapes[k][1])])


def write_coco_rle(root: Path, shown: list[Picture]) -> dict:
    """COCO with each shape's pixels a compressed RLE string (``pycocotools``' encoding, written by the library's
    encoder, which a unit test holds equal to it)."""
    from litstarter._engine.images.rasterise import rle_string

    def encode(p: Picture, k: int) -> dict:
        return {"size": [p.size[1], p.size[0]], "counts": rle_string(runs(_shape_mask(p, k)))}

    return _coco(root, shown, encode)


def write_coco_rle_list(root: Path, shown: list[Picture]) -> dict:
    """COCO with each shape's pixels an uncompressed RLE (a list of runs)."""
    return _coco(root, shown, lambda p, k: {"size": [p.size[1], p.size[0]], "counts": runs(_shape_mask(p, k))})


#: Every format: ``{name: writer}``; a writer lays the pictures out as its tool does and returns the data options
#: that read them.
WRITERS: dict[str, Callable[[Path, list[Picture]], dict]] = {
    "masks": write_masks,
    "labelme": write_labelme,
    "cvat": write_cvat,
    "coco_polygons": write_coco_polygons,
    "coco_rle": write_coco_rle,
    "coco_rle_list": write_coco_rle_list,
}


def write(form: str, root: Path, shown: list[Picture]) -> dict:
    """``shown`` in ``form`` under ``root``; the data options that read it."""
    root.mkdir(parents=True, exist_ok=True)
    return WRITERS[form](root, shown)


def data_module(root: Path, cache: Path, **options):
    """An image folder on ``root`` read as the segmentation task's fit reads it (the CLI says the task trains on
    masks), at 32 px, whole images, no workers; its cache built."""
    from litstarter._engine.images.label_formats import expecting
    from litstarter.data import ImageFolderDataModule

    with expecting("mask", "SemanticSegmenter"):
        dm = ImageFolderDataModule(
            str(root), image_size=32, crop_pct=1.0, cache_dir=str(cache), num_workers=0, **options
        )
    dm.load_cache()
    return dm


def refusal(root: Path, cache: Path, **options) -> str:
    """The one line reading ``root`` for masks is refused with, nothing cached (:func:`tests.box_sets.refusal`)."""
    return box_sets.refusal(root, cache, build=data_module, **options)


def skipped(root: Path, cache: Path, **options) -> tuple[object, str]:
    """The data module reading ``root`` for masks with ``data.on_bad_box: skip``, and the warning that counts what it
    left (:func:`tests.box_sets.skipped`)."""
    return box_sets.skipped(root, cache, build=data_module, **options)
