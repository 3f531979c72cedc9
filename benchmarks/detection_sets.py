"""Detection sets of three kinds, written as YOLO datasets (``data.yaml``, ``images/<split>/``,
``labels/<split>/``) that both our image folder and Ultralytics read as they are; nothing is downloaded (the glyphs
are scikit-learn's digits).

* ``colour``: colour canvases (64 px), a random background and ink colour each, 1 to 3 digits of 20 to 36 px that may
  overlap (the later drawn over; a box is the glyph's square), 10 classes: like the set a user first brings.
* ``grey``: the project's own digit canvases (64 px grey, 1 to 4 digits of 12 to 24 px over faint noise).
* ``small``: small objects on large images: 320 px colour canvases of smooth clutter, 2 to 8 digits of 10 to 18 px.

    .venv/bin/python benchmarks/detection_sets.py colour /tmp/colour [--count 1500] [--seed 0] [--masks]

Splits 70/15/15 by index; the same seed writes the same files. ``--masks`` writes the same canvases as a
segmentation folder instead (``<split>/images/``, ``<split>/masks/``: 0 background, class + 1 where a glyph's ink
covers at least half the pixel; ``classes.txt``).

A part of ``benchmarks/detection_peer_ultralytics.py``, which writes its sets with it (a round's number as the seed),
and of ``benchmarks/defaults.py --task detection|segmentation``; not a benchmark: no smoke of its own; theirs run
it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

#: Per set: canvas side, digits per canvas (at most), glyph side range (px), whether it is in colour.
KINDS = {
    "colour": {"side": 64, "most": 3, "sizes": (20, 36), "colour": True, "clutter": False},
    "grey": {"side": 64, "most": 4, "sizes": (12, 24), "colour": False, "clutter": False},
    "small": {"side": 320, "most": 8, "sizes": (10, 18), "colour": True, "clutter": True},
}
SPLITS = (("train", 0.70), ("val", 0.15), ("test", 0.15))
CLASS_NAMES = [str(d) for d in range(10)]


def _background(rng: np.random.Generator, side: int, colour: bool, clutter: bool) -> np.ndarray:
    """An ``(side, side, 3)`` float canvas: a plain random colour with noise (``colour``), faint grey noise, or smooth
    coloured clutter (low-frequency blobs) for the large canvases."""
    if not colour:
        return np.repeat(rng.integers(0, 24, size=(side, side, 1)).astype(np.float32), 3, axis=2)
    base = rng.uniform(0, 255, size=3).astype(np.float32)
    canvas = np.broadcast_to(base, (side, side, 3)).copy()
    if clutter:
        coarse = rng.uniform(-60, 60, size=(side // 32, side // 32, 3)).astype(np.float32)
        planes = (Image.fromarray(coarse[..., c]).resize((side, side), Image.Resampling.BICUBIC) for c in range(3))
        smooth = np.asarray([np.asarray(plane) for plane in planes])
        canvas += smooth.transpose(1, 2, 0)
    return canvas + rng.normal(0, 6, size=canvas.shape).astype(np.float32)


def canvas(rng: np.random.Generator, kind: str, glyphs: np.ndarray, targets: np.ndarray):
    """One canvas ``(side, side, 3)`` uint8 of ``kind``, its boxes ``[x1, y1, x2, y2, class]`` and its mask
    ``(side, side)`` uint8: 0 background, class + 1 where a glyph's ink covers at least half the pixel (the later
    drawn over)."""
    spec = KINDS[kind]
    side, (low, high) = spec["side"], spec["sizes"]
    image = _background(rng, side, spec["colour"], spec["clutter"])
    mask = np.zeros((side, side), np.uint8)
    rows = []
    for _ in range(int(rng.integers(1, spec["most"] + 1))):
        pick, size = int(rng.integers(len(glyphs))), int(rng.integers(low, high + 1))
        glyph = Image.fromarray(np.round(glyphs[pick] * (255 / 16)).astype(np.uint8))
        alpha = np.asarray(glyph.resize((size, size), Image.Resampling.BILINEAR), dtype=np.float32)[..., None] / 255
        top, left = (int(v) for v in rng.integers(0, side - size + 1, size=2))
        ink = rng.uniform(0, 255, size=3).astype(np.float32) if spec["colour"] else np.full(3, 255, np.float32)
        window = image[top : top + size, left : left + size]
        window[:] = window * (1 - alpha) + ink * alpha
        rows.append([left, top, left + size, top + size, int(targets[pick])])
        mask[top : top + size, left : left + size][alpha[..., 0] >= 0.5] = int(targets[pick]) + 1
    return np.clip(np.round(image), 0, 255).astype(np.uint8), rows, mask


def _canvases(kind: str, count: int, seed: int):
    """``(split, index, image, boxes, mask)`` for ``count`` canvases of ``kind``, split 70/15/15 by index."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    bounds = np.cumsum([0] + [round(count * share) for _, share in SPLITS])
    bounds[-1] = count
    for (split, _), start, stop in zip(SPLITS, bounds[:-1], bounds[1:], strict=True):
        for i in range(start, stop):
            pixels, rows, mask = canvas(rng, kind, digits.images, digits.target)
            picture = Image.fromarray(pixels) if KINDS[kind]["colour"] else Image.fromarray(pixels[..., 0])
            yield split, i, picture, rows, mask


def write(kind: str, root: Path, count: int, seed: int = 0) -> Path:
    """Write ``count`` canvases of ``kind`` as a YOLO dataset under ``root``; returns ``root``."""
    for split, i, picture, rows, _ in _canvases(kind, count, seed):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        picture.save(root / "images" / split / f"{i:05d}.png")
        side = picture.width
        lines = [
            f"{c} {(x1 + x2) / 2 / side:.6f} {(y1 + y2) / 2 / side:.6f} {(x2 - x1) / side:.6f} {(y2 - y1) / side:.6f}"
            for x1, y1, x2, y2, c in rows
        ]
        (root / "labels" / split / f"{i:05d}.txt").write_text("\n".join(lines) + "\n")
    names = "\n".join(f"  {i}: '{name}'" for i, name in enumerate(CLASS_NAMES))
    (root / "data.yaml").write_text(f"train: images/train\nval: images/val\ntest: images/test\nnames:\n{names}\n")
    return root


def write_masks(kind: str, root: Path, count: int, seed: int = 0) -> Path:
    """Write the same canvases as :func:`write` (same ``seed``: the same images) as a segmentation folder:
    ``<split>/images/`` and ``<split>/masks/`` PNGs and ``classes.txt`` (``background`` and the digits)."""
    for split, i, picture, _, mask in _canvases(kind, count, seed):
        for folder in ("images", "masks"):
            (root / split / folder).mkdir(parents=True, exist_ok=True)
        picture.save(root / split / "images" / f"{i:05d}.png")
        Image.fromarray(mask).save(root / split / "masks" / f"{i:05d}.png")
    (root / "classes.txt").write_text("\n".join(["background", *CLASS_NAMES]) + "\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--masks", action="store_true", help="a segmentation folder of the same canvases instead")
    parser.add_argument("root", type=Path)
    parser.add_argument("--count", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.masks:
        write_masks(args.kind, args.root, args.count, args.seed)
        print(f"wrote {args.count} {args.kind} canvases to '{args.root}' (<split>/images/, <split>/masks/)")
    else:
        write(args.kind, args.root, args.count, args.seed)
        print(f"wrote {args.count} {args.kind} canvases to '{args.root}' (YOLO: data.yaml, images/, labels/)")


if __name__ == "__main__":
    main()
