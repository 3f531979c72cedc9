"""The ``(index, seed)`` items the training samplers yield, and how the dataset reads them.

:class:`~litstarter.data.samplers.EpochShuffleSampler` and friends give every draw of a sample a seed, a function
of ``(seed, epoch, position)``; the dataset augments that draw from that seed alone. Plain ``int`` items (val,
test, export) get no augmentation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def split_items(items: Sequence[int | tuple[int, int]]) -> tuple[np.ndarray, list[int | None]]:
    """``(indices (B,) int64, seeds)``: a seed per item, ``None`` for a plain index."""
    indices = np.array([i[0] if isinstance(i, (tuple, list)) else i for i in items], dtype=np.int64)
    seeds = [i[1] if isinstance(i, (tuple, list)) else None for i in items]
    return indices, seeds
