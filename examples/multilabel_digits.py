"""A multi-label image folder that needs the multi-label task: 1 to 3 different digits on one canvas.

Usage::

    python examples/multilabel_digits.py data/multilabel_digits --images 3000

Each image is a 48 px canvas in a random background colour holding 1 to 3 different digits from scikit-learn's
bundled 8x8 digits (offline), each upscaled to 13-16 px in its own random ink colour at a random position in its
own cell of a 3x3 grid (so digits never overlap). Its labels are the digits that appear. Label frequencies are
skewed: digit ``d`` is drawn with weight ``0.75 ** d`` (0 is about 13x as common as 9). Writes
``images/<i>.png``, ``labels.csv`` (``path,labels`` with ``;``-separated digits) and ``labels_columns.csv``
(``path,0,1,...,9``, one 0/1 column per digit): the same labels in the two forms ``data.labels`` reads.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
from PIL import Image

CANVAS = 48
CELL = CANVAS // 3
#: Weight of digit d: 0.75 ** d.
SKEW = 0.75


def composite(digits, sources: list[int], rng: np.random.Generator) -> np.ndarray:
    """One ``(CANVAS, CANVAS, 3)`` uint8 image holding the digit images ``sources`` in distinct grid cells."""
    background = rng.uniform(0, 255, 3)
    pixels = np.broadcast_to(background, (CANVAS, CANVAS, 3)).copy()
    for source, cell in zip(sources, rng.choice(9, size=len(sources), replace=False), strict=True):
        side = int(rng.integers(CELL - 3, CELL + 1))  # 13-16 px: inside its cell
        ink = Image.fromarray((digits.images[source] / 16 * 255).astype(np.uint8)).resize((side, side), Image.BICUBIC)
        alpha = np.asarray(ink, dtype=np.float64)[..., None] / 255
        colour = rng.uniform(0, 255, 3)
        while np.abs(colour - background).sum() < 200:  # keep every digit visible
            colour = rng.uniform(0, 255, 3)
        top = (cell // 3) * CELL + int(rng.integers(0, CELL - side + 1))
        left = (cell % 3) * CELL + int(rng.integers(0, CELL - side + 1))
        patch = pixels[top : top + side, left : left + side]
        pixels[top : top + side, left : left + side] = patch * (1 - alpha) + colour * alpha
    pixels += rng.normal(0, 6, pixels.shape)
    return np.clip(pixels, 0, 255).astype(np.uint8)


def write_composites(root: Path, images: int = 3000, seed: int = 0, skew: float = SKEW) -> Path:
    """Write ``images`` composites and both labels files under ``root``; returns ``root``. Digit ``d`` is drawn
    with weight ``skew ** d`` (1: every digit alike)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    weights = skew ** np.arange(10)
    by_digit = {d: np.flatnonzero(digits.target == d) for d in range(10)}
    (root / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(images):
        count = int(rng.integers(1, 4))
        labels = sorted(int(d) for d in rng.choice(10, size=count, replace=False, p=weights / weights.sum()))
        sources = [int(rng.choice(by_digit[d])) for d in labels]
        path = f"images/{i:05d}.png"
        Image.fromarray(composite(digits, sources, rng), "RGB").save(root / path)
        rows.append((path, labels))
    with open(root / "labels.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "labels"])
        writer.writerows([path, ";".join(map(str, labels))] for path, labels in rows)
    with open(root / "labels_columns.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", *map(str, range(10))])
        writer.writerows([path, *(int(d in labels) for d in range(10))] for path, labels in rows)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="Folder to write (created).")
    parser.add_argument("--images", type=int, default=3000, help="Number of composite images.")
    parser.add_argument("--seed", type=int, default=0, help="Seed for the digits, colours and positions.")
    parser.add_argument("--skew", type=float, default=SKEW, help="Digit d is drawn with weight skew ** d.")
    args = parser.parse_args()
    write_composites(args.root, args.images, args.seed, args.skew)
    print(f"{args.images} images, labels.csv and labels_columns.csv written to {args.root}")


if __name__ == "__main__":
    main()
