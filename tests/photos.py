"""Real photo crops for tests: scikit-learn's two bundled sample photos (china.jpg, flower.jpg, 640x427), cut into
distinct crops of mixed sizes, and the copies a user's folder really holds (re-saved, re-encoded, resized,
slightly cropped) and the files a quality check should name. Nothing is downloaded: the photos ship with
scikit-learn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter


def sample_photos() -> dict[str, Image.Image]:
    """``{"china": RGB image, "flower": RGB image}``, 640x427 each."""
    from sklearn.datasets import load_sample_images

    data = load_sample_images()
    return {Path(f).stem: Image.fromarray(a) for f, a in zip(data.filenames, data.images, strict=True)}


def tile_crops(photo: Image.Image, rows: int, cols: int, seed: int = 0) -> list[Image.Image]:
    """``rows x cols`` crops that never overlap: each a random 60-100% (per side) of its own grid cell, so sizes
    and aspect ratios are mixed."""
    rng = np.random.default_rng(seed)
    cell_w, cell_h = photo.width // cols, photo.height // rows
    crops = []
    for r in range(rows):
        for c in range(cols):
            w, h = (int(side * rng.uniform(0.6, 1.0)) for side in (cell_w, cell_h))
            x = c * cell_w + int(rng.integers(0, cell_w - w + 1))
            y = r * cell_h + int(rng.integers(0, cell_h - h + 1))
            crops.append(photo.crop((x, y, x + w, y + h)))
    return crops


def near_copies(image: Image.Image) -> dict[str, tuple[Image.Image, dict]]:
    """The near-duplicates a folder holds, as ``{name: (image, save options)}``: the same pixels saved again as
    another PNG, a JPEG at quality 75, a copy resized to 80%, and a 5% crop (2.5% off each side)."""
    w, h = image.size
    cut_w, cut_h = round(w * 0.025), round(h * 0.025)
    return {
        "resaved.png": (image.copy(), {"compress_level": 1}),
        "jpeg75.jpg": (image, {"quality": 75}),
        "resized80.png": (image.resize((round(w * 0.8), round(h * 0.8)), Image.Resampling.LANCZOS), {}),
        "crop5.png": (image.crop((cut_w, cut_h, w - cut_w, h - cut_h)), {}),
    }


def quality_plants(image: Image.Image) -> dict[str, Image.Image]:
    """One file per quality check, from a textured photo crop: ``{check: image}``."""
    pixels = np.asarray(image, dtype=np.float64)
    w, h = image.size
    return {
        "dark": Image.fromarray((pixels / 8).astype(np.uint8)),  # underexposed by 3 stops
        "bright": Image.fromarray((255 - (255 - pixels) / 8).astype(np.uint8)),
        "blurry": image.filter(ImageFilter.GaussianBlur(0.03 * min(w, h))),
        "odd_aspect": image.resize((w, max(8, w // 3))),
        "grey_in_colour": image.convert("L"),
        "near_constant": Image.new("RGB", image.size, (96, 120, 64)),
    }


#: The modes of :func:`write_mixed_photos`, cycled: ``(PIL mode, extension, EXIF orientation)``.
MIXED_PHOTOS = [
    ("RGB", ".jpg", 1), ("L", ".png", 1), ("RGBA", ".png", 1), ("P", ".png", 1), ("I;16", ".png", 1),
    ("RGB", ".jpg", 6), ("RGB", ".png", 8), ("L", ".jpg", 3), ("RGBA", ".png", 5), ("P", ".png", 7),
]  # fmt: skip


def write_mixed_photos(folder: Path, n: int = 20, seed: int = 0) -> list[Path]:
    """``n`` photo crops of mixed sizes (40-400 px a side) in mixed modes: grey, RGB, RGBA (alpha varying),
    palette (with a transparent index every other time), 16-bit grey, and EXIF-rotated JPEG and PNG files."""
    rng = np.random.default_rng(seed)
    photos = list(sample_photos().values())
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(n):
        photo, (mode, ext, orientation) = photos[i % 2], MIXED_PHOTOS[i % len(MIXED_PHOTOS)]
        w, h = int(rng.integers(40, 401)), int(rng.integers(40, 401))
        x, y = int(rng.integers(0, photo.width - min(w, photo.width) + 1)), int(rng.integers(0, 428 - min(h, 427)))
        crop = photo.crop((x, y, x + w, y + h)).resize((w, h))  # sides over the photo's are stretched
        options: dict = {}
        if mode == "RGBA":
            pixels = np.asarray(crop.convert("RGBA")).copy()
            pixels[..., 3] = np.linspace(0, 255, w, dtype=np.uint8)[None, :]  # transparent to opaque
            crop = Image.fromarray(pixels)
        elif mode == "I;16":
            grey = np.asarray(crop.convert("L")).astype(np.uint16) * 257
            crop = Image.fromarray(grey + rng.integers(0, 257, (h, w)).astype(np.uint16))  # all 16 bits used
        elif mode == "P":
            crop = crop.convert("P")
            if i % 4 == 3:
                options["transparency"] = 0
        else:
            crop = crop.convert(mode)
        if orientation != 1:
            exif = Image.Exif()
            exif[0x0112] = orientation
            options["exif"] = exif
        files.append(folder / f"{i:02d}_{mode.replace(';', '')}_o{orientation}{ext}")
        crop.save(files[-1], **options)
    return files
