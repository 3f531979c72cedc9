"""Test-time augmentation: average a network's class probabilities over flipped and shifted views of each image.

A network whose outputs are maps (``(B, K, H, W)``: a class per pixel) takes ``hflip`` only: each flipped view's
map is flipped back before the average (a shifted view's map would need shifting back: refused in one line).

Shifted views are multi-crop on a budget: five crops (centre and corners) of the image padded by ``shift`` pixels
on each side (edge pixels repeated), each the input's size, so no resize is needed and the network sees the
same scale it was trained on. Views are plain array slices, so the same code serves torch tensors (``test``,
``predict``) and NumPy arrays (``infer`` with ONNX).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

from litstarter.errors import UsageError

__all__ = ["TTAView", "check_tta", "tta_logits", "views"]

TTAView = Literal["hflip", "crops"]
#: Pixels the ``crops`` views shift by, as a fraction of the smaller image side (at least one pixel).
_CROP_SHIFT = 1 / 16


def check_tta(tta: Sequence[str] | None, key: str = "model.tta") -> list[str]:
    """``tta`` as a list, refusing an unknown view in one line naming ``key``."""
    views = list(tta or [])
    unknown = [v for v in views if v not in ("hflip", "crops")]
    if unknown:
        raise UsageError(f"{key}: unknown view {unknown[0]!r}; expected some of ['hflip', 'crops']")
    return views


def _flip(x):
    return x.flip(-1) if hasattr(x, "dim") else x[..., ::-1]  # torch, or NumPy


def _pad(x, s: int):
    if hasattr(x, "dim"):  # torch: replicate-padding needs a float tensor (0..255 stays 0..255)
        import torch.nn.functional as F

        return F.pad(x.float(), (s, s, s, s), mode="replicate")
    import numpy as np

    return np.pad(x, ((0, 0), (0, 0), (s, s), (s, s)), mode="edge")


def views(images, tta: Sequence[str]) -> list:
    """``images`` ``(B, C, H, W)`` and its augmented views: five shifted crops with ``crops`` (the image itself is
    the centre one), and a flip of each view with ``hflip``."""
    out = [images]
    if "crops" in tta:
        h, w = images.shape[-2:]
        s = max(1, round(min(h, w) * _CROP_SHIFT))
        padded = _pad(images, s)
        out += [padded[..., y : y + h, x : x + w] for y, x in [(0, 0), (0, 2 * s), (2 * s, 0), (2 * s, 2 * s)]]
    if "hflip" in tta:
        out += [_flip(v) for v in out]
    return out


def _outputs(forward: Callable, images, tta: Sequence[str]) -> list:
    """``forward`` of every view; a map output (``(B, K, H, W)``) of a flipped view flipped back."""
    all_views = views(images, tta)
    if not hasattr(images, "dim"):  # NumPy: a runtime wants contiguous arrays, and a flip is a strided view
        import numpy as np

        all_views = [np.ascontiguousarray(v) for v in all_views]
    outputs = [forward(v) for v in all_views]
    if outputs[0].ndim != 4:
        return outputs
    if "crops" in tta:
        raise UsageError(
            "tta: 'crops' shifts the image, and a map of classes per pixel would need shifting back; use 'hflip'"
        )
    flipped = len(outputs) // 2 if "hflip" in tta else len(outputs)
    return outputs[:flipped] + [_flip(o) for o in outputs[flipped:]]


def tta_logits(forward: Callable, images, tta: Sequence[str]):
    """``log(mean softmax(forward(view)))`` over :func:`views`: logits whose softmax is the averaged probability
    (so a loss and ``argmax`` work on them as on plain logits), over the class axis (``-1``; ``1`` for maps). Torch
    tensors in, or NumPy arrays (``infer``)."""
    outputs = _outputs(forward, images, tta)
    axis = 1 if outputs[0].ndim == 4 else -1
    if hasattr(images, "dim"):
        import torch

        log_probs = torch.stack([o.float().log_softmax(dim=axis) for o in outputs])
        return log_probs.logsumexp(dim=0) - math.log(len(log_probs))
    import numpy as np

    logits = np.stack(outputs).astype(np.float64)
    axis = axis + 1 if axis > 0 else axis  # the views' axis is first
    log_probs = logits - logits.max(axis=axis, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(axis=axis, keepdims=True))
    top = log_probs.max(axis=0)
    return (top + np.log(np.exp(log_probs - top).mean(axis=0))).astype(np.float32)
