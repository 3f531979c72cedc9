"""What reading each box format adds to a cache build over the same images: the readers of Pascal VOC, the TensorFlow
CSV, LabelMe, CVAT and Label Studio (and COCO, YOLO and the boxes CSV, for comparison) against one cache build.

    .venv/bin/python benchmarks/box_formats.py [--images 1000] [--width 500] [--height 375] [--rounds 3] [--smoke]

Writes the same JPEGs and boxes (``tests/box_sets.py``: 1 to 3 shapes of three classes each) in every format, each
laid out as its tool exports it, then times, per format, what a fit does before it decodes a pixel: finding the
format in the folder and reading it (``detect_layout``: every annotation file parsed, every path confined, every
image's header read for its size); and, once a round, the cache build over the same images as a fit builds it
(``image_size`` 224, RGB, the decoding processes a fit starts: every core from 500 files; decode, EXIF orientation,
resize, crop, write, hash). Each figure is the median of ``--rounds`` rounds, the formats taken in turn within a
round (after one untimed read of each: imports, the page cache). Target: every new reader under 5% of the cache
build. ``--smoke`` (40 images of 160x120 px, one round: seconds) runs the same code end to end and prints the same
table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.box_sets: the builder the tests share
#: The readers this benchmark is about; the others are for comparison.
NEW = ("voc", "voc_devkit", "tf_csv", "labelme", "cvat", "label_studio", "label_studio_min")
#: A new reader's time, as a share of the cache build, at most.
TARGET = 0.05


def read_seconds(root: Path, labels: str | None) -> float:
    """Seconds to find and read the box format of ``root`` (what ``ImageFolderDataModule`` does first)."""
    from litstarter._engine.images.layout import detect_layout

    start = time.perf_counter()
    detect_layout(root, labels)
    return time.perf_counter() - start


def build_seconds(root: Path, cache: Path) -> float:
    """Seconds of one cache build of ``root`` (listing given; the decoding processes a fit starts: every core from
    500 files, else none), into a fresh ``cache``."""
    from litstarter._engine.images.folder import CachedImageFolder

    folder = CachedImageFolder(root, image_size=224, channels=3, cache_dir=cache, crop_pct=1.0)
    listing = folder.listing()
    start = time.perf_counter()
    folder.load_or_build(listing)
    return time.perf_counter() - start


def coloured(picture):
    """``picture`` in colour, as photos are (a tint per row and column over its grey): JPEG decodes three channels."""
    import dataclasses

    import numpy as np

    grey = picture.pixels.astype(np.uint16)
    h, w = grey.shape
    tint = np.stack([np.linspace(0, 60, w)[None, :].repeat(h, 0), np.linspace(0, 60, h)[:, None].repeat(w, 1)], -1)
    rgb = np.concatenate([grey[..., None] + tint.astype(np.uint16), grey[..., None]], axis=-1)
    return dataclasses.replace(picture, pixels=np.clip(rgb, 0, 255).astype(np.uint8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--width", type=int, default=500)
    parser.add_argument("--height", type=int, default=375)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="40 images of 160x120, one round: seconds")
    args = parser.parse_args()
    if args.smoke:
        args.images, args.width, args.height, args.rounds = 40, 160, 120, 1
    from litstarter._engine.cores import available_cores
    from litstarter._engine.images.folder import MIN_FILES_FOR_WORKERS
    from tests.box_sets import WRITERS, pictures, write

    shown = [coloured(p) for p in pictures(args.images, seed=0, size=(args.width, args.height), suffix=".jpg")]
    boxes = sum(len(p.boxes) for p in shown)
    with tempfile.TemporaryDirectory() as tmp:
        roots = {form: Path(tmp) / form for form in WRITERS}
        labels = {form: write(form, root, shown).get("labels") for form, root in roots.items()}
        for form, root in roots.items():  # warm-up: imports, the page cache
            read_seconds(root, labels[form])
        reads: dict[str, list[float]] = {form: [] for form in WRITERS}
        builds = []
        for round_ in range(args.rounds):
            for form, root in roots.items():
                reads[form].append(read_seconds(root, labels[form]))
            builds.append(build_seconds(roots["coco"], Path(tmp) / f"cache-{round_}"))
    build = statistics.median(builds)
    workers = max(available_cores() if args.images >= MIN_FILES_FOR_WORKERS else 0, 1)
    print(
        f"box formats: {args.images} images of {args.width}x{args.height} px (jpg), {boxes} boxes; cache build"
        f" (image_size 224, {workers} process(es)) {build:.3f} s, median of {args.rounds} round(s)"
    )
    print(f"{'format':<18}{'read s':>9}{'/ build':>10}")
    worst = 0.0
    for form, seconds in reads.items():
        read = statistics.median(seconds)
        share = read / build
        verdict = f"  target < {TARGET:.0%}: {'met' if share < TARGET else 'NOT met'}" if form in NEW else ""
        worst = max(worst, share) if form in NEW else worst
        print(f"{form:<18}{read:>9.4f}{share:>9.2%}{verdict}")
    verdict = "met" if worst < TARGET else "NOT met"
    print(f"slowest new reader: {worst:.2%} of the cache build (target < {TARGET:.0%}): {verdict}")


if __name__ == "__main__":
    main()
