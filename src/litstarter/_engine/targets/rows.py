"""Targets of a variable number of rows per image (a set of boxes), stored as one array with an image column."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class RaggedRows:
    """Each image's rows out of one ``(M, 1 + F)`` array whose first column is the image's index (sorted by it).

    ``rows[i]`` is image ``i``'s ``(m_i, F)`` rows; ``rows[[i, j]]`` a list of them. ``len`` is the number of images,
    an image without rows included.

    Args:
        stored: ``(M, 1 + F)`` float32: the image's index, then its row.
        count: The number of images.
    """

    def __init__(self, stored: np.ndarray, count: int) -> None:
        stored = np.asarray(stored, dtype=np.float32).reshape(-1, stored.shape[-1] if np.ndim(stored) == 2 else 1)
        order = np.argsort(stored[:, 0], kind="stable")
        self.stored = stored[order]
        self.count = int(count)
        self.offsets = np.searchsorted(self.stored[:, 0], np.arange(self.count + 1) - 0.5)

    def __len__(self) -> int:
        return self.count

    @property
    def ndim(self) -> int:
        """One axis: the images (their rows are of any number)."""
        return 1

    def row_count(self, index: int) -> int:
        """The rows of image ``index``."""
        return int(self.offsets[index + 1] - self.offsets[index])

    def __getitem__(self, item: int | Sequence[int] | np.ndarray):
        if isinstance(item, (int, np.integer)):
            return self.stored[self.offsets[item] : self.offsets[item + 1], 1:]
        return [self[int(i)] for i in np.asarray(item).reshape(-1)]

    def concatenated(self) -> np.ndarray:
        """Every row, ``(M, F)``, in image order."""
        return self.stored[:, 1:]
