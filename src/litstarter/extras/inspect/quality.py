"""Quality checks a user acts on, each naming its files: very dark or bright, blurry, odd aspect, grey in a colour
set, near-constant.

Every statistic is measured on the cache's arrays (already decoded, oriented, converted and resized: no second
decode) and on the manifest's original sizes and modes. The thresholds were measured on 300 crops (60-458 px,
aspect 3:4 to 16:9) of scikit-learn's two sample photos at image sizes 16, 64 and 224 (``docs/inspect.md`` gives
the figures): each planted file is found and no crop, or only a crop that really is that bad, is flagged.
"""

from __future__ import annotations

import numpy as np

from litstarter._engine.images.cache import ImageCache
from litstarter._engine.images.channels import GREY_MODES
from litstarter._engine.images.perceptual import LUMA, box_weights

#: Very dark: the brightest 1% of pixels is below this (0..255 luma). Photo crops of shadow reached 39.
DARK_P99 = 35.0
#: Very bright: the darkest 1% of pixels is above this. Only crops of white sky came above it.
BRIGHT_P1 = 220.0
#: Near-constant: luma std below this (grey levels). The flattest photo crop (clear sky) had 2.2.
CONSTANT_STD = 2.0
#: Blurry: an image with content (luma std above BLUR_MIN_STD) whose Laplacian, on a thumbnail of at most
#: BLUR_SIDE px, has a std below BLUR_SHARPNESS of the image's own std (contrast-invariant). Photo crops with
#: content had at least 0.18; a Gaussian blur of about 2% of the short side falls below 0.12.
BLUR_SHARPNESS, BLUR_MIN_STD, BLUR_SIDE = 0.12, 20.0, 64
#: Below this thumbnail side, blur can't be told from downscaling and isn't checked.
BLUR_MIN_SIDE = 32
#: Odd aspect: longer side / shorter side above this; the cache's centre crop then keeps under 40% of the image.
ASPECT_LIMIT = 2.5
#: Grey in a colour set: a 3-channel image whose channels differ by less than this on average (max - min per
#: pixel). Colour photo crops had at least 8.
GREY_SPREAD = 3.0

CHECKS = {
    "dark": f"very dark (the brightest 1% of pixels below {DARK_P99:g} of 255)",
    "bright": f"very bright (the darkest 1% of pixels above {BRIGHT_P1:g} of 255)",
    "blurry": f"blurry (edges under {BLUR_SHARPNESS:g} of the contrast)",
    "odd_aspect": f"odd aspect ratio (over {ASPECT_LIMIT:g}:1; the centre crop keeps under 40%)",
    "grey_in_colour": "grey in a colour set",
    "near_constant": f"near-constant (luma std under {CONSTANT_STD:g})",
}


def sharpness(grey: np.ndarray, short_side: int) -> float:
    """Laplacian std / luma std of one ``(H, W)`` luma image, on a thumbnail no larger than BLUR_SIDE or the original
    image's shorter side (an upscaled small image is not blurry for it); NaN below BLUR_MIN_SIDE."""
    h, w = grey.shape
    side = min(BLUR_SIDE, h, w, short_side)
    if side < BLUR_MIN_SIDE:
        return float("nan")
    thumb = box_weights(h, side) @ grey @ box_weights(w, side).T  # (side, side)
    lap = 4 * thumb[1:-1, 1:-1] - thumb[:-2, 1:-1] - thumb[2:, 1:-1] - thumb[1:-1, :-2] - thumb[1:-1, 2:]
    return float(lap.std() / max(thumb.std(), 1e-6))


def image_stats(images: np.ndarray, short_sides: list[int]) -> dict[str, np.ndarray]:
    """Per-image statistics of ``(N, C, H, W)`` uint8 cached images whose originals' shorter sides are
    ``short_sides``: ``p1``, ``p99`` and ``std`` of the luma, ``sharpness`` (:func:`sharpness`), ``spread`` (mean
    channel max - min; NaN for 1 channel)."""
    pixels = np.asarray(images, dtype=np.float32)
    grey = pixels[:, 0] if pixels.shape[1] == 1 else np.tensordot(pixels, LUMA.astype(np.float32), axes=([1], [0]))
    flat = grey.reshape(len(grey), -1)  # (N, H * W)
    p1, p99 = np.percentile(flat, [1, 99], axis=1)
    sharp = np.array([sharpness(g.astype(np.float64), side) for g, side in zip(grey, short_sides, strict=True)])
    spread = np.full(len(grey), np.nan) if pixels.shape[1] == 1 else (pixels.max(1) - pixels.min(1)).mean(axis=(1, 2))
    return {"p1": p1, "p99": p99, "std": flat.std(axis=1), "sharpness": sharp, "spread": spread}


def flags(stats: dict[str, np.ndarray], widths: list[int], heights: list[int], modes: list[str]) -> dict:
    """Which images each check flags (boolean arrays); ``grey_in_colour`` before knowing if the set is colour."""
    w, h = np.asarray(widths, dtype=np.float64), np.asarray(heights, dtype=np.float64)
    constant = stats["std"] < CONSTANT_STD
    grey_mode = np.array([mode in GREY_MODES for mode in modes], dtype=bool)
    blurry = (stats["std"] > BLUR_MIN_STD) & (stats["sharpness"] < BLUR_SHARPNESS)  # NaN compares False
    return {
        "dark": stats["p99"] < DARK_P99,
        "bright": stats["p1"] > BRIGHT_P1,
        "blurry": blurry,
        "odd_aspect": np.maximum(w / h, h / w) > ASPECT_LIMIT,
        "grey_in_colour": grey_mode | (stats["spread"] < GREY_SPREAD),
        "near_constant": constant,
    }


def quality_report(cache: ImageCache, chunk: int = 512) -> dict[str, dict]:
    """``{check: {"what", "files": [split/path, ...]}}`` over every split of ``cache``; ``grey_in_colour`` only
    when most images are in colour."""
    found: dict[str, list[str]] = {check: [] for check in CHECKS}
    grey_count = total = 0
    for split in cache.splits:
        images, paths = cache.images(split), cache.column(split, "path")
        widths, heights, modes = (cache.column(split, key) for key in ("width", "height", "mode"))
        for start in range(0, len(paths), chunk):
            part = slice(start, start + chunk)
            stats = image_stats(images[part], [min(w, h) for w, h in zip(widths[part], heights[part], strict=True)])
            flagged = flags(stats, widths[part], heights[part], modes[part])
            for check, hits in flagged.items():
                found[check] += [paths[start + i] for i in np.nonzero(hits)[0]]
            grey_count += int(flagged["grey_in_colour"].sum())
            total += len(stats["std"])
    if grey_count * 2 >= total:  # a grey set, or half grey: grey images are not odd ones out
        found["grey_in_colour"] = []
    return {check: {"what": CHECKS[check], "files": files} for check, files in found.items()}
