"""The measurements behind ``inspect``'s near-duplicate threshold and quality checks, on real photo crops.

    .venv/bin/python benchmarks/inspect_checks.py [--crops 300] [--sizes 16 64 224] [--smoke]

Crops scikit-learn's two bundled sample photos (china.jpg, flower.jpg; nothing is downloaded) at random places
and sizes, puts each through the cache's own loader at each ``image_size``, and prints, per size:

* near-duplicates: the share of ``--copied`` crops (200) whose copy (re-saved PNG, JPEG at quality 75, resized to
  80%, a 5% crop) is within ``NEAR_DISTANCE`` bits of it, and how many of the crops' pairs come that close (with
  how many of those overlap by under half, or not at all);
* quality checks: how many crops each check flags (false positives, or crops that really are that bad), and how
  many of 10 planted files (one per check, made from a crop) it finds.

``docs/inspect.md`` gives the figures. ``--smoke`` (20 crops, 20 copies, size 16: a few seconds) runs the same
code end to end and prints the same lines; the test suite runs it (tests/benchmarks/test_smoke.py).
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from PIL import Image, ImageFilter


def photos() -> list[Image.Image]:
    from sklearn.datasets import load_sample_images

    return [Image.fromarray(a) for a in load_sample_images().images]


def random_crop(photo: Image.Image, rng, low: int, high: int, aspect: tuple[float, float] | None = None):
    """A crop and its box ``(x, y, w, h)``: sides drawn in ``[low, high)``, or a side and an aspect ratio."""
    if aspect is None:
        w, h = (int(rng.integers(low, high)) for _ in range(2))
    else:
        side, ratio = int(rng.integers(low, high)), rng.uniform(*aspect)
        w, h = (int(side * ratio), side) if rng.random() < 0.5 else (side, int(side * ratio))
    w, h = min(w, photo.width), min(h, photo.height)
    x, y = int(rng.integers(0, photo.width - w + 1)), int(rng.integers(0, photo.height - h + 1))
    return photo.crop((x, y, x + w, y + h)), (x, y, w, h)


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> io.BytesIO:
    data = io.BytesIO()
    image.save(data, fmt, **options)
    data.seek(0)
    return data


def overlap(a: tuple, b: tuple) -> float:
    """Intersection over union of two boxes of the same photo."""
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return ix * iy / (a[2] * a[3] + b[2] * b[3] - ix * iy)


def near_duplicates(sources: list[Image.Image], size: tuple[int, int], n: int, copied: int = 200) -> str:
    from litstarter._engine.images.leakage import NEAR_DISTANCE
    from litstarter._engine.images.perceptual import distances, phash
    from litstarter._engine.images.preprocess import load_image

    rng = np.random.default_rng(0)
    found = {"png": [], "jpeg75": [], "resize80": [], "crop5": []}
    for i in range(copied):
        crop, _ = random_crop(sources[i % 2], rng, 60, 260)
        w, h, cut = *crop.size, (round(crop.width * 0.025), round(crop.height * 0.025))
        base = phash(load_image(encoded(crop), 3, size))
        copies = {
            "png": encoded(crop.copy(), compress_level=1),
            "jpeg75": encoded(crop, "JPEG", quality=75),
            "resize80": encoded(crop.resize((round(w * 0.8), round(h * 0.8)), Image.Resampling.LANCZOS)),
            "crop5": encoded(crop.crop((cut[0], cut[1], w - cut[0], h - cut[1]))),
        }
        for name, data in copies.items():
            copy = phash(load_image(data, 3, size))
            found[name].append(base is not None and copy is not None and bin(base ^ copy).count("1") <= NEAR_DISTANCE)
    hashes, boxes = [], []
    for i in range(n):
        crop, box = random_crop(sources[i % 2], rng, 60, 260)
        hashes.append(phash(load_image(encoded(crop), 3, size)) or 0)
        boxes.append((i % 2, *box))
    h = np.array(hashes, dtype=np.uint64)
    first, second = np.triu_indices(n, 1)
    close = distances(h, h)[first, second] <= NEAR_DISTANCE
    shared = np.array([overlap(boxes[a][1:], boxes[b][1:]) if boxes[a][0] == boxes[b][0] else 0.0
                       for a, b in zip(first[close], second[close], strict=True)])  # fmt: skip
    recall = ", ".join(f"{name} {np.mean(hits):.1%}" for name, hits in found.items())
    return (f"  near-duplicates within {NEAR_DISTANCE} bits: {recall}; of {len(first)} pairs of {n} crops,"
            f" {close.sum()} within, {(shared < 0.5).sum()} overlapping by under half, {(shared == 0).sum()} not at"
            " all")  # fmt: skip


def quality(sources: list[Image.Image], size: tuple[int, int], n: int) -> str:
    from litstarter._engine.images.preprocess import load_image
    from litstarter.extras.inspect.quality import flags, image_stats

    rng = np.random.default_rng(5)
    crops = [random_crop(sources[i % 2], rng, 60, 400, aspect=(3 / 4, 16 / 9))[0] for i in range(n)]
    arrays = np.stack([load_image(encoded(c), 3, size) for c in crops])
    stats = image_stats(arrays, [min(c.size) for c in crops])
    flagged = flags(stats, [c.width for c in crops], [c.height for c in crops], ["RGB"] * n)
    planted = {check: 0 for check in flagged}
    for crop in crops[::30][:10]:
        pixels, (w, h) = np.asarray(crop, dtype=np.float64), crop.size
        plants = {
            "dark": Image.fromarray((pixels / 8).astype(np.uint8)),
            "bright": Image.fromarray((255 - (255 - pixels) / 8).astype(np.uint8)),
            "blurry": crop.filter(ImageFilter.GaussianBlur(0.03 * min(w, h))),
            "odd_aspect": crop.resize((w, max(8, w // 3))),
            "grey_in_colour": crop.convert("L"),
            "near_constant": Image.new("RGB", crop.size, (96, 120, 64)),
        }
        for check, image in plants.items():
            one = load_image(encoded(image), 3, size)[None]
            planted[check] += bool(flags(image_stats(one, [min(image.size)]), [image.width], [image.height],
                                         [image.mode])[check][0])  # fmt: skip
    return "  quality checks, flagged crops / planted found of 10: " + ", ".join(
        f"{check} {int(hits.sum())} / {planted[check]}" for check, hits in flagged.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crops", type=int, default=300, help="photo crops for the false-positive counts")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 224], help="image sizes to cache at")
    parser.add_argument("--copied", type=int, default=200, help="crops whose copies are checked for near-duplicates")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 20 crops, 20 copied, size 16")
    args = parser.parse_args()
    if args.smoke:
        args.crops, args.copied, args.sizes = 20, 20, [16]

    from litstarter._engine.images.preprocess import resize_size_for

    sources = photos()
    for image_size in args.sizes:
        size = resize_size_for(image_size)
        print(f"image_size {image_size} (cached at {size[0]}x{size[1]}):")
        print(near_duplicates(sources, size, args.crops, args.copied))
        print(quality(sources, size, args.crops))


if __name__ == "__main__":
    main()
