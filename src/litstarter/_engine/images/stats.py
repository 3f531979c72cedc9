"""Per-channel statistics of uint8 image arrays (numpy only: the cache build and ``inspect`` use it)."""

from __future__ import annotations

import numpy as np


def channel_stats(images: np.ndarray, chunk: int = 4096) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of a uint8 ``(N, C, H, W)`` array, on the 0..1 scale, in chunks."""
    n, c = images.shape[:2]
    total = np.zeros(c, dtype=np.float64)
    total_sq = np.zeros(c, dtype=np.float64)
    count = 0
    for start in range(0, n, chunk):
        block = np.asarray(images[start : start + chunk], dtype=np.float64) / 255.0
        total += block.sum(axis=(0, 2, 3))
        total_sq += (block**2).sum(axis=(0, 2, 3))
        count += block.shape[0] * block.shape[2] * block.shape[3]
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 1e-12))
    return mean.tolist(), std.tolist()
