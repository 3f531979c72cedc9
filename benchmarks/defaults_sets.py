"""The image sets of ``benchmarks/defaults.py``: small folders of different kinds, built offline from what the
installed packages ship (scikit-learn's digits and sample photos, scikit-image's bundled photos, matplotlib's
sample photo, Pillow's default font). Each is ``<root>/train/<class>/`` and ``<root>/test/<class>/``: the
validation split is carved from ``train/`` as a user's would be (``val_fraction``).

A part of ``benchmarks/defaults.py``, imported by it, not a benchmark: no smoke of its own; ``defaults.py --smoke``
builds every set and fits one.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.helpers import write_digit_photos  # noqa: E402  (the generator the tests use)


def _photo(name: str) -> Image.Image:
    """A photo bundled with scikit-image, scikit-learn or matplotlib, by file name."""
    places = []
    for package, sub in (("skimage", "data"), ("sklearn", "datasets/images"), ("matplotlib", "mpl-data/sample_data")):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            places.append(Path(spec.origin).parent / sub / name)
    for path in places:
        if path.is_file():
            return Image.open(path)
    raise SystemExit(f"defaults suite: the photo {name} ships with scikit-image (pip install scikit-image)")


def _crops(
    root: Path, sources: dict[str, str], counts: dict[str, int], sides: tuple[int, int], mode: str, seed: int
) -> None:
    """Random square crops of a side in ``sides`` from each source photo, the class being the photo. Train and test
    crops come from the photo's left and right 60% (overlapping by a fifth): no test crop is a train crop."""
    rng = np.random.default_rng(seed)
    for name, file in sources.items():
        photo = np.asarray(_photo(file).convert(mode))
        h, w = photo.shape[:2]
        for split, n in counts.items():
            lo, hi = (0, int(w * 0.6)) if split == "train" else (int(w * 0.4), w)
            for i in range(n):
                side = int(rng.integers(sides[0], sides[1] + 1))
                big = min(side * int(rng.integers(2, 5)), h, hi - lo)  # a crop of 2-4x the side, shrunk to it
                y, x = int(rng.integers(0, h - big + 1)), int(rng.integers(lo, hi - big + 1))
                crop = Image.fromarray(photo[y : y + big, x : x + big]).resize((side, side), Image.Resampling.BOX)
                path = root / split / name / f"{name}_{split}_{i:03d}.{'jpg' if i % 2 else 'png'}"
                path.parent.mkdir(parents=True, exist_ok=True)
                crop.save(path, quality=90) if path.suffix == ".jpg" else crop.save(path)


def digits28(root: Path) -> None:
    """Digit photos at 28 px: the size where the old 64 px default paid for pixels the images do not have."""
    write_digit_photos(root, {"train": [60] * 10, "test": [30] * 10}, sizes=(28, 28), seed=1)


def digits_mixed(root: Path) -> None:
    """Digit photos at 28-64 px, the set the old defaults were chosen on."""
    write_digit_photos(root, {"train": [60] * 10, "test": [30] * 10}, sizes=(28, 64), seed=2)


def imbalanced(root: Path) -> None:
    """Digit photos at 32-48 px, 10:1 in train (digits 7-9 are rare), balanced in test."""
    write_digit_photos(root, {"train": [100] * 7 + [10] * 3, "test": [30] * 10}, sizes=(32, 48), seed=3)


#: Hues (degrees) of the colour classes; the class is the colour of an object on a grey background.
HUES = {"red": 0, "yellow": 60, "green": 120, "blue": 230, "purple": 285}


def colour(root: Path, seed: int = 4) -> None:
    """An ellipse of the class's hue (saturation and brightness drawn per image) on a random grey, 48-64 px."""
    rng = np.random.default_rng(seed)
    for split, n in {"train": 60, "test": 30}.items():
        for name, hue in HUES.items():
            for i in range(n):
                side = int(rng.integers(48, 65))
                grey = int(rng.integers(40, 216))
                image = Image.new("RGB", (side, side), (grey, grey, grey))
                h = (hue + rng.normal(0, 8)) % 360 / 360 * 255
                fill = Image.new("HSV", (1, 1), (int(h), int(rng.integers(120, 256)), int(rng.integers(90, 256))))
                x, y = (int(v) for v in rng.integers(0, side // 2, 2))
                w, h = (int(v) for v in rng.integers(side // 4, side // 2, 2))
                ImageDraw.Draw(image).ellipse([x, y, x + w, y + h], fill=fill.convert("RGB").getpixel((0, 0)))
                pixels = np.asarray(image, np.float64) + rng.normal(0, 6, (side, side, 3))
                path = root / split / name / f"{name}_{split}_{i:03d}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path)


#: Letters whose mirror image or rotation is another class: orientation is the class.
GLYPHS = "bdpqnu"


def glyphs(root: Path, seed: int = 5) -> None:
    """Dark letters on light paper at 24 px, shifted, scaled and slightly rotated; a mirrored b is a d."""
    rng = np.random.default_rng(seed)
    for split, n in {"train": 60, "test": 30}.items():
        for letter in GLYPHS:
            for i in range(n):
                canvas = Image.new("L", (72, 72), int(rng.integers(190, 256)))
                font = ImageFont.load_default(size=int(rng.integers(44, 60)))
                at = (36 + int(rng.integers(-6, 7)), 36 + int(rng.integers(-6, 7)))
                ImageDraw.Draw(canvas).text(at, letter, font=font, fill=int(rng.integers(0, 90)), anchor="mm")
                canvas = canvas.rotate(float(rng.normal(0, 6)), resample=Image.Resampling.BILINEAR, fillcolor=220)
                small = np.asarray(canvas.resize((24, 24), Image.Resampling.BOX), np.float64)
                small = small + rng.normal(0, 6, small.shape)
                path = root / split / letter / f"{letter}_{split}_{i:03d}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(np.clip(small, 0, 255).astype(np.uint8)).save(path)


#: Real photos, one class each (scikit-image, scikit-learn and matplotlib ship them).
PHOTOS = {
    "astronaut": "astronaut.png",
    "coffee": "coffee.png",
    "chelsea": "chelsea.png",
    "rocket": "rocket.jpg",
    "china": "china.jpg",
    "flower": "flower.jpg",
    "hubble": "hubble_deep_field.jpg",
    "hopper": "grace_hopper.jpg",
}


def textures(root: Path) -> None:
    """Crops of eight real photos at mixed sizes (40-96 px), labelled by their photo."""
    _crops(root, PHOTOS, {"train": 50, "test": 25}, (40, 96), "RGB", seed=6)


def tiny(root: Path) -> None:
    """Grey crops of three real textures under 32 px, 20 training images a class (a tiny real set)."""
    sources = {"brick": "brick.png", "grass": "grass.png", "gravel": "gravel.png"}
    _crops(root, sources, {"train": 20, "test": 30}, (24, 31), "L", seed=7)


#: The suite: name -> (builder, one line on what it tests).
SETS: dict[str, tuple[Callable[[Path], None], str]] = {
    "digits28": (digits28, "digit photos, 10 classes, 28 px, 60/class"),
    "digits_mixed": (digits_mixed, "digit photos, 10 classes, 28-64 px, 60/class"),
    "colour": (colour, "colour is the class, 5 classes, 48-64 px, 60/class"),
    "glyphs": (glyphs, "orientation is the class (b d p q n u), grey, 24 px, 60/class"),
    "textures": (textures, "crops of 8 real photos, RGB, 40-96 px, 50/class"),
    "tiny": (tiny, "3 real grey textures, 24-31 px, 20/class"),
    "imbalanced": (imbalanced, "digit photos, 32-48 px, 10:1 (100 vs 10/class), balanced test"),
}


def build(name: str, root: Path) -> Path:
    """The set ``name`` under ``root / name``, built once (a finished set has a ``<name>.done`` marker beside it)."""
    folder, done = root / name, root / f"{name}.done"
    if not done.is_file():
        SETS[name][0](folder)
        done.write_text("")
    return folder


if __name__ == "__main__":  # python benchmarks/defaults_sets.py <dir>: build every set, to look at them
    for set_name in SETS:
        print(set_name, build(set_name, Path(sys.argv[1])))
