"""The ``preprocessing`` section of ``model.json``: every rule a client in another language needs to reproduce
``litstarter infer``'s input bit for bit (``examples/preprocess_reference.py`` follows it in NumPy,
``examples/node_client/`` in JavaScript).

The rules are those of :func:`litstarter._engine.images.preprocess.load_image`, the cache's own loader. The resize
and crop are two objects, ``resize`` and ``crop``, so that another filter (``resize.interpolation``, e.g. a
backbone's ``bicubic``) or another crop fraction (``crop.crop_pct``: ``resize.size`` is then
``image_size / crop_pct``) goes through the same fields; a reader that meets an ``interpolation`` it does not
implement must refuse the model, as :class:`~litstarter.extras.deploy.contract.ModelContract` does.
"""

from __future__ import annotations

#: Interpolations this litstarter implements (the cache and ``infer``), with their filter's support at scale 1.
INTERPOLATIONS = {"bilinear": 1.0, "bicubic": 2.0}
#: Each filter's kernel of the distance ``x`` in (resized) pixels, as Pillow's.
KERNELS = {
    "bilinear": "triangle: 1 - |x| for |x| < 1, else 0",
    "bicubic": "Keys cubic with a = -0.5: (a + 2)|x|^3 - (a + 3)|x|^2 + 1 for |x| < 1; a|x|^3 - 5a|x|^2 + 8a|x| - 4a"
    " for 1 <= |x| < 2; else 0",
}

STEPS = [
    "decode the file; apply its EXIF orientation (tag 0x0112, values 2-8, as PIL's ImageOps.exif_transpose)",
    "convert to color_mode by the rules in 'channels'",
    "resize by the rules in 'resize': aspect kept, so that the image covers resize.size; centre-crop resize.size",
    "centre-crop crop.size (top = (H - h) // 2, left = (W - w) // 2)",
    "stack to (N, C, H, W) uint8 with values 0..255; do not normalise, the graph applies mean/std",
]

CHANNELS = {
    "16_bit": "I;16 and I images: value * 255 / 65535 (an I image whose values are all <= 255: value * 1);"
    " F images: value * 255 if max <= 1, else value; rounded half to even, clipped to 0..255; then mode L",
    "palette": "P: palette lookup to RGBA if the image has transparency (one index, or one alpha per entry), else RGB",
    "alpha": "RGBA, LA and PA are composited onto opaque white with PIL's integer rounding: t = (c * a + 255 *"
    " (255 - a)) * 128 + 16384; value = (((t >> 8) + t) >> 8) >> 7; a = 0 gives 255",
    "to_L": "L = (19595 R + 38470 G + 7471 B + 32768) >> 16 (ITU-R 601-2 luma, 16-bit fixed point)",
    "to_RGB": "a grey value goes into all three channels",
    "other": "CMYK, YCbCr, LAB, HSV: Pillow's convert('RGB') (or 'L')",
}


def resize_fields(resize_size: tuple[int, int], interpolation: str) -> dict:
    """``preprocessing.resize``: the size, filter, antialiasing, rounding, pass order and crop of the resize."""
    return {
        "size": list(resize_size),
        "fit": "cover",
        "interpolation": interpolation,
        "filter_support": INTERPOLATIONS[interpolation],
        "filter": KERNELS[interpolation],
        "antialias": True,
        "antialias_rule": "reducing an axis by s = in / out > 1 stretches the filter by s: support filter_support * s,"
        " weight of input pixel x: filter((x + 0.5 - center) / s); enlarging uses the filter as is",
        "size_rounding": "half_to_even",
        "new_size": "scale = max(size[0] / h, size[1] / w) in float64; new_w = max(size[1], round(w * scale)),"
        " new_h = max(size[0], round(h * scale)), round() rounding halves to even (Python's, not JavaScript's"
        " Math.round); no resize if both sides are unchanged",
        "taps": "output pixel i is centred at center = (i + 0.5) * in / out; its input pixels run from"
        " max(0, int(center - support + 0.5)) to min(in, int(center + support + 0.5)) (int truncates)",
        "weights": "normalised to sum 1 (summed in order), then to fixed point: int(w * 2^22 + 0.5), a negative"
        " weight (bicubic's) int(w * 2^22 - 0.5)",
        "passes": "width first, then height, each only if that side changes; each output rounded to uint8:"
        " (2^21 + sum(pixel * weight)) >> 22, clipped to 0..255",
        "crop": "centre: left = (new_w - size[1]) // 2, top = (new_h - size[0]) // 2",
    }


#: The steps of a model that slides windows over each image at its own size (``model.json``'s ``tiling``).
TILED_STEPS = [
    STEPS[0],
    STEPS[1],
    "keep the image at its own size: if its longer side is over tiling.max_side, resize it (resize's rules, with the"
    " per-image size resize.size_rule gives); no crop",
    "cut it into windows of image_size by tiling.windows (padding a side shorter than a window with 0)",
    "stack the windows to (N, C, H, W) uint8 with values 0..255; do not normalise, the graph applies mean/std",
    "gather the windows' outputs by tiling.rule (tiling.blend or tiling.merge) into the image's answer",
]


def tiled_fields(fields: dict, max_side: int) -> dict:
    """``preprocessing`` for a model that tiles: each image at its own size (resized down past ``max_side`` only),
    no crop, the windows of ``image_size`` (``model.json``'s ``tiling`` says how they go and gather)."""
    resize = {k: v for k, v in fields["resize"].items() if k not in ("size", "crop")}
    resize["fit"] = "own size"
    resize["max_side"] = max_side
    resize["size_rule"] = (
        "per image of H x W: s = min(1, max_side / max(H, W)) in float64; size = [round(H * s), round(W * s)] (half to"
        " even); the resize below to cover that size (none when s = 1), then its centre crop to it"
    )
    resize["crop"] = "centre, to size: left = (new_w - size[1]) // 2, top = (new_h - size[0]) // 2"
    crop = {"position": "none", "note": "no crop: the windows of image_size cover the whole image (tiling)"}
    return {**fields, "resize": resize, "crop": crop, "steps": TILED_STEPS}


def preprocessing_fields(
    color_mode: str,
    resize_size: tuple[int, int],
    image_size: tuple[int, int],
    interpolation: str,
    max_side: int | None = None,
) -> dict:
    """The whole ``preprocessing`` object of ``model.json``.

    Args:
        color_mode: ``L`` or ``RGB``.
        resize_size: ``(height, width)`` images are resized to cover and centre-cropped to (the cache's size); for a
            model that tiles, the size training images were stored (padded) at.
        image_size: ``(height, width)`` centre-cropped out of that: the model's input (a window, for one that tiles).
        interpolation: A key of :data:`INTERPOLATIONS`.
        max_side: A model that tiles: images keep their own size up to this side (:func:`tiled_fields`).
    """
    fields = {
        "color_mode": color_mode,
        "resize_size": list(resize_size),
        "image_size": list(image_size),
        "resample": interpolation,  # the first layout's name for resize.interpolation, kept for its readers
        "resize": resize_fields(resize_size, interpolation),
        "crop": {
            "size": list(image_size),
            "position": "center",
            "crop_pct": round(min(i / r for i, r in zip(image_size, resize_size, strict=True)), 6),
        },
        "channels": CHANNELS,
        "steps": STEPS,
    }
    return fields if max_side is None else tiled_fields(fields, max_side)
