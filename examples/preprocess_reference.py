"""A reference implementation of an exported model's preprocessing, in NumPy, from ``model.json`` alone.

    python examples/preprocess_reference.py <export>/model.json image.jpg [more images ...]

It prints each file's top-1 class and probability with ``<export>/model.onnx`` (onnxruntime) and shows that a
client in another language can reproduce ``litstarter infer`` exactly: ``preprocess`` returns the same uint8
array as litstarter's own loader, bit for bit, for every mode this file handles.

**What uses PIL:** only decoding the file into its raw pixel array (``np.asarray(Image.open(f))``), its palette
and transparency for a palette image, and its EXIF orientation tag. Everything after that (orientation,
channel conversion, alpha compositing, 16-bit scaling, the resize and both crops) is NumPy here, following
the fields of ``model.json``'s ``preprocessing`` (``docs/deploy.md`` states each rule).
Modes handled: ``1``, ``L``, ``LA``, ``P`` (with or without transparency), ``RGB``, ``RGBA``, ``I;16``; other
modes (CMYK, YCbCr, float) are refused here (litstarter converts them with PIL's own ``convert``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

#: PIL's fixed-point precision: 22 bits for the resize's 8-bit weights, 7 for alpha compositing.
RESIZE_BITS, ALPHA_BITS = 22, 7
FILTERS = {  # name -> (support, kernel), as Pillow's
    "bilinear": (1.0, lambda x: np.clip(1.0 - np.abs(x), 0.0, None)),
    "bicubic": (
        2.0,
        lambda x: np.select(
            [np.abs(x) < 1, np.abs(x) < 2],
            [
                1.5 * np.abs(x) ** 3 - 2.5 * np.abs(x) ** 2 + 1,
                -0.5 * np.abs(x) ** 3 + 2.5 * np.abs(x) ** 2 - 4 * np.abs(x) + 2,
            ],
            0.0,
        ),
    ),
}


def decode(path: str | Path) -> tuple[np.ndarray, str, np.ndarray | None, object, int]:
    """PIL's part: ``(raw pixels, mode, palette (256, 3) or None, transparency, EXIF orientation)``."""
    from PIL import Image  # decoding only

    with Image.open(path) as image:
        image.load()
        palette = np.array(image.getpalette("RGB") or [], np.uint8).reshape(-1, 3) if image.mode == "P" else None
        orientation = image.getexif().get(0x0112, 1)
        return np.asarray(image), image.mode, palette, image.info.get("transparency"), orientation


def orient(pixels: np.ndarray, orientation: int) -> np.ndarray:
    """Apply an EXIF orientation (1-8) to ``(H, W[, C])`` pixels, as ``ImageOps.exif_transpose``."""
    if orientation in (5, 7):  # transpose; transverse (transpose, then 180 degrees)
        pixels = pixels.swapaxes(0, 1)
        return pixels if orientation == 5 else pixels[::-1, ::-1]
    if orientation in (6, 8):  # 90 degrees clockwise; counter-clockwise
        return np.rot90(pixels, -1 if orientation == 6 else 1)
    flips = {2: (1,), 3: (0, 1), 4: (0,)}.get(orientation)  # mirrored; 180 degrees; flipped
    return pixels if flips is None else np.flip(pixels, axis=flips)


def composite_on_white(rgba: np.ndarray) -> np.ndarray:
    """``(H, W, 4)`` uint8 -> ``(H, W, 3)``: each pixel over opaque white, with PIL's integer rounding."""
    rgb, alpha = rgba[..., :3].astype(np.int64), rgba[..., 3:].astype(np.int64)
    mixed = (rgb * alpha + 255 * (255 - alpha)) << ALPHA_BITS  # over a white, fully opaque background
    mixed = mixed + (0x80 << ALPHA_BITS)
    out = ((((mixed >> 8) + mixed) >> 8) >> ALPHA_BITS).astype(np.uint8)
    return np.where(alpha == 0, np.uint8(255), out)


def to_color_mode(pixels: np.ndarray, mode: str, palette, transparency, color_mode: str) -> np.ndarray:
    """Raw pixels of PIL ``mode`` -> ``(H, W, C)`` uint8 in ``color_mode`` (``L`` or ``RGB``)."""
    if mode == "1":
        pixels, mode = pixels.astype(np.uint8) * 255, "L"
    if mode == "I;16":  # scaled by the dtype's range, rounded half to even
        pixels, mode = np.round(np.clip(pixels.astype(np.float64) * (255.0 / 65535.0), 0, 255)).astype(np.uint8), "L"
    if mode == "P":
        rgb = palette[pixels]
        if transparency is None:
            pixels, mode = rgb, "RGB"
        else:
            alpha = np.full(len(palette), 255, np.uint8)
            if isinstance(transparency, bytes):
                alpha[: len(transparency)] = np.frombuffer(transparency, np.uint8)
            else:
                alpha[int(transparency)] = 0
            pixels, mode = np.dstack([rgb, alpha[pixels]]), "RGBA"
    if mode == "LA":
        pixels, mode = np.dstack([pixels[..., :1].repeat(3, axis=2), pixels[..., 1:]]), "RGBA"
    if mode == "RGBA":
        pixels, mode = composite_on_white(pixels), "RGB"
    if mode not in ("L", "RGB"):
        raise ValueError(f"mode {mode} is not handled by this reference")
    if mode == color_mode:
        return pixels[..., None] if pixels.ndim == 2 else pixels
    if color_mode == "RGB":  # grey -> RGB: the value in every channel
        return np.repeat(pixels[..., None], 3, axis=2)
    weights = np.array([19595, 38470, 7471], np.int64)  # ITU-R 601-2 luma, 16-bit fixed point, as PIL
    return ((pixels.astype(np.int64) @ weights + 0x8000) >> 16).astype(np.uint8)[..., None]


def round_half_even(value: float) -> int:
    """Python's ``round``: halves go to the even neighbour (JavaScript's ``Math.round`` rounds them up)."""
    return int(np.round(value))


def resize_weights(in_size: int, out_size: int, interpolation: str, antialias: bool) -> tuple[np.ndarray, np.ndarray]:
    """PIL's separable resize weights for one axis: ``(first input index per output, (out, taps) int weights)``.

    Output pixel ``i`` is centred at ``(i + 0.5) * scale`` in input pixels (``scale = in / out``); when reducing
    with ``antialias`` the kernel is widened by ``scale`` (support ``filter_support * scale``); the taps
    ``xmin .. xmax`` are the input pixels within the support, the weights normalised to sum 1 and rounded to
    ``RESIZE_BITS`` fixed point (half away from zero).
    """
    support, kernel = FILTERS[interpolation]
    scale = in_size / out_size
    widen = max(scale, 1.0) if antialias else 1.0
    support *= widen
    taps = int(np.ceil(support)) * 2 + 1
    starts, weights = np.zeros(out_size, np.int64), np.zeros((out_size, taps), np.int64)
    for i in range(out_size):
        center = (i + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size)
        w = kernel((np.arange(xmin, xmax) - center + 0.5) * (1.0 / widen))  # times the reciprocal, as PIL
        total = np.cumsum(w)[-1] if len(w) else 0.0  # summed in order, as PIL (numpy's sum is pairwise)
        w = w / total if total else w
        fixed = np.where(w < 0, w * (1 << RESIZE_BITS) - 0.5, w * (1 << RESIZE_BITS) + 0.5).astype(np.int64)
        starts[i], weights[i, : xmax - xmin] = xmin, fixed
    return starts, weights


def resize_axis(pixels: np.ndarray, out_size: int, axis: int, interpolation: str, antialias: bool) -> np.ndarray:
    """Resize ``(H, W, C)`` uint8 along ``axis`` (1: width, 0: height), rounding back to uint8 as PIL does."""
    moved = np.moveaxis(pixels, axis, 0).astype(np.int64)  # (in, other, C)
    starts, weights = resize_weights(moved.shape[0], out_size, interpolation, antialias)
    padded = np.concatenate([moved, np.zeros((weights.shape[1], *moved.shape[1:]), np.int64)])
    index = starts[:, None] + np.arange(weights.shape[1])[None, :]  # (out, taps)
    total = np.einsum("ot,ot...->o...", weights, padded[index]) + (1 << (RESIZE_BITS - 1))
    return np.moveaxis(np.clip(total >> RESIZE_BITS, 0, 255).astype(np.uint8), 0, axis)


def preprocess(path: str | Path, contract: dict) -> np.ndarray:
    """One file -> the model's ``(C, H, W)`` uint8 input, following ``contract["preprocessing"]`` only."""
    pre = contract["preprocessing"]
    resize, crop = pre["resize"], pre["crop"]
    pixels, mode, palette, transparency, orientation = decode(path)
    pixels = to_color_mode(orient(pixels, orientation), mode, palette, transparency, pre["color_mode"])
    (target_h, target_w), (h, w) = resize["size"], pixels.shape[:2]
    scale = max(target_h / h, target_w / w)  # "cover": both sides at least the target, aspect kept
    new_w, new_h = max(target_w, round_half_even(w * scale)), max(target_h, round_half_even(h * scale))
    if new_w != w:  # horizontal pass first, then vertical, each rounded to uint8 (PIL's order)
        pixels = resize_axis(pixels, new_w, 1, resize["interpolation"], resize["antialias"])
    if new_h != h:
        pixels = resize_axis(pixels, new_h, 0, resize["interpolation"], resize["antialias"])
    for size in (resize["size"], crop["size"]):  # centre-crop resize_size, then image_size
        top, left = (pixels.shape[0] - size[0]) // 2, (pixels.shape[1] - size[1]) // 2
        pixels = pixels[top : top + size[0], left : left + size[1]]
    return np.ascontiguousarray(pixels.transpose(2, 0, 1))  # (C, H, W)


def main(argv: list[str]) -> int:
    """Classify files with the ``model.onnx`` beside ``model.json``; prints ``file, class, probability``."""
    import onnxruntime as ort

    contract_path, files = Path(argv[0]), argv[1:]
    contract = json.loads(contract_path.read_text())
    session = ort.InferenceSession(str(contract_path.parent / "model.onnx"), providers=["CPUExecutionProvider"])
    for file in files:
        batch = preprocess(file, contract)[None]  # (1, C, H, W) uint8
        logits = session.run([contract["output"]["name"]], {contract["input"]["name"]: batch})[0][0]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        print(f"{file},{contract['class_names'][int(probs.argmax())]},{probs.max():.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
