"""Thin structures at a real size: the defaults against Otsu's threshold, and the same folder with tiles and without.

    .venv/bin/python benchmarks/thin_structures.py [--size 512] [--images 20] [--tile 256] \
        [--sides otsu,defaults,shrunk,tiles] [--work DIR] [--json FILE] [--smoke]

Builds a fixed binary set (seed 0): ``--images`` grey images of ``--size`` px (12 train, 4 val, 4 test of 20; split
folders ``{train,val,test}/{images,masks}``), each with 3 to 6 random smooth curves 1 to 3 px wide, drawn 35 grey
levels darker than a shading that spans 110 levels (a random gradient and a bicubic field), under Gaussian noise of
12 levels: a curve's intensity overlaps the background's almost entirely, so no global threshold separates them, while
each curve is darker than its own surroundings. Masks are 0/255 PNGs (read as binary masks, no option needed).

Then, on the test images at their own pixels, side by side:

* ``otsu``: Otsu's threshold of each image after a 3x3 median, pixels below it the curve (the baseline is told the
  polarity);
* ``defaults``: what a user runs, no option given::

      litstarter fit --config configs/default.yaml --config configs/data/image_folder.yaml \
          --config configs/task/segmentation.yaml --data.root <set>

  (``image_size: auto`` would shrink 512 px images to 224 px, 2.3x, so ``data.tiles: auto`` trains on windows of
  256 px at their own resolution instead; only the run and cache folders are moved under ``--work``);
* ``shrunk``: the same with ``--data.tiles null``: the images shrunk to ``image_size: auto``'s 224 px, as before
  ``data.tiles: auto`` (the side without tiles);
* ``tiles`` (not run unless named): ``--data.tiles.size <--tile>``, windows of another size.

Each fit's best checkpoint predicts the test files through ``infer``'s own path (``predict_files``: the file's mask at
its own size; shrunk, pixels the eval view's centre crop cut off count as background), scored against the
mask files: the curve's IoU, the background's and their mean (pooled over the test images), with the fit's wall time
(start-up, cache build, fit and test) and the fit's own ``test/miou`` from ``metrics.json`` (shrunk, on its 224 px
centre crops; tiled, on the whole images). ``--smoke`` (8 images of 96 px, one epoch, windows of 48 px) runs the same
code end to end and prints the same table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [
    REPO / c for c in ("configs/default.yaml", "configs/data/image_folder.yaml", "configs/task/segmentation.yaml")
]
sys.path.insert(0, str(REPO / "benchmarks"))
import defaults  # noqa: E402 - its fit runs each side

#: The split of the set's images, as fractions (12 / 4 / 4 of 20).
SPLIT = {"train": 0.6, "val": 0.2, "test": 0.2}
SIDES = ("otsu", "defaults", "shrunk", "tiles")
#: The sides run unless --sides says otherwise (on 512 px images the defaults tile at 256 px: tiles would repeat them).
DEFAULT_SIDES = ("otsu", "defaults", "shrunk")


def curve(rng: np.random.Generator, size: int) -> list[tuple[float, float]]:
    """A cubic Bezier from near one border to near another, through two random points: 400 points."""
    ends = rng.uniform(-0.1, 1.1, (2, 2)) * size
    inner = rng.uniform(0.1, 0.9, (2, 2)) * size
    p0, p1, p2, p3 = ends[0], inner[0], inner[1], ends[1]
    t = np.linspace(0, 1, 400)[:, None]
    points = (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t**2 * p2 + t**3 * p3
    return [tuple(p) for p in points.tolist()]


def shading(rng: np.random.Generator, size: int) -> np.ndarray:
    """A smooth background spanning 70..180: a random gradient and a bicubic field of 4x4 random values."""
    coarse = Image.fromarray(rng.uniform(0, 255, (4, 4)).astype(np.float32), mode="F")
    field = np.asarray(coarse.resize((size, size), Image.Resampling.BICUBIC), dtype=np.float64)
    angle = rng.uniform(0, 2 * np.pi)
    y, x = np.mgrid[0:size, 0:size] / size
    gradient = np.cos(angle) * x + np.sin(angle) * y
    mixed = 0.6 * (field - field.min()) / max(np.ptp(field), 1e-9) + 0.4 * (gradient - gradient.min()) / np.ptp(
        gradient
    )
    return 70 + 110 * (mixed - mixed.min()) / max(np.ptp(mixed), 1e-9)


def thin_image(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """One ``(size, size)`` uint8 image and its 0/255 mask of 3 to 6 curves, 1 to 3 px wide."""
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    for _ in range(int(rng.integers(3, 7))):
        draw.line(curve(rng, size), fill=255, width=int(rng.integers(1, 4)), joint="curve")
    on = np.asarray(mask) > 0
    pixels = shading(rng, size) - 35.0 * on + rng.normal(0, 12, (size, size))
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8), np.where(on, 255, 0).astype(np.uint8)


def build_set(root: Path, size: int, images: int, seed: int = 0) -> dict[str, list[Path]]:
    """``root/{train,val,test}/{images,masks}/<i>.png``; returns each split's image files."""
    rng = np.random.default_rng(seed)
    counts = {split: int(round(images * share)) for split, share in SPLIT.items()}
    counts["train"] = images - counts["val"] - counts["test"]
    files: dict[str, list[Path]] = {}
    for split, count in counts.items():
        for kind in ("images", "masks"):
            (root / split / kind).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            image, mask = thin_image(rng, size)
            Image.fromarray(image, mode="L").save(root / split / "images" / f"{split}_{i:02d}.png")
            Image.fromarray(mask, mode="L").save(root / split / "masks" / f"{split}_{i:02d}.png")
            files.setdefault(split, []).append(root / split / "images" / f"{split}_{i:02d}.png")
    return files


def otsu_threshold(pixels: np.ndarray) -> float:
    """Otsu's threshold of uint8 pixels: the level that maximises the between-class variance."""
    counts = np.bincount(pixels.ravel(), minlength=256).astype(np.float64)
    levels = np.arange(256)
    weight = np.cumsum(counts)
    means = np.cumsum(counts * levels)
    total, grand = weight[-1], means[-1]
    between = (grand * weight - means * total) ** 2 / np.maximum(weight * (total - weight), 1e-12)
    return float(np.argmax(between[:-1]) + 0.5)


def otsu(files: list[Path]) -> list[np.ndarray]:
    """Each file's mask by Otsu's threshold after a 3x3 median: 1 (curve) below the threshold."""
    from scipy.ndimage import median_filter

    out = []
    for path in files:
        smooth = median_filter(np.asarray(Image.open(path).convert("L")), size=3)
        out.append((smooth < otsu_threshold(smooth)).astype(np.uint8))
    return out


def iou_table(predicted: list[np.ndarray], truth: list[np.ndarray]) -> dict[str, float]:
    """The curve's and the background's IoU pooled over the images, and their mean (a prediction of 255, a pixel the
    view cut off, counts as background)."""
    inter, union = np.zeros(2), np.zeros(2)
    for p, t in zip(predicted, truth, strict=True):
        p, t = (p == 1), (t > 0)
        for c, (a, b) in enumerate(((~p, ~t), (p, t))):
            inter[c] += (a & b).sum()
            union[c] += (a | b).sum()
    iou = inter / np.maximum(union, 1)
    return {"thin": float(iou[1]), "background": float(iou[0]), "miou": float(iou.mean())}


def fit(root: Path, work: Path, name: str, extra: list[str]) -> dict:
    """``litstarter fit`` on the set (``extra``: the side's options, as :func:`defaults.fit` runs it); its best
    checkpoint, metrics and wall time."""
    extra = ["--data.cache_dir", str(work / "cache"), *extra]
    done = defaults.fit(root, work / "runs", name, extra, work / f"{name}.log", configs=CONFIGS)
    checkpoints = Path(done["run"]) / "checkpoints"
    best = [p for p in checkpoints.glob("*.ckpt") if p.name != "last.ckpt"]
    return {**done, "ckpt": (best or [checkpoints / "last.ckpt"])[0]}


def predicted_masks(ckpt: Path, files: list[Path]) -> list[np.ndarray]:
    """The checkpoint's mask of each file at the file's own size, through ``infer``'s path."""
    from litstarter.extras.deploy.backends import open_model
    from litstarter.extras.deploy.infer import predict_files

    backend = open_model(ckpt)
    return [p.answer for p in predict_files(backend, files, batch_size=16)]


def run(args: argparse.Namespace, work: Path) -> list[dict]:
    """Build the set, run each side, score each on the test files; the table's rows."""
    root = work / "set"
    files = build_set(root, args.size, args.images)
    truth = [np.asarray(Image.open(p.parent.parent / "masks" / p.name)) for p in files["test"]]
    epochs = ["--trainer.max_epochs", "1"] if args.smoke else []
    rows = []
    for side in args.sides:
        if side == "otsu":
            start = time.perf_counter()
            rows.append({"side": side, **iou_table(otsu(files["test"]), truth), "seconds": time.perf_counter() - start})
            continue
        options = {"tiles": ["--data.tiles.size", str(args.tile)], "shrunk": ["--data.tiles", "null"]}
        extra = [*epochs, *options.get(side, [])]
        done = fit(root, work, side, extra)
        scores = iou_table(predicted_masks(done["ckpt"], files["test"]), truth)
        rows.append({"side": side, **scores, "seconds": done["seconds"], "fit_miou": done["metrics"].get("test/miou")})
    return rows


def print_table(rows: list[dict], args: argparse.Namespace) -> None:
    """The sides side by side, and whether the defaults beat Otsu on both IoUs."""
    counts = {split: int(round(args.images * share)) for split, share in SPLIT.items()}
    print(
        f"thin structures: {args.images} images of {args.size} px (test {counts['test']}), curves 1-3 px; tiles of"
        f" {args.tile} px; IoU on the test files' own pixels"
    )
    print(f"{'side':<10} {'thin IoU':>9} {'bg IoU':>8} {'mIoU':>7} {'seconds':>8} {'fit test/miou':>14}")
    for r in rows:
        fit_miou = "-" if r.get("fit_miou") is None else f"{r['fit_miou']:.4f}"
        ious = f"{r['thin']:>9.4f} {r['background']:>8.4f} {r['miou']:>7.4f}"
        print(f"{r['side']:<10} {ious} {r['seconds']:>8.1f} {fit_miou:>14}")
    by = {r["side"]: r for r in rows}
    if "otsu" in by and "defaults" in by:
        beat = by["defaults"]["thin"] > by["otsu"]["thin"] and by["defaults"]["miou"] > by["otsu"]["miou"]
        print(f"defaults beat otsu on the thin IoU and the mIoU: {'yes' if beat else 'NO'}")
    for side in ("defaults", "tiles"):
        if side in by and "shrunk" in by:
            t, d = by[side], by["shrunk"]
            print(
                f"{side} - shrunk: thin IoU {t['thin'] - d['thin']:+.4f}, mIoU {t['miou'] - d['miou']:+.4f}, time"
                f" {t['seconds'] / d['seconds']:.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="Image side in pixels.")
    parser.add_argument("--images", type=int, default=20, help="Images in the set (60/20/20 train/val/test).")
    parser.add_argument("--tile", type=int, default=256, help="The tiles side's window (--data.tiles.size).")
    parser.add_argument(
        "--sides", default=",".join(DEFAULT_SIDES), help="Which of otsu, defaults, shrunk, tiles to run."
    )
    parser.add_argument("--work", type=Path, default=None, help="Where the set and the runs go (default: temporary).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows here.")
    parser.add_argument("--smoke", action="store_true", help="8 images of 96 px, one epoch, windows of 48 px.")
    args = parser.parse_args()
    if args.smoke:
        args.size, args.images, args.tile = 96, 8, 48
    args.sides = [s for s in args.sides.split(",") if s]
    unknown = sorted(set(args.sides) - set(SIDES))
    if unknown:
        raise SystemExit(f"--sides: {unknown} are none of {', '.join(SIDES)}")
    with tempfile.TemporaryDirectory(prefix="thin-structures-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        rows = run(args, work)
    print_table(rows, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    main()
