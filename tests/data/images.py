"""Helpers that write small image folders with PIL (tests make their own data; nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_image(path: Path, size: tuple[int, int] = (20, 24), mode: str = "RGB", seed: int = 0) -> Path:
    """Write a random image of ``size`` ``(h, w)`` in PIL ``mode``; the format follows the file extension."""
    rng = np.random.default_rng(seed)
    h, w = size
    if mode in ("RGB", "RGBA", "CMYK"):
        image = Image.fromarray(rng.integers(0, 256, (h, w, len(mode)), dtype=np.uint8), mode)
    elif mode == "LA":
        image = Image.fromarray(rng.integers(0, 256, (h, w, 2), dtype=np.uint8), "LA")
    elif mode == "I;16":
        image = Image.fromarray(rng.integers(0, 65536, (h, w), dtype=np.uint16))
    elif mode == "P":
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).convert("P")
    else:
        image = Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8)).convert(mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def make_class_folder(
    root: Path, counts: dict[str, int], size: tuple[int, int] = (20, 24), ext: str = ".png", seed: int = 0
) -> Path:
    """``root/<class>/<i><ext>`` with ``counts[class]`` random RGB images each."""
    for c, (name, n) in enumerate(counts.items()):
        for i in range(n):
            write_image(root / name / f"{i:03d}{ext}", size, seed=seed * 10_000 + c * 1000 + i)
    return root


def make_split_folder(root: Path, counts: dict[str, dict[str, int]], size: tuple[int, int] = (20, 24)) -> Path:
    """``root/<split>/<class>/<i>.png`` with ``counts[split][class]`` images each."""
    for s, (split, per_class) in enumerate(counts.items()):
        make_class_folder(root / split, per_class, size, seed=s + 1)
    return root


def make_imbalanced_folder(
    root: Path, seed: int, counts: dict[str, tuple[int, int]], means: tuple[float, float] = (110, 140)
) -> Path:
    """Two classes of 16x16 grayscale images whose brightness level is drawn from N(mean, 15) per image.

    The levels overlap (the means are 2 sd apart), so the classes are learnable but not separable: the
    best decision threshold under a 10:1 prior sits well inside the rare class, and one under a balanced
    prior halfway between the means. ``counts[split] = (n_common, n_rare)``.
    """
    rng = np.random.default_rng(seed)
    for split, ns in counts.items():
        for label, (name, n) in enumerate(zip(("common", "rare"), ns, strict=True)):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                level = rng.normal(means[label], 15.0)
                pixels = np.clip(level + rng.normal(0, 25, (16, 16)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{i:03d}.png")
    return root


#: Sizes and modes cycled through by :func:`make_mixed_class_folder`: JPEG and PNG, grey, RGB, RGBA, palette.
MIXED = [
    (".jpg", "RGB", (20, 28)),
    (".png", "L", (32, 24)),
    (".png", "RGBA", (16, 16)),
    (".jpg", "L", (40, 30)),
    (".png", "P", (24, 36)),
    (".png", "RGB", (64, 48)),
]


def make_mixed_class_folder(
    root: Path, counts: dict[str, int], seed: int = 0, grey: bool = False, noise: float = 20.0
) -> Path:
    """``root/<class>/<i>.{jpg,png}``: real JPEG and PNG files of mixed sizes and PIL modes (grey, RGB, RGBA,
    palette; only grey ``L`` with ``grey``), each class a different mean colour so a short fit can learn."""
    rng = np.random.default_rng(seed)
    for c, (name, n) in enumerate(counts.items()):
        tint = np.array([60 + 60 * (c % 3), 60 + 40 * ((c + 1) % 4), 200 - 50 * (c % 4)], dtype=np.float64)
        for i in range(n):
            ext, mode, (h, w) = MIXED[(i + c) % len(MIXED)]
            pixels = np.clip(tint + rng.normal(0, noise, (h, w, 3)), 0, 255).astype(np.uint8)
            image = Image.fromarray(pixels, "RGB")
            image = image.convert("L" if grey else mode)
            path = root / name / f"{name}_{i:03d}{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            image.save(path)
    return root


def write_digit_photos(
    root: Path,
    counts: dict[str, list[int]],
    sizes: tuple[int, int] = (28, 64),
    seed: int = 0,
) -> Path:
    """scikit-learn's 8x8 digits as photo-like files: ``root/<split>/<digit>/<i>.{jpg,png}`` (split ``""``: none).

    Each image is a digit upscaled (bicubic) to a random square side in ``sizes`` (as a photo of a digit keeps
    its shape; a stretched one would lose its ends to the centre crop), in a random ink colour on a random
    background colour, with sensor-like noise, saved alternately as JPEG (quality 70-95) and PNG.
    ``counts[split][d]`` images of digit ``d`` per split; different splits draw different source digits
    (disjoint while the 1,797 last, then reused with new colours, sizes and noise).
    """
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = load_digits()
    pools = {d: list(rng.permutation(np.flatnonzero(digits.target == d))) for d in range(10)}
    for split, per_class in counts.items():
        for d, n in enumerate(per_class):
            for i in range(n):
                source = pools[d].pop(0) if pools[d] else rng.choice(np.flatnonzero(digits.target == d))
                path = root / split / str(d) / f"{split or 'digit'}_{d}_{i:04d}{'.jpg' if i % 2 else '.png'}"
                _write_digit_photo(path, digits.images[source] / 16.0, sizes, rng)
    return root


def _write_digit_photo(path: Path, ink: np.ndarray, sizes: tuple[int, int], rng: np.random.Generator) -> None:
    """One 8x8 ``ink`` map (0..1) as a coloured, noisy photo of a random size in ``sizes``."""
    h = w = int(rng.integers(sizes[0], sizes[1] + 1))
    big = Image.fromarray((ink * 255).astype(np.uint8)).resize((w, h), Image.Resampling.BICUBIC)
    alpha = np.asarray(big, dtype=np.float64)[..., None] / 255.0  # (h, w, 1)
    background = rng.uniform(0, 255, 3)
    foreground = rng.uniform(0, 255, 3)
    while np.abs(foreground - background).sum() < 200:  # keep the digit visible, as a photo of it would be
        foreground = rng.uniform(0, 255, 3)
    pixels = background * (1 - alpha) + foreground * alpha + rng.normal(0, 8, (h, w, 3))
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    if path.suffix == ".jpg":
        image.save(path, quality=int(rng.integers(70, 96)))
    else:
        image.save(path)
